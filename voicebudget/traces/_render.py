"""Terminal rendering of a trace check and a fit (rich renderables; imported by the CLI only).

Every string that comes from a trace file (file names, turn ids, fields, values, reasons, anchors) is
escaped before rich sees it: a ``[/x]`` in a speech id must not crash the renderer, a
``[link=...]`` must not become a live link.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from voicebudget._report import Report
from voicebudget._text import as_given, count, literal, printable
from voicebudget.traces._check import NoUsableTurnsError, TraceCheck
from voicebudget.traces._fit import TraceFit
from voicebudget.traces._table import OFF_PATH, ON_PATH, Anomaly, TraceTurn, group_anomalies

__all__ = ["render_check", "render_fit", "render_unusable"]


def _ms(x: float | None) -> str:
    return "-" if x is None or x != x else f"{x:.0f}"


def _stage_table(report: Report, title: str) -> Any:
    from rich.table import Table

    label = report.budget.label
    table = Table(title=title, title_justify="left")
    for col in ("stage", "p50 ms", "p90 ms", f"{label} ms", "p99 ms", "tail ms", "tail share"):
        table.add_column(col, justify="left" if col == "stage" else "right")
    for s in report.stages:
        st = s.stats
        table.add_row(
            literal(s.name),
            _ms(st.p50_ms),
            _ms(st.p90_ms),
            _ms(st.at_percentile_ms),
            _ms(st.p99_ms),
            _ms(s.tail_ms),
            f"{s.tail_share:.0%}",
        )
    t = report.total
    table.add_row("[bold]total[/]", _ms(t.p50_ms), _ms(t.p90_ms), _ms(t.at_percentile_ms), _ms(t.p99_ms), "", "")
    return table


SLOWEST_TURNS = 10
"""Turns the default ``check`` output lists (the slowest); ``--turns`` lists all."""

SHORT_NAMES = {
    "endpointing": ("endp", "endpointing wait"),
    "llm_ttft": ("ttft", "LLM time to first token"),
    "llm_tool_call": ("call", "LLM writing the tool call (first token -> call dispatched)"),
    "tool": ("tool", "tool execution (call -> the next LLM request)"),
    "llm_2_ttft": ("ttft2", "time to first token of the LLM pass after the tools"),
    "first_phrase": ("phr", "LLM tokens to the first speakable phrase"),
    "tts_ttfb": ("ttfb", "TTS time to first byte"),
    "output": ("out", "TTS first byte -> the bot's first audio (output queue, transport)"),
    "other": ("oth", "the rest of the path"),
    "asr": ("asr", "ASR final transcript (overlaps endpointing)"),
    "leading_silence": ("sil", "leading silence in the first audio (after the total)"),
    "transport": ("tran", "last server event -> the agent's audio in the recording (transport, playout)"),
    "anchor_bias": ("bias", "the log's end of speech - the recording's (off the path)"),
}
"""Column header and legend entry of each stage in the per-turn table (short: it fits 80 columns)."""


def _turn_table(turns: Sequence[TraceTurn], included: Sequence[bool], *, slowest: int | None = None) -> Any:
    """The per-turn table, the file named once per group of its turns. ``slowest``: only that many
    turns, the slowest (by total) first within each file; ``None``: every turn in file order."""
    from rich.console import Group
    from rich.text import Text

    names = [s for s in (*ON_PATH, *OFF_PATH) if any(s in t.stages_ms for t in turns)]
    rows, shown = _shown_rows(turns, included, slowest)
    groups: dict[str, list[tuple[TraceTurn, bool]]] = {}
    for row in rows:
        groups.setdefault(row[0].origin, []).append(row)
    notes: dict[int, int] = {}  # turn -> its number in the notes below the tables
    parts: list[Any] = [Text(f"turns, ms, t = 0 at the actual end of speech ({shown})", style="italic")]
    for origin, group in groups.items():  # one table per file: the file named once
        parts.append(_file_table(origin, group, names, notes))
    parts.append(Text(_legend(names, rows), style="dim"))
    by_id = {id(t): t for t, _ in rows}
    for key, number in notes.items():
        turn = by_id[key]
        parts.extend(Text(f"note {number} ({printable(turn.id)}): {printable(text)}") for text in turn.notes)
    return Group(*parts)


def _legend(names: list[str], rows: Sequence[tuple[TraceTurn, bool]]) -> str:
    entries = [f"{SHORT_NAMES[n][0]} = {SHORT_NAMES[n][1]}" for n in names if n in SHORT_NAMES]
    if any(not t.line and t.at_ms is not None for t, _ in rows):
        entries.append("at = the turn's t = 0 (the caller's end of speech) in the recording")
    if any(t.line or t.at_ms is None for t, _ in rows):
        entries.append("line = the turn's first line in its file")
    return "; ".join(entries)


PLACE_HEADERS = {(True, False): "line", (False, True): "at", (True, True): "where"}
"""The location column's header: ``line`` (files of lines), ``at`` (a recording: no lines, the time in it) or
``where`` (both in one table: the cells say ``line 12`` or ``at 12.34 s``)."""


def _place_column(items: Sequence[TraceTurn] | Sequence[Anomaly]) -> tuple[str, list[str]]:
    """The location column of a table: its header and a cell per item (:data:`PLACE_HEADERS`)."""
    timed = [not x.line and x.at_ms is not None for x in items]
    header = PLACE_HEADERS.get((not all(timed), any(timed)), "line")
    if header == "line":
        return header, [str(x.line) for x in items]
    if header == "at":
        return header, [x.place.removeprefix("at ") for x in items]
    return header, [x.place for x in items]


def _origin_table(origin: str, items: Sequence[TraceTurn] | Sequence[Anomaly]) -> tuple[Any, str, list[str]]:
    """A file's table (turns or anomalies), titled with the file's name, and its location column's header and
    cells (:func:`_place_column`)."""
    from rich import box
    from rich.table import Table

    table = Table(
        title=literal(origin.rsplit("/", 1)[-1]),
        title_justify="left",
        title_style="bold",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        padding=(0, 1),
        collapse_padding=True,
    )
    return (table, *_place_column(items))


def _shown_rows(
    turns: Sequence[TraceTurn], included: Sequence[bool], slowest: int | None
) -> tuple[list[tuple[TraceTurn, bool]], str]:
    """The rows shown (the ``slowest`` turns, by file then slowest first; else all in file order) and the
    caption's words for them."""
    rows = list(zip(turns, included, strict=True))
    excluded = sum(1 for inc in included if not inc)  # the statistics count the others
    left_out = f", {excluded} of them not in the statistics (dim)" if excluded else ""
    if slowest is None or len(rows) <= slowest:
        return rows, f"{count(len(turns), 'turn')} read{left_out}"
    ranked = sorted(rows, key=lambda r: -_total_or_minus_one(r[0]))[:slowest]
    keep = {id(t) for t, _ in ranked}
    rows = sorted((r for r in rows if id(r[0]) in keep), key=lambda r: (r[0].origin, -_total_or_minus_one(r[0])))
    return (
        rows,
        f"the slowest {len(rows)} of {count(len(turns), 'turn')} read{left_out}; all with --turns or --format json",
    )


def _total_or_minus_one(turn: TraceTurn) -> float:
    return turn.total_ms if turn.total_ms is not None else -1.0


def _file_table(origin: str, group: list[tuple[TraceTurn, bool]], names: list[str], notes: dict[int, int]) -> Any:
    """One file's turns: a row each, dim when not in the statistics."""
    table, header, places = _origin_table(origin, [t for t, _ in group])
    table.add_column("turn", overflow="fold")
    table.add_column(header, justify="right", no_wrap=True)
    for name in (*names, "total"):
        table.add_column(SHORT_NAMES.get(name, (name, ""))[0], justify="right", no_wrap=True)
    table.add_column("note", overflow="fold")
    for (turn, inc), where in zip(group, places, strict=True):
        table.add_row(
            literal(turn.id),
            where,
            *(_ms(turn.stages_ms.get(s)) for s in names),
            _ms(turn.total_ms),
            _turn_note(turn, inc, notes),
            style=None if inc else "dim",
        )
    return table


def _turn_note(turn: TraceTurn, inc: bool, notes: dict[int, int]) -> str:
    """The note column: first, cold, lower bound, the number of its note below, flagged (in the statistics)."""
    note = "first" if turn.index == 0 else ""
    note += " cold" if turn.cold else ""
    note += " lower bound" if turn.lower_bound else ""
    note += f" note {notes.setdefault(id(turn), len(notes) + 1)}" if turn.notes else ""
    note += " flagged" + (" (in)" if inc else "") if turn.flagged else ""
    return note.strip()


ANOMALY_VALUE_CHARS = 18
"""An anomaly's value is cut to this many characters in the table (``...`` marks a cut; the whole
line is in the file at the line given, and in ``--format json``)."""


ANOMALY_ROWS = 20
"""Rows the default anomaly table shows (after grouping); ``--turns`` shows them all, as JSON does."""


def _anomaly_table(anomalies: Sequence[Anomaly], *, all_rows: bool = False) -> Any:
    """The anomalies, one table per file (the file named once, as for the turns); field names are
    never broken, the reason wraps between words. Anomalies repeated on many turns are one row with their
    count (:func:`group_anomalies`); at most :data:`ANOMALY_ROWS` rows unless ``all_rows``."""
    from rich.console import Group
    from rich.text import Text

    grouped = group_anomalies(anomalies)
    rows = grouped if all_rows else grouped[:ANOMALY_ROWS]
    kinds = f"; {count(len(grouped), 'row')} when grouped" if len(grouped) < len(anomalies) else ""
    cut = f"; the first {len(rows)} shown, all with --turns or --format json" if len(rows) < len(grouped) else ""
    groups: dict[str, list[tuple[Anomaly, int, Anomaly]]] = {}
    for entry in rows:
        groups.setdefault(entry[0].origin, []).append(entry)
    parts: list[Any] = [Text(f"anomalies ({len(anomalies):,}{kinds}{cut})", style="italic")]
    for origin, group in groups.items():
        table, header, places = _origin_table(origin, [a for a, _, _ in group])
        table.add_column(header, justify="right", no_wrap=True)
        table.add_column("field", no_wrap=True)
        table.add_column("value", no_wrap=True)
        table.add_column("reason")
        for (a, n, last), where in zip(group, places, strict=True):
            value = "-" if a.value is None else str(a.value)
            if len(value) > ANOMALY_VALUE_CHARS:
                value = value[: ANOMALY_VALUE_CHARS - 3] + "..."
            reason = a.reason if n == 1 else f"{a.reason} ({count(n, 'turn')}, {_span(a, last)})"
            table.add_row(where, literal(a.field), literal(value), literal(reason))
        parts.append(table)
    return Group(*parts)


def _span(first: Anomaly, last: Anomaly) -> str:
    """Where a group of anomalies lies: ``lines 3 to 40``, or ``at 2.10 s to 9.80 s`` in a recording."""
    if not first.line and not last.line and first.at_ms is not None and last.at_ms is not None:
        return f"{first.place} to {last.place.removeprefix('at ')}"
    return f"lines {first.line} to {last.line}"


def render_check(result: TraceCheck, *, all_turns: bool = False, verdicts: Sequence[Any] = ()) -> Any:
    """A rich renderable: verdict, per-stage percentiles and tail attribution, first-turn vs steady
    state, the slowest turns (every turn with ``all_turns``) and the anomalies. ``verdicts``: more verdict
    lines shown under the first (a recording's barge-ins)."""
    from rich.console import Group
    from rich.text import Text

    r = result.report
    if r is None:
        return _render_summaries(result)
    verdict = "[green]PASS[/]" if r.passed else "[red]FAIL[/]"
    bounds = result.lower_bounds
    lower = (
        f"; {bounds} of them only lower bounds (a stage the source does not time), so the percentiles are too"
        if bounds
        else ""
    )
    parts: list[Any] = [
        Text.from_markup(
            f"{verdict} {literal(r.summary())}; {r.within_budget_share:.1%} of "
            f"{count(r.n_turns, 'turn')} within {as_given(r.budget.total_ms)} ms{lower}"
        ),
        *verdicts,
    ]
    for tab in result.tables:
        parts.append(Text(f"{printable(tab.origin)} [{tab.format}]: t = 0 is {tab.anchor}; total = {tab.total}"))
    parts.append(_stage_table(r, f"stages (tail: mean in the turns >= {r.budget.label})"))
    for label, rep in (("first turn", result.first_turn), ("steady state", result.steady_state)):
        if rep is not None:
            parts.append(
                Text(
                    f"{label}: {count(rep.n_turns, 'turn')}, p50 {rep.total.p50_ms:.0f} ms, "
                    f"{rep.budget.label} {rep.total.at_percentile_ms:.0f} ms, "
                    f"{rep.within_budget_share:.0%} within budget"
                )
            )
    parts.append(_turn_table(result.turns, result.included, slowest=None if all_turns else SLOWEST_TURNS))
    if result.anomalies:
        excluded = "included in the statistics" if result.include_anomalies else "excluded from the statistics"
        parts.append(_anomaly_table(result.anomalies, all_rows=all_turns))
        parts.append(Text(f"flagged turns are {excluded} (--include-anomalies to change)"))
    return Group(*parts)


def _render_summaries(result: TraceCheck) -> Any:
    """A check on a platform's statistics alone (no turns): one verdict line per call."""
    from rich.console import Group
    from rich.text import Text

    parts: list[Any] = []
    for v in result.summaries:
        verdict = "[green]PASS[/]" if v.passed else "[red]FAIL[/]"
        parts.append(Text.from_markup(f"{verdict} {literal(v.message())}"))
    for tab in result.tables:
        parts.append(Text(f"{printable(tab.origin)} [{tab.format}]: t = 0 is {tab.anchor}; total = {tab.total}"))
    return Group(*parts)


def render_unusable(error: NoUsableTurnsError, *, all_turns: bool = False) -> Any:
    """A rich renderable of what was read when no turn is usable: the slowest turns (every turn with
    ``all_turns``) and the anomalies (the error itself goes to stderr)."""
    from rich.console import Group

    turns = [t for tab in error.tables for t in tab.turns]
    anomalies = [a for tab in error.tables for a in tab.anomalies]
    parts: list[Any] = [_turn_table(turns, [False] * len(turns), slowest=None if all_turns else SLOWEST_TURNS)]
    if anomalies:
        parts.append(_anomaly_table(anomalies, all_rows=all_turns))
    return Group(*parts)


def render_fit(result: TraceFit, path: str) -> str:
    """Plain text: where the scenario went and how closely it reproduces the trace."""
    obs = result.observed_ms
    lines = [
        f"wrote {path}: {result.shape} fitted to {count(result.n_turns, 'turn')} (method {result.method})",
        f"observed total: p50 {obs['p50_ms']:.1f} ms, p95 {obs['p95_ms']:.1f} ms",
    ]
    v = result.verification
    if v is not None:
        lines.append(
            f"simulated:      p50 {v['p50_ms']:.1f} ms ({v['p50_error']:+.1%}), "
            f"p95 {v['p95_ms']:.1f} ms ({v['p95_error']:+.1%})"
        )
    if result.server_side:
        lines.append(
            "note: the trace is server side: its transport is 0 ms in the file; add the path to\n"
            "the listener ([pipeline.transport]) before judging voice-to-voice"
        )
    return "\n".join(lines)
