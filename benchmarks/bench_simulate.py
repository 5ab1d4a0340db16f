"""Simulation and the whole ``voicebudget run`` vs the cost floor: numpy drawing the same variates.

Runs the bundled default scenario (all three variants) and compares, in one process and one run
(so the ratios hold on a shared machine), with the time numpy takes to draw as many standard normals
as the run consumes random variates (counted by wrapping each stage's random stream):

- ``simulation (evaluate)``: the baseline's pipeline alone, vs the baseline's variates;
- ``simulation + report``: the baseline simulated and judged (percentiles, tail attribution);
- ``CLI run (in process)``: ``voicebudget run -n N`` through the CLI (argument parsing, loading,
  every variant simulated and judged, the tables rendered), vs every variant's variates. Target:
  ratio <= 1.5 at 2,000,000 and at 10,000,000 turns (issue 24);
- ``CLI run (new process)``: the same command as a subprocess of this checkout, at the first size, so
  Python's start-up and the imports count too (reported; bench_startup.py judges the 200,000-turn run).

Times are CPU time (user + system), the best of ``--repeat`` rounds, each round timing every item in
turn: the machine this was written on is shared, and CPU time does not count waiting for a core.

Usage: ``python benchmarks/bench_simulate.py [--turns N [N ...]] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from _bench import ROOT, checkout_env, child_cpu_seconds, cpu_seconds, interleaved_best, verdict, voicebudget_cmd

import voicebudget as vb
import voicebudget._algebra as algebra
from voicebudget.cli import app

TARGET = 1.5
"""The whole in-process CLI run over the draw floor of every variant, at 2M and at 10M turns (issue 24;
issue 13's was 2.0 at 2M)."""


class _Counting:
    """A ``numpy.random.Generator`` stand-in that counts the variates drawn through it."""

    drawn = 0

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._rng, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            out = method(*args, **kwargs)
            _Counting.drawn += int(np.size(out))
            return out

        return counted


@contextlib.contextmanager
def counting_streams() -> Any:
    real = algebra.stage_rng
    algebra.stage_rng = lambda seed, name: _Counting(real(seed, name))  # type: ignore[assignment,return-value]
    _Counting.drawn = 0
    try:
        yield _Counting
    finally:
        algebra.stage_rng = real


def cli_run(n: int) -> None:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        app(["run", "-n", str(n)], standalone_mode=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, nargs="+", default=[2_000_000, 10_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    path = Path(str(resources.files("voicebudget") / "data" / "webrtc-cascade.toml"))
    scenario = vb.load_scenario(path)
    pipeline = scenario.pipeline

    with counting_streams() as c:
        vb.evaluate(pipeline.to_tree(), 1000, 1)
        per_turn_baseline = c.drawn / 1000
    with counting_streams() as c:
        vb.simulate(scenario, samples=1000, seed=1)
        per_turn_run = c.drawn / 1000

    def floor(per_turn: float, n: int) -> Callable[[], None]:
        rng = np.random.default_rng(1)
        whole, frac = divmod(per_turn, 1.0)

        def draw() -> None:
            for _ in range(int(whole)):
                rng.standard_normal(n)
            rng.standard_normal(round(frac * n))

        return draw

    print(
        f"variates per turn: baseline {per_turn_baseline:g}, all variants {per_turn_run:g}; CPU time, best of "
        f"{args.repeat}; the checkout at {ROOT}"
    )
    for n in args.turns:
        timers = {
            "floor_base": lambda n=n: cpu_seconds(floor(per_turn_baseline, n)),
            "floor_run": lambda n=n: cpu_seconds(floor(per_turn_run, n)),
            "sim": lambda n=n: cpu_seconds(lambda: vb.evaluate(pipeline.to_tree(), n, 1)),
            "full": lambda n=n: cpu_seconds(lambda: vb.simulate_pipeline(pipeline, scenario.budget, samples=n, seed=1)),
            "cli": lambda n=n: cpu_seconds(lambda: cli_run(n)),
        }
        if n == args.turns[0]:
            timers["proc"] = lambda n=n: child_cpu_seconds(voicebudget_cmd("run", "-n", str(n)), checkout_env())
        t = interleaved_best(args.repeat, timers)
        print(f"turns: {n:,}")
        print(f"  numpy draw floor, baseline    : {t['floor_base'] * 1e3:8.1f} ms")
        print(f"  numpy draw floor, all variants: {t['floor_run'] * 1e3:8.1f} ms")
        print(f"  simulation (evaluate)         : {t['sim'] * 1e3:8.1f} ms   ratio {t['sim'] / t['floor_base']:.2f}")
        print(f"  simulation + report           : {t['full'] * 1e3:8.1f} ms   ratio {t['full'] / t['floor_base']:.2f}")
        if "proc" in t:
            print(
                f"  CLI run (new process)         : {t['proc'] * 1e3:8.1f} ms   ratio "
                f"{t['proc'] / t['floor_run']:.2f} (no target at this size: bench_startup.py has the 200,000-turn row)"
            )
        print(
            "  "
            + verdict(
                f"CLI run in process, {n:,} turns: {t['cli'] * 1e3:.1f} ms vs the draws of every variant",
                t["cli"] / t["floor_run"],
                TARGET,
            )
        )


if __name__ == "__main__":
    main()
