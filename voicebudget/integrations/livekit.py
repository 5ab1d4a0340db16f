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

**Live guard.** Given a :class:`~voicebudget.BudgetGuard` (``guard=``), the hook follows each turn as
it happens, from the session's state events: the user's ``speaking -> listening`` change (LiveKit's VAD
end of speech, ``vad_silence_s`` after the actual end: the ``min_silence_duration`` of the session's VAD)
starts a guarded turn in phase ``commit`` (endpointing, with ASR finalising inside it), the agent's
change to ``thinking`` (LiveKit starts the reply: the LLM request) enters phase ``reply`` (LLM TTFT,
then TTS TTFB: no public event separates them), and the hook asks the guard every ``poll_ms`` until the
agent is ``speaking`` (or the user speaks again). On the turn's first decision that does not fit the
guard's policy is called (e.g. ``lambda d: session.say("One moment.")``). Each complete turn the hook
reads from the metrics is also learnt by the guard (``learn=True``), so a guard started from a few
turns of a recorder (or a fitted scenario) adapts to the live session. Build the guard with
:data:`BudgetHook.PHASES` so its stages are the phases the hook can see.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from voicebudget.checker._recorder import FIRST_AUDIO, SPEECH_END, Turn, TurnRecorder
from voicebudget.telemetry._figures import given_sinks
from voicebudget.traces._livekit import read_livekit
from voicebudget.traces._table import ON_PATH, TraceTurn

if TYPE_CHECKING:
    from voicebudget._budget import Budget
    from voicebudget.checker._analysis import RecorderReport
    from voicebudget.checker._guard import BudgetGuard, GuardDecision, GuardedTurn
    from voicebudget.telemetry import PrometheusMetrics, Telemetry

__all__ = ["BudgetHook"]

_PIPELINE = ("eou_metrics", "llm_metrics", "tts_metrics")


class BudgetHook:
    """Turns a LiveKit session's metrics into recorder turns (see the module docstring).

    :param budget: what :meth:`report` judges against; default ``Budget()`` (800 ms at p95).
    :param recorder: the recorder to add turns to (e.g. the pytest ``voice_budget`` fixture);
        default a new one named ``name``.
    :param name: the new recorder's name.
    :param guard: a live guard to run during each turn (module docstring); its stages must include
        ``commit`` and ``reply`` (build it with ``phases=BudgetHook.PHASES``).
    :param vad_silence_s: the VAD's silence before it reports the end of speech, s: the guarded turn
        starts that long before the ``user_state_changed`` event. Default 0.55 s, Silero's
        ``VAD.load(min_silence_duration=0.55)`` (livekit/agents,
        ``livekit-plugins/livekit-plugins-silero/livekit/plugins/silero/vad.py``, read 2026-12-01).
    :param poll_ms: how often the guard is asked while the agent is thinking, ms.
    :param learn: the guard learns each complete turn the hook reads.
    :param clock: a monotonic integer-ns clock for the guarded turns (tests pass a fake one).
    :param telemetry: sends each turn to OpenTelemetry as it is read (judged against ``budget`` unless it has
        a budget of its own), and the guard's first decision in a turn that it will not fit as a ``guard``
        event (docs/telemetry.md).
    :param prometheus: counts the same in Prometheus metrics (serve them with
        :func:`voicebudget.telemetry.start_http_server`).
    :raises ValueError: a guard without ``commit``/``reply`` stages, or (with ``learn``) not built with
        ``phases=BudgetHook.PHASES``; ``vad_silence_s < 0`` or ``poll_ms <= 0``.
    """

    PHASES: dict[str, tuple[str, ...]] = {"commit": ("endpointing", "asr"), "reply": ("llm_ttft", "tts_ttfb")}
    """The stages the hook's turns have, grouped by what a live LiveKit session can tell apart: from the
    end of speech until the agent starts thinking (``commit``), then until it speaks (``reply``)."""

    def __init__(
        self,
        budget: Budget | None = None,
        *,
        recorder: TurnRecorder | None = None,
        name: str = "livekit",
        guard: BudgetGuard | None = None,
        vad_silence_s: float = 0.55,
        poll_ms: float = 20.0,
        learn: bool = True,
        clock: Callable[[], int] = time.perf_counter_ns,
        telemetry: Telemetry | None = None,
        prometheus: PrometheusMetrics | None = None,
    ):
        if guard is not None:
            self._check_guard(guard, learn)
        if not vad_silence_s >= 0 or not poll_ms > 0:
            raise ValueError(f"need vad_silence_s >= 0 and poll_ms > 0; got {vad_silence_s}, {poll_ms}")
        self.budget = budget
        self.recorder = recorder if recorder is not None else TurnRecorder(name)
        self.sinks: list[Telemetry | PrometheusMetrics] = given_sinks(telemetry, prometheus)
        """Where each turn and the guard's first miss in a turn go."""
        for sink in self.sinks:
            sink.attach(self.recorder, budget=budget)
        self.guard = guard
        self.vad_silence_s = vad_silence_s
        self.poll_s = poll_ms / 1000.0
        self.learn = learn
        self.clock = clock
        self.decisions: list[GuardDecision] = []
        """Each guarded turn's last decision (the one the policy acted on, when it did)."""
        self._live: GuardedTurn | None = None
        self._pending: dict[str, list[dict[str, Any]]] = {}
        self._done: set[str] = set()

    def attach(self, session: Any) -> BudgetHook:
        """Listen to ``session``'s ``metrics_collected`` and ``close`` events, and with a guard to its
        ``user_state_changed`` and ``agent_state_changed`` events. :returns: ``self``."""
        session.on("metrics_collected", self.on_metrics_collected)
        session.on("close", lambda _event: self.flush())
        if self.guard is not None:
            session.on("user_state_changed", self.on_user_state_changed)
            session.on("agent_state_changed", self.on_agent_state_changed)
        return self

    def on_user_state_changed(self, event: Any) -> None:
        """A ``UserStateChangedEvent``: ``speaking -> listening`` starts a guarded turn; speaking again
        ends the one being followed."""
        if self.guard is None:
            return
        if event.new_state == "speaking":
            self._stop()
        elif event.old_state == "speaking" and event.new_state == "listening":
            self._stop()
            since_event_s = max(0.0, time.time() - float(event.created_at))
            start = self.clock() - round((since_event_s + self.vad_silence_s) * 1e9)
            self._live = self.guard.turn(clock=self.clock, start_ns=start)
            self._live.enter("commit", at_ns=start)

    def on_agent_state_changed(self, event: Any) -> None:
        """An ``AgentStateChangedEvent``: ``thinking`` enters the reply and starts asking the guard;
        ``speaking`` (first audio) ends the turn being followed."""
        live = self._live
        if live is None:
            return
        if event.new_state == "thinking" and live.stage == "commit":
            live.enter("reply")
            asyncio.get_running_loop().create_task(self._watch(live))
        elif event.new_state == "speaking":
            self._stop()

    async def _watch(self, live: GuardedTurn) -> None:
        decision = None
        told = False
        while self._live is live:
            decision = live.check()
            if not decision.fits and not told:  # the turn's first miss: a guard event
                told = True
                for sink in self.sinks:  # named as the turns are (the recorder's name, unless the sink has one)
                    sink.record_decision(
                        decision, budget=live.guard.budget, agent_name=sink.agent_name or self.recorder.name
                    )
            if live.acted:
                break
            await asyncio.sleep(self.poll_s)
        if decision is not None:
            self.decisions.append(decision)

    def _stop(self) -> None:
        self._live = None

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

    @classmethod
    def _check_guard(cls, guard: BudgetGuard, learn: bool) -> None:
        """A guard has the hook's phases as stages, and one that learns merges the turns' stages into them.

        :raises ValueError: it does not.
        """
        if not set(cls.PHASES) <= set(guard.stages):
            missing = sorted(set(cls.PHASES) - set(guard.stages))
            raise ValueError(
                f"the guard's stages {list(guard.stages)} lack {missing}; build it with phases=BudgetHook.PHASES"
            )
        if learn and guard.phases != cls.PHASES:
            raise ValueError(
                f"a guard that learns the hook's turns must merge their stages: build it with "
                f"phases=BudgetHook.PHASES (got phases={guard.phases}), or pass learn=False"
            )

    def _record(self, trace_turn: TraceTurn, reason: str) -> None:
        turn = self.recorder.turn(trace_turn.id)
        turn.mark(SPEECH_END)
        _add_stages(turn, trace_turn.stages_ms)
        measured = trace_turn.complete and not trace_turn.flagged and trace_turn.total_ms is not None
        if measured:
            turn.mark(FIRST_AUDIO, at_ms=trace_turn.total_ms)
        turn.end(reason=None if measured else reason or "no total")
        if measured and self.guard is not None and self.learn:
            self.guard.learn(turn)

    def report(self, budget: Budget | None = None) -> RecorderReport:
        """The recorder's report against ``budget`` (default: the hook's budget), pending turns read first.

        :raises ScenarioError: no complete turn.
        """
        self.flush()
        return self.recorder.report(budget or self.budget)


def _add_stages(turn: Turn, stages: Mapping[str, float]) -> None:
    """A read turn's stages on the recorder's turn: ASR from the end of speech, the others end to end."""
    if "asr" in stages:
        turn.add_stage("asr", start_ms=0.0, end_ms=stages["asr"])
    cursor = 0.0
    for name in ON_PATH:
        if name in stages:
            turn.add_stage(name, start_ms=cursor, end_ms=cursor + stages[name])
            cursor += stages[name]
