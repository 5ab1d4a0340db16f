"""OpenTelemetry span exports (OTLP JSON) from LiveKit Agents or Pipecat, rebuilt into turns.

Input: an OTLP/JSON ``ExportTraceServiceRequest`` (``resourceSpans[].scopeSpans[].spans[]``, as the
collector's file exporter writes it, one document or one per line), or a plain list of spans with
attributes as an object. Attribute values are OTLP ``AnyValue`` objects (``doubleValue``,
``intValue`` as a string, ...); durations are in seconds.

One turn per turn span, with the attributes of the span and of its descendants (same trace,
``parentSpanId`` chain):

- **LiveKit** (``livekit-agents/livekit/agents/telemetry/trace_types.py``): ``agent_turn`` spans;
  ``lk.end_of_turn_delay`` -> endpointing, ``lk.transcription_delay`` -> asr, ``lk.response.ttft``
  (on the ``llm_node`` child in LiveKit's own tree) -> llm_ttft, ``lk.response.ttfb`` (``tts_node``)
  -> tts_ttfb, ``lk.e2e_latency`` (agent started speaking - user stopped speaking) -> the total;
  ``lk.speech_id`` is the turn id.
- **Pipecat** (``pipecat/utils/tracing/turn_trace_observer.py``): ``turn`` spans;
  ``turn.user_bot_latency_seconds`` -> the total, ``turn.user_turn_seconds`` -> endpointing,
  ``turn.text_aggregation_seconds`` -> first_phrase, and the ``metrics.ttfb`` of the ``stt``,
  ``llm`` and ``tts`` child spans -> asr, llm_ttft, tts_ttfb.

What the total has beyond the reported stages (the LLM's first sentence for LiveKit, the hop to
the output transport) is the ``other`` stage.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from voicebudget._errors import ScenarioError
from voicebudget.traces._options import ReadOptions
from voicebudget.traces._table import Anomaly, TraceTable, TurnBuilder

__all__ = ["looks_like_otel", "read_otel"]

ANCHOR_LIVEKIT = "LiveKit: the user's last speech frame as the VAD saw it (lk.e2e_latency and lk.end_of_turn_delay)"
ANCHOR_PIPECAT = "Pipecat: VAD stop minus stop_secs (UserBotLatencyObserver, turn.user_bot_latency_seconds)"
TOTAL_LIVEKIT = "lk.e2e_latency (agent started speaking - user stopped speaking), else the sum of the stages"
TOTAL_PIPECAT = "turn.user_bot_latency_seconds (bot started speaking - end of speech), else the sum of the stages"

_LK = {
    "endpointing": "lk.end_of_turn_delay",
    "asr": "lk.transcription_delay",
    "llm_ttft": "lk.response.ttft",
    "tts_ttfb": "lk.response.ttfb",
}
_PC = {
    "endpointing": "turn.user_turn_seconds",
    "first_phrase": "turn.text_aggregation_seconds",
    "asr": "stt:metrics.ttfb",
    "llm_ttft": "llm:metrics.ttfb",
    "tts_ttfb": "tts:metrics.ttfb",
}
_OPTIONAL = {"asr", "first_phrase"}


def looks_like_otel(text: str) -> bool:
    """True for an OTLP JSON export (``resourceSpans``) or a JSON list of spans."""
    head = text[:200_000]
    return bool(re.search(r'"(resourceSpans|resource_spans|scopeSpans|spanId|span_id)"', head))


@dataclass
class _Span:
    name: str
    trace: str
    id: str
    parent: str
    start_ns: int
    attrs: dict[str, Any]
    line: int
    offset: int
    bad: list[str]


def _value(v: Any) -> Any:
    """An OTLP AnyValue (or a plain JSON value) as a Python value; numeric strings become floats."""
    if isinstance(v, dict):
        for key in ("doubleValue", "intValue", "boolValue", "stringValue", "double_value", "int_value",
                    "bool_value", "string_value"):
            if key in v:
                return _value(v[key]) if key.startswith(("int", "double")) else v[key]
        if "arrayValue" in v:
            return [_value(x) for x in v["arrayValue"].get("values", [])]
        return None
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return v
    return v


def _attrs(raw: Any) -> tuple[dict[str, Any], list[str]]:
    """Attributes as a dict, and a description of each malformed entry (no key, no value)."""
    if isinstance(raw, dict):
        return {str(k): _value(v) for k, v in raw.items()}, []
    out: dict[str, Any] = {}
    bad: list[str] = []
    for a in raw if isinstance(raw, list) else []:
        if isinstance(a, dict) and isinstance(a.get("key"), str) and isinstance(a.get("value"), dict):
            out[a["key"]] = _value(a["value"])
        else:
            bad.append(json.dumps(a)[:80])
    return out, bad


def _spans_of(doc: Any) -> Iterator[dict[str, Any]]:
    if isinstance(doc, list):
        for item in doc:
            yield from _spans_of(item)
        return
    if not isinstance(doc, dict):
        return
    if "resourceSpans" in doc or "resource_spans" in doc:
        for rs in doc.get("resourceSpans") or doc.get("resource_spans") or []:
            for ss in rs.get("scopeSpans") or rs.get("scope_spans") or rs.get("instrumentationLibrarySpans") or []:
                yield from (s for s in ss.get("spans", []) if isinstance(s, dict))
    elif "spans" in doc:
        yield from _spans_of(doc["spans"])
    elif "name" in doc and ("spanId" in doc or "span_id" in doc or "context" in doc):
        yield doc


class _Locator:
    """Line numbers of spans and attributes in the source text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        for m in re.finditer("\n", text):
            self.starts.append(m.end())
        self.cursor = 0

    def line_of(self, offset: int) -> int:
        lo, hi = 0, len(self.starts)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if self.starts[mid] <= offset else (lo, mid)
        return lo + 1

    def find_span(self, span_id: str, base: int) -> int:
        pat = re.compile(r'"(?:spanId|span_id)"\s*:\s*"' + re.escape(span_id) + '"')
        m = pat.search(self.text, max(self.cursor, base))
        if m is None:
            return base
        self.cursor = m.end()
        return m.start()

    def attr_line(self, span: _Span, key: str) -> int:
        idx = self.text.find(f'"{key.split(":")[-1]}"', span.offset)
        return self.line_of(idx) if idx >= 0 else span.line


def _span(raw: dict[str, Any], loc: _Locator, base: int) -> _Span:
    context = raw.get("context")
    ctx: dict[str, Any] = context if isinstance(context, dict) else {}
    sid = str(raw.get("spanId") or raw.get("span_id") or ctx.get("span_id") or "")
    offset = loc.find_span(sid, base) if sid else base
    start = raw.get("startTimeUnixNano") or raw.get("start_time_unix_nano") or 0
    try:
        start_ns = int(start)
    except (TypeError, ValueError):
        start_ns = 0
    attrs, bad = _attrs(raw.get("attributes"))
    return _Span(
        name=str(raw.get("name", "")),
        trace=str(raw.get("traceId") or raw.get("trace_id") or ctx.get("trace_id") or ""),
        id=sid,
        parent=str(raw.get("parentSpanId") or raw.get("parent_span_id") or raw.get("parent_id") or ""),
        start_ns=start_ns,
        attrs=attrs,
        line=loc.line_of(offset),
        offset=offset,
        bad=bad,
    )


def _documents(text: str, loc: _Locator, anomalies: list[Anomaly], origin: str) -> list[tuple[Any, int]]:
    """The JSON documents in ``text`` with their offsets: the whole text, else one per line (OTLP
    JSON lines), else the span objects that still parse in a damaged document."""
    try:
        return [(json.loads(text), 0)]
    except json.JSONDecodeError as whole:
        docs: list[tuple[Any, int]] = []
        bad: list[Anomaly] = []
        for i, raw in enumerate(text.splitlines()):
            if not raw.strip():
                continue
            try:
                docs.append((json.loads(raw), loc.starts[i]))
            except json.JSONDecodeError as exc:
                snippet = raw.strip()[:120]
                bad.append(Anomaly(i + 1, "", snippet, f"unparseable JSON (line cut short?): {exc.msg}", origin))
        if any(True for doc, _ in docs for _span in _spans_of(doc)):
            anomalies.extend(bad)
            return docs
        n_before = len(anomalies)
        salvaged = _salvage(text, loc, anomalies, origin)
        if not salvaged or len(anomalies) == n_before:
            anomalies.append(Anomaly(whole.lineno, "", "", f"unparseable JSON (file cut short?): {whole.msg}", origin))
        return salvaged


_SPAN_START = re.compile(r'\{[^{}\[\]]*?"(?:spanId|span_id)"\s*:')


def _salvage(text: str, loc: _Locator, anomalies: list[Anomaly], origin: str) -> list[tuple[Any, int]]:
    """Span objects that still decode in a damaged document; each one that does not is an anomaly
    on the line it starts (the turn it carried is lost)."""
    decoder = json.JSONDecoder()
    found: list[tuple[Any, int]] = []
    pos = 0
    while (m := _SPAN_START.search(text, pos)) is not None:
        try:
            obj, end = decoder.raw_decode(text, m.start())
        except json.JSONDecodeError as exc:
            line = loc.line_of(exc.pos)
            anomalies.append(Anomaly(line, "", text[m.start():m.start() + 80].replace("\n", " "),
                                     f"span cut short or broken ({exc.msg} on line {line}); span skipped", origin))
            pos = m.end()
            continue
        if isinstance(obj, dict):
            found.append((obj, m.start()))
        pos = end
    return found


class _Reader:
    def __init__(self, text: str, origin: str, absurd_ms: float) -> None:
        self.origin, self.absurd_ms = origin, absurd_ms
        self.loc = _Locator(text)
        self.loose: list[Anomaly] = []
        self.spans = [_span(raw, self.loc, base) for doc, base in _documents(text, self.loc, self.loose, origin)
                      for raw in _spans_of(doc)]
        self.children: dict[tuple[str, str], list[_Span]] = {}
        for s in self.spans:
            self.children.setdefault((s.trace, s.parent), []).append(s)

    def flavour(self) -> str:
        if any(s.name == "agent_turn" or any(k.startswith("lk.") for k in s.attrs) for s in self.spans):
            return "livekit"
        return "pipecat"

    def subtree(self, turn: _Span) -> list[_Span]:
        """The turn span and its descendants, breadth first, siblings by start time."""
        out = [turn]
        queue = sorted(self.children.get((turn.trace, turn.id), []), key=lambda s: s.start_ns)
        while queue:
            span = queue.pop(0)
            out.append(span)
            queue.extend(sorted(self.children.get((span.trace, span.id), []), key=lambda s: s.start_ns))
        return out

    def attributes(self, turn: _Span) -> dict[str, tuple[Any, _Span]]:
        """The turn span's attributes, then its descendants' (children of Pipecat service spans as
        ``<span name>:<key>``), first value wins."""
        out = {k: (v, turn) for k, v in turn.attrs.items()}
        for span in self.subtree(turn)[1:]:
            for k, v in span.attrs.items():
                out.setdefault(k, (v, span))
                out.setdefault(f"{span.name}:{k}", (v, span))
        return out

    def table(self) -> TraceTable:
        lk = self.flavour() == "livekit"
        names, total_key = (_LK, "lk.e2e_latency") if lk else (_PC, "turn.user_bot_latency_seconds")
        turn_spans = [s for s in self.spans if s.name == ("agent_turn" if lk else "turn") or total_key in s.attrs]
        builders: dict[str, TurnBuilder] = {}
        for span in sorted(turn_spans, key=lambda s: (s.start_ns, s.line)):
            attrs = self.attributes(span)
            tid = str(attrs["lk.speech_id"][0]) if lk and "lk.speech_id" in attrs else span.id or f"line-{span.line}"
            if tid in builders:
                builders[tid].flag(span.line, "lk.speech_id" if lk else "spanId", tid,
                                   f"duplicate turn id (first on line {builders[tid].line})")
                continue
            builders[tid] = self.turn(tid, span, attrs, names, total_key)
        turns, anomalies = [], list(self.loose)
        for index, b in enumerate(builders.values()):
            turns.append(b.build(index))
            anomalies.extend(b.anomalies)
        anomalies.sort(key=lambda a: a.line)
        fmt, anchor, total = ("otel-livekit", ANCHOR_LIVEKIT, TOTAL_LIVEKIT) if lk else (
            "otel-pipecat", ANCHOR_PIPECAT, TOTAL_PIPECAT)
        return TraceTable(self.origin, fmt, anchor, total, tuple(turns), tuple(anomalies))

    def turn(self, tid: str, span: _Span, attrs: dict[str, tuple[Any, _Span]], names: dict[str, str],
             total_key: str) -> TurnBuilder:
        b = TurnBuilder(tid, span.line, self.origin, self.absurd_ms)
        for member in self.subtree(span):
            for entry in member.bad:
                b.flag(member.line, "attributes", entry, "malformed attribute (no key or no value)")
        for stage, key in names.items():
            if key in attrs:
                value, owner = attrs[key]
                b.set_stage(stage, b.seconds(value, line=self.loc.attr_line(owner, key), fld=key))
        optional = _OPTIONAL if total_key.startswith("lk.") else _OPTIONAL | {"endpointing"}
        needed = {k: (v, v) for k, v in names.items() if k not in optional}
        b.require(needed)
        total = None
        if total_key in attrs:
            value, owner = attrs[total_key]
            line = self.loc.attr_line(owner, total_key)
            total = b.seconds(value, line=line, fld=total_key)
        else:
            b.flag(span.line, total_key, None, f"turn has no {total_key} (the source's own total)")
        b.close_with_residual(total, span.line, total_key, required=tuple(needed))
        return b


def read_otel(text: str, origin: str = "<trace>", options: ReadOptions | None = None) -> TraceTable:
    """Rebuild per-turn stages from an OTLP JSON span export (LiveKit ``lk.*`` or Pipecat ``turn.*``).

    :param text: the export's content: one JSON document, or one per line.
    :param origin: the file name for anomalies and reports.
    :param options: the readers' options (here ``absurd_ms``: a stage above it is flagged).
    :returns: a :class:`TraceTable` in ms, one turn per ``agent_turn`` (LiveKit) or ``turn``
        (Pipecat) span, ordered by start time. Flagged: broken lines, negative/absurd/non-numeric
        values, turns without endpointing (LiveKit), TTFT or TTS TTFB, totals below the sum of their
        stages, repeated turn ids.
    :raises ScenarioError: no span could be read at all.
    """
    absurd_ms = (options or ReadOptions()).absurd_ms
    reader = _Reader(text, origin, absurd_ms)
    if not reader.spans:
        detail = "; ".join(f"line {a.line}: {a.reason}" for a in reader.loose[:3]) or "no spans found"
        raise ScenarioError(f"not an OTLP JSON span export ({detail})", origin=origin)
    return reader.table()
