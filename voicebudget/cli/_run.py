"""``run`` and ``schema``: simulate scenario files, and the JSON Schema of those files.

The library is imported inside the commands (start-up: ``voicebudget --help`` imports no numpy or
pydantic; the package docstring says why).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from voicebudget.cli._ci import emit_github, emit_junit
from voicebudget.cli._guard import loading_library
from voicebudget.cli._options import (
    AllowRootOpt,
    BudgetOpt,
    ForceOpt,
    Format,
    PercentileOpt,
    SamplesOpt,
    SeedOpt,
)
from voicebudget.cli._output import (
    EXIT_OK,
    EXIT_OVER_BUDGET,
    check_plot_path,
    emit_json,
    fail,
    user_errors,
    warn_few_simulated,
)

if TYPE_CHECKING:
    from voicebudget._simulate import RunResult

DEFAULT_SCENARIO = "webrtc-cascade.toml"


def default_scenario_path() -> Path:
    """The bundled default scenario (``voicebudget/data/webrtc-cascade.toml``)."""
    from importlib import resources  # lazy: start-up (tempfile and zipfile come with it; help needs neither)

    return Path(str(resources.files("voicebudget") / "data" / DEFAULT_SCENARIO))


def run(
    scenarios: Annotated[
        list[Path] | None, typer.Argument(help="Scenario files (.toml/.yaml). Default: the bundled WebRTC scenario.")
    ] = None,
    samples: SamplesOpt = None,
    seed: SeedOpt = None,
    budget_ms: BudgetOpt = None,
    percentile: PercentileOpt = None,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.table,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Also draw latency CDFs and a waterfall to this PNG.")
    ] = None,
    allowed_roots: AllowRootOpt = None,
    overwrite: ForceOpt = False,
) -> None:
    """Simulate scenarios (every variant on common random numbers) and judge them against the budget.

    Exit code 0 when every variant is within budget, 1 when any is over, 2 on invalid input.
    """
    with loading_library():
        from voicebudget._simulate import run_scenarios  # lazy: start-up (the library loads when the command runs)

    paths = scenarios or [default_scenario_path()]
    targets = check_plot_path(plot, overwrite=overwrite, inputs=paths, count=len(paths))
    with user_errors():
        results = run_scenarios(
            paths,
            samples=samples,
            seed=seed,
            budget_ms=budget_ms,
            percentile=percentile,
            allowed_roots=allowed_roots or (),
        )
    if targets:
        _plot_run(results, targets)
    _render_runs(results, fmt, paths)
    raise typer.Exit(EXIT_OK if all(r.passed for r in results) else EXIT_OVER_BUDGET)


def _render_runs(results: list[RunResult], fmt: Format, paths: list[Path]) -> None:
    # lazy: start-up (the library loads when the command runs)
    from voicebudget._render import render_markdown, render_run

    if fmt is Format.json:
        emit_json(results[0].to_dict() if len(results) == 1 else [r.to_dict() for r in results])
    elif fmt is Format.markdown:
        sys.stdout.write("\n\n".join(render_markdown(r) for r in results) + "\n")
    elif fmt in (Format.junit, Format.github):
        # lazy: start-up (the library loads when the command runs)
        from voicebudget.ci import run_suites

        with user_errors():
            suites = run_suites(results, paths)
        if fmt is Format.junit:
            emit_junit(suites, "voicebudget run")
            return
        console = Console(highlight=False, emoji=False)
        for r in results:
            console.print(render_run(r))
        emit_github(suites, "\n\n".join(render_markdown(r) for r in results), "run")
    else:
        console = Console(highlight=False, emoji=False)
        for r in results:
            console.print(render_run(r))
    if fmt is not Format.json:  # JUnit returned above
        report = results[0].reports[0]
        warn_few_simulated(report.budget.percentile, report.n_turns)


def _plot_run(results: list[RunResult], targets: list[Path]) -> None:
    try:  # optional: matplotlib is the plot extra
        from voicebudget._plot import plot_run  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        fail(f"--plot needs matplotlib: pip install 'voicebudget[plot]' ({exc})")
    for r, target in zip(results, targets, strict=True):
        plot_run(r, target)


def schema() -> None:
    """Print the JSON Schema of scenario files (for editor completion)."""
    # lazy: start-up (the library loads when the command runs)
    from voicebudget._scenario import scenario_json_schema

    emit_json(scenario_json_schema())
