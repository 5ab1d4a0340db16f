"""``voicebudget check call.wav [agent.log]``: recordings (and the traces of the same calls) into the
common Report."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from voicebudget._barge_in import BARGE_IN_BUDGET_MS
from voicebudget._budget import Budget
from voicebudget._errors import ScenarioError, param
from voicebudget._report import Report, build_report
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
    :ivar barge_in: the barge-ins of every recording (caller onset -> the agent's audio heard to stop) judged
        against their own budget (:data:`~voicebudget.BARGE_IN_BUDGET_MS` by default, at the voice budget's
        percentile): a Report whose total is the stop time, ``source = "trace"``; None when no recording has
        a barge-in.
    """

    check: TraceCheck
    calls: tuple[AnalysedCall, ...]
    joins: tuple[CallJoin, ...] = ()
    trace_barge_ins: tuple[tuple[TraceBargeIn, ...], ...] = ()
    barge_in: Report | None = None

    @property
    def passed(self) -> bool:
        """Voice-to-voice within its budget, and the barge-ins (if any) within theirs."""
        return self.check.passed and (self.barge_in is None or self.barge_in.passed)

    def to_dict(self) -> dict[str, Any]:
        """``check --format json``: the trace check's document plus ``passed`` (voice-to-voice and
        barge-ins), ``barge_in`` (the barge-ins' verdict: its budget and the keys of a ``variants[]`` entry;
        null without barge-ins) and ``recordings`` (per file: channel, rates, barge-ins each with
        ``within_budget``, mid-turn pauses, clipped shares, and the join when a trace was given)."""
        doc = self.check.to_dict()
        doc["passed"] = self.passed
        doc["barge_in"] = _barge_in_doc(self.barge_in)
        limit = self.barge_in.budget.total_ms if self.barge_in is not None else math.inf
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
                "barge_ins": [
                    {**b.to_dict(), "within_budget": self.barge_in is None or b.stop_ms <= limit}
                    for b in call.barge_ins
                ],
                "pauses_ms": list(call.pauses_ms),
                "clipped_share": {"caller": a.clipped_share[0], "agent": a.clipped_share[1]},
            }
            if call.origin in joins:
                row["join"] = joins[call.origin].to_dict()
                row["trace_barge_ins"] = [b.to_dict() for b in traced.get(call.origin, ())]
            rows.append(row)
        doc["recordings"] = rows
        return doc


def _barge_in_doc(report: Report | None) -> dict[str, Any] | None:
    if report is None:
        return None
    budget = {"total_ms": report.budget.total_ms, "percentile": report.budget.percentile}
    return {"budget": budget, **report.to_dict()}


def barge_in_budget(budget: Budget, barge_in_budget_ms: float = BARGE_IN_BUDGET_MS) -> Budget:
    """The budget barge-ins are judged against: ``barge_in_budget_ms`` at ``budget``'s percentile.

    :raises ScenarioError: ``barge_in_budget_ms`` is not a finite number > 0 (the error names it).
    """
    if isinstance(barge_in_budget_ms, bool) or not (math.isfinite(barge_in_budget_ms) and barge_in_budget_ms > 0):
        raise ScenarioError(
            f"must be a finite number > 0 ms, got {barge_in_budget_ms!r}", origin=param("barge_in_budget_ms")
        )
    return Budget(total_ms=barge_in_budget_ms, percentile=budget.percentile)


def judge_barge_ins(calls: Sequence[AnalysedCall], budget: Budget) -> Report | None:
    """Every recording's barge-ins (caller onset -> the agent's audio stops, ms) against ``budget``: a Report
    named ``barge-ins`` whose total is the stop time (no stages); None when there is no barge-in."""
    stops = np.array([b.stop_ms for a in calls for b in a.call.barge_ins], dtype=np.float64)
    if not stops.size:
        return None
    return build_report("barge-ins", budget, stops, {}, source="trace")


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
    barge_in_budget_ms: float = BARGE_IN_BUDGET_MS,
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
    :param barge_in_budget_ms: a barge-in's budget (caller onset -> the agent's audio stops), ms, judged at
        ``budget``'s percentile; default :data:`~voicebudget.BARGE_IN_BUDGET_MS` (500 ms, its sources there).
    :returns: the verdict; :attr:`AudioCheck.passed` needs both voice-to-voice and the barge-ins within budget.
    :raises ScenarioError: a file cannot be read, the audio extra is missing, the number of traces is
        neither 0 nor the number of recordings, ``barge_in_budget_ms`` is not > 0, or no turn is usable.
    :warns ClippedRecording: a recording's speech is clipped (:func:`~voicebudget.audio.analyse_recording`).
    """
    from voicebudget.traces._api import read_traces

    budget = budget or Budget()
    barge_budget = barge_in_budget(budget, barge_in_budget_ms)
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
    return AudioCheck(result, calls, joins, barge, judge_barge_ins(calls, barge_budget))


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
