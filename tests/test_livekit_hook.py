"""The LiveKit hook on a real AgentSession with LiveKit's own metrics types: its turns equal what
`voicebudget check` reads from the same metrics written as model_dump() JSON lines."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

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
