"""The memory guard: refuse a run whose samples would not fit, before drawing them; and the work guard
(:func:`check_work`): refuse a run that would draw more stage samples than :data:`MAX_STAGE_SAMPLES`.

A run keeps ``float64[n_turns]`` arrays for every leaf of the pipeline (in buffers it reuses for every
variant), every part of a council stage (its members), every mixture component drawn and every variant's
total, plus the temporaries of whichever step is running; which arrays and how many depends on every stage kind.
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
from dataclasses import dataclass
from pathlib import Path

from voicebudget._errors import ScenarioError

__all__ = [
    "GUARD_FROM_TURNS",
    "MemoryLimit",
    "PROBE_TURNS",
    "QUICK_TURNS",
    "MAX_STAGE_SAMPLES",
    "available_bytes",
    "check_memory",
    "check_work",
    "estimate_peak_bytes",
    "measure_peak_bytes",
    "memory_limit",
    "memory_limits",
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


MAX_STAGE_SAMPLES = 1_000_000_000
"""Most stage samples (turns x stage nodes, summed over what one run evaluates: variants, load levels,
configurations) a run may draw. The engine draws and combines 25 to 55 million stage samples per CPU
second (measured on a 2-core machine, a scenario of 501 one-stage variants and
scenarios/webrtc-cascade.toml at 100,000 and 1,000,000 turns), so this is about 20 to 40 s of CPU. Memory
does not bound it: variants run one after the other, so 5,000 variants of one stage at the default 200,000
turns (a 394 KB file: 10^9 stage samples) took 112 s and 8 GB and was not refused."""


def _count(n: int) -> str:
    """``n`` with thousands separators, or ``1.2e+21`` when long (``10^400`` beyond the float range)."""
    if n < 10**15:
        return f"{n:,}"
    digits = len(str(n))
    return f"{n // 10 ** (digits - 3) / 100:.3g}e+{digits - 1}" if digits > 300 else f"{float(n):.3g}"


def check_work(samples: int, nodes: int, *, what: str, fewer: str = "") -> None:
    """Refuse a run of more than :data:`MAX_STAGE_SAMPLES` stage samples before any sampling (and before the
    memory guard, whose probes run the computation), with the estimate.

    :param samples: turns requested per evaluation.
    :param nodes: stage nodes evaluated per turn, summed over the run's evaluations (every node of every
        variant's tree; x the load levels or configurations evaluated).
    :param what: what ``nodes`` counts, for the message (``"5,001 variants of 1 stage"``).
    :param fewer: what else could be fewer, for the message (``"variants"``).
    :raises ScenarioError: (``field = "samples"``) the message gives the estimate and the most turns that
        fit.
    """
    total = samples * max(nodes, 1)  # Python ints: no overflow, whatever samples is
    if total <= MAX_STAGE_SAMPLES:
        return
    fit = MAX_STAGE_SAMPLES // max(nodes, 1)
    advice = f"at most {fit:,} turns fit" + (f", or ask for fewer {fewer}" if fewer else "")
    if fit == 0:
        advice = f"not even one turn fits: ask for fewer {fewer or 'stages'}"
    raise ScenarioError(
        f"{_count(samples)} turns x {what} = {_count(total)} stage samples, over the limit of "
        f"{MAX_STAGE_SAMPLES:,} (about 20 to 40 s of CPU); {advice}",
        field="samples",
    )


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


CGROUP_ROOT = Path("/sys/fs/cgroup")
"""Where the cgroup file systems are mounted (v2 unified, or v1 with a ``memory`` controller folder)."""
PROC_SELF = Path("/proc/self")
"""This process's ``/proc`` folder (``cgroup``: which cgroup it is in; ``status``: its ``VmSize``/``VmData``)."""
HARD_LIMIT_SHARE = 0.9
"""Share of a hard limit's headroom (``ulimit -v``/``-d``, a cgroup's ``memory.max``) the guard lets a run
use: the rest is for what :mod:`tracemalloc` does not see (the interpreter, libraries, thread stacks)."""
_NO_LIMIT = 2**62  # cgroup v1 writes "no limit" as 9223372036854771712


@dataclass(frozen=True)
class MemoryLimit:
    """One limit on the memory this process may still take.

    :ivar bytes: what the guard may use under it now, bytes.
    :ivar what: the limit in words, for messages (``"half of this machine's memory"``).
    """

    bytes: int
    what: str


def memory_limits(*, cgroup_root: Path | None = None, proc_self: Path | None = None) -> list[MemoryLimit]:
    """Every limit on this process's memory with what it leaves now: half of the machine's physical memory
    (it is shared), the address-space and data-segment limits (``ulimit -v``, ``ulimit -d``) less what the
    process has mapped, and the cgroup limits of its container (v2 ``memory.max`` less ``memory.current``, v1
    ``memory.limit_in_bytes`` less ``memory.usage_in_bytes``, on its cgroup and every parent), each hard
    limit's headroom taken at :data:`HARD_LIMIT_SHARE`.

    :param cgroup_root: default :data:`CGROUP_ROOT` (tests give a folder of fake cgroup files).
    :param proc_self: default :data:`PROC_SELF` (its ``cgroup`` and ``status`` files).
    :returns: the limits found (empty where none can be read: not POSIX).
    """
    root = CGROUP_ROOT if cgroup_root is None else cgroup_root
    proc = PROC_SELF if proc_self is None else proc_self
    found: list[MemoryLimit] = []
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        found.append(MemoryLimit(physical // 2, "half of this machine's memory"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        pass
    status = _read(proc / "status")
    for name, option, field in (("RLIMIT_AS", "ulimit -v", "VmSize"), ("RLIMIT_DATA", "ulimit -d", "VmData")):
        limit = _rlimit(name)
        if limit is not None:
            used = _status_kib(status, field) * 1024
            what = f"the process's {option} limit ({limit / 2**20:,.0f} MiB, {used / 2**20:,.0f} MiB in use)"
            found.append(MemoryLimit(int(max(0, limit - used) * HARD_LIMIT_SHARE), what))
    for folder, limit_file, usage_file in _cgroup_folders(root, _read(proc / "cgroup")):
        limit_text = _read(folder / limit_file).strip()
        if not limit_text.isdigit() or int(limit_text) >= _NO_LIMIT:
            continue  # "max", missing, or v1's "no limit"
        limit, used = int(limit_text), _int(_read(folder / usage_file))
        what = f"the container's memory limit ({limit_file} {limit / 2**20:,.0f} MiB, {used / 2**20:,.0f} MiB in use)"
        found.append(MemoryLimit(int(max(0, limit - used) * HARD_LIMIT_SHARE), what))
    return found


def _cgroup_folders(root: Path, proc_cgroup: str) -> list[tuple[Path, str, str]]:
    """The cgroup folders whose memory limits apply to this process, innermost first: (folder, limit file,
    usage file). A path ``/proc/self/cgroup`` names that this mount namespace does not show (a container
    sees its own cgroup as the root) falls back to the mount's root."""
    out: list[tuple[Path, str, str]] = []
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, rel = parts
        if controllers == "":
            bases, files = [root, root / "unified"], ("memory.max", "memory.current")
        elif "memory" in controllers.split(","):
            bases, files = [root / "memory"], ("memory.limit_in_bytes", "memory.usage_in_bytes")
        else:
            continue
        for base in bases:
            if not (base / files[0]).exists() and not base.is_dir():
                continue
            folder = base / rel.lstrip("/")
            if not folder.is_dir():
                folder = base
            while True:
                out.append((folder, *files))
                if folder == base or base not in folder.parents:
                    break
                folder = folder.parent
    return out


def _rlimit(name: str) -> int | None:
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return None
    soft = resource.getrlimit(getattr(resource, name))[0]
    return None if soft == resource.RLIM_INFINITY or soft < 0 else int(soft)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return ""


def _int(text: str) -> int:
    text = text.strip()
    return int(text) if text.isdigit() else 0


def _status_kib(status: str, field: str) -> int:
    for line in status.splitlines():
        if line.startswith(field + ":"):
            return _int(line.split(":", 1)[1].replace("kB", ""))
    return 0


def _describe(have: int) -> str:
    """The words of the limit that leaves ``have`` bytes (what is in use moves by a few MiB between looks)."""
    lowest = memory_limit()
    if lowest is not None and abs(lowest.bytes - have) <= max(64 * 2**20, 0.05 * have):
        return lowest.what
    return "the memory this process may use"


def memory_limit() -> MemoryLimit | None:
    """The lowest of :func:`memory_limits` (None when none can be read)."""
    limits = memory_limits()
    return min(limits, key=lambda m: m.bytes) if limits else None


def available_bytes() -> int | None:
    """What the guard lets a run use now, bytes: the lowest of :func:`memory_limits` (None where none can
    be read)."""
    lowest = memory_limit()
    return None if lowest is None else lowest.bytes


def check_memory(samples: int, run: Callable[[int], object], *, what: str = "the run", copies: int = 1) -> None:
    """Refuse ``samples`` turns when :func:`estimate_peak_bytes` exceeds :func:`available_bytes` (the lowest
    of the machine's memory, ``ulimit -v``/``-d`` and the container's cgroup limit; the message names it).

    :param samples: turns requested; below :data:`GUARD_FROM_TURNS` nothing is probed. A first look
        at :data:`QUICK_TURNS` turns settles most runs (3x its bytes per turn fit); the others are
        estimated at :data:`PROBE_TURNS`.
    :param run: the computation at a given number of turns (see :func:`estimate_peak_bytes`).
    :param what: what is being run, for the message.
    :param copies: how many copies of the computation run at once (worker processes).
    :raises ScenarioError: (``field = "samples"``) too many turns; the message gives the estimate and
        the largest number of turns that fits.
    """
    have = available_bytes()
    if have is None or samples < GUARD_FROM_TURNS * min(1.0, have / 2**30):  # pragma: no branch
        return  # a small run: more than 1 GiB would take ~1,300 arrays per turn (scaled to a smaller limit)
    where = _describe(have)
    quick = measure_peak_bytes(run, QUICK_TURNS) / QUICK_TURNS  # a first call: intercept included
    if 3 * copies * quick * samples <= have:
        return
    small, large = PROBE_TURNS
    if samples <= large:  # below the probe sizes: the quick look's bytes per turn (intercept included)
        need = copies * quick * samples
        if need > have:
            raise ScenarioError(
                f"{samples:,} turns: {what} needs ~{need / 2**20:,.0f} MiB ({copies * quick:,.0f} bytes per turn, "
                f"measured at {QUICK_TURNS:,} turns); at most {int(have / (copies * quick)):,} turns fit in {where}",
                field="samples",
            )
        return
    at_large, per_turn = _line(run, PROBE_TURNS)
    per_turn = max(per_turn, 1e-9)
    need = copies * (at_large + per_turn * (samples - large))
    if need > have:
        fits = int((have / copies - at_large) / per_turn + large)
        raise ScenarioError(
            f"{samples:,} turns: {what} needs ~{need / 2**30:.1f} GiB ({copies * per_turn:,.0f} bytes per turn, "
            f"measured at {small:,} and {large:,} turns); at most {max(fits, 0):,} turns fit in {where} "
            "(Monte Carlo error is already ~0.02 percentage points at 1,000,000 turns)",
            field="samples",
        )
