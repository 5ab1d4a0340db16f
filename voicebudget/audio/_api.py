"""``voicebudget check call.wav [agent.log]``: recordings (and the traces of the same calls) into the
common Report."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from voicebudget._budget import Budget
from voicebudget._errors import ScenarioError
from voicebudget._text import count
from voicebudget.audio._bargein import TraceBargeIn, read_barge_ins
from voicebudget.audio._check import AnalysedCall, analyse_recording
from voicebudget.audio._join import CallJoin, join_trace
from voicebudget.audio._load import CallerChannel
from voicebudget.audio._vad import VadParams
from voicebudget.traces._check import TraceCheck, check
from voicebudget.traces._fit import TraceFit, fit
from voicebudget.traces._options import FitMethod, ReadOptions

__all__ = ["AudioCheck", "check_calls", "fit_calls"]


@dataclass(frozen=True)
class AudioCheck:
    """The verdict on recorded calls.

    :ivar check: the common verdict (:class:`~voicebudget.traces.TraceCheck`: the Report, turns,
        anomalies); its turns are the joined ones when traces were given.
    :ivar calls: each recording with what was found in it.
    :ivar joins: per recording, its join with the trace of the same call (empty without traces).
    :ivar trace_barge_ins: per recording, the barge-ins its trace records (LiveKit
        ``interruption_metrics``, Pipecat interruption lines; :func:`~voicebudget.audio.read_barge_ins`).
    """

    check: TraceCheck
    calls: tuple[AnalysedCall, ...]
    joins: tuple[CallJoin, ...] = ()
    trace_barge_ins: tuple[tuple[TraceBargeIn, ...], ...] = ()

    @property
    def passed(self) -> bool:
        return self.check.passed

    def to_dict(self) -> dict[str, Any]:
        """``check --format json``: the trace check's document plus ``recordings`` (per file: channel,
        rates, barge-ins, mid-turn pauses, and the join when a trace was given)."""
        doc = self.check.to_dict()
        joins = {j.recording: j for j in self.joins}
        traced = dict(zip((j.recording for j in self.joins), self.trace_barge_ins, strict=False))
        rows = []
        for a in self.calls:
            call, rec = a.call, a.recording
            row: dict[str, Any] = {
                "file": call.origin,
                "caller_channel": rec.caller_channel,
                "source_rate_hz": rec.source_rate_hz,
                "duration_ms": call.duration_ms,
                "first_agent_onset_ms": call.first_agent_onset_ms,
                "turns": [
                    {
                        "kind": t.kind,
                        "caller_end_ms": t.caller_end_ms,
                        "agent_onset_ms": t.agent_onset_ms,
                        "voice_to_voice_ms": t.voice_to_voice_ms,
                        "barge_in": t.barge_in,
                        "reason": t.reason,
                    }
                    for t in call.turns
                ],
                "barge_ins": [b.to_dict() for b in call.barge_ins],
                "pauses_ms": list(call.pauses_ms),
                "clipped_share": {"caller": a.clipped_share[0], "agent": a.clipped_share[1]},
            }
            if call.origin in joins:
                row["join"] = joins[call.origin].to_dict()
                row["trace_barge_ins"] = [b.to_dict() for b in traced.get(call.origin, ())]
            rows.append(row)
        doc["recordings"] = rows
        return doc


def check_calls(
    recordings: Sequence[str | Path],
    traces: Sequence[str | Path] = (),
    budget: Budget | None = None,
    *,
    caller: CallerChannel = "left",
    include_anomalies: bool = False,
    options: ReadOptions | None = None,
    fmt: str | None = None,
    transport_floor_ms: float = 0.0,
    vad: VadParams | None = None,
) -> AudioCheck:
    """Judge recorded calls against the budget; with traces, join each recording to its call's trace.

    :param recordings: two-channel WAV/FLAC/Ogg/MP3 files, one call each.
    :param traces: none, or one trace per recording (the i-th trace is the i-th recording's call).
    :param budget: default ``Budget()`` (800 ms at p95); its total is also the silence after which a
        missing reply is flagged.
    :param caller: the caller's channel.
    :param include_anomalies: count flagged turns that have a total (talk-overs: negative).
    :param options: the trace readers' options; ``fmt`` the traces' format (None: detected).
    :param transport_floor_ms: the fastest turn's server -> recording delay the join assumes.
    :raises ScenarioError: a file cannot be read, the audio extra is missing, the number of traces is
        neither 0 nor the number of recordings, or no turn is usable.
    """
    from voicebudget.traces._api import read_traces

    budget = budget or Budget()
    if traces and len(traces) != len(recordings):
        raise ScenarioError(
            f"{len(traces)} trace(s) for {len(recordings)} recording(s): give one trace per recording (same order)",
            origin=", ".join(str(p) for p in traces),
        )
    calls = tuple(analyse_recording(p, caller=caller, budget=budget, vad=vad) for p in recordings)
    if not any(a.call.turns for a in calls):  # say what was heard rather than "0 turns, 0 anomalies"
        heard = "; ".join(
            f"{count(len(a.call.caller), 'speech segment')} on the caller's channel ({a.recording.caller_channel}), "
            f"{count(len(a.call.agent), 'agent utterance')}" + (f" in {a.call.origin}" if len(calls) > 1 else "")
            for a in calls
        )
        raise ScenarioError(
            f"no turn (the caller's speech, then the agent's reply) found: {heard}",
            origin=", ".join(str(p) for p in recordings),
        )
    joins: tuple[CallJoin, ...] = ()
    barge: tuple[tuple[TraceBargeIn, ...], ...] = ()
    if traces:
        tables = read_traces(traces, fmt, options)
        joins = tuple(
            join_trace(a, t, transport_floor_ms=transport_floor_ms) for a, t in zip(calls, tables, strict=True)
        )
        barge = tuple(tuple(read_barge_ins(t)) for t in traces)
        result = check([j.table for j in joins], budget, include_anomalies=include_anomalies)
    else:
        result = check([a.table for a in calls], budget, include_anomalies=include_anomalies)
    return AudioCheck(result, calls, joins, barge)


def fit_calls(
    recordings: Sequence[str | Path],
    traces: Sequence[str | Path] = (),
    *,
    method: FitMethod = "joint",
    budget: Budget | None = None,
    caller: CallerChannel = "left",
    include_anomalies: bool = False,
    options: ReadOptions | None = None,
    fmt: str | None = None,
    transport_floor_ms: float = 0.0,
    verify_samples: int = 200_000,
) -> TraceFit:
    """Fit a scenario to recorded calls (``voicebudget fit call.wav agent.log``). Joined with their
    traces, the scenario's ``transport`` is learnt from the recordings (the last server event -> the
    agent's audio heard) and its endpointing is measured from the recording's end of speech; without
    traces, the recorded voice-to-voice latency is one observed stage.

    :raises ScenarioError: as :func:`check_calls`; no usable turn.
    """
    from voicebudget.traces._api import read_traces

    budget = budget or Budget()
    if traces and len(traces) != len(recordings):
        raise ScenarioError(
            f"{len(traces)} trace(s) for {len(recordings)} recording(s): give one trace per recording (same order)",
            origin=", ".join(str(p) for p in traces),
        )
    calls = [analyse_recording(p, caller=caller, budget=budget) for p in recordings]
    if traces:
        tables = read_traces(traces, fmt, options)
        pairs = zip(calls, tables, strict=True)
        used = [join_trace(a, t, transport_floor_ms=transport_floor_ms).table for a, t in pairs]
    else:
        used = [a.table for a in calls]
    result = fit(used, method=method, budget=budget, include_anomalies=include_anomalies)
    if verify_samples:
        result = replace(result, verification=result.verify(samples=verify_samples))
    return result
