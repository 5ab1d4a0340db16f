"""The public surface: everything importable from ``voicebudget`` and nothing by accident."""

from __future__ import annotations

import subprocess
import sys

import pytest

import voicebudget


def test_all_is_sorted_and_importable() -> None:
    names = voicebudget.__all__
    assert names == sorted(names), "keep __all__ sorted"
    for name in names:
        assert hasattr(voicebudget, name), name


def test_public_objects_live_in_private_modules_or_subpackages() -> None:
    for name in voicebudget.__all__:
        obj = getattr(voicebudget, name)
        if name.isupper() or name in {"Distribution", "PipelineSpec", "StageSpec"}:
            continue  # constants and typing aliases (Annotated unions) have no home module
        assert obj.__module__.startswith("voicebudget."), (name, obj.__module__)


def test_exception_tree() -> None:
    assert issubclass(voicebudget.ScenarioError, voicebudget.VoiceBudgetError)
    assert issubclass(voicebudget.ModelError, voicebudget.VoiceBudgetError)
    assert issubclass(voicebudget.BudgetExceeded, voicebudget.VoiceBudgetError)


@pytest.mark.parametrize(
    "entry",
    [
        "import voicebudget as m; m.Sequence",
        "from voicebudget.councils import Council",
        "from voicebudget.inference import GPUStage",
        "from voicebudget.traces import check_traces",
        "from voicebudget.tuning import tune_council",
    ],
)
def test_every_entry_point_completes_the_stage_models_in_a_fresh_interpreter(entry: str) -> None:
    # The public surface is lazy; whichever entry a user imports first, combinators must validate.
    code = (
        f"{entry}\nimport voicebudget as vb\n"
        "vb.Sequence.model_validate({'stages': {'x': {'kind': 'fixed', 'value_ms': 1}}})"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


def test_public_names_are_written_once_and_the_type_checking_imports_agree() -> None:
    # _PUBLIC (module -> names) is the one list; __all__ and the lazy table derive from it. The
    # TYPE_CHECKING block repeats it for type checkers: it must import the same names from the same
    # modules, each as an explicit re-export ("X as X").
    import ast
    from pathlib import Path

    tree = ast.parse(Path(voicebudget.__file__).read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    imported: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom)
        assert node.module is not None
        for alias in node.names:
            assert alias.asname == alias.name, f"{alias.name}: re-export it as '{alias.name} as {alias.name}'"
            assert alias.name not in imported, f"{alias.name} imported twice"
            imported[alias.name] = node.module
    public = {name: module for module, names in voicebudget._PUBLIC.items() for name in names}
    assert imported == public
    assert voicebudget._LAZY == public
    assert voicebudget.__all__ == sorted(public)
    assert len(voicebudget.__all__) == len(set(voicebudget.__all__))


@pytest.mark.parametrize(
    "package",
    [
        "voicebudget.baseline",
        "voicebudget.capacity",
        "voicebudget.checker",
        "voicebudget.ci",
        "voicebudget.councils",
        "voicebudget.inference",
        "voicebudget.telemetry",
        "voicebudget.testing",
        "voicebudget.traces",
        "voicebudget.tuning",
    ],
)
def test_sub_packages_write_their_names_once_and_import_them_on_first_use(package: str) -> None:
    # Each sub-package is a lazy surface like the top level: _PUBLIC is its one list, the TYPE_CHECKING
    # block repeats it for type checkers, and importing the package imports none of its modules.
    import ast
    import importlib
    from pathlib import Path

    module = importlib.import_module(package)
    tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    imported = {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.asname == alias.name
    }
    public = {name: source for source, names in module._PUBLIC.items() for name in names}
    assert imported == public
    assert module.__all__ == sorted(public)
    for name in module.__all__:
        assert getattr(module, name) is getattr(importlib.import_module(public[name]), name)
    code = f"import sys, {package}; print(sorted(m for m in sys.modules if m.startswith('{package}.')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"
