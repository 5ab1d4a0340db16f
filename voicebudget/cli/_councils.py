"""``council``, ``council-fit`` and ``tune``: evaluate, calibrate and search councils of models."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from voicebudget.cli._options import AllowRootOpt, BudgetOpt, ForceOpt, PercentileOpt, SeedOpt, TableOrJson
from voicebudget.cli._output import (
    EXIT_OK,
    EXIT_OVER_BUDGET,
    check_plot_path,
    emit_json,
    fail,
    user_errors,
    warn_few_simulated,
)
from voicebudget.tuning._executor import MAX_WORKERS


def council_cmd(
    file: Annotated[Path, typer.Argument(help="Council file (.toml/.yaml), e.g. councils/intent-wafer-all.toml.")],
    budget_ms: Annotated[
        float | None, typer.Option("--budget-ms", help="Budget for the council in ms (default: the file's, or 800).")
    ] = None,
    percentile: PercentileOpt = None,
    samples: Annotated[int | None, typer.Option("--samples", "-n", min=1, help="Simulated turns.")] = None,
    seed: SeedOpt = None,
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")] = TableOrJson.table,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Also draw the council's and members' CDFs and a waterfall to a PNG.")
    ] = None,
    allowed_roots: AllowRootOpt = None,
    overwrite: ForceOpt = False,
) -> None:
    """Evaluate a council of models: latency against the budget (and the member driving the tail),
    quality, cost per turn and expected user time per completed request.

    Exit code 0 within budget, 1 over budget, 2 on an invalid file.
    """
    check_plot_path(plot, overwrite=overwrite, inputs=[file])
    # lazy: start-up (the library loads when the command runs)
    from voicebudget.councils import run_council

    with user_errors():
        result = run_council(
            file,
            budget_ms=budget_ms,
            percentile=percentile,
            samples=samples,
            seed=seed,
            allowed_roots=allowed_roots or (),
        )
    if plot is not None:
        try:  # optional: matplotlib is the plot extra
            from voicebudget._plot import plot_council
        except ImportError as exc:
            fail(f"--plot needs matplotlib: pip install 'voicebudget[plot]' ({exc})")
        plot_council(result, plot)
    if fmt is TableOrJson.json:
        emit_json(result.to_dict())
    else:
        # lazy: start-up (the library loads when the command runs)
        from voicebudget.councils._render import render_council

        Console(highlight=False, emoji=False).print(render_council(result))
        warn_few_simulated(result.report.budget.percentile, result.report.n_turns)
    raise typer.Exit(EXIT_OK if result.passed else EXIT_OVER_BUDGET)


def council_fit_cmd(
    file: Annotated[Path, typer.Argument(help="CSV of answers: item, member, answer, correct (one row per answer).")],
    answers: Annotated[
        str | None,
        typer.Option("--answers", help="Answer space: K (e.g. 40) or 'open' (default: the distinct answers seen)."),
    ] = None,
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")] = TableOrJson.table,
) -> None:
    """Estimate a council's rho, wrong_concentration and unsolved from your own logs (repeated answers
    per item) and print the council-file fields. Exit code 0, or 2 on an invalid file.
    """
    # lazy: start-up (the library loads when the command runs)
    from voicebudget.councils import fit_answer_space

    space: int | str | None = answers
    if answers is not None and answers != "open":
        if not answers.isdigit() or int(answers) < 2:
            fail(f"--answers {answers}: expected an integer >= 2 or 'open'")
        space = int(answers)
    with user_errors():
        fit = fit_answer_space(file, answers=space)  # type: ignore[arg-type]
    if fmt is TableOrJson.json:
        emit_json(fit.to_dict())
    else:
        # lazy: start-up (the library loads when the command runs)
        from voicebudget.councils._render import render_answer_space_fit

        Console(highlight=False, emoji=False).print(render_answer_space_fit(fit, str(file)))


def tune_cmd(
    file: Annotated[Path, typer.Argument(help=r"Council file with a \[search] table, e.g. councils/tune-intent.toml.")],
    scenario: Annotated[
        Path | None,
        typer.Option("--scenario", help="Judge voice-to-voice latency with the council as this scenario's LLM."),
    ] = None,
    budget_ms: BudgetOpt = None,
    percentile: PercentileOpt = None,
    samples: Annotated[int, typer.Option("--samples", "-n", min=1, help="Turns per configuration.")] = 2_000,
    seed: Annotated[int, typer.Option("--seed", min=0, help="One seed for all configurations.")] = 1,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            "-w",
            min=1,
            max=MAX_WORKERS,
            help="Local worker processes (faster only on free cores and spaces of thousands: docs/tuning.md).",
        ),
    ] = 1,
    scheduler: Annotated[
        str | None, typer.Option("--scheduler", help="Dask scheduler address (tcp://host:8786).")
    ] = None,
    trials: Annotated[int, typer.Option("--trials", min=1, help="Optuna trials when the space is too large.")] = 2_000,
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")] = TableOrJson.table,
    allowed_roots: AllowRootOpt = None,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Also draw the Pareto front (user time vs p95 and cost) to a PNG.")
    ] = None,
    overwrite: ForceOpt = False,
) -> None:
    """Search a council's configuration space; print the Pareto front of expected user time, latency at
    the target percentile and cost among configurations within budget, and the recommended pick.

    Exit code 0 when a configuration is within budget, 1 when none is, 2 on invalid input or when an
    evaluation failed (the errors are listed).
    """
    # lazy: start-up (the library loads when the command runs)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    from voicebudget.tuning import tune_council
    from voicebudget.tuning._render import render_tune

    check_plot_path(plot, overwrite=overwrite, inputs=[file])
    columns = ("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    err = Console(stderr=True, emoji=False)
    # user_errors outside: the bar is gone before an error prints; no bar off a terminal (it left a blank line)
    with user_errors(), Progress(*columns, console=err, transient=True, disable=not err.is_terminal) as bar:
        task = bar.add_task("tuning", total=None)
        result = tune_council(
            file,
            scenario=scenario,
            budget_ms=budget_ms,
            percentile=percentile,
            samples=samples,
            seed=seed,
            workers=workers,
            scheduler=scheduler,
            trials=trials,
            allowed_roots=allowed_roots or (),
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )
    if fmt is TableOrJson.json:
        emit_json(result.to_dict())
    else:
        Console(highlight=False, emoji=False).print(render_tune(result))
        warn_few_simulated(result.budget.percentile, result.refine_samples or result.samples)
    if plot is not None:
        try:  # optional: matplotlib is the plot extra
            from voicebudget._plot import plot_tune
        except ImportError as exc:
            fail(f"--plot needs matplotlib: pip install 'voicebudget[plot]' ({exc})")
        plot_tune(result, plot)
    if result.errors:
        fail(f"{len(result.errors)} of {result.space_size} evaluations failed (listed above); results are incomplete")
    raise typer.Exit(EXIT_OK if result.best is not None else EXIT_OVER_BUDGET)
