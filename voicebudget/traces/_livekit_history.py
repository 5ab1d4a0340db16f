"""LiveKit Agents per-message metrics: the chat history (``session.history.to_dict()``, or one
``conversation_item_added`` item per line) with ``metrics`` on each message, in seconds
(``MetricsReport`` in ``livekit-agents/livekit/agents/llm/chat_context.py``, 1.3 and later; rules in
:mod:`._livekit_rules`).

- user message: ``end_of_turn_delay`` (last speech the VAD saw -> turn committed),
  ``transcription_delay`` (-> final transcript), ``started_speaking_at``/``stopped_speaking_at``;
- assistant message: ``llm_node_ttft``, ``tts_node_ttfb``, ``e2e_latency`` (agent started
  speaking - user stopped speaking), ``started_speaking_at``/``stopped_speaking_at``, and from 1.7
  ``llm_node_ttfs`` (LLM start -> first sentence sent to the TTS): ``first_phrase`` is its excess
  over ``llm_node_ttft``; from 1.8 ``playback_latency`` (the first audio frame forwarded -> the audio
  output reporting playback, e.g. a remote avatar): the ``output`` stage.

A LiveKit session report (``ctx.make_session_report().to_dict()``, ``voice/report.py``) is read the
same way: its chat history sits under ``chat_history``, with the session's ``events`` beside it
(``metrics_collected`` left out by LiveKit); an event supplies a time the history lacks
(``agent_state_changed`` to ``speaking`` for the assistant's ``started_speaking_at``,
``function_tools_executed`` for the tool calls' times).

A turn is an assistant message with metrics, joined to the user message before it (its endpointing).
A tool turn has ``function_call``/``function_call_output`` items (and an ``agent_handoff`` when the
tool hands off) between the user message and the reply: the reply's ``llm_node_ttft`` is the pass
after the tools (``llm_2_ttft``); with the items' ``created_at`` (``to_dict(exclude_timestamp=False)``,
as the session report writes it) the first pass is the turn commit (the user's
``stopped_speaking_at + end_of_turn_delay``) to the first call (``llm_ttft``), and the tools the
first call to the last output or handoff (``tool``, parts by function name); without them, the
first pass and the tools together are ``tool`` (a note says so). An assistant message after a tool
call whose user turn an earlier message already answered continues that reply: not a turn.
The total is ``e2e_latency``; without it, voice-to-voice from the timestamps: the assistant's
``started_speaking_at`` minus the user's ``stopped_speaking_at`` (LiveKit computes ``e2e_latency`` that
way, ``voice/agent_activity.py``). When both are there and differ by more than 5 ms, the larger is
the total and a note on the turn says so. A realtime (speech-to-speech) model's messages carry only
the timestamps: such a turn is its voice-to-voice total alone. What the total has beyond the reported
stages is ``other``.
"""

from __future__ import annotations

import bisect
import math
import re
from typing import Any

from voicebudget.traces._jsonsafe import iter_lines, json_kind, loads
from voicebudget.traces._livekit_rules import flag_stale_values
from voicebudget.traces._options import ReadOptions
from voicebudget.traces._table import ON_PATH, RESIDUAL_TOLERANCE_MS, Anomaly, TraceTable, TurnBuilder

__all__ = ["looks_like_livekit_history", "read_livekit_history"]

ANCHOR = "LiveKit: the user's last speech frame as the VAD saw it (per-message metrics)"
TOTAL = (
    "e2e_latency of the assistant message (agent started speaking - user stopped speaking); without it, "
    "the same from started_speaking_at/stopped_speaking_at"
)
_KEYS = re.compile(
    r'"(llm_node_ttft|tts_node_ttfb|end_of_turn_delay|e2e_latency|started_speaking_at|'
    r'stopped_speaking_at)"'
)
_NEEDED = {
    "endpointing": ("end_of_turn_delay", "user message with end_of_turn_delay before it"),
    "llm_ttft": ("llm_node_ttft", "llm_node_ttft"),
    "tts_ttfb": ("tts_node_ttfb", "tts_node_ttfb"),
}
_PIPELINE_KEYS = ("llm_node_ttft", "tts_node_ttfb")


def looks_like_livekit_history(text: str) -> bool:
    """True for chat-history items carrying LiveKit's per-message metrics."""
    head = text[:200_000]
    return _KEYS.search(head) is not None and '"role"' in head


class _Lines:
    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)


def _items(
    text: str, loose: list[Anomaly], origin: str, events: list[dict[str, Any]]
) -> list[tuple[dict[str, Any], int]]:
    """Items with the line each starts on: one document (``{"items": [...]}``, a list, or a session
    report's ``{"chat_history": {"items": [...]}, "events": [...]}``, whose events go to ``events``),
    else one item per line."""
    doc, error = loads(text)
    if error is not None:
        return _items_by_line(text, loose, origin)
    if isinstance(doc, dict) and isinstance(doc.get("chat_history"), dict):
        events.extend(e for e in doc.get("events") or [] if isinstance(e, dict))
        doc = doc["chat_history"]
    items = doc.get("items", []) if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        loose.append(Anomaly(1, "items", json_kind(items), "items is not a list of chat items", origin))
        return []
    return _located(items, text, loose, origin)


def _items_by_line(text: str, loose: list[Anomaly], origin: str) -> list[tuple[dict[str, Any], int]]:
    """One item per line (a log prefix before its object allowed; ``{"item": {...}}`` unwrapped)."""
    out = []
    for i, raw in enumerate(iter_lines(text), start=1):
        if not raw.strip():
            continue
        item, err = loads(raw[raw.find("{") :] if "{" in raw else raw)
        if err is not None:
            loose.append(Anomaly(i, "", raw.strip()[:120], err, origin))
            continue
        if isinstance(item, dict):
            inner = item.get("item", item)
            if isinstance(inner, dict):
                out.append((inner, i))
    return out


def _located(items: list[Any], text: str, loose: list[Anomaly], origin: str) -> list[tuple[dict[str, Any], int]]:
    """The document's items with the line each starts on (found by its ``id``, else its ``role``)."""
    where = _Lines(text)
    out, cursor = [], 0
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            loose.append(
                Anomaly(where.of(cursor), f"items[{index}]", json_kind(item), "a chat item is not an object", origin)
            )
            continue
        item_id = item.get("id")
        key = f'"{item_id}"' if isinstance(item_id, str) and item_id else '"role"'
        pos = text.find(key, cursor)
        cursor = pos + 1 if pos >= 0 else cursor
        out.append((item, where.of(max(pos, 0))))
    return out


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


class _Tools:
    """The tool items between a user message and the reply, in order: calls, outputs, handoffs."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str, float | None]] = []  # (kind, function name, created_at)

    @property
    def calls(self) -> list[tuple[str, float | None]]:
        return [(n, t) for k, n, t in self.items if k == "function_call"]

    def add(self, item: dict[str, Any]) -> None:
        kind = item.get("type")
        name = item.get("name")
        name = name if isinstance(name, str) and name else "tool"
        if kind in ("function_call", "function_call_output", "agent_handoff"):
            self.items.append((str(kind), name, _number(item.get("created_at"))))

    def from_events(self, events: list[dict[str, Any]], after: float, before: float) -> None:
        """Times from ``function_tools_executed`` events between ``after`` and ``before`` (a session
        report), for items the history gives without a time: the calls' own ``created_at``, the event's
        time for the outputs."""
        if all(t is not None for _, _, t in self.items):
            return
        calls, done = _executed(events, after, before)
        items = []
        for kind, name, t in self.items:
            if t is None:
                t = calls.get(name) if kind == "function_call" else (done.pop(0) if done else None)
            items.append((kind, name, t))
        self.items = items

    def rounds(self) -> list[tuple[float, float, str]] | None:
        """Each round of calls: (first call, last output or handoff, the function whose output came last);
        None when an item has no time."""
        out: list[tuple[float, float, str]] = []
        first: float | None = None
        last: tuple[float, str] | None = None
        for kind, name, t in self.items:
            if t is None:
                return None
            if kind == "function_call":
                if last is not None and first is not None:  # a call after outputs: the next round
                    out.append((first, last[0], last[1]))
                    first, last = None, None
                first = t if first is None else first
            else:
                last = (t, _last_name(kind, name, last))
        if first is not None and last is not None:
            out.append((first, last[0], last[1]))
        return out or None


class _History:
    def __init__(self, origin: str, absurd_ms: float) -> None:
        self.origin, self.absurd_ms = origin, absurd_ms
        self.builders: list[TurnBuilder] = []
        self.pending_tool: list[TurnBuilder] = []  # tool turns whose tool time is what the total leaves
        self.values: dict[str, list[tuple[TurnBuilder, int, str, Any]]] = {k: [] for k in _PIPELINE_KEYS}

    def reply(
        self,
        item: dict[str, Any],
        metrics: dict[str, Any],
        line: int,
        user: tuple[dict[str, Any], int] | None,
        tools: _Tools | None = None,
        events: list[dict[str, Any]] | None = None,
    ) -> None:
        events = events or []
        b = TurnBuilder(_reply_id(item, line), line, self.origin, self.absurd_ms)
        pipeline = _is_pipeline(metrics, user)
        b.rules = "livekit-history-1.3+" if pipeline else "livekit-history-realtime"
        _user_stages(b, user)
        user = self.stopped_from_events(user, metrics, events)
        metrics = self.started_from_events(metrics, user, events)
        tool_turn = tools is not None and bool(tools.calls)
        self.reply_stages(b, metrics, line, tool_turn)
        if tool_turn and tools is not None:
            self.tool_stages(b, tools, metrics, user, events)
        self.close(b, metrics, line, user, pipeline, tool_turn)
        if b in self.pending_tool and "other" in b.stages_ms:
            b.stages_ms["tool"] = b.stages_ms.pop("other")  # the first pass and the tools, not timed apart
        if b.total_ms is None and not pipeline:
            _flag_no_total(b, metrics, line, user)
        self.builders.append(b)

    def reply_stages(self, b: TurnBuilder, metrics: dict[str, Any], line: int, tool_turn: bool) -> None:
        """The reply's own metrics: the LLM's TTFT (the last pass's, in a tool turn), the TTS's TTFB, the
        first sentence and the playback latency."""
        for key, stage in (("llm_node_ttft", "llm_2_ttft" if tool_turn else "llm_ttft"), ("tts_node_ttfb", "tts_ttfb")):
            ms = b.seconds(metrics.get(key), line=line, fld=key, missing_ok=True)
            b.set_stage(stage, ms)
            if ms is not None and stage != "llm_2_ttft":
                self.values[key].append((b, line, key, metrics[key]))
        self.first_sentence(b, metrics, line)
        playback = b.seconds(metrics.get("playback_latency"), line=line, fld="playback_latency", missing_ok=True)
        if playback:  # 1.8+: the first audio frame forwarded -> the output reporting playback (an avatar)
            b.set_stage("output", playback)

    def close(
        self,
        b: TurnBuilder,
        metrics: dict[str, Any],
        line: int,
        user: tuple[dict[str, Any], int] | None,
        pipeline: bool,
        tool_turn: bool,
    ) -> None:
        """The reply's total, its missing stages flagged (a pipeline's), and its time on LiveKit's clock."""
        needed = _NEEDED if not tool_turn else {k: v for k, v in _NEEDED.items() if k != "llm_ttft"}
        if pipeline:
            b.require(needed)
        total = self.total(b, metrics, line, user)
        if pipeline:
            self.preemptive(b, total, line)
        if total is not None or pipeline:  # a realtime reply's stages (its playback latency) are no total
            b.close_with_residual(total, line, "e2e_latency", required=tuple(needed) if pipeline else ())
        _on_clock(b, metrics, user)

    @staticmethod
    def first_sentence(b: TurnBuilder, metrics: dict[str, Any], line: int) -> None:
        """``first_phrase`` = ``llm_node_ttfs`` (LLM start -> first sentence at the TTS, 1.7+) minus the
        TTFT: the LLM's time from its first token to its first speakable sentence."""
        ttfs = b.seconds(metrics.get("llm_node_ttfs"), line=line, fld="llm_node_ttfs", missing_ok=True)
        ttft = b.stages_ms.get("llm_2_ttft", b.stages_ms.get("llm_ttft"))
        if ttfs is not None and ttft is not None:
            b.set_stage("first_phrase", b.ms(ttfs - ttft, line=line, fld="llm_node_ttfs"))

    @staticmethod
    def stopped_from_events(
        user: tuple[dict[str, Any], int] | None, metrics: dict[str, Any], events: list[dict[str, Any]]
    ) -> tuple[dict[str, Any], int] | None:
        """A session report's ``user_state_changed`` -> ``listening`` (LiveKit's own "user stopped
        speaking", ``agent_activity``) before the reply started speaking, as the user message's
        ``stopped_speaking_at`` when it lacks one: LiveKit 1.8 writes none on a realtime model's user
        message (its turn detection is the model's)."""
        started = _number(metrics.get("started_speaking_at"))
        if user is None or started is None or _number(user[0].get("stopped_speaking_at")) is not None:
            return user
        stops = [
            at
            for ev in events
            if ev.get("type") == "user_state_changed"
            and ev.get("new_state") == "listening"
            and (at := _number(ev.get("created_at"))) is not None
            and at <= started
        ]
        return ({**user[0], "stopped_speaking_at": max(stops)}, user[1]) if stops else user

    @staticmethod
    def started_from_events(
        metrics: dict[str, Any], user: tuple[dict[str, Any], int] | None, events: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """A session report's ``agent_state_changed`` -> ``speaking`` after the user stopped, as the
        reply's ``started_speaking_at`` when its metrics lack it."""
        stopped = _number(user[0].get("stopped_speaking_at")) if user is not None else None
        if stopped is None or _number(metrics.get("started_speaking_at")) is not None:
            return metrics
        for ev in events:
            at = _number(ev.get("created_at"))
            if ev.get("type") == "agent_state_changed" and ev.get("new_state") == "speaking" and at and at > stopped:
                return {**metrics, "started_speaking_at": at}
        return metrics

    def tool_stages(
        self,
        b: TurnBuilder,
        tools: _Tools,
        metrics: dict[str, Any],
        user: tuple[dict[str, Any], int] | None,
        events: list[dict[str, Any]],
    ) -> None:
        """The first LLM pass (commit -> first call, ``llm_ttft``) and the tools (first call -> last
        output or handoff, ``tool``, parts by function name) from the items' times."""
        um = user[0] if user is not None else {}
        stopped, eot = _number(um.get("stopped_speaking_at")), _number(um.get("end_of_turn_delay"))
        started = _number(metrics.get("started_speaking_at"))
        if stopped is not None and started is not None:
            tools.from_events(events, stopped, started)
        rounds = tools.rounds()
        names = sorted({n for n, _ in tools.calls})
        if stopped is None or eot is None or rounds is None:
            b.note(
                f"tool turn ({', '.join(names)}): the history gives no times for the tool calls, so the first LLM "
                "pass and the tools are one 'tool' stage (to_dict(exclude_timestamp=False) keeps them apart)"
            )
            b.unknown("llm_ttft")
            self.pending_tool.append(b)
            return
        b.set_stage("llm_ttft", b.ms(round((rounds[0][0] - stopped - eot) * 1000.0, 3), line=b.line, fld="created_at"))
        _round_stages(b, rounds)

    def total(
        self, b: TurnBuilder, metrics: dict[str, Any], line: int, user: tuple[dict[str, Any], int] | None
    ) -> float | None:
        """``e2e_latency`` in ms, else the voice-to-voice from the timestamps; flags their disagreement."""
        e2e = b.seconds(metrics["e2e_latency"], line=line, fld="e2e_latency") if "e2e_latency" in metrics else None
        b.framework_total_ms = e2e
        started = _number(metrics.get("started_speaking_at"))
        stopped = _number(user[0].get("stopped_speaking_at")) if user is not None else None
        v2v = None
        if started is not None and stopped is not None:
            v2v = b.ms((started - stopped) * 1000.0, line=line, fld="started_speaking_at")
        if e2e is not None and v2v is not None and abs(e2e - v2v) > RESIDUAL_TOLERANCE_MS:
            larger = "e2e_latency" if e2e > v2v else "the speaking timestamps"
            b.note(
                f"e2e_latency {e2e:.1f} ms and the speaking timestamps (assistant started_speaking_at - user "
                f"stopped_speaking_at = {v2v:.1f} ms) disagree by {abs(e2e - v2v):.1f} ms; both start at the user's "
                f"stop, so the larger, {larger}, is the total"
            )
            return max(e2e, v2v)
        return e2e if e2e is not None else v2v

    @staticmethod
    def preemptive(b: TurnBuilder, total: float | None, line: int) -> None:
        """Preemptive generation (on by default in 1.8.x): the LLM ran on the final transcript before the
        turn commit, so ``llm_node_ttft`` (and ``llm_node_ttfs``) overlap the endpointing wait and the stages
        add up to more than the total. Only the LLM's time after the commit is on the path: the overlap
        comes off ``llm_ttft``, then ``first_phrase``, and a note says how much."""
        if total is None or "llm_ttft" not in b.stages_ms or "tool" in b.stages_ms:
            return
        excess = sum(v for k, v in b.stages_ms.items() if k in ON_PATH) - total
        if excess <= RESIDUAL_TOLERANCE_MS:
            return
        hidden = 0.0
        for key in ("llm_ttft", "first_phrase"):
            cut = min(b.stages_ms.get(key, 0.0), excess - hidden)
            if key in b.stages_ms:
                b.stages_ms[key] = round(b.stages_ms[key] - cut, 3)
            hidden += cut
        b.note(
            f"preemptive generation: the stages add up to {excess:.0f} ms more than the total; the LLM started "
            f"before the turn commit, and {hidden:.0f} ms of its time ran inside the endpointing wait"
        )

    def table(self) -> list[TurnBuilder]:
        for found in self.values.values():
            flag_stale_values(found)
        return self.builders


def read_livekit_history(text: str, origin: str = "<trace>", options: ReadOptions | None = None) -> TraceTable:
    """Rebuild per-turn stages from LiveKit chat-history items with per-message metrics.

    :param text: ``session.history.to_dict()`` as JSON, or one item per line (seconds).
    :param origin: the file name for anomalies and reports.
    :param options: the readers' options (here ``absurd_ms``: a stage above it is flagged).
    :returns: one turn per assistant message with metrics; flagged as the other readers do, and when
        ``e2e_latency`` and the speaking timestamps disagree.
    """
    loose: list[Anomaly] = []
    events: list[dict[str, Any]] = []
    history = _History(origin, (options or ReadOptions()).absurd_ms)
    user: tuple[dict[str, Any], int] | None = None
    tools = _Tools()
    answered = False  # an assistant message already answered the open user turn
    for item, line in _items(text, loose, origin, events):
        if item.get("type") in ("function_call", "function_call_output", "agent_handoff"):
            tools.add(item)
            continue
        metrics = _metrics_of(item, line, loose, origin)
        role = item.get("role")
        if role == "user":
            user, tools, answered = (metrics or {}, line), _Tools(), False
            continue
        if role != "assistant" or not metrics:
            continue
        if answered and tools.calls:  # the tool reply after a reply that already spoke: same turn
            tools = _Tools()
            continue
        history.reply(item, metrics, line, user, tools, events)
        user, tools, answered = None, _Tools(), True
    return _table(history.table(), loose, origin)


def _table(builders: list[TurnBuilder], loose: list[Anomaly], origin: str) -> TraceTable:
    turns = tuple(b.build(i) for i, b in enumerate(builders))
    anomalies = sorted([*loose, *(a for b in builders for a in b.anomalies)], key=lambda a: a.line)
    return TraceTable(origin, "livekit-history", ANCHOR, TOTAL, turns, tuple(anomalies))


def _metrics_of(item: dict[str, Any], line: int, loose: list[Anomaly], origin: str) -> dict[str, Any] | None:
    """An item's ``metrics`` object (one that is not an object is an anomaly)."""
    raw_metrics = item.get("metrics")
    metrics: dict[str, Any] | None = raw_metrics if isinstance(raw_metrics, dict) else None
    if raw_metrics is not None and metrics is None:
        loose.append(Anomaly(line, "metrics", json_kind(raw_metrics), "metrics is not an object", origin))
    return metrics


def _executed(events: list[dict[str, Any]], after: float, before: float) -> tuple[dict[str, float], list[float]]:
    """From a session report's ``function_tools_executed`` events between ``after`` and ``before``: each
    function's first call time (its own ``created_at``, else the event's), and the events' times."""
    calls: dict[str, float] = {}
    done: list[float] = []
    for ev in events:
        at = _number(ev.get("created_at"))
        if ev.get("type") != "function_tools_executed" or at is None or not after <= at <= before:
            continue
        for call in ev.get("function_calls") or []:
            if isinstance(call, dict) and isinstance(call.get("name"), str):
                calls.setdefault(call["name"], _number(call.get("created_at")) or at)
        done.append(at)
    return calls, done


def _last_name(kind: str, name: str, last: tuple[float, str] | None) -> str:
    """The name a round goes by after an output or handoff: an output's function; a handoff keeps the
    round's name so far."""
    if kind == "function_call_output":
        return name
    return last[1] if last else name


def _user_stages(b: TurnBuilder, user: tuple[dict[str, Any], int] | None) -> None:
    """The user message's ``end_of_turn_delay`` (endpointing) and ``transcription_delay`` (ASR)."""
    if user is not None and "end_of_turn_delay" in user[0]:
        b.set_stage("endpointing", b.seconds(user[0]["end_of_turn_delay"], line=user[1], fld="end_of_turn_delay"))
        b.set_stage(
            "asr",
            b.seconds(user[0].get("transcription_delay"), line=user[1], fld="transcription_delay", missing_ok=True),
        )


def _flag_no_total(b: TurnBuilder, metrics: dict[str, Any], line: int, user: tuple[dict[str, Any], int] | None) -> None:
    """A realtime reply without the times its voice-to-voice needs."""
    why = (
        "a greeting has no user turn"
        if user is None
        else "LiveKit 1.8 writes no stopped_speaking_at on a realtime model's user message: the session "
        "report's user_state_changed events give it"
    )
    b.flag(
        line,
        "started_speaking_at",
        metrics.get("started_speaking_at"),
        "no voice-to-voice for this reply: it needs the user message's stopped_speaking_at before it "
        f"and its own started_speaking_at ({why})",
    )


def _round_stages(b: TurnBuilder, rounds: list[tuple[float, float, str]]) -> None:
    """The LLM passes between tool rounds (``llm_tool_call``) and the rounds (``tool``, parts by function)."""
    call_ms = sum((nxt[0] - cur[1]) * 1000.0 for cur, nxt in zip(rounds, rounds[1:], strict=False))
    if len(rounds) > 1:  # the LLM passes between the rounds
        b.set_stage("llm_tool_call", b.ms(round(call_ms, 3), line=b.line, fld="created_at"))
    tool_ms = 0.0
    for start, end, name in rounds:
        ms = (end - start) * 1000.0
        tool_ms += ms
        b.set_part("tool", name, round(b.parts_ms.get("tool", {}).get(name, 0.0) + ms, 3))
    b.set_stage("tool", b.ms(round(tool_ms, 3), line=b.line, fld="created_at"))


def _reply_id(item: dict[str, Any], line: int) -> str:
    item_id = item.get("id")
    return item_id if isinstance(item_id, str) and item_id else f"line-{line}"


def _is_pipeline(metrics: dict[str, Any], user: tuple[dict[str, Any], int] | None) -> bool:
    """A pipeline's reply (LLM and TTS metrics, or a user message with its end-of-turn delay), not a realtime
    model's."""
    return any(k in metrics for k in _PIPELINE_KEYS) or (user is not None and "end_of_turn_delay" in user[0])


def _on_clock(b: TurnBuilder, metrics: dict[str, Any], user: tuple[dict[str, Any], int] | None) -> None:
    """The turn on LiveKit's clock, the user's stop to the reply's start (a recording joins it)."""
    stopped = _number(user[0].get("stopped_speaking_at")) if user is not None else None
    started = _number(metrics.get("started_speaking_at"))
    if stopped is not None and started is not None:
        b.start_s, b.end_s = stopped, started
