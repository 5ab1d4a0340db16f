"""A Pipecat turn's working state while its log is read (:class:`PipecatTurn`), and its stages built from
it once the log is read (:class:`TurnFinisher`): endpointing, the LLM passes and tools, TTS, output, and
Pipecat's own total compared with the rebuilt one. The reading itself is :mod:`._pipecat`."""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from voicebudget.traces._pipecat_rules import CONTRIBUTIONS, RULE_SETS
from voicebudget.traces._pipecat_total import Moment, Verdict, explain_total
from voicebudget.traces._table import Anomaly, TraceTurn, TurnBuilder

_TOTAL_NEEDS = frozenset(("endpointing", "llm_ttft", "tts_ttfb"))
"""The stages a total to the TTS's first byte is rebuilt from."""

OUTPUT_HOP_MS = 20.0
"""Up to this gap between the TTS service's first audio byte and the bot's first audio (the output
transport's ``Bot started speaking``, Pipecat's own ``BotStartedSpeakingFrame`` total) is the frame's
hop through Pipecat's processors to the output transport (Pipecat's own hops measured 1.5-19.8 ms on an
idle machine, ``tests/test_pipecat.py``): the turn still ends at the TTS first byte. A longer gap is
time the listener waits (an output queue, the transport, a TTS that returns audio before it plays):
the turn ends at the bot's first audio and the gap is the ``output`` stage."""

_REALTIME = re.compile(r"Realtime|Live|S2S|SpeechToSpeech|Sonic|UltravoxS", re.IGNORECASE)
"""Pipecat's speech-to-speech services (``OpenAIRealtimeLLMService``, ``GeminiLiveLLMService``,
``AWSNovaSonicLLMService``, ...): their audio needs no TTS service."""


@dataclass(slots=True)
class PipecatTurn:
    builder: TurnBuilder
    speech_end: float | None
    values: dict[str, tuple[float, float | None, int]] = field(default_factory=dict)  # role -> (s, ts, line)
    agg: float | None = None
    silence: tuple[float, int] | None = None
    ttfat: tuple[float, float, float, int] | None = None  # (s, thinking s, ts, line)
    release: str | None = None  # the strategy that released the turn (Pipecat 1.x)
    context_role: tuple[str, int] | None = None
    reported: tuple[float, int, float | None] | None = None  # Pipecat's own user-to-bot latency: (s, line, ts)
    anchor_at: tuple[float, int] | None = None  # the line t = 0 is read from: (ts, line)
    release_at: tuple[float, int] | None = None  # the turn's release line: (ts, line)
    rule_set: str = "pipecat-0.0.x"
    # the lists below: an empty tuple (shared) until the first item (TurnBuilder's note on memory)
    passes: (
        list[tuple[float, float | None, int]] | tuple[tuple[float, float | None, int], ...]
    ) = ()  # LLM TTFBs: (s, ts, line)
    calls: (
        list[tuple[str, str, float, int]] | tuple[tuple[str, str, float, int], ...]
    ) = ()  # (event, function, ts, line)
    bot_started: tuple[float, int] | None = None
    contributions: (
        list[tuple[str, str, float, int]] | tuple[tuple[str, str, float, int], ...]
    ) = ()  # (label, owner, s, line)
    after_tool: bool = False  # a tool call since the last LLM pass: the next LLM TTFB is the next pass
    llm_processor: str = ""

    @property
    def closed(self) -> bool:
        """The turn has its end: the TTS's first byte, or the bot's audio (a speech-to-speech model)."""
        return "tts" in self.values or self.bot_started is not None


@dataclass
class TurnFinisher:
    """Builds each turn's stages once the whole log is read (the VAD's ``stop_secs`` is known then).

    :param loose: the reader's anomalies outside any turn; a comparison of totals adds to it.
    """

    origin: str
    breakdown: bool
    stop_secs: float
    loose: list[Anomaly]
    turns: list[TraceTurn] = field(default_factory=list)
    """The turns built so far, in the log's order."""
    flagged: list[Anomaly] = field(default_factory=list)
    """Their anomalies, in the same order."""

    def add(self, turn: PipecatTurn) -> None:
        """One turn finished and built, after those before it (its working state can be dropped now)."""
        self.finish(turn)
        self.turns.append(turn.builder.build(len(self.turns)))
        self.flagged.extend(turn.builder.anomalies)

    def finish_all(self, done: deque[PipecatTurn]) -> tuple[list[TraceTurn], list[Anomaly]]:
        """Every turn of ``done`` finished and built after those already added, and all the anomalies by
        line; each turn's working state is dropped once its row is built (peak memory)."""
        while done:
            self.add(done.popleft())
        anomalies = [*self.loose, *self.flagged]  # finish() adds to self.loose: the same order as all at once
        anomalies.sort(key=lambda a: a.line)
        return self.turns, anomalies

    def llm_stage(self, turn: PipecatTurn, stage: str, llm: tuple[float, float | None, int]) -> None:
        """An LLM pass's stage: its TTFAT (split into the parts TTFB and thinking) when logged right
        after its TTFB line, else the TTFB."""
        b = turn.builder
        if turn.ttfat is None or turn.ttfat[3] < llm[2] or _after_next_pass(turn.ttfat[3], turn.passes, llm):
            b.set_stage(stage, llm[0] * 1000.0)
            return
        ttfat, thinking, _, line = turn.ttfat
        ms = b.seconds(ttfat, line=line, fld="LLM TTFAT")
        think_ms = b.seconds(thinking, line=line, fld="LLM TTFAT thinking")
        if ms is not None and think_ms is not None:
            b.set_stage(stage, ms)
            b.set_part(stage, "ttfb", max(ms - think_ms, 0.0))
            b.set_part(stage, "thinking", think_ms)

    def tool_stages(self, turn: PipecatTurn) -> None:
        """A tool turn's passes: per pass that ended in a tool call, the LLM writing the call (its first
        token -> the call dispatched: ``llm_tool_call``; a later such pass's whole TTFB too) and the tools
        until the next pass's request (``tool``, each round named after the function whose result came
        last); the last pass's TTFB is ``llm_2_ttft``."""
        b, passes = turn.builder, turn.passes
        call_ms = tool_ms = 0.0
        names: dict[str, float] = {}
        for i, (cur, nxt) in enumerate(zip(passes, passes[1:], strict=False)):
            timed = _tool_round(turn.calls, i, cur, nxt)
            if timed is None:
                return
            call_ms += timed[0]
            tool_ms += timed[1]
            names[timed[2]] = names.get(timed[2], 0.0) + timed[1]
        b.set_stage("llm_tool_call", b.ms(round(call_ms, 3), line=passes[0][2], fld="FunctionCallsStartedFrame"))
        b.set_stage("tool", b.ms(round(tool_ms, 3), line=passes[-1][2], fld="LLM TTFB (request start)"))
        for name, ms in names.items():
            b.set_part("tool", name, round(ms, 3))
        self.llm_stage(turn, "llm_2_ttft", passes[-1])

    def finish(self, turn: PipecatTurn) -> None:
        b = turn.builder
        b.rules = RULE_SETS["pipecat-breakdown"].name if self.breakdown else turn.rule_set
        if turn.contributions:
            self.finish_contributions(turn)
            return
        self.flag_reprompt(turn)
        llm = turn.passes[0] if turn.passes else turn.values.get("llm")
        self.request_stages(turn, llm)
        needed = self.needed(turn, llm)
        b.require(needed)
        tts = turn.values.get("tts")
        total = self.total_without_tts(turn) if tts is None else self.total_with_tts(turn, tts)
        b.close_with_residual(
            total, tts[2] if tts else b.line, "TTS TTFB (line time)", required=(*needed, "endpointing")
        )
        if turn.reported is not None:
            self.compare(turn, b)

    def flag_reprompt(self, turn: PipecatTurn) -> None:
        """An LLM context that ends with a non-user message: an idle re-prompt, flagged and left out."""
        if turn.context_role is not None and turn.context_role[0] != "user":
            turn.builder.flag(
                turn.context_role[1],
                "LLM context",
                turn.context_role[0],
                f"idle re-prompt: the LLM was called with no user transcript (its context ends with a "
                f"'{turn.context_role[0]}' message); not a reply to the user, left out",
            )

    def request_stages(self, turn: PipecatTurn, llm: tuple[float, float | None, int] | None) -> None:
        """The stages the services' lines give: ASR, the LLM's passes, endpointing, first phrase, TTS,
        leading silence."""
        b, vals = turn.builder, turn.values
        if "stt" in vals:
            b.set_stage("asr", vals["stt"][0] * 1000.0)
        if llm is not None:
            self.llm_stage(turn, "llm_ttft", llm)
        if len(turn.passes) > 1:
            self.tool_stages(turn)
        self.endpointing(turn, llm)
        if turn.agg is not None:
            b.set_stage("first_phrase", turn.agg * 1000.0)
        if "tts" in vals:
            b.set_stage("tts_ttfb", vals["tts"][0] * 1000.0)
        if turn.silence is not None:
            b.set_stage("leading_silence", b.ms(turn.silence[0] * 1000.0, line=turn.silence[1], fld="TTFA"))

    def endpointing(self, turn: PipecatTurn, llm: tuple[float, float | None, int] | None) -> None:
        """End of speech -> the first LLM request's start (its TTFB line's time minus the TTFB)."""
        if llm is None or turn.speech_end is None or llm[1] is None:
            return
        if turn.builder.anomalies and any(a.line == llm[2] for a in turn.builder.anomalies):
            return  # a flagged TTFB is one anomaly: the request start derived from it is not flagged again
        commit = round((llm[1] - llm[0] - turn.speech_end) * 1000.0, 3)
        turn.builder.set_stage("endpointing", turn.builder.ms(commit, line=llm[2], fld="LLM TTFB (request start)"))

    def needed(self, turn: PipecatTurn, llm: tuple[float, float | None, int] | None) -> dict[str, tuple[str, str]]:
        """The stages the turn must have (stage -> what names it in a flag); a turn whose bot spoke with no
        TTS line gets its ``output`` stage here and needs no TTS TTFB."""
        needed = {
            "llm_ttft": ("LLM TTFB", "LLM TTFB line"),
            "tts_ttfb": ("TTS TTFB", "TTS TTFB line"),
        }
        if self.breakdown:  # from the log, endpointing comes with the LLM TTFB line's time
            needed["endpointing"] = ("User turn", "User turn event")
        if "tts" not in turn.values and turn.bot_started is not None and llm is not None and llm[1] is not None:
            self.audio_without_tts(turn, llm)
            needed.pop("tts_ttfb")
        return needed

    def total_without_tts(self, turn: PipecatTurn) -> float | None:
        """End of speech -> the bot's first audio, when the turn has its ``output`` stage."""
        b = turn.builder
        if "output" not in b.stages_ms or turn.speech_end is None or turn.bot_started is None:
            return None
        b.start_s, b.end_s = turn.speech_end, turn.bot_started[0]
        return round((turn.bot_started[0] - turn.speech_end) * 1000.0, 3)

    def total_with_tts(self, turn: PipecatTurn, tts: tuple[float, float | None, int]) -> float | None:
        """End of speech -> the TTS's first byte, or the bot's first audio when it came more than
        :data:`OUTPUT_HOP_MS` later (the gap is the ``output`` stage)."""
        b = turn.builder
        if tts[1] is None or turn.speech_end is None or not b.stages_ms.keys() >= _TOTAL_NEEDS:
            return None
        end = tts[1]
        if turn.bot_started is not None and (turn.bot_started[0] - tts[1]) * 1000.0 > OUTPUT_HOP_MS:
            end = turn.bot_started[0]  # the listener hears nothing until the bot starts speaking
            b.set_stage("output", round((end - tts[1]) * 1000.0, 3))
        b.start_s, b.end_s = turn.speech_end, end
        return round((end - turn.speech_end) * 1000.0, 3)

    def audio_without_tts(self, turn: PipecatTurn, llm: tuple[float, float | None, int]) -> None:
        """The bot spoke with no TTS TTFB line: a speech-to-speech model's own audio (its TTFB is the
        first audio; the rest until the bot's first audio is ``output``), or a TTS whose metrics are
        off (its time is in ``output`` and the TTS stage is unknown). The turn ends at the bot's audio."""
        b = turn.builder
        assert turn.bot_started is not None
        assert llm[1] is not None
        proc = turn.llm_processor
        if _REALTIME.search(proc):
            b.rules = RULE_SETS["pipecat-realtime"].name
        else:
            b.unknown("tts_ttfb")
            b.note(
                f"no TTS TTFB line: the bot's audio came {1000 * (turn.bot_started[0] - llm[1]):.0f} ms after the "
                "LLM's first token, the TTS's part of it unknown"
            )
        b.set_stage(
            "output",
            b.ms(
                round((turn.bot_started[0] - llm[1]) * 1000.0, 3), line=turn.bot_started[1], fld="Bot started speaking"
            ),
        )

    def finish_contributions(self, turn: PipecatTurn) -> None:
        """A turn from Pipecat 1.9+'s contribution lines: each line a stage of Pipecat's own timeline
        (:data:`~voicebudget.traces._pipecat_rules.CONTRIBUTIONS`), the TOTAL line the total."""
        b = turn.builder
        b.rules = RULE_SETS["pipecat-contributions"].name
        handlers = [i for i, c in enumerate(turn.contributions) if CONTRIBUTIONS.get(c[0]) == "tool"]
        for i, (label, owner, seconds, line) in enumerate(turn.contributions):
            stage = CONTRIBUTIONS.get(label)
            ms = b.seconds(seconds, line=line, fld=label)
            if stage is None or ms is None:
                continue
            if stage == "llm":
                stage = _llm_pass(i, handlers)
            if stage == "tool":
                name = re.sub(r" \+\d+$", "", owner) or "tool"
                b.set_part("tool", name, b.parts_ms.get("tool", {}).get(name, 0.0) + ms)
            b.stages_ms[stage] = b.stages_ms.get(stage, 0.0) + ms
        b.require(
            {
                "endpointing": ("endpointing wait", "'endpointing wait' line"),
                "llm_ttft": ("LLM inference", "'LLM inference' line"),
            }
        )
        if "tts_ttfb" not in b.stages_ms:  # a speech-to-speech model speaks without a TTS service
            b.rules = RULE_SETS["pipecat-contributions"].name + " (speech-to-speech)"
        self.contributions_total(turn)

    def contributions_total(self, turn: PipecatTurn) -> None:
        """The TOTAL line closes a turn of contribution lines: Pipecat's own total, the rest ``other``."""
        b = turn.builder
        if turn.reported is None:
            b.flag(turn.contributions[-1][3], "TOTAL", None, "contribution lines without their TOTAL line")
            return
        seconds, line, _ = turn.reported
        b.framework_total_ms = seconds * 1000.0
        total = b.seconds(seconds, line=line, fld="TOTAL")
        b.close_with_residual(total, line, "TOTAL")

    def compare(self, turn: PipecatTurn, b: TurnBuilder) -> None:
        """Pipecat's own total against the rebuilt one (:func:`~voicebudget.traces._pipecat_total.explain_total`):
        a larger one is the total, split into an earlier start and a later end, with a note; a smaller one
        beyond log rounding is an anomaly on the turn (the rebuilt total stands)."""
        assert turn.reported is not None
        seconds, line, at = turn.reported
        b.framework_total_ms = seconds * 1000.0
        if b.total_ms is None or not math.isfinite(seconds):
            return
        verdict = explain_total(
            b.id,
            seconds * 1000.0,
            line,
            at,
            b.total_ms,
            turn.speech_end,
            audio_end=_ends_at_audio(turn),
            anchor=self.anchor_text(turn),
            moments=self.moments(turn),
            hop_ms=OUTPUT_HOP_MS,
        )
        if verdict.anomaly:
            self.loose.append(Anomaly(line, "user-to-bot latency", seconds, verdict.anomaly, self.origin, b.id))
            return
        if verdict.note and not b.anomalies:
            b.note(verdict.note)
        if verdict.total_ms is not None and not b.anomalies:
            _take_total(b, verdict)

    def anchor_text(self, turn: PipecatTurn) -> str:
        """What the rebuilt ``t = 0`` of a turn is, for a note."""
        line = turn.anchor_at[1] if turn.anchor_at else turn.builder.line
        if turn.rule_set == "pipecat-0.0.x-smart-turn":
            waited = None if turn.speech_end is None or not turn.anchor_at else turn.anchor_at[0] - turn.speech_end
            if waited is not None and abs(waited - self.stop_secs) > 1e-6:
                return f"line {line}'s smart-turn silence timeout"
            return (
                f"the smart-turn analyzer's result, line {line}, minus stop_secs {self.stop_secs:g} s: late by the "
                "model's inference time, which Pipecat logs only at TRACE"
            )
        return (
            f"the VAD stop line {line} minus stop_secs {self.stop_secs:g} s; if the VAD's stop_secs is larger, give "
            "it with --stop-secs"
        )

    def moments(self, turn: PipecatTurn) -> list[Moment]:
        """The logged moments an older Pipecat measured its figure from."""
        found = []
        if turn.anchor_at is not None:
            what = (
                "the smart-turn analyzer's result, run at the VAD stop: Pipecat 0.0.98-0.0.101 measured from the VAD "
                "stop frame without subtracting stop_secs"
                if turn.rule_set == "pipecat-0.0.x-smart-turn"
                else "the VAD stop line's own time: Pipecat before 0.0.102 measured from the VAD stop without "
                "subtracting stop_secs"
            )
            found.append(Moment(turn.anchor_at[0], turn.anchor_at[1], what))
        if turn.release_at is not None:
            found.append(
                Moment(
                    turn.release_at[0],
                    turn.release_at[1],
                    "the turn's release ('User stopped speaking', UserStoppedSpeakingFrame: Pipecat before 0.0.98 "
                    "measured from it; with a turn analyzer it comes when the analyzer ends the turn, after the user "
                    "stopped)",
                )
            )
        return found


Pass = tuple[float, float | None, int]
"""An LLM pass: its TTFB (s), its TTFB line's time (s; None: not known), its line."""


def _tool_round(
    calls: Sequence[tuple[str, str, float, int]], i: int, cur: Pass, nxt: Pass
) -> tuple[float, float, str] | None:
    """Pass ``i`` (``cur``), which ended in a tool call, and the tools until the next pass (``nxt``): the LLM
    writing the call (ms: its first token -> the call dispatched, a later pass's whole TTFB too), the tools'
    round (ms: the call -> the next pass's request) and the function named, the one whose result came last;
    None when the lines do not time it."""
    moments = [c for c in calls if cur[2] < c[3] < nxt[2]]
    dispatched = [c for c in moments if c[0] in ("tool_started", "tool_call")]
    if cur[1] is None or nxt[1] is None or not dispatched:
        return None
    call_at = dispatched[0][2]
    call_ms = (call_at - cur[1]) * 1000.0 + (cur[0] * 1000.0 if i > 0 else 0.0)
    round_ms = (nxt[1] - nxt[0] - call_at) * 1000.0
    return call_ms, round_ms, _round_name(moments, dispatched)


def _round_name(moments: list[tuple[str, str, float, int]], dispatched: list[tuple[str, str, float, int]]) -> str:
    """A tool round's name: the function whose result came last, else the last one called."""
    results = [c for c in moments if c[0] == "tool_result"]
    return (results[-1] if results else dispatched[-1])[1] or "tool"


def _after_next_pass(line: int, passes: Sequence[Pass], llm: Pass) -> bool:
    """The line comes after the LLM pass that followed ``llm``."""
    later = [p for p in passes if p[2] > llm[2]]
    return bool(later) and line > later[0][2]


def _llm_pass(i: int, handlers: list[int]) -> str:
    """The stage of contribution line ``i``, an LLM's: before the first tool handler the first pass, after
    the last the reply's pass, in between a pass writing a tool call."""
    if not handlers or i < handlers[0]:
        return "llm_ttft"
    return "llm_2_ttft" if i > handlers[-1] else "llm_tool_call"


def _take_total(b: TurnBuilder, verdict: Verdict) -> None:
    """Pipecat's larger total taken: its earlier start into ``endpointing``, its later end into ``output``."""
    for stage, add in (("endpointing", verdict.endpointing_ms), ("output", verdict.output_ms)):
        if add:
            b.stages_ms[stage] = round(b.stages_ms.get(stage, 0.0) + add, 3)
    b.total_ms = verdict.total_ms
    if b.start_s is not None:
        b.start_s += verdict.shift_s
    if b.end_s is not None and verdict.output_ms:
        b.end_s += verdict.output_ms / 1000.0


def _ends_at_audio(turn: PipecatTurn) -> bool:
    """The rebuilt turn ends at the bot's first audio (not at the TTS's first byte)."""
    b = turn.builder
    return b.end_s is not None and turn.bot_started is not None and b.end_s == turn.bot_started[0]
