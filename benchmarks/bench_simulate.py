"""Simulation cost vs the cost floor: drawing the same random numbers with numpy, in one run.

Runs the bundled default scenario's baseline at 1,000,000 turns and compares its wall time with the
time numpy takes to draw the random variates the simulation consumes (one standard normal per
stochastic stage per turn, plus the cold-connection coin flips). Target: ratio <= 2.0
(issue 2). Usage: ``python benchmarks/bench_simulate.py [--turns N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import timeit
from importlib import resources

import numpy as np

import voicebudget as vb

# The default scenario's baseline draws per turn: endpointing (1 normal), asr (1), framework (1 uniform),
# network coin flip (1 uniform) + cold extra on 10% (fixed: 0), llm ttft (1) + tokens (1 integer) + tpot (1),
# tts ttfb (1) + leading silence (1 uniform), transport (1): 10 variates per turn.
VARIATES_PER_TURN = 10


def best_of(repeat: int, fn) -> float:  # type: ignore[no-untyped-def]
    """Best wall time of ``repeat`` single calls, seconds."""
    return min(timeit.repeat(fn, repeat=repeat, number=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    path = resources.files("voicebudget") / "data" / "webrtc-cascade.toml"
    scenario = vb.load_scenario(str(path))
    n = args.turns
    pipeline = scenario.pipeline

    def simulate_only() -> None:
        vb.evaluate(pipeline.to_tree(), n, 1)

    def simulate_and_report() -> None:
        vb.simulate_pipeline(pipeline, scenario.budget, samples=n, seed=1)

    def draw_floor() -> None:
        rng = np.random.default_rng(1)
        for _ in range(VARIATES_PER_TURN):
            rng.standard_normal(n)

    floor = best_of(args.repeat, draw_floor)
    sim = best_of(args.repeat, simulate_only)
    full = best_of(args.repeat, simulate_and_report)
    print(f"turns: {n:,}; stochastic variates drawn per turn: {VARIATES_PER_TURN}")
    print(f"numpy draw floor        : {floor * 1e3:8.1f} ms")
    print(f"simulation (evaluate)   : {sim * 1e3:8.1f} ms   ratio {sim / floor:.2f}  (target <= 2.0)")
    print(f"simulation + report     : {full * 1e3:8.1f} ms   ratio {full / floor:.2f}")


if __name__ == "__main__":
    main()
