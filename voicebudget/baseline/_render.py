"""A comparison as text: the table the terminal shows and the markdown of a job summary."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from voicebudget._text import literal, printable
from voicebudget.baseline._compare import Comparison, Row, SetComparison
from voicebudget.baseline._predict import PredictionRow

__all__ = ["render_comparison", "render_markdown"]

_MARK = {"regression": "REGRESSION", "improvement": "improvement", "unchanged": "unchanged", "noise": "noise"}


def _cells(r: Row) -> list[str]:
    if r.interval is None:
        return [r.measure, r.label, _ms(r.baseline_ms), _ms(r.new_ms), "-", "-", "-", "not comparable"]
    iv = r.interval
    return [
        r.measure,
        r.label,
        _ms(r.baseline_ms),
        _ms(r.new_ms),
        _ms(iv.estimate_ms, sign=True),
        f"{_ms(iv.low_ms, sign=True)}..{_ms(iv.high_ms, sign=True)}",
        _ms(r.tolerance_ms),
        _MARK[r.verdict],
    ]


def _ms(x: float, *, sign: bool = False) -> str:
    """ms with 0.1 ms below 1 s and whole ms from there (an interval of +-1181.2 ms is not read to 0.1 ms),
    so that a row fits an 80-column terminal."""
    if x != x:
        return "-"
    digits = 1 if abs(x) < 1000 else 0
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


_HEADERS = ["measure", "pct", "base ms", "new ms", "change", "interval", "tol", "verdict"]


def _set_lines(s: SetComparison) -> list[str]:
    lines = [
        f"{s.name}: {s.turns[0]} -> {s.turns[1]} turns"
        + (f"; resampled: {s.resampled}" if s.rows else "")
        + (f" ({s.calls[0]} and {s.calls[1]} calls)" if s.rows and s.resampled == "calls" and s.calls else "")
    ]
    lines += [f"not comparable: {p}" for p in s.problems]
    lines += [f"note: {n}" for n in s.notes]
    return lines


def render_comparison(c: Comparison) -> RenderableType:
    """The terminal form: per set a table (measure, percentile, both sides, change, interval, tolerance,
    verdict), the sentences of the rows that are not plainly unchanged, then the verdict line."""
    parts: list[RenderableType] = [Text(printable(f"{c.baseline} -> {c.new}")), Text(c.settings.describe())]
    for s in c.sets:
        parts += [Text(printable(line)) for line in _set_lines(s)]
        if s.rows:
            table = Table(box=None, pad_edge=False, padding=(0, 1, 0, 0))  # one space between columns: 80 columns
            for i, header in enumerate(_HEADERS):
                table.add_column(header, justify="right" if 2 <= i <= 6 else "left")
            for r in s.rows:
                table.add_row(*(literal(x) for x in _cells(r)), style="bold red" if r.verdict == "regression" else None)
            parts.append(table)
            parts += [
                Text(printable("  " + r.sentence(c.settings.level))) for r in s.rows if r.verdict not in ("unchanged",)
            ]
    parts += [Text(printable(f"not comparable: {p}")) for p in c.problems]
    parts += [Text(printable(f"note: {n}")) for n in c.notes]
    parts += _predicted_parts(c)
    word = {0: "PASS", 1: "FAIL", 4: "NOT COMPARABLE"}[c.exit_code]
    parts.append(Text(printable(f"{word} {c.verdict}"), style="bold red" if c.exit_code else "bold green"))
    return Group(*parts)


_PREDICTED_HEADERS = ["measure", "pct", "predicted", "interval", "measured", "interval", "verdict"]


def _predicted_cells(r: PredictionRow) -> list[str]:
    p = r.predicted
    return [
        r.measure,
        r.label,
        _ms(p.estimate_ms, sign=True),
        f"{_ms(p.low_ms, sign=True)}..{_ms(p.high_ms, sign=True)}",
        _ms(r.measured_ms, sign=True),
        f"{_ms(r.measured_low_ms, sign=True)}..{_ms(r.measured_high_ms, sign=True)}",
        r.verdict.upper() if r.missed else r.verdict,
    ]


def _shown(r: PredictionRow) -> bool:
    """The rows whose sentence is printed: the missed ones and the total."""
    return r.missed or r.measure == "total"


def _predicted_parts(c: Comparison) -> list[RenderableType]:
    if not c.prediction:
        return []
    parts: list[RenderableType] = [Text(f"predicted vs measured: {c.prediction} (change in ms, new - baseline)")]
    for s in c.predicted:
        if len(c.predicted) > 1:
            parts.append(Text(printable(f"{s.name}:")))
        if s.rows:
            table = Table(box=None, pad_edge=False, padding=(0, 1, 0, 0))
            for i, header in enumerate(_PREDICTED_HEADERS):
                table.add_column(header, justify="right" if 2 <= i <= 5 else "left")
            for r in s.rows:
                table.add_row(*(literal(x) for x in _predicted_cells(r)), style="bold red" if r.missed else None)
            parts.append(table)
            parts += [Text(printable(f"  {r.measure} {r.label}: {r.sentence()}")) for r in s.rows if _shown(r)]
        parts += [Text(printable(f"note: {n}")) for n in s.notes]
    return parts


def _predicted_markdown(c: Comparison) -> list[str]:
    if not c.prediction:
        return []
    out = [f"#### Predicted vs measured: `{_md(c.prediction)}`", ""]
    for s in c.predicted:
        if len(c.predicted) > 1:
            out += [f"{_md(s.name)}:", ""]
        if s.rows:
            out += ["| " + " | ".join(_PREDICTED_HEADERS) + " |", "|" + "---|" * len(_PREDICTED_HEADERS)]
            for r in s.rows:
                cells = [f"**{x}**" if r.missed else x for x in _predicted_cells(r)]
                out.append("| " + " | ".join(_md(x) for x in cells) + " |")
            out.append("")
            out += [f"- {_md(r.measure)} {r.label}: {_md(r.sentence())}" for r in s.rows if _shown(r)]
        out += [f"- note: {_md(n)}" for n in s.notes]
        out.append("")
    return out


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(c: Comparison) -> str:
    """GitHub-flavoured markdown: the verdict, the settings, one table per set, the sentences."""
    words = {0: "✅ no regression", 1: "❌ regression", 4: "⚠️ not comparable"}
    if c.prediction:
        words.update({0: "✅ as predicted", 1: "❌ not as predicted"})
    word = words[c.exit_code]
    out = [
        f"### voicebudget compare: {word}",
        "",
        f"`{_md(c.baseline)}` → `{_md(c.new)}`",
        "",
        _md(c.settings.describe()),
        "",
    ]
    for s in c.sets:
        out += [_md(line) + "  " for line in _set_lines(s)]
        if s.rows:
            out += ["", "| " + " | ".join(_HEADERS) + " |", "|" + "---|" * len(_HEADERS)]
            for r in s.rows:
                cells = _cells(r)
                if r.verdict == "regression":
                    cells = [f"**{x}**" for x in cells]
                out.append("| " + " | ".join(_md(x) for x in cells) + " |")
            out.append("")
            out += [f"- {_md(r.sentence(c.settings.level))}" for r in s.rows if r.verdict != "unchanged"]
        out.append("")
    out += [f"- not comparable: {_md(p)}" for p in c.problems]
    out += [f"- note: {_md(n)}" for n in c.notes]
    out += _predicted_markdown(c)
    out.append(f"**{_md(c.verdict)}**")
    return printable("\n".join(out) + "\n")  # a name from a file must not drive the terminal
