"""Pipecat metrics from its debug log (loguru lines), rebuilt into turns on the common time axis.

Lines read (all values in seconds; the processor name says which service, ``...STT...``,
``...LLM...`` or ``...TTS...``):

- ``VADProcessor#0: User stopped speaking``: the VAD stop event; it fires ``stop_secs`` (``VADParams``,
  0.2 s by default, ``pipecat/audio/vad/vad_analyzer.py``) after the actual end of speech, so
  ``t = 0`` is its timestamp minus ``stop_secs`` (the correction Pipecat's own
  ``UserBotLatencyObserver`` applies);
- ``<Service>#N TTFB: 0.289`` (``FrameProcessorMetrics.stop_ttfb_metrics``, an ``s`` suffix optional)
  and the ``MetricsLogObserver`` shape ``📊 [<Service>#N] TTFB (model): 0.289s at 12.345s``;
- ``<Service>#N text aggregation time: 0.1997`` (first LLM token -> first complete sentence);
- ``<Service>#N TTFA: 0.137s (0.023s leading silence)``;
- the latency-breakdown events (``LatencyBreakdown.chronological_events()``):
  ``User turn: 0.825s``, ``<Service>#N: TTFB 0.289s``, ``<Service>#N: text aggregation 0.200s``,
  used when the log has no VAD stop lines (``User turn`` is measured from the actual end of speech).

Per turn, from the log timestamps: ``endpointing`` = LLM TTFB line time - LLM TTFB - speech end
(the LLM request starts at the turn commit); the total (server-side voice-to-voice) is the TTS TTFB
line time - speech end. The first value of each service in a turn counts (the one on the
speaking-latency path); the turn ends at its first TTS TTFB.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from voicebudget.traces._options import DEFAULT_STOP_SECS, ReadOptions
from voicebudget.traces._table import Anomaly, TraceTable, TurnBuilder

__all__ = ["DEFAULT_STOP_SECS", "looks_like_pipecat", "read_pipecat"]


TOTAL = "TTS first audio byte - actual end of speech (server-side voice-to-voice, from log timestamps)"
TOTAL_BREAKDOWN = "user turn + LLM TTFB + text aggregation + TTS TTFB (Pipecat latency breakdown)"

_NUM = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf|-inf)"
_PREFIX = re.compile(
    r"^(?P<ts>\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)\S*"
    r"\s*\|\s*[A-Z]+\s*\|\s*(?P<where>\S*)\s+-\s(?P<msg>.*)$"
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # loguru colours, when a terminal's output was saved
_TS_START = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d")
_VAD_STOP = re.compile(r"\bUser stopped speaking\b")
_TTFB = re.compile(r"(?P<proc>[\w.]+#\d+) TTFB: " + _NUM + r"(?P<s>s)?$")
_TTFB_OBS = re.compile(r"\[(?P<proc>[\w.]+#\d+)\] TTFB(?: \([^)]*\))?: " + _NUM + r"s at " + _NUM + r"s$")
_AGG = re.compile(r"(?P<proc>[\w.]+#\d+) text aggregation time: " + _NUM + r"s?$")
_TTFA = re.compile(r"(?P<proc>[\w.]+#\d+) TTFA: " + _NUM + r"s? \(" + _NUM + r"s? leading silence\)$")
_PROC_REST = re.compile(r"^(?:\S+ )?\[?(?P<proc>[\w.]+#\d+)\]?:? ?(?P<rest>.*)$")
_TEMPLATES = ("TTFB", "text aggregation time", "TTFA", "User stopped speaking")
_BD_TURN = re.compile(r"\bUser turn: " + _NUM)
_BD_TTFB = re.compile(r"(?P<proc>[\w.]+#\d+): TTFB " + _NUM)
_BD_AGG = re.compile(r"(?P<proc>[\w.]+#\d+): text aggregation " + _NUM)
_METRIC_FUNCS = (":stop_ttfb_metrics:", ":stop_text_aggregation_metrics:", ":_check_ttfa:", ":on_speech_stopped:")
_ANY_VALUE = re.compile(r"(TTFB|text aggregation time|TTFA)(?: \([^)]*\))?: " + _NUM + r"|User stopped speaking")
_DETECT_TTFB = re.compile(r"#\d+\]? TTF(?:B|AT)\b")  # no leading name pattern: linear on long tokens
_KEYWORDS = ("TTFB", "text aggregation", "TTFA", "User stopped speak", "User turn")


def looks_like_pipecat(text: str) -> bool:
    """True when the text has Pipecat metrics lines (a service TTFB or a VAD stop)."""
    return bool(_VAD_STOP.search(text) or _DETECT_TTFB.search(text) or _BD_TURN.search(text))


def _cut_field(msg: str) -> str:
    """The field a cut metrics line was about (``"LLM TTFB"``), so the turn is not flagged twice."""
    m = _PROC_REST.match(msg)
    role = _role(m.group("proc")) if m else None
    if m is None or role is None:
        return ""
    rest = m.group("rest")
    if "TTFB".startswith(rest) or rest.startswith("TTFB"):
        return f"{role.upper()} TTFB"
    return "text aggregation time" if "text aggregation time".startswith(rest[:22]) else ""


def _is_cut(msg: str) -> bool:
    """A Pipecat metrics or VAD message that ends before its value (a line cut short)."""
    m = _PROC_REST.match(msg)
    if m is None:
        return False
    rest = m.group("rest")
    return any(t.startswith(rest) or rest.startswith(t) for t in _TEMPLATES)


def _role(processor: str) -> str | None:
    name = processor.split("#")[0]
    for role in ("STT", "LLM", "TTS"):
        if role in name:
            return role.lower()
    return None


def _timestamp(text: str) -> float:
    return datetime.fromisoformat(text.replace(",", ".").replace("T", " ")).replace(tzinfo=UTC).timestamp()


@dataclass
class _Turn:
    builder: TurnBuilder
    speech_end: float | None
    values: dict[str, tuple[float, float | None, int]] = field(default_factory=dict)  # role -> (s, ts, line)
    agg: float | None = None
    silence: tuple[float, int] | None = None

    @property
    def closed(self) -> bool:
        return "tts" in self.values


class _Reader:
    def __init__(self, origin: str, stop_secs: float, absurd_ms: float, breakdown: bool) -> None:
        self.origin, self.stop_secs, self.absurd_ms, self.breakdown = origin, stop_secs, absurd_ms, breakdown
        self.current: _Turn | None = None
        self.s_suffix = False
        self.pending_stt: tuple[float, float, int] | None = None
        self.done: list[_Turn] = []
        self.loose: list[Anomaly] = []

    def start(self, lineno: int, speech_end: float | None) -> None:
        cur = self.current
        if cur is not None and (cur.closed or "llm" in cur.values or cur.builder.anomalies or self.breakdown):
            self.done.append(cur)
        builder = TurnBuilder(f"turn-{len(self.done) + 1}", lineno, self.origin, self.absurd_ms)
        self.current = _Turn(builder, speech_end)

    def flag(self, lineno: int, fld: str, value: object, reason: str) -> None:
        if self.current is not None and not self.current.closed:
            self.current.builder.flag(lineno, fld, value, reason)
        else:
            self.loose.append(Anomaly(lineno, fld, value, reason, self.origin))

    def line(self, lineno: int, raw: str) -> None:
        m = _PREFIX.match(raw)
        if m is None:
            if _TS_START.match(raw) or any(k in raw for k in _KEYWORDS):
                if not (self.breakdown and (_BD_TURN.search(raw) or _BD_TTFB.search(raw) or _BD_AGG.search(raw))):
                    snippet = raw if len(raw) <= 120 else raw[:117] + "..."
                    self.flag(lineno, "", snippet, "unparseable log line (cut short?)")
                    return
            if not self.breakdown:
                return
            ts, msg = None, raw
        else:
            ts, msg = _timestamp(m.group("ts")), m.group("msg")
            if any(f in m.group("where") for f in _METRIC_FUNCS) and not _ANY_VALUE.search(msg):
                self.flag(lineno, _cut_field(msg), msg[:120], "unparseable metrics line (cut short?)")
                return
        if self.breakdown:
            self.breakdown_message(lineno, msg)
        else:
            self.message(lineno, ts, msg)

    def message(self, lineno: int, ts: float | None, msg: str) -> None:
        assert ts is not None
        msg = msg.rstrip()
        if _VAD_STOP.search(msg) and "LATENCY" not in msg:
            self.start(lineno, ts - self.stop_secs)
            self.adopt_pending_stt()
            return
        cut = _PROC_REST.match(msg)
        if cut is not None and len(cut.group("rest")) >= 4 and "User stopped speaking".startswith(cut.group("rest")):
            self.start(lineno, ts - self.stop_secs)
            self.flag(lineno, "User stopped speaking", msg[:120], "unparseable VAD line (cut short?)")
            return
        if self.current is None:
            self.between_turns(lineno, ts, msg)
            return
        if (m := _TTFA.search(msg)) is not None:
            if self.current.silence is None:
                self.current.silence = (float(m.group(3)), lineno)
            return
        if self.current.closed:
            self.between_turns(lineno, ts, msg)
            return
        m = _TTFB.search(msg) or _TTFB_OBS.search(msg)
        if m is not None and not (self.s_suffix and m.re is _TTFB and not m.group("s")):
            self.value(lineno, _role(m.group("proc")), float(m.group(2)), ts)
        elif (m := _AGG.search(msg)) is not None:
            if self.current.agg is None:
                self.current.agg = self.check(lineno, "text aggregation time", float(m.group(2)))
        elif _is_cut(msg):
            self.flag(lineno, _cut_field(msg), msg[:120], "unparseable metrics line (cut short?)")

    def between_turns(self, lineno: int, ts: float, msg: str) -> None:
        """A service TTFB outside an open turn. An STT TTFB may land before the VAD stop line (the
        transcript came within ``stop_secs``): kept for the next turn. An LLM TTFB means a turn whose
        VAD stop line is missing (or a second LLM call after the reply started): flagged turn."""
        m = _TTFB.search(msg)
        if m is None:
            return
        role = _role(m.group("proc"))
        if role == "stt":
            self.pending_stt = (float(m.group(2)), ts, lineno)
        elif role == "llm":
            self.start(lineno, None)
            self.flag(lineno, "User stopped speaking", None,
                      "LLM TTFB with no 'User stopped speaking' line since the last reply (VAD line missing?)")
            self.value(lineno, role, float(m.group(2)), ts)

    def adopt_pending_stt(self) -> None:
        pending, self.pending_stt = self.pending_stt, None
        cur = self.current
        if pending is not None and cur is not None and cur.speech_end is not None and pending[1] >= cur.speech_end:
            cur.values["stt"] = pending

    def breakdown_message(self, lineno: int, msg: str) -> None:
        if (m := _BD_TURN.search(msg)) is not None:
            self.start(lineno, None)
            assert self.current is not None
            ms = self.current.builder.seconds(float(m.group(1)), line=lineno, fld="User turn")
            self.current.builder.set_stage("endpointing", ms)
        elif self.current is None:
            return
        elif (m := _BD_TTFB.search(msg)) is not None:
            self.value(lineno, _role(m.group("proc")), float(m.group(2)), None)
        elif (m := _BD_AGG.search(msg)) is not None and self.current.agg is None:
            self.current.agg = self.check(lineno, "text aggregation", float(m.group(2)))

    def check(self, lineno: int, fld: str, seconds: float) -> float | None:
        assert self.current is not None
        ms = self.current.builder.seconds(seconds, line=lineno, fld=fld)
        return None if ms is None else ms / 1000.0

    def value(self, lineno: int, role: str | None, seconds: float, ts: float | None) -> None:
        assert self.current is not None
        if role is None or role in self.current.values:
            return
        fld = f"{role.upper()} TTFB"
        checked = self.check(lineno, fld, seconds)
        if checked is not None:
            self.current.values[role] = (checked, ts, lineno)

    def finish(self, turn: _Turn) -> None:
        b = turn.builder
        vals = turn.values
        if "stt" in vals:
            b.set_stage("asr", vals["stt"][0] * 1000.0)
        llm, tts = vals.get("llm"), vals.get("tts")
        if llm is not None:
            b.set_stage("llm_ttft", llm[0] * 1000.0)
            if turn.speech_end is not None and llm[1] is not None:
                commit = round((llm[1] - llm[0] - turn.speech_end) * 1000.0, 3)
                b.set_stage("endpointing", b.ms(commit, line=llm[2], fld="LLM TTFB (request start)"))
        if turn.agg is not None:
            b.set_stage("first_phrase", turn.agg * 1000.0)
        elif llm is not None and tts is not None and llm[1] is not None and tts[1] is not None:
            b.set_stage("first_phrase", max(round((tts[1] - tts[0] - llm[1]) * 1000.0, 3), 0.0))
        if tts is not None:
            b.set_stage("tts_ttfb", tts[0] * 1000.0)
        if turn.silence is not None:
            b.set_stage("leading_silence", b.ms(turn.silence[0] * 1000.0, line=turn.silence[1], fld="TTFA"))
        needed = {
            "llm_ttft": ("LLM TTFB", "LLM TTFB line"),
            "tts_ttfb": ("TTS TTFB", "TTS TTFB line"),
        }
        if self.breakdown:  # from the log, endpointing comes with the LLM TTFB line's time
            needed["endpointing"] = ("User turn", "User turn event")
        b.require(needed)
        total = None
        if tts is not None and tts[1] is not None and turn.speech_end is not None and b.stages_ms.keys() >= {
            "endpointing", "llm_ttft", "tts_ttfb"
        }:
            total = round((tts[1] - turn.speech_end) * 1000.0, 3)
        b.close_with_residual(total, tts[2] if tts else b.line, "TTS TTFB (line time)",
                              required=(*needed, "endpointing"))

    def table(self) -> TraceTable:
        if self.current is not None and (self.current.values or self.current.builder.anomalies or self.breakdown):
            self.done.append(self.current)
        turns = []
        anomalies = list(self.loose)
        for index, turn in enumerate(self.done):
            self.finish(turn)
            turns.append(turn.builder.build(index))
            anomalies.extend(turn.builder.anomalies)
        anomalies.sort(key=lambda a: a.line)
        if self.breakdown:
            anchor = "Pipecat latency breakdown: actual end of speech (VAD stop minus stop_secs), as Pipecat computes"
            return TraceTable(self.origin, "pipecat", anchor, TOTAL_BREAKDOWN, tuple(turns), tuple(anomalies))
        anchor = f"Pipecat: VAD 'User stopped speaking' time minus stop_secs = {self.stop_secs:g} s"
        return TraceTable(self.origin, "pipecat", anchor, TOTAL, tuple(turns), tuple(anomalies))


def read_pipecat(text: str, origin: str = "<trace>", options: ReadOptions | None = None) -> TraceTable:
    """Rebuild per-turn stages from a Pipecat debug log.

    :param text: the log's content (loguru lines; timestamps taken as one clock, time zone irrelevant).
    :param origin: the file name for anomalies and reports.
    :param options: ``stop_secs`` (the VAD's, s; the actual end of speech is the VAD stop line's
        time minus this) and ``absurd_ms`` (a stage above it is flagged).
    :returns: a :class:`TraceTable` in ms. A turn starts at each VAD stop (or ``User turn`` breakdown
        event when the log has no VAD lines). A VAD stop before any LLM TTFB restarts the turn (the
        user spoke again). Flagged: broken metrics lines, negative or absurd values, an LLM request
        before the end of speech, turns without an LLM or TTS TTFB.
    """
    lines = [_ANSI.sub("", x) for x in text.splitlines()]
    breakdown = not any(_VAD_STOP.search(x) and "LATENCY" not in x for x in lines) and any(
        _BD_TURN.search(x) for x in lines
    )
    options = options or ReadOptions()
    reader = _Reader(origin, options.stop_secs_or_default, options.absurd_ms, breakdown)
    reader.s_suffix = any(re.search(r"#\d+ TTFB: [\d.]+s$", x.rstrip()) for x in lines)
    for lineno, raw in enumerate(lines, start=1):
        if raw.strip():
            reader.line(lineno, raw.rstrip())
    return reader.table()
