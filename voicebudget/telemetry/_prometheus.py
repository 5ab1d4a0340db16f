"""Prometheus out, for teams without an OpenTelemetry collector: the same per-turn figures as
:class:`~voicebudget.telemetry.Telemetry`, as ``prometheus_client`` histograms and counters, and an HTTP
endpoint to scrape them (the ``prometheus`` extra)."""

from __future__ import annotations

import errno
import threading
from typing import TYPE_CHECKING, Any

from voicebudget._budget import Budget
from voicebudget.telemetry._figures import (
    TURN_BUCKETS_S,
    VOICE_TO_VOICE,
    BudgetEvent,
    TurnFigures,
    check_sink,
    turn_events,
    turn_figures,
)
from voicebudget.telemetry._sink import DEFAULT_AGENT, _Sink

if TYPE_CHECKING:
    from voicebudget.checker._recorder import Turn

__all__ = ["PrometheusMetrics", "start_http_server", "stop_http_server"]

PROMETHEUS_EXTRA = "pip install 'voicebudget[prometheus]'"
TURN_SECONDS = "voicebudget_turn_seconds"
TURNS = "voicebudget_turns"
EVENTS = "voicebudget_budget_events"


def _prometheus() -> Any:
    try:  # lazy: the prometheus extra is optional, and `import voicebudget` must not import it
        import prometheus_client
    except ImportError as exc:
        raise ImportError(f"voicebudget's Prometheus metrics need prometheus_client: {PROMETHEUS_EXTRA}") from exc
    return prometheus_client


class PrometheusMetrics(_Sink):
    """Each ended turn of a recorder as Prometheus metrics (docs/telemetry.md), in ``registry``:

    - ``voicebudget_turn_seconds{agent, stage}`` (histogram, s): each complete turn's voice-to-voice latency
      (``stage="voice_to_voice"``) and the time credited to each of its stages on the critical path, as the
      report credits it; buckets :data:`~voicebudget.telemetry.TURN_BUCKETS_S` (50 ms to 10 s);
    - ``voicebudget_turns_total{agent, status, verdict, tail_driver}``: every ended turn (``verdict`` and
      ``tail_driver`` empty unless complete);
    - ``voicebudget_budget_events_total{agent, source, level}``: the budget events of
      :class:`~voicebudget.telemetry.BudgetEvent` (turn, stage, guard).

    Attach it to a recorder, or pass it to an integration (``BudgetObserver(budget, prometheus=...)``), and
    serve the registry with :func:`start_http_server`.

    :param budget: what each turn is judged against; default the integration's, else ``Budget()``.
    :param registry: a ``prometheus_client.CollectorRegistry``; default prometheus_client's global one.
    :param warning_ms: a turn that reaches it (within its budget) counts a ``warning`` event, ms.
    :param agent_name: the ``agent`` label; default the recorder's name.
    :raises ImportError: prometheus_client is not installed (the ``prometheus`` extra).
    :raises TypeError: ``budget`` not a :class:`~voicebudget.Budget`, ``agent_name`` not text, ``registry`` not a
        registry.
    :raises ValueError: the registry already holds voicebudget's metrics (share one ``PrometheusMetrics``,
        or give each its own registry); ``warning_ms`` not a finite number > 0, or over the budget's total
        (checked by :meth:`attach` against the integration's budget when the metrics have none).
    """

    def __init__(
        self,
        budget: Budget | None = None,
        *,
        registry: Any = None,
        warning_ms: float | None = None,
        agent_name: str | None = None,
    ) -> None:
        check_sink(budget, warning_ms, agent_name)
        if registry is not None and not callable(getattr(registry, "register", None)):
            raise TypeError(f"registry must be a prometheus_client.CollectorRegistry, got {registry!r}"[:200])
        prometheus_client = _prometheus()
        self.budget = budget
        self.warning_ms = warning_ms
        self.agent_name = agent_name
        self.registry = prometheus_client.REGISTRY if registry is None else registry
        try:
            self._seconds = prometheus_client.Histogram(
                TURN_SECONDS,
                "Voice-to-voice latency of a turn (stage=voice_to_voice), and the time each stage held it up",
                ["agent", "stage"],
                buckets=TURN_BUCKETS_S,
                registry=self.registry,
            )
            self._turns = prometheus_client.Counter(
                TURNS, "Turns ended, by status, verdict and tail driver",
                ["agent", "status", "verdict", "tail_driver"], registry=self.registry,
            )  # fmt: skip
            self._events = prometheus_client.Counter(
                EVENTS, "Budget events, by source (turn, stage, guard) and level",
                ["agent", "source", "level"], registry=self.registry,
            )  # fmt: skip
        except ValueError as exc:  # prometheus_client: "Duplicated timeseries in CollectorRegistry"
            raise ValueError(
                f"this registry already holds voicebudget's metrics ({exc}): share one PrometheusMetrics, or pass "
                "registry=prometheus_client.CollectorRegistry()"
            ) from None

    def record(self, turn: Turn, budget: Budget | None = None, *, agent_name: str | None = None) -> TurnFigures:
        """Count one ended turn (what :meth:`attach` does for each turn).

        :returns: the turn's figures.
        """
        judged = self._budget(budget)
        figures = turn_figures(turn, judged)
        agent = agent_name or self.agent_name or DEFAULT_AGENT
        v2v = figures.voice_to_voice_ms
        if v2v is not None:
            self._seconds.labels(agent, VOICE_TO_VOICE).observe(v2v / 1000)
            for stage, ms in figures.stages_ms.items():
                self._seconds.labels(agent, stage).observe(ms / 1000)
        self._turns.labels(agent, figures.status, figures.verdict or "", figures.tail_driver or "").inc()
        for event in turn_events(figures, judged, self.warning_ms):
            self._emit(event, agent)
        return figures

    def _emit(self, event: BudgetEvent, agent: str) -> None:
        self._events.labels(agent, event.source, event.level).inc()


_SERVERS: dict[int, tuple[Any, threading.Thread]] = {}
"""Port -> the server :func:`start_http_server` started on it (and its thread), for :func:`stop_http_server`."""


def start_http_server(port: int = 0, *, addr: str = "127.0.0.1", registry: Any = None) -> int:
    """Serve ``registry`` in Prometheus' text format at ``http://addr:port/metrics`` from a daemon thread
    (``prometheus_client.start_http_server``).

    :param port: the TCP port; 0 (default) picks a free one.
    :param addr: the address to listen on; default this machine only (``"0.0.0.0"``: every interface).
    :param registry: default prometheus_client's global registry (where :class:`PrometheusMetrics` registers
        by default).
    :returns: the port the server is bound to.
    :raises ImportError: prometheus_client is not installed (the ``prometheus`` extra).
    :raises ValueError: ``port`` is not an integer from 0 to 65535.
    :raises TypeError: ``addr`` is not text, or ``registry`` not a registry (its ``collect``).
    :raises OSError: the port cannot be bound (in use, or ``addr`` is not this machine's); the message names
        ``addr:port`` and keeps the system's ``errno``.
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"port must be an integer from 0 (a free one) to 65535, got {port!r}")
    if not isinstance(addr, str):
        raise TypeError(f"addr must be text (an address of this machine, e.g. '127.0.0.1'), got {addr!r}")
    if registry is not None and not callable(getattr(registry, "collect", None)):  # else every scrape failed
        raise TypeError(f"registry must be a prometheus_client.CollectorRegistry, got {registry!r}"[:200])
    prometheus_client = _prometheus()
    try:
        server, thread = prometheus_client.start_http_server(
            port, addr=addr, registry=prometheus_client.REGISTRY if registry is None else registry
        )
    except OSError as exc:  # "[Errno 98] Address already in use" names neither the port nor the way out
        advice = "; port=0 picks a free port" if exc.errno == errno.EADDRINUSE else ""
        raise OSError(exc.errno, f"cannot serve metrics on {addr}:{port}: {exc.strerror or exc}{advice}") from exc
    bound = int(server.server_port)
    _SERVERS[bound] = (server, thread)
    return bound


def stop_http_server(port: int) -> None:
    """Stop a server :func:`start_http_server` started, and free its port.

    :raises KeyError: no server of this module listens on ``port`` (the message lists those that do).
    """
    if port not in _SERVERS:
        raise KeyError(f"no metrics server started on port {port}; started: {sorted(_SERVERS)}")
    server, thread = _SERVERS.pop(port)
    server.shutdown()
    server.server_close()
    thread.join()
