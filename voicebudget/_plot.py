"""Plots where people would rather look: latency CDFs against the budget line, and a waterfall.

Needs matplotlib (the ``plot`` extra: ``pip install 'voicebudget[plot]'``); importing this module
without it raises :class:`ImportError`, which the CLI turns into a message and exit code 2.
Nothing else in voicebudget imports this module.

The waterfall stacks each stage's mean contribution over the tail turns (the turns at or beyond the
target percentile; the report's critical-path attribution), so a bar ends at the **mean latency of
the tail**, which lies beyond the percentile itself: a diamond marks the percentile on each bar, and a
passing variant's bar may cross the budget line while its diamond stays left of it.

Layout and colour rules: legends sit outside the axes (never over a curve or a bar); each panel's
title states the verdict and the latency at the percentile; one colour per stage or member in every
panel, from the Okabe-Ito colour-blind-safe palette (M. Okabe and K. Ito, "Color Universal Design
(CUD): how to make figures and presentations that are friendly to colorblind people", 2008,
https://jfly.uni-koeln.de/color/, read 2026-11-30); the budget line is the palette's vermillion,
which no stage uses; variants are told apart by line style in black and greys.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

from voicebudget._budget import Budget  # noqa: E402
from voicebudget._io import write_atomic  # noqa: E402
from voicebudget._report import Report  # noqa: E402

if TYPE_CHECKING:
    from voicebudget._simulate import RunResult
    from voicebudget.councils import CouncilResult
    from voicebudget.tuning import TuneResult

__all__ = [
    "BUDGET_COLOR",
    "STAGE_COLORS",
    "Curve",
    "drawn_as_written",
    "latency_figure",
    "plot_council",
    "plot_latency",
    "plot_run",
    "plot_tune",
    "tune_figure",
]

_MAX_POINTS = 20_000
FIG_SIZE_IN = (13.0, 6.0)
DPI = 120

BUDGET_COLOR = "#D55E00"
"""Okabe-Ito vermillion: the budget line only."""
STAGE_COLORS = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#CC79A7", "#999999")
"""Okabe-Ito orange, sky blue, bluish green, yellow, blue, reddish purple, and grey, in order of first
appearance; past seven, the colours repeat with hatching."""
_HATCHES = ("", "//", "..", "xx")
_VARIANT_STYLES = (
    ("#000000", "-"),
    ("#000000", "--"),
    ("#555555", "-."),
    ("#555555", ":"),
    ("#888888", "-"),
    ("#888888", "--"),
    ("#000000", ":"),
    ("#555555", "-"),
)


@contextmanager
def drawn_as_written() -> Iterator[None]:
    """Text in a figure drawn as written, as a ``with`` block or a decorator: names come from the user's
    files, and a ``$`` in one is not TeX (``a$^$`` as a stage name made mathtext's parser raise
    ``ValueError`` when the figure was saved; an even number of ``$`` typeset the text between them). It
    holds while the figure is built and while it is saved (tick labels are made at draw time), and sets
    nothing for the rest of the process (matplotlib's ``rc_context``)."""
    with matplotlib.rc_context({"text.parse_math": False}):
        yield


@dataclass(frozen=True)
class Curve:
    """One CDF: its samples, and whether it is a variant (black/grey line styles) or a stage/member
    (its stage colour)."""

    samples_ms: NDArray[np.float64]
    stage: bool = False


def _cdf_points(samples_ms: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    x = np.sort(np.asarray(samples_ms, dtype=np.float64))
    if x.size > _MAX_POINTS:  # evenly spaced order statistics: the curve, not every sample
        x = x[np.linspace(0, x.size - 1, _MAX_POINTS).astype(np.intp)]
    return x, np.linspace(0.0, 1.0, x.size)


def stage_styles(names: Sequence[str]) -> dict[str, tuple[str, str]]:
    """Colour and hatch per stage/member name, in order of first appearance (the same name gets the
    same look in every panel)."""
    out: dict[str, tuple[str, str]] = {}
    for name in names:
        if name not in out:
            i = len(out)
            out[name] = (STAGE_COLORS[i % len(STAGE_COLORS)], _HATCHES[(i // len(STAGE_COLORS)) % len(_HATCHES)])
    return out


def _verdict(report: Report) -> str:
    return "PASS" if report.passed else "FAIL"


def _headline(reports: Mapping[str, Report], budget: Budget, width: int) -> str:
    """``PASS: p95 356.9 ms <= 400 ms`` for one report; per variant for several."""
    label = budget.label
    if len(reports) == 1:
        r = next(iter(reports.values()))
        cmp = "<=" if r.passed else ">"
        return f"{_verdict(r)}: {label} {r.total.at_percentile_ms:.1f} ms {cmp} {budget.total_ms:g} ms"
    passed = sum(r.passed for r in reports.values())
    head = f"{passed} of {len(reports)} within {budget.total_ms:g} ms at {label}: "
    body = ", ".join(f"{name} {_verdict(r)} {r.total.at_percentile_ms:.0f} ms" for name, r in reports.items())
    return "\n".join(textwrap.wrap(head + body, width, break_on_hyphens=False))


@drawn_as_written()
def latency_figure(
    reports: Mapping[str, Report],
    cdfs: Mapping[str, Curve],
    breakdown: Mapping[str, Mapping[str, float]],
    budget: Budget,
    *,
    title: str = "",
) -> Figure:
    """The figure behind :func:`plot_latency` (for tests and callers that save it themselves).

    :param reports: curve/bar label -> its verdict (every waterfall bar has one).
    :param cdfs: curve label -> :class:`Curve`.
    :param breakdown: bar label -> (stage -> mean tail contribution, ms), stacked in order.
    :param budget: the budget line (``total_ms``) and the target percentile.
    :returns: a matplotlib ``Figure`` (constrained layout, legends below each panel).
    """
    fig, (ax_cdf, ax_bar) = plt.subplots(1, 2, figsize=FIG_SIZE_IN, width_ratios=[1.1, 1], layout="constrained")
    names = [n for n, c in cdfs.items() if c.stage] + [s for parts in breakdown.values() for s in parts]
    styles = stage_styles(names)
    _cdf_panel(ax_cdf, reports, cdfs, styles, budget)
    _waterfall(ax_bar, reports, breakdown, styles, budget)
    if title:
        fig.suptitle(title)
    return fig


@drawn_as_written()
def save_figure(fig: Figure, out: Path) -> Path:
    """Write ``fig`` whole (a temporary file in the same folder, then ``os.replace``) and close it: an
    interrupted write leaves the old file, never a truncated image. The format follows the suffix."""
    try:
        write_atomic(out, lambda tmp: fig.savefig(tmp, dpi=DPI, format=out.suffix.lstrip(".").lower() or "png"))
    finally:
        plt.close(fig)
    return out


def plot_latency(
    reports: Mapping[str, Report],
    cdfs: Mapping[str, Curve],
    breakdown: Mapping[str, Mapping[str, float]],
    budget: Budget,
    path: str | Path,
    *,
    title: str = "",
) -> Path:
    """Draw latency CDFs against the budget and a per-stage waterfall of the tail, to a PNG
    (``FIG_SIZE_IN`` at ``DPI``: 1560 x 720 pixels).

    :param path: the output file (PNG; any format matplotlib infers from the suffix).
    :returns: the path written.
    """
    fig = latency_figure(reports, cdfs, breakdown, budget, title=title)
    out = Path(path)
    return save_figure(fig, out)


def _cdf_panel(
    ax: Axes,
    reports: Mapping[str, Report],
    cdfs: Mapping[str, Curve],
    styles: Mapping[str, tuple[str, str]],
    budget: Budget,
) -> None:
    by_name = reports
    variant = 0
    for label, curve in cdfs.items():
        x, y = _cdf_points(curve.samples_ms)
        report = by_name.get(label)
        shown = label
        if report is not None:
            shown = f"{label}: {_verdict(report)} {budget.label} {report.total.at_percentile_ms:.0f} ms"
        if curve.stage:
            ax.plot(x, y, label=shown, linewidth=1.4, color=styles[label][0])
        else:
            color, dash = _VARIANT_STYLES[variant % len(_VARIANT_STYLES)]
            variant += 1
            ax.plot(x, y, label=shown, linewidth=2.0, color=color, linestyle=dash)
    _budget_line(ax, budget)
    ax.axhline(budget.percentile / 100.0, color="#777777", linestyle=":", linewidth=1.0, label=budget.label)
    ax.set(xlabel="latency (ms)", ylabel="share of turns", ylim=(0, 1.01))
    ax.set_title("latency CDF\n" + _headline(reports, budget, 70), fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(
        loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2 if len(cdfs) > 4 else 3, fontsize=8, frameon=False
    )


def _waterfall(
    ax: Axes,
    reports: Mapping[str, Report],
    breakdown: Mapping[str, Mapping[str, float]],
    styles: Mapping[str, tuple[str, str]],
    budget: Budget,
) -> None:
    labels = list(breakdown)
    stages = list(dict.fromkeys(s for parts in breakdown.values() for s in parts))
    left = np.zeros(len(labels))
    for stage in stages:
        widths = np.array([breakdown[b].get(stage, 0.0) for b in labels])
        color, hatch = styles[stage]
        ax.barh(labels, widths, left=left, color=color, hatch=hatch, label=stage, edgecolor="white", linewidth=0.5)
        left += widths
    by_name = reports
    at_pct = [by_name[b].total.at_percentile_ms if b in by_name else np.nan for b in labels]
    ax.scatter(
        at_pct,
        labels,
        marker="D",
        s=46,
        color="white",
        edgecolors="black",
        linewidths=1.4,
        zorder=3,
        label=f"{budget.label} of the turns",
    )
    _budget_line(ax, budget)
    for y, end in enumerate(left):
        ax.annotate(
            f"tail mean {end:.0f}",
            (end, y),
            xytext=(3, 0),
            textcoords="offset points",
            va="center",
            fontsize=7,
            color="#333333",
        )
    ax.set_xlim(0, max(float(np.max(left, initial=0.0)), budget.total_ms, *np.nan_to_num(at_pct)) * 1.16)
    ax.set(xlabel=f"mean contribution in the turns >= {budget.label} (ms)")
    ax.set_title("where the tail comes from\n" + _headline(reports, budget, 60), fontsize=10)
    ax.invert_yaxis()
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=4, fontsize=8, frameon=False)
    ax.grid(axis="x", alpha=0.3)


def _budget_line(ax: Axes, budget: Budget) -> None:
    ax.axvline(
        budget.total_ms, color=BUDGET_COLOR, linestyle="--", linewidth=1.8, label=f"budget {budget.total_ms:g} ms"
    )


def _tail(report: Report) -> dict[str, float]:
    return {s.name: s.tail_ms for s in report.stages}


def run_figure_data(result: RunResult) -> tuple[dict[str, Report], dict[str, Curve], dict[str, dict[str, float]]]:
    """Reports, CDF curves (one per variant) and tail breakdowns of a scenario run, by variant."""
    reports = {r.name: r for r in result.reports}
    cdfs = {n: Curve(r.total_samples_ms) for n, r in reports.items()}
    return reports, cdfs, {n: _tail(r) for n, r in reports.items()}


def plot_run(result: RunResult, path: str | Path) -> Path:
    """Plot every variant of a scenario run: CDFs vs the budget, and each variant's tail waterfall.

    :param result: from :func:`voicebudget.simulate`.
    :param path: output PNG.
    :returns: the path written.
    """
    reports, cdfs, breakdown = run_figure_data(result)
    return plot_latency(reports, cdfs, breakdown, result.budget, path, title=result.scenario)


def council_figure_data(
    result: CouncilResult,
) -> tuple[dict[str, Report], dict[str, Curve], dict[str, dict[str, float]]]:
    """Report, CDF curves (the council, then each member in its colour) and the tail breakdown."""
    from voicebudget.councils._latency import sample_council

    report = result.report
    draws = sample_council(result.council, report.n_turns, report.seed or 0)
    cdfs = {"council": Curve(report.total_samples_ms)}
    cdfs.update({k: Curve(v[~np.isnan(v)], stage=True) for k, v in draws.parts.items() if np.any(~np.isnan(v))})
    return {"council": report}, cdfs, {"council": _tail(report)}


def plot_council(result: CouncilResult, path: str | Path) -> Path:
    """Plot a council: its latency CDF and each member's CDF vs the budget, and the tail waterfall
    (members in the same colour in both panels).

    :param result: from :func:`voicebudget.councils.evaluate_council`.
    :param path: output PNG.
    :returns: the path written.
    """
    reports, cdfs, breakdown = council_figure_data(result)
    return plot_latency(reports, cdfs, breakdown, result.report.budget, path, title=result.council.name)


@drawn_as_written()
def tune_figure(result: TuneResult) -> Figure:
    """The Pareto front of a tuning run: user time vs the percentile's latency (with the budget line)
    and user time vs cost, each point numbered as in the table, with ±2 standard-error bars; the pick
    is a black star. Points are Okabe-Ito blue; the pick's figures are in both panels' titles.

    :returns: a matplotlib ``Figure`` (constrained layout, legends below the panels).
    """
    fig, (ax_lat, ax_cost) = plt.subplots(1, 2, figsize=FIG_SIZE_IN, layout="constrained")
    front = list(result.pareto)
    label = result.budget.label
    eut = np.array([c.expected_user_time_ms for c in front])
    eut_se = np.array([c.expected_user_time_se_ms for c in front])
    lat = np.array([c.p95_ms for c in front])
    lat_se = np.array([c.p95_se_ms for c in front])
    cost = np.array([c.cost_per_turn for c in front]) * 1e6
    best = result.best
    if best is None:
        head = f"FAIL: no configuration within {result.budget.total_ms:g} ms at {label}"
    else:
        head = (
            f"PASS: pick {label} {best.p95_ms:.1f} ms <= {result.budget.total_ms:g} ms, "
            f"user time {best.expected_user_time_ms:.0f} ms, ${best.cost_per_turn * 1e6:.0f} per 1M turns"
        )
    for ax, y, y_se, ylabel in (
        (ax_lat, lat, lat_se, f"{label} (ms)"),
        (ax_cost, cost, np.zeros_like(cost), "cost (USD per million turns)"),
    ):
        ax.errorbar(
            eut,
            y,
            xerr=2 * eut_se,
            yerr=2 * y_se,
            fmt="o",
            color=STAGE_COLORS[4],
            ecolor="#777777",
            markersize=5,
            capsize=2,
            label=f"front ({len(front)}), ±2 SE",
        )
        for i, (x, yy) in enumerate(zip(eut, y, strict=True), 1):
            ax.annotate(str(i), (x, yy), xytext=(4, 3), textcoords="offset points", fontsize=7)
        if best is not None:
            k = front.index(best)
            ax.scatter([eut[k]], [y[k]], marker="*", s=220, color="black", zorder=3, label="pick")
        own = result.as_written.candidate if result.as_written is not None else None
        if own is not None and math.isfinite(own.expected_user_time_ms):
            own_y = own.p95_ms if ax is ax_lat else own.cost_per_turn * 1e6
            ax.scatter(
                [own.expected_user_time_ms],
                [own_y],
                marker="X",
                s=90,
                color=STAGE_COLORS[5],
                zorder=3,
                label="your council as written",
            )
            ax.annotate(
                "you", (own.expected_user_time_ms, own_y), xytext=(4, 3), textcoords="offset points", fontsize=7
            )
        ax.set(xlabel="expected user time per completed request (ms)", ylabel=ylabel)
        ax.grid(alpha=0.3)
    if front:
        ax_lat.axhline(
            result.budget.total_ms,
            color=BUDGET_COLOR,
            linestyle="--",
            linewidth=1.8,
            label=f"budget {result.budget.total_ms:g} ms",
        )
    ax_lat.set_title(f"latency at {label} vs user time\n{head}", fontsize=10)
    ax_cost.set_title(f"cost vs user time\n{head}", fontsize=10)
    for ax in (ax_lat, ax_cost):
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3, fontsize=8, frameon=False)
    fig.suptitle(f"{result.council}: Pareto front")
    return fig


def plot_tune(result: TuneResult, path: str | Path) -> Path:
    """Draw :func:`tune_figure` to a PNG (1560 x 720 pixels).

    :param result: from :func:`voicebudget.tuning.tune_council`.
    :returns: the path written.
    """
    fig = tune_figure(result)
    out = Path(path)
    return save_figure(fig, out)
