"""Simulation and the whole ``voicebudget run`` vs the cost floor: numpy drawing the same variates.

Runs the bundled default scenario (all three variants) and compares, in one process and one run
(so the ratios hold on a shared machine), with the time numpy takes to draw as many standard normals
as the run consumes random variates (counted by wrapping each stage's random stream):

- ``simulation (evaluate)``: the baseline's pipeline alone, vs the baseline's variates;
- ``simulation + report``: the baseline simulated and judged (percentiles, tail attribution);
- ``CLI run (in process)``: ``voicebudget run -n N`` through the CLI (argument parsing, loading,
  every variant simulated and judged, the tables rendered), vs every variant's variates. Target:
  ratio <= 2.0 at 2,000,000 turns (issue 13, item 8);
- ``CLI run (new process)``: the same command as a subprocess, so Python's start-up and the imports
  count too (reported, no target).

Times are CPU time (user + system), the best of ``--repeat`` rounds, each round timing every item in
turn: the machine this was written on is shared, and CPU time does not count waiting for a core.

Usage: ``python benchmarks/bench_simulate.py [--turns N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

import voicebudget as vb
import voicebudget._algebra as algebra
from voicebudget.cli import app

TARGET = 2.0
"""The whole in-process CLI run at 2M turns over the draw floor of every variant (issue 13, item 8)."""


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


def cpu_seconds(fn: Callable[[], object]) -> float:
    """CPU time (user + system) of one call, seconds: on a shared machine, waiting for a core does
    not count (numpy runs single-threaded here, so on a quiet machine it equals the wall time)."""
    start = time.process_time()
    fn()
    return time.process_time() - start


def child_cpu_seconds(cmd: list[str]) -> float:
    """CPU time (user + system) of a subprocess, seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def interleaved_best(repeat: int, timers: dict[str, Callable[[], float]]) -> dict[str, float]:
    """The best of ``repeat`` measurements of each timer, taken in turns (so a change in the machine's
    load touches every timing alike)."""
    best = dict.fromkeys(timers, float("inf"))
    for _ in range(repeat):
        for key, timer in timers.items():
            best[key] = min(best[key], timer())
    return best


def cli_run(n: int) -> None:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        app(["run", "-n", str(n)], standalone_mode=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    path = Path(str(resources.files("voicebudget") / "data" / "webrtc-cascade.toml"))
    scenario = vb.load_scenario(path)
    n = args.turns
    pipeline = scenario.pipeline

    with counting_streams() as c:
        vb.evaluate(pipeline.to_tree(), 1000, 1)
        per_turn_baseline = c.drawn / 1000
    with counting_streams() as c:
        vb.simulate(scenario, samples=1000, seed=1)
        per_turn_run = c.drawn / 1000

    def floor(per_turn: float) -> Callable[[], None]:
        rng = np.random.default_rng(1)
        whole, frac = divmod(per_turn, 1.0)

        def draw() -> None:
            for _ in range(int(whole)):
                rng.standard_normal(n)
            rng.standard_normal(round(frac * n))

        return draw

    exe = str(Path(sys.executable).with_name("voicebudget"))
    t = interleaved_best(
        args.repeat,
        {
            "floor_base": lambda: cpu_seconds(floor(per_turn_baseline)),
            "floor_run": lambda: cpu_seconds(floor(per_turn_run)),
            "sim": lambda: cpu_seconds(lambda: vb.evaluate(pipeline.to_tree(), n, 1)),
            "full": lambda: cpu_seconds(lambda: vb.simulate_pipeline(pipeline, scenario.budget, samples=n, seed=1)),
            "cli": lambda: cpu_seconds(lambda: cli_run(n)),
            "proc": lambda: child_cpu_seconds([exe, "run", "-n", str(n)]),
        },
    )
    print(
        f"turns: {n:,}; variates per turn: baseline {per_turn_baseline:g}, all variants {per_turn_run:g}; "
        f"CPU time, best of {args.repeat}"
    )
    print(f"numpy draw floor, baseline    : {t['floor_base'] * 1e3:8.1f} ms")
    print(f"numpy draw floor, all variants: {t['floor_run'] * 1e3:8.1f} ms")
    print(f"simulation (evaluate)         : {t['sim'] * 1e3:8.1f} ms   ratio {t['sim'] / t['floor_base']:.2f}")
    print(f"simulation + report           : {t['full'] * 1e3:8.1f} ms   ratio {t['full'] / t['floor_base']:.2f}")
    print(
        f"CLI run (in process)          : {t['cli'] * 1e3:8.1f} ms   ratio {t['cli'] / t['floor_run']:.2f}"
        f"  (target <= {TARGET:.1f})"
    )
    print(
        f"CLI run (new process)         : {t['proc'] * 1e3:8.1f} ms   ratio {t['proc'] / t['floor_run']:.2f}"
        "  (no target: start-up and imports)"
    )

    ratio = t["cli"] / t["floor_run"]
    verdict = ("met" if ratio <= TARGET else "NOT met") if n == 2_000_000 else "the target is stated at 2,000,000 turns"
    print(
        f"target (issue 13, item 8): CLI run in process <= {TARGET:.1f}x the draw floor at 2,000,000 turns: "
        f"{ratio:.2f}x, {verdict}"
    )


if __name__ == "__main__":
    main()
