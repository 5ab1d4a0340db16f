"""Conformance: fixtures produced by LiveKit Agents' own code (the ``livekit-agents`` package), read
back by the trace readers, which must recover the injected times within 5 ms.

- metrics: LiveKit's own models (``livekit.agents.metrics``: EOUMetrics, LLMMetrics, TTSMetrics,
  STTMetrics, VADMetrics, RealtimeModelMetrics) serialised the three ways users do: ``model_dump()``
  as JSON lines, ``str()`` and ``repr()`` in log lines;
- chat history: LiveKit's ``ChatContext`` with per-message ``metrics`` (``MetricsReport``),
  ``to_dict()`` as one document and one item per line;
- OpenTelemetry: LiveKit's tracer (``livekit.agents.telemetry``) on an SDK provider with an in-memory
  exporter; ``agent_turn`` opened by LiveKit's own ``_agent_turn`` and, for 1.8, stamped by its own
  ``_record_user_turn_stages``; realtime metrics by its ``record_realtime_metrics``; ``user_turn``,
  ``llm_node``, ``tts_node`` with LiveKit's span names and attribute constants (``trace_types``) as
  ``voice/audio_recognition.py`` and ``voice/generation.py`` set them. The spans are encoded by the
  OTLP exporter's own encoder and written as OTLP JSON lines (hex ids, as the collector's file
  exporter writes them).
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from livekit.agents import llm, metrics
from livekit.agents.telemetry import set_tracer_provider, trace_types
from livekit.agents.telemetry.traces import tracer
from livekit.agents.telemetry.utils import record_realtime_metrics
from livekit.agents.voice.agent_activity import _agent_turn, _record_user_turn_stages
from livekit.agents.voice.speech_handle import SpeechHandle
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_files import otlp_json_line

from voicebudget.traces import check, read_trace

TOL_MS = 5.0  # the bar; the readers are exact up to float rounding here


@dataclass(frozen=True)
class Turn:
    """Injected values, s."""

    eou: float
    asr: float
    ttft: float
    ttfb: float
    extra: float  # first sentence + playout start, inside e2e_latency only

    @property
    def metrics_total_ms(self) -> float:
        return (self.eou + self.ttft + self.ttfb) * 1000

    @property
    def e2e(self) -> float:
        return self.eou + self.ttft + self.ttfb + self.extra


@pytest.fixture(scope="module")
def turns() -> list[Turn]:
    rng = np.random.default_rng(20261130)
    out = []
    for _ in range(6):
        eou, ttft, ttfb, extra = rng.uniform([0.3, 0.2, 0.08, 0.05], [1.6, 1.2, 0.4, 0.4])
        out.append(Turn(float(eou), float(eou * rng.uniform(0.3, 0.9)), float(ttft), float(ttfb), float(extra)))
    return out


def _models(turns: list[Turn]) -> Iterator[metrics.AgentMetrics]:
    now = 1_764_000_000.0
    for i, t in enumerate(turns):
        sid = f"speech_{i:04x}"
        now += 20.0
        yield metrics.VADMetrics(
            label="livekit.plugins.silero.vad.VAD",
            timestamp=now,
            idle_time=0.02,
            inference_duration_total=0.03,
            inference_count=32,
        )
        yield metrics.STTMetrics(
            label="livekit.plugins.deepgram.stt.STT",
            request_id=f"stt-{i}",
            timestamp=now,
            duration=0.0,
            audio_duration=3.1,
            streamed=True,
        )
        commit = now + 1  # LiveKit stamps EOU metrics at the commit; the LLM request starts then (no preemption)
        yield metrics.EOUMetrics(
            timestamp=commit,
            end_of_utterance_delay=t.eou,
            transcription_delay=t.asr,
            on_user_turn_completed_delay=0.0004,
            speech_id=sid,
        )
        yield metrics.LLMMetrics(
            label="livekit.plugins.openai.llm.LLM",
            request_id=f"chatcmpl-{i}",
            timestamp=commit + 1.4,  # metrics are stamped when the request ends
            duration=1.4,
            ttft=t.ttft,
            cancelled=False,
            completion_tokens=40,
            prompt_tokens=900,
            prompt_cached_tokens=0,
            total_tokens=940,
            tokens_per_second=30.1,
            speech_id=sid,
        )
        if i == 2:  # a tool-call follow-up request of the same speech: not on the speaking path
            yield metrics.LLMMetrics(
                label="livekit.plugins.openai.llm.LLM",
                request_id="chatcmpl-follow-up",
                timestamp=commit + 1.5 + 0.9,  # starts after the speech began: off the speaking path
                duration=0.9,
                ttft=0.9,
                cancelled=False,
                completion_tokens=20,
                prompt_tokens=990,
                prompt_cached_tokens=0,
                total_tokens=1010,
                tokens_per_second=22.0,
                speech_id=sid,
            )
        yield metrics.TTSMetrics(
            label="livekit.plugins.cartesia.tts.TTS",
            request_id=f"tts-{i}",
            timestamp=commit + t.ttft + 1.1,  # the TTS starts on the LLM's first text
            ttfb=t.ttfb,
            duration=1.1,
            audio_duration=3.4,
            cancelled=False,
            characters_count=64,
            streamed=True,
            acquire_time=0.21 if i == 0 else 0.0,
            connection_reused=i > 0,
            segment_id=f"SEG_{i}",
            speech_id=sid,
        )


def _assert_recovered(path: Path, turns: list[Turn], fmt: str) -> None:
    table = read_trace(path)
    assert table.turns[0].reader == fmt
    assert table.anomalies == ()
    assert len(table.turns) == len(turns)
    for got, t in zip(table.turns, turns, strict=True):
        assert got.stages_ms["endpointing"] == pytest.approx(t.eou * 1000, abs=TOL_MS)
        assert got.stages_ms["asr"] == pytest.approx(t.asr * 1000, abs=TOL_MS)
        assert got.stages_ms["llm_ttft"] == pytest.approx(t.ttft * 1000, abs=TOL_MS)
        assert got.stages_ms["tts_ttfb"] == pytest.approx(t.ttfb * 1000, abs=TOL_MS)
    result = check([table])
    totals = np.array([t.total_ms for t in table.turns])
    assert result.report.total.p50_ms == pytest.approx(float(np.percentile(totals, 50)), abs=1e-6)


@pytest.mark.parametrize("how", ["model_dump", "model_dump_json"])
def test_metrics_json_lines(how: str, turns: list[Turn], tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    with path.open("w") as fh:
        for m in _models(turns):
            fh.write((json.dumps(m.model_dump()) if how == "model_dump" else m.model_dump_json()) + "\n")
    _assert_recovered(path, turns, "livekit")
    table = read_trace(path)
    assert [t.total_ms for t in table.turns] == pytest.approx([t.metrics_total_ms for t in turns], abs=TOL_MS)
    assert [t.cold for t in table.turns] == [True] + [False] * (len(turns) - 1)
    assert {t.rules for t in table.turns} == {"livekit-metrics-1.x"}


@pytest.mark.parametrize("printer", [str, repr])
def test_metrics_printed_by_pydantic_in_log_lines(printer: Any, turns: list[Turn], tmp_path: Path) -> None:
    path = tmp_path / "agent.log"
    with path.open("w") as fh:
        fh.write("2026-11-30 10:00:00,001 - agent - INFO - starting worker {'version': '1.8.9'}\n")
        for i, m in enumerate(_models(turns)):
            fh.write(
                f"2026-11-30 10:00:{i % 60:02d},500 - agent - INFO - Metrics type -> {m.type}, "
                f"metrics -> {printer(m)}\n"
            )
    _assert_recovered(path, turns, "livekit")
    table = read_trace(path)
    assert [t.total_ms for t in table.turns] == pytest.approx([t.metrics_total_ms for t in turns], abs=TOL_MS)
    assert {t.rules for t in table.turns} == {"livekit-metrics-1.x (pydantic str/repr)"}


def _realtime(ttft: float, i: int) -> metrics.RealtimeModelMetrics:
    details = metrics.RealtimeModelMetrics
    return details(
        label="livekit.plugins.openai.realtime.realtime_model.RealtimeModel",
        request_id=f"resp_{i}",
        timestamp=1_764_000_000.0 + 10 * i,
        duration=2.5,
        ttft=ttft,
        input_tokens=900,
        output_tokens=120,
        total_tokens=1020,
        tokens_per_second=48.0,
        input_token_details=details.InputTokenDetails(audio_tokens=600, text_tokens=300),
        output_token_details=details.OutputTokenDetails(audio_tokens=120),
    )


@pytest.mark.parametrize("printer", [lambda m: json.dumps(m.model_dump()), str])
def test_realtime_model_metrics(printer: Any, tmp_path: Path) -> None:
    ttfts = [0.61, 8.32, 0.58, -1.0]
    path = tmp_path / "realtime.log"
    path.write_text("".join(printer(_realtime(v, i)) + "\n" for i, v in enumerate(ttfts)))
    table = read_trace(path)
    assert [t.total_ms for t in table.turns[:3]] == pytest.approx([610.0, 8320.0, 580.0], abs=TOL_MS)
    assert table.turns[3].total_ms is None
    (anomaly,) = table.anomalies
    assert (anomaly.line, anomaly.field, anomaly.reason) == (4, "ttft", "no first audio token (ttft = -1)")
    assert check([table]).report.tail_driver is not None


def _history(turns: list[Turn], realtime: bool) -> llm.ChatContext:
    ctx = llm.ChatContext.empty()
    ctx.add_message(role="system", content="You are a voice agent.")
    clock = 1_764_000_000.0
    for i, t in enumerate(turns):
        clock += 20.0
        user: llm.MetricsReport = {"started_speaking_at": clock - 3.0, "stopped_speaking_at": clock}
        if not realtime:
            user |= {"end_of_turn_delay": t.eou, "transcription_delay": t.asr, "on_user_turn_completed_delay": 0.001}
        ctx.add_message(role="user", content=f"question {i}", metrics=user)
        reply: llm.MetricsReport = {"started_speaking_at": clock + t.e2e, "stopped_speaking_at": clock + t.e2e + 4}
        if not realtime:
            reply |= {"llm_node_ttft": t.ttft, "tts_node_ttfb": t.ttfb, "e2e_latency": t.e2e}
            if i % 2:  # 1.7+: LLM start -> first sentence at the TTS; a part of the extra time
                reply["llm_node_ttfs"] = t.ttft + t.extra / 2
        ctx.add_message(role="assistant", content=f"answer {i}", metrics=reply)
    return ctx


@pytest.mark.parametrize("layout", ["document", "item-per-line"])
def test_chat_history_to_dict(layout: str, turns: list[Turn], tmp_path: Path) -> None:
    doc = _history(turns, realtime=False).to_dict()
    path = tmp_path / "history.json"
    if layout == "document":
        path.write_text(json.dumps(doc, indent=2))
    else:
        path.write_text("".join(json.dumps({"item": item}) + "\n" for item in doc["items"]))
    _assert_recovered(path, turns, "livekit-history")
    table = read_trace(path)
    assert [t.total_ms for t in table.turns] == pytest.approx([t.e2e * 1000 for t in turns], abs=TOL_MS)
    for i, (got, t) in enumerate(zip(table.turns, turns, strict=True)):
        if i % 2:
            assert got.stages_ms["first_phrase"] == pytest.approx(t.extra * 500, abs=TOL_MS)
            assert got.stages_ms["other"] == pytest.approx(t.extra * 500, abs=TOL_MS)
        else:
            assert "first_phrase" not in got.stages_ms
            assert got.stages_ms["other"] == pytest.approx(t.extra * 1000, abs=TOL_MS)


def test_realtime_chat_history_is_voice_to_voice(turns: list[Turn], tmp_path: Path) -> None:
    path = tmp_path / "history.json"
    path.write_text(json.dumps(_history(turns, realtime=True).to_dict()))
    table = read_trace(path)
    assert table.anomalies == ()
    assert [t.total_ms for t in table.turns] == pytest.approx([t.e2e * 1000 for t in turns], abs=TOL_MS)
    assert {t.rules for t in table.turns} == {"livekit-history-realtime"}


# --- OpenTelemetry --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def exporter() -> InMemorySpanExporter:
    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    set_tracer_provider(provider)
    return exp


def _hex(b64: str, width: int) -> str:
    return base64.b64decode(b64).hex().rjust(width, "0")


def _otlp_json_lines(spans: Any) -> str:
    """One OTLP JSON export per turn, from the OTLP exporter's own protobuf encoding (tests/otlp_files.py)."""
    return otlp_json_line(spans)


def _run_turns(turns: list[Turn], layout: str, exporter: InMemorySpanExporter) -> list[str]:
    """Drive LiveKit's tracing for each turn; returns OTLP JSON lines (one export per turn)."""

    async def session() -> list[str]:
        lines = []
        with tracer.start_as_current_span("agent_session") as root:
            root_ctx = trace.set_span_in_context(root)
            for t in turns:
                lines.append(_one_turn(t, layout, root_ctx, exporter))
        return lines

    return asyncio.run(session())


def _one_turn(t: Turn, layout: str, root_ctx: Any, exporter: InMemorySpanExporter) -> str:
    exporter.clear()
    start = time.time_ns()  # the user starts speaking after the previous agent turn began
    user_turn = tracer.start_span("user_turn", context=root_ctx, start_time=start)
    end_of_turn = trace_types.ATTR_END_OF_TURN_DELAY if layout != "1.2" else "lk.end_of_utterance_delay"
    user_turn.set_attributes({trace_types.ATTR_TRANSCRIPTION_DELAY: t.asr, end_of_turn: t.eou})
    with tracer.use_span(user_turn, end_on_exit=False):
        eou = tracer.start_span("eou_detection")
        eou.set_attributes({trace_types.ATTR_EOU_PROBABILITY: 0.93, trace_types.ATTR_EOU_DELAY: 0.5})
        eou.end()
    user_turn.end()
    handle = SpeechHandle.create()
    with _agent_turn(handle, root_context=root_ctx, agent_label="assistant") as span:
        if layout == "realtime":
            record_realtime_metrics(span, _realtime(t.ttft, 0))
        else:
            with tracer.start_as_current_span("llm_node") as node:
                if layout in ("1.2", "1.3"):
                    with tracer.start_as_current_span("llm_request") as request:
                        request.set_attribute(
                            trace_types.ATTR_LLM_METRICS,
                            metrics.LLMMetrics(
                                label="openai",
                                request_id="r",
                                timestamp=1.0,
                                duration=1.0,
                                ttft=t.ttft,
                                cancelled=False,
                                completion_tokens=1,
                                prompt_tokens=1,
                                prompt_cached_tokens=0,
                                total_tokens=2,
                                tokens_per_second=1.0,
                            ).model_dump_json(),
                        )
                else:
                    node.set_attribute(trace_types.ATTR_RESPONSE_TTFT, t.ttft)
            with tracer.start_as_current_span("tts_node") as node:
                if layout in ("1.2", "1.3"):
                    with tracer.start_as_current_span("tts_request") as request:
                        request.set_attribute(
                            trace_types.ATTR_TTS_METRICS,
                            metrics.TTSMetrics(
                                label="cartesia",
                                request_id="a",
                                timestamp=1.0,
                                ttfb=t.ttfb,
                                duration=1.0,
                                audio_duration=2.0,
                                cancelled=False,
                                characters_count=10,
                                streamed=True,
                            ).model_dump_json(),
                        )
                else:
                    node.set_attribute(trace_types.ATTR_RESPONSE_TTFB, t.ttfb)
        if layout not in ("1.2", "1.3"):  # lk.e2e_latency from 1.5
            span.set_attribute(trace_types.ATTR_E2E_LATENCY, t.e2e)
        if layout == "1.8":  # 1.8 also stamps the user turn's stages on agent_turn
            _record_user_turn_stages(span, {"end_of_turn_delay": t.eou, "transcription_delay": t.asr})
    handle._mark_done()
    return _otlp_json_lines(exporter.get_finished_spans())


@pytest.mark.parametrize("layout", ["1.5", "1.8", "1.3", "1.2", "realtime"])
def test_otel_spans_from_livekit_tracing(
    layout: str, exporter: InMemorySpanExporter, turns: list[Turn], tmp_path: Path
) -> None:
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(_run_turns(turns, layout, exporter)))
    table = read_trace(path)
    assert table.format == "otel-livekit"
    assert table.anomalies == ()
    assert len(table.turns) == len(turns)
    expected_rules = {
        "1.5": "livekit-otel-1.5+",
        "1.8": "livekit-otel-1.5+",
        "realtime": "livekit-otel-1.5+",
        "1.3": "livekit-otel-1.3",
        "1.2": "livekit-otel-1.2",
    }[layout]
    assert {t.rules for t in table.turns} == {expected_rules}
    for got, t in zip(table.turns, turns, strict=True):
        assert got.stages_ms["llm_ttft"] == pytest.approx(t.ttft * 1000, abs=TOL_MS)
        assert got.stages_ms["endpointing"] == pytest.approx(t.eou * 1000, abs=TOL_MS)
        if layout in ("1.2", "1.3"):  # no lk.e2e_latency: the total is the sum of the stages
            assert got.total_ms == pytest.approx(t.metrics_total_ms, abs=TOL_MS)
        else:
            assert got.total_ms == pytest.approx(t.e2e * 1000, abs=TOL_MS)
        if layout != "realtime":
            assert got.stages_ms["tts_ttfb"] == pytest.approx(t.ttfb * 1000, abs=TOL_MS)
    check([table])
