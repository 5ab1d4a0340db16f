"""From the speech of both channels to turns, barge-ins, mid-turn pauses and what a listener flags.

All times are ms from the start of the recording. The rules, in order of the caller's speech:

- **turn**: the caller's speech ends and the agent's audio starts before the caller speaks again:
  voice-to-voice = agent onset - caller's end of speech (a gap shorter than ``merge_agent_ms`` inside
  the agent's speech does not start a new agent utterance).
- **talk-over** (flagged, out of the statistics): the agent is speaking when the caller's speech ends
  (it started while the caller was still talking, or it kept talking over a barge-in); the turn's
  value is the agent onset - the caller's end, negative.
- **no reply** (flagged, no total): the caller spoke again after a silence longer than the budget
  with no agent audio in it, or the recording ends more than the budget after the caller's speech.
  A shorter silence before the caller speaks again is a mid-turn pause (kept in :attr:`AudioCall.pauses_ms`).
- **barge-in**: the caller starts speaking while the agent is; measured: caller onset -> the agent's
  audio stops (the end of that agent utterance).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from voicebudget._text import as_given
from voicebudget.audio._vad import SpeechSegment

__all__ = ["AudioCall", "AudioTurn", "BargeIn", "pair_turns"]

MERGE_AGENT_MS = 300.0
"""A silence in the agent's audio shorter than this (between TTS sentences or chunks) does not end its
utterance: an onset after it is not a new reply, and a barge-in's "audio stopped" needs this long a
silence. Pipecat's TTS sentence gaps are tens of ms; a stopped agent stays silent for the whole next turn."""


@dataclass(frozen=True)
class AudioTurn:
    """One caller -> agent exchange measured in the recording (ms from its start).

    :ivar caller_end_ms: the caller's end of speech.
    :ivar agent_onset_ms: the agent's first audio after it (None: no reply).
    :ivar kind: ``"turn"``, ``"talk_over"`` or ``"no_reply"``.
    :ivar reason: why it is flagged (``""`` for a plain turn).
    :ivar silence_ms: for ``no_reply``, the silence the caller got.
    :ivar pauses_ms: the caller's pauses within this turn (silences before speaking again, no agent audio).
    :ivar barge_in: the caller's speech that ended here began over the agent.
    """

    caller_end_ms: float
    agent_onset_ms: float | None
    kind: str = "turn"
    reason: str = ""
    silence_ms: float | None = None
    pauses_ms: tuple[float, ...] = ()
    barge_in: bool = False

    @property
    def voice_to_voice_ms(self) -> float | None:
        """Agent onset - caller end of speech, ms (negative for a talk-over; None: no reply)."""
        return None if self.agent_onset_ms is None else self.agent_onset_ms - self.caller_end_ms


@dataclass(frozen=True)
class BargeIn:
    """The caller started speaking over the agent.

    :ivar caller_onset_ms: when the caller started.
    :ivar agent_stop_ms: when the agent's audio stopped (end of the utterance it was in).
    :ivar agent_start_ms: when that agent utterance had started.
    """

    caller_onset_ms: float
    agent_stop_ms: float
    agent_start_ms: float

    @property
    def stop_ms(self) -> float:
        """Caller onset -> agent audio stops, ms: detection + TTS flush + output queue + transport."""
        return self.agent_stop_ms - self.caller_onset_ms

    def to_dict(self) -> dict[str, Any]:
        return {
            "caller_onset_ms": self.caller_onset_ms,
            "agent_stop_ms": self.agent_stop_ms,
            "stop_ms": self.stop_ms,
        }


@dataclass(frozen=True)
class AudioCall:
    """Everything found in one recording.

    :ivar caller: the caller's speech segments; :ivar agent: the agent's (utterances, merged).
    :ivar turns: caller -> agent exchanges in time order; :ivar barge_ins: the caller over the agent.
    :ivar pauses_ms: every mid-turn pause of the caller, ms (the input of ``voicebudget endpointing``).
    :ivar pauses_per_turn: per caller turn that got a reply (a turn or a talk-over), how many pauses it
        had (a no-reply silence counts as a pause of the turn that follows).
    """

    origin: str
    duration_ms: float
    caller: tuple[SpeechSegment, ...]
    agent: tuple[SpeechSegment, ...]
    turns: tuple[AudioTurn, ...]
    barge_ins: tuple[BargeIn, ...]
    pauses_ms: tuple[float, ...] = ()
    pauses_per_turn: tuple[int, ...] = field(default=())

    @property
    def first_agent_onset_ms(self) -> float | None:
        """The agent's first speech (its greeting, usually), ms."""
        return self.agent[0].start_ms if self.agent else None


def merge(segments: Sequence[SpeechSegment], gap_ms: float) -> list[SpeechSegment]:
    """Segments joined across silences shorter than ``gap_ms``."""
    out: list[SpeechSegment] = []
    for s in segments:
        if out and s.start_ms - out[-1].end_ms < gap_ms:
            out[-1] = SpeechSegment(out[-1].start_ms, s.end_ms)
        else:
            out.append(s)
    return out


def _speaking(agent: Sequence[SpeechSegment], t: float) -> SpeechSegment | None:
    for a in agent:
        if a.start_ms < t < a.end_ms:
            return a
        if a.start_ms >= t:
            break
    return None


def _next_onset(agent: Sequence[SpeechSegment], t: float) -> float | None:
    for a in agent:
        if a.start_ms >= t:
            return a.start_ms
    return None


def pair_turns(
    origin: str,
    caller: Sequence[SpeechSegment],
    agent_segments: Sequence[SpeechSegment],
    duration_ms: float,
    *,
    budget_ms: float,
    merge_agent_ms: float = MERGE_AGENT_MS,
) -> AudioCall:
    """Turns, barge-ins and pauses from both channels' speech (see the module docstring for the rules).

    :param caller: the caller's speech segments (:func:`~voicebudget.audio.find_speech`), ms.
    :param agent_segments: the agent's.
    :param duration_ms: the recording's length.
    :param budget_ms: a silence longer than this with no reply is flagged.
    :param merge_agent_ms: agent silences shorter than this are inside one utterance.
    """
    agent = merge(agent_segments, merge_agent_ms)
    turns: list[AudioTurn] = []
    barge: list[BargeIn] = []
    pauses: list[float] = []
    per_turn: list[int] = []
    in_turn: list[float] = []
    over_agent = False
    for i, seg in enumerate(caller):
        talking = _speaking(agent, seg.start_ms)
        if talking is not None:
            barge.append(BargeIn(seg.start_ms, talking.end_ms, talking.start_ms))
            over_agent = True
        nxt = caller[i + 1].start_ms if i + 1 < len(caller) else None
        onset = _next_onset(agent, seg.end_ms)
        at_end = _speaking(agent, seg.end_ms)
        if at_end is not None:
            why = (
                "the agent started speaking while the caller was still talking"
                if at_end.start_ms > seg.start_ms
                else "the agent kept talking over the caller"
            )
            turns.append(AudioTurn(seg.end_ms, at_end.start_ms, "talk_over", why, None, tuple(in_turn), over_agent))
        elif onset is not None and (nxt is None or onset <= nxt):
            turns.append(AudioTurn(seg.end_ms, onset, "turn", "", None, tuple(in_turn), over_agent))
        elif nxt is not None:  # the caller speaks again with no agent audio in between: a pause
            gap = nxt - seg.end_ms
            pauses.append(gap)
            in_turn.append(gap)
            if gap > budget_ms:
                why = (
                    f"no reply: the caller spoke again after {gap:.0f} ms of silence (budget {as_given(budget_ms)} ms)"
                )
                turns.append(AudioTurn(seg.end_ms, None, "no_reply", why, gap, tuple(in_turn[:-1]), over_agent))
            continue
        else:
            left = duration_ms - seg.end_ms
            if left > budget_ms:
                why = (
                    f"no reply: {left:.0f} ms of silence to the end of the recording (budget {as_given(budget_ms)} ms)"
                )
                turns.append(AudioTurn(seg.end_ms, None, "no_reply", why, left, tuple(in_turn), over_agent))
            continue
        per_turn.append(len(in_turn))  # a caller turn ends with a reply: the pauses it had
        in_turn, over_agent = [], False
    return AudioCall(
        origin, duration_ms, tuple(caller), tuple(agent), tuple(turns), tuple(barge), tuple(pauses), tuple(per_turn)
    )
