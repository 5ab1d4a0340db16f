"""Plain-text renderings of a report for test output (no rich, no terminal needed)."""

from __future__ import annotations

import math

import numpy as np

from voicebudget._plausible import budget_percentile_warning, budget_total_warning
from voicebudget._report import Report, StageReport
from voicebudget._tail import few_turns_warning
from voicebudget._text import as_given, count

__all__ = ["breakdown", "summary_line"]


def _ms(x: float | None) -> str:
    return "-" if x is None or math.isnan(x) else f"{x:.1f}"


def _row(cells: list[str], widths: list[int]) -> str:
    first, *rest = cells
    return "  " + first.ljust(widths[0]) + "".join(c.rjust(w + 2) for c, w in zip(rest, widths[1:], strict=True))


def _stage_cells(s: StageReport) -> list[str]:
    return [
        s.name,
        _ms(s.stats.p50_ms),
        _ms(s.stats.at_percentile_ms),
        _ms(s.allocation_ms),
        _ms(s.tail_ms),
        f"{s.tail_share:.1%}",
    ]


def _table(report: Report) -> list[str]:
    label = report.budget.label
    header = ["stage", "p50 ms", f"{label} ms", "budget ms", "tail ms", "tail share"]
    t = report.total
    tail_total = float(np.mean(report.total_samples_ms[report.total_samples_ms >= t.at_percentile_ms]))
    rows = [_stage_cells(s) for s in report.stages]
    rows.append(
        [
            "voice-to-voice",
            _ms(t.p50_ms),
            _ms(t.at_percentile_ms),
            _ms(report.budget.total_ms),
            _ms(tail_total),
            "100.0%",
        ]
    )
    flags = ["  over allocation" if s.over_allocation else "" for s in report.stages] + [""]
    if report.server_side is not None:
        ss = report.server_side
        rows.append(["server-side", _ms(ss.p50_ms), _ms(ss.at_percentile_ms), "-", "-", ""])
        flags.append("  (to audio_sent)")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return [_row(header, widths), *(_row(r, widths) + f for r, f in zip(rows, flags, strict=True))]


def warnings_of(report: Report) -> list[str]:
    """The report's warnings, one line each: a budget typed in seconds (``total_ms: 0.8 ms is under 50 ms,
    ...``) or judged below the median (``percentile: p0.95 passes when 0.95% of turns are within budget,
    ...``; :mod:`voicebudget._plausible`), and too few turns for the percentile
    (:func:`voicebudget._tail.few_turns_warning`)."""
    budget = report.budget
    found = [
        (field, message)
        for field, message in (
            ("total_ms", budget_total_warning(budget.total_ms)),
            ("percentile", budget_percentile_warning(budget.percentile)),
        )
        if message is not None
    ]
    out = [f"{field}: {message}" for field, message in found]
    few = few_turns_warning(budget.percentile, report.n_turns)
    return [*out, few] if few is not None else out


def breakdown(report: Report) -> str:
    """A multi-line verdict with the per-stage table and the stage that drove the tail.

    Stage figures are the time credited to each stage on the turn's critical path (they add up to
    voice-to-voice); ``tail ms`` is their mean over the turns at or beyond the target percentile.
    """
    label = report.budget.label
    n_tail = int(np.sum(report.total_samples_ms >= report.total.at_percentile_ms))
    lines = [
        f"voice budget {'met' if report.passed else 'exceeded'}: {report.summary()}",
        f"  {count(report.n_turns, 'turn')} {'simulated' if report.source == 'simulation' else 'measured'}, "
        f"{report.within_budget_share:.1%} within "
        f"{as_given(report.budget.total_ms, 1)} ms;"
        f" tail = {'the turn' if n_tail == 1 else f'the {n_tail} turns'} at or above {label}",
        *_table(report),
    ]
    driver = report.tail_driver
    if driver is not None:
        lines.append(f"  tail driver: {driver.name} ({driver.tail_ms:.1f} ms, {driver.tail_share:.1%} of the tail)")
    lines += [f"  warning: {w}" for w in warnings_of(report)]
    for t in getattr(report, "excluded", ()):
        lines.append(f"  left out: {t}")
    return "\n".join(lines)


def summary_line(report: Report) -> str:
    """One line for the terminal summary: verdict, figures, tail driver, turn count; then a line per warning
    (:func:`warnings_of`: an implausible budget, too few turns for the percentile)."""
    verdict = "passed" if report.passed else "FAILED"
    left_out = len(getattr(report, "excluded", ()))
    extra = f", {left_out} left out" if left_out else ""
    line = f"{verdict} {report.name}: {report.budget.label} {report.total.at_percentile_ms:.1f} ms"
    line += f" {'<=' if report.slack_ms >= 0 else '>'} {as_given(report.budget.total_ms, 1)} ms"
    driver = report.tail_driver
    if driver is not None:
        line += f"; tail driver {driver.name} {driver.tail_share:.0%}"
    over = [s.name for s in report.stages if s.over_allocation]
    if over:
        line += f"; over allocation: {', '.join(over)}"
    line += f" ({count(report.n_turns, 'turn')}{extra})"
    return "".join([line, *(f"\n  warning: {w}" for w in warnings_of(report))])
