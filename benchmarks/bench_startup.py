"""Start-up of the command line as a new process vs its floors (issue 24, the start-up rows).

Each row times one ``voicebudget`` command as a fresh process against a floor process, in one run, in
turns (so a change in the machine's load touches both alike), and prints the ratio of their CPU times
(user + system of the finished child; waiting for a core does not count), its target and the load
average at that moment:

- ``voicebudget --help`` and ``run --help``: <= 1.5x ``python -c "import numpy, pydantic, rich, typer"``;
- ``voicebudget models`` and ``infer -m llama-3.1-8b -H h100-sxm``: <= 2x the same floor;
- ``voicebudget run`` (the bundled default scenario, 200,000 turns, every variant): <= 2x a numpy process
  drawing the same arrays (as many standard normals as the run draws variates, counted in process by
  wrapping each stage's random stream, as ``bench_simulate.py`` does).

Each figure is the best of ``--repeat`` rounds. Every process runs this checkout (``python -m voicebudget``
with the checkout first on ``PYTHONPATH``, not the ``voicebudget`` script of whatever is installed), from
bytecode written before timing (``compileall`` of the checkout, then a warm-up round with
``PYTHONDONTWRITEBYTECODE`` unset for the libraries): an installed package has its ``.pyc`` files, and
compiling ~70 modules from source would add ~0.1 s to every command. The output says so on its first line.

Usage: ``python benchmarks/bench_startup.py [--repeat R] [--only NAME]``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from _bench import checkout_env, child_cpu_seconds, compile_checkout, load, voicebudget_cmd

IMPORT_FLOOR = "import numpy, pydantic, rich, typer"
"""The floor of the start-up rows: the libraries every command may need, imported and nothing else."""
RUN_TURNS = 200_000
"""The bundled scenario's own ``samples``: ``voicebudget run`` with no argument simulates this many turns."""


@dataclass(frozen=True)
class Row:
    """One command timed against one floor process."""

    name: str
    command: list[str]
    floor: list[str]
    target: float


def variates_per_turn() -> float:
    """Random variates ``voicebudget run`` draws per turn over every variant of the default scenario."""
    import numpy as np

    import voicebudget as vb
    import voicebudget._algebra as algebra

    drawn = 0

    class Counting:
        def __init__(self, rng: np.random.Generator) -> None:
            self._rng = rng

        def __getattr__(self, name: str) -> Any:
            method = getattr(self._rng, name)

            def counted(*args: Any, **kwargs: Any) -> Any:
                nonlocal drawn
                out = method(*args, **kwargs)
                drawn += int(np.size(out))
                return out

            return counted

    @contextlib.contextmanager
    def counting() -> Iterator[None]:
        real = algebra.stage_rng
        algebra.stage_rng = lambda seed, name: Counting(real(seed, name))  # type: ignore[assignment,return-value]
        try:
            yield
        finally:
            algebra.stage_rng = real

    path = Path(str(resources.files("voicebudget") / "data" / "webrtc-cascade.toml"))
    scenario = vb.load_scenario(path)
    with counting():
        vb.simulate(scenario, samples=1000, seed=1)
    return drawn / 1000


def rows() -> list[Row]:
    floor = [sys.executable, "-c", IMPORT_FLOOR]
    per_turn = variates_per_turn()
    whole, frac = divmod(per_turn, 1.0)
    draw = (
        "import numpy as np\n"
        "rng = np.random.default_rng(1)\n"
        f"for _ in range({int(whole)}):\n"
        f"    rng.standard_normal({RUN_TURNS})\n"
        f"rng.standard_normal({round(frac * RUN_TURNS)})\n"
    )
    return [
        Row("voicebudget --help", voicebudget_cmd("--help"), floor, 1.5),
        Row("voicebudget run --help", voicebudget_cmd("run", "--help"), floor, 1.5),
        Row("voicebudget models", voicebudget_cmd("models"), floor, 2.0),
        Row("voicebudget infer", voicebudget_cmd("infer", "-m", "llama-3.1-8b", "-H", "h100-sxm"), floor, 2.0),
        Row(f"voicebudget run ({RUN_TURNS:,} turns)", voicebudget_cmd("run"), [sys.executable, "-c", draw], 2.0),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7, help="interleaved rounds; the best of them is kept")
    parser.add_argument("--only", default="", help="time only the rows whose name contains this")
    args = parser.parse_args()
    selected = [r for r in rows() if args.only in r.name]
    bytecode = compile_checkout()
    env = checkout_env()
    writing = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for row in selected:  # warm-up: write the bytecode an installed package would have
        child_cpu_seconds(row.command, writing)
        child_cpu_seconds(row.floor, writing)
    print(f"CPU time (user + system) of a new process, best of {args.repeat} interleaved rounds; {bytecode}")
    met = 0
    for row in selected:
        best_a = best_b = float("inf")
        for _ in range(args.repeat):
            best_a = min(best_a, child_cpu_seconds(row.command, env))
            best_b = min(best_b, child_cpu_seconds(row.floor, env))
        ratio = best_a / best_b
        met += ratio <= row.target
        print(
            f"{row.name:<34} {best_a * 1e3:7.1f} ms vs floor {best_b * 1e3:6.1f} ms: {ratio:4.2f}x "
            f"(target <= {row.target:.1f}x, {'met' if ratio <= row.target else 'NOT met'}; {load()})"
        )
    print(f"{met} of {len(selected)} targets met")


if __name__ == "__main__":
    main()
