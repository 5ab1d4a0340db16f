"""What every benchmark shares: the checkout it measures, CPU timing, the load average, the verdict line.

Importing this module puts the checkout this file belongs to first on ``sys.path``, so ``python
benchmarks/bench_x.py`` measures the code next to it, never an installed (or editable) copy elsewhere;
:func:`checkout_env` does the same for child processes. A benchmark prints each figure as a ratio to
its floor, next to its target and the load average at that moment (the machine is shared: CPU time of
the measured process, never wall time, unless scaling over cores is what is measured).
"""

from __future__ import annotations

import compileall
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The checkout these benchmarks belong to (and measure)."""
if sys.path[:1] != [str(ROOT)]:
    sys.path.insert(0, str(ROOT))


def load() -> str:
    """The 1/5/15-minute load averages and the cores they share, e.g. ``load 3.21 2.90 2.75 on 2 cores``."""
    return f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores"


def verdict(name: str, ratio: float, target: float, *, at_least: bool = False, unit: str = "x") -> str:
    """One result line: ``name: 1.31x (target <= 1.5x: met; load ...)``; ``at_least`` for a floor target."""
    met = ratio >= target if at_least else ratio <= target
    sign = ">=" if at_least else "<="
    return f"{name}: {ratio:.2f}{unit} (target {sign} {target:g}{unit}: {'met' if met else 'NOT met'}; {load()})"


def cpu_seconds(fn: Callable[[], object]) -> float:
    """CPU time (user + system) of one call in this process, seconds (waiting for a core does not count)."""
    start = time.process_time()
    fn()
    return time.process_time() - start


def child_cpu_seconds(cmd: list[str], env: dict[str, str] | None = None) -> float:
    """CPU time (user + system) of one run of ``cmd`` as a child process, seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def interleaved_best(repeat: int, timers: dict[str, Callable[[], float]]) -> dict[str, float]:
    """The best of ``repeat`` measurements of each timer, taken in turns (a change in the machine's load
    touches every timing alike)."""
    best = dict.fromkeys(timers, float("inf"))
    for _ in range(repeat):
        for key, timer in timers.items():
            best[key] = min(best[key], timer())
    return best


def checkout_env() -> dict[str, str]:
    """The environment for a child process that runs this checkout's ``voicebudget`` (``PYTHONPATH`` first)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def voicebudget_cmd(*args: str) -> list[str]:
    """``voicebudget ARGS`` as a new process of this checkout (with :func:`checkout_env`)."""
    return [sys.executable, "-m", "voicebudget", *args]


def compile_checkout() -> str:
    """Write the checkout's bytecode (an installed package has its ``.pyc`` files; compiling from source
    would add ~0.1 s to every new process) and say so, for the benchmark's output."""
    compileall.compile_dir(ROOT / "voicebudget", quiet=2)
    return f"bytecode: precompiled (compileall of {ROOT / 'voicebudget'}), read by every timed process"
