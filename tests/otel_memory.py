"""The OpenTelemetry SDK's in-memory reader and exporters, and what telemetry tests read from them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

try:  # the SDK renamed its in-memory log exporter (1.39)
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter as _LogExporter
except ImportError:  # pragma: no cover - older SDKs
    from opentelemetry.sdk._logs.export import InMemoryLogExporter as _LogExporter  # type: ignore[attr-defined,no-redef]


@dataclass
class Otel:
    """Providers wired to in-memory sinks."""

    reader: InMemoryMetricReader = field(default_factory=InMemoryMetricReader)
    spans: InMemorySpanExporter = field(default_factory=InMemorySpanExporter)
    logs: Any = field(default_factory=_LogExporter)

    def __post_init__(self) -> None:
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.logger_provider = LoggerProvider()
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.logs))

    def providers(self) -> dict[str, Any]:
        """The three providers as ``Telemetry``'s keyword arguments: ``Telemetry(**otel.providers())``."""
        return {
            "meter_provider": self.meter_provider,
            "tracer_provider": self.tracer_provider,
            "logger_provider": self.logger_provider,
        }

    def points(self, name: str) -> list[Any]:
        """The data points of metric ``name`` (empty when it has none)."""
        data = self.reader.get_metrics_data()
        out: list[Any] = []
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == name:
                        out.extend(m.data.data_points)
        return out

    def metric(self, name: str) -> Any:
        """The metric ``name`` itself (its unit, description)."""
        data = self.reader.get_metrics_data()
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == name:
                        return m
        raise KeyError(name)

    def by(self, name: str, key: str) -> dict[str, Any]:
        """Data points of ``name`` keyed by their attribute ``key``."""
        return {p.attributes[key]: p for p in self.points(name)}
