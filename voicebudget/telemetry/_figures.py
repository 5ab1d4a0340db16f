"""What telemetry says about one ended turn: its figures on the budget's terms, and its budget events.

Computed once per turn from the recorder's own data, the same way the report computes them
(:mod:`voicebudget.checker._analysis`): a complete turn's voice-to-voice latency is ``first_audio -
speech_end``; each stage's figure is the time credited to it on the critical path (the stage figures of a
turn add up to its voice-to-voice latency, ``untracked`` included); a stage with a span but no credited time
counts 0 ms, as in the report. Everything here is in ms; seconds only where it leaves the process (the
OpenTelemetry and Prometheus sinks, and :class:`BudgetEvent`, whose shape is LiveKit's).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from voicebudget._budget import Budget
from voicebudget.checker._analysis import attribute_ns
from voicebudget.checker._recorder import FIRST_AUDIO, UNTRACKED, Turn

if TYPE_CHECKING:
    from voicebudget.checker._guard import GuardDecision

__all__ = [
    "EVENT_NAME",
    "TURN_BUCKETS_S",
    "VOICE_TO_VOICE",
    "BudgetEvent",
    "TurnFigures",
    "check_recorder",
    "check_sink",
    "check_warning",
    "given_sinks",
    "decision_event",
    "turn_events",
    "turn_figures",
]

_NS_PER_MS = 1_000_000

TURN_BUCKETS_S: tuple[float, ...] = (
    0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 7.5, 10.0,
)  # fmt: skip
"""Histogram bucket boundaries, s: 50 ms to 10 s, 50 ms apart up to 300 ms (a stage's range) and 100 ms apart
around the 800 ms budget (a boundary at 0.8 s, so the bucket count there is the turns within the default
budget), coarser into the tail. LiveKit's ``lk.agents.turn.*`` histograms, also in seconds, leave the
boundaries to the SDK's defaults (livekit/agents ``livekit-agents/livekit/agents/telemetry/otel_metrics.py``,
read 2026-12-02), whose first boundaries (0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000 ...) are made for
ms and put every voice turn in the first two buckets."""

VOICE_TO_VOICE = "voice_to_voice"
"""The ``stage`` label of the voice-to-voice total in the Prometheus histogram."""

EVENT_NAME = "voicebudget.latency_budget"
"""The OpenTelemetry event name (a log record's ``event_name``) of a :class:`BudgetEvent`."""

Level = Literal["warning", "exceeded"]
Source = Literal["turn", "stage", "guard"]


@dataclass(frozen=True)
class BudgetEvent:
    """A turn reached a latency threshold: the shape of LiveKit's proposed ``latency_budget`` event
    (``LatencyBudgetEvent``: ``type``, ``level``, ``latency``, ``threshold``, ``budget``, ``speech_id``,
    ``created_at``, times in seconds; livekit/agents PR 7145, ``livekit-agents/livekit/agents/voice/events.py``
    at commit 49ad2ec, read 2026-12-02), so one handler serves both, plus where it came from.

    - ``source="turn"``: the turn's voice-to-voice latency ``latency`` exceeded ``budget`` (level
      ``exceeded``, ``threshold`` = the budget), or reached the warning threshold (level ``warning``,
      ``threshold`` = the warning), as LiveKit's session does with ``LatencyBudgetOptions(budget=...,
      warning=...)``.
    - ``source="stage"``: the time credited to ``stage`` (``latency``) exceeded its allocation (``budget`` =
      ``threshold`` = the allocation), level ``exceeded``.
    - ``source="guard"``: the live guard decided that the turn will not fit: ``latency`` = the time spent so
      far plus the rest predicted at the budget's percentile, ``threshold`` = ``budget`` = the voice-to-voice
      budget, ``p_fit`` its probability of fitting, level ``warning`` (a prediction, not a measurement).

    :ivar latency: s. :ivar threshold: s. :ivar budget: s.
    :ivar speech_id: the turn's name (a LiveKit hook's turns are named by their ``speech_id``); None when the
        turn is not known yet (a guard decision in a LiveKit session).
    :ivar created_at: when the event was made, s since the epoch.
    """

    level: Level
    latency: float
    threshold: float
    budget: float
    speech_id: str | None
    source: Source = "turn"
    stage: str | None = None
    p_fit: float | None = None
    created_at: float = field(default_factory=time.time)
    type: Literal["latency_budget"] = "latency_budget"

    def to_dict(self) -> dict[str, Any]:
        """The event as JSON-ready data (LiveKit's field names, seconds)."""
        return {
            "type": self.type,
            "level": self.level,
            "latency": self.latency,
            "threshold": self.threshold,
            "budget": self.budget,
            "speech_id": self.speech_id,
            "source": self.source,
            "stage": self.stage,
            "p_fit": self.p_fit,
            "created_at": self.created_at,
        }


@dataclass(frozen=True)
class TurnFigures:
    """One ended turn on the budget's terms (ms).

    :ivar voice_to_voice_ms: None unless the turn is complete.
    :ivar stages_ms: stage -> time credited on the critical path (complete turns; empty otherwise), in the
        order the stages started, ``untracked`` last; the values add up to ``voice_to_voice_ms``.
    :ivar verdict: ``within`` (voice-to-voice <= the budget's total) or ``over``; None unless complete.
    :ivar tail_driver: the stage with the most credited time (the first of equals); None unless complete.
    :ivar start_ns: the turn's origin (``speech_end``), on the recorder's clock.
    :ivar end_ns: ``first_audio`` for a complete turn, else the last instant recorded in it (or its origin).
    """

    turn: Turn
    voice_to_voice_ms: float | None
    stages_ms: dict[str, float]
    verdict: Literal["within", "over"] | None
    tail_driver: str | None
    start_ns: int
    end_ns: int

    @property
    def status(self) -> str:
        """The turn's status (``complete``, ``incomplete``, ``cancelled``, ``errored``, ``invalid``)."""
        return self.turn.status


def turn_figures(turn: Turn, budget: Budget) -> TurnFigures:
    """The figures of an ended turn against ``budget``."""
    lo = turn.origin_ns
    if turn.status != "complete":
        last = max([lo, *turn.marks_ns.values(), *(sp.end_ns for sp in turn.spans)])
        return TurnFigures(turn, None, {}, None, None, lo, last)
    hi = turn.marks_ns[FIRST_AUDIO]
    spans = sorted(turn.spans, key=lambda sp: sp.start_ns)
    credited = attribute_ns(spans, lo, hi)
    stages = {sp.name: 0.0 for sp in spans}
    stages[UNTRACKED] = 0.0
    for name, ns in credited.items():
        stages[name] = ns / _NS_PER_MS
    v2v = (hi - lo) / _NS_PER_MS
    driver = max(stages, key=lambda k: stages[k])
    return TurnFigures(turn, v2v, stages, "within" if v2v <= budget.total_ms else "over", driver, lo, hi)


def turn_events(figures: TurnFigures, budget: Budget, warning_ms: float | None) -> list[BudgetEvent]:
    """The budget events of a complete turn: the turn over its budget (or past the warning threshold), and
    each stage over its allocation.

    :param warning_ms: the warning threshold, ms (None: no warnings).
    """
    v2v = figures.voice_to_voice_ms
    if v2v is None:
        return []
    name = figures.turn.name
    total_s = budget.total_ms / 1000
    events: list[BudgetEvent] = []
    if v2v > budget.total_ms:
        events.append(BudgetEvent("exceeded", v2v / 1000, total_s, total_s, name))
    elif warning_ms is not None and v2v >= warning_ms:
        events.append(BudgetEvent("warning", v2v / 1000, warning_ms / 1000, total_s, name))
    for stage, allocated in budget.allocations_ms().items():
        ms = figures.stages_ms.get(stage)
        if ms is not None and ms > allocated:
            events.append(BudgetEvent("exceeded", ms / 1000, allocated / 1000, allocated / 1000, name, "stage", stage))
    return events


def decision_event(decision: GuardDecision, budget: Budget, speech_id: str | None) -> BudgetEvent:
    """The ``guard`` event of a decision that the turn will not fit (see :class:`BudgetEvent`)."""
    total_s = budget.total_ms / 1000
    predicted_s = (decision.elapsed_ms + decision.rest_ms) / 1000
    return BudgetEvent("warning", predicted_s, total_s, total_s, speech_id, "guard", decision.stage, decision.p_fit)


def check_sink(budget: object, warning_ms: object, agent_name: object) -> None:
    """Refuse a sink's settings of the wrong type or range at construction (:class:`Telemetry`,
    :class:`PrometheusMetrics`), not at the first turn inside a framework's callback.

    :raises TypeError: ``budget`` not a :class:`~voicebudget.Budget`, ``agent_name`` not text.
    :raises ValueError: ``warning_ms`` not a finite number > 0, or over the budget's total.
    """
    if warning_ms is not None and (
        isinstance(warning_ms, bool) or not isinstance(warning_ms, int | float) or not 0 < warning_ms < float("inf")
    ):
        raise ValueError(f"warning_ms must be a finite number > 0 ms, got {warning_ms!r}")
    if budget is not None and not isinstance(budget, Budget):
        raise TypeError(f"budget must be a voicebudget.Budget (e.g. Budget(total_ms=800)), got {budget!r}")
    if agent_name is not None and not isinstance(agent_name, str):
        raise TypeError(f"agent_name must be text (default the recorder's name), got {agent_name!r}")
    if budget is not None:
        check_warning(warning_ms, budget)


def check_warning(warning_ms: float | None, budget: Budget) -> None:
    """A warning above the budget's total never fires (a turn past it is ``exceeded``): refuse it, as LiveKit's
    ``LatencyBudgetOptions`` does.

    :raises ValueError: ``warning_ms`` over ``budget.total_ms``.
    """
    if warning_ms is not None and warning_ms > budget.total_ms:
        raise ValueError(
            f"warning_ms ({warning_ms:g} ms) must be no greater than the budget's total_ms ({budget.total_ms:g})"
        )


def check_recorder(recorder: object) -> None:
    """:raises TypeError: ``recorder`` is not a :class:`~voicebudget.TurnRecorder` (it has no ``add_listener``)."""
    if not callable(getattr(recorder, "add_listener", None)):
        raise TypeError(
            "recorder must be a voicebudget.TurnRecorder (an integration's is observer.recorder / hook.recorder), "
            f"got {recorder!r}"[:200]
        )


def given_sinks(telemetry: Any, prometheus: Any) -> list[Any]:
    """An integration's ``telemetry`` and ``prometheus`` arguments that are set, each checked to be a sink.

    :raises TypeError: one is not a sink (it has no ``attach``), naming it.
    """
    for name, sink, kind in (
        ("telemetry", telemetry, "Telemetry()"),
        ("prometheus", prometheus, "PrometheusMetrics()"),
    ):
        if sink is not None and not callable(getattr(sink, "attach", None)):
            raise TypeError(f"{name} must be a voicebudget.telemetry.{kind}, got {sink!r}"[:200])
    return [s for s in (telemetry, prometheus) if s is not None]
