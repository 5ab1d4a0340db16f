"""What docs/ shows of the commands' output, regenerated from the commands themselves.

A page shows a command's output in a marker block::

    <!-- output: council councils/intent-wafer-all.toml -->
    ```console
    $ voicebudget council councils/intent-wafer-all.toml
    (the output at 80 columns, run from the repository root)
    $ echo $?
    1
    ```
    <!-- /output -->

and a table assembled from one or more commands in ``<!-- table: NAME -->`` ... ``<!-- /table -->``,
written by the function ``NAME`` of :data:`TABLES`. ``python tests/doc_outputs.py [docs/x.md ...]``
rewrites the blocks of the pages given (default: every page); tests/test_doc_outputs.py fails when a
page and its command disagree, and when a console block shows a command's output outside a marker
block. Numbers in a page's prose are pinned in tests/test_doc_outputs.py (the command run, the
figure formatted as the page prints it).

The commands run in process (typer's ``CliRunner``), so a block costs what the command costs.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import sys
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

from doc_trace_tables import TRACE_TABLES
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
COLUMNS = 80

BLOCK = re.compile(r"<!-- (output|table): (.+?) -->\n(.*?)<!-- /\1 -->\n", re.DOTALL)
"""A marker block: its kind, its argument (the command after ``voicebudget``, or a table's name), its body."""


@contextlib.contextmanager
def _at_root() -> Iterator[None]:
    here = Path.cwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(here)


@cache
def run(command: str) -> tuple[int, str]:
    """``voicebudget COMMAND`` from the repository root at 80 columns: (exit code, output with trailing
    spaces stripped). Memoised: a page and its pins share one run."""
    from voicebudget.cli import app

    with _at_root():
        res = CliRunner().invoke(app, shlex.split(command), env={"COLUMNS": str(COLUMNS), "NO_COLOR": "1"})
    if res.exit_code not in (0, 1, 4):
        raise AssertionError(f"voicebudget {command} exited {res.exit_code}:\n{res.output}")
    return res.exit_code, "\n".join(line.rstrip() for line in res.output.rstrip().splitlines())


def run_json(command: str) -> dict[str, Any]:
    """``voicebudget COMMAND`` (which must print JSON), parsed."""
    _, out = run(command)
    doc: dict[str, Any] = json.loads(out)
    return doc


def output_block(command: str) -> str:
    """The body of an ``output`` block: the command, its output, its exit code when not 0."""
    code, out = run(command)
    shown = "\n".join(f"{line}" for line in _wrap_command(command))
    tail = f"$ echo $?\n{code}\n" if code else ""
    return f"```console\n{shown}\n{out}\n{tail}```\n"


def _wrap_command(command: str) -> list[str]:
    """``$ voicebudget ...`` folded with backslashes to fit the page's 100 columns."""
    words, lines, line = shlex.split(command), [], "$ voicebudget"
    for w in words:
        w = shlex.quote(w)
        if len(line) + 1 + len(w) > 98:
            lines.append(line + " \\")
            line = "     "
        line += " " + w
    return [*lines, line]


def _money(x: float | None) -> str:
    """As ``capacity`` prints it (two significant digits below a cent)."""
    from voicebudget.capacity._render import _money as money

    return money(x)


def capacity_support_line() -> str:
    """docs/capacity.md's worked example: the support line without and with prefix caching."""
    base = run_json("capacity scenarios/support-line.toml --target-calls 500 -f json")
    cached = run_json("capacity scenarios/support-line.toml --target-calls 500 --prefix-caching on -f json")
    pct = f"p{base['percentile']:g}"
    rows = [
        f"| deployment | calls within {base['budget_ms']:g} ms at {pct} | limited by | {pct} at capacity | "
        f"$/call-minute | chips for {base['target_calls']} calls | with prefix caching: calls, limit, $/call-minute |",
        "|---|---:|---|---:|---:|---:|---|",
    ]
    for d, c in zip(base["deployments"], cached["deployments"], strict=True):
        calls = d["max_concurrent_calls"]
        chips = "-" if d["chips_for_target"] is None else f"{d['chips_for_target']:,}"
        if c["max_concurrent_calls"] == calls and c["limited_by"] == d["limited_by"]:
            with_cache = "same"
        else:
            with_cache = f"{c['max_concurrent_calls']:,}, {c['limited_by']}, {_money(c['cost_per_call_minute'])}"
        cost = _money(d["cost_per_call_minute"]) if calls else f"({_money(d['cost_per_call_minute'])})"
        rows.append(
            f"| {d['name']} | {calls:,} | {d['limited_by']} | {d['percentile_ms_at_max']:,.0f} ms | {cost} | {chips} "
            f"| {with_cache} |"
        )
    return "\n".join(rows) + "\n"


def capacity_70b_fast_mode() -> str:
    """docs/capacity.md: the 70B fast-mode curve at a 1.5 s budget."""
    doc = run_json(FAST_MODE_70B + " -f json")
    rows = [
        "| batch cap | calls within 1,500 ms at p95 | limited by | p95 at capacity | $/call-minute |",
        "|---:|---:|---|---:|---:|",
    ]
    for d in doc["deployments"]:
        rows.append(
            f"| {d['deployment']['max_concurrency']} | {d['max_concurrent_calls']:,} | {d['limited_by']} | "
            f"{d['percentile_ms_at_max']:,.0f} ms | {_money(d['cost_per_call_minute'])} |"
        )
    return "\n".join(rows) + "\n"


FAST_MODE_70B = (
    "capacity scenarios/support-line.toml --hardware h100-sxm --model llama-3.1-70b --chips 2 --precision fp8 "
    "--batch-cap 1,2,4,8,32 --budget-ms 1500"
)

TABLES: dict[str, Callable[[], str]] = {
    "capacity-support-line": capacity_support_line,
    "capacity-70b-fast-mode": capacity_70b_fast_mode,
    **TRACE_TABLES,
}
"""Tables assembled from commands (or, for docs/traces.md, from the readers' own tables), by the name their
marker block gives."""


def render(kind: str, arg: str) -> str:
    """A block's body as the command gives it now."""
    if kind == "output":
        return output_block(arg)
    if arg not in TABLES:
        raise KeyError(f"no table {arg!r} in tests/doc_outputs.py; known: {', '.join(sorted(TABLES))}")
    return TABLES[arg]()


def blocks(text: str) -> list[tuple[str, str, str]]:
    """Every marker block of a page: (kind, argument, body as written)."""
    return [(m.group(1), m.group(2), m.group(3)) for m in BLOCK.finditer(text)]


def regenerate(text: str) -> str:
    """The page with every marker block rewritten from its command."""
    return BLOCK.sub(
        lambda m: f"<!-- {m.group(1)}: {m.group(2)} -->\n{render(m.group(1), m.group(2))}<!-- /{m.group(1)} -->\n", text
    )


def main(argv: list[str]) -> int:
    """Rewrite the marker blocks of the pages given (default: every page of docs/)."""
    pages = [Path(a) for a in argv] or sorted(DOCS.glob("*.md"))
    for page in pages:
        text = page.read_text(encoding="utf-8")
        new = regenerate(text)
        if new != text:
            page.write_text(new, encoding="utf-8")
            print(f"rewrote {page}")  # noqa: T201 - a script's report
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
