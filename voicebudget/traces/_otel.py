"""OpenTelemetry span exports (OTLP JSON) from LiveKit Agents or Pipecat, rebuilt into turns.

Input: an OTLP/JSON ``ExportTraceServiceRequest`` (``resourceSpans[].scopeSpans[].spans[]``, as the
collector's file exporter writes it, one document or one per line), or a plain list of spans with
attributes as an object. Attribute values are OTLP ``AnyValue`` objects (``doubleValue``,
``intValue`` as a string, ...); durations are in seconds. Every node's type is checked: a node that
is not what OTLP allows is an anomaly naming its path (``resourceSpans[0].scopeSpans``), never a crash.

One turn per turn span, with the attributes of the span and of its descendants (same trace,
``parentSpanId`` chain; a cycle in that chain, a span that is its own parent or a span without a
string id is flagged, and the walk ends):

- **LiveKit** (rules with versions and sources in :mod:`._livekit_rules`): ``agent_turn`` spans
  (``assistant_turn``/``realtime_assistant_turn`` in 1.2); ``lk.end_of_turn_delay`` (1.2:
  ``lk.end_of_utterance_delay``) -> endpointing and ``lk.transcription_delay`` -> asr, read from the
  ``user_turn`` span that precedes the turn (LiveKit makes it a *sibling* of ``agent_turn`` under the
  session root; 1.8 also copies them onto ``agent_turn``), ``lk.response.ttft`` (``llm_node`` child;
  1.2-1.4: ``ttft`` inside the JSON of ``lk.llm_metrics``) -> llm_ttft, ``lk.response.ttfb``
  (``tts_node``; 1.2-1.4: ``lk.tts_metrics``) -> tts_ttfb, ``ttft`` of ``lk.realtime_model_metrics``
  (realtime models) -> llm_ttft, ``lk.e2e_latency`` (agent started speaking - user stopped speaking,
  1.5+) -> the total; ``lk.speech_id`` is the turn id.
- **Pipecat** (``pipecat/utils/tracing/turn_trace_observer.py``): ``turn`` spans;
  ``turn.user_bot_latency_seconds`` -> the total, ``turn.user_turn_seconds`` -> endpointing,
  ``turn.text_aggregation_seconds`` -> first_phrase, and the ``metrics.ttfb`` of the ``stt``,
  ``llm`` and ``tts`` child spans -> asr, llm_ttft, tts_ttfb.

What the total has beyond the reported stages (the LLM's first sentence for LiveKit, the hop to
the output transport) is the ``other`` stage; a total below the sum of its stages is flagged (the
source's own figure disagrees with the rebuilt one). A TTFT or TTFB repeated to the last digit on
every turn is flagged as stale.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable
from typing import Any

from voicebudget._errors import ScenarioError
from voicebudget.traces._jsonsafe import loads
from voicebudget.traces._livekit_rules import flag_stale_values
from voicebudget.traces._options import ReadOptions
from voicebudget.traces._otel_spans import _LK, _PC, _Bad, _collect, _documents, _Locator, _Span
from voicebudget.traces._pipecat_rules import RULE_SETS
from voicebudget.traces._table import ON_PATH, Anomaly, TraceTable, TraceTurn, TurnBuilder

__all__ = ["looks_like_otel", "read_otel", "read_otel_lines"]

ANCHOR_LIVEKIT = "LiveKit: the user's last speech frame as the VAD saw it (lk.e2e_latency and lk.end_of_turn_delay)"
ANCHOR_PIPECAT = "Pipecat: VAD stop minus stop_secs (UserBotLatencyObserver, turn.user_bot_latency_seconds)"
TOTAL_LIVEKIT = "lk.e2e_latency (agent started speaking - user stopped speaking), else the sum of the stages"
TOTAL_PIPECAT = "turn.user_bot_latency_seconds (bot started speaking - end of speech), else the sum of the stages"

_OPTIONAL = {"asr", "first_phrase"}
_LK_TURNS = ("agent_turn", "assistant_turn", "realtime_assistant_turn")
_LK_USER_TURN = "user_turn"
_STALE = (
    "lk.response.ttft",
    "lk.response.ttfb",
    "lk.llm_metrics.ttft",
    "lk.tts_metrics.ttfb",
    "llm:metrics.ttfb",
    "tts:metrics.ttfb",
)


def looks_like_otel(text: str) -> bool:
    """True for an OTLP JSON export (``resourceSpans``) or a JSON list of spans."""
    head = text[:200_000]
    return bool(re.search(r'"(resourceSpans|resource_spans|scopeSpans|spanId|span_id)"', head))


class _Reader:
    """The turns of a set of spans. ``loc`` finds an attribute's line in the whole text; without it (spans
    streamed from JSON lines) an attribute is on its span's line."""

    def __init__(
        self, spans: list[_Span], loose: list[Anomaly], origin: str, absurd_ms: float, loc: _Locator | None = None
    ) -> None:
        self.origin, self.absurd_ms = origin, absurd_ms
        self.loc = loc
        self.loose = loose
        self.spans = spans
        self.children: dict[tuple[str, str], list[_Span]] = {}
        for s in self.spans:
            if s.parent:
                self.children.setdefault((s.trace, s.parent), []).append(s)
        for kids in self.children.values():
            kids.sort(key=lambda s: s.start_ns)

    @classmethod
    def of_text(cls, text: str, origin: str, absurd_ms: float) -> _Reader:
        """Spans of a whole export: one document, one per line, or what a damaged one still holds."""
        loc = _Locator(text)
        loose: list[Anomaly] = []
        spans: list[_Span] = []
        for doc, base in _documents(text, loc, loose, origin):
            _collect(doc, loc, base, spans, loose, origin)
        return cls(spans, loose, origin, absurd_ms, loc)

    def attr_line(self, span: _Span, key: str) -> int:
        return self.loc.attr_line(span, key) if self.loc is not None else span.line

    def flavour(self) -> str:
        if any(s.name in _LK_TURNS or s.livekit for s in self.spans):
            return "livekit"
        return "pipecat"

    def subtree(
        self, turn: _Span, cycles: list[_Span], turns: frozenset[int] = frozenset(), inner: list[_Span] | None = None
    ) -> list[_Span]:
        """The turn span and its descendants, breadth first, siblings by start time. A span met twice
        (a cycle in the parent chain, a span that is its own parent) is put in ``cycles`` and not
        walked again; spans without an id have no children. A descendant that is itself a turn span
        (``id()`` in ``turns``) is a turn of its own: neither it nor what is under it is walked (it goes
        in ``inner``), so turns nested as a chain cost linear time, not quadratic."""
        out = [turn]
        seen = {id(turn)}
        queue = list(self.children.get((turn.trace, turn.id), [])) if turn.id else []
        head = 0
        while head < len(queue):
            span = queue[head]
            head += 1
            if id(span) in seen:
                cycles.append(span)
                continue
            if id(span) in turns:
                if inner is not None:
                    inner.append(span)
                continue
            seen.add(id(span))
            out.append(span)
            if span.id:
                queue.extend(self.children.get((span.trace, span.id), []))
        return out

    def forget(self, members: list[_Span]) -> None:
        """Drop the children index of a turn's spans once they are walked: a span has one parent, so no
        other turn walks them (a user turn joins one turn, a turn span under another is a turn of its own,
        not walked from it)."""
        for span in members:
            if span.id:
                self.children.pop((span.trace, span.id), None)

    def attributes(self, spans: list[_Span]) -> dict[str, tuple[Any, _Span]]:
        """The first span's attributes, then the others' (children of Pipecat service spans also as
        ``<span name>:<key>``), first value wins."""
        out = {k: (v, spans[0]) for k, v in spans[0].attrs.items()}
        for span in spans[1:]:
            for k, v in span.attrs.items():
                out.setdefault(k, (v, span))
                out.setdefault(f"{span.name}:{k}", (v, span))
        return out

    def user_turns(self, turn_spans: list[_Span]) -> dict[int, _Span]:
        """LiveKit: the ``user_turn`` span each turn answers (by ``id()`` of the turn span): the latest
        one that started before the turn and after the previous turn of its trace (a user turn the
        user resumed is superseded by the next one)."""
        by_trace = _user_turns_by_trace(self.spans)
        starts = {k: [u.start_ns for u in v] for k, v in by_trace.items()}
        joined: dict[int, _Span] = {}
        previous: dict[str, int] = {}
        for span in sorted(turn_spans, key=lambda s: s.start_ns):
            key = span.trace if span.trace in by_trace else ""
            if key not in by_trace:
                continue
            i = bisect.bisect_right(starts[key], span.start_ns) - 1
            if i >= 0 and by_trace[key][i].start_ns > previous.get(key, -1):
                joined[id(span)] = by_trace[key][i]
            previous[key] = span.start_ns
        return joined

    def table(self) -> TraceTable:
        lk = self.flavour() == "livekit"
        names, total_key = (_LK, "lk.e2e_latency") if lk else (_PC, "turn.user_bot_latency_seconds")
        built = self.builders(lk, names, total_key)
        # the spans are read: drop them, and each builder once its row is built (peak memory)
        self.spans, self.children = [], {}
        todo = built[::-1]
        built.clear()
        turns: list[TraceTurn] = []
        anomalies = list(self.loose)
        while todo:
            b = todo.pop()
            turns.append(b.build(len(turns)))
            anomalies.extend(b.anomalies)
        anomalies.sort(key=lambda a: a.line)
        fmt, anchor, total = (
            ("otel-livekit", ANCHOR_LIVEKIT, TOTAL_LIVEKIT) if lk else ("otel-pipecat", ANCHOR_PIPECAT, TOTAL_PIPECAT)
        )
        return TraceTable(self.origin, fmt, anchor, total, tuple(turns), tuple(anomalies))

    def builders(self, lk: bool, names: dict[str, tuple[str, ...]], total_key: str) -> list[TurnBuilder]:
        """One turn per turn span (a repeated turn id flagged on the first), its members' attributes read;
        cycles in the span tree and stale values flagged."""
        turn_spans = _turn_spans(self.spans, lk, total_key)
        joined = self.user_turns(turn_spans) if lk else {}
        builders: dict[str, TurnBuilder] = {}
        stale: dict[str, list[tuple[TurnBuilder, int, str, Any]]] = {k: [] for k in _STALE}
        nested = frozenset(id(s) for s in turn_spans)
        inner: dict[int, list[_Span]] = {}  # turn span -> the turn spans under it (each is read on its own)
        by_span: dict[int, TurnBuilder] = {}
        # from here on a span is reached from the turn spans only (the children index): each turn's spans
        # are dropped once its turn is read, so the spans and the turns are not all held at once (peak memory)
        self.spans = []
        for span in sorted(turn_spans, key=lambda s: (s.start_ns, s.line)):
            cycles: list[_Span] = []
            under: list[_Span] = []
            members = self.subtree(span, cycles, nested, under)
            if id(span) in joined:
                members += self.subtree(joined[id(span)], cycles, nested, under)
            if under:
                inner[id(span)] = under
            self.forget(members)
            attrs = self.attributes(members)
            tid = _turn_id(attrs, span, lk)
            if tid in builders:
                _flag_duplicate(builders[tid], span, tid, lk)
                continue
            b = self.turn(tid, span, members, attrs, names, total_key)
            _flag_cycle(b, cycles)
            self.keep_stale(stale, b, attrs)
            builders[tid] = by_span[id(span)] = b
        _flag_turn_cycles(_turn_cycles(turn_spans, inner), by_span)  # turns that are each other's ancestors
        for found in stale.values():
            flag_stale_values(found)
        return list(builders.values())

    def keep_stale(
        self,
        stale: dict[str, list[tuple[TurnBuilder, int, str, Any]]],
        b: TurnBuilder,
        attrs: dict[str, tuple[Any, _Span]],
    ) -> None:
        """The turn's values of the keys checked for a value repeated on every turn."""
        for key in _STALE:
            if key in attrs and not isinstance(attrs[key][0], _Bad):
                stale[key].append((b, self.attr_line(attrs[key][1], key), key, attrs[key][0]))

    @staticmethod
    def rules(attrs: dict[str, tuple[Any, _Span]], span: _Span) -> str:
        if "lk.e2e_latency" in attrs or "lk.response.ttft" in attrs or "lk.response.ttfb" in attrs:
            return "livekit-otel-1.5+"
        if "lk.end_of_utterance_delay" in attrs or span.name != "agent_turn":
            return "livekit-otel-1.2"
        return "livekit-otel-1.3"

    def livekit_passes(self, b: TurnBuilder, turn: _Span, members: list[_Span]) -> None:
        """LiveKit 1.5+: a tool turn's ``llm_node`` spans (one per pass; a pass that called tools lists them
        in ``lk.pii.response.function_calls``) and ``function_tool`` spans under ``agent_turn``: the LLM
        writing the calls (``llm_tool_call``, to the round's first ``function_tool`` span), the tools until
        the next pass (``tool``, each round named after its slowest function) and the reply pass's TTFT
        (``llm_2_ttft``); each counted from the turn's start on (a preemptive pass that ran before the
        commit overlaps the endpointing wait)."""
        kids = [m for m in members if m is not turn]
        commit = _commit_ns(kids, turn.start_ns)
        passes, tools = _llm_nodes(kids), _function_tools(kids)
        path = _NsPath(commit)
        if passes and "llm_ttft" in b.stages_ms and passes[0].start_ns < commit - 5_000_000:
            first = passes[0]
            b.stages_ms["llm_ttft"] = round(path.after(first.start_ns, first.start_ns + _ttft_ns(first)), 3)
            b.note(
                "preemptive generation: the first LLM pass started before the turn commit; only its time after it "
                "is counted"
            )
        elif passes:
            path.cursor = passes[0].start_ns + _ttft_ns(passes[0])
        if len(passes) > 1:
            _livekit_tool_rounds(b, passes, tools, path)

    def pipecat_passes(self, b: TurnBuilder, members: list[_Span], attrs: dict[str, tuple[Any, _Span]]) -> set[str]:
        """Pipecat: a tool turn's LLM passes from its ``llm`` spans' times (each span runs from the
        request to the end of its stream, the call dispatched at its end), and the stages the spans do
        not time (Pipecat 1.14 sets no ``metrics.ttfb`` on its ``tts`` spans and, in releases, no
        ``turn.user_turn_seconds``): marked unknown, their time left in ``other``. Returns the stages
        that are then not required."""
        passes = _llm_spans(members)
        if len(passes) > 1 and _all_timed(passes):
            _pipecat_tool_stages(b, passes)
        no_tts = _no_tts(members)
        unknown = {s for s in ("endpointing", "llm_ttft", "tts_ttfb") if s not in b.stages_ms} - no_tts
        if unknown and "turn.user_bot_latency_seconds" in attrs:
            b.unknown(*sorted(unknown, key=ON_PATH.index))
            b.rules = RULE_SETS["pipecat-otel-1.14"].name
        return (unknown if "turn.user_bot_latency_seconds" in attrs else set()) | no_tts

    def turn(
        self,
        tid: str,
        span: _Span,
        members: list[_Span],
        attrs: dict[str, tuple[Any, _Span]],
        names: dict[str, tuple[str, ...]],
        total_key: str,
    ) -> TurnBuilder:
        lk = total_key.startswith("lk.")
        b = TurnBuilder(tid, span.line, self.origin, self.absurd_ms, reader="otel")
        b.rules = self.rules(attrs, span) if lk else RULE_SETS["pipecat-otel"].name
        for member in members:
            for where, what in member.bad:
                b.flag(member.line, where, None, what)
        for stage, keys in names.items():
            self.stage(b, stage, keys, attrs)
        optional = _optional(lk, attrs)
        if not lk:
            optional |= self.pipecat_passes(b, members, attrs)
        else:
            self.livekit_passes(b, span, members)
        needed = {k: (v[0], v[0]) for k, v in names.items() if k not in optional}
        b.require(needed)
        total = self.total(b, span, attrs, total_key)
        b.close_with_residual(total, span.line, total_key, required=tuple(needed))
        return b

    def stage(self, b: TurnBuilder, stage: str, keys: tuple[str, ...], attrs: dict[str, tuple[Any, _Span]]) -> None:
        """A stage from the first of its ``keys`` the turn has (a malformed value, or a TTFT/TTFB of -1:
        flagged)."""
        key = next((k for k in keys if k in attrs), None)
        if key is None:
            return
        value, owner = attrs[key]
        line = self.attr_line(owner, key)
        if isinstance(value, _Bad):
            b.flag(line, value.path, None, f"not a number: {value.what}")
        elif value == -1 and stage in ("llm_ttft", "tts_ttfb") and not isinstance(value, bool):
            b.flag(line, key, value, f"no first {'token' if stage == 'llm_ttft' else 'audio'} ({key} = -1)")
        else:
            b.set_stage(stage, b.seconds(value, line=line, fld=key))

    def total(self, b: TurnBuilder, span: _Span, attrs: dict[str, tuple[Any, _Span]], total_key: str) -> float | None:
        """The source's own total (ms); a turn without it is flagged, except LiveKit 1.2-1.3's (none logged)."""
        if total_key not in attrs:
            if not (total_key.startswith("lk.") and b.rules in ("livekit-otel-1.2", "livekit-otel-1.3")):
                b.flag(span.line, total_key, None, f"turn has no {total_key} (the source's own total)")
            return None
        value, owner = attrs[total_key]
        line = self.attr_line(owner, total_key)
        if isinstance(value, _Bad):
            b.flag(line, value.path, None, f"not a number: {value.what}")
            return None
        total = b.seconds(value, line=line, fld=total_key)
        b.framework_total_ms = total
        return total


def _turn_spans(spans: list[_Span], lk: bool, total_key: str) -> list[_Span]:
    """The spans of turns: LiveKit's turn spans or Pipecat's ``turn`` spans, and any span with the total."""
    if lk:
        return [s for s in spans if s.name in _LK_TURNS or total_key in s.attrs]
    return [s for s in spans if s.name == "turn" or total_key in s.attrs]


def _commit_ns(kids: list[_Span], start_ns: int) -> int:
    """The turn's commit: its user turn's end-of-utterance wait ends (a preemptive ``agent_turn`` starts
    before it), else the turn span's start."""
    return max((m.end_ns for m in kids if m.name == "eou_wait" and m.end_ns > 0), default=start_ns)


def _llm_nodes(kids: list[_Span]) -> list[_Span]:
    """LiveKit's ``llm_node`` spans with their times, by start."""
    return sorted((m for m in kids if m.name == "llm_node" and 0 < m.start_ns <= m.end_ns), key=lambda m: m.start_ns)


def _function_tools(kids: list[_Span]) -> list[_Span]:
    return sorted((m for m in kids if m.name == "function_tool"), key=lambda m: m.start_ns)


def _llm_spans(members: list[_Span]) -> list[_Span]:
    """Pipecat's ``llm`` spans that last, by start."""
    return sorted((m for m in members if m.name == "llm" and m.end_ns > m.start_ns), key=lambda m: m.start_ns)


def _all_timed(passes: list[_Span]) -> bool:
    """Every pass has its ``metrics.ttfb`` (a number)."""
    return all(isinstance(p.attrs.get("metrics.ttfb"), int | float) for p in passes)


def _no_tts(members: list[_Span]) -> set[str]:
    """``{"tts_ttfb"}`` for a turn without a ``tts`` span (a speech-to-speech model), else nothing."""
    return set() if any(m.name == "tts" for m in members) else {"tts_ttfb"}


def _turn_id(attrs: dict[str, tuple[Any, _Span]], span: _Span, lk: bool) -> str:
    """A turn's id: LiveKit's ``lk.speech_id``, else the span's id, else its line."""
    speech = attrs.get("lk.speech_id", (None, span))[0] if lk else None
    return speech if isinstance(speech, str) and speech else span.id or f"line-{span.line}"


def _flag_duplicate(first: TurnBuilder, span: _Span, tid: str, lk: bool) -> None:
    first.flag(span.line, "lk.speech_id" if lk else "spanId", tid, f"duplicate turn id (first on line {first.line})")


def _flag_cycle(b: TurnBuilder, cycles: list[_Span]) -> None:
    for c in cycles[:1]:
        b.flag(
            c.line,
            "parentSpanId",
            c.id or None,
            "span tree has a cycle (a span is its own ancestor); its spans are read once",
        )


def _flag_turn_cycles(on_cycle: list[_Span], by_span: dict[int, TurnBuilder]) -> None:
    """Turn spans that are each other's ancestors, each flagged once (unless its own tree had a cycle)."""
    for span in on_cycle:
        if id(span) in by_span and not any(a.field == "parentSpanId" for a in by_span[id(span)].anomalies):
            by_span[id(span)].flag(
                span.line, "parentSpanId", span.id or None, "span tree has a cycle (a turn is its own ancestor)"
            )


def _user_turns_by_trace(spans: list[_Span]) -> dict[str, list[_Span]]:
    """LiveKit's ``user_turn`` spans by trace id, by start time; all of them also under ``""``."""
    by_trace: dict[str, list[_Span]] = {}
    for u in sorted((s for s in spans if s.name == _LK_USER_TURN), key=lambda s: s.start_ns):
        by_trace.setdefault(u.trace, []).append(u)
        if u.trace:
            by_trace.setdefault("", []).append(u)
    return by_trace


def _optional(lk: bool, attrs: dict[str, tuple[Any, _Span]]) -> set[str]:
    """The stages a turn may lack: ASR and first phrase; Pipecat's endpointing; a LiveKit realtime model's
    (no TTS) TTS and endpointing."""
    if not lk:
        return _OPTIONAL | {"endpointing"}
    realtime = "lk.realtime_model_metrics.ttft" in attrs and "lk.response.ttfb" not in attrs
    return _OPTIONAL | ({"tts_ttfb", "endpointing"} if realtime else set())


_MAX_TTFT_S = 3.6e6
"""A TTFT beyond 1,000 hours (``inf``, a 310-digit integer) puts no time on a turn's path (the value is
flagged where it is read); ``int(inf * 1e9)`` raised ``OverflowError``."""


def _ttft_ns(m: _Span) -> int:
    v = m.attrs.get("lk.response.ttft")
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v < _MAX_TTFT_S:
        return 0  # not a positive finite TTFT (flagged on the turn): no time on the path
    return int(v * 1e9)


class _NsPath:
    """Time on the turn's path from a moment (ns) on: each segment counts only past the ones before it."""

    def __init__(self, cursor: int) -> None:
        self.cursor = cursor

    def after(self, start: int, end: int) -> float:
        """The part of ``start..end`` (ns) past the cursor, in ms; the cursor moves to ``end``."""
        on_path = max(0, end - max(start, self.cursor))
        self.cursor = max(self.cursor, end)
        return on_path / 1e6


def _livekit_tool_rounds(b: TurnBuilder, passes: list[_Span], tools: list[_Span], path: _NsPath) -> None:
    """A LiveKit tool turn's ``llm_tool_call``, ``tool`` (parts by function) and ``llm_2_ttft`` stages."""
    call = tool = 0.0
    names: dict[str, float] = {}
    for i, (cur, nxt) in enumerate(zip(passes, passes[1:], strict=False)):
        ran = [t for t in tools if cur.start_ns <= t.start_ns < nxt.start_ns]
        # LiveKit runs a tool as soon as its call is parsed, while the LLM node is still closing:
        # the round's tools start at the first function_tool span, or at the pass's end
        called = min((t.start_ns for t in ran if t.start_ns > 0), default=cur.end_ns)
        boundary = min(cur.end_ns, called)
        call += path.after(cur.start_ns + (_ttft_ns(cur) if i == 0 else 0), boundary)
        gap = path.after(boundary, nxt.start_ns)
        tool += gap
        key = _slowest_name(ran)
        names[key] = names.get(key, 0.0) + gap
    last = passes[-1]
    b.set_stage("llm_tool_call", b.ms(round(call, 3), line=passes[0].line, fld="llm_node"))
    b.set_stage("tool", b.ms(round(tool, 3), line=last.line, fld="llm_node"))
    for name, ms in names.items():
        b.set_part("tool", name, round(ms, 3))
    b.set_stage("llm_2_ttft", b.ms(round(path.after(last.start_ns, last.start_ns + _ttft_ns(last)), 3),
                                   line=last.line, fld="lk.response.ttft"))  # fmt: skip


def _slowest_name(ran: list[_Span]) -> str:
    """A tool round's name: its slowest function's (the one that ended last)."""
    slowest = max(ran, key=lambda t: t.end_ns, default=None)
    name = slowest.attrs.get("lk.function_tool.name") if slowest is not None else None
    return name if isinstance(name, str) and name else "tool"


def _pipecat_tool_stages(b: TurnBuilder, passes: list[_Span]) -> None:
    """A Pipecat tool turn's ``llm_tool_call``, ``tool`` and ``llm_2_ttft`` from its ``llm`` spans."""
    first, last = passes[0], passes[-1]
    ttfb_ns = float(first.attrs["metrics.ttfb"]) * 1e9
    call_ns = sum(p.end_ns - p.start_ns for p in passes[:-1]) - ttfb_ns
    call_ns += sum(float(p.attrs["metrics.ttfb"]) * 1e9 for p in passes[1:-1])
    tool_ns = sum(n.start_ns - p.end_ns for p, n in zip(passes, passes[1:], strict=False))
    b.set_stage("llm_tool_call", b.ms(round(call_ns / 1e6, 3), line=first.line, fld="llm span"))
    b.set_stage("tool", b.ms(round(tool_ns / 1e6, 3), line=last.line, fld="llm span"))
    b.set_stage("llm_2_ttft", b.seconds(last.attrs["metrics.ttfb"], line=last.line, fld="metrics.ttfb"))


def _json_lines_document(doc: Any, err: str | None) -> bool:
    """The first line of OTLP JSON lines: a JSON object."""
    return err is None and isinstance(doc, dict)


def _turn_cycles(turn_spans: list[_Span], inner: dict[int, list[_Span]]) -> list[_Span]:
    """The turn spans on a cycle of the graph "turn -> the turn spans found under it" (a parent chain
    that loops through two turns or more), by an iterative depth-first search: linear in the edges."""
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    on_cycle: dict[int, _Span] = {}
    for root in turn_spans:
        if id(root) in state:
            continue
        path: list[_Span] = [root]
        todo = [iter(inner.get(id(root), ()))]
        state[id(root)] = 1
        while todo:
            nxt = next(todo[-1], None)
            if nxt is None:
                state[id(path.pop())] = 2
                todo.pop()
            elif state.get(id(nxt)) == 1:  # back to a turn on the current path: the path from it is a cycle
                start = next(i for i in range(len(path) - 1, -1, -1) if path[i] is nxt)
                on_cycle.update((id(s), s) for s in path[start:])
            elif id(nxt) not in state:
                state[id(nxt)] = 1
                path.append(nxt)
                todo.append(iter(inner.get(id(nxt), ())))
    return list(on_cycle.values())


def read_otel(text: str, origin: str = "<trace>", options: ReadOptions | None = None) -> TraceTable:
    """Rebuild per-turn stages from an OTLP JSON span export (LiveKit ``lk.*`` or Pipecat ``turn.*``).

    :param text: the export's content: one JSON document, or one per line (split on ``\\n`` only).
    :param origin: the file name for anomalies and reports.
    :param options: the readers' options (here ``absurd_ms``: a stage above it is flagged).
    :returns: a :class:`TraceTable` in ms, one turn per ``agent_turn`` (LiveKit) or ``turn``
        (Pipecat) span, ordered by start time. Flagged: broken lines, nodes of the wrong type (with
        their path), negative/absurd/non-numeric values, cycles in the span tree, turns without
        endpointing (LiveKit), TTFT or TTS TTFB, totals below the sum of their stages, repeated turn
        ids, a TTFT/TTFB repeated to the last digit on every turn.
    :raises ScenarioError: no span could be read at all (the message names the first problems).
    """
    absurd_ms = (options or ReadOptions()).absurd_ms
    return _table(_Reader.of_text(text.removeprefix("\ufeff"), origin, absurd_ms))


def read_otel_lines(
    open_lines: Callable[[], Iterable[tuple[int, str]]],
    origin: str = "<trace>",
    options: ReadOptions | None = None,
) -> TraceTable:
    """:func:`read_otel` on a trace given as lines. OTLP JSON lines (each line a whole document) are
    streamed: one line in memory at a time, only the spans' names, ids, start times and attributes kept.
    A document spread over lines (a pretty-printed export: its first line is not a JSON object), or
    a file in which no line holds a span, is read whole by :func:`read_otel` (a second pass).

    :param open_lines: gives the trace's ``(line number from 1, line)`` pairs afresh on each call, as
        :func:`voicebudget._io.iter_lines` reads a file.
    """
    absurd_ms = (options or ReadOptions()).absurd_ms
    spans: list[_Span] = []
    loose: list[Anomaly] = []
    first = True
    for lineno, raw in open_lines():
        line = raw.removeprefix("\ufeff") if lineno == 1 else raw
        if not line.strip():
            continue
        doc, err = loads(line)
        if first and not _json_lines_document(doc, err):
            break  # not JSON lines
        first = False
        if err is not None:
            loose.append(Anomaly(lineno, "", line.strip()[:120], err, origin))
            continue
        _collect(doc, None, 0, spans, loose, origin, lineno=lineno)
    if not spans:
        return read_otel("\n".join(raw for _, raw in open_lines()), origin, options)
    reader = _Reader(spans, loose, origin, absurd_ms)
    del spans  # the reader holds the spans, and drops each turn's once the turn is read
    return _table(reader)


def _table(reader: _Reader) -> TraceTable:
    if not reader.spans:
        detail = (
            "; ".join(f"line {a.line}: {a.field + ': ' if a.field else ''}{a.reason}" for a in reader.loose[:3])
            or "no spans found"
        )
        raise ScenarioError(f"not an OTLP JSON span export ({detail})", origin=reader.origin)
    return reader.table()
