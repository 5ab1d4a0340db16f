"""A LiveKit pipeline turn's LLM and TTS requests (:class:`_Passes`) and the stages built from them
(:class:`TurnPaths`): the pass that speaks, a tool turn's passes and tools, preemptive generation
counted once. The reading of the lines is :mod:`._livekit`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from voicebudget.traces._livekit_rules import StaleValues
from voicebudget.traces._table import TurnBuilder

CLOCK_SLACK_S = 0.005
"""Two readings of one moment on LiveKit's clock may differ by this much (rounding, a hop in the loop)."""
LOG_ROUNDING_S = 0.01
"""``metrics.log_metrics()`` prints the delays and ``ttft`` rounded to 10 ms (``livekit/agents/metrics/utils.py``)."""


@dataclass(slots=True)
class _Request:
    """One LLM or TTS request of a turn: its first-output value as found (s), and when it ran on the
    source's clock (s; None when the line does not say)."""

    line: int
    value: Any
    start: float | None
    end: float | None


@dataclass(slots=True)
class _Passes:
    """The requests of one pipeline turn, in line order."""

    llm: list[_Request] = field(default_factory=list)
    tts: list[_Request] = field(default_factory=list)
    logged: bool = False  # read from log_metrics() lines: starts are estimates, ends the record times
    commit: float | None = None  # when the turn was committed (the EOU metrics' time), s
    transcript: float | None = None  # when the final transcript came (commit - eou delay + transcription delay)
    resolution: float = 0.0  # the coarsest step of the times and durations the lines print, s
    # per metrics type (eou, llm, tts) k: its first line at 2k (0: none yet; a broken line counts) and that
    # line's request id at 2k + 1; one flat list per turn, not a list of pairs (~150 bytes a turn) nor a
    # file-wide dict of tuples (~500 bytes a turn)
    seen: list[Any] = field(default_factory=lambda: [0, "", 0, "", 0, ""])


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass
class TurnPaths:
    """The stages of each pipeline turn from its requests, and the first-output values kept for the
    stale-value check; shares the reader's ``passes`` and ``values``."""

    passes: dict[str, _Passes]
    values: dict[str, StaleValues]

    def first_output(self, turn: TurnBuilder, value: Any, lineno: int, fld: str, what: str, stage: str) -> None:
        if value == -1 and not isinstance(value, bool):
            turn.flag(lineno, fld, value, f"{what} ({fld} = -1)")
            return
        ms = turn.seconds(value, line=lineno, fld=fld)
        turn.set_stage(stage, ms)
        if ms is not None and stage != "llm_2_ttft":
            self.values[fld].append((turn, lineno, fld, value))

    def speaking_pass(self, passes: _Passes) -> int:
        """Which LLM request's text the first TTS request spoke: the last of the requests that follow
        one another (each starting after the previous one ended, as a tool's follow-up does) and started
        before the TTS request (by the lines' times; ``log_metrics()`` lines, which carry no TTS start,
        by line order)."""
        llm, tts = passes.llm, passes.tts
        if not tts or len(llm) < 2:
            return len(llm) - 1 if not tts else 0
        first = tts[0]
        if first.start is None or _untimed(llm):
            return max(sum(r.line < first.line for r in llm) - 1, 0)
        return _last_following(llm, first.start)

    def path(self, turn: TurnBuilder) -> None:
        """The turn's LLM passes and tool executions up to the speech, as stages."""
        passes = self.passes[turn.id]
        if passes.llm:
            k = self.speaking_pass(passes)
            first = passes.llm[0]
            self.first_output(turn, first.value, first.line, "ttft", "no first token", "llm_ttft")
            if k > 0:
                self.tool_turn(turn, passes.llm[: k + 1])
            self.preemptive(turn, passes, k)
        if passes.tts:
            tts = passes.tts[0]
            self.first_output(turn, tts.value, tts.line, "ttfb", "no first audio", "tts_ttfb")

    def preemptive(self, turn: TurnBuilder, passes: _Passes, k: int) -> None:
        """Preemptive generation (on by default in 1.8.x): the LLM starts on the final transcript, before
        the turn commit, so its time overlaps the endpointing wait and LiveKit's sum
        ``end_of_utterance_delay + ttft + ttfb`` counts it twice. Each LLM segment then counts only from
        the commit (or the end of the segment before it) on; a note says how much came before.

        Nothing but preemptive generation starts an LLM request before the commit
        (``voice/agent_activity.py`` ``on_preemptive_generation``: on the final transcript, 2 ms after it
        on LiveKit 1.8.9 idle, tens of ms on a busy loop), so a first request that starts before the
        commit by more than the lines' printed resolution (``timestamp=1752415066.8`` is 0.1 s) and
        :data:`CLOCK_SLACK_S` is one, unless it starts before its own transcript (the lines' clocks
        disagree; LiveKit's sum is kept). A ``log_metrics()`` line gives no transcript bound: it leaves
        out ``on_user_turn_completed_delay`` (the EOU record comes that much after the commit: 59 ms seen
        under load) and rounds the delays to 10 ms; its start (the record time minus the request's
        duration) is never early, since a busy loop only delays a record."""
        first, commit = passes.llm[0], passes.commit
        if commit is None or first.start is None or not _started_early(passes, first.start):
            return
        times = _times(passes.llm[: k + 1])
        if times is None or _number(first.value) is None:
            return
        before = sum(
            v for key, v in turn.stages_ms.items() if key in ("llm_ttft", "llm_tool_call", "tool", "llm_2_ttft")
        )
        stages = _after_commit(times, commit)
        for key, value in stages.items():
            if key in turn.stages_ms:
                turn.stages_ms[key] = value
        hidden = before - sum(stages.values())
        turn.note(
            f"preemptive generation: the LLM request started {(commit - first.start) * 1000:.0f} ms before the turn "
            f"commit; {hidden:.0f} ms of the LLM's time ran inside the endpointing wait and is not counted again"
        )

    def tool_turn(self, turn: TurnBuilder, llm: list[_Request]) -> None:
        """Stages of a turn whose first ``len(llm) - 1`` LLM passes ended in tool calls: the LLM writing
        the calls (``llm_tool_call``), the tools running until the next request (``tool``), and the
        speaking pass's TTFT (``llm_2_ttft``)."""
        last = llm[-1]
        if _untimed(llm):
            self.untimed_tool_turn(turn, llm)
            return
        logged = self.passes[turn.id].logged
        call, tool = _call_and_tool(llm, logged)
        turn.set_stage("llm_tool_call", turn.ms(round(call * 1000.0, 3), line=llm[0].line, fld="duration"))
        turn.set_stage("tool", turn.ms(round(max(tool, 0.0) * 1000.0, 3), line=last.line, fld="timestamp"))
        if tool < (-0.02 if logged else -0.005):  # log lines' starts are estimates
            turn.flag(last.line, "timestamp", last.start, "an LLM request starts before the previous one ended")
        self.first_output(turn, last.value, last.line, "ttft", "no first token", "llm_2_ttft")

    def untimed_tool_turn(self, turn: TurnBuilder, llm: list[_Request]) -> None:
        """A tool turn whose lines give no times to the millisecond (the console formatter prints whole
        seconds): what ran between the requests is unknown, but the passes' TTFTs are known, so the turn
        stays with its total as a lower bound (a failing agent must not pass because its slowest turns are
        left out)."""
        last = llm[-1]
        self.first_output(turn, last.value, last.line, "ttft", "no first token", "llm_2_ttft")
        turn.unknown("llm_tool_call", "tool")
        turn.lower_bound = True
        turn.note(
            f"tool turn: {len(llm)} LLM requests, but the lines give no times to the millisecond, so the LLM "
            "writing the calls and the tools are unknown: the total is a lower bound"
        )


def _untimed(requests: list[_Request]) -> bool:
    """A request whose line does not say when it ran."""
    return any(r.start is None or r.end is None for r in requests)


def _last_following(llm: list[_Request], tts_start: float) -> int:
    """The last of the requests that follow one another from the first (each starting after the previous
    one ended) and started before the TTS request at ``tts_start``; all are timed."""
    k = 0
    for i in range(1, len(llm)):
        start, prev_end = llm[i].start or 0.0, llm[i - 1].end or 0.0
        if start < prev_end - 0.005 or start > tts_start + 0.001:
            break
        k = i
    return k


def _started_early(passes: _Passes, start: float) -> bool:
    """The first LLM request, started at ``start``, started before the turn's commit by more than the lines
    can tell apart, and not before the transcript it answers (then the lines' clocks disagree)."""
    commit, transcript = passes.commit, passes.transcript
    if commit is None or transcript is None:
        return False
    slack = CLOCK_SLACK_S + passes.resolution
    if start >= commit - slack:
        return False  # within what the printed digits can tell apart from the commit
    return passes.logged or start >= transcript - slack


def _ttft(r: _Request) -> float:
    return max(_number(r.value) or 0.0, 0.0)


def _times(llm: list[_Request]) -> list[tuple[float, float, float]] | None:
    """Each request's ``(start, end, ttft)`` (s); None when a line does not say when its request ran."""
    out = []
    for r in llm:
        if r.start is None or r.end is None:
            return None
        out.append((r.start, r.end, _ttft(r)))
    return out


class _OnPath:
    """LLM time counted from the commit on: each segment only past the end of the ones before it."""

    def __init__(self, commit: float) -> None:
        self.cursor = commit

    def after(self, start: float, end: float) -> float:
        on_path = max(0.0, end - max(start, self.cursor))
        self.cursor = max(self.cursor, end)
        return round(on_path * 1000.0, 3)


def _after_commit(times: list[tuple[float, float, float]], commit: float) -> dict[str, float]:
    """The LLM's stages (ms) counted from the commit on: its first pass's TTFT, and in a tool turn the passes
    writing the calls, the tools and the speaking pass's TTFT."""
    path = _OnPath(commit)
    start, _, ttft = times[0]
    stages = {"llm_ttft": path.after(start, start + ttft)}
    if len(times) > 1:
        call = tool = 0.0
        for i, (r_start, r_end, r_ttft) in enumerate(times[:-1]):
            call += path.after(r_start + (r_ttft if i == 0 else 0.0), r_end)
            tool += path.after(r_end, times[i + 1][0])
        last_start, _, last_ttft = times[-1]
        stages |= {"llm_tool_call": call, "tool": tool, "llm_2_ttft": path.after(last_start, last_start + last_ttft)}
    return stages


def _call_and_tool(llm: list[_Request], logged: bool) -> tuple[float, float]:
    """A timed tool turn's LLM writing the calls (its passes that ended in a call, less the first TTFT) and
    its tools (from each request's end to the next one's start), s."""
    written = sum((r.end or 0.0) - (r.start or 0.0) for r in llm[:-1])  # the passes that ended in a call
    call = written - _positive(_number(llm[0].value))
    if logged and call > -LOG_ROUNDING_S:
        call = max(call, 0.0)  # log_metrics() rounds the ttft to 10 ms: a call written at once
    tool = sum((b.start or 0.0) - (a.end or 0.0) for a, b in zip(llm, llm[1:], strict=False))
    return call, tool


def _positive(value: float | None) -> float:
    """``value`` when it is a number above 0, else 0."""
    return value if value is not None and value > 0 else 0.0
