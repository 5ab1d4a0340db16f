"""Crash != verdict: an unexpected exception in any command exits 3 with a one-line bug message, never 1
(which means only "over budget"); the library's input errors exit 2 wherever they escape."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import voicebudget
from voicebudget.cli import EXIT_BUG, app

ROOT = Path(__file__).resolve().parent.parent
TRACE = str(ROOT / "tests" / "data" / "traces" / "livekit-metrics.jsonl")
runner = CliRunner()

# command -> (module, attribute) of the library call it makes, and its arguments
COMMANDS: dict[str, tuple[str, str, list[str]]] = {
    "run": ("voicebudget._simulate", "run_scenarios", []),
    "schema": ("voicebudget._scenario", "scenario_json_schema", []),
    "infer": ("voicebudget.inference", "estimate_inference", ["-m", "llama-3.1-8b", "-H", "h100-sxm"]),
    "hardware": ("voicebudget.inference._render", "render_catalog", []),
    "models": ("voicebudget.inference._render", "render_catalog", []),
    "check": ("voicebudget.traces", "check_traces", [TRACE]),
    "fit": ("voicebudget.traces", "fit_traces", [TRACE, "-o", "{tmp}/fitted.toml"]),
    "council": ("voicebudget.councils", "run_council", [str(ROOT / "councils" / "intent-wafer-all.toml")]),
    "tune": ("voicebudget.tuning", "tune_council", [str(ROOT / "councils" / "tune-intent.toml")]),
    "council-fit": ("voicebudget.councils", "fit_answer_space", ["{tmp}/answers.csv"]),
    "capacity": ("voicebudget.capacity", "plan_capacity_file", [str(ROOT / "scenarios" / "support-line.toml")]),
    "endpointing": (
        "voicebudget.audio._frontier",
        "frontier_for_scenario",
        [
            str(ROOT / "scenarios" / "semantic-turn-detector.yaml"),
            "--pauses",
            str(ROOT / "docs/examples/pauses-conversation.toml"),
        ],
    ),
    "compare": ("voicebudget.baseline", "compare_files", ["{tmp}/base.json", "{tmp}/new.json"]),
    "guard-report": (
        "voicebudget.checker._fillers",
        "guard_report_file",
        [str(ROOT / "scenarios" / "webrtc-cascade.toml")],
    ),
}


def test_every_command_has_a_crash_case() -> None:
    names = {info.name or info.callback.__name__ for info in app.registered_commands if info.callback}
    assert names == set(COMMANDS)


def _patch(monkeypatch: pytest.MonkeyPatch, module: str, attribute: str, exc: BaseException) -> None:
    import importlib

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise exc

    monkeypatch.setattr(importlib.import_module(module), attribute, boom)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_crash_in_any_command_exits_3_with_one_line(
    command: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    module, attribute, args = COMMANDS[command]
    _patch(monkeypatch, module, attribute, RuntimeError("boom\nsecond line"))
    result = runner.invoke(app, [command, *(a.format(tmp=tmp_path) for a in args)])
    assert result.exit_code == EXIT_BUG == 3
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert (
        f"error: internal error in voicebudget {voicebudget.__version__} (a bug, not a verdict): "
        "RuntimeError: boom second line. Set VOICEBUDGET_TRACEBACK=1"
    ) in lines[0]
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("exc", "code", "text"),
    [
        (voicebudget.ScenarioError("bad field", origin="f.toml", field="x"), 2, "error: f.toml: x: bad field"),
        (voicebudget.ModelError("does not fit"), 2, "error: does not fit"),
        (voicebudget.BudgetExceeded("p95 900.0 ms > 800.0 ms", report=None), 1, "p95 900.0 ms > 800.0 ms"),
        (MemoryError(), 2, "error: out of memory under "),  # a limit of the machine (ulimit -v), not a bug
        (RecursionError("deep"), 3, "internal error"),
    ],
)
def test_escaped_errors_map_to_their_exit_code(
    exc: BaseException, code: int, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _patch(monkeypatch, "voicebudget.councils", "run_council", exc)
    result = runner.invoke(app, ["council", str(ROOT / "councils" / "intent-wafer-all.toml")])
    assert result.exit_code == code
    assert text in result.output


def test_the_traceback_is_shown_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    _patch(monkeypatch, "voicebudget._scenario", "scenario_json_schema", ValueError("boom"))
    monkeypatch.setenv("VOICEBUDGET_TRACEBACK", "1")
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 3
    assert "Traceback (most recent call last)" in result.output
    assert "ValueError: boom" in result.output


def test_the_console_script_exits_3_on_a_crash_in_a_real_process() -> None:
    code = (
        "import sys, voicebudget.cli as cli, voicebudget._simulate as simulate\n"
        "def boom(*a, **k): raise KeyError('nope')\n"
        "simulate.run_scenarios = boom\n"
        "sys.argv = ['voicebudget', 'run']\n"
        "cli.main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 3
    assert "internal error in voicebudget" in done.stderr
    assert "KeyError: 'nope'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("tls://10.0.0.1:8786", "--scheduler: scheme tls:// is not supported; allowed: tcp://"),
        ("ucx://10.0.0.1:8786", "--scheduler: scheme ucx:// is not supported"),
        ("http://example.com", "--scheduler: 'http://example.com' is not a Dask scheduler address"),
        ("tcp://host:99999", "--scheduler: port 99999 is outside 1..65535"),
    ],
)
def test_unsupported_scheduler_addresses_exit_2_before_connecting(address: str, message: str) -> None:
    result = runner.invoke(app, ["tune", str(ROOT / "councils" / "tune-intent.toml"), "--scheduler", address])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())


def test_scheduler_address_check() -> None:
    from voicebudget.tuning._executor import check_scheduler_address

    assert check_scheduler_address("10.0.0.1:8786") == "tcp://10.0.0.1:8786"
    assert check_scheduler_address("tcp://[::1]:8786") == "tcp://[::1]:8786"


def test_an_infinite_chip_price_cannot_reach_the_json_output() -> None:
    result = runner.invoke(
        app, ["infer", "-m", "llama-3.1-8b", "-H", "h100-sxm", "--price-per-chip-hour", "1e308", "-f", "json"]
    )
    assert result.exit_code == 2
    assert "--price-per-chip-hour" in result.output
    assert "Traceback" not in result.output


def test_cli_choices_and_defaults_come_from_the_library() -> None:
    import inspect

    import typer

    from voicebudget import cli
    from voicebudget.inference import PRECISIONS
    from voicebudget.traces import ABSURD_MS, FIT_METHODS, FORMATS, fit_traces

    assert [m.value for m in cli.PrecisionOpt] == list(PRECISIONS) == ["bf16", "fp16", "fp8", "fp4"]
    assert [m.value for m in cli.FitMethodOpt] == list(FIT_METHODS)
    assert cli.DEFAULT_FIT_METHOD.value == inspect.signature(fit_traces).parameters["method"].default
    assert [m.value for m in cli.TraceFormatIn] == list(FORMATS)
    command = typer.main.get_command(app)
    for name in ("check", "fit"):
        params = {p.name: p for p in command.commands[name].params}  # type: ignore[attr-defined]
        assert params["absurd_ms"].default == ABSURD_MS


def _with_reader_gone(args: list[str]) -> subprocess.CompletedProcess[str]:
    """The console script with its stdout a pipe nobody reads any more (``| head`` that has exited)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    code = f"import sys, voicebudget.cli as cli\nsys.argv = ['voicebudget', *{args!r}]\ncli.main()\n"
    try:
        return subprocess.run(
            [sys.executable, "-c", code], stdout=write_end, stderr=subprocess.PIPE, text=True, check=False, timeout=120
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "args",
    [
        ["models"],  # a table, no verdict: exited 1 ("over budget") when piped into a `head` that had left
        ["check", TRACE],  # a table that passes: exited 1
        ["check", TRACE, "-f", "json"],  # JSON: 141 already
    ],
)
def test_a_reader_that_went_away_is_exit_141_for_tables_too(args: list[str]) -> None:
    # What a user saw (round 4): `voicebudget check agent.log 2>&1 | head -30` exited 1, the over-budget
    # code, on a passing trace: rich's Console answers a broken pipe with SystemExit(1).
    done = _with_reader_gone(args)
    assert done.returncode == 141, done.stderr
    assert done.stderr == ""
