"""Fuzz issue 22's kinds at scale: grammar-aware mutations of scenarios, councils, tune files, Hugging Face
configs, hardware TOML, council-fit and sample CSVs and traces; huge integers in files and flags; YAML tags;
``\\r`` line ends; FIFOs; signals at write time (tests/fuzz_kinds_cases.py says what each is and the
contract each run is held to).

Prints the runs by kind and verdict, the targets (0 internal errors or tracebacks, 0 hangs, 0 broken
messages, 0 changed inputs, 0 lost writes) with their verdicts, and up to five examples of each broken contract;
exits 1 when a target is not met. Usage: ``python benchmarks/fuzz_kinds.py [--runs 10000] [--seed 22]
[--timeout 20]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from _bench import ROOT, load

sys.path.insert(0, str(ROOT / "tests"))  # the cases and the time limit are shared with the tests
from fuzz_kinds_cases import MAKERS, fuzz  # noqa: E402

BROKEN = ("bug", "hang", "message", "changed", "lost")
"""Verdicts that break the contract; each has the target 0."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds before a run counts as a hang")
    args = parser.parse_args()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        counts, examples = fuzz(args.runs, args.seed, args.timeout, Path(tmp))
    print(f"{args.runs:,} runs (seed {args.seed}) in {time.perf_counter() - t0:.0f} s; {load()}")
    for kind in MAKERS:
        verdicts = {v: counts[f"{kind}: {v}"] for v in ("ok", "input error", *BROKEN) if counts[f"{kind}: {v}"]}
        print(f"  {kind}: " + (", ".join(f"{n:,} {v}" for v, n in verdicts.items()) or "no run"))
    met = True
    for verdict in BROKEN:
        met &= counts[verdict] == 0
        print(f"{verdict}: {counts[verdict]} (target 0: {'met' if counts[verdict] == 0 else 'NOT met'})")
    for key, kept in sorted(examples.items()):
        for example in kept:
            print(f"  {key}: {example}")
    sys.exit(0 if met else 1)


if __name__ == "__main__":
    main()
