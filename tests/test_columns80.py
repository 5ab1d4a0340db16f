"""Every command's table output read in an 80-column terminal (issue 13, item 1): no header or number
cut to "…", no line wider than the terminal; ``check`` lists the slowest turns unless ``--turns``."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from voicebudget.cli import app

ROOT = Path(__file__).parent.parent
TRACES = Path(__file__).parent / "data" / "traces"
runner = CliRunner()


def at_80(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": "80"})
    assert "Traceback" not in result.output
    return result.exit_code, result.output


COMMANDS = [
    ["run", "-n", "20000"],
    ["run", str(ROOT / "scenarios" / "council-vs-cache.toml"), "-n", "20000", "--allow-root", str(ROOT)],
    ["run", str(ROOT / "scenarios" / "hardware-llm.toml"), "-n", "5000"],
    ["infer", "-m", "llama-3.1-70b", "-H", "h100-sxm", "--chips", "4"],
    ["hardware"],
    ["models"],
    ["check", str(TRACES / "pipecat.log"), str(TRACES / "livekit-metrics.jsonl")],
    ["check", str(TRACES / "pipecat.log"), str(TRACES / "livekit-metrics.jsonl"), "--turns"],
    ["check", str(TRACES / "pipecat-broken.log"), "--turns"],
    ["council", str(ROOT / "councils" / "intent-wafer-all.toml"), "-n", "5000"],
    ["council", str(ROOT / "councils" / "router-flash-lite-sonnet.toml"), "-n", "5000"],
    ["tune", str(ROOT / "councils" / "tune-intent.toml"), "-n", "500"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(Path(x).name for x in a[:2]))
def test_table_output_fits_80_columns(args: list[str]) -> None:
    code, out = at_80(*args)
    assert code in (0, 1), out
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_check_lists_the_slowest_turns_with_the_file_once() -> None:
    code, out = at_80("check", str(TRACES / "pipecat.log"), str(TRACES / "livekit-metrics.jsonl"))
    assert code == 1
    assert "the slowest 10 of 40 turns" in out
    rows = [line.split() for line in out.splitlines() if line.startswith(" speech_") or line.startswith(" turn-")]
    assert len(rows) == 10
    totals = [int(r[-1]) if r[-1].isdigit() else int(r[-3]) for r in rows]
    assert totals[:4] == [3034, 3033, 3002, 2417]  # livekit's file: slowest first
    assert min(totals) == 1632  # the tenth slowest of all 40 turns
    titles = [line.strip() for line in out.splitlines() if line.strip() in ("pipecat.log", "livekit-metrics.jsonl")]
    assert titles == ["livekit-metrics.jsonl", "pipecat.log"]  # each file once, as its table's title
    assert "endp = endpointing wait" in out  # the legend of the short column names


def test_check_turns_lists_every_turn() -> None:
    code, out = at_80("check", str(TRACES / "pipecat.log"), str(TRACES / "livekit-metrics.jsonl"), "--turns")
    assert code == 1
    assert "(40 turns)" in out
    rows = [line for line in out.splitlines() if line.startswith(" speech_") or line.startswith(" turn-")]
    assert len(rows) == 40
