"""Telemetry out: what a recorder, an integration and the live guard measure, sent to OpenTelemetry
(metrics, a span per turn, budget events) and Prometheus, while the agent runs. See docs/telemetry.md.

The OpenTelemetry API (``voicebudget[otel]``) and ``prometheus_client`` (``voicebudget[prometheus]``) are
optional: names are imported on first use (PEP 562), and a sink imports its library when it is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicebudget._lazy import lazy_getattr, lazy_table

if TYPE_CHECKING:
    from voicebudget.telemetry._figures import (  # noqa: I001 - one statement per module, "X as X" re-exports
        TURN_BUCKETS_S as TURN_BUCKETS_S,
        BudgetEvent as BudgetEvent,
        TurnFigures as TurnFigures,
    )
    from voicebudget.telemetry._otel import (
        Telemetry as Telemetry,
    )
    from voicebudget.telemetry._prometheus import (
        PrometheusMetrics as PrometheusMetrics,
        start_http_server as start_http_server,
        stop_http_server as stop_http_server,
    )

# Module -> the public names it defines, imported on first use (PEP 562).
_PUBLIC: dict[str, tuple[str, ...]] = {
    "voicebudget.telemetry._figures": ("BudgetEvent", "TURN_BUCKETS_S", "TurnFigures"),
    "voicebudget.telemetry._otel": ("Telemetry",),
    "voicebudget.telemetry._prometheus": ("PrometheusMetrics", "start_http_server", "stop_http_server"),
}

_LAZY = lazy_table(_PUBLIC)

__all__ = sorted(_LAZY)

__getattr__ = lazy_getattr("voicebudget.telemetry", _LAZY, globals())


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
