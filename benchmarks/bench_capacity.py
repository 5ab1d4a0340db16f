"""Capacity planning: one deployment cold against its Monte Carlo floor, and a sweep's throughput.

Cold (issue 24, the ``capacity`` row): in a fresh process, ``plan_capacity`` on the bundled
``scenarios/support-line.toml`` for one deployment (``--model`` on ``--hardware``, fp8, 1 chip) at
:data:`~voicebudget.capacity.DEFAULT_CAPACITY_SAMPLES` turns per load level, CPU time, against its floor:
a fresh numpy process drawing as many standard normals as the search's whole-turn simulations draw (counted by
wrapping each stage's random stream in a second, counting run), its ``import numpy.random`` timed as the search's
is (both processes import numpy before their clock starts; the search imports ``numpy.random`` at its first draw,
~9 ms: until 2026-12-02 only the search was charged for it). Target: <= 3x. The rest is building the LLM stage
at each load level (the open-loop scheduler model, ``estimate_open_loop``) and judging the turns.

Sweep (issue 13): model x hardware x chips x precision x batch cap (the fast-mode curve of each) through
``plan_capacity`` in process and on ``--workers`` local processes: deployments per second.

Usage: ``python benchmarks/bench_capacity.py [--workers 2] [--samples 1000] [--repeat 3] [--no-sweep]``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from _bench import ROOT, checkout_env, load, verdict

import voicebudget as vb
from voicebudget.capacity import DEFAULT_CAPACITY_SAMPLES, deployments_from_options, plan_capacity

TARGET = 3.0
"""One deployment's capacity search, cold, over the numpy draws of its whole-turn simulations."""

_COLD = """
import sys, time
import numpy as np
import voicebudget as vb
import voicebudget._algebra as algebra
from voicebudget.capacity import DEFAULT_CAPACITY_SAMPLES, deployments_from_options, plan_capacity

scenario = vb.load_scenario(sys.argv[1])
deployments = deployments_from_options(scenario, hardware=sys.argv[3], model=sys.argv[2], chips=1, precision="fp8")
n = DEFAULT_CAPACITY_SAMPLES
start = time.process_time()
result = plan_capacity(scenario, deployments, samples=n)
cold = time.process_time() - start
levels = sum(len(d.curve) for d in result.deployments)
drawn = 0

class Counting:
    def __init__(self, rng):
        self._rng = rng
    def __getattr__(self, name):
        method = getattr(self._rng, name)
        def counted(*args, **kwargs):
            global drawn
            out = method(*args, **kwargs)
            drawn += int(np.size(out))
            return out
        return counted

real = algebra.stage_rng
algebra.stage_rng = lambda seed, name: Counting(real(seed, name))
plan_capacity(scenario, deployments, samples=n)
algebra.stage_rng = real
rng = np.random.default_rng(1)
start = time.process_time()
for _ in range(drawn // n):
    rng.standard_normal(n)
rng.standard_normal(drawn % n)
loaded = time.process_time() - start
print(cold, loaded, levels, drawn, result.deployments[0].max_concurrent_calls)
"""

_FLOOR = """
import sys, time
import numpy as np

drawn, n = int(sys.argv[1]), int(sys.argv[2])
start = time.process_time()
import numpy.random  # imported by a search's first draw too (numpy itself is imported before both clocks start)

rng = np.random.default_rng(1)
for _ in range(drawn // n):
    rng.standard_normal(n)
rng.standard_normal(drawn % n)
print(time.process_time() - start)
"""


def _floor(drawn: int, n: int) -> float:
    """CPU seconds of a fresh numpy process drawing ``drawn`` standard normals ``n`` at a time (importing
    ``numpy.random`` included, as in the cold search)."""
    out = subprocess.run(
        [sys.executable, "-c", _FLOOR, str(drawn), str(n)], check=True, capture_output=True, text=True
    ).stdout
    return float(out)


def cold(model: str, hardware: str, repeat: int) -> None:
    secs = floor = loaded = float("inf")
    for _ in range(repeat):  # the best of each, taken in turns
        out = subprocess.run(
            [sys.executable, "-c", _COLD, str(ROOT / "scenarios" / "support-line.toml"), model, hardware],
            check=True,
            capture_output=True,
            text=True,
            env=checkout_env(),
        ).stdout.split()
        levels, drawn, capacity = int(out[2]), int(out[3]), out[4]
        secs, loaded = min(secs, float(out[0])), min(loaded, float(out[1]))
        floor = min(floor, _floor(drawn, DEFAULT_CAPACITY_SAMPLES))
    print(
        verdict(
            f"capacity of {model} on 1 {hardware} fp8, cold: {secs * 1e3:.0f} ms CPU for {levels} load levels "
            f"(capacity {capacity} calls) vs {floor * 1e3:.0f} ms for a fresh numpy process drawing their "
            f"{drawn:,} variates ({secs / loaded:.2f}x the {loaded * 1e3:.0f} ms of drawing them once numpy.random "
            "is loaded)",
            secs / floor,
            TARGET,
        )
    )


def sweep(workers_max: int, samples: int) -> None:
    scenario = vb.load_scenario(ROOT / "scenarios" / "support-line.toml")
    caps = tuple(range(2, 130, 2))  # 64 batch policies per deployment shape
    deployments = []
    for model, hardware, chips, precision in [
        ("llama-3.1-8b", "h100-sxm", 1, "fp8"),
        ("llama-3.1-8b", "h100-sxm", 1, "bf16"),
        ("llama-3.1-8b", "h200", 1, "fp8"),
        ("llama-3.1-8b", "a100-80gb", 1, "bf16"),
        ("llama-3.1-8b", "h100-sxm", 2, "fp8"),
        ("llama-3.1-8b", "h200", 2, "fp8"),
        ("llama-3.1-70b", "h100-sxm", 2, "fp8"),
        ("llama-3.1-70b", "h100-sxm", 4, "fp8"),
        ("llama-3.1-70b", "h200", 1, "fp8"),
        ("llama-3.1-70b", "h200", 2, "fp8"),
        ("llama-3.1-70b", "h100-sxm", 8, "bf16"),
        ("llama-3.1-70b", "a100-80gb", 4, "bf16"),
        ("llama-3.1-70b", "h200", 4, "bf16"),
        ("llama-3.1-8b", "a100-80gb", 2, "bf16"),
        ("llama-3.1-70b", "h200", 8, "fp8"),
        ("llama-3.1-8b", "h200", 4, "fp8"),
    ]:
        deployments += deployments_from_options(
            scenario, hardware=hardware, model=model, chips=chips, precision=precision, batch_caps=caps
        )
    budget = vb.Budget(total_ms=1_200)  # room for the 70B deployments too
    for workers in sorted({1, workers_max}):
        t0 = time.perf_counter()
        result = plan_capacity(scenario, deployments, budget=budget, samples=samples, workers=workers)
        dt = time.perf_counter() - t0
        best = max(result.deployments, key=lambda d: d.calls_per_chip or 0)
        print(
            f"sweep, workers={workers}: {len(deployments):,} deployments in {dt:.1f} s wall: "
            f"{len(deployments) / dt:,.1f} deployments/s at {samples:,} turns per load level; "
            f"most calls per chip: {best.name} ({best.calls_per_chip:.0f}); {load()}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--samples", type=int, default=1000, help="turns per load level in the sweep")
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes for the cold figure; the best kept")
    parser.add_argument("--no-sweep", action="store_true", help="only the cold figures")
    args = parser.parse_args()
    for model, hardware in (("llama-3.1-8b", "h100-sxm"), ("llama-3.1-8b", "a100-80gb")):
        cold(model, hardware, args.repeat)
    if not args.no_sweep:
        sweep(args.workers, args.samples)


if __name__ == "__main__":
    main()
