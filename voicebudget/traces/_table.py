"""The common per-turn table every trace reader produces, and the anomaly record.

Time axis (docs/design.md section 1): ``t = 0`` is the actual end of the user's speech. Every
reader converts the source's seconds to ms and says in :attr:`TraceTable.anchor` what "user
stopped speaking" meant in the source.

Stages of a turn (ms). The *on-path* stages follow one another and add up to the turn's total:

==================  =====================================================================
``endpointing``     speech end -> turn commit (VAD silence, turn detector, STT wait): the
                    LLM request is sent at its end
``llm_ttft``        LLM request -> first token (TTFT); in a tool turn, of the first pass
``llm_tool_call``   tool turns: the first token -> the tool call dispatched (the LLM writing
                    the call), plus every later pass that also ended in a tool call
``tool``            tool turns: the tool call(s) running -> the next LLM request (parts by
                    tool name when the source names them)
``llm_2_ttft``      tool turns: the LLM pass after the tool calls (the one that speaks):
                    request -> first token
``first_phrase``    first token -> first speakable phrase sent to the TTS (Pipecat's
                    "text aggregation time")
``tts_ttfb``        first text to the TTS -> first audio byte (TTFB)
``output``          the TTS's first audio byte -> the bot's first audio leaving the server
                    (output queue, transport), when the source logs both
``other``           what the source's own total has beyond the stages it reports
``transport``       a call recording joined to the trace (:mod:`voicebudget.audio`): the last
                    server event -> the agent's audio in the recording (transport, jitter
                    buffer, playout: what no log sees)
==================  =====================================================================

A turn is a sequence of LLM passes and tool executions (DESIGN section 10): a tool turn's path is
``endpointing, llm_ttft, llm_tool_call, tool, llm_2_ttft, ...``. Off the path (shown, not added):
``asr`` (speech end -> final transcript; it runs inside the endpointing wait) and ``leading_silence``
(silence at the start of the first audio chunk), and in a turn joined to a recording ``anchor_bias``
(the source's ``t = 0`` minus the end of speech in the recording: how late the framework's "user
stopped speaking" is; its endpointing is measured from the recording's end of speech).

A turn may carry *notes*: facts about it that do not exclude it (the framework's own larger total
used instead of the rebuilt one, and by how much) and *unknown stages*: stages the turn has but the
source does not time (their time is in ``other``).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

from voicebudget.traces._formats import ABSURD_MS

__all__ = [
    "ABSURD_MS",
    "OFF_PATH",
    "ON_PATH",
    "TOOL_STAGES",
    "Anomaly",
    "Summary",
    "TraceTable",
    "TraceTurn",
    "TurnBuilder",
    "added",
    "group_anomalies",
    "place",
]

ON_PATH = (
    "endpointing",
    "llm_ttft",
    "llm_tool_call",
    "tool",
    "llm_2_ttft",
    "first_phrase",
    "tts_ttfb",
    "output",
    "other",
    "transport",
)
"""Stages that follow one another and add up to the turn total, in time order."""

_ON_PATH_SET = frozenset(ON_PATH)

TOOL_STAGES = ("llm_tool_call", "tool", "llm_2_ttft")
"""The on-path stages only a tool turn has (0 in a turn that called no tool)."""

OFF_PATH = ("asr", "leading_silence", "anchor_bias")
"""Stages reported for information; they overlap the path (ASR) or follow the total (silence)."""


def place(line: int, at_ms: float | None) -> str:
    """Where a turn or an anomaly is in its source: ``line 12`` in a file of lines, ``at 12.34 s`` in a call
    recording (which has no lines: the time from its start), ``line 0`` for a file as a whole."""
    if line or at_ms is None:
        return f"line {line}"
    return f"at {at_ms / 1000.0:.2f} s"


RESIDUAL_TOLERANCE_MS = 5.0
"""A source total may fall short of the sum of its stages by this much (rounding of logged values)
before the turn is flagged."""


@dataclass(frozen=True, slots=True)
class Anomaly:
    """One bad value or line in a trace, with where it is.

    :ivar line: 1-based line number in the file (0: the file as a whole).
    :ivar field: the field or metric at fault (``""`` for a whole line).
    :ivar value: the value as found (seconds, as in the source; or the text of a broken line).
    :ivar reason: what is wrong with it.
    :ivar origin: the file.
    :ivar turn: the turn id it belongs to, if known. A turn whose own values an anomaly makes unreliable is
        flagged (:attr:`TraceTurn.flagged`) and excluded from statistics by default; one that leaves the
        rebuilt total standing (Pipecat's own smaller figure) names its turn without flagging it.
    :ivar at_ms: in a call recording (:mod:`voicebudget.audio`), where it is: ms from the recording's start
        (:attr:`line` is 0 then: a recording has no lines); None in a file of lines.
    """

    line: int
    field: str
    value: Any
    reason: str
    origin: str = ""
    turn: str | None = None
    at_ms: float | None = None

    @property
    def place(self) -> str:
        """``line 12``, or ``at 12.34 s`` in a recording (:func:`place`)."""
        return place(self.line, self.at_ms)

    def to_dict(self) -> dict[str, Any]:
        value = self.value
        if isinstance(value, float) and not math.isfinite(value):
            value = str(value)
        elif value is not None and not isinstance(value, str | int | float):
            value = repr(value)[:120]  # a list or object as found (it may hold non-finite numbers)
        d: dict[str, Any] = {
            "line": self.line if self.line or self.at_ms is None else None,
            "field": self.field,
            "value": value,
            "reason": self.reason,
            "file": self.origin,
            "turn": self.turn,
        }
        if self.at_ms is not None:
            d["at_ms"] = self.at_ms
        return d


@dataclass(frozen=True, slots=True)
class TraceTurn:
    """One turn rebuilt on the common time axis.

    :ivar id: the source's turn id (LiveKit ``speech_id``, span id, or ``turn-N``).
    :ivar line: the line the turn starts on.
    :ivar index: 0 for the first turn of its file (the one that opens cold connections), 1, 2, ...
    :ivar stages_ms: stage name -> ms, only the stages the source gave (see module docstring).
    :ivar total_ms: the turn's latency on the source's own definition (:attr:`TraceTable.total`), ms;
        None when it cannot be rebuilt.
    :ivar cold: the source showed a cold connection in this turn (LiveKit ``connection_reused`` false).
    :ivar flagged: an anomaly belongs to this turn; excluded from statistics by default.
    :ivar origin: the file.
    :ivar reader: the reader that read it (a name in :data:`~voicebudget.traces.FORMATS`).
    :ivar rules: the rule set within that reader that matched it (e.g. a framework version range,
        ``"pipecat-1.x"``); ``""`` when the reader has one way of reading.
    :ivar parts_ms: stage -> part -> ms, for a stage the source splits (Pipecat's TTFAT: the LLM stage
        as ``ttfb`` + ``thinking``); the parts add up to the stage.
    :ivar framework_total_ms: the framework's own figure for the turn's latency when it logs one
        (Pipecat's ``UserBotLatencyObserver``, LiveKit's ``e2e_latency``), ms; when it is larger than
        the rebuilt total beyond the tolerance it *is* the total (a note says so).
    :ivar notes: what the reader noticed about the turn that does not exclude it (a disagreement
        between the framework's total and the rebuilt one, and which was used).
    :ivar start_s: ``t = 0`` on the source's own clock, s (a log's timestamps read as UTC); None when the
        source gives durations only. With :attr:`end_s` it places the turn on the source's clock, so a
        call recording can be joined to it (:mod:`voicebudget.audio`).
    :ivar end_s: the turn's last server event on the source's clock (where :attr:`total_ms` ends), s.
    :ivar at_ms: a turn found in a call recording (:mod:`voicebudget.audio`): its ``t = 0`` (the caller's end
        of speech), ms from the recording's start. A recording has no lines: :attr:`line` is 0 for a turn
        from a recording alone, the trace's line for one joined with a trace.
    :ivar unknown_stages: stages the turn has whose time the source does not give (Pipecat 1.14's
        OpenTelemetry TTS span without ``metrics.ttfb``); their time is inside ``other`` when the source
        gives a total, else the total leaves them out and is a :attr:`lower_bound`.
    :ivar lower_bound: the total leaves out stages the turn has but the source does not time
        (:attr:`unknown_stages`; LiveKit's console log of a tool turn prints whole seconds, so the tools'
        time is unknown): a lower bound of the turn, up to what the source cannot show either (a preemptive
        LLM pass inside the endpointing wait, counted as every turn of such a log counts it). Such a turn
        is not left out: a failing agent must not pass because its slowest turns are unreadable.
    """

    id: str
    line: int
    index: int
    stages_ms: Mapping[str, float]
    total_ms: float | None
    cold: bool = False
    flagged: bool = False
    origin: str = ""
    reader: str = ""
    rules: str = ""
    parts_ms: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    framework_total_ms: float | None = None
    notes: tuple[str, ...] = ()
    unknown_stages: tuple[str, ...] = ()
    start_s: float | None = None
    end_s: float | None = None
    lower_bound: bool = False
    at_ms: float | None = None

    @property
    def place(self) -> str:
        """``line 12``, or ``at 12.34 s`` for a turn from a recording alone (:func:`place`)."""
        return place(self.line, self.at_ms)

    @property
    def complete(self) -> bool:
        """The total is known (a turn without one cannot enter any statistic)."""
        return self.total_ms is not None and math.isfinite(self.total_ms)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "file": self.origin,
            "turn": self.id,
            "line": self.line if self.line or self.at_ms is None else None,
            "index": self.index,
            "first": self.index == 0,
            "cold": self.cold,
            "flagged": self.flagged,
            "total_ms": self.total_ms,
            "reader": self.reader,
            "rules": self.rules,
        }
        if self.framework_total_ms is not None:
            d["framework_total_ms"] = self.framework_total_ms
        if self.notes:
            d["notes"] = list(self.notes)
        if self.unknown_stages:
            d["unknown_stages"] = list(self.unknown_stages)
        if self.lower_bound:
            d["lower_bound"] = True
        if self.at_ms is not None:
            d["at_ms"] = self.at_ms
        for name in (*ON_PATH, *OFF_PATH):
            if name in self.stages_ms:
                d[f"{name}_ms"] = self.stages_ms[name]
            for part, value in self.parts_ms.get(name, {}).items():
                d[f"{name}_{part}_ms"] = value
        return d


@dataclass(frozen=True)
class Summary:
    """A platform's per-component latency statistics for a call, when it gives no turns (Retell).

    :ivar origin: the file.
    :ivar call: the call's id.
    :ivar component: ``e2e``, ``llm``, ``tts``, ... as the platform names it.
    :ivar stats_ms: ``p50``, ``p90``, ``p95``, ``p99``, ``min``, ``max`` (ms) as given; ``num``: the
        number of values behind them.
    """

    origin: str
    call: str
    component: str
    stats_ms: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.origin, "call": self.call, "component": self.component, "stats_ms": self.stats_ms}


@dataclass(frozen=True)
class TraceTable:
    """Every turn of one trace file, and the anomalies found in it.

    :ivar origin: the file.
    :ivar format: ``"pipecat"``, ``"livekit"``, ``"otel-livekit"`` or ``"otel-pipecat"``.
    :ivar anchor: what ``t = 0`` (end of user speech) meant in this source.
    :ivar total: what a turn's total is in this source.
    :ivar wrappers: the log shippers' layers stripped from its lines, outermost first (names in
        :data:`~voicebudget.traces.WRAPPERS`: ``journald``, ``docker-json``, ...).
    :ivar summaries: per-component statistics of a source that gives no turns (Retell's ``latency``).
    """

    origin: str
    format: str
    anchor: str
    total: str
    turns: tuple[TraceTurn, ...]
    anomalies: tuple[Anomaly, ...]
    wrappers: tuple[str, ...] = ()
    summaries: tuple[Summary, ...] = ()

    def source_dict(self) -> dict[str, Any]:
        return {
            "file": self.origin,
            "format": self.format,
            "wrappers": list(self.wrappers),
            "anchor": self.anchor,
            "total": self.total,
            "turns": len(self.turns),
            "anomalies": len(self.anomalies),
        }


_NO_PARTS: Mapping[str, Mapping[str, float]] = MappingProxyType({})
"""The parts of a turn whose stages have none (most turns): one shared read-only mapping, not a dict each
(a kept turn costs ~600 bytes; 64 of them were this empty dict)."""
_NO_PARTS_BUILDER: Mapping[str, dict[str, float]] = MappingProxyType({})

_T = TypeVar("_T")


def added(items: list[_T] | tuple[_T, ...], item: _T) -> list[_T]:
    """``items`` with ``item`` appended: the list itself, or a new one in place of the shared empty tuple."""
    out: list[_T] = items if isinstance(items, list) else []
    out.append(item)
    return out


@dataclass(slots=True)
class TurnBuilder:
    """Collects one turn's values while a reader walks the file; checks every value on the way in."""

    id: str
    line: int
    origin: str
    absurd_ms: float
    stages_ms: dict[str, float] = field(default_factory=dict)
    # anomalies, parts, notes and unknown stages: an empty tuple (shared) until the first is added, since
    # most turns have none (four empty containers were ~230 of the ~1,900 bytes a Pipecat turn holds while
    # its log is read); they are added through flag(), set_part(), note() and unknown()
    anomalies: list[Anomaly] | tuple[Anomaly, ...] = ()
    total_ms: float | None = None
    cold: bool = False
    rules: str = ""
    parts_ms: dict[str, dict[str, float]] | Mapping[str, dict[str, float]] = field(
        default_factory=lambda: _NO_PARTS_BUILDER
    )
    framework_total_ms: float | None = None
    notes: list[str] | tuple[str, ...] = ()
    unknown_stages: list[str] | tuple[str, ...] = ()
    start_s: float | None = None
    end_s: float | None = None
    lower_bound: bool = False
    reader: str = ""

    def note(self, text: str) -> None:
        """Record a fact about the turn that does not exclude it from the statistics."""
        self.notes = added(self.notes, text)

    def unknown(self, *stages: str) -> None:
        """Record stages the source does not time for this turn (each once)."""
        for stage in stages:
            if stage not in self.unknown_stages:
                self.unknown_stages = added(self.unknown_stages, stage)

    def flag(self, line: int, fld: str, value: Any, reason: str) -> None:
        """Record an anomaly on this turn."""
        self.anomalies = added(self.anomalies, Anomaly(line, fld, value, reason, self.origin, self.id))

    def seconds(self, value: Any, *, line: int, fld: str, missing_ok: bool = False) -> float | None:
        """Check a duration in seconds from the source and return it in ms (None when bad or missing).

        Flags: not a number, not finite, negative, longer than ``absurd_ms``; missing unless
        ``missing_ok``.
        """
        if value is None:
            if not missing_ok:
                self.flag(line, fld, None, "missing value")
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.flag(line, fld, value, "not a number")
            return None
        return self.ms(float(value) * 1000.0, line=line, fld=fld, source_value=value)

    def ms(self, value_ms: float, *, line: int, fld: str, source_value: Any = None) -> float | None:
        """Check a duration already in ms (e.g. rebuilt from timestamps).

        A negative or absurd value is flagged and still returned (the turn is excluded from statistics
        unless anomalies are included, and then it counts as measured); a non-finite one gives None.
        """
        shown = value_ms / 1000.0 if source_value is None else source_value
        if not math.isfinite(value_ms):
            self.flag(line, fld, shown, "not a finite number")
            return None
        if value_ms < 0:
            self.flag(line, fld, shown, "negative duration")
        elif value_ms > self.absurd_ms:
            self.flag(line, fld, shown, f"absurd value: over {self.absurd_ms / 1000:g} s (stale anchor?)")
        return value_ms

    def set_part(self, stage: str, part: str, value_ms: float) -> None:
        """Record one part of a stage the source splits (the parts add up to the stage)."""
        if not isinstance(self.parts_ms, dict):
            self.parts_ms = {}
        self.parts_ms.setdefault(stage, {})[part] = value_ms

    def set_stage(self, name: str, value_ms: float | None) -> None:
        if value_ms is not None:
            self.stages_ms[name] = value_ms

    def require(self, needed: Mapping[str, tuple[str, str]]) -> None:
        """Flag every stage the turn lacks: ``needed`` maps a stage to ``(source field, what is missing)``.

        A stage whose field was already flagged (negative, absurd, ...) is not flagged twice.
        """
        for name, (fld, what) in needed.items():
            if name not in self.stages_ms and not any(a.field == fld for a in self.anomalies):
                self.flag(self.line, fld, None, f"turn has no {what}")

    def close_with_residual(
        self, source_total_ms: float | None, line: int, fld: str, required: Collection[str] = ()
    ) -> None:
        """Set the total from the source's own figure and put what the stages do not cover in ``other``.

        Without a source total, the total is the sum of the on-path stages, or None when a stage in
        ``required`` is missing (a partial sum is not a turn latency).
        """
        path = sum([v for k, v in self.stages_ms.items() if k in _ON_PATH_SET])  # (in the stages' order)
        if source_total_ms is None:
            complete = all(r in self.stages_ms for r in required) and bool(self.stages_ms.keys() & _ON_PATH_SET)
            self.total_ms = path if complete else None
            return
        residual = source_total_ms - path
        if residual < -RESIDUAL_TOLERANCE_MS:
            self.flag(
                line,
                fld,
                source_total_ms / 1000.0,
                f"total {source_total_ms:.1f} ms is less than the sum of its stages {path:.1f} ms",
            )
        if residual > 0:
            self.stages_ms["other"] = residual
        self.total_ms = path + max(residual, 0.0)

    def build(self, index: int) -> TraceTurn:
        return TraceTurn(
            id=self.id,
            line=self.line,
            index=index,
            stages_ms=dict(self.stages_ms),
            total_ms=self.total_ms,
            cold=self.cold,
            flagged=bool(self.anomalies),
            origin=self.origin,
            rules=self.rules,
            parts_ms={k: dict(v) for k, v in self.parts_ms.items()} if self.parts_ms else _NO_PARTS,
            framework_total_ms=self.framework_total_ms,
            notes=tuple(self.notes),
            unknown_stages=tuple(self.unknown_stages),
            start_s=self.start_s,
            end_s=self.end_s,
            lower_bound=self.lower_bound,
            reader=self.reader,
        )


def group_anomalies(anomalies: Sequence[Anomaly]) -> list[tuple[Anomaly, int, Anomaly]]:
    """The anomalies with the same file, field, value and reason as one entry: ``(the first, how many, the
    last)``, in order of first appearance. A file-wide anomaly (the same TTS TTFB on every turn: a
    stale value) flags each turn it covers, and is one entry here."""
    groups: dict[tuple[str, str, str, str], list[Any]] = {}
    for a in anomalies:
        key = (a.origin, a.field, repr(a.value)[:200], a.reason)
        entry = groups.get(key)
        if entry is None:
            groups[key] = [a, 1, a]
        else:
            entry[1] += 1
            entry[2] = a
    return [(a, n, last) for a, n, last in groups.values()]
