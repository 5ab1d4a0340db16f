"""Mutation fuzzing through the CLI (issue 11): a mutated trace (every reader's samples) or scenario file
exits 0, 1 or 2 only, never with a traceback, within a time limit, and a trace's included turns keep the
anomaly contract (finite, non-negative totals). Fixed seed (derandomize), bounded example counts; the
10,000-input run with its figures is benchmarks/fuzz_inputs.py."""

from __future__ import annotations

import json
import math
import signal
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from time_limit import Hang, time_limit
from typer.testing import CliRunner

from voicebudget.cli import app

ROOT = Path(__file__).resolve().parent.parent
TRACES = sorted(
    p
    for p in (ROOT / "tests" / "data" / "traces").glob("*")
    if p.suffix in (".log", ".jsonl", ".json") and not p.name.endswith(".truth.json")
)
SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))
TOKENS = [
    "[" * 2000,
    "{" * 2000,
    "9" * 5000,
    "NaN",
    "Infinity",
    "-1e309",
    "null",
    "true",
    "[]",
    "\u2028",
    "\ufeff",
    "[/x]",
    "[link=https://example.com]x[/link]",
    "\r",
    "&a [1, *a]",
    '"',
    "-",
    "x" * 50_000,
    '{"spanId": "a", "parentSpanId": "a"}',
    '"type": ["eou_metrics"]',
    "9223372036854775808",
    "\n",
]
LIMIT_S = 20.0
FUZZ = settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
runner = CliRunner()

edit = st.tuples(st.floats(0, 1), st.integers(0, 200), st.one_of(st.sampled_from(TOKENS), st.text(max_size=20)))


def mutate(text: str, edits: list[tuple[float, int, str]]) -> str:
    for where, length, token in edits:
        i = int(where * len(text))
        text = text[:i] + token + text[i + length :]
    return text


def invoke(args: list[str]) -> tuple[int, str]:
    with time_limit(LIMIT_S):
        result = runner.invoke(app, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a traceback: let pytest show it
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 1, 2), result.output[-500:]
    return result.exit_code, result.output


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs SIGALRM for the time limit")
@FUZZ
@given(source=st.sampled_from(TRACES), edits=st.lists(edit, min_size=1, max_size=4))
def test_mutated_traces_exit_0_1_2_and_keep_the_anomaly_contract(
    source: Path, edits: list[tuple[float, int, str]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / source.name
        path.write_text(mutate(source.read_text(encoding="utf-8"), edits), encoding="utf-8", errors="surrogatepass")
        code, output = invoke(["check", str(path), "-f", "json"])
    if code == 2:
        return
    doc = json.loads(output)
    for turn in doc.get("turns", []):
        if turn.get("included"):
            assert math.isfinite(turn["total_ms"]), turn
            assert turn["total_ms"] >= 0, turn


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs SIGALRM for the time limit")
@FUZZ
@given(source=st.sampled_from(SCENARIOS), edits=st.lists(edit, min_size=1, max_size=4))
def test_mutated_scenarios_exit_0_1_2(source: Path, edits: list[tuple[float, int, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / source.name
        path.write_text(mutate(source.read_text(encoding="utf-8"), edits), encoding="utf-8", errors="surrogatepass")
        invoke(["run", str(path), "-n", "300", "-f", "json"])


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs SIGALRM for the time limit")
def test_the_shared_time_limit_fires_and_restores_the_handler() -> None:
    before = signal.getsignal(signal.SIGALRM)
    with pytest.raises(Hang, match=r"still running after 0\.05 s"), time_limit(0.05):
        time.sleep(30)  # interrupted by the alarm after 0.05 s
    assert signal.getsignal(signal.SIGALRM) is before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
