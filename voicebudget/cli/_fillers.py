"""``guard-report``: filler policies replayed over a scenario's turns, side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from voicebudget.cli._options import AllowRootOpt, BudgetOpt, PercentileOpt, SeedOpt, TableOrJson
from voicebudget.cli._output import EXIT_OK, EXIT_OVER_BUDGET, emit_json, user_errors


def guard_report_cmd(
    scenario: Annotated[Path, typer.Argument(help="Scenario file (or one `voicebudget fit` wrote from traces).")],
    policies: Annotated[
        list[str] | None,
        typer.Option(
            "--policy",
            "-p",
            help="p-fit[:Q] (the guard), timeout[:MS][@STAGE] (default 1000 on the LLM), median[:MS|budget]"
            "[@STAGE] (default 1500); repeatable. Default: p-fit, timeout:1000, median:budget.",
        ),
    ] = None,
    variant: Annotated[str, typer.Option("--variant", help="The scenario's variant.")] = "baseline",
    turns: Annotated[int, typer.Option("--turns", "-n", min=1, help="Turns replayed.")] = 20_000,
    guard_turns: Annotated[int, typer.Option("--guard-turns", min=1, help="Other turns the guard learns from.")] = (
        20_000
    ),
    filler_ms: Annotated[
        float,
        typer.Option(
            "--filler-ms",
            min=0.0,
            help="From firing to the filler heard, ms (a synthesised one: TTS TTFB + transport).",
        ),
    ] = 0.0,
    seed: SeedOpt = None,
    budget_ms: BudgetOpt = None,
    percentile: PercentileOpt = None,
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")] = TableOrJson.table,
    allowed_roots: AllowRootOpt = None,
) -> None:
    """Filler policies replayed offline: how often each fires, the fillers wasted (the reply would have fit),
    the turns rescued and still over budget, and the latency hidden at the budget's percentile
    (docs/telemetry.md#filler-policies-offline).

    Exit code 0 when some policy has the first audio heard within budget at its percentile, 1 when none does,
    2 on invalid input.
    """
    with user_errors():
        # lazy: start-up (the library loads when the command runs)
        from voicebudget.checker._fillers import guard_report_file

        report = guard_report_file(
            scenario, policies or (), variant=variant, turns=turns, guard_turns=guard_turns, seed=seed,
            budget_ms=budget_ms, percentile=percentile, filler_ms=filler_ms, allowed_roots=allowed_roots or (),
        )  # fmt: skip
    if fmt is TableOrJson.json:
        emit_json(report.to_dict())
    else:
        from voicebudget.checker._render_fillers import render_fillers

        Console(highlight=False, emoji=False).print(render_fillers(report))
    raise typer.Exit(EXIT_OK if report.passed else EXIT_OVER_BUDGET)
