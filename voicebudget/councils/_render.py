"""Rendering council results for people (rich). Numbers come from :class:`CouncilResult` only."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from voicebudget._text import as_given, literal, printable
from voicebudget.councils._calibrate import AnswerSpaceFit
from voicebudget.councils._evaluate import CouncilResult

__all__ = ["render_answer_space_fit", "render_council"]


def render_council(result: CouncilResult) -> RenderableType:
    """A table of the council's components and total, its waterfall, and the quality/cost/time lines."""
    from voicebudget._render import waterfall

    report = result.report
    label = report.budget.label
    table = Table(
        title=f"{literal(result.council.name)} \\[{result.council.topology}] (ms)",
        title_justify="left",
        caption=f"p = accuracy; tail = share of the latency of the turns >= {label}",
        caption_justify="left",
    )
    table.add_column("component", no_wrap=True)
    for col in ("p", "mean", "p50", "p95", "p99", "tail"):
        table.add_column(col, justify="right")
    p_of = {mb.name: f"{mb.p:.2f}" for mb in result.council.members}
    for s in report.stages:
        st = s.stats
        table.add_row(
            literal(s.name),
            p_of.get(s.name, ""),
            *(f"{v:.1f}" for v in (st.mean_ms, st.p50_ms, st.p95_ms, st.p99_ms)),
            f"{s.tail_share:.1%}",
        )
    t, q = report.total, result.quality
    table.add_row(
        "[bold]council[/]",
        f"[bold]{q.accuracy:.3f}[/]",
        *(f"[bold]{v:.1f}[/]" for v in (t.mean_ms, t.p50_ms, t.p95_ms, t.p99_ms)),
        "100%",
        end_section=True,
    )
    council = result.council
    lines = _council_lines(result)
    note = council.topology_model.members_note
    members = () if note is None else tuple(mb.name for mb in council.members)
    return Group(
        table,
        waterfall(report, parallel=members, parallel_note=note or ""),
        *(Text.from_markup(x) for x in lines),
        Text(""),
    )


def _council_lines(result: CouncilResult) -> list[str]:
    """The verdict, quality (with the answer space a plurality reads), cost and user time lines."""
    report, q, council = result.report, result.quality, result.council
    verdict = "[green]PASS[/]" if result.passed else "[red]FAIL[/]"
    se = f" +/- {q.standard_error:.4f}" if q.standard_error else ""
    cap = f"; cap with more members {q.cap:.3f}" if q.cap is not None else ""
    space = ""
    if council.answers is not None and council.topology_model.reads_answers:
        space = (
            f"; plurality over {council.answers} answers (wrong_concentration {council.concentration:g}, "
            f"unsolved {council.unsolved:g})"
        )
    return [
        f"{verdict} {literal(report.summary())}; {report.within_budget_share:.1%} of turns within "
        f"{as_given(report.budget.total_ms)} ms",
        f"quality: accuracy {q.accuracy:.4f}{se} ({q.method}); best single member {q.best_member:.3f}{cap}{space}",
        f"cost: ${result.cost_per_turn_usd:.6f} per turn",
        f"expected user time per completed request: {result.expected_user_time_ms:.0f} ms "
        f"({result.exchanges:.3f} exchanges)",
    ]


def render_answer_space_fit(fit: AnswerSpaceFit, source: str) -> RenderableType:
    """The estimated answer-space fields, the evidence behind them, and the lines to paste."""
    import tomlkit

    # the source on its own line: a table's title folds to the table's width, breaking a long path
    heading = Text(printable(f"answer space fitted from {source}"))
    table = Table()
    table.add_column("field", no_wrap=True)
    table.add_column("value", justify="right")
    table.add_column("from", no_wrap=False)
    table.add_row("answers", str(fit.answers), "--answers, else the number of distinct answers seen")
    table.add_row("rho", f"{fit.rho:.3f}", f"{fit.items} items, zero-inflated beta-binomial likelihood")
    table.add_row(
        "wrong_concentration",
        f"{fit.wrong_concentration:.3f}",
        f"{fit.wrong_pairs} pairs of wrong answers, {fit.agreement:.1%} agree",
    )
    table.add_row("unsolved", f"{fit.unsolved:.3f}", "share of items no member gets right")
    for member, p in fit.members.items():
        table.add_row(f"p ({literal(member)})", f"{p:.3f}", "share of its answers that are right")
    snippet = Text(tomlkit.dumps(fit.council_fields()).rstrip())
    notes = [Text(printable(f"note: {n}")) for n in fit.notes]
    return Group(heading, table, Text("council file fields:"), snippet, *notes)
