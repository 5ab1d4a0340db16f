"""Memory per simulated turn: how many ``float64[n]`` arrays a run holds at its peak (issue 24, the memory row).

In a fresh process per size, under :mod:`tracemalloc` (numpy reports its buffers to it), the peak of
``simulate`` on the bundled default scenario (every variant) and of ``simulate_pipeline`` on its baseline
alone, over 8 bytes a turn: the number of turn-long arrays alive at the peak. Targets: a variant's
simulation holds <= 5 (its stages summarised as they are drawn, not kept); a whole run holds one variant's
plus each earlier variant's total (kept in its report, for plots): <= 5 + variants - 1, buffers reused
across variants. Sizes: ``--turns`` (default 200,000 and 1,000,000).

Usage: ``python benchmarks/bench_memory.py [--turns N [N ...]]``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from _bench import checkout_env, verdict

TARGET = 5.0
"""Turn-long float64 arrays alive per variant at the peak."""

_CHILD = """
import gc, sys, tracemalloc
from importlib import resources
from pathlib import Path
import voicebudget as vb
n, what = int(sys.argv[1]), sys.argv[2]
scenario = vb.load_scenario(Path(str(resources.files("voicebudget") / "data" / "webrtc-cascade.toml")))
vb.simulate(scenario, samples=1000, seed=1)  # every module and cache warm before tracing
gc.collect()
tracemalloc.start()
if what == "run":
    result = vb.simulate(scenario, samples=n, seed=1)
    variants = len(result.reports)
else:
    result = vb.simulate_pipeline(scenario.pipeline, scenario.budget, samples=n, seed=1)
    variants = 1
print(tracemalloc.get_traced_memory()[1], variants)
"""


def peak(n: int, what: str) -> tuple[int, int]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(n), what], check=True, capture_output=True, text=True, env=checkout_env()
    ).stdout.split()
    return int(out[0]), int(out[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, nargs="+", default=[200_000, 1_000_000])
    args = parser.parse_args()
    for n in args.turns:
        one, _ = peak(n, "pipeline")
        whole, variants = peak(n, "run")
        print(
            verdict(
                f"{n:,} turns, one variant: peak {one / 2**20:.1f} MiB, {one / n:.0f} B/turn, arrays alive",
                one / (8 * n),
                TARGET,
                unit="",
            )
        )
        print(
            verdict(
                f"{n:,} turns, {variants} variants (run): peak {whole / 2**20:.1f} MiB, {whole / n:.0f} B/turn, "
                "arrays alive",
                whole / (8 * n),
                TARGET + variants - 1,
                unit="",
            )
        )


if __name__ == "__main__":
    main()
