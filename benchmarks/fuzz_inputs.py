"""Fuzz the input boundary: seeded mutations of real traces and scenario files, run in process.

Takes the sample traces of every reader (tests/data/traces, Pipecat, LiveKit metrics and history,
OTLP) and the bundled scenario and council files, applies 1-4 random mutations to each input (delete,
duplicate, swap or overwrite a slice; insert a hostile token: deep brackets, a 5,000-digit integer,
``NaN``/``Infinity``, ``null``, U+2028, a BOM, rich markup, YAML aliases, a very long line; flip a
number's sign or scale it), and runs the library entry point the CLI calls (``check_traces``,
``run_scenarios`` at 500 turns, ``run_council``). An input error (``ScenarioError``, ``ModelError``)
or a verdict is fine; anything else is counted as a traceback, and an input that runs longer than
``--timeout`` seconds as a hang. Prints the counts, then one example per failing kind.

Usage: ``python benchmarks/fuzz_inputs.py [--inputs 10000] [--seed 11] [--timeout 10]``.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from voicebudget import BudgetExceeded, ModelError, ScenarioError, run_scenarios
from voicebudget.councils import run_council
from voicebudget.traces import check_traces

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the time limit is shared with tests/test_fuzz_inputs.py
from time_limit import Hang, time_limit  # noqa: E402

TRACES = sorted(
    p
    for p in (ROOT / "tests" / "data" / "traces").rglob("*")
    if p.is_file()
    and p.suffix in (".log", ".jsonl", ".json")
    and not p.name.endswith(".truth.json")
    and p.name != "expected.json"
)
SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml")) + sorted((ROOT / "scenarios").glob("*.yaml"))
COUNCILS = sorted(p for p in (ROOT / "councils").glob("*.toml") if "tune" not in p.name)

TOKENS = [
    "[" * 3000,
    "{" * 3000,
    "9" * 5000,
    "-1e309",
    "NaN",
    "Infinity",
    "-Infinity",
    "null",
    "true",
    "[]",
    "{}",
    "\u2028",
    "\u0085",
    "\ufeff",
    "[/x]",
    "[link=https://example.com]x[/link]",
    "\x00",
    "\r",
    "\n" * 50,
    "&a [1, *a]",
    "*missing",
    "<<: *b",
    '"' * 7,
    "'''",
    "\\u0000",
    "x" * 200_000,
    "-",
    "0" * 30,
    "1e-320",
    '{"spanId": "a", "parentSpanId": "a"}',
    '"type": ["eou_metrics"]',
    "9223372036854775808",
]


def mutate(text: str, rng: random.Random) -> str:
    """1-4 random edits of ``text``."""
    for _ in range(rng.randint(1, 4)):
        n = len(text)
        i = rng.randrange(n + 1)
        j = min(n, i + rng.randint(0, 200))
        op = rng.randrange(7)
        if op == 0:
            text = text[:i] + text[j:]
        elif op == 1:
            text = text[:j] + text[i:j] + text[j:]
        elif op == 2:
            text = text[:i] + rng.choice(TOKENS) + text[i:]
        elif op == 3:
            text = text[:i] + rng.choice(TOKENS) + text[j:]
        elif op == 4:  # a number changes sign or scale
            k = text.find(".", i)
            if k > 0:
                text = text[:k] + rng.choice(["", "e9", "e-9", "0000000"]) + text[k:]
                text = text[:i] + rng.choice(["-", ""]) + text[i:]
        elif op == 5:  # swap two lines
            lines = text.split("\n")
            if len(lines) > 2:
                a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
                lines[a], lines[b] = lines[b], lines[a]
                text = "\n".join(lines)
        else:
            text = text[:i] + chr(rng.randrange(32, 0x2FFF)) + text[j:]
    return text


def run_trace(path: Path) -> None:
    check_traces([path])


def run_scenario(path: Path) -> None:
    run_scenarios([path], samples=500, seed=1)


def run_council_file(path: Path) -> None:
    run_council(path, samples=500, seed=1)


def fuzz(inputs: int, seed: int, timeout: float) -> tuple[collections.Counter[str], dict[str, str]]:
    rng = random.Random(seed)
    counts: collections.Counter[str] = collections.Counter()
    examples: dict[str, str] = {}
    kinds: list[tuple[list[Path], Callable[[Path], None]]] = [
        (TRACES, run_trace),
        (SCENARIOS, run_scenario),
        (COUNCILS, run_council_file),
    ]
    sources = {p: p.read_text(encoding="utf-8", errors="replace") for ps, _ in kinds for p in ps}
    with tempfile.TemporaryDirectory() as tmp:
        for index in range(inputs):
            paths, call = kinds[0] if index % 2 == 0 else kinds[1 + (index // 2) % 2]
            source = rng.choice(paths)
            target = Path(tmp) / f"in{source.suffix}"
            target.write_text(mutate(sources[source], rng), encoding="utf-8", errors="surrogatepass")
            t0 = time.perf_counter()
            try:
                with time_limit(timeout):
                    call(target)
                counts["ok"] += 1
            except (ScenarioError, ModelError):
                counts["input error (exit 2)"] += 1
            except BudgetExceeded:
                counts["ok"] += 1
            except Hang:
                counts["hang"] += 1
                examples.setdefault(f"hang: {call.__name__}", f"{source.name} (input {index})")
            except Exception as exc:  # noqa: BLE001 - counting what escapes is the point
                counts["traceback"] += 1
                where = traceback.extract_tb(exc.__traceback__)[-1]
                key = f"{type(exc).__name__} at {Path(where.filename).name}:{where.lineno}"
                examples.setdefault(key, f"{source.name} (input {index}): {str(exc)[:160]}")
            counts["slow (> 2 s)"] += time.perf_counter() - t0 > 2
    return counts, examples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--timeout", type=float, default=10.0)
    args = parser.parse_args()
    t0 = time.perf_counter()
    counts, examples = fuzz(args.inputs, args.seed, args.timeout)
    print(
        f"{args.inputs:,} mutated inputs (seed {args.seed}) in {time.perf_counter() - t0:.0f} s: "
        f"{counts['traceback']} tracebacks, {counts['hang']} hangs (> {args.timeout:g} s), "
        f"{counts['input error (exit 2)']} input errors, {counts['ok']} ran, {counts['slow (> 2 s)']} slow"
    )
    for key, example in sorted(examples.items()):
        print(f"  {key}: {example}")


if __name__ == "__main__":
    main()
