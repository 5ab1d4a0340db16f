"""Import real traces (Pipecat logs, LiveKit metrics, OpenTelemetry span exports), check them against
a budget, and fit a scenario to them.

::

    from voicebudget.traces import read_trace, check, fit

    tables = [read_trace("agent.log")]          # format detected from the content
    result = check(tables)                      # the common Report + turns + anomalies
    fit(tables).write("scenarios/from-traces.toml")

Every reader rebuilds turns on the common time axis (``t = 0`` at the actual end of the user's
speech, ms) and states the anchor its source used. Bad values are flagged as :class:`Anomaly`
records, never averaged in. See docs/traces.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicebudget._lazy import lazy_getattr, lazy_table

if TYPE_CHECKING:
    from voicebudget.traces._api import (  # noqa: I001 - one statement per module, "X as X" re-exports
        check_traces as check_traces,
        fit_traces as fit_traces,
        read_traces as read_traces,
    )
    from voicebudget.traces._check import (
        NoUsableTurnsError as NoUsableTurnsError,
        TraceCheck as TraceCheck,
        check as check,
        usable_turns as usable_turns,
    )
    from voicebudget.traces._documents import (
        DOCUMENTS as DOCUMENTS,
        DocumentWrapper as DocumentWrapper,
    )
    from voicebudget.traces._fit import (
        TraceFit as TraceFit,
        fit as fit,
    )
    from voicebudget.traces._livekit import (
        read_livekit as read_livekit,
    )
    from voicebudget.traces._livekit_history import (
        read_livekit_history as read_livekit_history,
    )
    from voicebudget.traces._options import (
        DEFAULT_STOP_SECS as DEFAULT_STOP_SECS,
        DETECT_HEAD_CHARS as DETECT_HEAD_CHARS,
        FIT_METHODS as FIT_METHODS,
        FitMethod as FitMethod,
        ReadOptions as ReadOptions,
        TraceReader as TraceReader,
    )
    from voicebudget.traces._otel import (
        read_otel as read_otel,
    )
    from voicebudget.traces._pipecat import (
        read_pipecat as read_pipecat,
    )
    from voicebudget.traces._read import (
        FORMATS as FORMATS,
        READERS as READERS,
        TraceFormat as TraceFormat,
        detect_format as detect_format,
        get_reader as get_reader,
        read_trace as read_trace,
    )
    from voicebudget.traces._table import (
        ABSURD_MS as ABSURD_MS,
        OFF_PATH as OFF_PATH,
        ON_PATH as ON_PATH,
        Anomaly as Anomaly,
        TraceTable as TraceTable,
        TraceTurn as TraceTurn,
    )
    from voicebudget.traces._wrappers import (
        WRAPPERS as WRAPPERS,
        LineWrapper as LineWrapper,
    )

# Module -> the public names it defines, imported on first use (PEP 562): importing this package
# costs nothing until a name is used (``voicebudget --help`` imports no numpy).
_PUBLIC: dict[str, tuple[str, ...]] = {
    "voicebudget.traces._api": (
        "check_traces",
        "fit_traces",
        "read_traces",
    ),
    "voicebudget.traces._check": (
        "NoUsableTurnsError",
        "TraceCheck",
        "check",
        "usable_turns",
    ),
    "voicebudget.traces._documents": ("DOCUMENTS", "DocumentWrapper"),
    "voicebudget.traces._fit": (
        "TraceFit",
        "fit",
    ),
    "voicebudget.traces._livekit": ("read_livekit",),
    "voicebudget.traces._livekit_history": ("read_livekit_history",),
    "voicebudget.traces._options": (
        "DEFAULT_STOP_SECS",
        "DETECT_HEAD_CHARS",
        "FIT_METHODS",
        "FitMethod",
        "ReadOptions",
        "TraceReader",
    ),
    "voicebudget.traces._otel": ("read_otel",),
    "voicebudget.traces._pipecat": ("read_pipecat",),
    "voicebudget.traces._read": (
        "FORMATS",
        "READERS",
        "TraceFormat",
        "detect_format",
        "get_reader",
        "read_trace",
    ),
    "voicebudget.traces._table": (
        "ABSURD_MS",
        "OFF_PATH",
        "ON_PATH",
        "Anomaly",
        "TraceTable",
        "TraceTurn",
    ),
    "voicebudget.traces._wrappers": ("WRAPPERS", "LineWrapper"),
}

_LAZY = lazy_table(_PUBLIC)

__all__ = sorted(_LAZY)

__getattr__ = lazy_getattr("voicebudget.traces", _LAZY, globals())


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
