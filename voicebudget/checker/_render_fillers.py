"""Rendering a :class:`~voicebudget.checker._fillers.FillerReport`: a rich table that fits 80 columns
(imported by the CLI only)."""

from __future__ import annotations

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from voicebudget._text import as_given, count, literal
from voicebudget.checker._fillers import FillerReport

__all__ = ["render_fillers"]


def _share(x: float) -> str:
    return f"{x:.1%}"


def render_fillers(report: FillerReport) -> Group:
    """The policies side by side, the reply without a filler first."""
    pct = report.budget.label
    total = as_given(report.budget.total_ms)
    title = (
        f"{literal(report.name)}: {count(report.n_turns, 'turn')} replayed (the guard learnt from "
        f"{report.guard_turns:,} others, seed {report.seed}); the reply at {pct} {report.reply_ms:,.0f} ms, "
        f"{_share(report.over)} over {total} ms; a filler is heard {report.filler_ms:g} ms after it fires"
    )
    table = Table(
        title=title, title_justify="left", expand=False, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True
    )
    table.add_column("policy", overflow="fold", min_width=min(max(len(r.policy) for r in report.results), 18))
    for name in ("fires", "wasted", "rescued", "over", f"heard {pct}", "hidden", "fires at"):
        table.add_column(name, justify="right", no_wrap=True)
    for r in report.results:
        table.add_row(
            literal(r.policy),
            _share(r.fired),
            _share(r.wasted),
            _share(r.rescued),
            _share(r.still_over),
            f"{r.heard_ms:,.0f}",
            f"{r.hidden_ms:,.0f}",
            "-" if r.fire_p50_ms is None else f"{r.fire_p50_ms:,.0f}",
        )
    legend = Text(
        f"shares of all turns; wasted: fired on a turn whose reply came within {total} ms anyway; rescued: over "
        f"budget, the filler heard within it; over: the first audio heard (filler or reply) after {total} ms; "
        f"heard {pct}: the first audio heard at {pct}, ms; hidden: the reply's {pct} minus that; fires at: the "
        "median instant it fires, ms after the end of speech"
    )
    return Group(table, legend)
