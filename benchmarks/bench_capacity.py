"""Capacity sweep throughput: >= 1,000 deployments of the support-line scenario, in one run.

Sweeps model x hardware x chips x precision x batch cap (the fast-mode curve of each) through
``plan_capacity`` on the bundled ``scenarios/support-line.toml``, in process and on ``--workers``
local processes, and reports deployments per second. Each deployment is a capacity search (doubling
then bisection, ~2 log2(capacity) whole-turn simulations of ``--samples`` turns).
Usage: ``python benchmarks/bench_capacity.py [--workers 2] [--samples 1000]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import voicebudget as vb
from voicebudget.capacity import deployments_from_options, plan_capacity

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--samples", type=int, default=1000)
    args = parser.parse_args()
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
    for workers in sorted({1, args.workers}):
        t0 = time.perf_counter()
        result = plan_capacity(scenario, deployments, budget=budget, samples=args.samples, workers=workers)
        dt = time.perf_counter() - t0
        best = max(result.deployments, key=lambda d: d.calls_per_chip or 0)
        print(
            f"workers={workers}: {len(deployments):,} deployments in {dt:.1f} s: "
            f"{len(deployments) / dt:,.1f} deployments/s at {args.samples:,} turns per load level; "
            f"most calls per chip: {best.name} ({best.calls_per_chip:.0f})"
        )


if __name__ == "__main__":
    main()
