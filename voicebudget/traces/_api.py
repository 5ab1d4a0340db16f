"""One call per CLI command: read the files, then check or fit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from os import PathLike
from pathlib import Path

from voicebudget._budget import Budget
from voicebudget._errors import ScenarioError, param
from voicebudget.traces._check import TraceCheck, check
from voicebudget.traces._fit import TraceFit, fit
from voicebudget.traces._options import FitMethod, ReadOptions
from voicebudget.traces._read import TraceFormat, read_trace
from voicebudget.traces._table import TraceTable

__all__ = ["check_traces", "fit_traces", "read_traces"]


def read_traces(
    paths: Sequence[str | Path],
    fmt: TraceFormat | None = None,
    options: ReadOptions | None = None,
) -> list[TraceTable]:
    """:func:`~voicebudget.traces.read_trace` on every path (same options for all).

    :raises ScenarioError: a file is missing, unreadable, in no known format, or has no turn; the
        same file is given twice (its turns would count twice); or one path given for the list.
    """
    if isinstance(paths, str | bytes | PathLike):  # its characters were read as paths ("-: given twice")
        raise ScenarioError(f"give a list of paths: [{str(paths)!r}]", origin=param("paths"))
    seen: dict[Path, str] = {}
    for p in paths:
        key = Path(p).resolve()
        if key in seen:
            raise ScenarioError(f"given twice (also as {seen[key]}); its turns would count twice", origin=str(p))
        seen[key] = str(p)
    return [read_trace(p, fmt, options) for p in paths]


def check_traces(
    paths: Sequence[str | Path],
    budget: Budget | None = None,
    *,
    fmt: TraceFormat | None = None,
    include_anomalies: bool = False,
    options: ReadOptions | None = None,
) -> TraceCheck:
    """Read trace files and judge their turns against ``budget`` (``voicebudget check``).

    :param paths: Pipecat logs, LiveKit metrics JSON lines or OTLP JSON span exports.
    :param budget: default ``Budget()`` (800 ms at p95).
    :param fmt: the files' format, or None to detect each from its content.
    :param include_anomalies: count flagged turns (that have a total) in the statistics.
    :param options: the readers' options (:class:`~voicebudget.traces.ReadOptions`: VAD ``stop_secs``,
        ``absurd_ms``, a custom Pipecat log format).
    :raises ScenarioError: a file cannot be read, or no turn is usable.
    """
    tables = read_traces(paths, fmt, options)
    return check(tables, budget, include_anomalies=include_anomalies)


def fit_traces(
    paths: Sequence[str | Path],
    *,
    method: FitMethod = "joint",
    budget: Budget | None = None,
    fmt: TraceFormat | None = None,
    include_anomalies: bool = False,
    options: ReadOptions | None = None,
    verify_samples: int = 200_000,
) -> TraceFit:
    """Read trace files and fit a scenario to their turns (``voicebudget fit``), then simulate it
    once to report how close it comes (``TraceFit.verification``; skipped when ``verify_samples`` is 0).

    :raises ScenarioError: a file cannot be read, or no turn is usable.
    """
    tables = read_traces(paths, fmt, options)
    result = fit(tables, method=method, budget=budget, include_anomalies=include_anomalies)
    if verify_samples:
        result = replace(result, verification=result.verify(samples=verify_samples))
    return result
