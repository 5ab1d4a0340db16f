"""``check call.wav [agent.log]`` (recordings, joined with traces) and ``endpointing``."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from voicebudget._tail import few_turns_warning
from voicebudget.cli._options import ForceOpt, TableOrJson
from voicebudget.cli._output import EXIT_OK, EXIT_OVER_BUDGET, check_plot_path, emit_json, fail, user_errors, warn

if TYPE_CHECKING:
    from voicebudget._budget import Budget
    from voicebudget.audio import AudioCheck
    from voicebudget.traces import ReadOptions, TraceFit


class CallerOpt(StrEnum):
    """Which channel of a recording is the caller."""

    left = "left"
    right = "right"


CallerChannelOpt = Annotated[
    CallerOpt, typer.Option("--caller", help="Recordings: the caller's channel (the agent is the other).")
]
TraceJoinOpt = Annotated[
    list[Path] | None,
    typer.Option("--trace", help="Recordings: the agent's trace of the same call, joined on one clock (repeatable)."),
]
FloorOpt = Annotated[
    float,
    typer.Option(
        "--transport-floor-ms",
        min=0.0,
        help="Join: the fastest turn's server -> recording delay, ms (0: recorded where the audio leaves the agent).",
    ),
]
BargeInBudgetOpt = Annotated[
    float | None,
    typer.Option(
        "--barge-in-budget-ms",
        help="Recordings: a barge-in's budget (caller onset -> the agent's audio stops), ms, at --percentile "
        "(default 500: LiveKit's and Tencent RTC's interruption defaults; docs/audio.md).",
    ),
]
PlotOpt = Annotated[
    Path | None, typer.Option("--plot", help="Recordings: draw both channels with turns and stages to this PNG.")
]


def split_inputs(paths: list[Path]) -> tuple[list[Path], list[Path]]:
    """The recordings and the trace files among ``check``'s inputs (by file name ending)."""
    from voicebudget.audio._load import is_audio

    return [p for p in paths if is_audio(p)], [p for p in paths if not is_audio(p)]


def refuse_audio_options(
    recordings: list[Path],
    *,
    trace: list[Path] | None,
    floor_ms: float,
    plot: Path | None = None,
    barge_in_budget_ms: float | None = None,
) -> None:
    """Exit 2 when an option that only recordings take is given without a recording."""
    if recordings:
        return
    options = (
        ("--trace", trace),
        ("--transport-floor-ms", floor_ms),
        ("--plot", plot),
        ("--barge-in-budget-ms", barge_in_budget_ms is not None),
    )
    given = [name for name, value in options if value]
    if given:
        from voicebudget.audio._load import AUDIO_SUFFIXES  # lazy: start-up, as split_inputs

        fail(f"{', '.join(given)}: only with a call recording ({', '.join(AUDIO_SUFFIXES)}) among the inputs")


def fit_recordings(
    recordings: list[Path],
    traces: list[Path],
    budget: Budget,
    *,
    method: str,
    caller: CallerOpt,
    include_anomalies: bool,
    options: ReadOptions,
    fmt_in: str | None,
    floor_ms: float,
) -> TraceFit:
    """``fit`` on recordings (joined with their traces): one library call."""
    from voicebudget.audio._load import require_audio_extra

    require_audio_extra(str(recordings[0]))
    from voicebudget.audio import fit_calls

    return fit_calls(
        recordings, traces, method=method, budget=budget, caller=caller.value,  # type: ignore[arg-type]
        include_anomalies=include_anomalies, options=options, fmt=fmt_in, transport_floor_ms=floor_ms,
    )  # fmt: skip


def check_recordings(
    recordings: list[Path],
    traces: list[Path],
    budget: Budget,
    *,
    caller: CallerOpt,
    include_anomalies: bool,
    options: ReadOptions,
    fmt_in: str | None,
    floor_ms: float,
    output: TableOrJson,
    all_turns: bool,
    plot: Path | None,
    overwrite: bool = False,
    barge_in_budget_ms: float | None = None,
) -> None:
    """``check`` on recordings: one library call, then the table or JSON, the plot, the exit code (1 when
    voice-to-voice or the barge-ins are over their budget)."""
    from voicebudget.audio._load import require_audio_extra

    targets = check_plot_path(plot, overwrite=overwrite, inputs=[*recordings, *traces])
    with user_errors():
        require_audio_extra(str(recordings[0]))
        from voicebudget._barge_in import BARGE_IN_BUDGET_MS
        from voicebudget.audio import check_calls

        result = check_calls(
            recordings,
            traces,
            budget,
            caller=caller.value,
            include_anomalies=include_anomalies,
            options=options,
            fmt=fmt_in,
            transport_floor_ms=floor_ms,
            barge_in_budget_ms=BARGE_IN_BUDGET_MS if barge_in_budget_ms is None else barge_in_budget_ms,
        )
    if output is TableOrJson.json:
        emit_json(result.to_dict())
    else:
        from voicebudget.audio._render import render_calls

        Console(highlight=False, emoji=False).print(render_calls(result, all_turns=all_turns))
        report = result.check.report  # as check on a trace: JSON gives n_turns, the table's reader the warning
        if report is not None and (few := few_turns_warning(report.budget.percentile, report.n_turns)):
            warn(few)
    if targets:
        _plot(result, targets[0])
    raise typer.Exit(EXIT_OK if result.passed else EXIT_OVER_BUDGET)


def _plot(result: AudioCheck, target: Path) -> None:
    try:  # optional: matplotlib is the plot extra
        from voicebudget.audio._plot import plot_call
    except ImportError as exc:
        fail(f"--plot needs matplotlib: pip install 'voicebudget[plot]' ({exc})")
    with user_errors():
        plot_call(result, target)


def endpointing_cmd(
    scenario: Annotated[Path, typer.Argument(help="Scenario file (its endpointing stage, and each variant's).")],
    pauses: Annotated[
        Path,
        typer.Option(
            "--pauses",
            help="Mid-turn pauses: a CSV/JSON of ms, a TOML/YAML (samples_ms, p95_ms or pauses; "
            "pauses_per_turn), or a call recording.",
        ),
    ],
    false_end_rate: Annotated[
        float | None,
        typer.Option(
            "--false-end-rate",
            min=0.0,
            max=1.0,
            help="A turn detector's mixture: how often it takes its short wait at a pause (default: as at an end).",
        ),
    ] = None,
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")] = TableOrJson.table,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Draw the frontier with the settings to this PNG.")
    ] = None,
    overwrite: ForceOpt = False,
) -> None:
    """The endpointing trade-off: for a fixed silence timeout, the latency added at p95 against the
    share of turns cut off at a mid-turn pause, with the scenario's setting (and its variants') marked.

    Exit code 0, 2 on invalid input.
    """
    targets = check_plot_path(plot, overwrite=overwrite, inputs=[scenario, pauses])
    with user_errors():
        from voicebudget.audio._frontier import few_pauses_warning, frontier_for_scenario

        result = frontier_for_scenario(scenario, pauses, false_end_rate=false_end_rate)
    if few := few_pauses_warning(result.pauses):
        warn(few)
    if fmt is TableOrJson.json:
        emit_json(result.to_dict())
    else:
        from voicebudget.audio._render import render_frontier

        Console(highlight=False, emoji=False).print(render_frontier(result))
    if targets:
        try:  # optional: matplotlib is the plot extra
            from voicebudget.audio._plot import plot_frontier
        except ImportError as exc:
            fail(f"--plot needs matplotlib: pip install 'voicebudget[plot]' ({exc})")
        with user_errors():
            plot_frontier(result, targets[0])
    raise typer.Exit(EXIT_OK)
