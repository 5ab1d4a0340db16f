"""Joining a call recording with the agent's trace of the same call, on one clock.

The recording and the log share no clock. The offset (server clock - recording clock, ms) is found
in two steps:

1. **Coarse, by the agent's first speech in both**: the trace's first placed turn (its last server
   event, :attr:`~voicebudget.traces.TraceTurn.end_s`) is tried against every agent onset in the
   recording (the recording may open with a greeting the log does not time); the candidate under
   which most trace turns land on an agent reply (within :data:`MATCH_MS`) wins.
2. **Refined over all turns, by the least delay**: the one-way delay from the server to the recording
   cannot be told apart from the clock offset by any timestamp (RFC 5481 measures only its variation
   without synchronised clocks), so the offset is set so that the *fastest* matched turn's
   server -> recording delay equals ``transport_floor_ms``: 0 when the recording is taken where the
   agent's audio leaves the server (Pipecat's ``AudioBufferProcessor``, a LiveKit egress next to the
   agent); the media path's one-way delay otherwise (a Twilio recording: the agent -> Twilio leg).
   Queueing and jitter only ever add delay, so the fastest turn is the one with none.

Then, per matched turn (ms): ``transport`` = agent onset in the recording - last server event (on
the recording's clock), the part no log sees; ``anchor_bias`` = the trace's ``t = 0`` - the caller's
end of speech in the recording (how late the framework's "user stopped speaking" is, with the uplink);
the endpointing is re-measured from the recording's end of speech (``endpointing + anchor_bias``), so
the stages add up to the voice-to-voice latency heard.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from voicebudget._errors import ScenarioError
from voicebudget.audio._check import AnalysedCall, turn_id
from voicebudget.audio._turns import AudioTurn
from voicebudget.traces._table import TraceTable, TraceTurn

__all__ = ["EARLY_ANCHOR_MS", "MATCH_MS", "CallJoin", "join_trace"]

MATCH_MS = 1_000.0
"""After the coarse offset, a trace turn matches the recording's turn whose agent onset is within this
of its last server event (the relative delay of two turns stays well under a second)."""


EARLY_ANCHOR_MS = 300.0
"""A framework's "user stopped speaking" may come before the caller's end of speech in the recording by at
most this much (a VAD's window and hangover, the recording's own VAD edge): more, and the trace's turn is
not this reply's. It is late by the uplink and the VAD's stop window, which the check allows up to the
reply."""


@dataclass(frozen=True)
class JoinedTurn:
    """One trace turn placed on the recording (ms on the recording's clock)."""

    trace_turn: TraceTurn
    audio_turn: AudioTurn
    transport_ms: float
    anchor_bias_ms: float


@dataclass(frozen=True)
class CallJoin:
    """A recording and a trace on one clock.

    :ivar offset_ms: server clock - recording clock, ms (server time ``T`` is ``T - offset`` in the recording).
    :ivar coarse_offset_ms: the offset from the agent's first speech in both, before refining.
    :ivar transport_floor_ms: the fastest turn's delay the offset assumes.
    :ivar turns: matched turns in time order; :ivar unmatched: trace turns with no reply in the recording.
    :ivar table: the joined turns as a trace table (stages + ``transport``; ``anchor_bias`` off the path).
    """

    recording: str
    trace: str
    offset_ms: float
    coarse_offset_ms: float
    transport_floor_ms: float
    turns: tuple[JoinedTurn, ...]
    unmatched: tuple[str, ...]
    table: TraceTable

    def to_dict(self) -> dict[str, Any]:
        return {
            "recording": self.recording,
            "trace": self.trace,
            "offset_ms": self.offset_ms,
            "coarse_offset_ms": self.coarse_offset_ms,
            "transport_floor_ms": self.transport_floor_ms,
            "matched": len(self.turns),
            "unmatched": list(self.unmatched),
            "turns": [
                {
                    "trace_turn": j.trace_turn.id,
                    "audio_turn": turn_id(j.audio_turn.caller_end_ms),
                    "transport_ms": j.transport_ms,
                    "anchor_bias_ms": j.anchor_bias_ms,
                }
                for j in self.turns
            ],
        }


def _placed(table: TraceTable) -> list[TraceTurn]:
    return [t for t in table.turns if t.end_s is not None and t.start_s is not None and t.complete]


def _match(
    placed: Sequence[TraceTurn], replies: Sequence[AudioTurn], offset_ms: float
) -> list[tuple[TraceTurn, AudioTurn, float]]:
    """Each trace turn to the nearest unused reply onset within :data:`MATCH_MS` (by time order)."""
    out = []
    used: set[int] = set()
    for t in placed:
        assert t.end_s is not None
        at = t.end_s * 1000.0 - offset_ms
        best = None
        for k, r in enumerate(replies):
            assert r.agent_onset_ms is not None
            d = r.agent_onset_ms - at
            if k not in used and abs(d) <= MATCH_MS and (best is None or abs(d) < abs(best[1])):
                best = (k, d)
        if best is not None:
            used.add(best[0])
            out.append((t, replies[best[0]], best[1]))
    return out


def join_trace(analysed: AnalysedCall, trace: TraceTable, *, transport_floor_ms: float = 0.0) -> CallJoin:
    """Put a trace of the call on the recording's clock (see the module docstring for the method).

    :param analysed: the recording (:func:`~voicebudget.audio.analyse_recording`).
    :param trace: the agent's trace of the same call (a reader that places turns on its clock:
        Pipecat logs).
    :param transport_floor_ms: the fastest turn's server -> recording delay, ms (>= 0).
    :returns: the join; its :attr:`CallJoin.table` has the joined turns (stages of the trace, the
        endpointing re-measured from the recording, ``transport``; ``anchor_bias`` off the path).
    :raises ScenarioError: the trace places no turn on its clock, the recording has no agent reply, no
        offset lines them up, or the turns that line up do not look like one call's
        (:func:`_check_same_call`).
    """
    origin = f"{analysed.call.origin} + {trace.origin}"
    if not transport_floor_ms >= 0.0:
        raise ScenarioError(f"must be >= 0 ms, got {transport_floor_ms!r}", origin=origin, field="transport_floor_ms")
    placed = _placed(trace)
    if not placed:
        raise ScenarioError(
            f"the {trace.format} trace places no complete turn on its clock (Pipecat logs and LiveKit chat "
            "histories do; metrics lines and OTLP spans give durations only)",
            origin=trace.origin,
        )
    replies = [t for t in analysed.call.turns if t.agent_onset_ms is not None]
    onsets = [a.start_ms for a in analysed.call.agent]
    if not replies:
        raise ScenarioError("the recording has no agent reply to join a trace to", origin=analysed.call.origin)
    first = placed[0]
    assert first.end_s is not None
    best: tuple[int, float, float] | None = None  # (matches, -spread, offset)
    for onset in onsets:
        cand = first.end_s * 1000.0 - onset
        pairs = _match(placed, replies, cand)
        if not pairs:
            continue
        ds = [d for _, _, d in pairs]
        key = (len(pairs), -(max(ds) - min(ds)), cand)
        if best is None or key[:2] > best[:2]:
            best = key
    if best is None:
        raise ScenarioError("no clock offset puts the trace's turns on the recording's agent replies", origin=origin)
    coarse = best[2]
    pairs = _match(placed, replies, coarse)
    offset = coarse + transport_floor_ms - min(d for _, _, d in pairs)
    joined = []
    for t, r, _ in pairs:
        assert t.end_s is not None
        assert t.start_s is not None
        assert r.agent_onset_ms is not None
        transport = r.agent_onset_ms - (t.end_s * 1000.0 - offset)
        bias = (t.start_s * 1000.0 - offset) - r.caller_end_ms
        joined.append(JoinedTurn(t, r, transport, bias))
    _check_same_call(origin, placed, joined)
    matched = {id(j.trace_turn) for j in joined}
    unmatched = tuple(t.id for t in trace.turns if id(t) not in matched and t.complete)
    return CallJoin(
        analysed.call.origin, trace.origin, offset, coarse, transport_floor_ms, tuple(joined), unmatched,
        _table(origin, analysed, trace, joined),
    )  # fmt: skip


def _check_same_call(origin: str, placed: Sequence[TraceTurn], joined: Sequence[JoinedTurn]) -> None:
    """Refuse a join whose turns do not line up as one call's do: fewer than half the trace's placed turns
    land on an agent reply, or more than a third of those that do put the trace's "user stopped speaking"
    outside the caller's silence before that reply (from :data:`EARLY_ANCHOR_MS` before the caller's end
    of speech in the recording to the agent's reply). A trace of another call matches a turn or two by
    chance, and its figures would look plausible.

    :raises ScenarioError: naming both counts.
    """
    outside = sum(
        1
        for j in joined
        if not -EARLY_ANCHOR_MS <= j.anchor_bias_ms <= (j.audio_turn.agent_onset_ms or 0.0) - j.audio_turn.caller_end_ms
    )
    if 2 * len(joined) < len(placed) or 3 * outside > len(joined):
        raise ScenarioError(
            f"the trace does not fit this recording: {len(joined)} of its {len(placed)} turns land on an agent reply, "
            f"and {outside} of those put the trace's end of speech outside the caller's silence before the reply "
            "(is it the same call?)",
            origin=origin,
        )


def _table(origin: str, analysed: AnalysedCall, trace: TraceTable, joined: Sequence[JoinedTurn]) -> TraceTable:
    turns = []
    for i, j in enumerate(joined):
        t = j.trace_turn
        stages = dict(t.stages_ms)
        if "endpointing" in stages:
            stages["endpointing"] = stages["endpointing"] + j.anchor_bias_ms
        stages["transport"] = j.transport_ms
        stages["anchor_bias"] = j.anchor_bias_ms
        heard = j.audio_turn.voice_to_voice_ms
        turns.append(
            replace(
                t,
                id=f"{t.id}@{turn_id(j.audio_turn.caller_end_ms)}",
                index=i,
                stages_ms=stages,
                total_ms=heard,
                flagged=t.flagged or j.audio_turn.kind != "turn",
                origin=origin,
                reader="audio+" + (t.reader or trace.format),
                at_ms=j.audio_turn.caller_end_ms,
            )
        )
    found = (*analysed.table.anomalies, *trace.anomalies)
    anomalies = [replace(a, origin=origin) for a in found]
    anchor = f"the caller's end of speech in the recording; the trace's own: {trace.anchor}"
    total = "the agent's first audio in the recording - the caller's end of speech (voice-to-voice as recorded)"
    return TraceTable(origin, "audio+" + trace.format, anchor, total, tuple(turns), tuple(anomalies))
