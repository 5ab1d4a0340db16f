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
