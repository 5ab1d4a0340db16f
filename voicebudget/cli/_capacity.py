"""``capacity``: concurrent calls per deployment within budget, and their cost."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from voicebudget.cli._options import BudgetOpt, ForceOpt, OnOff, PercentileOpt, PrecisionOpt, SeedOpt, TableOrJson
from voicebudget.cli._output import (
    EXIT_OK,
    EXIT_OVER_BUDGET,
    check_plot_path,
    choice_value,
    emit_json,
    fail,
    user_errors,
)
from voicebudget.tuning._executor import MAX_WORKERS


def _batch_caps(text: str | None) -> tuple[int | None, ...]:
    """``--batch-cap 4,16,64`` -> (4, 16, 64); exit 2 naming the option on anything else."""
    if text is None:
        return (None,)
    try:
        caps = tuple(int(x) for x in text.split(","))
    except ValueError:
        fail(f"--batch-cap: expected whole numbers separated by commas, got {text!r}")
    if not caps or min(caps) < 1 or max(caps) > 1_000_000:
        fail(f"--batch-cap: each cap must be in 1..1,000,000, got {text!r}")
    return caps


def capacity_cmd(
    scenario: Annotated[Path, typer.Argument(help="Scenario file whose voice turn the deployments serve.")],
    hardware: Annotated[
        str | None, typer.Option("--hardware", "-H", help="Hardware id; default: the scenario's own LLM stages.")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model id (with --hardware).")] = None,
    chips: Annotated[int | None, typer.Option("--chips", min=1, help="Chips per deployment (default: fewest).")] = None,
    precision: Annotated[PrecisionOpt | None, typer.Option("--precision", help="Weights.")] = None,
    batch_caps: Annotated[
        str | None, typer.Option("--batch-cap", help="Max requests in flight, e.g. 4,16,64 (one deployment each).")
    ] = None,
    usd_per_chip_hour: Annotated[
        float | None, typer.Option("--price-per-chip-hour", min=0.0, max=1e6, help="US$ per chip-hour.")
    ] = None,
    turns_per_minute: Annotated[
        float | None, typer.Option("--turns-per-minute", help="Agent turns per call-minute (default: file's, else 6).")
    ] = None,
    prefix_caching: Annotated[
        OnOff | None,
        typer.Option(
            "--prefix-caching", help="on: servers keep each call's KV cache between turns (default: the file's)."
        ),
    ] = None,
    target_calls: Annotated[
        int | None, typer.Option("--target-calls", min=1, help="Also give chips for this many calls.")
    ] = None,
    budget_ms: BudgetOpt = None,
    percentile: PercentileOpt = None,
    samples: Annotated[int, typer.Option("--samples", "-n", min=100, help="Turns per load level.")] = 20_000,
    seed: SeedOpt = None,
    workers: Annotated[
        int, typer.Option("--workers", "-w", min=1, max=MAX_WORKERS, help="Local worker processes.")
    ] = 1,
    scheduler: Annotated[str | None, typer.Option("--scheduler", help="Dask scheduler address.")] = None,
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")] = TableOrJson.table,
    plot: Annotated[Path | None, typer.Option("--plot", help="Draw p95 vs calls and cost vs p95 to this PNG.")] = None,
    overwrite: ForceOpt = False,
) -> None:
    """How many concurrent calls each deployment carries within budget, and the cost per call-minute
    (docs/capacity.md).

    Exit code 0 when some deployment carries at least one call within budget, 1 when none does, 2 on
    invalid input.
    """
    # lazy: start-up (the library loads when the command runs)
    from voicebudget.capacity import plan_capacity_file
    from voicebudget.capacity._render import render_capacity

    check_plot_path(plot, overwrite=overwrite, inputs=[scenario])
    caps = _batch_caps(batch_caps)
    overrides: dict[str, Any] = {} if turns_per_minute is None else {"turns_per_call_minute": turns_per_minute}
    if prefix_caching is not None:
        overrides["prefix_caching"] = prefix_caching is OnOff.on
    with user_errors(turns_per_call_minute="turns_per_minute"):
        result = plan_capacity_file(
            scenario,
            hardware=hardware,
            model=model,
            chips=chips,
            precision=choice_value(precision),
            batch_caps=caps,
            usd_per_chip_hour=usd_per_chip_hour,
            budget_ms=budget_ms,
            percentile=percentile,
            traffic_overrides=overrides,
            samples=samples,
            seed=seed,
            target_calls=target_calls,
            workers=workers,
            scheduler=scheduler,
        )
    if plot is not None:
        try:  # optional: matplotlib is the plot extra
            from voicebudget.capacity._render import plot_capacity

            plot_capacity(result, plot)
        except ImportError as exc:
            fail(f"--plot needs matplotlib: pip install 'voicebudget[plot]' ({exc})")
    if fmt is TableOrJson.json:
        emit_json(result.to_dict())
    else:
        Console(highlight=False, emoji=False).print(render_capacity(result))
    carried = any(d.max_concurrent_calls != 0 for d in result.deployments)
    raise typer.Exit(EXIT_OK if carried else EXIT_OVER_BUDGET)
