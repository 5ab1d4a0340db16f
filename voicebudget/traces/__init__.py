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

from voicebudget.traces._api import check_traces, fit_traces, read_traces
from voicebudget.traces._check import NoUsableTurnsError, TraceCheck, check, usable_turns
from voicebudget.traces._fit import FIT_METHODS, FitMethod, TraceFit, fit
from voicebudget.traces._livekit import read_livekit
from voicebudget.traces._livekit_history import read_livekit_history
from voicebudget.traces._options import DEFAULT_STOP_SECS, DETECT_HEAD_CHARS, ReadOptions, TraceReader
from voicebudget.traces._otel import read_otel
from voicebudget.traces._pipecat import read_pipecat
from voicebudget.traces._read import FORMATS, READERS, TraceFormat, detect_format, get_reader, read_trace
from voicebudget.traces._table import ABSURD_MS, OFF_PATH, ON_PATH, Anomaly, TraceTable, TraceTurn
from voicebudget.traces._wrappers import WRAPPERS, LineWrapper

__all__ = [
    "ABSURD_MS",
    "DEFAULT_STOP_SECS",
    "DETECT_HEAD_CHARS",
    "FIT_METHODS",
    "FORMATS",
    "OFF_PATH",
    "ON_PATH",
    "READERS",
    "WRAPPERS",
    "Anomaly",
    "FitMethod",
    "LineWrapper",
    "NoUsableTurnsError",
    "ReadOptions",
    "TraceCheck",
    "TraceFit",
    "TraceFormat",
    "TraceReader",
    "TraceTable",
    "TraceTurn",
    "check",
    "check_traces",
    "detect_format",
    "fit",
    "fit_traces",
    "get_reader",
    "read_livekit",
    "read_livekit_history",
    "read_otel",
    "read_pipecat",
    "read_trace",
    "read_traces",
    "usable_turns",
]

# Complete the stage union's forward references (combinators, councils, caches) for users who
# import this sub-package before anything else.
import voicebudget._stages  # noqa: E402, F401, I001
