"""Tuning throughput: a space of >= 10,000 council configurations on this machine, in one run.

Takes councils/tune-intent.toml, widens its search space (council sizes 1-5 drawn with repetition
from 4 pool members, 6 batch policies), and tunes it exhaustively in process and on ``--workers``
local processes. Target (issue 5): >= 10,000 configurations in under 60 s on 2 cores.
Usage: ``python benchmarks/bench_tune.py [--workers 2] [--samples 2000]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

from voicebudget.tuning import tune_council

ROOT = Path(__file__).resolve().parent.parent


def _cpu_s(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--file", default=None, help="tune this council file as it is (default: the widened space)")
    args = parser.parse_args()
    text = (ROOT / "councils" / "tune-intent.toml").read_text()
    text = text.replace("n = [1, 2, 3, 4]", "n = [1, 2, 3, 4, 5]").replace("max_members = 4", "max_members = 5")
    text = text.replace("concurrency = [1, 16, 64]", "concurrency = [1, 4, 8, 16, 32, 64]")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.file) if args.file else Path(tmp) / "tune-large.toml"
        if not args.file:
            path.write_text(text)
        walls: dict[int, float] = {}
        cpus: dict[int, tuple[float, float]] = {}
        for workers in sorted({1, args.workers}):
            t0, own0, kids0 = time.perf_counter(), _cpu_s(resource.RUSAGE_SELF), _cpu_s(resource.RUSAGE_CHILDREN)
            result = tune_council(path, samples=args.samples, workers=workers)
            dt = time.perf_counter() - t0
            own, kids = _cpu_s(resource.RUSAGE_SELF) - own0, _cpu_s(resource.RUSAGE_CHILDREN) - kids0
            walls[workers], cpus[workers] = dt, (own, kids)
            print(
                f"workers={workers}: {result.space_size:,} configurations ({result.evaluated:,} evaluated, "
                f"{result.feasible:,} feasible, {result.shortlisted} re-run at {result.refine_samples:,} turns, "
                f"front {len(result.pareto)}) in {dt:.1f} s wall: {result.space_size / dt:,.0f} configurations/s; "
                f"CPU {own:.1f} s in this process + {kids:.1f} s in workers; load average "
                f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
                f"{'  (target: >= 10,000 in < 60 s)' if workers == args.workers else ''}"
            )
        if args.workers > 1:
            serial = sum(cpus[1])
            own, kids = cpus[args.workers]
            # with idle cores the wall time would be this process's CPU plus an even share of the workers'
            idle = serial / (own + kids / args.workers)
            print(
                f"speed-up with {args.workers} workers: {walls[1] / walls[args.workers]:.2f}x measured wall-clock "
                f"(shared machine: other processes take the cores); {idle:.2f}x estimated on idle cores from "
                f"CPU time ({serial:.1f} s serial vs {own:.1f} s + {kids:.1f} s / {args.workers}); parallel "
                f"overhead {own + kids - serial:+.1f} s CPU"
            )


if __name__ == "__main__":
    main()
