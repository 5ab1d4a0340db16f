"""The cases of each command's verdict: ``run`` (one suite per scenario file), ``check`` (one per trace check),
``compare`` (one per compared set), and the markdown of a measured report for a job summary."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from voicebudget._errors import ScenarioError
from voicebudget._io import read_document
from voicebudget._report import Report
from voicebudget._text import as_given
from voicebudget.checker._format import breakdown
from voicebudget.ci._cases import Case, Location, Suite, report_cases
from voicebudget.ci._positions import field_lines, line_of, stage_path

if TYPE_CHECKING:
    from voicebudget._simulate import RunResult
    from voicebudget.baseline._compare import Comparison, SetComparison
    from voicebudget.baseline._predict import Prediction
    from voicebudget.traces._check import TraceCheck

__all__ = ["check_suite", "compare_suites", "report_markdown", "run_suites", "scenario_locator"]


def scenario_locator(path: str | Path) -> tuple[Location, Callable[[str, str], Location]]:
    """Where a scenario file's verdicts point: its budget's ``total_ms`` line, and a function (variant, stage) ->
    the line where that variant's stage is defined (its own table when the variant changes it, else the
    baseline pipeline's).

    :raises ScenarioError: the file cannot be read.
    """
    name = str(path)
    lines = field_lines(path)
    doc = read_document(path)
    total = Location(name, line_of(lines, ("budget", "total_ms")) or 1)

    def stage_at(variant: str, stage: str) -> Location:
        where = stage_path(doc, stage, variant)
        return Location(name, (line_of(lines, where) if where else None) or total.line)

    return total, stage_at


def run_suites(results: Sequence[RunResult], paths: Sequence[str | Path]) -> list[Suite]:
    """One suite per scenario file: per variant a case for the total against the budget and one per stage
    allocation, each pointing at its line in the file (``paths[i]`` is the file of ``results[i]``)."""
    suites = []
    for result, path in zip(results, paths, strict=True):
        total_at, stage_at = scenario_locator(path)
        cases: list[Case] = []
        for report in result.reports:
            cases += report_cases(
                report,
                result.scenario,
                details=breakdown(report),
                total_at=total_at,
                stage_at=functools.partial(stage_at, report.name),
                prefix=f"{report.name}: ",
            )
        props = (
            ("seed", str(result.seed)),
            ("samples", str(result.samples)),
            ("budget_ms", f"{result.budget.total_ms:g}"),
            ("percentile", f"{result.budget.percentile:g}"),
        )
        suites.append(Suite(result.scenario, tuple(cases), props, str(path)))
    return suites


def check_suite(result: TraceCheck) -> Suite:
    """The trace check's cases: its included turns against the budget (pointing at the slowest turn's line in
    its trace), each stage allocation (at the turn where that stage was longest), and each call judged from a
    platform's own statistics."""
    used = [t for t, inc in zip(result.turns, result.included, strict=True) if inc and t.total_ms is not None]
    cases: list[Case] = []
    if result.report is not None and used:
        slowest = max(used, key=lambda t: t.total_ms or 0.0)

        def stage_at(stage: str) -> Location | None:
            ran = [t for t in used if not math.isnan(t.stages_ms.get(stage, math.nan))]
            worst = max(ran, key=lambda t: t.stages_ms[stage], default=None)
            return Location(worst.origin, worst.line) if worst is not None else None

        cases += report_cases(
            result.report,
            result.name,
            details=breakdown(result.report),
            total_at=Location(slowest.origin, slowest.line),
            stage_at=stage_at,
        )
    for verdict in result.summaries:
        cases.append(
            Case(
                f"call {verdict.summary.call}: {verdict.statistic} <= {result.budget.total_ms:g} ms",
                result.name,
                "passed" if verdict.passed else "failed",
                "" if verdict.passed else verdict.message(),
                verdict.message(),
            )
        )
    props = (
        ("budget_ms", f"{result.budget.total_ms:g}"),
        ("percentile", f"{result.budget.percentile:g}"),
        ("turns", str(len(used))),
        ("anomalies", str(len(result.anomalies))),
    )
    return Suite(result.name, tuple(cases), props)


def compare_suites(comparison: Comparison, prediction: Prediction | None = None) -> list[Suite]:
    """One suite per compared set: a case per measure and percentile (a regression fails it, not comparable is
    an error), and an error case for each reason the set or the reports do not compare. With the prediction that
    was checked, a case per predicted measure (``predicted: llm_ttft p95``) that fails when the measurement
    contradicts it, pointing at the line of the variant's stage in the scenario file (the variant's own table
    for the total)."""
    level = comparison.settings.level
    suites = [_set_suite(s, level, comparison.settings.describe()) for s in comparison.sets]
    if prediction is not None:
        suites += _predicted_suites(comparison, prediction)
    if comparison.problems:
        cases = tuple(Case("comparable", "compare", "error", problem, problem) for problem in comparison.problems)
        suites.append(Suite("compare", cases))
    return suites


def _predicted_suites(comparison: Comparison, prediction: Prediction) -> list[Suite]:
    path = prediction.scenario.origin
    try:
        lines = field_lines(path)
        doc = read_document(path)
    except ScenarioError:  # a scenario built in code: no file to point at
        lines, doc = {}, {}
    variant = prediction.variant

    def at(stage: str) -> Location | None:
        if not doc:
            return None
        where = ("variants", variant) if stage == "total" else stage_path(doc, stage, variant)
        return Location(path, (line_of(lines, where) if where else None) or 1)

    suites = []
    for s in comparison.predicted:
        cases = tuple(
            Case(
                f"predicted: {r.measure} {r.label}",
                f"{s.name} (predicted)",
                "failed" if r.missed else "passed",
                f"{r.measure} {r.label}: {r.sentence()}" if r.missed else "",
                f"{r.measure} {r.label}: {r.sentence()}\n{comparison.prediction}",
                at(r.simulated),
            )
            for r in s.rows
        )
        suites.append(Suite(f"{s.name} (predicted)", cases, (("prediction", comparison.prediction),), path))
    return suites


def _set_suite(s: SetComparison, level: float, settings: str) -> Suite:
    cases = [Case("comparable", s.name, "error", problem, problem) for problem in s.problems]
    for row in s.rows:
        sentence = row.sentence(level)
        outcome: Any = {"regression": "failed", "not comparable": "error"}.get(row.verdict, "passed")
        message = sentence if outcome != "passed" else ""
        cases.append(Case(f"{row.measure} {row.label}", s.name, outcome, message, f"{sentence}\n{settings}"))
    props = [
        ("resampled", s.resampled),
        ("budget_ms", f"{s.budget.total_ms:g}"),
        ("percentile", f"{s.budget.percentile:g}"),
    ]
    if s.calls:
        props.append(("calls", f"{s.calls[0]} -> {s.calls[1]}"))
    return Suite(s.name, tuple(cases), tuple(props))


def report_markdown(report: Report, title: str) -> str:
    """A measured report as GitHub-flavoured markdown (a job summary): the verdict, the summary line, and the
    stages' p50, value at the budget's percentile, allocation and tail share."""
    label = report.budget.label
    lines = [
        f"### {title}: {'PASS' if report.passed else 'FAIL'}",
        "",
        f"{report.summary()}; {report.within_budget_share:.1%} of {report.n_turns:,} turns within budget.",
        "",
        f"| stage | p50 ms | {label} ms | allocation ms | tail share (>= {label}) |",
        "|---|---:|---:|---:|---:|",
    ]
    for s in report.stages:
        alloc = "-" if s.allocation_ms is None else as_given(s.allocation_ms, 1)
        mark = " **over**" if s.over_allocation else ""
        lines.append(
            f"| {s.name} | {s.stats.p50_ms:.1f} | {s.stats.at_percentile_ms:.1f} | {alloc}{mark} | {s.tail_share:.1%} |"
        )
    t = report.total
    lines += [
        f"| **total** | {t.p50_ms:.1f} | {t.at_percentile_ms:.1f} | {as_given(report.budget.total_ms, 1)} | 100% |",
        "",
    ]
    return "\n".join(lines)
