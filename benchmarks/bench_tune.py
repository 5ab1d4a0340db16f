"""Tuning throughput: a space of >= 10,000 council configurations on this machine, in one run.

Takes councils/tune-intent.toml, widens its search space (council sizes 1-5 drawn with repetition
from 4 pool members, 6 batch policies), and tunes it exhaustively in process and on ``--workers``
local processes. Target (issue 5): >= 10,000 configurations in under 60 s on 2 cores.
Usage: ``python benchmarks/bench_tune.py [--workers 2] [--samples 2000]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from voicebudget.tuning import tune_council

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--samples", type=int, default=2000)
    args = parser.parse_args()
    text = (ROOT / "councils" / "tune-intent.toml").read_text()
    text = text.replace("n = [1, 2, 3, 4]", "n = [1, 2, 3, 4, 5]").replace("max_members = 4", "max_members = 5")
    text = text.replace("concurrency = [1, 16, 64]", "concurrency = [1, 4, 8, 16, 32, 64]")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tune-large.toml"
        path.write_text(text)
        for workers in sorted({1, args.workers}):
            t0 = time.perf_counter()
            result = tune_council(path, samples=args.samples, workers=workers)
            dt = time.perf_counter() - t0
            print(
                f"workers={workers}: {result.space_size:,} configurations ({result.evaluated:,} evaluated, "
                f"{result.feasible:,} feasible, front {len(result.pareto)}) in {dt:.1f} s: "
                f"{result.space_size / dt:,.0f} configurations/s at {args.samples:,} turns each"
                f"{'  (target: >= 10,000 in < 60 s)' if workers == args.workers else ''}"
            )


if __name__ == "__main__":
    main()
