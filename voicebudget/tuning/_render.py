"""Rendering a tuning result: the Pareto front as a rich table, the pick and why."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from voicebudget.tuning._tune import TuneResult, describe

__all__ = ["render_tune"]


def render_tune(result: TuneResult) -> RenderableType:
    """The front (best first), counts, the recommendation and any evaluation errors."""
    label = result.budget.label
    head = Text.from_markup(
        f"[bold]{result.council}[/]: {result.strategy}; {result.space_size:,} configurations in the space, "
        f"{result.evaluated:,} evaluated, {result.feasible:,} within {result.budget.total_ms:.0f} ms at {label}"
        f"{' and the cost limit' if result.feasible else ''}, {result.skipped:,} not valid councils\n"
        f"latency judged: {result.latency_scope}; seed {result.seed}, {result.samples:,} turns per configuration"
    )
    table = Table(title=f"Pareto front ({len(result.pareto)}): expected user time, {label}, cost", title_justify="left")
    for col in ("#", "configuration", "user time ms", f"{label} ms", "accuracy", "$/turn", "tail"):
        table.add_column(col, justify="left" if col in ("configuration", "tail") else "right",
                         overflow="fold", ratio=4 if col == "configuration" else None)
    for i, c in enumerate(result.pareto, 1):
        style = "bold green" if c is result.best else ""
        same = f" (= {len(c.equivalent)} more)" if c.equivalent else ""
        table.add_row(
            str(i), describe(c.config) + same, f"{c.expected_user_time_ms:.0f}", f"{c.p95_ms:.1f}",
            f"{c.quality:.3f}", f"{c.cost_per_turn:.6f}", c.tail_driver or "", style=style,
        )
    parts: list[RenderableType] = [head, table, Text.from_markup(f"[bold]pick:[/] {result.why}")]
    if result.errors:
        parts.append(Text.from_markup(f"[red]{len(result.errors)} evaluations failed:[/]"))
        parts.extend(Text(f"  {e['config']}: {e['error']}") for e in result.errors[:10])
    return Group(*parts)
