"""What the OpenTelemetry and Prometheus sinks share: a budget and an agent name, the wiring to a recorder,
and the guard's decisions as ``guard`` events. Each sink says how it sends a turn (``record``) and an event
(``_emit``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from voicebudget._budget import Budget
from voicebudget.checker._guard import GuardDecision
from voicebudget.telemetry._figures import BudgetEvent, TurnFigures, check_recorder, check_warning, decision_event

if TYPE_CHECKING:
    from voicebudget.checker._recorder import Turn, TurnRecorder

DEFAULT_AGENT = "voicebudget"
"""The agent name when neither the call nor the sink gives one."""


class _Sink:
    budget: Budget | None
    warning_ms: float | None
    agent_name: str | None

    def attach(self, recorder: TurnRecorder, *, budget: Budget | None = None) -> Callable[[], None]:
        """Send (OpenTelemetry) or count (Prometheus) each turn of ``recorder`` as it ends.

        :param budget: used when the sink has no budget of its own (an integration passes its budget).
        :returns: a function that detaches the sink again.
        :raises TypeError: ``recorder`` is not a :class:`~voicebudget.TurnRecorder`.
        :raises ValueError: the sink's ``warning_ms`` is over the total of the budget it would judge by.
        """
        check_recorder(recorder)
        judged = self._budget(budget)
        agent = self.agent_name if self.agent_name is not None else recorder.name
        return recorder.add_listener(lambda turn: self.record(turn, judged, agent_name=agent))

    def record(self, turn: Turn, budget: Budget | None = None, *, agent_name: str | None = None) -> TurnFigures:
        raise NotImplementedError  # pragma: no cover - each sink records its own way

    def record_decision(
        self,
        decision: GuardDecision,
        *,
        budget: Budget | None = None,
        speech_id: str | None = None,
        agent_name: str | None = None,
    ) -> BudgetEvent:
        """Send or count a guard decision that the turn will not fit as a ``guard`` event.

        :param budget: the guard's budget (default the sink's, else ``Budget()``).
        :param speech_id: the turn's name, when known.
        :param agent_name: the agent (``gen_ai.agent.name``, Prometheus' ``agent`` label); default the sink's
            ``agent_name``, else ``"voicebudget"``.
        :returns: the event.
        :raises TypeError: ``decision`` is not a :class:`~voicebudget.GuardDecision`.
        """
        if not isinstance(decision, GuardDecision):
            raise TypeError(f"decision must be a voicebudget.GuardDecision (from BudgetGuard.check), got {decision!r}")
        event = decision_event(decision, self._budget(budget), speech_id)
        self._emit(event, agent_name or self.agent_name or DEFAULT_AGENT)
        return event

    def _emit(self, event: BudgetEvent, agent: str) -> None:
        raise NotImplementedError  # pragma: no cover - each sink sends events its own way

    def _budget(self, given: Budget | None) -> Budget:
        judged = self.budget if self.budget is not None else given if given is not None else Budget()
        check_warning(self.warning_ms, judged)
        return judged
