"""OpenTelemetry out: each ended turn of a recorder becomes histogram points and a counter increment.

Only the OpenTelemetry *API* is used (``opentelemetry-api``, the ``otel`` extra): the providers passed in,
else the global ones, which are no-ops until the application installs an SDK. Names and units are listed
in docs/telemetry.md (and pinned by tests/test_telemetry.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from voicebudget import __version__
from voicebudget.telemetry._figures import TURN_BUCKETS_S, TurnFigures, turn_figures

if TYPE_CHECKING:
    from voicebudget._budget import Budget
    from voicebudget.checker._recorder import Turn, TurnRecorder

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
OTEL_EXTRA = "pip install 'voicebudget[otel]'"


class Telemetry:
    """Sends what a recorder measures to OpenTelemetry: attach it to a recorder, or pass it to an integration
    (``BudgetObserver(budget, telemetry=Telemetry())``, ``BudgetHook(budget, telemetry=...)``).

    Per ended turn (docs/telemetry.md lists every name and unit):

    - ``voicebudget.turn.duration`` (histogram, s): voice-to-voice latency of each complete turn;
    - ``voicebudget.stage.duration`` (histogram, s, attribute ``voicebudget.stage``): the time credited to each
      stage of a complete turn on its critical path, as the report credits it (``untracked`` included);
    - ``voicebudget.turn.count`` (counter): every ended turn, with ``voicebudget.turn.status`` and, for a
      complete one, ``voicebudget.turn.verdict`` (``within``/``over`` the budget's total) and
      ``voicebudget.turn.tail_driver`` (its stage with the most credited time).

    Every point carries ``gen_ai.agent.name`` (the OpenTelemetry GenAI conventions' agent name). Histograms
    advise :data:`~voicebudget.telemetry.TURN_BUCKETS_S` as their bucket boundaries (50 ms to 10 s).

    :param budget: what each turn is judged against; default the budget the integration was given, else
        ``Budget()`` (800 ms at p95).
    :param meter_provider: an OpenTelemetry ``MeterProvider``; default the global one.
    :param agent_name: the ``gen_ai.agent.name`` attribute; default the recorder's name.
    :raises ImportError: the OpenTelemetry API is not installed (the ``otel`` extra).
    """

    def __init__(
        self, budget: Budget | None = None, *, meter_provider: Any = None, agent_name: str | None = None
    ) -> None:
        try:  # lazy: the otel extra is optional, and `import voicebudget` must not import it
            from opentelemetry import metrics
        except ImportError as exc:
            raise ImportError(f"voicebudget.telemetry.Telemetry needs the OpenTelemetry API: {OTEL_EXTRA}") from exc
        self.budget = budget
        self.agent_name = agent_name
        provider = meter_provider if meter_provider is not None else metrics.get_meter_provider()
        meter = provider.get_meter(SCOPE, __version__)
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

    def attach(self, recorder: TurnRecorder, *, budget: Budget | None = None) -> Callable[[], None]:
        """Send each turn of ``recorder`` as it ends.

        :param budget: used when the telemetry has none of its own (an integration passes its budget).
        :returns: a function that detaches the telemetry again.
        """
        from voicebudget._budget import Budget

        judged = self.budget if self.budget is not None else budget if budget is not None else Budget()
        agent = self.agent_name if self.agent_name is not None else recorder.name
        return recorder.add_listener(lambda turn: self.record(turn, judged, agent_name=agent))

    def record(self, turn: Turn, budget: Budget, *, agent_name: str | None = None) -> TurnFigures:
        """Send one ended turn (what :meth:`attach` does for each turn).

        :param agent_name: default the telemetry's ``agent_name``, else ``"voicebudget"``.
        :returns: the turn's figures.
        """
        figures = turn_figures(turn, budget)
        agent = agent_name or self.agent_name or SCOPE
        self._record_metrics(figures, agent)
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
