"""Cost of one council evaluation, for the tuner: evaluate_council per configuration, in one run.

For each council in councils/ (and a synthetic 5-member vote), times ``evaluate_council`` at a few
thousand turns (latency samples, critical-path attribution, report, exact quality, cost, user time)
and prints it beside the floor: drawing the members' random numbers alone. ``cold`` draws the members
afresh each time; ``warm`` reuses them (member samples are memoised per process, as in the tuner,
where thousands of councils share members). Target (issue 4): a few
ms per configuration at ~4,000 turns, so the tuner can score thousands in seconds.
Usage: ``python benchmarks/bench_council.py [--turns N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import timeit
from pathlib import Path

import numpy as np

from voicebudget.councils import Council, _latency, evaluate_council, load_council

ROOT = Path(__file__).resolve().parent.parent


def best_of(repeat: int, fn) -> float:  # type: ignore[no-untyped-def]
    """Best wall time of ``repeat`` single calls, seconds."""
    return min(timeit.repeat(fn, repeat=repeat, number=1))


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
    print(f"{'council':56s} {'cold ms':>8s} {'warm ms':>8s} {'draws ms':>9s} {'cold/draws':>10s}")
    for c in councils:

        def cold(c: Council = c) -> None:
            _latency._MEMO.clear()
            evaluate_council(c, samples=args.turns, seed=1)

        t_cold = best_of(args.repeat, cold)
        t_warm = best_of(args.repeat, lambda c=c: evaluate_council(c, samples=args.turns, seed=1))
        t_draw = best_of(
            args.repeat,
            lambda c=c: np.stack([_latency._draw_stage(m.stage, m.name, args.turns, 1) for m in c.members]),
        )
        print(f"{c.name[:56]:56s} {t_cold * 1e3:8.2f} {t_warm * 1e3:8.2f} {t_draw * 1e3:9.2f} {t_cold / t_draw:10.1f}")


if __name__ == "__main__":
    main()
