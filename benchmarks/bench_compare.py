"""`compare` on 100,000 turns per side with 2,000 resamples (issue 26: "in a few seconds", vectorised).

Builds two seeded sets of measured turns (8 stages plus the total, log-normal, the new side 5% slower in the
LLM) and times :func:`voicebudget.baseline.compare_sets` at the defaults (90% percentile intervals, 2,000
resamples), p50 and p95 of every measure: once with turns resampled one by one (no call ids), once with
calls resampled as clusters (10,000 calls of 10 turns), once with BCa. Prints each time with the load
average, and the process's peak resident memory (no ``resamples x turns`` array is ever built).
Usage: ``python benchmarks/bench_compare.py [--turns N] [--calls G] [--resamples R]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np

from voicebudget import Budget
from voicebudget._measured import TurnSet
from voicebudget.baseline import CompareSettings, compare_sets

STAGES = {"endpointing": 300, "asr": 250, "framework": 15, "llm_ttft": 400, "first_phrase": 150, "tts": 130,
          "transport": 60, "other": 5}  # fmt: skip


def side(n: int, n_calls: int, seed: int, llm_factor: float) -> tuple[TurnSet, TurnSet]:
    rng = np.random.default_rng(seed)
    stages = {k: rng.lognormal(np.log(m), 0.3, n) for k, m in STAGES.items()}
    stages["llm_ttft"] *= llm_factor
    total = sum(v for k, v in stages.items() if k != "asr")
    calls = tuple(f"call-{i}" for i in rng.integers(0, n_calls, n))
    ids = tuple(map(str, range(n)))
    make = lambda c: TurnSet("bench", "trace", "trace: bench", "server side", Budget(), total, stages, ids, c)  # noqa: E731
    return make(None), make(calls)


def timed(label: str, base: TurnSet, new: TurnSet, settings: CompareSettings) -> None:
    t0 = time.perf_counter()
    result = compare_sets([base], [new], settings)
    dt = time.perf_counter() - t0
    rows = len(result.sets[0].rows)
    print(f"{label:<34} {dt:6.2f} s  ({rows} rows; load {os.getloadavg()[0]:.1f}) verdict: {result.verdict[:60]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--resamples", type=int, default=2000)
    args = parser.parse_args()
    (b_turns, b_calls), (n_turns, n_calls) = (side(args.turns, args.calls, s, f) for s, f in ((1, 1.0), (2, 1.05)))
    print(f"{args.turns:,} turns per side, 8 stages + total, p50 and p95, {args.resamples:,} resamples")
    timed("turns resampled (percentile)", b_turns, n_turns, CompareSettings(resamples=args.resamples))
    timed("turns resampled (BCa)", b_turns, n_turns, CompareSettings(resamples=args.resamples, method="bca"))
    timed(f"calls resampled ({args.calls:,} calls)", b_calls, n_calls, CompareSettings(resamples=args.resamples))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory {peak:.0f} MB")


if __name__ == "__main__":
    main()
