"""The input boundary refuses hostile files at once (the targets tests/test_io.py used to time).

Each row times a refusal against a floor of the same kind, in one process, in turns (best of ``--repeat``,
CPU time), and prints the ratio, its target and the load average:

- ``read_text("/dev/zero")`` and ``iter_lines("/dev/zero")`` (a device: refused before any byte is read) vs
  ``read_text`` of a one-byte regular file. Target: <= 3x (the refusal is a ``stat``, not a read);
- a YAML "billion laughs" (nine levels of nine aliases: 9^9 nodes when expanded) vs ``load_yaml`` of a
  document as long without aliases. Target: <= 3x (the expansion is counted on the node graph, never
  built);
- ``iter_lines`` of a file that is one 64 MiB line (a log with a runaway line: 256 chunks of 256 KiB) vs
  ``read_text`` of the same file. Target: <= 4x (the pieces are joined once, at the line's end: read, join,
  decode and split are four passes over the bytes to read_text's two; adding each chunk to the bytes so far,
  as before 2026-12-02, grew with the square of the line: 49x here, 11.6 s for a 100 MB line).

Usage: ``python benchmarks/bench_io.py [--repeat 20]``.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path

from _bench import cpu_seconds, interleaved_best, verdict

from voicebudget import ScenarioError
from voicebudget._io import iter_lines, load_yaml, read_text

TARGET = 3.0
LONG_LINE_TARGET = 4.0


def refused(fn: Callable[[], object]) -> Callable[[], None]:
    def call() -> None:
        try:
            fn()
        except ScenarioError:
            return
        raise AssertionError("not refused")

    return call


def laughs() -> str:
    levels = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i, name in enumerate("bcdefghi"):
        levels.append(f"{name}: &{name} [" + ", ".join([f"*{'abcdefghi'[i]}"] * 9) + "]")
    return "\n".join(levels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    bomb = laughs()
    plain = "\n".join(f"k{i}: [" + ", ".join(["lol"] * 9) + "]" for i in range(len(bomb) // 50))
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "one.txt"
        small.write_text("x")
        long = Path(tmp) / "long.log"
        long.write_bytes(b"x" * (64 << 20) + b"\n")
        rows = {
            "read_text('/dev/zero')": (
                refused(lambda: read_text("/dev/zero")),
                lambda: read_text(small),
                "read_text of 1 byte",
            ),
            "iter_lines('/dev/zero')": (
                refused(lambda: list(iter_lines("/dev/zero"))),
                lambda: read_text(small),
                "read_text of 1 byte",
            ),
            "billion laughs (9^9 nodes)": (
                refused(lambda: load_yaml(bomb, origin="b.yaml")),
                lambda: load_yaml(plain, origin="p.yaml"),
                f"load_yaml of {len(plain):,} characters without aliases",
            ),
            "iter_lines of one 64 MiB line": (
                lambda: list(iter_lines(long)),
                lambda: read_text(long, max_bytes=128 << 20),
                "read_text of it",
            ),
        }
        timers = {}
        for name, (fn, floor, _) in rows.items():
            timers[name] = lambda fn=fn: cpu_seconds(fn)
            timers[name + " floor"] = lambda floor=floor: cpu_seconds(floor)
        best = interleaved_best(args.repeat, timers)
    for name, (_, _, floor_name) in rows.items():
        a, b = best[name], best[name + " floor"]
        target = LONG_LINE_TARGET if name.startswith("iter_lines of one") else TARGET
        print(verdict(f"{name}: {a * 1e6:,.0f} us vs {floor_name} {b * 1e6:,.0f} us", a / b, target))


if __name__ == "__main__":
    main()
