"""Cost of one council evaluation, for the tuner: evaluate_council per configuration, in one run.

For each council in councils/ (and a synthetic 5-member vote), times ``evaluate_council`` at a few
thousand turns (latency samples, critical-path attribution, report, exact quality, cost, user time)
and prints it beside the floor: drawing the members' random numbers alone. Target (issue 4): a few
ms per configuration at ~4,000 turns, so the tuner can score thousands in seconds.
Usage: ``python benchmarks/bench_council.py [--turns N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from voicebudget.councils import Council, evaluate_council, load_council
from voicebudget.councils._latency import sample_stage

ROOT = Path(__file__).resolve().parent.parent


def best_of(repeat: int, fn) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def synthetic_vote() -> Council:
    members = [
        {"name": f"m{i}", "p": 0.6 + 0.05 * i, "stage": {"kind": "lognormal", "p50_ms": 200, "p95_ms": 300 + 20 * i}}
        for i in range(5)
    ]
    return Council.model_validate(
        {"name": "synthetic 5-member vote", "topology": "vote", "m": 3, "members": members, "rho": 0.2}
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    councils = [load_council(p) for p in sorted((ROOT / "councils").glob("*.toml"))] + [synthetic_vote()]
    print(f"{'council':60s} {'evaluate ms':>12s} {'draws ms':>9s} {'ratio':>6s}")
    for c in councils:
        t_eval = best_of(args.repeat, lambda c=c: evaluate_council(c, samples=args.turns, seed=1))
        t_draw = best_of(
            args.repeat,
            lambda c=c: np.stack([sample_stage(m.stage, m.name, args.turns, 1) for m in c.members]),
        )
        print(f"{c.name[:60]:60s} {t_eval * 1e3:12.2f} {t_draw * 1e3:9.2f} {t_eval / t_draw:6.1f}")


if __name__ == "__main__":
    main()
