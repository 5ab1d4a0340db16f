"""Hosted voice-agent platforms' own latency records, read from each platform's published schema.

- **Vapi** (a call object, ``GET /call/{id}``, a list of them, or the ``end-of-call-report`` webhook):
  ``artifact.performanceMetrics.turnLatencies[]`` with, per turn, ``endpointingLatency``,
  ``transcriberLatency``, ``modelLatency`` (time to first token), ``voiceLatency`` (time to first
  audio) and ``turnLatency`` (the whole turn), in ms. Vapi's docs describe the stages as running in
  sequence (transport, endpointing, transcription, model, voice): endpointing then transcription are
  the ``endpointing`` stage (parts ``endpointing`` and ``transcriber``), the model ``llm_ttft``, the
  voice ``tts_ttfb``; ``turnLatency`` is the total. Sources (read 2026-12-01):
  https://docs.vapi.ai/assistants/model-intelligence/understanding-latency, the ``PerformanceMetrics``
  and ``TurnLatency`` schemas of Vapi's OpenAPI document (https://api.vapi.ai/api-json), the changelog
  of 2025-08-09 (https://docs.vapi.ai/changelog/2025/8/9).
- **Deepgram Voice Agent** (the server messages a client logs, one JSON object per line, or a list):
  each ``LatencyReport`` message is one turn, all fields optional floats in seconds: ``stt_latency``
  (audio received -> transcript), ``ttt_token_latency`` / ``ttt_text_latency`` / ``ttt_tool_latency`` /
  ``ttt_thinking_latency`` (first token of any kind / text / tool call / thinking), ``tts_latency``
  (first text token -> first audio byte), ``total_latency`` (the user's utterance end -> first audio
  byte). Without any ``LatencyReport``, the older ``AgentStartedSpeaking`` messages' ``total_latency``,
  ``ttt_latency`` and ``tts_latency`` are read the same way. Sources (read 2026-12-01):
  https://developers.deepgram.com/docs/voice-agent-latency-report,
  https://developers.deepgram.com/docs/voice-agent-agent-started-speaking.
- **Retell** (a call object, ``GET /v2/get-call/{id}``, a list, or the ``call_ended``/``call_analyzed``
  webhook): ``latency`` holds per-component statistics (``e2e``, ``asr``, ``llm``, ``tts``,
  ``llm_websocket_network_rtt``, ``knowledge_base``, ``s2s``: ``p50``, ``p90``, ``p95``, ``p99``,
  ``min``, ``max``, ``num``, ms; v1 calls: ``e2e_latency``, ``llm_latency``, ...). They are not turns:
  the call is read as a summary and judged at the budget's percentile (:class:`Summary`), and the check
  says that no per-turn data exists. When ``e2e`` lists its ``values`` (one per turn), those are turns
  with a total and no stage (the components' lists are not aligned turn by turn). Sources (read
  2026-12-01): https://docs.retellai.com/reliability/check-actual-latency,
  https://docs.retellai.com/api-references/get-call.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from voicebudget.traces._jsonsafe import iter_lines, json_kind, loads
from voicebudget.traces._options import ReadOptions
from voicebudget.traces._table import Anomaly, Summary, TraceTable, TraceTurn, TurnBuilder

__all__ = [
    "PLATFORM_RULES",
    "PlatformRule",
    "looks_like_deepgram_agent",
    "looks_like_retell",
    "looks_like_vapi",
    "read_deepgram_agent",
    "read_retell",
    "read_vapi",
]


@dataclass(frozen=True)
class PlatformRule:
    """How one platform's record maps onto the stages.

    :ivar name: recorded on each turn it reads (:attr:`~voicebudget.traces.TraceTurn.rules`).
    :ivar record: the platform's record and where it is published.
    :ivar reads: what each stage is read from.
    :ivar total: what a turn's total is.
    :ivar source: the published schema or page it was read from (read 2026-12-01).
    """

    name: str
    record: str
    reads: str
    total: str
    source: str


PLATFORM_RULES: dict[str, PlatformRule] = {
    r.name: r
    for r in (
        PlatformRule(
            "vapi-performance-metrics",
            "Vapi call (GET /call/{id}, a list, the end-of-call-report webhook): artifact.performanceMetrics."
            "turnLatencies[], ms",
            "endpointing <- endpointingLatency + transcriberLatency (parts endpointing, transcriber), llm_ttft <- "
            "modelLatency, tts_ttfb <- voiceLatency",
            "turnLatency",
            "https://api.vapi.ai/api-json (PerformanceMetrics, TurnLatency); "
            "docs.vapi.ai/assistants/model-intelligence/understanding-latency; changelog 2025-08-09",
        ),
        PlatformRule(
            "deepgram-latency-report",
            "Deepgram Voice Agent server messages, one per line: LatencyReport, s",
            "asr <- stt_latency, llm_ttft <- ttt_text_latency (a tool call first: ttt_tool_latency, then the "
            "rest as tool), thinking <- ttt_thinking_latency, tts_ttfb <- tts_latency",
            "total_latency (the user's utterance end -> first audio byte)",
            "https://developers.deepgram.com/docs/voice-agent-latency-report",
        ),
        PlatformRule(
            "deepgram-agent-started-speaking",
            "Deepgram Voice Agent AgentStartedSpeaking messages (without any LatencyReport), s",
            "llm_ttft <- ttt_latency, tts_ttfb <- tts_latency",
            "total_latency",
            "https://developers.deepgram.com/docs/voice-agent-agent-started-speaking",
        ),
        PlatformRule(
            "retell-e2e-values",
            "Retell call (GET /v2/get-call/{id}, call_ended/call_analyzed webhooks): latency.e2e.values, ms",
            "(no stage: the components' lists are not aligned turn by turn)",
            "each value of latency.e2e.values",
            "https://docs.retellai.com/api-references/get-call",
        ),
        PlatformRule(
            "retell-latency-summary",
            "Retell call: latency.{e2e, asr, llm, tts, ...}.{p50, p90, p95, p99, min, max, num}, ms (no turns)",
            "a summary per component, judged at the budget's percentile; the check says no per-turn data exists",
            "(no turns)",
            "https://docs.retellai.com/reliability/check-actual-latency; api-references/get-call",
        ),
    )
}
"""Every hosted platform's rule, by name."""


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _documents(text: str, loose: list[Anomaly], origin: str) -> Iterator[tuple[Any, int]]:
    """The JSON documents in ``text`` with their first line: the whole text, else one per line."""
    doc, error = loads(text.removeprefix("\ufeff"))
    if error is None:
        yield doc, 1
        return
    for i, raw in enumerate(iter_lines(text), start=1):
        if not raw.strip():
            continue
        start = raw.find("{")
        obj, err = loads(raw[start:] if start >= 0 else raw)
        if err is not None:
            loose.append(Anomaly(i, "", raw.strip()[:120], err, origin))
            continue
        yield obj, i


def _built(builders: list[TurnBuilder], loose: list[Anomaly]) -> tuple[tuple[TraceTurn, ...], tuple[Anomaly, ...]]:
    """The turns built, and every anomaly (the loose ones and the turns'), by line."""
    turns = tuple(b.build(i) for i, b in enumerate(builders))
    anomalies = sorted([*loose, *(a for b in builders for a in b.anomalies)], key=lambda a: a.line)
    return turns, tuple(anomalies)


def _calls(doc: Any) -> Iterator[dict[str, Any]]:
    """Call objects in a document: a call, a list of calls, ``{"results"|"calls"|"items": [...]}``, or a
    webhook wrapping one (``{"message": {...}}`` Vapi, ``{"call": {...}}`` Retell)."""
    if isinstance(doc, list):
        for item in doc:
            yield from _calls(item)
        return
    if not isinstance(doc, dict):
        return
    for key in ("results", "calls", "items", "data"):
        if isinstance(doc.get(key), list):
            yield from _calls(doc[key])
            return
    for key in ("message", "call"):
        if isinstance(doc.get(key), dict) and not ({"artifact", "latency", "performanceMetrics"} & doc.keys()):
            yield from _calls(doc[key])
            return
    yield doc


# --- Vapi ----------------------------------------------------------------------------------------

_VAPI_DETECT = re.compile(r'"(?:performanceMetrics|turnLatencies)"')
VAPI_ANCHOR = "Vapi: the caller's end of speech as Vapi's endpointing sees it (turnLatencies, server side)"
VAPI_TOTAL = "turnLatency (endpointing + transcriber + model + voice, as Vapi measures a turn)"
_VAPI_STAGES = (
    ("endpointing", "endpointingLatency"),
    ("endpointing", "transcriberLatency"),
    ("llm_ttft", "modelLatency"),
    ("tts_ttfb", "voiceLatency"),
)


def looks_like_vapi(text: str) -> bool:
    """True for a Vapi call (or its webhook) carrying ``artifact.performanceMetrics``."""
    return _VAPI_DETECT.search(text[:200_000]) is not None


def read_vapi(text: str, origin: str = "<trace>", options: ReadOptions | None = None) -> TraceTable:
    """Turns from Vapi calls' ``artifact.performanceMetrics.turnLatencies`` (ms).

    :param text: a call object, a list of calls or an ``end-of-call-report`` webhook, as JSON (one
        document, or one per line).
    :returns: one turn per ``turnLatencies`` entry (id ``<call id>-<n>``); an entry missing a value
        or with a negative one is flagged.
    """
    absurd_ms = (options or ReadOptions()).absurd_ms
    loose: list[Anomaly] = []
    builders: list[TurnBuilder] = []
    for doc, line in _documents(text, loose, origin):
        for call in _calls(doc):
            metrics = _vapi_metrics(call)
            if not isinstance(metrics, dict):
                continue
            call_id = str(call.get("id") or call.get("callId") or f"call-{line}")
            turns = metrics.get("turnLatencies")
            if not isinstance(turns, list):
                loose.append(Anomaly(line, "turnLatencies", json_kind(turns), "not a list of turns", origin))
                continue
            for i, entry in enumerate(turns):
                builders.append(_vapi_turn(entry, f"{call_id}-{i + 1}", line, origin, absurd_ms))
    return TraceTable(origin, "vapi", VAPI_ANCHOR, VAPI_TOTAL, *_built(builders, loose))


def _vapi_metrics(call: dict[str, Any]) -> Any:
    """A call's ``artifact.performanceMetrics`` (a webhook's ``performanceMetrics`` when it has no artifact)."""
    artifact = call.get("artifact")
    metrics = artifact.get("performanceMetrics") if isinstance(artifact, dict) else None
    return call.get("performanceMetrics") if metrics is None else metrics


def _vapi_turn(entry: Any, tid: str, line: int, origin: str, absurd_ms: float) -> TurnBuilder:
    b = TurnBuilder(tid, line, origin, absurd_ms)
    b.rules = PLATFORM_RULES["vapi-performance-metrics"].name
    if not isinstance(entry, dict):
        b.flag(line, "turnLatencies", json_kind(entry), "a turn is not an object")
        return b
    for stage, key in _VAPI_STAGES:
        ms = b.ms(float(entry[key]), line=line, fld=key) if _number(entry.get(key)) is not None else None
        if ms is None:
            if key != "transcriberLatency":  # a turn Vapi's transcriber did not time keeps its endpointing
                b.flag(line, key, entry.get(key), "missing value" if key not in entry else "not a number")
            continue
        b.stages_ms[stage] = b.stages_ms.get(stage, 0.0) + ms
        if stage == "endpointing":
            b.set_part("endpointing", "transcriber" if key == "transcriberLatency" else "endpointing", ms)
    total = _number(entry.get("turnLatency"))
    b.framework_total_ms = total
    b.close_with_residual(total, line, "turnLatency", required=("endpointing", "llm_ttft", "tts_ttfb"))
    return b


# --- Deepgram Voice Agent ------------------------------------------------------------------------

_DG_DETECT = re.compile(r'"type"\s*:\s*"(?:LatencyReport|AgentStartedSpeaking)"')
DG_ANCHOR = "Deepgram Voice Agent: the user's utterance end as the agent's STT/turn detection sees it"
DG_TOTAL = "total_latency (utterance end -> first audio byte; server side)"


def looks_like_deepgram_agent(text: str) -> bool:
    """True for Deepgram Voice Agent server messages with a ``LatencyReport`` or ``AgentStartedSpeaking``."""
    return _DG_DETECT.search(text[:200_000]) is not None


def _messages(doc: Any) -> Iterator[dict[str, Any]]:
    if isinstance(doc, list):
        for item in doc:
            yield from _messages(item)
    elif isinstance(doc, dict):
        inner = doc.get("message") or doc.get("data")
        yield inner if isinstance(inner, dict) and "type" in inner and "type" not in doc else doc


def read_deepgram_agent(text: str, origin: str = "<trace>", options: ReadOptions | None = None) -> TraceTable:
    """Turns from Deepgram Voice Agent ``LatencyReport`` messages (s), else ``AgentStartedSpeaking``.

    Stages: ``endpointing`` <- ``stt_latency``; ``llm_ttft`` <- ``ttt_text_latency`` (else
    ``ttt_latency``, ``ttt_token_latency``), split into ``ttfb`` and ``thinking`` parts when
    ``ttt_thinking_latency`` comes first; a tool call first (``ttt_tool_latency`` below the text's):
    ``llm_ttft`` is the tool call's first token and the rest until the first text is ``tool`` (the
    tool and the pass after it; Deepgram does not split them); ``tts_ttfb`` <- ``tts_latency``; the
    total <- ``total_latency``.
    """
    absurd_ms = (options or ReadOptions()).absurd_ms
    loose: list[Anomaly] = []
    reports: list[tuple[dict[str, Any], int]] = []
    started: list[tuple[dict[str, Any], int]] = []
    for doc, line in _documents(text, loose, origin):
        for msg in _messages(doc):
            if msg.get("type") == "LatencyReport":
                reports.append((msg, line))
            elif msg.get("type") == "AgentStartedSpeaking" and "total_latency" in msg:
                started.append((msg, line))
    builders = [
        _dg_turn(msg, f"turn-{i + 1}", line, origin, absurd_ms) for i, (msg, line) in enumerate(reports or started)
    ]
    return TraceTable(origin, "deepgram-agent", DG_ANCHOR, DG_TOTAL, *_built(builders, loose))


def _dg_turn(msg: dict[str, Any], tid: str, line: int, origin: str, absurd_ms: float) -> TurnBuilder:
    b = TurnBuilder(tid, line, origin, absurd_ms)
    kind = "deepgram-latency-report" if msg.get("type") == "LatencyReport" else "deepgram-agent-started-speaking"
    b.rules = PLATFORM_RULES[kind].name

    def sec(key: str) -> float | None:
        return b.seconds(msg.get(key), line=line, fld=key, missing_ok=True) if key in msg else None

    b.set_stage("endpointing", sec("stt_latency"))
    text = next(
        (v for v in (sec("ttt_text_latency"), sec("ttt_latency"), sec("ttt_token_latency")) if v is not None), None
    )
    tool, thinking = sec("ttt_tool_latency"), sec("ttt_thinking_latency")
    if text is not None:
        _dg_llm(b, text, tool, thinking)
    b.set_stage("tts_ttfb", sec("tts_latency"))
    total = sec("total_latency")
    b.framework_total_ms = total
    if total is None:
        b.flag(line, "total_latency", msg.get("total_latency"), "turn has no total_latency")
    b.close_with_residual(total, line, "total_latency")
    return b


def _dg_llm(b: TurnBuilder, text: float, tool: float | None, thinking: float | None) -> None:
    """The LLM stage from the text's latency (ms): a tool call first (its latency below the text's) makes
    ``llm_ttft`` the call's and the rest ``tool``; thinking first splits ``llm_ttft`` into its parts."""
    if tool is not None and tool < text:
        b.set_stage("llm_ttft", tool)
        b.set_stage("tool", text - tool)
        b.note(
            "tool call before the answer: 'tool' is the tool and the LLM pass after it (Deepgram does not split them)"
        )
        return
    b.set_stage("llm_ttft", text)
    if thinking is not None and thinking < text:
        b.set_part("llm_ttft", "ttfb", thinking)
        b.set_part("llm_ttft", "thinking", text - thinking)


# --- Retell --------------------------------------------------------------------------------------

_RETELL_DETECT = re.compile(r'"(?:latency|e2e_latency)"\s*:\s*\{[^{}]{0,400}?"(?:e2e|p50)"')
RETELL_ANCHOR = "Retell: the user's end of speech as Retell's turn taking sees it (server side)"
RETELL_TOTAL = "e2e (user stops talking -> agent starts talking; without the network trip to the user)"
_COMPONENTS = ("e2e", "asr", "llm", "llm_websocket_network_rtt", "tts", "knowledge_base", "s2s")
_STATS = ("p50", "p90", "p95", "p99", "min", "max", "num")


def looks_like_retell(text: str) -> bool:
    """True for a Retell call carrying its ``latency`` statistics (v2) or ``e2e_latency`` (v1)."""
    return _RETELL_DETECT.search(text[:200_000]) is not None


def _retell_components(call: dict[str, Any]) -> dict[str, dict[str, Any]]:
    latency = call.get("latency")
    if isinstance(latency, dict):
        return {k: v for k, v in latency.items() if isinstance(v, dict)}
    return {name: call[f"{name}_latency"] for name in _COMPONENTS if isinstance(call.get(f"{name}_latency"), dict)}


def read_retell(text: str, origin: str = "<trace>", options: ReadOptions | None = None) -> TraceTable:
    """Retell calls' ``latency`` statistics: a :class:`Summary` per component and call, and turns (total
    only) when ``e2e.values`` lists the turns' values.

    :returns: a table whose ``summaries`` hold the statistics; ``turns`` only from ``e2e.values``.
    """
    absurd_ms = (options or ReadOptions()).absurd_ms
    loose: list[Anomaly] = []
    summaries: list[Summary] = []
    builders: list[TurnBuilder] = []
    for doc, line in _documents(text, loose, origin):
        for call in _calls(doc):
            components = _retell_components(call)
            if "e2e" not in components:
                continue
            call_id = str(call.get("call_id") or f"call-{line}")
            summaries.extend(_retell_summaries(components, origin, call_id))
            values = components["e2e"].get("values")
            if isinstance(values, list):
                builders.extend(
                    _retell_turn(value, f"{call_id}-{i + 1}", line, origin, absurd_ms) for i, value in enumerate(values)
                )
    return TraceTable(
        origin, "retell", RETELL_ANCHOR, RETELL_TOTAL, *_built(builders, loose), summaries=tuple(summaries)
    )


def _retell_summaries(components: dict[str, dict[str, Any]], origin: str, call_id: str) -> list[Summary]:
    """A call's statistics, a :class:`Summary` per component that gives any."""
    out = []
    for name, stats in components.items():
        given = {k: float(v) for k in _STATS if (v := _number(stats.get(k))) is not None}
        if given:
            out.append(Summary(origin, call_id, name, given))
    return out


def _retell_turn(value: Any, tid: str, line: int, origin: str, absurd_ms: float) -> TurnBuilder:
    """A turn from one of ``e2e.values``: its total only."""
    b = TurnBuilder(tid, line, origin, absurd_ms)
    b.rules = PLATFORM_RULES["retell-e2e-values"].name
    ms = b.ms(float(value), line=line, fld="latency.e2e.values") if _number(value) is not None else None
    if ms is None:
        b.flag(line, "latency.e2e.values", value, "not a number")
    b.framework_total_ms = ms
    b.close_with_residual(ms, line, "latency.e2e.values")
    b.unknown("endpointing", "llm_ttft", "tts_ttfb")
    return b
