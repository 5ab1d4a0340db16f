"""``check`` and ``fit``: real turns from trace files, against the budget or fitted into a scenario."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from voicebudget._tail import few_turns_warning
from voicebudget.cli import _audio
from voicebudget.cli._ci import emit_github, emit_junit
from voicebudget.cli._options import BudgetOpt, CheckFormat, ForceOpt, PercentileOpt, TableOrJson
from voicebudget.cli._output import (
    EXIT_OK,
    EXIT_OVER_BUDGET,
    budget_override,
    cli_message,
    emit_json,
    fail,
    user_errors,
    warn,
)
from voicebudget.traces._formats import ABSURD_MS, DEFAULT_STOP_SECS, FIT_METHODS
from voicebudget.traces._formats import FORMATS as TRACE_FORMATS

LIBRARY_NAMES = {"fmt": "format_in"}
"""The traces library's parameter -> this module's option that sets it, where the names differ
(``check_traces(fmt=...)`` is ``--format-in``: ``fmt`` is each command's output ``--format``)."""

FitMethodOpt = StrEnum("FitMethodOpt", {name: name for name in FIT_METHODS})  # type: ignore[misc]
"""How ``fit`` turns observed stages into distributions: the library's :data:`FIT_METHODS`."""
DEFAULT_FIT_METHOD = FitMethodOpt(FIT_METHODS[0])
"""The library lists its default method first (``fit_traces(method="joint")``)."""


TracesArg = Annotated[
    list[Path], typer.Argument(help="Trace files: Pipecat logs, LiveKit metrics JSON lines, OTLP JSON span exports.")
]
TraceFormatIn = StrEnum("TraceFormatIn", {name: name for name in TRACE_FORMATS})  # type: ignore[misc]
"""Trace formats ``check``/``fit`` read: the names of the library's reader table."""
FormatInOpt = Annotated[
    TraceFormatIn | None, typer.Option("--format-in", help="Trace format (default: detected from the content).")
]
IncludeOpt = Annotated[
    bool, typer.Option("--include-anomalies", help="Count flagged turns (that have a total) in the statistics.")
]
StopSecsOpt = Annotated[
    float | None,
    typer.Option(
        "--stop-secs", help=f"Pipecat VAD stop_secs in s (default: the log's VAD params, else {DEFAULT_STOP_SECS:g})."
    ),
]
LogFormatOpt = Annotated[
    str | None,
    typer.Option(
        "--log-format",
        help="Pipecat log written with your own loguru format: give the format string, "
        "e.g. '{time} - {level} - {extra[call_id]} - {message}' (default: common layouts detected).",
    ),
]
AbsurdOpt = Annotated[
    float, typer.Option("--absurd-ms", help=f"Flag any stage longer than this, ms (>= 1; default {ABSURD_MS:g}).")
]


def check_cmd(
    traces: TracesArg,
    budget_ms: BudgetOpt = None,
    percentile: PercentileOpt = None,
    fmt: Annotated[CheckFormat, typer.Option("--format", "-f", help="Output format.")] = CheckFormat.table,
    format_in: FormatInOpt = None,
    include_anomalies: IncludeOpt = False,
    stop_secs: StopSecsOpt = None,
    absurd_ms: AbsurdOpt = ABSURD_MS,
    log_format: LogFormatOpt = None,
    turns: Annotated[bool, typer.Option("--turns", help="List every turn (default: the 10 slowest).")] = False,
    caller: _audio.CallerChannelOpt = _audio.CallerOpt.left,
    trace: _audio.TraceJoinOpt = None,
    transport_floor_ms: _audio.FloorOpt = 0.0,
    plot: _audio.PlotOpt = None,
    barge_in_budget_ms: _audio.BargeInBudgetOpt = None,
    overwrite: ForceOpt = False,
) -> None:
    """Check real turns from traces or call recordings against the budget: stage percentiles, tail
    attribution, first turn vs steady state, the slowest turns (every turn with --turns), anomalies
    (flagged, excluded unless --include-anomalies).

    A .wav/.flac/.ogg/.mp3 input is a two-channel call recording (needs voicebudget[audio]); trace files
    given with it (or with --trace) are the same calls' traces, joined on one clock. A recording's
    barge-ins are judged against their own budget (--barge-in-budget-ms).

    Exit code 0 within budget, 1 over (a recording: voice-to-voice or its barge-ins), 2 unreadable or
    unknown-format trace.
    """
    # lazy: start-up (the library loads when the command runs)
    from voicebudget._budget import Budget
    from voicebudget.traces import NoUsableTurnsError, ReadOptions, check_traces

    recordings, trace_files = _audio.split_inputs(traces)
    _audio.refuse_audio_options(
        recordings, trace=trace, floor_ms=transport_floor_ms, plot=plot, barge_in_budget_ms=barge_in_budget_ms
    )
    if recordings and fmt in (CheckFormat.junit, CheckFormat.github):
        fail(f"--format {fmt.value}: for traces; a call recording's check is shown as table or json")
    with user_errors(**LIBRARY_NAMES):
        budget = budget_override(Budget(), budget_ms, percentile)
        options = ReadOptions.checked(stop_secs=stop_secs, absurd_ms=absurd_ms, log_format=log_format)
        if recordings:
            _audio.check_recordings(
                recordings, [*trace_files, *(trace or [])], budget, caller=caller, include_anomalies=include_anomalies,
                options=options, fmt_in=format_in.value if format_in else None, floor_ms=transport_floor_ms,
                output=TableOrJson(fmt.value), all_turns=turns, plot=plot, overwrite=overwrite,
                barge_in_budget_ms=barge_in_budget_ms,
            )  # fmt: skip
        try:
            result = check_traces(
                traces,
                budget,
                fmt=format_in.value if format_in else None,
                include_anomalies=include_anomalies,
                options=options,
            )
        except NoUsableTurnsError as exc:  # still show what was read, then exit 2
            if fmt is CheckFormat.json:
                emit_json({**exc.to_dict(), "error": cli_message(exc, LIBRARY_NAMES)})
            else:
                # lazy: start-up (the library loads when the command runs)
                from voicebudget.traces._render import render_unusable

                Console(highlight=False, emoji=False).print(render_unusable(exc, all_turns=turns))
            raise
    if fmt is CheckFormat.json:
        emit_json(result.to_dict())
    elif fmt is CheckFormat.junit:
        # lazy: start-up (the library loads when the command runs)
        from voicebudget.ci import check_suite

        emit_junit([check_suite(result)], "voicebudget check")
    else:
        # lazy: start-up (the library loads when the command runs)
        from voicebudget.traces._render import render_check

        Console(highlight=False, emoji=False).print(render_check(result, all_turns=turns))
        if fmt is CheckFormat.github:
            # lazy: start-up (the library loads when the command runs)
            from voicebudget.ci import check_suite, report_markdown

            summary = report_markdown(result.report, result.name) if result.report is not None else ""
            emit_github([check_suite(result)], summary, "check")
        report = result.report  # JSON and JUnit give n_turns; the table's reader gets the warning
        if report is not None and (few := few_turns_warning(report.budget.percentile, report.n_turns)):
            warn(few)
    raise typer.Exit(EXIT_OK if result.passed else EXIT_OVER_BUDGET)


def fit_cmd(
    traces: TracesArg,
    output: Annotated[Path, typer.Option("--output", "-o", help="Scenario file to write (.toml).")],
    method: Annotated[FitMethodOpt, typer.Option("--method", help="How stages become distributions.")] = (
        DEFAULT_FIT_METHOD
    ),
    budget_ms: BudgetOpt = None,
    percentile: PercentileOpt = None,
    format_in: FormatInOpt = None,
    include_anomalies: IncludeOpt = False,
    stop_secs: StopSecsOpt = None,
    absurd_ms: AbsurdOpt = ABSURD_MS,
    log_format: LogFormatOpt = None,
    overwrite: ForceOpt = False,
    caller: _audio.CallerChannelOpt = _audio.CallerOpt.left,
    trace: _audio.TraceJoinOpt = None,
    transport_floor_ms: _audio.FloorOpt = 0.0,
) -> None:
    """Fit a scenario to traces: stages are the observed distributions, so `voicebudget run` on the
    written file reproduces the traces' percentiles and variants can swap a stage for a model.

    Call recordings (.wav/.flac/.ogg/.mp3) joined with their traces give the transport stage from data.
    An existing output file is replaced only with --force, and never when it is one of the traces.
    """
    # lazy: start-up (the library loads when the command runs)
    from voicebudget._budget import Budget
    from voicebudget._io import check_target
    from voicebudget.traces import ReadOptions, fit_traces
    from voicebudget.traces._render import render_fit

    with user_errors(**LIBRARY_NAMES):
        check_target(output, overwrite=overwrite, inputs=traces, what="-o")
        budget = budget_override(Budget(), budget_ms, percentile)
        options = ReadOptions.checked(stop_secs=stop_secs, absurd_ms=absurd_ms, log_format=log_format)
        recordings, trace_files = _audio.split_inputs(traces)
        _audio.refuse_audio_options(recordings, trace=trace, floor_ms=transport_floor_ms)
        if recordings:
            result = _audio.fit_recordings(
                recordings, [*trace_files, *(trace or [])], budget, method=method.value, caller=caller,
                include_anomalies=include_anomalies, options=options,
                fmt_in=format_in.value if format_in else None, floor_ms=transport_floor_ms,
            )  # fmt: skip
        else:
            result = fit_traces(
                traces,
                method=method.value,  # type: ignore[arg-type]  # one of FIT_METHODS
                budget=budget,
                fmt=format_in.value if format_in else None,
                include_anomalies=include_anomalies,
                options=options,
            )
    try:
        with user_errors():
            result.write(output, overwrite=overwrite)
    except OSError as exc:
        fail(f"{output}: cannot write: {exc.strerror or exc}")
    for message in result.warnings:
        warn(f"{output}: {message}")
    sys.stdout.write(render_fit(result, str(output)) + "\n")
