"""The Pipecat observer on a real Pipecat pipeline (its worker, runner and frames; scripted services
with known delays): recorded stages equal the injected delays, turn by turn.

"Injected" is what each scripted service really waited (its own clock around its sleep): on a loaded
2-core machine an ``asyncio.sleep(0.12)`` can last 150 ms, which is the scheduler, not the observer.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pipecat", reason="the pipecat extra is not installed: pip install 'voicebudget[pipecat]'")

from pipecat_scripted import THREE_TURNS  # noqa: E402

from voicebudget import Budget, BudgetGuard  # noqa: E402
from voicebudget.integrations.pipecat import BudgetObserver  # noqa: E402
from voicebudget.testing import TurnScript  # noqa: E402
from voicebudget.testing.pipecat import run_conversation  # noqa: E402

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
TOLERANCE_MS = 5.0
LATE_MS = 15.0
"""Between a scripted service's own clock reading and the frame reaching the observer, Pipecat passes the frame
through its processors' queues: a loaded event loop delays that by several ms (209.1 vs 201.8 ms in a fresh-clone CI
run). A stage's span therefore covers what its service waited, and may run up to LATE_MS longer; it is never shorter
(by more than TOLERANCE_MS)."""


def test_recorded_stages_equal_injected_delays_turn_by_turn() -> None:
    observer = BudgetObserver(Budget(total_ms=800))
    conv = asyncio.run(run_conversation(THREE_TURNS, [observer]))
    turns = observer.recorder.turns
    assert [t.status for t in turns] == ["complete"] * 3
    for turn, script, expected in zip(turns, THREE_TURNS, conv.injected, strict=True):
        measured = {sp.name: sp.duration_ms for sp in turn.spans}
        assert set(expected) == set(script.delays())
        for stage, ms in expected.items():
            assert ms - TOLERANCE_MS <= measured[stage] <= ms + LATE_MS, (turn.index, stage, ms, measured)
        for hop in set(measured) - set(expected):  # framework hops: context, text_aggregation
            assert hop in ("context", "text_aggregation")
            # Pipecat's own hops (no service waits in them) took 1.5-19.8 ms on an idle machine; a stage's time
            # credited to a hop would make that stage short, which the bound above catches
            assert measured[hop] < 50.0, (turn.index, hop, measured)
        # the turn is its stages and hops end to end, each stage late by up to LATE_MS (a fresh-clone CI run
        # measured 759.4 ms for 720.2 ms injected, every stage within its bound)
        injected = sum(expected.values())
        hops = sum(v for k, v in measured.items() if k not in expected)
        assert injected - TOLERANCE_MS <= turn.voice_to_voice_ms <= injected + hops + LATE_MS * len(expected), (
            turn.index,
            injected,
            measured,
        )
    assert "reasoning" not in {sp.name for sp in turns[0].spans}  # not a thinking model
    report = observer.report()
    assert report.n_turns == 3
    # turn 2 (thinking) is 1200 ms: the figures add up, the budget is not met at p95
    assert not report.passed
    median_llm = sorted(i["llm"] for i in conv.injected)[1]
    assert median_llm - TOLERANCE_MS <= report.stage("llm").stats.p50_ms <= median_llm + LATE_MS


def test_importing_voicebudget_imports_no_framework() -> None:
    import subprocess
    import sys

    code = (
        "import sys, voicebudget, voicebudget.integrations\n"
        "voicebudget.BudgetGuard, voicebudget.TurnRecorder\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('pipecat', 'livekit')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _load_example() -> Any:
    import importlib.util

    path = ROOT / "docs" / "examples" / "pipecat_budget_filler.py"
    spec = importlib.util.spec_from_file_location("pipecat_budget_filler", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_filler_example_speaks_when_the_guard_predicts_a_late_first_audio() -> None:
    """A slow LLM turn gets a filler within the budget; a normal one does not."""
    rng = np.random.default_rng(7)
    n = 4_000
    # what this agent's turns look like: the LLM usually answers in 50-200 ms, 3 turns in 100 take
    # 400-1500 ms. If it has been silent for ~110 ms, p_fit falls below 0.95: time for a filler.
    slow = rng.random(n) < 0.03
    llm = np.where(slow, rng.uniform(400.0, 1500.0, n), rng.uniform(50.0, 200.0, n))
    samples = {"endpointing": np.full(n, 200.0), "stt": np.full(n, 80.0), "turn_detection": np.full(n, 30.0),
               "llm": llm, "tts": np.full(n, 120.0), "output": np.full(n, 20.0)}  # fmt: skip
    guard = BudgetGuard(Budget(total_ms=800), samples, policy=lambda decision: "filler")
    # at the LLM request (310 ms in) the turn fits with p >= 0.95: no filler yet
    assert guard.decide("llm", 310.0, 0.0).fits
    example = _load_example()
    filler = example.BudgetFiller(guard, poll_ms=20.0)
    observer = BudgetObserver(Budget(total_ms=800))
    scripts = [TurnScript(speech_ms=50.0, llm_ms=60.0), TurnScript(speech_ms=50.0, llm_ms=900.0),
               TurnScript(speech_ms=50.0, llm_ms=70.0)]  # fmt: skip
    asyncio.run(run_conversation(scripts, [observer], extra=[filler]))
    assert filler.fillers_sent == 1
    v2v = [t.voice_to_voice_ms for t in observer.recorder.turns]
    silent_ms = [d for d in (guard.decide("llm", 310.0 + t, t) for t in range(0, 200)) if not d.fits][0].in_stage_ms
    assert 90.0 < silent_ms < 130.0
    # the slow turn: the filler's audio comes first, within the budget (without it: 310 + 900 + 140 ms)
    assert v2v[1] is not None
    assert v2v[1] < 800.0
    assert {sp.name for sp in observer.recorder.turns[1].spans} >= {"context", "tts", "output"}
    assert "llm" not in {sp.name for sp in observer.recorder.turns[1].spans}  # no token before the audio
    # the normal turns answered on their own
    assert all(v is not None and v < 800.0 for v in v2v)


PYTESTER_TEST = """
import asyncio
import pytest
from voicebudget.integrations.pipecat import BudgetObserver
from voicebudget.testing import TurnScript
from voicebudget.testing.pipecat import run_conversation

@pytest.mark.voice_budget(total_ms=800, stages={"llm": 400})
def test_slow_llm(voice_budget):
    turns = [TurnScript(speech_ms=50.0, llm_ms=600.0)] * 3
    asyncio.run(run_conversation(turns, [BudgetObserver(recorder=voice_budget)]))

@pytest.mark.voice_budget(total_ms=800)
def test_fast_llm(voice_budget):
    turns = [TurnScript(speech_ms=50.0, llm_ms=150.0)] * 2
    asyncio.run(run_conversation(turns, [BudgetObserver(recorder=voice_budget)]))
"""


def test_pytest_fixture_fails_a_pipecat_pipeline_over_budget(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=PYTESTER_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest", timeout=300)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*voice budget exceeded: p95 1* ms > 800.0 ms; "
            "tail driver: llm (mean 6* ms of the slowest 5% of turns); llm p95 6* ms > allocation 400.0 ms",
            "*3 turns measured, 0.0% within 800.0 ms*",
            "*stage*p50 ms*p95 ms*budget ms*tail ms*tail share",
            "*endpointing*200.0*200.0*",
            "*stt*",
            "*turn_detection*",
            "*llm*400.0*over allocation",
            "*tts*",
            "*output*",
            "*tail driver: llm*",
        ]
    )
    result.stdout.fnmatch_lines(["passed test_agent.py::test_fast_llm: p95 * ms <= 800.0 ms*(2 turns)"])
