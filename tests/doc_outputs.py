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

a table assembled from one or more commands in ``<!-- table: NAME -->`` ... ``<!-- /table -->``,
written by the function ``NAME`` of :data:`TABLES`, and what pytest prints for a test of docs/examples in
``<!-- pytest: docs/examples/FILE.py::TEST -->`` ... ``<!-- /pytest -->`` (the file run by pytest in a
subprocess, as a user runs it; its figures are timings, so a block matches when its text does and each
measured figure is within :data:`TIMING_TOLERANCE` of the run's). ``python tests/doc_outputs.py [docs/x.md ...]``
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
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

from doc_trace_tables import TRACE_TABLES
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
COLUMNS = 80

BLOCK = re.compile(r"<!-- (output|table|pytest): (.+?) -->\n(.*?)<!-- /\1 -->\n", re.DOTALL)
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


def cli_run_json() -> str:
    """docs/cli.md's JSON example: ``run -f json`` on the default scenario, ms rounded to 0.1 and shares to
    0.0001, the first variant's keys up to ``server_side`` and its first stage only."""
    doc = run_json("run -f json")
    variant = doc["variants"][0]
    keys = ("name", "passed", "within_budget_share", "slack_ms", "total", "stages", "tail_driver", "n_turns")
    shown = {k: variant[k] for k in (*keys, "server_side")}
    shown["stages"] = variant["stages"][:1]
    doc = {**doc, "variants": [shown]}
    return "```json\n" + json.dumps(_rounded(doc), indent=2, ensure_ascii=False) + "\n```\n"


def _rounded(x: Any, key: str = "") -> Any:
    """Figures as a page prints them: ms to 0.1, shares to 0.0001."""
    if isinstance(x, dict):
        return {k: _rounded(v, k) for k, v in x.items()}
    if isinstance(x, list):
        return [_rounded(v, key) for v in x]
    if isinstance(x, float):
        return round(x, 4 if key.endswith("share") else 1)
    return x


TRACE_FIT_SAMPLES = {
    "Pipecat log": "tests/data/traces/pipecat.log",
    "LiveKit metrics": "tests/data/traces/livekit-metrics.jsonl",
    "OTel (LiveKit)": "tests/data/traces/otel-spans.json",
}
"""docs/traces.md's fit table: its rows, by the sample files ``fit`` reads."""
FIT_METHODS = ("joint", "empirical", "lognormal")


@cache
def trace_fit(sample: str, method: str) -> tuple[int, float, float, str, str]:
    """``voicebudget fit SAMPLE -o TMP --method METHOD``: (turns fitted, observed p50 and p95 ms, the simulated
    p50's and p95's errors as printed)."""
    with tempfile.TemporaryDirectory() as tmp:
        _, out = run(f"fit {sample} -o {Path(tmp) / 'fitted.toml'} --method {method}")
    out = " ".join(out.split())
    turns = re.search(r"fitted to (\d+) turns", out)
    observed = re.search(r"observed total: p50 ([\d.]+) ms, p95 ([\d.]+) ms", out)
    errors = re.search(r"simulated: p50 [\d.]+ ms \(([+-][\d.]+%)\), p95 [\d.]+ ms \(([+-][\d.]+%)\)", out)
    if turns is None or observed is None or errors is None:
        raise AssertionError(f"voicebudget fit {sample}: unexpected output:\n{out}")
    return int(turns[1]), float(observed[1]), float(observed[2]), errors[1], errors[2]


def trace_fit_turns() -> int:
    """The turns of each sample trace (docs/traces.md: "20 turns each")."""
    (turns,) = {trace_fit(path, "joint")[0] for path in TRACE_FIT_SAMPLES.values()}
    return turns


def traces_fit() -> str:
    """docs/traces.md: how close ``fit``'s scenario comes to each sample trace, per method."""
    rows = [
        "| sample | observed p50 / p95 ms | " + " | ".join(FIT_METHODS) + " |",
        "|---|---|" + "---|" * len(FIT_METHODS),
    ]
    for label, path in TRACE_FIT_SAMPLES.items():
        fits = [trace_fit(path, m) for m in FIT_METHODS]
        _, p50, p95, _, _ = fits[0]
        cells = " | ".join(f"{f[3]} / {f[4]}" for f in fits)
        rows.append(f"| {label} | {p50:.0f} / {p95:.0f} | {cells} |")
    return "\n".join(rows) + "\n"


FAST_MODE_70B = (
    "capacity scenarios/support-line.toml --hardware h100-sxm --model llama-3.1-70b --chips 2 --precision fp8 "
    "--batch-cap 1,2,4,8,32 --budget-ms 1500"
)

TABLES: dict[str, Callable[[], str]] = {
    "capacity-support-line": capacity_support_line,
    "capacity-70b-fast-mode": capacity_70b_fast_mode,
    "cli-run-json": cli_run_json,
    "traces-fit": traces_fit,
    **TRACE_TABLES,
}
"""Tables assembled from commands (or, for docs/traces.md, from the readers' own tables), by the name their
marker block gives."""


def pytest_failure(test: str) -> str:
    """What pytest prints for ``test`` (``docs/examples/FILE.py::TEST``) failing: the message under its
    ``____ TEST ____`` header, run on a copy of the file in a fresh folder (no project configuration), with
    this checkout's voicebudget and its pytest plugin."""
    path, _, name = test.partition("::")
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / Path(path).name
        copy.write_text((ROOT / path).read_text(encoding="utf-8"), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": str(COLUMNS), "NO_COLOR": "1"}
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"{copy.name}::{name}"],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
    lines = done.stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("_") and f" {name} " in line), None)
    if start is None:
        raise AssertionError(f"pytest {test}: no failure of {name} in its output:\n{done.stdout[-3000:]}")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("="))
    return "```\n" + "\n".join(line.rstrip() for line in lines[start + 1 : end]) + "\n```\n"


TIMING_TOLERANCE = (25.0, 0.10)
"""A figure with a decimal point in a ``pytest`` block, or a whole number of ms, is a timing (ms) or a share of
them (%): it matches the run's within 25 (ms or points) or 10%, whichever is larger: the example sleeps for
real, so its figures move by a few ms from run to run, more on a loaded machine. Other whole numbers (turn
counts, the 95 of p95) must be equal."""

_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
_TIMING = re.compile(r"[+-]?\d+(?:\.\d+|(?= ?ms\b))")


def same_within_timing(written: str, now: str, tolerance: tuple[float, float] = TIMING_TOLERANCE) -> bool:
    """``written`` and ``now`` say the same but for timings within ``tolerance`` (ms or points, and a share of the
    larger; default :data:`TIMING_TOLERANCE`) and the spaces that align a table's columns."""
    text_a, text_b = (" ".join(_NUMBER.sub("#", t).split()) for t in (written, now))
    nums_a, nums_b = _NUMBER.finditer(written), _NUMBER.finditer(now)
    if text_a != text_b:
        return False
    absolute, relative = tolerance
    for m_a, m_b in zip(nums_a, nums_b, strict=False):
        a, b = m_a[0], m_b[0]
        timing = _TIMING.match(written, m_a.start()) is not None and _TIMING.match(now, m_b.start()) is not None
        if not timing:
            if a != b:
                return False
        elif abs(float(a) - float(b)) > max(absolute, relative * max(abs(float(a)), abs(float(b)))):
            return False
    return True


def console_block(page: str, first_line: str) -> list[str]:
    """The lines of the console block of ``docs/PAGE`` whose first line is ``first_line``, after it."""
    text = (DOCS / page).read_text(encoding="utf-8")
    for m in re.finditer(r"```console\n(.*?)```", text, re.DOTALL):
        lines = m.group(1).splitlines()
        if lines and lines[0] == first_line:
            return lines[1:]
    raise AssertionError(f"docs/{page}: no console block starts with {first_line!r}")


def render(kind: str, arg: str) -> str:
    """A block's body as the command gives it now."""
    if kind == "output":
        return output_block(arg)
    if kind == "pytest":
        return pytest_failure(arg)
    if arg not in TABLES:
        raise KeyError(f"no table {arg!r} in tests/doc_outputs.py; known: {', '.join(sorted(TABLES))}")
    return TABLES[arg]()


def blocks(text: str) -> list[tuple[str, str, str]]:
    """Every marker block of a page: (kind, argument, body as written). A block indented inside a list item
    (its marker after spaces) is given without that indentation."""
    return [(m.group(1), m.group(2), _dedent(m.group(3), _indent_of(text, m))) for m in BLOCK.finditer(text)]


def _indent_of(text: str, m: re.Match[str]) -> str:
    """The spaces before a block's opening marker on its line (a block inside a list item)."""
    prefix = text[text.rfind("\n", 0, m.start()) + 1 : m.start()]
    return prefix if not prefix.strip() else ""


def _dedent(body: str, indent: str) -> str:
    if not indent:
        return body
    lines = body.removesuffix(indent).splitlines(keepends=True)
    return "".join(line.removeprefix(indent) for line in lines)


def _indent(body: str, indent: str) -> str:
    if not indent:
        return body
    return "".join(indent + line if line.strip() else line for line in body.splitlines(keepends=True)) + indent


PYTEST_RUNS = 3
"""Runs of a ``pytest`` block's test before it is called stale: one starved of the CPU on a loaded machine (its
sleeps overshoot by a second or more: seen at load 8 on 2 cores) does not make the page wrong."""


def matches(kind: str, arg: str, body: str) -> bool:
    """A block's body is what its command gives now (a ``pytest`` block: within the timing tolerance, in one of
    :data:`PYTEST_RUNS` runs)."""
    if kind != "pytest":
        return body == render(kind, arg)
    return any(same_within_timing(body, pytest_failure(arg)) for _ in range(PYTEST_RUNS))


def regenerate(text: str) -> str:
    """The page with every marker block rewritten from its command (a ``pytest`` block that still matches is
    kept as it is: its timings would change on every run)."""

    def block(m: re.Match[str]) -> str:
        kind, arg, indent = m.group(1), m.group(2), _indent_of(text, m)
        body = _dedent(m.group(3), indent)
        new = body if kind == "pytest" and matches(kind, arg, body) else render(kind, arg)
        return f"<!-- {kind}: {arg} -->\n{_indent(new, indent)}<!-- /{kind} -->\n"

    return BLOCK.sub(block, text)


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
