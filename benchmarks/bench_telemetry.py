"""Cost of telemetry per turn, as a ratio to the Pipecat observer without it (issue 27).

Run: ``.venv/bin/python benchmarks/bench_telemetry.py`` (needs the ``pipecat``, ``bench`` and ``prometheus``
extras). The observer is fed N_TURNS turns of 20 frames each, as Pipecat's observer task does
(benchmarks/bench_integrations.py); each turn is closed on its last frame and, with telemetry attached,
sent as it ends. One run on this machine, best of several repeats, cases taking turns
(benchmarks/bench_recorder.py). Figures are per turn, net of the loop feeding the frames.

Cases: the observer alone; with :class:`~voicebudget.telemetry.Telemetry` on the OpenTelemetry API without an
SDK (the global no-op providers: what an agent that installed the extra but no SDK pays); on SDK providers
(a MeterProvider with an in-memory reader, a TracerProvider and a LoggerProvider with simple processors into
in-memory exporters: everything kept, nothing sent over a network); the same with every turn over its
budget (a 1 us budget: an ``exceeded`` event, a log record and a span event per turn); and
:class:`~voicebudget.telemetry.PrometheusMetrics` in its own registry.
"""

from __future__ import annotations

from typing import Any

from bench_integrations import FRAMES_PER_TURN, N_TURNS, observer_loop
from bench_recorder import best_ns_per_op


def sdk_providers() -> dict[str, Any]:
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(InMemoryLogRecordExporter()))
    return {
        "meter_provider": MeterProvider(metric_readers=[InMemoryMetricReader()]),
        "tracer_provider": tracer_provider,
        "logger_provider": logger_provider,
    }


def main() -> None:
    import prometheus_client

    from voicebudget import Budget
    from voicebudget.integrations.pipecat import BudgetObserver
    from voicebudget.telemetry import PrometheusMetrics, Telemetry

    sdk = sdk_providers()
    makers = {
        "observer": BudgetObserver,
        "otel API, no SDK": lambda: BudgetObserver(telemetry=Telemetry()),
        "otel SDK, in memory": lambda: BudgetObserver(telemetry=Telemetry(**sdk)),
        "otel SDK, an event/turn": lambda: BudgetObserver(Budget(total_ms=0.001), telemetry=Telemetry(**sdk)),
        "prometheus": lambda: BudgetObserver(
            prometheus=PrometheusMetrics(registry=prometheus_client.CollectorRegistry())
        ),
    }
    loops: dict[str, Any] = {}
    for name, make in makers.items():
        loop, loop_empty = observer_loop(make)
        loops[name] = (loop, N_TURNS)
        loops["feeding frames"] = (loop_empty, N_TURNS)
    best = best_ns_per_op(loops)
    base = best["observer"] - best["feeding frames"]
    print(f"per turn ({FRAMES_PER_TURN} frames, {N_TURNS} turns), net of feeding the frames:")
    for name in makers:
        net = best[name] - best["feeding frames"]
        print(f"  {name:<24} {net / 1000:8.1f} us   {net / base:5.2f}x the observer alone")


if __name__ == "__main__":
    main()
