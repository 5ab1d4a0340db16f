"""Pipecat metrics from its debug log (loguru lines), rebuilt into turns on the common time axis.

Which lines are read, per Pipecat version, is data: :data:`~voicebudget.traces._pipecat_rules.LINE_RULES`
(message patterns with their source), :data:`~voicebudget.traces._pipecat_rules.LOG_PREFIXES` (the
loguru layouts detected; ``--log-format`` gives another) and
:data:`~voicebudget.traces._pipecat_rules.RULE_SETS` (which line anchors ``t = 0``). In short:

- ``t = 0`` is the VAD stop minus the VAD's ``stop_secs`` (as Pipecat's own ``UserBotLatencyObserver``
  computes it). ``stop_secs`` comes from ``--stop-secs``, else from the log's ``Setting VAD params to:
  ... stop_secs=...`` line, else 0.2 s (Pipecat's default). The VAD stop is ``User stopped speaking``
  (transport, 0.0.x), ``VADProcessor#N: User stopped speaking`` or, with Pipecat 1.x's speech-timeout
  strategy, ``<Strategy>#N VADUserStoppedSpeakingFrame received``.
- In Pipecat 1.x, ``LLMUserAggregator#N: User stopped speaking (strategy: ...)`` is the turn's *release*
  (after a speech timeout, smart turn, external turn detection): it lies inside the endpointing stage,
  it is not the anchor. A release with no VAD stop line before it leaves ``t = 0`` unknown: the turn
  is flagged and has no total (never a total that silently leaves the endpointing wait out).
- With a smart-turn analyzer (0.0.70+, and 1.x's default stop strategy) the VAD stop is not logged:
  ``End of Turn complete due to stop_secs. Silence in ms: X`` gives the end of speech exactly (X ms
  before it), else the analyzer's last ``End of Turn result:`` before the release (the analysis runs at
  each VAD stop) minus ``stop_secs``; in 0.0.x the transport's ``User stopped speaking`` that follows is
  the release.
- Per turn: ``endpointing`` = LLM request start (LLM TTFB line time - TTFB) - end of speech;
  ``llm_ttft`` = the LLM's TTFB, or its TTFAT (time to first *answer* token, logged since Aug 2026 as
  ``TTFAT: X s (Y s thinking)``) split into the parts ``ttfb`` and ``thinking``; ``first_phrase`` =
  ``text aggregation time``; ``tts_ttfb``; ``leading_silence`` from ``TTFA``; the total is the TTS TTFB
  line's time - end of speech (server side).
- Pipecat's own user-to-bot latency (``UserBotLatencyLogObserver``, 0.0.70-0.0.108; the breakdown's
  ``TOTAL`` line in 1.x) is read into :attr:`TraceTurn.framework_total_ms` and compared with the rebuilt
  total by :mod:`._pipecat_total`: the line's own time is Pipecat's end, so a larger figure is split into
  an earlier start (``endpointing``) and a later end (``output``, unless the log shows the bot's audio),
  and a smaller one is an anomaly on its turn naming the moment Pipecat measured from.
- A turn whose LLM context ends with a non-user message (a user-idle re-prompt: the bot speaks with no
  user transcript) is flagged and left out.
- Without any VAD line, the latency-breakdown events (``User turn: 0.825s``, ``<Service>#N: TTFB
  0.289s``, ...) are read instead, or Pipecat 1.9+'s contribution lines (``0.200s  endpointing wait
  [config: VAD stop_secs]`` ... ``1.020s  TOTAL``), each a stage of Pipecat's own timeline.
- A tool turn is a sequence of LLM passes and tool executions: the first pass's TTFB line, its
  ``FunctionCallsStartedFrame``/``Calling function`` line (the call dispatched), the tools until the
  next pass's request (``FunctionCallResultFrame`` on the way), the next pass's TTFB: ``llm_ttft``,
  ``llm_tool_call`` (first token -> call), ``tool`` (parts by function name), ``llm_2_ttft``.
- The turn ends at the bot's first audio when the log shows it (the output transport's ``Bot started
  speaking``, a ``BotStartedSpeakingFrame`` of the ``DebugLogObserver``) more than
  :data:`OUTPUT_HOP_MS` after the TTS first byte: the gap is the ``output`` stage.
"""

from __future__ import annotations

import functools
import math
import re
import sys
from collections import deque
from collections.abc import Callable, Iterable

from voicebudget.traces._options import DEFAULT_STOP_SECS, ReadOptions
from voicebudget.traces._pipecat_lines import (
    _KEYWORDS,
    _METRIC_FUNC,
    _TS_START,
    _cut_field,
    _cut_rest,
    _Detected,
    _is_cut,
    _last_role,
    _role,
    _timestamp,
    _vad_cut,
)
from voicebudget.traces._pipecat_pass import LogPass, Run, runs_of_blocks, runs_of_lines, runs_of_text
from voicebudget.traces._pipecat_rules import (
    LOG_PREFIXES,
    RULE_SETS,
    Hit,
    LineKind,
    LineRule,
    LogPrefix,
    loguru_prefix,
)
from voicebudget.traces._pipecat_turn import OUTPUT_HOP_MS, PipecatTurn, TurnFinisher
from voicebudget.traces._table import Anomaly, TraceTable, TurnBuilder, added

__all__ = [
    "DEFAULT_STOP_SECS",
    "OUTPUT_HOP_MS",
    "looks_like_pipecat",
    "read_pipecat",
    "read_pipecat_lines",
    "read_pipecat_runs",
]

TOTAL = (
    "the bot's first audio ('Bot started speaking', when over 20 ms after the TTS first byte), else the TTS first "
    "audio byte - actual end of speech (server side, from log timestamps; Pipecat's own larger total when it logs one)"
)
TOTAL_BREAKDOWN = (
    "Pipecat's latency breakdown: its TOTAL line (1.9+ contribution lines, to BotStartedSpeakingFrame), else user "
    "turn + LLM TTFB + text aggregation + TTS TTFB"
)

_DETECT = re.compile(
    r"#\d+\]? TTF(?:B|AT)\b|\bUser stopped speaking\b|VADUserStoppedSpeakingFrame received|\bUser turn: \d"
    r"|\d\.\d{3}s  (?:TOTAL\r?$|endpointing wait |LLM inference )",
    re.MULTILINE,
)


def looks_like_pipecat(text: str) -> bool:
    """True when the text has Pipecat metrics lines (a service TTFB/TTFAT, a VAD stop, a breakdown)."""
    return _DETECT.search(text) is not None


_TTFB_FIELDS = {role: f"{role.upper()} TTFB" for role in ("stt", "llm", "tts")}
"""A service's role (:func:`~voicebudget.traces._pipecat_lines._role`) -> its TTFB's field in flags."""

Handler = Callable[[int, float, LineRule, re.Match[str]], None]
"""What reads one kind of line: ``(line number, time in s, rule, match)``."""


class _Reader:
    def __init__(self, origin: str, options: ReadOptions, breakdown: bool) -> None:
        self.origin, self.options, self.breakdown = origin, options, breakdown
        self.absurd_ms = options.absurd_ms
        self.log_stop_secs: float | None = None
        self.current: PipecatTurn | None = None
        self.s_suffix = False  # the log writes its TTFBs with an "s": those without one are not read
        self.unsuffixed = False  # a TTFB without its "s" was read (before the log showed one with it)
        self.pending_stt: tuple[float, float, int] | None = None
        self.done: deque[PipecatTurn] = deque()  # the turns kept and not built yet, in order
        self.kept = 0  # turns kept so far (built or not): the next one's number - 1
        # stop_secs is known once the log is read: set then (only a turn with Pipecat's own total uses it)
        self.loose: list[Anomaly] = []
        self.finisher = TurnFinisher(origin, breakdown, DEFAULT_STOP_SECS, self.loose)

    @property
    def stop_secs(self) -> float:
        if self.options.stop_secs is not None:
            return self.options.stop_secs
        return DEFAULT_STOP_SECS if self.log_stop_secs is None else self.log_stop_secs

    def start(self, lineno: int, speech_end: float | None) -> None:
        cur = self.current
        if cur is not None and (cur.closed or "llm" in cur.values or cur.builder.anomalies or self.breakdown):
            self.keep(cur)
        builder = TurnBuilder(f"turn-{self.kept + 1}", lineno, self.origin, self.absurd_ms, reader="pipecat")
        self.current = PipecatTurn(builder, speech_end)

    def keep(self, turn: PipecatTurn) -> None:
        """A turn ended (the next began): kept, and the turns before it built as soon as no line can change
        them (only the open turn and the last kept one take a line), in order, unless one has Pipecat's own
        total (its note names ``stop_secs``, known once the log is read): a built row holds less than its
        working state (memory, and less for the garbage collector to walk)."""
        self.done.append(turn)
        self.kept += 1
        done = self.done
        while len(done) > 1 and done[0].reported is None:
            self.finisher.add(done.popleft())

    def flag(self, lineno: int, fld: str, value: object, reason: str) -> None:
        if self.current is not None and not self.current.closed:
            self.current.builder.flag(lineno, fld, value, reason)
        else:
            self.loose.append(Anomaly(lineno, fld, value, reason, self.origin))

    def line(
        self, lineno: int, raw: str, parts: tuple[str, str] | None, hit: Hit | None, ts: float | None = None
    ) -> None:
        """One non-blank log line (colours and trailing blanks stripped): ``parts`` its timestamp and
        message (None: no known layout), ``hit`` the rule its message (or, without a layout, the line)
        matches in this reader's mode; ``ts`` the timestamp read already (s), if it was."""
        if parts is None:
            self.line_without_layout(lineno, raw, hit)
            return
        ts_text, msg = parts
        if ts is None:
            try:
                ts = _timestamp(ts_text)
            except ValueError:
                self.flag(lineno, "timestamp", ts_text, "invalid date or time")
                return
        if self.breakdown:
            self.breakdown_message(lineno, msg, hit)
        elif hit is None:
            self.unmatched(lineno, ts, msg, raw)
        else:
            self.message(lineno, ts, msg, hit)

    def line_without_layout(self, lineno: int, raw: str, hit: Hit | None) -> None:
        """A line in no known layout: a metrics line whose prefix is cut is flagged; in breakdown mode, a
        breakdown line is read as it is."""
        cut = _TS_START.match(raw) or any(k in raw for k in _KEYWORDS)
        if cut and not (self.breakdown and hit is not None):
            snippet = raw if len(raw) <= 120 else raw[:117] + "..."
            self.flag(lineno, "", snippet, "unparseable log line (cut short?)")
            return
        if self.breakdown:
            self.breakdown_message(lineno, raw, hit)

    def message(self, lineno: int, ts: float, msg: str, hit: Hit) -> None:
        """A message a rule reads (a log with VAD lines): the kinds that stand on their own go to their
        handler; a turn's values go to the open turn, or are looked at as between turns."""
        rule, m = hit
        own = self.handlers.get(rule.kind)
        if own is not None:
            own(lineno, ts, rule, m)
        elif self.current is None:
            self.between_turns(lineno, ts, rule.kind, m)
        elif rule.kind == "ttfa":
            if self.current.silence is None:
                self.current.silence = (float(m.group(3)), lineno)
        elif rule.kind == "llm_context":
            self.llm_context(lineno, msg)
        elif not self.current.closed:
            self.turn_values[rule.kind](lineno, ts, m)
        elif not (rule.kind == "ttfb" and self.tool_reply(m)):  # (a tool reply after the speech began: off the path)
            self.between_turns(lineno, ts, rule.kind, m)

    def tool_reply(self, m: re.Match[str]) -> bool:
        """An LLM's TTFB after a tool call of the turn."""
        assert self.current is not None
        return self.current.after_tool and _role(m.group("proc")) == "llm"

    def llm_context(self, lineno: int, msg: str) -> None:
        """The LLM's context printed before its first call: whose message it ends with."""
        cur = self.current
        assert cur is not None
        if cur.context_role is None and "llm" not in cur.values:
            role = _last_role(msg)
            if role is not None:
                cur.context_role = (role, lineno)

    @functools.cached_property
    def turn_values(self) -> dict[str, Callable[[int, float, re.Match[str]], None]]:
        """The kinds that are values of the open turn -> their handler ``(line, time, match)``."""
        return {"ttfb": self.ttfb, "ttfat": self.ttfat, "text_aggregation": self.text_aggregation}

    def ttfat(self, lineno: int, ts: float, m: re.Match[str]) -> None:
        assert self.current is not None
        if self.current.ttfat is None and _role(m.group("proc")) == "llm":
            self.current.ttfat = (float(m.group(2)), float(m.group(3)), ts, lineno)

    def text_aggregation(self, lineno: int, ts: float, m: re.Match[str]) -> None:
        assert self.current is not None
        if self.current.agg is None:
            self.current.agg = self.check(lineno, "text aggregation time", float(m.group(2)))

    @functools.cached_property
    def handlers(self) -> dict[LineKind, Handler]:
        """The kinds that do not need an open turn -> their handler ``(line, time, rule, match)``."""
        return {
            "vad_params": self.vad_params,
            "smart_turn_result": self.smart_turn,
            "smart_turn_silence": self.smart_turn,
            "vad_stop": self.vad_stop,
            "turn_release": self.released,
            "latency_total": self.reported,
            "bot_started": self.bot_started,
            "tool_started": self.tool_line,
            "tool_call": self.tool_line,
            "tool_result": self.tool_line,
            "tool_event": self.tool_line,
        }

    def vad_stop(self, lineno: int, ts: float, rule: LineRule, m: re.Match[str]) -> None:
        """A VAD stop: a new turn from the end of speech (``stop_secs`` before the line), unless it is
        Pipecat 0.0.x's release line of a turn its smart-turn analyzer opened."""
        cur = self.current
        if (
            cur is not None
            and cur.rule_set == "pipecat-0.0.x-smart-turn"
            and rule.rule_set == "pipecat-0.0.x"
            and "llm" not in cur.values
            and cur.release is None
        ):
            cur.release = "smart turn analyzer"  # 0.0.x logs this line when the analyzer ends the turn
            cur.release_at = (ts, lineno)
            return
        self.start(lineno, ts - self.stop_secs)
        assert self.current is not None
        self.current.rule_set = rule.rule_set
        self.current.anchor_at = (ts, lineno)
        self.adopt_pending_stt()

    def ttfb(self, lineno: int, ts: float, m: re.Match[str]) -> None:
        """A service's TTFB in the open turn (an LLM's after a tool call: the next pass). A TTFB written
        without its ``s`` in a log whose TTFBs have it is not Pipecat's metric: skipped."""
        cur = self.current
        assert cur is not None
        if "s" in m.re.groupindex and not m.group("s"):
            if self.s_suffix:
                return
            self.unsuffixed = True
        proc = m.group("proc")
        role = _role(proc)
        if role == "llm":
            if not cur.llm_processor:
                cur.llm_processor = sys.intern(proc)  # one copy, not one a turn
            if cur.after_tool and "llm" in cur.values:
                self.next_pass(lineno, float(m.group(2)), ts)
                return
        self.value(lineno, role, float(m.group(2)), ts)

    def bot_started(self, lineno: int, ts: float, rule: LineRule, m: re.Match[str]) -> None:
        """The output transport sent the bot's first audio: the end of the turn that has its TTS, or of
        a turn whose LLM made the audio itself (a speech-to-speech model: no TTS line)."""
        cur = self.current
        if cur is not None and (cur.closed or "llm" in cur.values) and cur.bot_started is None:
            cur.bot_started = (ts, lineno)

    def tool_line(self, lineno: int, ts: float, rule: LineRule, m: re.Match[str]) -> None:
        """A function call's moment: dispatched (``FunctionCallsStartedFrame``, ``Calling function``,
        FunctionCallObserver's started/in progress), or done (``FunctionCallResultFrame``, its
        completed/failed/timed out/cancelled)."""
        cur = self.current
        if cur is None or "llm" not in cur.values:
            return
        kind: str = rule.kind
        if kind == "tool_event":
            event = m.group("event")
            kind = "tool_call" if event in ("started", "in_progress") else "tool_result"
        name = m.groupdict().get("name") or ""
        if kind == "tool_started":
            names = re.findall(r"'([^':]{1,200}):", m.group("calls"))
            name = names[0] if names else ""
        cur.calls = added(cur.calls, (kind, name, ts, lineno))
        cur.after_tool = True

    def next_pass(self, lineno: int, seconds: float, ts: float) -> None:
        """The LLM TTFB of the pass after a tool call (the tool's result sent back to the LLM)."""
        assert self.current is not None
        checked = self.check(lineno, "LLM TTFB", seconds)
        if checked is not None:
            self.current.passes = added(self.current.passes, (checked, ts, lineno))
            self.current.values["llm"] = (checked, ts, lineno)  # the speaking pass, so far
        self.current.after_tool = False

    def unmatched(self, lineno: int, ts: float, msg: str, raw: str) -> None:
        """A message no rule reads: flagged when it is a metrics or VAD line cut short."""
        if "not report" in msg:  # Pipecat itself declined to report the value (stale start, no onset)
            return
        rest = _cut_rest(msg)  # (None: no processor's name, or one not followed by a template's start)
        if _vad_cut(rest):
            self.start(lineno, ts - self.stop_secs)
            self.flag(lineno, "User stopped speaking", msg[:120], "unparseable VAD line (cut short?)")
        elif _METRIC_FUNC.search(raw) or (rest is not None and self.current is not None and _is_cut(rest)):
            self.flag(lineno, _cut_field(msg), msg[:120], "unparseable metrics line (cut short?)")

    def vad_params(self, lineno: int, ts: float, rule: LineRule, m: re.Match[str]) -> None:
        value = float(m.group(1))
        if not (math.isfinite(value) and 0.0 <= value <= 60.0):
            self.loose.append(
                Anomaly(lineno, "stop_secs", value, "VAD stop_secs outside 0-60 s; not used", self.origin)
            )
            return
        self.log_stop_secs = value

    def smart_turn(self, lineno: int, ts: float, rule: LineRule, m: re.Match[str]) -> None:
        """Pipecat 0.0.x with a smart-turn analyzer: the VAD stop is not logged; the analyzer's result comes
        right after it (the analysis runs at each VAD stop), its silence timeout says how long ago speech
        ended. A second result before the turn's release is a later VAD stop: the user paused, went on, and
        stopped again, so the turn is anchored there (as a second VAD stop line restarts a turn)."""
        cur = self.current
        if rule.kind == "smart_turn_silence":
            self.smart_turn_silence(lineno, ts, float(m.group(1)))
        elif cur is None or not self.smart_turn_open:
            self.start(lineno, ts - self.stop_secs)
            assert self.current is not None
            self.current.rule_set = "pipecat-0.0.x-smart-turn"
            self.current.anchor_at = (ts, lineno)
            self.adopt_pending_stt()
        else:
            cur.speech_end, cur.anchor_at = ts - self.stop_secs, (ts, lineno)

    @property
    def smart_turn_open(self) -> bool:
        """The open turn is a smart-turn analyzer's, not yet released nor answered."""
        cur = self.current
        return (
            cur is not None
            and cur.rule_set == "pipecat-0.0.x-smart-turn"
            and "llm" not in cur.values
            and cur.release is None
        )

    def smart_turn_silence(self, lineno: int, ts: float, silence_ms: float) -> None:
        """``End of Turn complete due to stop_secs. Silence in ms: X``: speech ended X ms before the line."""
        if not self.smart_turn_open:
            self.start(lineno, None)
            assert self.current is not None
            self.current.rule_set = "pipecat-0.0.x-smart-turn"
        cur = self.current
        assert cur is not None
        if math.isfinite(silence_ms) and 0.0 <= silence_ms <= self.absurd_ms:
            cur.speech_end = ts - silence_ms / 1000.0
            cur.anchor_at = (ts, lineno)
        else:
            cur.builder.flag(lineno, "Silence in ms", silence_ms, "smart-turn silence out of range")

    def released(self, lineno: int, ts: float, rule: LineRule, m: re.Match[str]) -> None:
        strategy = m.group("strategy")
        cur = self.current
        if cur is None or cur.closed or "llm" in cur.values or cur.release is not None:
            self.start(lineno, None)
            cur = self.current
            assert cur is not None
            cur.release, cur.rule_set = strategy, "pipecat-1.x"
            cur.builder.flag(
                lineno,
                "VAD stop",
                None,
                f"turn released by {strategy} with no VAD stop line before it: the end of speech "
                "(t = 0) is unknown, so the endpointing wait cannot be measured (log the VAD with a "
                "VADProcessor or use the speech-timeout strategy, which logs its VAD stop)",
            )
            return
        cur.release, cur.rule_set = strategy, "pipecat-1.x"
        cur.release_at = (ts, lineno)

    def reported(self, lineno: int, ts: float, rule: LineRule, m: re.Match[str]) -> None:
        """Pipecat's own user-to-bot latency: the open turn's once it is closed, else the last turn's."""
        seconds = float(m.group(1))
        target = (
            self.current if self.current is not None and self.current.closed else (self.done[-1] if self.done else None)
        )
        if target is not None and target.reported is None:
            target.reported = (seconds, lineno, ts)

    def between_turns(self, lineno: int, ts: float, kind: str, m: re.Match[str]) -> None:
        """A service TTFB outside an open turn. An STT TTFB may land before the VAD stop line (the
        transcript came within ``stop_secs``): kept for the next turn. An LLM TTFB means a turn whose
        VAD stop line is missing (or a second LLM call after the reply started): flagged turn."""
        if kind != "ttfb":
            return
        role = _role(m.group("proc"))
        if role == "stt":
            self.pending_stt = (float(m.group(2)), ts, lineno)
        elif role == "llm":
            self.start(lineno, None)
            self.flag(
                lineno,
                "User stopped speaking",
                None,
                "LLM TTFB with no 'User stopped speaking' line since the last reply (VAD line missing?)",
            )
            self.value(lineno, role, float(m.group(2)), ts)

    def adopt_pending_stt(self) -> None:
        pending, self.pending_stt = self.pending_stt, None
        cur = self.current
        if pending is not None and cur is not None and cur.speech_end is not None and pending[1] >= cur.speech_end:
            cur.values["stt"] = pending

    def breakdown_message(self, lineno: int, msg: str, hit: Hit | None) -> None:
        """A latency-breakdown line (a log with no VAD lines), to its kind's handler."""
        if hit is None:
            return
        rule, m = hit
        handler = self.breakdown_handlers.get(rule.kind)
        if handler is not None:
            handler(lineno, msg, m)

    @functools.cached_property
    def breakdown_handlers(self) -> dict[str, Callable[[int, str, re.Match[str]], None]]:
        """The kinds read in breakdown mode -> their handler ``(line, message, match)``."""
        return {
            "breakdown_contribution": self.contribution,
            "latency_total": self.breakdown_total,
            "breakdown_user_turn": self.user_turn,
            "breakdown_ttfb": self.breakdown_ttfb,
            "breakdown_aggregation": self.breakdown_aggregation,
        }

    def contribution(self, lineno: int, msg: str, m: re.Match[str]) -> None:
        """A Pipecat 1.9+ contribution line (``0.200s  endpointing wait ...``): a stage of the open turn,
        or the first of a new one."""
        cur = self.current
        if cur is None or cur.reported is not None or (not cur.contributions and cur.builder.stages_ms):
            if m.group("label") == "first request":  # a greeting's wait from the client connecting
                return
            self.start(lineno, None)
            cur = self.current
        assert cur is not None
        cur.contributions = added(cur.contributions, (m.group("label"), m.group("owner"), float(m.group(1)), lineno))

    def breakdown_total(self, lineno: int, msg: str, m: re.Match[str]) -> None:
        if self.current is not None and self.current.reported is None and "from client" not in msg:
            self.current.reported = (float(m.group(1)), lineno, None)

    def user_turn(self, lineno: int, msg: str, m: re.Match[str]) -> None:
        """``User turn: 0.825s``: a new turn, its endpointing."""
        self.start(lineno, None)
        assert self.current is not None
        ms = self.current.builder.seconds(float(m.group(1)), line=lineno, fld="User turn")
        self.current.builder.set_stage("endpointing", ms)

    def breakdown_ttfb(self, lineno: int, msg: str, m: re.Match[str]) -> None:
        if self.current is not None:
            self.value(lineno, _role(m.group("proc")), float(m.group(2)), None)

    def breakdown_aggregation(self, lineno: int, msg: str, m: re.Match[str]) -> None:
        if self.current is not None and self.current.agg is None:
            self.current.agg = self.check(lineno, "text aggregation", float(m.group(2)))

    def check(self, lineno: int, fld: str, seconds: float) -> float | None:
        """A value in seconds, checked (:meth:`TurnBuilder.seconds`): as read, None when not finite."""
        assert self.current is not None
        ms = seconds * 1000.0
        if 0.0 <= ms <= self.absurd_ms and ms < math.inf:  # (most values: nothing to flag, no call)
            return ms / 1000.0
        checked = self.current.builder.seconds(seconds, line=lineno, fld=fld)
        return None if checked is None else checked / 1000.0

    def value(self, lineno: int, role: str | None, seconds: float, ts: float | None) -> None:
        cur = self.current
        assert cur is not None
        if role is None or role in cur.values:
            return
        checked = self.check(lineno, _TTFB_FIELDS[role], seconds)
        if checked is not None:
            cur.values[role] = read = (checked, ts, lineno)
            if role == "llm":
                cur.passes = added(cur.passes, read)

    def table(self) -> TraceTable:
        if self.current is not None and (self.current.values or self.current.builder.anomalies or self.breakdown):
            self.done.append(self.current)
        self.finisher.stop_secs = self.stop_secs
        turns, anomalies = self.finisher.finish_all(self.done)
        if self.breakdown:
            return TraceTable(
                self.origin,
                "pipecat",
                RULE_SETS["pipecat-breakdown"].anchor,
                TOTAL_BREAKDOWN,
                tuple(turns),
                tuple(anomalies),
            )
        source = (
            "--stop-secs"
            if self.options.stop_secs is not None
            else "the log's VAD params"
            if self.log_stop_secs is not None
            else "Pipecat's default"
        )
        anchor = (
            f"Pipecat: the VAD stop line's time minus stop_secs = {self.stop_secs:g} s ({source}); "
            "in 1.x the turn release line is endpointing, not the anchor"
        )
        return TraceTable(self.origin, "pipecat", anchor, TOTAL, tuple(turns), tuple(anomalies))


def read_pipecat(text: str, origin: str = "<trace>", options: ReadOptions | None = None) -> TraceTable:
    """Rebuild per-turn stages from a Pipecat debug log.

    :param text: the log's content (loguru lines in one of
        :data:`~voicebudget.traces._pipecat_rules.LOG_PREFIXES`, or ``options.log_format``; timestamps
        taken as one clock, time zone ignored).
    :param origin: the file name for anomalies and reports.
    :param options: ``stop_secs`` (the VAD's, s; default: the log's VAD params, else 0.2),
        ``absurd_ms``, ``log_format`` (a loguru format string).
    :returns: a :class:`TraceTable` in ms. A turn starts at each VAD stop (or ``User turn`` breakdown
        event when the log has no VAD lines). A VAD stop before any LLM TTFB restarts the turn (the
        user spoke again). Flagged: broken metrics lines and invalid dates (with their line), negative
        or absurd values, an LLM request before the end of speech, turns without an LLM or TTS TTFB,
        a turn release with no VAD stop before it, idle re-prompts.
    :raises ScenarioError: ``options.log_format`` has no ``{time}`` or no ``{message}`` field.
    """
    return _read(lambda: runs_of_text(text), origin, options)


def read_pipecat_lines(
    open_lines: Callable[[], Iterable[tuple[int, str]]],
    origin: str = "<trace>",
    options: ReadOptions | None = None,
) -> TraceTable:
    """:func:`read_pipecat` on a log given as lines (a log shipper's layer stripped from each), keeping a run of
    lines at a time in memory (:func:`read_pipecat_runs`).

    :param open_lines: gives the log's ``(line number from 1, line)`` pairs afresh on each call.
    :raises ScenarioError: as :func:`read_pipecat`.
    """
    return _read(lambda: runs_of_lines(open_lines()), origin, options)


def read_pipecat_runs(
    open_runs: Callable[[], Iterable[tuple[int, str]]],
    origin: str = "<trace>",
    options: ReadOptions | None = None,
) -> TraceTable:
    """:func:`read_pipecat` on a log given as runs of whole lines, one run at a time in memory.

    One pass: until the log's first VAD line each line is split into timestamp and message and classified
    in both modes (:func:`~voicebudget.traces._pipecat_rules.classify_both`: a second reader follows its
    latency-breakdown lines, in case it has no VAD line at all); after it, the lines that change nothing
    are stepped over by one compiled pattern (:mod:`._pipecat_scan`) and each other line is read once. A
    turn is built into its row as soon as no later line can change it. A log that writes a TTFB without
    its ``s`` before one with it (no Pipecat version does) is read again knowing that.

    :param open_runs: gives the log's ``(number of the first line, text of whole lines each ended by
        "\\n")`` afresh on each call (:func:`voicebudget._io.iter_blocks`).
    :raises ScenarioError: as :func:`read_pipecat`.
    """
    return _read(lambda: runs_of_blocks(open_runs()), origin, options)


def _read(
    open_runs: Callable[[], Iterable[Run]], origin: str, options: ReadOptions | None, *, fast: bool = True
) -> TraceTable:
    """The log's table (:func:`read_pipecat_runs`); ``fast=False`` reads every line in full (the reference of
    :class:`~voicebudget.traces._pipecat_pass.LogPass`'s shortcuts)."""
    from voicebudget._errors import ScenarioError, param

    options = options or ReadOptions()
    prefixes = LOG_PREFIXES
    if options.log_format is not None:
        try:
            prefixes = (loguru_prefix(options.log_format),)
        except ValueError as exc:
            raise ScenarioError(f"{param('log_format')}: {exc}", origin=origin) from None
    detected, reader = _read_once(open_runs, origin, options, prefixes, s_suffix=False, fast=fast)
    if detected.s_suffix and reader.unsuffixed:
        detected, reader = _read_once(open_runs, origin, options, prefixes, s_suffix=True, fast=fast)
    return reader.table()


def _read_once(
    open_runs: Callable[[], Iterable[Run]],
    origin: str,
    options: ReadOptions,
    prefixes: tuple[LogPrefix, ...],
    *,
    s_suffix: bool,
    fast: bool,
) -> tuple[_Detected, _Reader]:
    """One pass over the log (:class:`~voicebudget.traces._pipecat_pass.LogPass`): what it showed, and the
    reader of the mode it turned out to need."""
    detected = _Detected(s_suffix=s_suffix)
    reader = _Reader(origin, options, False)
    reader.s_suffix = s_suffix
    breakdown = _Reader(origin, options, True)
    vad = LogPass(prefixes, detected, reader, breakdown, fast=fast).read(open_runs())
    if not vad and detected.breakdown:  # no VAD line: its latency-breakdown lines are read
        return detected, breakdown
    return detected, reader
