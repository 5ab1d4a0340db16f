"""OpenTelemetry out: each ended turn of a recorder becomes histogram points, a counter increment, a span,
and budget events (log records with an event name, a Python callback).

Only the OpenTelemetry *API* is used (``opentelemetry-api``, the ``otel`` extra): the providers passed in,
else the global ones, which are no-ops until the application installs an SDK. Names and units are listed
in docs/telemetry.md (and pinned by tests/test_telemetry.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from voicebudget import __version__
from voicebudget._budget import Budget
from voicebudget.telemetry._figures import (
    EVENT_NAME,
    TURN_BUCKETS_S,
    BudgetEvent,
    TurnFigures,
    check_sink,
    turn_events,
    turn_figures,
)
from voicebudget.telemetry._sink import DEFAULT_AGENT, _Sink

if TYPE_CHECKING:
    from voicebudget.checker._guard import GuardDecision, Policy
    from voicebudget.checker._recorder import Turn

__all__ = ["Telemetry"]

SCOPE = "voicebudget"
"""The instrumentation scope's name (meter and tracer)."""
TURN_DURATION = "voicebudget.turn.duration"
STAGE_DURATION = "voicebudget.stage.duration"
TURN_COUNT = "voicebudget.turn.count"
AGENT_NAME = "gen_ai.agent.name"
STAGE = "voicebudget.stage"
STATUS = "voicebudget.turn.status"
VERDICT = "voicebudget.turn.verdict"
TAIL_DRIVER = "voicebudget.turn.tail_driver"
EVENT_COUNT = "voicebudget.budget_event.count"
EVENT_SOURCE = "voicebudget.event.source"
EVENT_LEVEL = "voicebudget.event.level"
OPERATION = "invoke_agent"
"""The turn span's ``gen_ai.operation.name``: the GenAI conventions' voice-agent turn container
(open-telemetry/semantic-conventions-genai ``docs/gen-ai/gen-ai-voice-agents.md``, read 2026-12-02)."""
END_REASON = {"complete": "completed", "cancelled": "interrupted"}
"""Turn status -> ``gen_ai.agent.invocation.end_reason`` (the other statuses have none)."""
OTEL_EXTRA = "pip install 'voicebudget[otel]'"


class Telemetry(_Sink):
    """Sends what a recorder and the live guard measure to OpenTelemetry: attach it to a recorder, or pass it to
    an integration (``BudgetObserver(budget, telemetry=Telemetry())``, ``BudgetHook(budget, telemetry=...)``).

    Per ended turn (docs/telemetry.md lists every name, attribute and unit):

    - ``voicebudget.turn.duration`` (histogram, s): voice-to-voice latency of each complete turn;
    - ``voicebudget.stage.duration`` (histogram, s, attribute ``voicebudget.stage``): the time credited to each
      stage of a complete turn on its critical path, as the report credits it (``untracked`` included);
    - ``voicebudget.turn.count`` (counter): every ended turn, with ``voicebudget.turn.status`` and, for a
      complete one, ``voicebudget.turn.verdict`` (``within``/``over`` the budget's total) and
      ``voicebudget.turn.tail_driver`` (its stage with the most credited time);
    - a span ``invoke_agent {agent}`` from the end of speech to the first audio (or the turn's last instant),
      the GenAI conventions' voice-agent turn container, with the stage durations, the verdict and the
      budget as attributes (a root span: a turn ends in whatever callback the framework runs, whose span is
      not the turn's parent);
    - budget events (:class:`~voicebudget.telemetry.BudgetEvent`): the turn over its budget or past
      ``warning_ms``, a stage over its allocation; each is passed to ``on_event``, emitted as a log record
      named ``voicebudget.latency_budget`` (in the turn span's context), added to the span as a span event,
      and counted in ``voicebudget.budget_event.count``.

    The guard's decisions that a turn will not fit become ``guard`` events through :meth:`record_decision`
    (the LiveKit hook calls it) or a policy wrapped with :meth:`policy`.

    Every point carries ``gen_ai.agent.name``. Histograms advise :data:`~voicebudget.telemetry.TURN_BUCKETS_S`
    as their bucket boundaries (50 ms to 10 s).

    :param budget: what each turn is judged against; default the budget the integration was given, else
        ``Budget()`` (800 ms at p95).
    :param meter_provider: an OpenTelemetry ``MeterProvider``; default the global one.
    :param tracer_provider: a ``TracerProvider``; default the global one.
    :param logger_provider: a ``LoggerProvider`` for the events; default the global one.
    :param warning_ms: a turn that reaches it (and is within its budget) gets a ``warning`` event, ms, like
        LiveKit's ``LatencyBudgetOptions(warning=...)``; None (default): no warnings.
    :param on_event: called with each :class:`~voicebudget.telemetry.BudgetEvent` (exceptions propagate).
    :param agent_name: the ``gen_ai.agent.name`` attribute; default the recorder's name.
    :raises ImportError: the OpenTelemetry API is not installed (the ``otel`` extra).
    :raises TypeError: ``budget`` not a :class:`~voicebudget.Budget` (``800`` for ``Budget(total_ms=800)``),
        ``on_event`` not callable, ``agent_name`` not text, or a provider without its ``get_meter`` /
        ``get_tracer`` / ``get_logger`` (a reader or exporter given in its place).
    :raises ValueError: ``warning_ms`` not a finite number > 0, or over the budget's total (LiveKit's
        ``LatencyBudgetOptions`` refuses a warning greater than the budget; such a warning would never fire);
        :meth:`attach` checks it against the budget it is given when the telemetry has none.
    """

    def __init__(
        self,
        budget: Budget | None = None,
        *,
        meter_provider: Any = None,
        tracer_provider: Any = None,
        logger_provider: Any = None,
        warning_ms: float | None = None,
        on_event: Callable[[BudgetEvent], object] | None = None,
        agent_name: str | None = None,
    ) -> None:
        try:  # lazy: the otel extra is optional, and `import voicebudget` must not import it
            from opentelemetry import _logs, metrics, trace
        except ImportError as exc:
            raise ImportError(f"voicebudget.telemetry.Telemetry needs the OpenTelemetry API: {OTEL_EXTRA}") from exc
        check_sink(budget, warning_ms, agent_name)
        if on_event is not None and not callable(on_event):
            raise TypeError(f"on_event must be callable (it is called with each BudgetEvent), got {on_event!r}")
        providers = (  # a reader or an exporter given for its provider failed at get_meter (AttributeError)
            ("meter_provider", meter_provider, "get_meter", "MeterProvider(metric_readers=[reader])"),
            ("tracer_provider", tracer_provider, "get_tracer", "a TracerProvider with a span processor"),
            ("logger_provider", logger_provider, "get_logger", "a LoggerProvider with a log record processor"),
        )
        for name, provider, method, inside in providers:
            if provider is not None and not callable(getattr(provider, method, None)):
                raise TypeError(
                    f"{name} must be an OpenTelemetry provider (it has .{method}()), got "
                    f"{type(provider).__name__}; readers and exporters go inside one: {inside}"
                )
        self.budget = budget
        self.warning_ms = warning_ms
        self.on_event = on_event
        self.agent_name = agent_name
        meters = meter_provider if meter_provider is not None else metrics.get_meter_provider()
        tracers = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        loggers = logger_provider if logger_provider is not None else _logs.get_logger_provider()
        meter = meters.get_meter(SCOPE, __version__)
        self._tracer = tracers.get_tracer(SCOPE, __version__)
        self._logger = loggers.get_logger(SCOPE, __version__)
        buckets = list(TURN_BUCKETS_S)
        self._turn_duration = meter.create_histogram(
            TURN_DURATION, unit="s", description="Voice-to-voice latency of a turn: first agent audio - end of speech",
            explicit_bucket_boundaries_advisory=buckets,
        )  # fmt: skip
        self._stage_duration = meter.create_histogram(
            STAGE_DURATION, unit="s", description="Time a stage held up a turn (its share of the critical path)",
            explicit_bucket_boundaries_advisory=buckets,
        )  # fmt: skip
        self._turn_count = meter.create_counter(
            TURN_COUNT, unit="{turn}", description="Turns ended, by status, verdict and tail driver"
        )
        self._event_count = meter.create_counter(
            EVENT_COUNT, unit="{event}", description="Budget events, by source (turn, stage, guard) and level"
        )

    # -- wiring ------------------------------------------------------------------------------------

    def policy(self, inner: Policy | None = None, *, speech_id: str | None = None) -> Policy:
        """A guard policy that reports each decision it is called with as a ``guard`` event, then calls
        ``inner`` (``BudgetGuard(..., policy=telemetry.policy(speak_filler))``): the guard calls its policy once
        per turn, with the turn's first decision that does not fit.

        :returns: the policy; its return value is ``inner``'s (None without one).
        """

        if inner is not None and not callable(inner):
            raise TypeError(f"inner must be callable (the policy the guard's decision goes to next), got {inner!r}")

        def report_then_act(decision: GuardDecision) -> object:
            action = inner(decision) if inner is not None else None
            self.record_decision(decision._replace(action=action), speech_id=speech_id)
            return action

        return report_then_act

    # -- sending -----------------------------------------------------------------------------------

    def record(self, turn: Turn, budget: Budget | None = None, *, agent_name: str | None = None) -> TurnFigures:
        """Send one ended turn (what :meth:`attach` does for each turn).

        :param budget: default the telemetry's, else ``Budget()``.
        :param agent_name: default the telemetry's ``agent_name``, else ``"voicebudget"``.
        :returns: the turn's figures.
        """
        judged = self._budget(budget)
        figures = turn_figures(turn, judged)
        agent = agent_name or self.agent_name or DEFAULT_AGENT
        self._record_metrics(figures, agent)
        events = turn_events(figures, judged, self.warning_ms)
        span = self._span(figures, judged, agent, events)
        if events:
            from opentelemetry import trace

            context = trace.set_span_in_context(span)
            for event in events:
                self._emit(event, agent, context)
        return figures

    def _record_metrics(self, figures: TurnFigures, agent: str) -> None:
        counted: dict[str, str] = {AGENT_NAME: agent, STATUS: figures.status}
        if figures.voice_to_voice_ms is not None:
            self._turn_duration.record(figures.voice_to_voice_ms / 1000, {AGENT_NAME: agent})
            for stage, ms in figures.stages_ms.items():
                self._stage_duration.record(ms / 1000, {AGENT_NAME: agent, STAGE: stage})
            counted[VERDICT] = figures.verdict or ""
            counted[TAIL_DRIVER] = figures.tail_driver or ""
        self._turn_count.add(1, counted)

    def _span(self, figures: TurnFigures, budget: Budget, agent: str, events: list[BudgetEvent]) -> Any:
        from opentelemetry.context import Context
        from opentelemetry.trace import SpanKind, Status, StatusCode

        turn = figures.turn
        to_epoch = time.time_ns() - turn.clock()
        span = self._tracer.start_span(
            f"{OPERATION} {agent}",
            context=Context(),
            kind=SpanKind.INTERNAL,
            attributes=span_attributes(figures, budget, agent),
            start_time=figures.start_ns + to_epoch,
        )
        if turn.status == "errored":
            span.set_status(Status(StatusCode.ERROR, turn.reason))
        for event in events:
            span.add_event(EVENT_NAME, event_attributes(event, agent), timestamp=figures.end_ns + to_epoch)
        span.end(end_time=figures.end_ns + to_epoch)
        return span

    def _emit(self, event: BudgetEvent, agent: str, context: Any = None) -> None:
        from opentelemetry._logs import LogRecord, SeverityNumber

        if self.on_event is not None:
            self.on_event(event)
        self._event_count.add(1, {AGENT_NAME: agent, EVENT_SOURCE: event.source, EVENT_LEVEL: event.level})
        severity = SeverityNumber.WARN if event.level == "exceeded" else SeverityNumber.INFO
        self._logger.emit(
            LogRecord(
                timestamp=round(event.created_at * 1e9),
                context=context,
                severity_number=severity,
                severity_text=severity.name,
                body={k: v for k, v in event.to_dict().items() if v is not None},
                attributes=event_attributes(event, agent),
                event_name=EVENT_NAME,
            )
        )


def span_attributes(figures: TurnFigures, budget: Budget, agent: str) -> dict[str, Any]:
    """The turn span's attributes (docs/telemetry.md): GenAI names where they apply, ``voicebudget.*`` else."""
    turn = figures.turn
    out: dict[str, Any] = {
        "gen_ai.operation.name": OPERATION,
        AGENT_NAME: agent,
        "voicebudget.turn.index": turn.index,
        "voicebudget.turn.name": turn.name,
        STATUS: turn.status,
        "voicebudget.budget.total": budget.total_ms / 1000,
        "voicebudget.budget.percentile": budget.percentile,
    }
    if turn.call is not None:
        out["gen_ai.conversation.id"] = turn.call
    if turn.status in END_REASON:
        out["gen_ai.agent.invocation.end_reason"] = END_REASON[turn.status]
    if turn.status == "errored":
        out["error.type"] = turn.reason.split(":", 1)[0]
    elif turn.status != "complete":
        out["voicebudget.turn.reason"] = turn.reason
    if figures.voice_to_voice_ms is not None:
        out["voicebudget.turn.voice_to_voice"] = figures.voice_to_voice_ms / 1000
        out["voicebudget.budget.slack"] = (budget.total_ms - figures.voice_to_voice_ms) / 1000
        out[VERDICT] = figures.verdict
        out[TAIL_DRIVER] = figures.tail_driver
        for stage, ms in figures.stages_ms.items():
            out[f"voicebudget.stage.{stage}.duration"] = ms / 1000
        for stage, ms in budget.allocations_ms().items():
            out[f"voicebudget.stage.{stage}.allocation"] = ms / 1000
    return out


def event_attributes(event: BudgetEvent, agent: str) -> dict[str, Any]:
    """A budget event's attributes (log record and span event): seconds, as the event's own fields."""
    out: dict[str, Any] = {
        AGENT_NAME: agent,
        EVENT_SOURCE: event.source,
        EVENT_LEVEL: event.level,
        "voicebudget.event.latency": event.latency,
        "voicebudget.event.threshold": event.threshold,
        "voicebudget.event.budget": event.budget,
    }
    if event.speech_id is not None:
        out["voicebudget.turn.name"] = event.speech_id
    if event.stage is not None:
        out[STAGE] = event.stage
    if event.p_fit is not None:
        out["voicebudget.event.p_fit"] = event.p_fit
    return out
