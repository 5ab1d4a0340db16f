"""Tuning throughput per core and its scaling over worker processes (issue 24, the ``tune`` row).

Takes councils/tune-intent.toml, widens its search space (council sizes 1-5 drawn with repetition from
4 pool members, 6 batch policies for the councils whose members they change: 7,390 configurations), and
tunes it exhaustively in process, then on ``--workers`` local processes, printing for each the load
average it ran at:

- configurations per CPU second in one process (the whole tune: first pass, front, re-runs of the
  shortlist). Target: >= 1,000 configurations/s/core;
- the wall-clock speed-up of ``--workers 2``. Target: >= 1.7x on an idle machine. A busy machine (load
  above half its cores) gives the workers no free core, so the measured figure is printed but not judged
  there; the speed-up idle cores would give is estimated from CPU time (the serial CPU over this process's
  plus an even share of the workers'), and the parallel overhead (worker start-up, pickling the
  configurations and results, caches warmed once per worker) is the CPU the workers add.

Usage: ``python benchmarks/bench_tune.py [--workers 2] [--samples 2000] [--file COUNCIL.toml]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

from _bench import ROOT, load, verdict

from voicebudget.tuning import tune_council

PER_CORE = 1_000.0
"""Configurations per CPU second, in one process."""
SPEED_UP = 1.7
"""Wall-clock speed-up of two worker processes on an idle machine."""


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
        loads: dict[int, float] = {}
        size = 0
        for workers in sorted({1, args.workers}):
            t0, own0, kids0 = time.perf_counter(), _cpu_s(resource.RUSAGE_SELF), _cpu_s(resource.RUSAGE_CHILDREN)
            result = tune_council(path, samples=args.samples, workers=workers)
            dt = time.perf_counter() - t0
            own, kids = _cpu_s(resource.RUSAGE_SELF) - own0, _cpu_s(resource.RUSAGE_CHILDREN) - kids0
            walls[workers], cpus[workers], loads[workers], size = dt, (own, kids), os.getloadavg()[0], result.space_size
            print(
                f"workers={workers}: {result.space_size:,} configurations ({result.evaluated:,} evaluated, "
                f"{result.feasible:,} feasible, {result.shortlisted} re-run at {result.refine_samples:,} turns, "
                f"front {len(result.pareto)}) in {dt:.1f} s wall; CPU {own:.1f} s in this process + {kids:.1f} s in "
                f"workers; {load()}"
            )
        serial = sum(cpus[1])
        print(
            verdict(
                f"configurations per CPU second, one process ({serial:.1f} s)",
                size / serial,
                PER_CORE,
                at_least=True,
                unit="/s",
            )
        )
        if args.workers > 1:
            own, kids = cpus[args.workers]
            idle = serial / (own + kids / args.workers)
            measured = walls[1] / walls[args.workers]
            busy = loads[args.workers] > (os.cpu_count() or 1) / 2
            line = verdict(f"{args.workers} workers, wall-clock speed-up", measured, SPEED_UP, at_least=True)
            if busy:
                line = line.replace("NOT met", "not judged: a busy machine").replace(
                    ": met", ": met, on a busy machine"
                )
            print(line)
            print(
                f"{args.workers} workers on idle cores, estimated from CPU time: {idle:.2f}x ({serial:.1f} s serial vs "
                f"{own:.1f} s + {kids:.1f} s / {args.workers}); parallel overhead {own + kids - serial:+.1f} s CPU "
                "(worker start-up, pickling configurations and results, caches warmed once per worker)"
            )


if __name__ == "__main__":
    main()
