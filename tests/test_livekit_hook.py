"""The LiveKit hook on a real AgentSession with LiveKit's own metrics types: its turns equal what
`voicebudget check` reads from the same metrics written as model_dump() JSON lines."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("livekit.agents", reason="the livekit extra is not installed: pip install 'voicebudget[livekit]'")

from livekit.agents import AgentSession  # noqa: E402
from livekit.agents.metrics import (  # noqa: E402
    EOUMetrics,
    LLMMetrics,
    RealtimeModelMetrics,
    STTMetrics,
    TTSMetrics,
    VADMetrics,
)
from livekit.agents.voice.events import MetricsCollectedEvent  # noqa: E402

from voicebudget import Budget, check_traces  # noqa: E402
from voicebudget.integrations.livekit import BudgetHook  # noqa: E402

pytest_plugins = ["pytester"]


def eou(speech_id: str, delay_s: float, transcription_s: float) -> EOUMetrics:
    return EOUMetrics(timestamp=1.0, end_of_utterance_delay=delay_s, transcription_delay=transcription_s,
                      on_user_turn_completed_delay=0.0, speech_id=speech_id)  # fmt: skip


def llm(speech_id: str, ttft_s: float, request: str) -> LLMMetrics:
    return LLMMetrics(label="openai.LLM", request_id=request, timestamp=1.0, duration=0.9, ttft=ttft_s,
                      cancelled=False, completion_tokens=20, prompt_tokens=300, prompt_cached_tokens=0,
                      total_tokens=320, tokens_per_second=60.0, speech_id=speech_id)  # fmt: skip


def tts(speech_id: str, ttfb_s: float, request: str) -> TTSMetrics:
    return TTSMetrics(label="cartesia.TTS", request_id=request, timestamp=1.0, ttfb=ttfb_s, duration=0.5,
                      audio_duration=1.2, cancelled=False, characters_count=40, streamed=True,
                      speech_id=speech_id)  # fmt: skip


def stt() -> STTMetrics:
    return STTMetrics(label="deepgram.STT", request_id="stt-1", timestamp=1.0, duration=0.0, audio_duration=2.0,
                      streamed=True)  # fmt: skip


def vad() -> VADMetrics:
    return VADMetrics(label="silero.VAD", timestamp=1.0, idle_time=0.1, inference_duration_total=0.01,
                      inference_count=32)  # fmt: skip


def session_metrics() -> list[Any]:
    """A session's metrics in the order LiveKit emits them."""
    return [
        vad(), stt(),
        eou("speech_a", 0.52, 0.21), llm("speech_a", 0.31, "llm-1"), tts("speech_a", 0.15, "tts-1"),
        llm("speech_a", 0.44, "llm-2"),  # a tool-call follow-up: not on the speaking path
        stt(),
        eou("speech_b", 0.61, 0.25), llm("speech_b", -1.0, "llm-3"), tts("speech_b", 0.10, "tts-2"),  # no token
        eou("speech_c", 0.45, 0.18), llm("speech_c", 0.27, "llm-4"), vad(), tts("speech_c", 0.21, "tts-3"),
        RealtimeModelMetrics(request_id="resp_1", timestamp=1.0, ttft=0.58, input_token_details={},
                             output_token_details={}),
        eou("speech_d", 0.50, 0.20), llm("speech_d", 0.35, "llm-5"),  # interrupted before any TTS
        eou("speech_e", 0.40, 0.12), llm("speech_e", 0.22, "llm-6"), tts("speech_e", 0.12, "tts-4"),
    ]  # fmt: skip


def emit_in_a_session(events: list[tuple[str, Any]], hook: BudgetHook) -> None:
    """A real AgentSession (built inside a running event loop, as an agent's entrypoint does)."""

    async def main() -> None:
        session = AgentSession()
        hook.attach(session)
        for name, event in events:
            session.emit(name, event)  # type: ignore[arg-type]

    asyncio.run(main())


def test_hook_turns_equal_what_check_reads_from_the_same_metrics(tmp_path: Path) -> None:
    metrics = session_metrics()
    hook = BudgetHook(Budget(total_ms=800))
    emit_in_a_session([("metrics_collected", MetricsCollectedEvent(metrics=m)) for m in metrics], hook)
    trace = tmp_path / "metrics.jsonl"
    trace.write_text("".join(json.dumps(m.model_dump()) + "\n" for m in metrics), encoding="utf-8")
    checked = check_traces([trace], Budget(total_ms=800))

    report = hook.report()
    turns = {t.name: t for t in hook.recorder.turns}
    assert list(turns) == ["speech_a", "speech_b", "speech_c", "resp_1", "speech_e", "speech_d"]
    for trace_turn, included in zip(checked.turns, checked.included, strict=True):
        turn = turns[trace_turn.id]
        spans = {sp.name: sp.duration_ms for sp in turn.spans}
        assert spans == pytest.approx(dict(trace_turn.stages_ms), abs=1e-6)
        if included:
            assert turn.status == "complete"
            assert turn.voice_to_voice_ms == pytest.approx(trace_turn.total_ms, abs=1e-6)
        else:
            assert turn.status == "incomplete"
    assert {t.name for t in report.excluded} == {"speech_b", "speech_d"}
    reasons = {t.name: t.reason for t in report.excluded}
    assert "ttft = -1" in reasons["speech_b"]
    assert "no tts_metrics line for speech_id speech_d" in reasons["speech_d"]
    # the same figures: 4 turns (a 981, c 930, realtime 580, e 740 ms), the same stages
    assert report.n_turns == checked.report.n_turns == 4
    assert sorted(report.total_samples_ms) == pytest.approx(sorted(checked.report.total_samples_ms), abs=1e-6)
    assert report.total.at_percentile_ms == pytest.approx(checked.report.total.at_percentile_ms, abs=1e-6)
    for name in ("endpointing", "llm_ttft", "tts_ttfb"):
        assert report.stage(name).stats.p50_ms == pytest.approx(checked.report.stage(name).stats.p50_ms, abs=1e-6)
    assert turns["speech_a"].voice_to_voice_ms == pytest.approx(520.0 + 310.0 + 150.0)
    assert not report.passed  # p95 of (580, 740, 930, 980) ms > 800 ms


def test_session_close_reads_pending_turns() -> None:
    from livekit.agents.voice.events import CloseEvent

    hook = BudgetHook()
    emit_in_a_session([("metrics_collected", MetricsCollectedEvent(metrics=eou("speech_x", 0.5, 0.2)))], hook)
    assert hook.recorder.turns == ()
    emit_in_a_session([("close", CloseEvent(reason="user_initiated"))], hook)
    (turn,) = hook.recorder.turns
    assert (turn.name, turn.status) == ("speech_x", "incomplete")
    assert "no llm_metrics line" in turn.reason


PYTESTER_TEST = """
import asyncio

import numpy as np
import pytest
from livekit.agents import AgentSession
from livekit.agents.metrics import EOUMetrics, LLMMetrics, TTSMetrics
from livekit.agents.voice.events import MetricsCollectedEvent

from voicebudget.integrations.livekit import BudgetHook


def turn(i, eou_s, ttft_s, ttfb_s):
    sid = f"speech_{i}"
    return [
        EOUMetrics(timestamp=1.0, end_of_utterance_delay=eou_s, transcription_delay=0.2,
                   on_user_turn_completed_delay=0.0, speech_id=sid),
        LLMMetrics(label="openai.LLM", request_id=f"llm-{i}", timestamp=1.0, duration=0.9, ttft=ttft_s,
                   cancelled=False, completion_tokens=20, prompt_tokens=300, prompt_cached_tokens=0,
                   total_tokens=320, tokens_per_second=60.0, speech_id=sid),
        TTSMetrics(label="cartesia.TTS", request_id=f"tts-{i}", timestamp=1.0, ttfb=ttfb_s, duration=0.5,
                   audio_duration=1.2, cancelled=False, characters_count=40, streamed=True, speech_id=sid),
    ]


def converse(recorder, turns):
    async def main():
        session = AgentSession()
        BudgetHook(recorder=recorder).attach(session)
        for metrics in turns:
            for m in metrics:
                session.emit("metrics_collected", MetricsCollectedEvent(metrics=m))

    asyncio.run(main())


@pytest.mark.voice_budget(total_ms=800, stages={"llm_ttft": 400})
def test_slow_llm(voice_budget):
    converse(voice_budget, [turn(i, 0.50 + 0.02 * i, 0.60 + 0.02 * i, 0.15) for i in range(3)])


@pytest.mark.voice_budget(total_ms=800)
def test_fast_llm(voice_budget):
    converse(voice_budget, [turn(i, 0.30, 0.20, 0.10) for i in range(2)])
"""


def test_pytest_fixture_fails_a_livekit_session_over_budget(pytester: pytest.Pytester) -> None:
    """The hook on a real AgentSession feeds the ``voice_budget`` fixture, as a user's test would: totals
    1250/1290/1330 ms (EOU + TTFT + TTS TTFB), p95 = 1290 + 0.9 * 40 = 1326 ms; TTFT p95 638 ms."""
    pytester.makepyfile(test_agent=PYTESTER_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest", timeout=300)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*voice budget exceeded: p95 1326.0 ms > 800.0 ms; tail driver: llm_ttft (mean 640.0 ms of the "
            "slowest 5% of turns); llm_ttft p95 638.0 ms > allocation 400.0 ms",
            "*3 turns measured, 0.0% within 800.0 ms*",
        ]
    )
    result.stdout.fnmatch_lines(["passed test_agent.py::test_fast_llm: p95 600.0 ms <= 800.0 ms*(2 turns)"])
    result.stdout.no_fnmatch_line("*Traceback*")


def guard_800(policy: Any, **options: Any) -> Any:
    """1,000 turns: commit (endpointing) 600 ms; reply (TTFT + TTS TTFB) 100 ms in 95% of them, 1000 ms in 5%."""
    from voicebudget import BudgetGuard

    reply = np.where(np.arange(1000) < 950, 100.0, 1000.0)
    stages = {"endpointing": np.full(1000, 600.0), "asr": np.zeros(1000), "llm_ttft": reply, "tts_ttfb": np.zeros(1000)}
    return BudgetGuard(Budget(total_ms=800), stages, policy=policy, min_rows=10, phases=BudgetHook.PHASES, **options)


def test_live_guard_follows_livekit_state_events_and_calls_the_policy_once() -> None:
    from fake_clock import FakeClock
    from livekit.agents.voice.events import AgentStateChangedEvent, UserStateChangedEvent

    calls: list[Any] = []
    guard = guard_800(lambda d: calls.append(d) or "filler")
    clock = FakeClock()
    hook = BudgetHook(guard=guard, clock=clock, vad_silence_s=0.5, poll_ms=1.0)

    async def turn(end_ms: float, speaking_at_ms: float) -> None:
        called = len(calls)
        session = AgentSession()
        hook.attach(session)
        clock.at_ms(end_ms + 500.0)  # the VAD reports the end of speech after its 0.5 s of silence
        session.emit("user_state_changed", UserStateChangedEvent(old_state="speaking", new_state="listening"))
        clock.at_ms(end_ms + 600.0)  # endpointing done: LiveKit starts the reply
        session.emit("agent_state_changed", AgentStateChangedEvent(old_state="listening", new_state="thinking"))
        await asyncio.sleep(0.02)  # a few polls at 600 ms: P(600 + reply <= 800) = 0.95, fits
        assert len(calls) == called
        clock.at_ms(end_ms + speaking_at_ms)
        await asyncio.sleep(0.02)
        session.emit("agent_state_changed", AgentStateChangedEvent(old_state="thinking", new_state="speaking"))
        await asyncio.sleep(0.01)

    # a slow reply: 200 ms into it, only the 50 slow turns lasted that long, and none of them fits
    asyncio.run(turn(0.0, 800.0))
    (decision,) = calls
    assert decision.stage == "reply"
    # the start is back-dated by the VAD's silence (and the event's age on the wall clock, a few us)
    assert decision.elapsed_ms == pytest.approx(800.0, abs=50.0)
    assert decision.in_stage_ms == pytest.approx(200.0, abs=1e-6)
    assert (decision.p_fit, decision.fits, decision.rows) == (0.0, False, 50)
    assert hook.decisions == [decision._replace(action="filler")]
    # a fast reply: first audio at 690 ms, the guard never misses, the policy is not called again
    asyncio.run(turn(10_000.0, 690.0))
    assert len(calls) == 1
    last = hook.decisions[-1]
    assert (last.stage, last.fits, last.p_fit, last.action) == ("reply", True, 0.95, None)


def test_live_guard_learns_each_complete_turn_from_the_metrics() -> None:
    from voicebudget import BudgetGuard

    guard = guard_800(None)
    hook = BudgetHook(guard=guard)
    metrics = [
        eou("speech_a", 0.52, 0.21),
        llm("speech_a", 0.31, "llm-1"),
        tts("speech_a", 0.15, "tts-1"),
        eou("speech_b", 0.61, 0.25),
        llm("speech_b", -1.0, "llm-3"),
        tts("speech_b", 0.10, "tts-2"),
    ]
    emit_in_a_session([("metrics_collected", MetricsCollectedEvent(metrics=m)) for m in metrics], hook)
    assert guard.n_turns == 1001  # speech_a learnt; speech_b (ttft = -1) is flagged, not learnt
    # the learnt row is (commit 520 ms, reply 310 + 150 = 460 ms): the guard now answers as one built
    # with that row; 600 + 100 fits 800 ms, 520 + 460 and 600 + 1000 do not
    reply = np.where(np.arange(1000) < 950, 100.0, 1000.0)
    expected = BudgetGuard(Budget(total_ms=800), {"commit": [*[600.0] * 1000, 520.0], "reply": [*reply, 460.0]},
                           min_rows=10)  # fmt: skip
    assert guard.stages[:2] == ("commit", "reply")
    assert guard.decide("commit", 0.0).p_fit == pytest.approx(950 / 1001)
    for point in [("commit", 0.0, 0.0), ("commit", 550.0, 550.0), ("reply", 650.0, 50.0), ("reply", 700.0, 200.0)]:
        assert guard.decide(*point)[:9] == expected.decide(*point)[:9]


def test_guard_without_the_livekit_phases_is_refused() -> None:
    from voicebudget import BudgetGuard

    guard = BudgetGuard(Budget(), {"llm": [100.0, 200.0]})
    with pytest.raises(
        ValueError,
        match=r"the guard's stages \['llm'\] lack \['commit', 'reply'\]; build it with "
        r"phases=BudgetHook.PHASES",
    ):
        BudgetHook(guard=guard)
    phases_as_columns = BudgetGuard(Budget(), {"commit": [500.0], "reply": [200.0]})
    with pytest.raises(ValueError, match=r"must merge their stages: build it with phases=BudgetHook.PHASES"):
        BudgetHook(guard=phases_as_columns)
    assert BudgetHook(guard=phases_as_columns, learn=False).guard is phases_as_columns
