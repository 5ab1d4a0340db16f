"""Rendering reports for people: rich tables, a text waterfall, markdown.

Rendering only; every number comes from a :class:`~voicebudget.Report`.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from voicebudget._report import LatencyStats, Report, StageReport
from voicebudget._simulate import RunResult
from voicebudget._text import as_given, count, literal, printable

__all__ = ["comparison_rows", "render_markdown", "render_report", "render_run", "waterfall"]

_BAR_WIDTH = 48
_NAME_WIDTH = 16


def render_report(report: Report, title: str | None = None) -> RenderableType:
    """A rich table of one report (total and stages) followed by its waterfall and verdict."""
    label = report.budget.label
    verdict = "[green]PASS[/]" if report.passed else "[red]FAIL[/]"
    table = Table(
        title=f"{literal(title or report.name)} (ms)",
        title_justify="left",
        caption=f"tail = share of the latency of the turns >= {label}",
        caption_justify="left",
    )
    table.add_column("stage", no_wrap=True)
    for col in ("mean", "p50", "p90", "p95", "p99", "tail"):
        table.add_column(col, justify="right")
    if any(s.allocation_ms is not None for s in report.stages):
        table.add_column("alloc", justify="right")
    for s in report.stages:
        _stage_rows(table, s)
    _total_rows(table, report)
    line = Text.from_markup(
        f"{verdict} {literal(report.summary())}; {report.within_budget_share:.1%} of turns within "
        f"{as_given(report.budget.total_ms)} ms; slack at {label}: {report.slack_ms:+.1f} ms"
    )
    return Group(table, waterfall(report), line, Text(""))


def _stage_rows(table: Table, s: StageReport) -> None:
    """A stage's row (its allocation when the table has the column), then its parts' shares of the tail."""
    st = s.stats
    alloc = [] if len(table.columns) == 7 else [_allocation(s)]
    table.add_row(
        literal(s.name),
        *(f"{v:.1f}" for v in (st.mean_ms, st.p50_ms, st.p90_ms, st.p95_ms, st.p99_ms)),
        f"{s.tail_share:.1%}",
        *alloc,
    )
    for part in s.parts:  # a council's members: their share of the tail
        table.add_row(
            f"[dim]  └ {literal(part.name)}[/]",
            *([""] * 5),
            f"[dim]{part.tail_share:.1%}[/]",
            *([""] * len(alloc)),
        )


def _allocation(s: StageReport) -> str:
    if s.allocation_ms is None:
        return ""
    return as_given(s.allocation_ms) + (" [red]over[/]" if s.over_allocation else "")


def _total_rows(table: Table, report: Report) -> None:
    """The total's row, and the server-side total's when it differs."""
    t = report.total
    extra = [] if len(table.columns) == 7 else [""]
    table.add_row(
        f"[bold]{total_label(report)}[/]",
        *(f"[bold]{v:.1f}[/]" for v in (t.mean_ms, t.p50_ms, t.p90_ms, t.p95_ms, t.p99_ms)),
        "100%",
        *extra,
        end_section=True,
    )
    if report.server_side is not None and report.server_side != report.total:
        ss = report.server_side
        table.add_row(
            "[dim]server-side[/]",
            *(f"[dim]{v:.1f}[/]" for v in (ss.mean_ms, ss.p50_ms, ss.p90_ms, ss.p95_ms, ss.p99_ms)),
            "",
            *extra,
        )


def total_label(report: Report) -> str:
    """What a report's total is: ``voice-to-voice`` for a voice turn with a path to the listener,
    ``server-side total`` when that path is zero in every turn (a scenario fitted to server-side
    traces), ``total`` for any other pipeline (its ends are whatever its stages measure)."""
    if report.server_side is None:
        return "total"
    return "server-side total" if report.server_side == report.total else "voice-to-voice"


def waterfall(
    report: Report, width: int = _BAR_WIDTH, parallel: Collection[str] = (), parallel_note: str = "in parallel"
) -> Text:
    """A text waterfall of the tail turns against the budget (``|`` marks it): each stage's mean
    contribution, laid end to end; stages named in ``parallel`` (a council's members) start together,
    each drawn as its own mean duration over the tail turns (``∥`` marks them), and the next stage
    starts after their critical-path contribution (``parallel_note`` says how they run: a router's
    members are alternatives). Stage names longer than 16 characters are cut (80 columns hold the row)."""
    label = report.budget.label
    group = [s for s in report.stages if s.name in parallel]
    bars = _Bars(report, width, _scale_max(report, group) / width)
    bars.out.append(
        f"waterfall of the tail (turns >= {label}), 1 char = {bars.per_char:.0f} ms, | = budget"
        + (f", ∥ = {parallel_note} (own mean duration)" if group else "")
        + "\n",
        style="dim",
    )
    start = 0.0
    group_start: float | None = None
    for s in report.stages:
        if s.name not in parallel:
            bars.row(s.name, " ", start, s.tail_ms)
            start += s.tail_ms
            continue
        group_start = start if group_start is None else group_start
        bars.row(s.name, "∥", group_start, _own_mean(s))
        start += s.tail_ms
        if s is group[-1]:  # what the turn waits for them
            bars.row("together", " ", group_start, start - group_start)
    return bars.out


def _own_mean(s: StageReport) -> float:
    """A parallel member's own mean duration over the tail turns (its tail contribution when NaN)."""
    return s.tail_mean_ms if s.tail_mean_ms == s.tail_mean_ms else s.tail_ms


def _scale_max(report: Report, group: list[StageReport]) -> float:
    """Where the waterfall's scale ends (ms): the budget, or the last stage's end when later; a parallel
    group ends with its longest member."""
    longest = max((s.tail_mean_ms for s in group if s.tail_mean_ms == s.tail_mean_ms), default=0.0)
    ends = sum(s.tail_ms for s in report.stages) + max(0.0, longest - sum(s.tail_ms for s in group))
    return max(report.budget.total_ms, ends, 1e-9)


class _Bars:
    """The waterfall's rows: a stage's bar from ``begin`` for ``length`` ms, the budget marked."""

    def __init__(self, report: Report, width: int, per_char: float) -> None:
        self.report, self.width, self.per_char = report, width, per_char
        self.budget_col = round(report.budget.total_ms / per_char)
        self.name_width = min(max((len(s.name) for s in report.stages), default=0), _NAME_WIDTH)
        self.out = Text()

    def row(self, name: str, mark: str, begin: float, length: float) -> None:
        a, b = round(begin / self.per_char), round((begin + length) / self.per_char)
        bar = [" "] * (self.width + 1)
        for i in range(a, max(b, a + (1 if length > 0 else 0))):
            bar[min(i, self.width)] = "█"
        if self.budget_col <= self.width:
            bar[self.budget_col] = "|" if bar[self.budget_col] == " " else "┃"
        self.out.append(f"{printable(name[: self.name_width]):>{self.name_width}}{mark} ", style="bold")
        self.out.append("".join(bar), style="red" if begin + length > self.report.budget.total_ms else "cyan")
        self.out.append(f" {length:7.1f} ms\n")


def render_run(result: RunResult) -> RenderableType:
    """Every variant of a run: one table and waterfall each, then a comparison line per variant."""
    parts: list[RenderableType] = [
        Text.from_markup(
            f"[bold]{literal(result.scenario)}[/]\nseed {result.seed}, {count(result.samples, 'turn')} per variant, "
            f"budget {as_given(result.budget.total_ms)} ms at {result.budget.label}\n"
        )
    ]
    for r in result.reports:
        if r.name in result.descriptions:
            parts.append(Text(printable(result.descriptions[r.name]), style="italic"))
        parts += [Text(printable(f"{row['stage']}: {row['note']}")) for row in result.wafer_paths.get(r.name, ())]
        parts += [Text(printable(f"{row['stage']}: {row['note']}")) for row in result.concurrency.get(r.name, ())]
        parts.append(render_report(r, title=f"variant: {r.name}"))
        if r.name in result.costs:  # a blank line after it: the next variant's description is its own paragraph
            parts.append(Text(f"cost: ${result.costs[r.name]:.6f} per turn (list prices of its api stages)\n"))
        elif r.name in result.unpriced:
            parts.append(
                Text(
                    "cost: unknown: its api stage has a price but no tokens per turn (give the stage "
                    "prompt_tokens and output_tokens, or the scenario a [traffic] table)\n"
                )
            )
    if len(result.reports) > 1:
        parts.append(_comparison(result.reports, result.costs))
    return Group(*parts)


def _cost(usd: float | None) -> str:
    """US dollars per turn, two significant digits, never in exponent notation: ``$0.0023``."""
    if usd is None:
        return "-"
    return f"${usd:.{max(2, 1 - math.floor(math.log10(usd)))}f}" if usd > 0 else "$0"


def _comparison(reports: Iterable[Report], costs: dict[str, float] | None = None) -> Table:
    reports = list(reports)
    costs = costs or {}
    label = reports[0].budget.label
    table = Table(
        title="variants side by side (ms, common random numbers)",
        title_justify="left",
        caption=f"Δ{label}: vs {literal(reports[0].name)}; within: share of turns within budget; tail driver: "
        f"its mean over the slowest {100 - reports[0].budget.percentile:.3g}% of turns",
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=bool(costs),  # one space between columns: a cost column still fits 80
    )  # fits 80 columns
    cols = ("variant", "p50", label, f"Δ{label}", "within", "tail driver") + (
        ("$/turn", "") if costs else ("verdict",)
    )  # PASS/FAIL needs no header to fit 80
    for col in cols:
        table.add_column(
            col,
            justify="left" if col in ("variant", "tail driver") else "right",
            overflow="fold",
            no_wrap=col != "tail driver",
        )  # the driver's name wraps first
    for row in comparison_rows(reports):
        table.add_row(
            literal(row["variant"]),
            f"{row['p50_ms']:.1f}",
            f"{row['at_percentile_ms']:.1f}",
            f"{row['delta_ms']:+.1f}",
            f"{row['within_budget_share']:.1%}",
            f"{literal(row['tail_driver'])} {row['tail_driver_ms']:.0f}" if row["tail_driver"] else "-",
            *((_cost(costs.get(row["variant"])),) if costs else ()),
            "[green]PASS[/]" if row["passed"] else "[red]FAIL[/]",
        )
    return table


def comparison_rows(reports: Iterable[Report]) -> list[dict[str, Any]]:
    """One row per variant: p50 and the target percentile of the total, their difference from the
    first (baseline) variant's, the share within budget, the tail driver and the verdict."""
    reports = list(reports)
    base = reports[0].total.at_percentile_ms
    rows = []
    for r in reports:
        d = r.tail_driver
        rows.append(
            {
                "variant": r.name,
                "p50_ms": r.total.p50_ms,
                "at_percentile_ms": r.total.at_percentile_ms,
                "delta_ms": r.total.at_percentile_ms - base,
                "within_budget_share": r.within_budget_share,
                "tail_driver": d.name if d is not None else "",
                "tail_driver_ms": d.tail_ms if d is not None else 0.0,
                "passed": r.passed,
            }
        )
    return rows


def render_markdown(result: RunResult) -> str:
    """The run as GitHub-flavoured markdown (for PR comments and CI summaries)."""
    label = result.budget.label
    extra = result.budget.percentile not in (50, 90, 95, 99)  # a column for the judged percentile
    lines = [
        f"## {result.scenario}",
        "",
        f"Seed {result.seed}, {count(result.samples, 'turn')} per variant; "
        f"budget {as_given(result.budget.total_ms)} ms at {label}.",
        "",
    ]
    folded = len(result.reports) > 1  # the comparison is the summary; each variant's stages fold away
    if folded:
        lines += _comparison_markdown(result)
    for r in result.reports:
        lines += _variant_markdown(result, r, folded, extra)
    return printable("\n".join(lines))  # a name from a file must not drive the terminal


def _comparison_markdown(result: RunResult) -> list[str]:
    """The variants side by side, as a markdown table."""
    label = result.budget.label
    base = result.reports[0].name
    cost_head, cost_rule = (" $/turn (list prices) |", "---:|") if result.costs else ("", "")
    return [
        f"| variant | p50 ms | {label} ms | Δ{label} vs {base} | within budget | tail driver (mean ms, "
        f"slowest {100 - result.budget.percentile:.3g}%) |{cost_head} verdict |",
        f"|---|---:|---:|---:|---:|---|{cost_rule}---|",
        *(
            f"| {row['variant']} | {row['p50_ms']:.1f} | {row['at_percentile_ms']:.1f} | {row['delta_ms']:+.1f} | "
            f"{row['within_budget_share']:.1%} | {row['tail_driver'] or '-'} ({row['tail_driver_ms']:.1f}) | "
            + (f"{_cost(result.costs.get(row['variant']))} | " if result.costs else "")
            + f"{'PASS' if row['passed'] else 'FAIL'} |"
            for row in comparison_rows(result.reports)
        ),
        "",
    ]


def _variant_markdown(result: RunResult, r: Report, folded: bool, extra: bool) -> list[str]:
    """One variant: its verdict, summary, notes and stage table (folded away when variants are compared)."""
    label = result.budget.label
    extra_head = f" | {label} ms" if extra else ""
    lines = [
        *_variant_head(result, r),
        *([f"<details><summary>stages of {r.name}</summary>", ""] if folded else []),
        f"| stage | mean ms | p50 ms | p90 ms | p95 ms | p99 ms{extra_head} | tail share (>= {label}) |",
        "|---|---:|---:|---:|---:|---:|" + ("---:|" if extra else "") + "---:|",
    ]
    blank = " |" * (6 if extra else 5)
    for s in r.stages:
        lines.append(f"| {s.name} | {_cells(s.stats, extra)} | {s.tail_share:.1%} |")
        lines += [f"| &nbsp;&nbsp;└ {p.name} |{blank} {p.tail_share:.1%} |" for p in s.parts]
    lines += [f"| **{total_label(r)}** | {_cells(r.total, extra)} | 100% |", ""]
    lines += ["</details>", ""] if folded else []
    return lines


def _variant_head(result: RunResult, r: Report) -> list[str]:
    """A variant's heading with its verdict, description, summary line and notes."""
    verdict = "PASS" if r.passed else "FAIL"
    return [
        f"### {r.name}: {verdict}",
        "",
        *([result.descriptions[r.name], ""] if r.name in result.descriptions else []),
        f"{r.summary()}; {r.within_budget_share:.1%} of turns within budget; slack {r.slack_ms:+.1f} ms"
        + (f"; cost ${result.costs[r.name]:.6f} per turn (list prices)." if r.name in result.costs else "."),
        "",
        *(f"- {row['stage']}: {row['note']}" for row in result.wafer_paths.get(r.name, ())),
        *(f"- {row['stage']}: {row['note']}" for row in result.concurrency.get(r.name, ())),
        *([""] if r.name in result.wafer_paths or r.name in result.concurrency else []),
    ]


def _cells(st: LatencyStats, extra: bool) -> str:
    values = (st.mean_ms, st.p50_ms, st.p90_ms, st.p95_ms, st.p99_ms) + ((st.at_percentile_ms,) if extra else ())
    return " | ".join(f"{v:.1f}" for v in values)
