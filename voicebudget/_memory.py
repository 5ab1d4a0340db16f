"""The memory guard: refuse a run whose samples would not fit, before drawing them.

A run keeps ``float64[n_turns]`` arrays for every node of the pipeline, every part of a council stage
(its members), every mixture component drawn, the report's copies and every variant's total, plus
the temporaries of whichever step is running; which arrays and how many depends on every stage kind.
Rather than a formula per kind (the first guard counted combinator nodes only and missed a 16-member
council by 6x), the guard *measures*: it runs the same computation under :mod:`tracemalloc` (numpy
reports its array buffers to it), first at :data:`QUICK_TURNS` turns (enough to clear most runs), then
when that is not conclusive at the two :data:`PROBE_TURNS` sizes, and extends the line through their
peaks to the requested number of turns. Memory is linear in turns: every array is ``float64[n]``, ``bool[n]`` or
an index per turn, or a share of ``n`` (the tail turns); the rest (pydantic models, empirical data)
does not grow with ``n`` and is the intercept.

``tests/test_memory.py`` compares the estimate with the measured peak of every bundled scenario and
council at 200,000 turns (within 25%).
"""

from __future__ import annotations

import gc
import os
import tracemalloc
from collections.abc import Callable

from voicebudget._errors import ScenarioError

__all__ = [
    "GUARD_FROM_TURNS",
    "PROBE_TURNS",
    "QUICK_TURNS",
    "available_bytes",
    "check_memory",
    "estimate_peak_bytes",
    "measure_peak_bytes",
]

PROBE_TURNS = (34_000, 68_000)
"""The two sizes the estimate measures at; it is the line through their peaks. Both are above
numpy's 256 KiB temporary-elision threshold (32,768 float64): below it, the peak per turn of the same
run is up to 30% lower than at a million turns (measured: 290 vs 417 bytes per turn)."""

QUICK_TURNS = 2_000
"""The size of the first, cheap look: when even 3x its peak per turn fits, nothing more is measured."""

GUARD_FROM_TURNS = 100_000
"""Runs with fewer turns are not probed (at 8 bytes a value, exceeding even 1 GiB at 100,000 turns
takes ~1,300 arrays per turn, e.g. a council of ~600 members)."""


def measure_peak_bytes(run: Callable[[int], object], n: int) -> int:
    """Peak of the memory traced while ``run(n)`` runs, above what was traced before it, bytes.

    Starts :mod:`tracemalloc` for the call and stops it after; when it was already tracing, its peak
    is reset (the caller's earlier peak reading is lost).
    """
    gc.collect(1)  # young garbage of an earlier run, freed during this one, would lower the peak seen
    tracing = tracemalloc.is_tracing()
    if tracing:
        tracemalloc.reset_peak()
    else:
        tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        run(n)
        return max(0, tracemalloc.get_traced_memory()[1] - before)
    finally:
        if not tracing:
            tracemalloc.stop()


def estimate_peak_bytes(run: Callable[[int], object], samples: int, probe: tuple[int, int] = PROBE_TURNS) -> float:
    """Peak memory ``run(samples)`` will need, bytes: the line through the peaks measured at the two
    ``probe`` sizes (:func:`measure_peak_bytes`), evaluated at ``samples``.

    :param run: the computation, given a number of turns (the same seed at every size).
    :param samples: the number of turns to estimate for.
    :raises: whatever ``run`` raises at the probe sizes (an invalid model fails there already).
    """
    at_large, per_turn = _line(run, probe)
    return at_large + per_turn * (samples - probe[1])


def _line(run: Callable[[int], object], probe: tuple[int, int]) -> tuple[int, float]:
    """The peak at the larger probe size, and bytes per turn between the two sizes."""
    small, large = probe
    run(small)  # once unmeasured: one-time work of a first call (lazy imports, caches) is not per turn
    at_small, at_large = measure_peak_bytes(run, small), measure_peak_bytes(run, large)
    return at_large, max(0.0, (at_large - at_small) / (large - small))


def available_bytes() -> int | None:
    """Half of this machine's physical memory, bytes (None where POSIX ``sysconf`` cannot say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return None


def check_memory(samples: int, run: Callable[[int], object], *, what: str = "the run", copies: int = 1) -> None:
    """Refuse ``samples`` turns when :func:`estimate_peak_bytes` exceeds half of physical memory.

    :param samples: turns requested; below :data:`GUARD_FROM_TURNS` nothing is probed. A first look
        at :data:`QUICK_TURNS` turns settles most runs (3x its bytes per turn fit); the others are
        estimated at :data:`PROBE_TURNS`.
    :param run: the computation at a given number of turns (see :func:`estimate_peak_bytes`).
    :param what: what is being run, for the message.
    :param copies: how many copies of the computation run at once (worker processes).
    :raises ScenarioError: (``field = "samples"``) too many turns; the message gives the estimate and
        the largest number of turns that fits.
    """
    if samples < GUARD_FROM_TURNS:
        return
    have = available_bytes()
    if have is None:  # pragma: no cover - not POSIX
        return
    quick = measure_peak_bytes(run, QUICK_TURNS) / QUICK_TURNS  # a first call: intercept included
    if 3 * copies * quick * samples <= have:
        return
    small, large = PROBE_TURNS
    at_large, per_turn = _line(run, PROBE_TURNS)
    per_turn = max(per_turn, 1e-9)
    need = copies * (at_large + per_turn * (samples - large))
    if need > have:
        fits = int((have / copies - at_large) / per_turn + large)
        raise ScenarioError(
            f"{samples:,} turns: {what} needs ~{need / 2**30:.1f} GiB ({copies * per_turn:,.0f} bytes per turn, "
            f"measured at {small:,} and {large:,} turns); at most {max(fits, 0):,} turns fit in half of this "
            "machine's memory (Monte Carlo error is already ~0.02 percentage points at 1,000,000 turns)",
            field="samples",
        )
