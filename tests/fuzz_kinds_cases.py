"""The fuzzer of issue 22's kinds, shared by tests/test_fuzz_kinds.py (a small budget) and
benchmarks/fuzz_kinds.py (10,000 runs and more).

Each run builds one hostile input of a kind and runs the command that reads it through the CLI, in process
(typer's runner; a signal at write time runs the CLI as a child process):

- **grammar-aware mutations**: a scenario, council, tune file, Hugging Face ``config.json``, hardware TOML
  or council-fit CSV is parsed, 1 to 4 of its values are replaced (a huge integer, ``-0``, a denormal,
  ``inf``/``nan``, text, a list, a table, another ``kind``), renamed (a stage or variant name given rich
  markup, ``$^$`` or an ESC), removed or duplicated, then written back in its own format, and the result
  printed as a table or JSON (sometimes drawn with ``--plot``); a trace's lines (LiveKit metrics, OTLP JSON
  lines, a Pipecat log) get their numbers and fields replaced the same way, lines dropped, repeated and
  reordered;
- **huge integers** (10^309, 2^63, 2^53 + 1) in files and flags (``-n``, ``--seed``, ``--chips``);
- **YAML tags** (``!!binary``, ``!!set``, ``!!python/object``, a local ``!tag``) on a scenario's values;
- **line ends**: ``\\r``, ``\\r\\n`` and a stray ``\\r`` in a cell or a line;
- **FIFOs**: a scenario's sample file or a council file that is a named pipe nobody writes to;
- **signals at write**: ``fit -o`` over an existing file, killed by SIGTERM, SIGINT or SIGHUP at a random
  moment (a SIGINT that lands while Python is still importing, or in a finalizer, prints Python's own
  ``KeyboardInterrupt`` report: that is the interpreter's answer to Ctrl-C, not a crash, and is accepted).

The contract each run is held to: exit 0, 1 or 2 (never 3, never a traceback); within the time limit;
no raw control sequence (ESC) from a file in the output; an error is one ``error:`` line (several errors:
that line, then one line each; no usage box, no warning or source line before it); no input file changed;
after a signal, the target is the old file or a whole new one and no ``.NAME.*.tmp`` is left.
"""

from __future__ import annotations

import collections
import copy
import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import tomllib
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit
import yaml
from time_limit import Hang, time_limit
from typer.testing import CliRunner

from voicebudget._io import load_toml
from voicebudget.cli import app

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "tests" / "data" / "traces"
HUGE = 10**309

HOSTILE: list[Any] = [
    HUGE,
    -HUGE,
    2**63,
    2**53 + 1,
    0,
    -1,
    -0.0,
    5e-324,
    1e308,
    float("inf"),
    float("-inf"),
    float("nan"),
    1.5,
    "",
    "x" * 3000,
    "[/x]",
    "a$^$",
    "\x1b[2J",
    True,
    [],
    [1, 2, 3],
    {},
    {"kind": "fixed", "value_ms": 1},
    {"kind": "lognormal", "p50_ms": 5e-324, "p95_ms": 300},
    {"kind": "sequence", "stages": {"a": {"kind": "fixed", "value_ms": 3e9}, "b": {"kind": "fixed", "value_ms": 3e9}}},
]
"""Values a grammar-aware mutation puts in place of one in the document."""

NAME_SUFFIXES = ["[/b]", "[b]", "$^$", "\u0007", "\x1b[31m"]
"""What a renamed key or a nudged text gets: rich markup, TeX for matplotlib, a bell, an ESC sequence."""

KINDS = ["fixed", "lognormal", "normal", "empirical", "sequence", "all_of", "council", "gpu", "wafer", "api", "x"]

FLAG_VALUES = [str(HUGE), "0", "-1", "1e400", "nan", str(2**63), "5e-324", "3"]


@dataclass
class Case:
    """One fuzzed run: the CLI arguments (paths inside the run's folder), the inputs that must not change,
    and for a signal at write time the child process's target and signal."""

    kind: str
    args: list[str]
    inputs: list[Path] = field(default_factory=list)
    signal_target: Path | None = None
    signum: int = 0
    delay: float = 0.0


@dataclass
class Outcome:
    """How a run went: ``ok`` (exit 0/1), ``input error`` (exit 2 in one line), or a broken contract:
    ``bug`` (exit 3, a traceback), ``hang``, ``message`` (an error that is not one line), ``changed`` (an
    input file written), ``lost`` (a signal left a temporary file or a cut target)."""

    verdict: str
    detail: str = ""


# --- mutation of parsed documents ------------------------------------------------------------------------


def _slots(doc: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, Any, tuple[Any, ...]]]:
    """Every (container, key, path) of a parsed document, parents first."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield doc, k, (*path, k)
            yield from _slots(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield doc, i, (*path, i)
            yield from _slots(v, (*path, i))


def mutate_tree(doc: Any, rng: random.Random, *, allow_none: bool = False) -> Any:
    """``doc`` with 1 to 4 of its values replaced by hostile ones, removed, duplicated or given another
    ``kind`` (a deep copy; the original is untouched)."""
    doc = copy.deepcopy(doc)
    for _ in range(rng.choice([1, 1, 1, 2, 3, 4])):  # one change most often: more runs get past validation
        slots = list(_slots(doc))
        if not slots:
            break
        container, key, _ = rng.choice(slots)
        op = rng.random()
        if op < 0.4:  # the same type, an odd value: a run gets past validation into the models
            container[key] = _nudge(container[key], rng)
        elif op < 0.7:
            value = copy.deepcopy(rng.choice([*HOSTILE, *([None] if allow_none else [])]))
            container[key] = value
        elif op < 0.75 and isinstance(container, dict) and isinstance(key, str):
            container[key + rng.choice(NAME_SUFFIXES)] = container.pop(key)  # a name: a stage, a variant
        elif op < 0.8 and isinstance(container, dict):
            del container[key]
        elif op < 0.85 and isinstance(container, dict):
            container[f"{key}_{rng.randint(0, 9)}"] = copy.deepcopy(container[key])
        elif op < 0.9 and isinstance(container, list):
            container.append(copy.deepcopy(container[key]))
        elif isinstance(container, dict) and "kind" in container:
            container["kind"] = rng.choice(KINDS)
        else:
            container[key] = copy.deepcopy(rng.choice(HOSTILE))
    return doc


def _nudge(value: Any, rng: random.Random) -> Any:
    """``value`` changed within its type: a number scaled by 10^-6..10^6, negated, 0, 1 or its neighbour; a
    boolean flipped; text with markup, a control character or doubled; a container unchanged."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return rng.choice([0, 1, -value, value + 1, value * 10 ** rng.randint(1, 6), max(value // 1000, 1)])
    if isinstance(value, float):
        return rng.choice([0.0, -value, value * 10.0 ** rng.randint(-6, 6), value + 1e-9, 1.0])
    if isinstance(value, str):
        return rng.choice([value + rng.choice(NAME_SUFFIXES), value * 2, value.upper(), value[: len(value) // 2]])
    return value


def _toml_safe(doc: Any) -> Any:
    """``doc`` without what TOML cannot hold (None)."""
    if isinstance(doc, dict):
        return {k: _toml_safe(v) for k, v in doc.items() if v is not None}
    if isinstance(doc, list):
        return [_toml_safe(v) for v in doc if v is not None]
    return doc


def dump_toml(doc: Any) -> str:
    try:
        return tomlkit.dumps(_toml_safe(doc))
    except Exception:  # noqa: BLE001 - tomlkit refuses some shapes: write a broken file instead
        return "x = [\n"


def dump_yaml(doc: Any, rng: random.Random) -> str:
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=10**6)
    if rng.random() < 0.3:  # a YAML tag on one value
        tag = rng.choice(["!!binary aGVsbG8=", "!!set {a, b}", "!!python/object/apply:os.getcwd []", "!env X"])
        lines = text.splitlines()
        values = [i for i, line in enumerate(lines) if re.match(r"^\s*[\w.-]+: \S", line)]
        if values:
            i = rng.choice(values)
            lines[i] = re.sub(r": \S.*$", f": {tag}", lines[i])
            text = "\n".join(lines) + "\n"
    return text


def line_ends(text: str, rng: random.Random) -> str:
    """``text`` with ``\\r\\n`` or ``\\r`` line ends, or a stray ``\\r`` put somewhere (a third of the time)."""
    roll = rng.random()
    if roll < 0.1:
        return text.replace("\n", "\r\n")
    if roll < 0.2:
        return text.replace("\n", "\r")
    if roll < 0.33 and text:
        at = rng.randrange(len(text))
        return text[:at] + "\r" + text[at:]
    return text


# --- the kinds ----------------------------------------------------------------------------------------------


def _documents(folder: str) -> list[Path]:
    return sorted(p for p in (ROOT / folder).glob("*") if p.suffix in (".toml", ".yaml"))


SCENARIOS = _documents("scenarios")
COUNCILS = [p for p in _documents("councils") if "tune" not in p.name]
LLAMA = {
    "num_hidden_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
}
MOE = {**LLAMA, "num_local_experts": 8, "num_experts_per_tok": 2}
TUNE = """kind = "council"
name = "t"
topology = "all"
[[members]]
name = "a"
p = 0.8
stage = { kind = "lognormal", p50_ms = 200, p95_ms = 400 }
[[members]]
name = "b"
p = 0.85
stage = { kind = "lognormal", p50_ms = 300, p95_ms = 500 }
[search]
members = { n = [1, 2] }
topology = ["all", "first_k"]
k = [1, 2]
"""
FIT_CSV = "item,member,answer,correct\n1,a,x,1\n1,b,y,0\n2,a,x,1\n2,b,x,1\n3,a,z,0\n3,b,z,0\n4,a,x,1\n4,b,x,1\n"


def _copy_tree(work: Path) -> None:
    """The bundled scenarios and councils, as siblings (their ``file = "../councils/..."`` resolve)."""
    for folder in ("scenarios", "councils"):
        (work / folder).mkdir(exist_ok=True)
        for p in (ROOT / folder).glob("*"):
            if p.is_file():
                (work / folder / p.name).write_bytes(p.read_bytes())


def _flags(rng: random.Random, command: str) -> list[str]:
    """Sometimes a hostile value for one of the command's number flags."""
    if rng.random() > 0.15:
        return []
    flag = {"run": ["-n", "--seed"], "council": ["-n", "--seed"], "infer": ["--chips"], "check": ["--budget-ms"]}
    options = flag.get(command, ["--budget-ms"])
    return [rng.choice(options), rng.choice(FLAG_VALUES)]


def _output(rng: random.Random, work: Path) -> list[str]:
    """The output a run asks for: JSON, the table (rich reads its names), or the table and a plot (matplotlib
    reads them)."""
    roll = rng.random()
    if roll < 0.4:
        return ["-f", "json"]
    return ["--plot", str(work / "out.png")] if roll < 0.5 else []


def scenario_case(rng: random.Random, work: Path) -> Case:
    _copy_tree(work)
    source = rng.choice(SCENARIOS)
    text = source.read_text()
    doc = yaml.safe_load(text) if source.suffix == ".yaml" else load_toml(text, origin=str(source))
    doc = mutate_tree(doc, rng)
    path = work / "scenarios" / f"fuzzed{source.suffix}"
    path.write_text(line_ends(dump_yaml(doc, rng) if source.suffix == ".yaml" else dump_toml(doc), rng))
    args = ["run", str(path), "-n", "200", *_output(rng, work), *_flags(rng, "run")]
    return Case("scenario", args, [path])


def council_case(rng: random.Random, work: Path) -> Case:
    _copy_tree(work)
    source = rng.choice(COUNCILS)
    doc = mutate_tree(load_toml(source.read_text(), origin=str(source)), rng)
    path = work / "councils" / "fuzzed.toml"
    path.write_text(line_ends(dump_toml(doc), rng))
    args = ["council", str(path), "-n", "100", *_output(rng, work), *_flags(rng, "council")]
    return Case("council", args, [path])


def tune_case(rng: random.Random, work: Path) -> Case:
    doc = mutate_tree(load_toml(TUNE, origin="tune"), rng)
    path = work / "tune.toml"
    path.write_text(dump_toml(doc))
    return Case("tune", ["tune", str(path), "-n", "100", "--workers", "1"], [path])


def hf_config_case(rng: random.Random, work: Path) -> Case:
    doc = mutate_tree(rng.choice([LLAMA, MOE]), rng, allow_none=True)
    folder = work / "model"
    folder.mkdir(exist_ok=True)
    path = folder / "config.json"
    path.write_text(json.dumps(doc))
    hardware = rng.choice(["h100-sxm", "wse-3", "b200", "groq-lpu"])
    return Case("hf config", ["infer", "--model-config", str(path), "-H", hardware, "-f", "json"], [path])


def hardware_case(rng: random.Random, work: Path) -> Case:
    source = ROOT / "docs" / "examples" / "l40s.toml"
    doc = mutate_tree(load_toml(source.read_text(), origin=str(source)), rng)
    path = work / "chip.toml"
    path.write_text(line_ends(dump_toml(doc), rng))
    fmt = rng.choice(["table", "json"])
    return Case("hardware toml", ["infer", "--hardware-config", str(path), "-m", "llama-3.1-8b", "-f", fmt], [path])


def _csv_mutate(text: str, rng: random.Random) -> str:
    rows = [line.split(",") for line in text.splitlines()]
    for _ in range(rng.randint(1, 4)):
        row = rng.choice(rows)
        i = rng.randrange(len(row))
        row[i] = rng.choice(["", "\r", '"', 'a"b', "9" * 400, "NaN", "1e400", "-0", str(HUGE), "\x00", "\ufeff", "x"])
    return line_ends("\n".join(",".join(r) for r in rows) + "\n", rng)


def council_fit_case(rng: random.Random, work: Path) -> Case:
    path = work / "logs.csv"
    path.write_text(_csv_mutate(FIT_CSV, rng), encoding="utf-8", errors="surrogatepass")
    return Case("council-fit csv", ["council-fit", str(path), "-f", "json"], [path])


def samples_case(rng: random.Random, work: Path) -> Case:
    data = work / "lat.csv"
    data.write_text(_csv_mutate("ms\n120\n130\n150\n180\n240\n", rng), encoding="utf-8", errors="surrogatepass")
    path = work / "s.toml"
    path.write_text('name = "n"\n[pipeline]\nkind = "sequence"\nstages.x = { kind = "empirical", file = "lat.csv" }\n')
    return Case("empirical csv", ["run", str(path), "-n", "200", "-f", "json"], [path, data])


def _mutate_json_line(line: str, rng: random.Random) -> str:
    try:
        doc = json.loads(line)
    except ValueError:
        return line
    return json.dumps(mutate_tree(doc, rng, allow_none=True))


_NUMBER = re.compile(r"(?<![\w.])\d+\.\d+|(?<![\w.])\d+(?![\w.])")


def _mutate_log_line(line: str, rng: random.Random) -> str:
    numbers = list(_NUMBER.finditer(line))
    if not numbers:
        return line
    m = rng.choice(numbers)
    value = rng.choice([str(HUGE), "1e400", "-0", "0", "nan", "inf", "5e-324", "-1.5", "99999999"])
    return line[: m.start()] + value + line[m.end() :]


def trace_case(rng: random.Random, work: Path) -> Case:
    source = rng.choice(
        [TRACES / "livekit-metrics.jsonl", TRACES / "otel-livekit-broken.jsonl", TRACES / "pipecat.log"]
    )
    lines = source.read_text().splitlines()
    for _ in range(rng.randint(1, 6)):
        i = rng.randrange(len(lines))
        op = rng.random()
        if op < 0.6:
            lines[i] = (_mutate_log_line if source.suffix == ".log" else _mutate_json_line)(lines[i], rng)
        elif op < 0.75:
            del lines[i]
        elif op < 0.9:
            lines.insert(rng.randrange(len(lines) + 1), lines[i])
        else:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        if not lines:
            lines = [""]
    path = work / f"trace{source.suffix}"
    path.write_text(line_ends("\n".join(lines) + "\n", rng))
    if rng.random() < 0.25:
        out = work / "fitted.toml"
        return Case("trace", ["fit", str(path), "-o", str(out), "--force"], [path])
    return Case("trace", ["check", str(path), "-f", rng.choice(["json", "table"]), *_flags(rng, "check")], [path])


def fifo_case(rng: random.Random, work: Path) -> Case:
    fifo = work / ("lat.csv" if rng.random() < 0.5 else "member.toml")
    os.mkfifo(fifo)
    path = work / "s.toml"
    if fifo.suffix == ".csv":
        path.write_text(
            'name = "n"\n[pipeline]\nkind = "sequence"\nstages.x = { kind = "empirical", file = "lat.csv" }\n'
        )
    else:
        path.write_text(
            'name = "n"\n[pipeline]\nkind = "sequence"\nstages.x = { kind = "council", file = "member.toml" }\n'
        )
    return Case("fifo", ["run", str(path), "-n", "200"], [path])


def signal_case(rng: random.Random, work: Path) -> Case:
    target = work / "f.toml"
    target.write_text("# the old file\n")
    trace = work / "trace.jsonl"
    trace.write_bytes((TRACES / "livekit-metrics.jsonl").read_bytes())
    signum = rng.choice([signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
    return Case(
        "signal at write",
        ["fit", str(trace), "-o", str(target), "--force"],
        [trace],
        signal_target=target,
        signum=int(signum),
        delay=rng.uniform(0.0, 2.5),
    )


MAKERS: dict[str, Callable[[random.Random, Path], Case]] = {
    "scenario": scenario_case,
    "council": council_case,
    "tune": tune_case,
    "hf config": hf_config_case,
    "hardware toml": hardware_case,
    "council-fit csv": council_fit_case,
    "empirical csv": samples_case,
    "trace": trace_case,
    "fifo": fifo_case,
    "signal at write": signal_case,
}
"""Kind -> the maker of one case of it."""

WEIGHTS = {"signal at write": 0.02, "fifo": 0.03, "tune": 0.05}
"""Shares of the kinds that cost a process or a search; the others share the rest equally."""


# --- running a case -----------------------------------------------------------------------------------------


def _digest(paths: list[Path]) -> dict[Path, str]:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths if p.is_file()}


def _message_ok(output: str, command: str) -> str:
    """Why an exit-2 output breaks the one-line rule (empty when it keeps it)."""
    lines = [line for line in output.splitlines() if line.strip()]
    errors = [i for i, line in enumerate(lines) if line.startswith("error: ")]
    if len(errors) != 1:
        return f"{len(errors)} 'error:' lines"
    first = errors[0]
    if command not in ("check", "fit") and first != 0:
        return f"{first} line(s) before the error: {lines[0][:80]!r}"
    after = lines[first + 1 :]
    if after and not re.search(r": \d+ errors:$", lines[first]):
        return f"lines after a single error: {after[0][:80]!r}"
    if any(ch in output for ch in "╭╰│") or "Usage:" in output:
        return "a usage box"
    return ""


def run_case(case: Case, timeout: float, runner: CliRunner | None = None) -> Outcome:
    """Run one case and judge it against the contract (module docstring)."""
    if case.signal_target is not None:
        return _run_signalled(case, timeout)
    before = _digest(case.inputs)
    runner = runner or CliRunner()
    try:  # the warning filters a user's shell has (pytest's filterwarnings = error would raise them)
        with time_limit(timeout), warnings.catch_warnings():
            warnings.simplefilter("default")
            result = runner.invoke(app, case.args)
    except Hang:
        return Outcome("hang", " ".join(case.args)[:160])
    output = result.output
    if result.exit_code not in (0, 1, 2) or "Traceback" in output:
        first = output.strip().splitlines()[0] if output.strip() else repr(result.exception)
        return Outcome("bug", f"exit {result.exit_code}: {first[:200]}")
    if "\x1b" in output:  # not a terminal: rich adds no colour codes, so this came from a file, raw
        return Outcome("message", f"a raw ESC in the output: {output[output.index(chr(27)) - 40 :][:80]!r}")
    if result.exit_code == 2:
        why = _message_ok(output, case.args[0])
        if why:
            return Outcome("message", f"{why}: {output.strip()[:200]!r}")
    if _digest(case.inputs) != before:
        return Outcome("changed", " ".join(case.args)[:160])
    return Outcome("input error" if result.exit_code == 2 else "ok")


def _whole_fit(data: bytes) -> bool:
    """Whether ``data`` is a whole scenario as ``fit`` writes it (TOML with a pipeline)."""
    try:
        return "pipeline" in tomllib.loads(data.decode())
    except (ValueError, UnicodeDecodeError):
        return False


def _default_signals() -> None:
    """In the child: the default action for the signals sent, as in a user's terminal. A fuzzer started
    with ``nohup`` ignores SIGHUP and one started with ``&`` from a script ignores SIGINT, and a child
    inherits that: the signal did nothing, and the run went on to its end (a 'hang' past the time limit
    on a loaded machine)."""
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def _pythons_own(signum: int, text: str) -> bool:
    """Whether ``text`` is the interpreter's own report of a Ctrl-C: a ``KeyboardInterrupt`` traceback while
    Python is still importing (before any command runs), or the one it prints when the interrupt lands in
    a finalizer (``Exception ignored in: <generator ...>`` ... ``KeyboardInterrupt:``; Python ignores an
    exception raised there, and the command goes on)."""
    if signum != signal.SIGINT:
        return False
    return text.endswith("KeyboardInterrupt") or (
        "Exception ignored in" in text and text.endswith("KeyboardInterrupt:")
    )


def _run_signalled(case: Case, timeout: float) -> Outcome:
    target = case.signal_target
    assert target is not None
    old = target.read_bytes()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen(
        [sys.executable, "-m", "voicebudget", *case.args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=_default_signals,
    )
    time.sleep(case.delay)
    child.send_signal(case.signum)
    try:
        _, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        return Outcome("hang", f"signal {case.signum} at {case.delay:.2f} s")
    left = [p.name for p in target.parent.glob(f".{target.name}.*.tmp")]
    new = target.read_bytes()
    if left:
        return Outcome("lost", f"left {left} (signal {case.signum} at {case.delay:.2f} s)")
    if new != old and not _whole_fit(new):
        return Outcome("lost", f"a cut target (signal {case.signum} at {case.delay:.2f} s)")
    text = err.decode(errors="replace").strip()
    if ("Traceback" in text and not _pythons_own(case.signum, text)) or "internal error" in text:
        where = [line for line in text.splitlines() if line.startswith(("Exception ignored", "error:"))]
        return Outcome("bug", " | ".join([*where[:1], text.splitlines()[-1]])[:300])
    return Outcome("ok")


EXAMPLES = 5
"""Examples kept of each broken contract of a kind: one can hide another of a different cause."""


def fuzz(runs: int, seed: int, timeout: float, work: Path) -> tuple[collections.Counter[str], dict[str, list[str]]]:
    """``runs`` cases, kinds drawn with :data:`WEIGHTS`, each in a fresh folder under ``work``.

    :returns: counts by ``(kind, verdict)`` (as ``"kind: verdict"``) and by verdict, and up to
        :data:`EXAMPLES` examples of each broken contract (by kind), each naming its run.
    """
    rng = random.Random(seed)
    kinds = list(MAKERS)
    rest = (1.0 - sum(WEIGHTS.values())) / (len(kinds) - len(WEIGHTS))
    weights = [WEIGHTS.get(k, rest) for k in kinds]
    counts: collections.Counter[str] = collections.Counter()
    examples: dict[str, list[str]] = collections.defaultdict(list)
    runner = CliRunner()
    for index in range(runs):
        kind = rng.choices(kinds, weights)[0]
        folder = work / f"run{index}"
        folder.mkdir()
        case = MAKERS[kind](rng, folder)
        outcome = run_case(case, timeout, runner)
        counts[outcome.verdict] += 1
        counts[f"{kind}: {outcome.verdict}"] += 1
        if outcome.verdict not in ("ok", "input error"):
            kept = examples[f"{kind}: {outcome.verdict}"]
            if len(kept) < EXAMPLES:
                kept.append(f"run {index}: {outcome.detail}")
        _remove(folder)
    return counts, examples


def _remove(folder: Path) -> None:
    for p in sorted(folder.rglob("*"), key=lambda q: len(q.parts), reverse=True):
        if p.is_dir() and not p.is_symlink():
            p.rmdir()
        else:
            p.unlink()
    folder.rmdir()
