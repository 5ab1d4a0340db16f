"""``baseline pin`` and ``compare``: keep a run's measured turns, judge a later run against them (docs/ci.md)."""

from __future__ import annotations

import dataclasses
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from voicebudget._text import count
from voicebudget.cli._ci import emit_github, emit_junit
from voicebudget.cli._options import BudgetOpt, ForceOpt, PercentileOpt
from voicebudget.cli._output import emit_json, fail, option_spelling, user_errors

if TYPE_CHECKING:
    from voicebudget.baseline import Tolerance

LIBRARY_NAMES = {
    "ignore_stages": "ignore_stage",
    "budget": "budget_file",
    "variant": "predicted",
    "baseline_variant": "baseline_scenario",
}
"""``CompareSettings``' fields -> the ``compare`` option that sets them, where the names differ."""

EXIT_NOT_COMPARABLE = 4
"""``compare``: the two sides cannot be compared (the reasons are printed)."""


class CompareFormat(StrEnum):
    """Output formats of ``compare``."""

    table = "table"
    json = "json"
    markdown = "markdown"
    junit = "junit"
    github = "github"


class MethodOpt(StrEnum):
    """Bootstrap interval methods (the library's ``METHODS``)."""

    percentile = "percentile"
    bca = "bca"


def pin_cmd(
    report: Annotated[
        Path,
        typer.Argument(
            help="JSON with measured turns: check --format json, the pytest plugin's --voicebudget-json, a "
            "recorder report's to_dict(), or a baseline."
        ),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Baseline file to write (.json).")],
    overwrite: ForceOpt = False,
) -> None:
    """Pin a baseline: keep the report's measured turns (per-turn stages, call ids, anchor, budget) in a
    voicebudget-turns file that `voicebudget compare` reads.

    Exit code 0 written, 2 no measured turns in the report (or the output exists without --force).
    """
    # lazy: start-up (the library loads when the command runs)
    from voicebudget._io import check_target
    from voicebudget.baseline import pin_baseline

    with user_errors():
        check_target(output, overwrite=overwrite, inputs=[report], what="-o")
        try:
            sets = pin_baseline(report, output)
        except OSError as exc:
            fail(f"{output}: cannot write: {exc.strerror or exc}")
    for s in sets:
        calls = f", {count(len(set(s.calls)), 'call')}" if s.calls is not None else ""
        sys.stdout.write(f"pinned {s.name}: {count(s.n_turns, 'turn')}{calls}, {count(len(s.stages_ms), 'stage')}\n")
    sys.stdout.write(f"wrote {output}\n")


def compare_cmd(
    baseline: Annotated[Path, typer.Argument(help="The baseline (from `voicebudget baseline pin`, or any report).")],
    new: Annotated[Path, typer.Argument(help="The new run's report (check --format json, pytest JSON, ...).")],
    tolerance_ms: Annotated[
        float | None, typer.Option("--tolerance-ms", help="Slowdown allowed, ms >= 0 (default: max(20 ms, 10%)).")
    ] = None,
    tolerance: Annotated[
        str | None, typer.Option("--tolerance", help="Slowdown allowed as a share of the baseline, e.g. 10%.")
    ] = None,
    budget_file: Annotated[
        Path | None,
        typer.Option("--budget-file", help=r"TOML/YAML with a \[budget] table (and \[budget.tolerance] per stage)."),
    ] = None,
    budget_ms: BudgetOpt = None,
    percentile: PercentileOpt = None,
    level: Annotated[float, typer.Option("--level", help="Two-sided level of the intervals.")] = 0.90,
    method: Annotated[MethodOpt, typer.Option("--method", help="Bootstrap interval.")] = MethodOpt.percentile,
    resamples: Annotated[int, typer.Option("--resamples", min=100, help="Bootstrap resamples.")] = 2000,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the resamples (recorded).")] = 0,
    allow_few_turns: Annotated[
        bool, typer.Option("--allow-few-turns", help="Gate on percentiles with fewer than 5 turns beyond them.")
    ] = False,
    ignore_stage: Annotated[
        list[str] | None, typer.Option("--ignore-stage", help="Leave a stage out (repeatable).")
    ] = None,
    fmt: Annotated[CompareFormat, typer.Option("--format", "-f", help="Output format.")] = CompareFormat.table,
    predicted: Annotated[
        str | None,
        typer.Option(
            "--predicted",
            metavar="SCENARIO:VARIANT",
            help="Check the measured change against this variant's simulated change (docs/ci.md).",
        ),
    ] = None,
    baseline_scenario: Annotated[
        str | None,
        typer.Option(
            "--baseline-scenario",
            metavar="SCENARIO[:VARIANT]",
            help="What --predicted is measured against (default: its file's baseline).",
        ),
    ] = None,
    samples: Annotated[
        int | None, typer.Option("--samples", "-n", min=1, help="Simulated turns for --predicted.")
    ] = None,
    stage_map: Annotated[
        list[str] | None,
        typer.Option(
            "--stage-map",
            metavar="SCENARIO_STAGE=MEASURED_STAGE",
            help="A scenario stage that predicts a measured stage of another name (repeatable).",
        ),
    ] = None,
) -> None:
    """Compare measured turns with a baseline: per stage and total, p50 and the budget's percentile, the
    difference with a bootstrap interval over turns (over calls when the turns carry call ids); a
    regression is an interval wholly above the tolerance.

    Exit code 0 no regression, 1 regression, 2 invalid input, 4 not comparable (too few turns for the
    percentile, a stage on one side only, different budgets or anchors), each with its reason.

    With --predicted SCENARIO:VARIANT the measured change is checked against the variant's simulated change
    (Monte Carlo interval plus the measurement's): exit 1 when the measurement contradicts the prediction beyond
    the tolerance (a regression the model predicted is no failure).
    """
    # lazy: start-up (the library loads when the command runs)
    from voicebudget.baseline import CompareSettings, compare_files, load_budget
    from voicebudget.baseline._render import render_comparison, render_markdown

    with user_errors(**LIBRARY_NAMES):
        settings = CompareSettings(
            level=level,
            method=method.value,  # type: ignore[arg-type,unused-ignore]  # one of METHODS
            resamples=resamples,
            seed=seed,
            allow_few_turns=allow_few_turns,
            ignore_stages=tuple(ignore_stage or ()),
            tolerance=_tolerance(tolerance_ms, tolerance),
            spell=option_spelling(LIBRARY_NAMES),
        )
        budget = load_budget(budget_file) if budget_file is not None else None
        if budget_ms is not None or percentile is not None:
            from voicebudget._budget import Budget, with_overrides

            budget = with_overrides(budget or Budget(), budget_ms, percentile)
        if budget is not None:
            settings = dataclasses.replace(settings, budget=budget)
        prediction = None
        if predicted is not None:
            # lazy: start-up (the library loads when the command runs)
            from voicebudget.baseline import load_prediction

            prediction = load_prediction(
                predicted, baseline_scenario, samples=samples, stage_map=_stage_map(stage_map or [])
            )
        elif baseline_scenario is not None or stage_map or samples is not None:
            fail("--baseline-scenario, --stage-map and --samples go with --predicted SCENARIO:VARIANT")
        result = compare_files(baseline, new, settings, prediction=prediction)
    if fmt is CompareFormat.json:
        emit_json(result.to_dict())
    elif fmt is CompareFormat.markdown:
        sys.stdout.write(render_markdown(result))
    elif fmt is CompareFormat.junit:
        # lazy: start-up (the library loads when the command runs)
        from voicebudget.ci import compare_suites

        emit_junit(compare_suites(result, prediction), "voicebudget compare")
    else:
        Console(highlight=False, emoji=False).print(render_comparison(result))
        if fmt is CompareFormat.github:
            # lazy: start-up (the library loads when the command runs)
            from voicebudget.ci import compare_suites

            emit_github(compare_suites(result, prediction), render_markdown(result), "compare")
    raise typer.Exit(result.exit_code)


def _stage_map(pairs: list[str]) -> dict[str, str]:
    """``--stage-map tts=tts_ttfb`` (repeatable) as scenario stage -> measured stage."""
    out = {}
    for pair in pairs:
        sim, sep, measured = pair.partition("=")
        if not sep or not sim.strip() or not measured.strip():
            fail(f"--stage-map: give SCENARIO_STAGE=MEASURED_STAGE, got {pair!r}")
        out[sim.strip()] = measured.strip()
    return out


def _tolerance(ms: float | None, share: str | None) -> Tolerance:
    """The tolerance the options ask for (both: the larger), else the library's default."""
    # lazy: start-up (the library loads when the command runs)
    from voicebudget._errors import ScenarioError
    from voicebudget.baseline import Tolerance
    from voicebudget.baseline._compare import DEFAULT_TOLERANCE

    if ms is None and share is None:
        return DEFAULT_TOLERANCE
    if ms is not None:
        Tolerance.parse(ms, "--tolerance-ms")  # refuses < 0, inf and nan, naming the value
    parsed: Tolerance | None = None
    if share is not None:
        try:
            parsed = Tolerance.parse(share, "--tolerance")
        except ScenarioError:
            fail(f"--tolerance: a share of the baseline like '10%' (ms go to --tolerance-ms), got {share!r}")
    origin = " and ".join(o for o, v in (("--tolerance-ms", ms), ("--tolerance", share)) if v is not None)
    return Tolerance(ms=ms, share=parsed.share if parsed else None, origin=origin)
