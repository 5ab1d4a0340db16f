"""Plots where people would rather look: latency CDFs against the budget line, and a waterfall.

Needs matplotlib (the ``plot`` extra: ``pip install 'voicebudget[plot]'``); importing this module
without it raises :class:`ImportError`, which the CLI turns into a message and exit code 2.
Nothing else in voicebudget imports this module.

The waterfall stacks each stage's mean contribution over the tail turns (the turns at or beyond the
target percentile; the report's critical-path attribution), so the bar of a variant is the mean
latency of its tail and the segments say what to fix first.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

from voicebudget._budget import Budget  # noqa: E402
from voicebudget._io import write_atomic  # noqa: E402
from voicebudget._report import Report  # noqa: E402

if TYPE_CHECKING:
    from voicebudget._simulate import RunResult
    from voicebudget.councils import CouncilResult

__all__ = ["plot_council", "plot_latency", "plot_run"]

_MAX_POINTS = 20_000


def _cdf_points(samples_ms: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    x = np.sort(np.asarray(samples_ms, dtype=np.float64))
    if x.size > _MAX_POINTS:  # evenly spaced order statistics: the curve, not every sample
        x = x[np.linspace(0, x.size - 1, _MAX_POINTS).astype(np.intp)]
    return x, np.linspace(0.0, 1.0, x.size)


def plot_latency(
    cdfs: Mapping[str, NDArray[np.float64]],
    breakdown: Mapping[str, Mapping[str, float]],
    budget: Budget,
    path: str | Path,
    *,
    title: str = "",
) -> Path:
    """Draw latency CDFs against the budget and a per-stage waterfall of the tail, to a PNG.

    :param cdfs: curve label -> ``float64[n]`` latency samples, ms.
    :param breakdown: bar label -> (stage -> mean tail contribution, ms), stacked in order.
    :param budget: the budget line (``total_ms``) and the target percentile.
    :param path: the output file (PNG; any format matplotlib infers from the suffix).
    :returns: the path written.
    """
    fig, (ax_cdf, ax_bar) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [1.1, 1]})
    for label, samples in cdfs.items():
        x, y = _cdf_points(samples)
        ax_cdf.plot(x, y, label=label, linewidth=1.6)
    ax_cdf.axvline(budget.total_ms, color="crimson", linestyle="--", label=f"budget {budget.total_ms:g} ms")
    ax_cdf.axhline(budget.percentile / 100.0, color="grey", linestyle=":", label=budget.label)
    ax_cdf.set(xlabel="latency (ms)", ylabel="share of turns", title="latency CDF", ylim=(0, 1.01))
    ax_cdf.grid(alpha=0.3)
    ax_cdf.legend(loc="lower right", fontsize=8)
    _waterfall(ax_bar, breakdown, budget)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out = Path(path)
    try:  # whole or nothing: a temporary file in the same folder, then os.replace
        write_atomic(out, lambda tmp: fig.savefig(tmp, dpi=120, format=out.suffix.lstrip(".").lower() or "png"))
    finally:
        plt.close(fig)
    return out


def _waterfall(ax: Axes, breakdown: Mapping[str, Mapping[str, float]], budget: Budget) -> None:
    labels = list(breakdown)
    stages = list(dict.fromkeys(s for parts in breakdown.values() for s in parts))
    colors = plt.get_cmap("tab20")(np.linspace(0, 1, max(len(stages), 1)))
    left = np.zeros(len(labels))
    for color, stage in zip(colors, stages, strict=False):
        widths = np.array([breakdown[b].get(stage, 0.0) for b in labels])
        ax.barh(labels, widths, left=left, color=color, label=stage, edgecolor="white", linewidth=0.5)
        left += widths
    ax.axvline(budget.total_ms, color="crimson", linestyle="--")
    ax.set(xlabel=f"mean contribution in turns >= {budget.label} (ms)", title="where the tail comes from")
    ax.invert_yaxis()
    ax.legend(loc="lower right", fontsize=7, ncol=2)
    ax.grid(axis="x", alpha=0.3)


def _tail(report: Report) -> dict[str, float]:
    return {s.name: s.tail_ms for s in report.stages}


def plot_run(result: RunResult, path: str | Path) -> Path:
    """Plot every variant of a scenario run: CDFs vs the budget, and each variant's tail waterfall.

    :param result: from :func:`voicebudget.simulate`.
    :param path: output PNG.
    :returns: the path written.
    """
    cdfs = {r.name: r.total_samples_ms for r in result.reports}
    breakdown = {r.name: _tail(r) for r in result.reports}
    return plot_latency(cdfs, breakdown, result.budget, path, title=result.scenario)


def plot_council(result: CouncilResult, path: str | Path) -> Path:
    """Plot a council: its latency CDF and each member's CDF vs the budget, and the tail waterfall.

    :param result: from :func:`voicebudget.councils.evaluate_council`.
    :param path: output PNG.
    :returns: the path written.
    """
    from voicebudget.councils._latency import sample_council

    report = result.report
    draws = sample_council(result.council, report.n_turns, report.seed or 0)
    cdfs = {"council": report.total_samples_ms}
    cdfs.update({k: v[~np.isnan(v)] for k, v in draws.parts.items() if np.any(~np.isnan(v))})
    return plot_latency(cdfs, {"council": _tail(report)}, report.budget, path, title=result.council.name)
