"""Rendering a :class:`CapacityResult`: a rich table (fits 80 columns) and a two-panel plot."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from voicebudget._text import as_given, count, literal, printable
from voicebudget.capacity._plan import CapacityResult

__all__ = ["capacity_figure", "plot_capacity", "render_capacity"]


def _calls(n: int | None) -> str:
    return "no limit" if n is None else f"{n:,}"


def _money(x: float | None) -> str:
    if x is None:
        return "-"
    if 0 < x < 0.01:  # two significant digits, never in exponent notation: $0.000031
        return f"${x:.{1 - math.floor(math.log10(x))}f}"
    return f"${x:,.3f}"


def _price(cost: float | None, calls: int | None) -> str:
    """The $/call-minute cell: in brackets for a deployment that carries no call within budget (an API over
    budget at any load: the price it would cost, not a cost of this fleet), as docs/capacity.md shows it."""
    return f"({_money(cost)})" if calls == 0 and cost is not None else _money(cost)


def _bracket_legend(result: CapacityResult) -> list[Text]:
    """What a bracketed price means, when the table has one (:func:`_price`)."""
    if any(d.max_concurrent_calls == 0 and d.cost_per_call_minute is not None for d in result.deployments):
        return [Text("(bracketed: what a call-minute would cost on a deployment that carries no call within budget)")]
    return []


def render_capacity(result: CapacityResult) -> Group:
    """The table of deployments (calls within budget, what limits them, latency, cost) and notes."""
    pct = f"p{result.budget.percentile:g}"
    title = (
        f"{literal(result.scenario)}: concurrent calls per deployment within {as_given(result.budget.total_ms)} ms "
        f"at {pct} ({pct} in ms at that load; {count(result.samples, 'turn')} per load level, seed {result.seed})"
    )
    table = Table(
        title=title, title_justify="left", expand=False, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True
    )
    width = min(max((len(d.name) + 2 for d in result.deployments), default=10), 24)  # longer names fold: 80 columns
    table.add_column("deployment", overflow="fold", min_width=width)
    table.add_column("calls", justify="right", no_wrap=True)
    table.add_column("limit", no_wrap=True)
    table.add_column(pct, justify="right", no_wrap=True)
    table.add_column("$/call-min", justify="right", no_wrap=True)
    table.add_column("chips", justify="right", no_wrap=True)
    if result.target_calls is not None:
        table.add_column(f"for {result.target_calls:,}", justify="right", no_wrap=True)
    for d in result.deployments:
        name = literal(d.name) + (" *" if d.on_front else "")
        row = [
            name,
            _calls(d.max_concurrent_calls),
            d.limited_by,
            "-" if d.percentile_ms_at_max is None else f"{d.percentile_ms_at_max:,.0f}",
            _price(d.cost_per_call_minute, d.max_concurrent_calls),
            "api" if d.chips is None else str(d.chips),
        ]
        if result.target_calls is not None:
            row.append("-" if d.chips_for_target is None else f"{d.chips_for_target:,}")
        table.add_row(*row)
    t = result.traffic
    low, high = t.prompt_tokens_range
    lines = [
        Text(
            f"traffic: {t.turns_per_call_minute:g} turns/call-min x {t.llm_requests_per_turn:g} LLM "
            f"request{'' if t.llm_requests_per_turn == 1 else 's'} = "
            f"{t.request_rate_per_s(1) * 60:g} requests/min per call; prompt {low:,}-{high:,} tokens; agent speaks "
            f"{t.agent_speaking_share:.0%} of the call"
        ),
    ]
    lines += _bracket_legend(result)
    if any(d.on_front for d in result.deployments):
        lines.append(Text("* on the front: no other deployment is both cheaper per call-minute and faster at capacity"))
    lines += [Text(printable(f"note: {n}")) for n in result.notes]
    return Group(table, *lines)


def capacity_figure(result: CapacityResult) -> Any:
    """The capacity figure (a matplotlib ``Figure``): deployments in the Okabe-Ito colour-blind-safe
    colours of the latency plots, each with its own marker, smaller for each next one (identical curves
    stay visible, nested), the budget
    in the plots' vermillion."""
    import matplotlib.pyplot as plt

    from voicebudget._plot import BUDGET_COLOR, STAGE_COLORS

    markers = ("o", "s", "^", "D", "v", "P", "X")
    palette = [c for c in STAGE_COLORS if c != "#F0E442"]  # the palette's yellow is too faint for a thin line
    pct = f"p{result.budget.percentile:g}"
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8), layout="constrained")
    colors: dict[str, Any] = {}
    for i, d in enumerate(result.deployments):
        pts = [p for p in d.curve if math.isfinite(p.percentile_ms)]
        color = palette[i % len(palette)]
        colors[d.name] = color
        if len(pts) > 1:
            ax1.plot(
                [p.calls for p in pts],
                [p.percentile_ms for p in pts],
                marker=markers[i % len(markers)],
                ms=max(3.0, 9.0 - 2.0 * i),
                mfc="none",
                color=color,
                label=d.name,
            )  # nested when equal
        elif pts and d.description.get("kind") == "api":  # a provider's fleet: the same at any load
            over = ", over budget at any load" if d.max_concurrent_calls == 0 else ""
            ax1.axhline(pts[0].percentile_ms, color=color, ls=":", label=f"{d.name} (load-independent{over})")
        elif pts:  # over budget from the first call: one point, no curve
            ax1.plot(pts[0].calls, pts[0].percentile_ms, marker=markers[i % len(markers)], color=color, label=d.name)
    ax1.axhline(
        result.budget.total_ms,
        color=BUDGET_COLOR,
        ls="--",
        lw=1.5,
        label=f"budget {as_given(result.budget.total_ms)} ms",
    )
    ax1.set_xscale("log")
    ax1.set_xlabel("concurrent calls (one deployment)")
    ax1.set_ylabel(f"voice-to-voice {pct}, ms")
    ax1.set_title(f"{pct} vs load")
    for i, d in enumerate(result.deployments):
        if d.max_concurrent_calls == 0 or d.cost_per_call_minute is None or d.percentile_ms_at_max is None:
            continue  # no capacity to place it at (over budget from the first call)
        ax2.scatter(
            d.percentile_ms_at_max,
            d.cost_per_call_minute,
            color=colors[d.name],
            s=60 if d.on_front else 25,
            marker=markers[i % len(markers)],
            edgecolors="black" if d.on_front else "none",
        )
    front = sorted((d for d in result.deployments if d.on_front), key=lambda d: d.percentile_ms_at_max or 0)
    if len(front) > 1:
        ax2.plot(
            [d.percentile_ms_at_max for d in front],
            [d.cost_per_call_minute for d in front],
            color="black",
            lw=1,
            label="front",
        )
        ax2.legend(loc="upper right", fontsize=8)
    ax2.axvline(result.budget.total_ms, color=BUDGET_COLOR, ls="--", lw=1.5)
    ax2.set_xlabel(f"{pct} at capacity, ms")
    ax2.set_ylabel("US$ per call-minute")
    ax2.set_yscale("log")
    ax2.set_title("cost vs latency at capacity (colours as left; front: black edge)")
    fig.suptitle(
        f"{result.scenario}: concurrent calls within {as_given(result.budget.total_ms)} ms at {pct}", fontsize=10
    )
    fig.legend(*ax1.get_legend_handles_labels(), loc="outside lower center", ncols=3, fontsize=8)
    return fig


def plot_capacity(result: CapacityResult, path: Path) -> None:
    """Draw latency vs concurrent calls per deployment (with the budget) and cost vs latency (front marked).

    :raises ImportError: matplotlib is not installed (``pip install 'voicebudget[plot]'``).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from voicebudget._io import write_atomic
    from voicebudget._plot import drawn_as_written

    with drawn_as_written():  # names from the file: a '$' in one is not TeX, built or saved
        fig = capacity_figure(result)
        try:  # whole or nothing: a temporary file, then os.replace
            write_atomic(
                path, lambda tmp: fig.savefig(tmp, dpi=110, format=Path(path).suffix.lstrip(".").lower() or "png")
            )
        finally:
            plt.close(fig)
