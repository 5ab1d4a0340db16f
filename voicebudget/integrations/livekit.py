"""A LiveKit ``AgentSession`` hook: its metrics events become turns of a :class:`~voicebudget.TurnRecorder`.

One line to attach::

    from voicebudget.integrations.livekit import BudgetHook

    hook = BudgetHook(voicebudget.Budget(total_ms=800)).attach(session)   # an AgentSession
    ...
    hook.report().raise_for_budget()     # the same Report as the simulator and `check`

The hook listens to the session's ``metrics_collected`` events (``EOUMetrics``, ``LLMMetrics``,
``TTSMetrics``, ``RealtimeModelMetrics``; ``STTMetrics`` and ``VADMetrics`` carry no ``speech_id`` and
are skipped, as ``check`` skips them) and to ``close`` (pending turns are closed). A turn is read,
as soon as its ``speech_id`` has its end-of-utterance, LLM and TTS metrics (a realtime model's
metrics are a turn each), by the same reader as ``voicebudget check`` reads the same metrics written
as ``model_dump()`` JSON lines (:mod:`voicebudget.traces._livekit`): the same stages in ms
(``endpointing`` = ``end_of_utterance_delay``, ``asr`` = ``transcription_delay`` inside it,
``llm_ttft``, ``tts_ttfb``), the same total (LiveKit's documented turn latency ``eou + ttft + ttfb``,
server side) and the same flags (``ttft = -1``, absurd values, a missing metric). On the recorder,
each turn's stages are laid end to end from ``speech_end`` (``asr`` from 0, inside the endpointing
wait) and ``first_audio`` is at the total; a flagged turn gets no ``first_audio`` and is listed with
its anomaly as the reason, as ``check`` leaves flagged turns out. ``check``'s stale-value test
(a value repeated to the last digit on every turn of a file) needs the whole file and is not run.

LiveKit Agents 1.8 logs that ``metrics_collected`` is deprecated in favour of ``ChatMessage.metrics``
(per-turn) and ``session_usage_updated``; it still emits it, and it is what ``check`` reads from logs.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from voicebudget.checker._recorder import FIRST_AUDIO, SPEECH_END, TurnRecorder
from voicebudget.traces._livekit import read_livekit
from voicebudget.traces._table import ON_PATH, TraceTurn

if TYPE_CHECKING:
    from voicebudget._budget import Budget
    from voicebudget.checker._analysis import RecorderReport

__all__ = ["BudgetHook"]

_PIPELINE = ("eou_metrics", "llm_metrics", "tts_metrics")


class BudgetHook:
    """Turns a LiveKit session's metrics into recorder turns (see the module docstring).

    :param budget: what :meth:`report` judges against; default ``Budget()`` (800 ms at p95).
    :param recorder: the recorder to add turns to (e.g. the pytest ``voice_budget`` fixture);
        default a new one named ``name``.
    :param name: the new recorder's name.
    """

    def __init__(self, budget: Budget | None = None, *, recorder: TurnRecorder | None = None, name: str = "livekit"):
        self.budget = budget
        self.recorder = recorder if recorder is not None else TurnRecorder(name)
        self._pending: dict[str, list[dict[str, Any]]] = {}
        self._done: set[str] = set()

    def attach(self, session: Any) -> BudgetHook:
        """Listen to ``session``'s ``metrics_collected`` and ``close`` events. :returns: ``self``."""
        session.on("metrics_collected", self.on_metrics_collected)
        session.on("close", lambda _event: self.flush())
        return self

    def on_metrics_collected(self, event: Any) -> None:
        """A ``MetricsCollectedEvent`` (or a metrics object itself)."""
        metrics = getattr(event, "metrics", event)
        self.add(metrics.model_dump(mode="json") if hasattr(metrics, "model_dump") else dict(metrics))

    def add(self, metrics: dict[str, Any]) -> None:
        """One metrics object as ``model_dump()`` gives it (seconds)."""
        kind = metrics.get("type")
        if kind == "realtime_model_metrics":
            self._read([metrics], str(metrics.get("request_id") or ""))
            return
        speech_id = metrics.get("speech_id") or metrics.get("sequence_id")
        if kind not in _PIPELINE or not isinstance(speech_id, str) or not speech_id or speech_id in self._done:
            return  # STT/VAD metrics, or a later request of a turn already read (a tool-call follow-up)
        lines = self._pending.setdefault(speech_id, [])
        lines.append(metrics)
        if {m.get("type") for m in lines} >= set(_PIPELINE):
            del self._pending[speech_id]
            self._read(lines, speech_id)

    def flush(self) -> None:
        """Read the turns still missing a metric (they are flagged, as ``check`` flags them)."""
        pending, self._pending = self._pending, {}
        for speech_id, lines in pending.items():
            self._read(lines, speech_id)

    def _read(self, lines: list[dict[str, Any]], turn_id: str) -> None:
        self._done.add(turn_id)
        text = "\n".join(json.dumps(m) for m in lines)
        table = read_livekit(text, origin=f"livekit session {turn_id}")
        for trace_turn in table.turns:
            reason = "; ".join(a.reason for a in table.anomalies)
            self._record(trace_turn, reason)

    def _record(self, trace_turn: TraceTurn, reason: str) -> None:
        turn = self.recorder.turn(trace_turn.id)
        turn.mark(SPEECH_END)
        stages = trace_turn.stages_ms
        if "asr" in stages:
            turn.add_stage("asr", start_ms=0.0, end_ms=stages["asr"])
        cursor = 0.0
        for name in ON_PATH:
            if name in stages:
                turn.add_stage(name, start_ms=cursor, end_ms=cursor + stages[name])
                cursor += stages[name]
        if trace_turn.complete and not trace_turn.flagged and trace_turn.total_ms is not None:
            turn.mark(FIRST_AUDIO, at_ms=trace_turn.total_ms)
        turn.end()
        if trace_turn.flagged or not trace_turn.complete:
            turn.reason = reason or "no total"

    def report(self, budget: Budget | None = None) -> RecorderReport:
        """The recorder's report against ``budget`` (default: the hook's budget), pending turns read first.

        :raises ScenarioError: no complete turn.
        """
        self.flush()
        return self.recorder.report(budget or self.budget)
