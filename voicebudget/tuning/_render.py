"""Rendering a tuning result: the Pareto front as a rich table, the pick and why.

The table fits an 80-column terminal: a row number stands for each configuration, and the
configurations are listed under the table, one per row, wrapped lines indented under their text.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from voicebudget._text import as_given, count, literal, printable
from voicebudget.tuning._front import PICK_RULE
from voicebudget.tuning._result import Candidate, TuneResult, same_figures, short_config, tail_label, tail_tie_words

__all__ = ["render_tune", "short_config"]


def _pm(value: float, se: float, digits: int) -> str:
    return f"{value:.{digits}f}±{se:.{digits}f}"


def _figures(c: Candidate) -> tuple[str | Text, ...]:
    """A configuration's cells after its row's label: user time, p95, accuracy, $/turn and the tail."""
    return (
        _pm(c.expected_user_time_ms, c.expected_user_time_se_ms, 0),
        _pm(c.p95_ms, c.p95_se_ms, 1),
        f"{c.quality:.3f}",
        f"{c.cost_per_turn:.6f}",
        Text(printable(tail_label(c))),  # member names come from the file: never read as markup
    )


def _cost_words(result: TuneResult) -> str:
    """`` and the cost limit ($0.0005/turn)`` after the count of feasible configurations, when the file sets a
    limit (it said "and the cost limit" of a file that set none)."""
    return "" if result.cost_limit is None else f" and the cost limit (${result.cost_limit:g}/turn)"


def render_tune(result: TuneResult) -> RenderableType:
    """The front (best first) with Monte Carlo standard errors, counts, the recommendation, the rule
    that chose it, and any evaluation errors."""
    label = result.budget.label
    refined = (
        f"; the {result.shortlisted:,} not beaten beyond the noise re-run at {result.refine_samples:,} turns"
        if result.refine_samples > result.samples
        else ""
    )
    head = Text.from_markup(
        f"[bold]{literal(result.council)}[/]: {result.strategy}; {result.space_size:,} configurations in the space, "
        f"{result.evaluated:,} evaluated, {result.feasible:,} within {as_given(result.budget.total_ms)} ms at {label}"
        f"{_cost_words(result)}, {result.skipped:,} not valid councils\n"
        f"latency judged: {result.latency_scope}; seed {result.seed}, {count(result.samples, 'turn')} per "
        f"configuration{refined}"
    )
    table = Table(
        title=f"Pareto front ({len(result.pareto)}): user time, {label}, cost; ± one standard error",
        title_justify="left",
        caption="tail: the member driving the tail (name#2: its second copy; tie of n: within the noise)",
        caption_justify="left",
    )
    for col in ("#", "user time ms", f"{label} ms", "accuracy", "$/turn", "tail"):
        table.add_column(col, justify="left" if col == "tail" else "right", no_wrap=col != "tail", overflow="fold")
    listing = Table.grid(padding=(0, 2))  # the configurations, wrapped lines indented under their text
    listing.add_column(justify="right")
    listing.add_column()
    for i, c in enumerate(result.pareto, 1):
        style = "bold green" if c is result.best else ""
        table.add_row(str(i), *_figures(c), style=style)
        words = short_config(c.config) + same_figures(c) + tail_tie_words(c)
        listing.add_row(Text(str(i), style=style), Text(printable(words), style=style))
    own = result.as_written
    if own is not None:
        c = own.candidate
        style = "" if c.within_budget else "red"
        table.add_section()
        table.add_row("you", *_figures(c), style=style)
        listing.add_row(
            Text("you", style=style),
            Text(
                printable(f"your council as written: {short_config(c.config)}: {own.verdict}{tail_tie_words(c)}"),
                style=style,
            ),
        )
    parts: list[RenderableType] = [head]
    parts.extend(Text(printable(f"note: {note}"), style="yellow") for note in result.notes)
    parts += [
        table,
        listing,
        Text.from_markup(f"[bold]pick:[/] {literal(result.why)}"),
        Text(f"rule: {PICK_RULE.format(label=label)}", style="dim"),
    ]
    if result.errors:
        parts.append(Text.from_markup(f"[red]{len(result.errors)} evaluations failed:[/]"))
        parts.extend(Text(printable(f"  {e['config']}: {e['error']}")) for e in result.errors[:10])
    return Group(*parts)
