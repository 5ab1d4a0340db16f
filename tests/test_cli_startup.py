"""What a command imports as a new process: help loads no numpy and no stage model, and each command
loads its own part of the library only (the times themselves are in benchmarks/bench_startup.py)."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys

import pytest

STAGE_MODELS = (
    "voicebudget._stages",
    "voicebudget._algebra",
    "voicebudget._distributions",
    "voicebudget._stage_models",
    "voicebudget._scenario",
    "voicebudget.inference._stage",
    "voicebudget.councils._config",
)
"""The modules that define the stage union and its members (pydantic models built at import)."""


def loaded_after(*argv: str, exit_codes: tuple[int, ...] = (0, 1)) -> set[str]:
    """The modules a new interpreter holds after ``voicebudget ARGV`` has run (and exited)."""
    code = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: sys.__stderr__.write('\\nMODULES ' + json.dumps(sorted(sys.modules)) + '\\n'))\n"
        f"sys.argv = ['voicebudget', *{list(argv)!r}]\n"
        "from voicebudget.cli import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode in exit_codes, done.stderr[-2000:]
    line = next(x for x in done.stderr.splitlines() if x.startswith("MODULES "))
    return set(json.loads(line.removeprefix("MODULES ")))


@pytest.mark.parametrize(("argv", "code"), [(("--help",), 0), (("run", "--help"), 0), ((), 2)])
def test_help_imports_neither_numpy_nor_the_stage_models(argv: tuple[str, ...], code: int) -> None:
    loaded = loaded_after(*argv, exit_codes=(code,))  # no arguments: the help, exit 2 (a usage error)
    assert "typer" in loaded  # the check below looks at a process that did run the CLI
    assert "numpy" not in loaded
    assert sorted(m for m in STAGE_MODELS if m in loaded) == []


def test_the_catalog_commands_do_not_load_the_simulator() -> None:
    loaded = loaded_after("models", "-f", "json")
    assert "voicebudget.inference._catalog" in loaded
    assert "numpy" not in loaded
    unwanted = (*STAGE_MODELS, "voicebudget._simulate", "voicebudget.traces._read", "yaml")
    assert sorted(m for m in unwanted if m in loaded) == []


def test_run_loads_neither_the_tuner_nor_capacity_planning() -> None:
    loaded = loaded_after("run", "-n", "1000", "-f", "json")
    assert "voicebudget._simulate" in loaded
    assert sorted(m for m in loaded if m.startswith(("voicebudget.tuning.", "voicebudget.capacity."))) == [
        "voicebudget.tuning._executor"  # --workers' bound (MAX_WORKERS)
    ]


def test_import_voicebudget_imports_neither_typer_nor_numpy() -> None:
    code = "import sys, voicebudget; print(sorted(m for m in ('typer', 'numpy', 'pydantic') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"


def test_run_in_its_own_process_freezes_what_the_library_leaves_for_the_collector() -> None:
    # voicebudget.cli.main owns the process: once run has loaded the library, gc.freeze() keeps the
    # collector from walking those ~50,000 objects again; a test's runner calling the app freezes nothing
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: sys.__stderr__.write(f'\\nFROZEN {gc.get_freeze_count()}\\n'))\n"
        "sys.argv = ['voicebudget', 'run', '-n', '500']\n"
        "from voicebudget.cli import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 1, done.stderr[-2000:]  # the bundled scenario's baseline is over budget
    assert int(done.stderr.split("FROZEN ")[1].split()[0]) > 20_000
    from typer.testing import CliRunner

    from voicebudget.cli import app

    before = gc.get_freeze_count()
    assert CliRunner().invoke(app, ["run", "-n", "500"]).exit_code == 1
    assert gc.get_freeze_count() == before


@pytest.mark.parametrize(("env", "loads_plugins"), [({}, False), ({"PYDANTIC_DISABLE_PLUGINS": ""}, True)])
def test_the_command_line_loads_no_pydantic_plugin_unless_asked(env: dict[str, str], loads_plugins: bool) -> None:
    # finding plugins reads every installed distribution's entry points (~15 ms of `run`); an empty
    # PYDANTIC_DISABLE_PLUGINS, pydantic's own "none disabled", keeps them
    code = (
        "import atexit, sys\n"
        "def seen():\n"
        "    from pydantic.plugin import _loader\n"
        "    sys.__stderr__.write(f'\\nLOOKED {_loader._plugins is not None}\\n')\n"
        "atexit.register(seen)\n"
        "sys.argv = ['voicebudget', 'run', '-n', '500', '-f', 'json']\n"
        "from voicebudget.cli import main\n"
        "main()\n"
    )
    clean = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120, env={**clean, **env}
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.split("LOOKED ")[1].split()[0] == str(loads_plugins)
