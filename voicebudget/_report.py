"""Reports: percentiles, share within budget, slack and tail attribution.

One :class:`Report` type serves simulations, turns measured by the checker and imported traces.
Percentiles are computed on per-turn samples (never by adding stage percentiles: p95 of a sum is not
the sum of p95s), with numpy's default linear interpolation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from voicebudget._budget import MAX_LATENCY_MS, Budget
from voicebudget._errors import BudgetExceeded, ModelError, ScenarioError
from voicebudget._text import as_given, count

__all__ = ["LatencyStats", "Report", "StagePart", "StageReport", "build_report"]

FloatArray = NDArray[np.float64]
_QS = (50.0, 90.0, 95.0, 99.0)


def percentiles(samples_ms: FloatArray, qs: list[float], *, work: FloatArray | None = None) -> FloatArray:
    """Percentiles with numpy's default (linear) interpolation, by selection: O(n), no sort.

    Bit-for-bit the values of ``numpy.percentile(samples_ms, qs)`` (same virtual index, same
    interpolation, numpy's ``_lerp``). The floor rank of each percentile is found by a chain of
    single-rank partitions of a copy, each on the part beyond the previous rank (numpy's single-``kth``
    ``partition`` is a SIMD introselect), and the next rank is the minimum of what lies beyond: about
    0.4x the time of one ``np.sort`` and 0.2x numpy's multi-``kth`` partition on 2,000,000 samples.
    Samples where one value fills 1/8 or more (a stage that is 0 ms in most turns) are sorted instead:
    the introselect slows down 10-20x when a rank falls in such a block of ties, the sort speeds up; so are
    samples of fewer than 4,096 values (2 x the atom probe's size: sorting them costs what the probe does).

    :param samples_ms: ``float64[n]``, n >= 1, no NaN.
    :param qs: percentiles in [0, 100].
    :param work: ``float64[n]`` scratch to select in, overwritten (it may be ``samples_ms`` itself,
        which is then reordered in place); default a fresh copy. A report summarising many arrays
        passes one buffer for all of them: a fresh 16 MB copy per array costs as much again in page
        faults as the copying.
    :returns: ``float64[len(qs)]``.
    """
    a = np.asarray(samples_ms, dtype=np.float64)
    n = a.size
    pos = np.asarray(qs, dtype=np.float64) / 100.0 * (n - 1)
    lo = np.floor(pos).astype(np.intp)
    if work is None:
        work = a.copy()
    elif work is not a:
        np.copyto(work, a)
    lower, upper = _order_statistics(work, lo)
    return _lerp(lower, upper, pos - lo)


def _order_statistics(work: FloatArray, lo: NDArray[np.intp]) -> tuple[FloatArray, FloatArray]:
    """The values at ranks ``lo`` and ``lo + 1`` (at most ``n - 1``) of ``work`` in sorted order (0-based),
    by the selections :func:`percentiles` describes; ``work`` is reordered.

    :returns: ``(float64[len(lo)], float64[len(lo)])``.
    """
    n = work.size
    # numpy's introselect slows down 10-20x when the rank falls in a block of ties (a stage that is 0 ms in 90%
    # of turns), its sort does not; and below 2 x _PROBE values the probe is the whole sample: as well sort it
    if n < 2 * _PROBE or _has_large_atom(work):
        work.sort()
        return work[lo], work[np.minimum(lo + 1, n - 1)]
    start = 0
    upper = np.empty(lo.shape)
    for rank in sorted(set(lo.tolist())):  # not np.unique: its first call imports numpy.ma (~14 ms)
        work[start:].partition(rank - start)  # in place: the ranks before ``start`` stay in their places
        start = rank + 1
        # the next order statistic is the smallest value after ``rank``: a reduction, not another partition
        upper[lo == rank] = np.min(work[start:]) if start < n else work[rank]
    return work[lo], upper


def percentile_from_top(samples_ms: FloatArray, q: float) -> float:
    """``numpy.percentile(samples_ms, q)`` (bit for bit, as :func:`percentiles`) for a high ``q`` without a
    copy of the samples: the selection runs among the values at or above a threshold read off a strided
    subsample (about 1.3 x the share beyond ``q``), all of which rank above the rest. A report finds its
    tail with it before any scratch buffer is free. When fewer values than the ranks from the percentile's
    up pass the threshold (a subsample far from the whole), or ``q`` is below 75, it selects in a copy. Below
    4,096 values the subsample is the whole sample, sorted, and the ranks are read off it.

    :param samples_ms: ``float64[n]``, n >= 1, no NaN; not modified.
    :param q: a percentile in [0, 100].
    """
    a = np.asarray(samples_ms, dtype=np.float64)
    n = a.size
    pos = np.asarray([q], dtype=np.float64) / 100.0 * (n - 1)
    lo = np.floor(pos).astype(np.intp)
    need = n - int(lo[0])  # the values at ranks lo .. n - 1
    probe = np.sort(a[:: max(1, n // _PROBE)])
    if probe.size == n:  # below 2 x _PROBE values the probe is the whole sample, sorted: read the ranks off it
        return float(_lerp(probe[lo], probe[np.minimum(lo + 1, n - 1)], pos - lo)[0])
    share = float(lo[0]) / max(n - 1, 1)
    # the subsample's rank of the percentile, less 4 standard deviations of its binomial count and 2
    j = int(share * (probe.size - 1) - 4 * math.sqrt(probe.size * share * (1 - share)) - 2)
    if j > 0 and 4 * need < n:
        top = a[a >= probe[j]]  # the ``top.size`` largest values: every one >= the threshold, ties included
        if top.size >= need:
            lower, upper = _order_statistics(top, lo - (n - top.size))
            return float(_lerp(lower, upper, pos - lo)[0])
    return float(percentiles(a, [q])[0])


_PROBE = 2048


def _has_large_atom(a: FloatArray) -> bool:
    """True when one value looks like >= 1/8 of the samples, judged on an evenly strided subsample of
    at most :data:`_PROBE` values (deterministic; a choice of algorithm only, both are exact)."""
    probe = np.sort(a[:: max(1, a.size // _PROBE)])
    if probe.size < 16:
        return False
    run = probe.size // 8
    return bool(np.any(probe[run:] == probe[:-run]))


def _lerp(a: FloatArray, b: FloatArray, t: FloatArray) -> FloatArray:
    """numpy's linear interpolation (``numpy.lib._function_base_impl._lerp``): from the upper end when
    ``t >= 0.5``, which is what makes ``percentile`` monotonic in floating point."""
    diff = b - a
    out = a + diff * t
    np.subtract(b, diff * (1 - t), out=out, where=t >= 0.5)
    return out


@dataclass(frozen=True)
class LatencyStats:
    """Summary of ``float64[n_turns]`` latencies, ms."""

    mean_ms: float
    p50_ms: float
    p90_ms: float
    p95_ms: float
    p99_ms: float
    at_percentile_ms: float
    """The value at the budget's target percentile."""

    @classmethod
    def of(cls, samples_ms: FloatArray, percentile: float, *, work: FloatArray | None = None) -> LatencyStats:
        """Summarise samples; NaN-free input expected.

        :param samples_ms: ``float64[n]``, ms, n >= 1.
        :param percentile: the budget's target percentile (0, 100].
        :param work: ``float64[n]`` scratch for :func:`percentiles` (overwritten), default a fresh copy.
        """
        mean = float(np.mean(samples_ms))  # before ``work`` (which may be ``samples_ms``) is reordered
        q = percentiles(samples_ms, [*_QS, percentile], work=work)
        return cls(mean, *(float(x) for x in q))

    def to_dict(self) -> dict[str, float]:
        return {
            "mean_ms": self.mean_ms,
            "p50_ms": self.p50_ms,
            "p90_ms": self.p90_ms,
            "p95_ms": self.p95_ms,
            "p99_ms": self.p99_ms,
        }


@dataclass(frozen=True)
class StagePart:
    """A part of a stage (a council member) in the tail: its mean contribution to the voice-to-voice
    latency over the tail turns, ms, and that as a share of those turns' mean total."""

    name: str
    tail_ms: float
    tail_share: float

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "tail_ms": self.tail_ms, "tail_share": self.tail_share}


@dataclass(frozen=True)
class StageReport:
    """One stage in a report.

    :ivar stats: the stage's own latency distribution.
    :ivar tail_ms: mean contribution to the total over the tail turns (total >= target percentile).
    :ivar tail_share: ``tail_ms`` / mean total over the tail turns; the shares of all stages sum to 1
        when contributions follow the critical path (simulation).
    :ivar allocation_ms: this stage's allocation in the budget, if any.
    """

    name: str
    stats: LatencyStats
    tail_ms: float
    tail_share: float
    allocation_ms: float | None = None
    parts: tuple[StagePart, ...] = ()
    """The stage's tail broken down by part (council members), largest first; empty for plain stages."""
    tail_mean_ms: float = float("nan")
    """The stage's own mean duration over the tail turns (where it ran), ms: for a stage running in
    parallel with others it exceeds ``tail_ms``, the part of it on the critical path."""
    tail_se_ms: float = 0.0
    """Standard error of ``tail_ms``, the mean over the tail turns: ``std / sqrt(tail turns)``, ms (0
    with fewer than two tail turns). Two stages whose ``tail_ms`` differ by less than about twice
    their errors drive the tail equally: which one leads could flip with the seed."""

    @property
    def over_allocation(self) -> bool:
        """True when the stage's value at the target percentile exceeds its allocation."""
        return self.allocation_ms is not None and self.stats.at_percentile_ms > self.allocation_ms

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, **self.stats.to_dict()}
        d["tail_ms"] = self.tail_ms
        d["tail_share"] = self.tail_share
        if self.allocation_ms is not None:
            d["allocation_ms"] = self.allocation_ms
        if self.parts:
            d["parts"] = [p.to_dict() for p in self.parts]
        return d


@dataclass(frozen=True)
class Report:
    """The verdict on one variant (or one set of measured turns) against a budget.

    Data, not an exception: call :meth:`raise_for_budget` to turn a failure into
    :class:`~voicebudget.BudgetExceeded`.

    :ivar total_samples_ms: ``float64[n_turns]`` voice-to-voice latency per turn, ms.
    :ivar server_side: the part up to audio leaving the server (what Pipecat/LiveKit report), if known.
    :ivar source: ``"simulation"``, ``"recorder"`` or ``"trace"``.
    """

    name: str
    budget: Budget
    total: LatencyStats
    stages: tuple[StageReport, ...]
    within_budget_share: float
    n_turns: int
    seed: int | None = None
    server_side: LatencyStats | None = None
    source: str = "simulation"
    total_samples_ms: FloatArray = field(default_factory=lambda: np.empty(0), repr=False, compare=False)

    @property
    def slack_ms(self) -> float:
        """Budget minus the total at the target percentile (negative when over)."""
        return self.budget.total_ms - self.total.at_percentile_ms

    @property
    def passed(self) -> bool:
        """Total at the target percentile within budget, and every allocated stage within its allocation."""
        return self.slack_ms >= 0 and not any(s.over_allocation for s in self.stages)

    @property
    def tail_driver(self) -> StageReport | None:
        """The stage with the largest mean contribution to the tail (what to fix first)."""
        return max(self.stages, key=lambda s: s.tail_ms, default=None)

    def stage(self, name: str) -> StageReport:
        """The stage called ``name``.

        :raises KeyError: no such stage (the message lists the known ones).
        """
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(f"no stage {name!r}; stages: {[s.name for s in self.stages]}")

    def summary(self) -> str:
        """One line with the numbers, what failed first: ``p95 912.4 ms > 800.0 ms; tail driver: llm
        (mean 610.2 ms of the slowest 5% of turns)``, or ``llm p95 480.2 ms > allocation 450.0 ms; total
        p95 712.0 ms <= 800.0 ms; ...``. The tail driver's figure is its mean contribution over the turns
        at or beyond the target percentile (it can exceed the percentile's value), not a part of it."""
        label = self.budget.label
        cmp = "<=" if self.slack_ms >= 0 else ">"
        total = f"{label} {self.total.at_percentile_ms:.1f} ms {cmp} {as_given(self.budget.total_ms, 1)} ms"
        driver = self.tail_driver
        if driver is not None:  # a mean over the tail turns, not a part of the percentile: say so
            part = f"; {driver.parts[0].name} {driver.parts[0].tail_ms:.1f} ms" if driver.parts else ""
            total += (
                f"; tail driver: {driver.name} (mean {driver.tail_ms:.1f} ms of the slowest "
                f"{100 - self.budget.percentile:.3g}% of turns{part})"
            )
        over = [
            f"{s.name} {label} {s.stats.at_percentile_ms:.1f} ms > allocation {as_given(s.allocation_ms, 1)} ms"
            for s in self.stages
            if s.over_allocation and s.allocation_ms is not None
        ]
        if over and self.slack_ms >= 0:
            return "; ".join(over) + f"; total {total}"
        return "; ".join([total, *over])

    def raise_for_budget(self) -> Report:
        """Return ``self`` when within budget.

        :raises BudgetExceeded: the total at the target percentile is over budget, or a stage is over
            its allocation; the exception carries this report.
        """
        if not self.passed:
            raise BudgetExceeded(f"{self.name}: {self.summary()}", self)
        return self

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of one variant (the ``variants[]`` entry of ``voicebudget run --format json``)."""
        d: dict[str, Any] = {
            "name": self.name,
            "passed": self.passed,
            "within_budget_share": self.within_budget_share,
            "slack_ms": self.slack_ms,
            "total": self.total.to_dict(),
            "stages": [s.to_dict() for s in self.stages],
            "tail_driver": self.tail_driver.name if self.tail_driver else None,
            "n_turns": self.n_turns,
        }
        if self.server_side is not None:
            d["server_side"] = self.server_side.to_dict()
        return d

    def __repr__(self) -> str:
        verdict = "passed" if self.passed else "FAILED"
        return f"<Report {self.name!r} {verdict}: {self.summary()}; {self.within_budget_share:.1%} within budget>"


Contributions = Callable[[NDArray[np.intp]], Mapping[str, FloatArray]]
PartContributions = Callable[[NDArray[np.intp]], Mapping[str, Mapping[str, FloatArray]]]


def build_report(
    name: str,
    budget: Budget,
    total_ms: FloatArray,
    stages_ms: Mapping[str, FloatArray],
    *,
    contributions: Contributions | None = None,
    seed: int | None = None,
    server_side_ms: FloatArray | None = None,
    source: str = "simulation",
    part_contributions: PartContributions | None = None,
    known_stats: Mapping[str, LatencyStats] | None = None,
    work: FloatArray | None = None,
    origin: str = "",
    stage_fields: Mapping[str, str] | None = None,
    stage_stats: bool = True,
    reorder: Collection[str] = frozenset(),
    server_side_less: str | None = None,
) -> Report:
    """Summarise per-turn latencies against a budget.

    :param name: the variant (or test, or trace) name.
    :param budget: the budget to judge against.
    :param total_ms: ``float64[n_turns]`` voice-to-voice latency, ms; n_turns >= 1, no NaN.
    :param stages_ms: stage name -> ``float64[n_turns]`` ms. NaN marks a turn where the stage did
        not run; its percentiles skip those turns.
    :param contributions: maps tail turn indices to each stage's contribution to the total in those
        turns (the simulator passes its critical-path attribution). Without it, stages are credited in
        proportion to their own durations in the tail turns (right for sequential stages; an
        approximation when measured stages overlap).
    :param seed: the seed the samples came from, recorded in the report.
    :param server_side_ms: ``float64[n_turns]`` server-side latency, ms, if known.
    :param source: ``"simulation"``, ``"recorder"`` or ``"trace"``.
    :param part_contributions: maps tail turn indices to, per stage made of parts (a council), each
        part's contribution in those turns (:meth:`voicebudget.Evaluation.part_contributions`).
    :param known_stats: stage name -> its :class:`LatencyStats` (at ``budget.percentile``) already
        computed from the very same samples, e.g. a stage that two variants share draws identical
        samples under common random numbers; these stages are not summarised again.
    :param work: ``float64[n_turns]`` scratch for the percentile selections (overwritten), default one
        allocated here; a caller reporting on many variants passes one buffer for all of them.
    :param origin: the file the stages come from; errors name it (default: ``name``).
    :param stage_fields: stage name -> its field path in that file (a council's ``members.0.stage``), for
        errors.
    :param stage_stats: False: each stage gets its tail attribution but no percentiles (its
        :class:`LatencyStats` are NaN), for a caller that reads only the total and the tail driver (the
        tuner judges thousands of councils; each stage's percentiles were a third of its fixed cost).
    :param reorder: the stages whose arrays the report may reorder and overwrite (the caller's scratch,
        not needed after the report): their percentiles are selected in place once their tail figures
        are read, and their buffers then serve the selections left (the total's, the server side's), so
        without ``work`` the report needs no ``float64[n_turns]`` of its own.
    :param server_side_less: instead of ``server_side_ms``: the stage whose samples the total less is the
        server-side latency (a voice turn's ``transport``), computed here when a buffer is free.
    :raises ValueError: no turns, arrays of different lengths, or ``server_side_less`` names no stage.
    :raises ModelError: a turn beyond :data:`MAX_LATENCY_MS` or not finite (naming the stages with such
        values, by field path when ``stage_fields`` has them).
    :raises ScenarioError: the budget allocates a stage there is none of.
    """
    total = np.asarray(total_ms, dtype=np.float64)
    _check_samples(total, stages_ms, origin or name, stage_fields)
    _check_stages(budget, stages_ms, total, origin or name)
    if server_side_less is not None and server_side_less not in stages_ms:
        raise ValueError(f"server_side_less: no stage {server_side_less!r}; stages: {list(stages_ms)}")
    pct = budget.percentile
    tail = _Tail.of(total, percentile_from_top(total, pct), stages_ms, contributions, part_contributions)
    tail_means = tail.own_means(stages_ms)
    scratch = _Scratch(total, work)
    known = known_stats or {}
    stats: dict[str, LatencyStats] = {}
    server = None
    for key in sorted(stages_ms, key=lambda k: k == server_side_less):  # that stage last: the server needs it
        arr = np.asarray(stages_ms[key], dtype=np.float64)
        if key == server_side_less:
            server = scratch.summarise(np.subtract(total, arr, out=scratch.take()), pct, own=True)
        if key in known or not stage_stats:
            stats[key] = known.get(key, _NO_STATS)
        else:
            work_here = arr if key in reorder else scratch.take()
            stats[key] = _stage_stats(arr, pct, work_here)
            if work_here is not arr:
                scratch.give(work_here)
        if key in reorder:
            scratch.give(arr)  # summarised: the caller's buffer is free for what is left
    if server_side_ms is not None:
        server = scratch.summarise(np.asarray(server_side_ms, dtype=np.float64), pct)
    allocations = budget.allocations_ms()
    return Report(
        name=name,
        budget=budget,
        total=scratch.summarise(total, pct),
        stages=tail.stages(list(stages_ms), stats, allocations, tail_means),
        within_budget_share=np.count_nonzero(total <= budget.total_ms) / total.size,
        n_turns=int(total.size),
        seed=seed,
        server_side=server,
        source=source,
        total_samples_ms=total,
    )


class _Scratch:
    """Where a report selects percentiles: ``work`` (or a new array) first, then the buffers of the stages it
    may reorder, once they are summarised (``build_report(reorder=...)``), so a run needs no buffer of its
    own for the total and the server-side latency."""

    def __init__(self, total: FloatArray, work: FloatArray | None) -> None:
        self._like = total
        self._free = [] if work is None else [work]

    def take(self) -> FloatArray:
        return self._free.pop() if self._free else np.empty_like(self._like)

    def give(self, buf: FloatArray | None) -> None:
        if buf is not None and buf.shape == self._like.shape and buf.flags.c_contiguous and buf.flags.writeable:
            self._free.append(buf)

    def summarise(self, samples: FloatArray, pct: float, *, own: bool = False) -> LatencyStats:
        """The stats of ``samples``, selected in a scratch buffer (in ``samples`` itself when ``own``, a
        buffer :meth:`take` gave; it is given back)."""
        work = samples if own else self.take()
        stats = LatencyStats.of(samples, pct, work=work)
        self.give(work)
        return stats


def _check_samples(
    total: FloatArray, stages_ms: Mapping[str, FloatArray], origin: str, stage_fields: Mapping[str, str] | None
) -> None:
    """Turns to report on, none beyond :data:`MAX_LATENCY_MS` or not finite.

    :raises ValueError: no turns.
    :raises ModelError: a turn too long or not finite, naming the stages with such values.
    """
    if total.size == 0:
        raise ValueError("no turns to report on")
    if not (np.isfinite(np.min(total)) and np.max(total) <= MAX_LATENCY_MS):  # NaN fails both, one pass each
        raise _too_long(total, stages_ms, origin, stage_fields)


def _check_stages(budget: Budget, stages_ms: Mapping[str, FloatArray], total: FloatArray, origin: str) -> None:
    """Every stage the budget allocates exists, and every stage has one sample per turn.

    :raises ScenarioError: an allocation to no stage.
    :raises ValueError: a stage with another number of samples than the total.
    """
    unknown = sorted(set(budget.allocations_ms()) - set(stages_ms))
    if unknown:
        raise ScenarioError(
            f"allocates {unknown} but there is no such stage; stages: {list(stages_ms)}",
            origin=origin,
            field="budget.stages",
        )
    for key, arr in stages_ms.items():
        if np.shape(arr) != total.shape:
            raise ValueError(f"stage {key!r} has {np.shape(arr)} samples, total has {total.shape}")


def _too_long(
    total: FloatArray, stages_ms: Mapping[str, FloatArray], origin: str, stage_fields: Mapping[str, str] | None
) -> ModelError:
    """The error for turns beyond :data:`MAX_LATENCY_MS` or not finite: how many, and the stages with such
    values (by field path when known)."""
    too_big = [k for k, v in stages_ms.items() if _beyond(np.asarray(v, dtype=np.float64))]
    paths = [stage_fields[k] for k in too_big if stage_fields and k in stage_fields]
    n_bad = int(np.sum(~(np.abs(total) <= MAX_LATENCY_MS)))
    return ModelError(
        f"{origin}: {count(n_bad, 'turn')} take{'s' if n_bad == 1 else ''} longer "
        f"than {MAX_LATENCY_MS:,.0f} ms ({MAX_LATENCY_MS / 3.6e6:,.0f} hours) "
        f"or {'is' if n_bad == 1 else 'are'} not finite; stages with such values: {too_big or 'none'}"
        + (f" at {', '.join(paths)}" if paths else "")
    )


@dataclass
class _Tail:
    """The tail turns (at or above the budget's percentile of the total): their indices, each stage's
    contribution in them, their mean total (ms), and each stage's parts' contributions."""

    turns: NDArray[np.intp]
    contrib: Mapping[str, FloatArray]
    total_ms: float
    by_part: Mapping[str, Mapping[str, FloatArray]]

    @classmethod
    def of(
        cls,
        total: FloatArray,
        at_percentile_ms: float,
        stages_ms: Mapping[str, FloatArray],
        contributions: Contributions | None,
        part_contributions: PartContributions | None,
    ) -> _Tail:
        tail = np.flatnonzero(total >= at_percentile_ms)
        if contributions is not None:
            contrib = {k: np.asarray(v) for k, v in contributions(tail).items()}
        else:
            contrib = _proportional(total[tail], {k: np.asarray(v)[tail] for k, v in stages_ms.items()})
        tail_total = float(np.mean(total[tail]))
        by_part = part_contributions(tail) if part_contributions is not None else {}
        return cls(tail, contrib, tail_total, by_part)

    def own_means(self, stages_ms: Mapping[str, FloatArray]) -> dict[str, float]:
        """Each stage's own mean duration over the tail turns where it ran (NaN: it ran in none), ms; the
        stages that ran in all of them in one pass (a row's mean is bit for bit the mean of that row alone)."""
        if not stages_ms:
            return {}
        means: list[float] = []
        for rows in _row_blocks([np.asarray(arr, dtype=np.float64) for arr in stages_ms.values()], self.turns):
            for row, mean in zip(rows, rows.mean(axis=1).tolist(), strict=True):
                if math.isnan(mean):  # the stage did not run in some tail turns: the mean of those it ran in
                    ran = row[~np.isnan(row)]
                    mean = float(np.mean(ran)) if ran.size else float("nan")
                means.append(mean)
        return dict(zip(stages_ms, means, strict=True))

    def stages(
        self,
        keys: list[str],
        stats: Mapping[str, LatencyStats],
        allocations: Mapping[str, float],
        tail_means: Mapping[str, float],
    ) -> tuple[StageReport, ...]:
        """The reports of the stages ``keys``, in that order: each one's share of the tail (with its standard
        error; every stage's in one pass), its parts', its own mean there (``tail_means``, :meth:`own_means`)."""
        n = self.turns.size
        known = [key for key in keys if key in self.contrib]
        tail_ms: dict[str, float] = dict.fromkeys(keys, 0.0)
        tail_se: dict[str, float] = dict.fromkeys(keys, 0.0)
        if known:
            means: list[float] = []
            ses: list[float] = []
            for rows in _row_blocks([np.asarray(self.contrib[key], dtype=np.float64) for key in known]):
                means += rows.mean(axis=1).tolist()
                ses += (rows.std(axis=1, ddof=1) / np.sqrt(n)).tolist() if n > 1 else [0.0] * len(rows)
            tail_ms.update(zip(known, means, strict=True))
            tail_se.update(zip(known, ses, strict=True))
        return tuple(
            StageReport(
                key,
                stats[key],
                tail_ms[key],
                tail_ms[key] / self.total_ms if self.total_ms > 0 else 0.0,
                allocations.get(key),
                self.parts(key),
                tail_means[key],
                tail_se[key],
            )
            for key in keys
        )

    def parts(self, key: str) -> tuple[StagePart, ...]:
        """A stage's parts (a council's members), their share of the tail, the largest first."""
        if key not in self.by_part:
            return ()
        parts = sorted(
            (
                StagePart(p, float(np.mean(v)), float(np.mean(v)) / self.total_ms if self.total_ms > 0 else 0.0)
                for p, v in self.by_part.get(key, {}).items()
            ),
            key=lambda part: -part.tail_ms,
        )
        return tuple(parts)


_STACK_VALUES = 65_536
"""At most this many tail values are stacked to be reduced row by row at once: the tuner's reports (~100 tail
turns x a few stages) in one pass, a 1,000,000-turn run's (50,000 tail turns x 8 stages, plus the standard
deviation's temporaries) in blocks, so the report holds no stage-sized array beyond the simulation's
(benchmarks/bench_memory.py)."""


def _row_blocks(rows: list[FloatArray], pick: NDArray[np.intp] | None = None) -> Iterator[FloatArray]:
    """``rows`` (equal lengths; each taken at ``pick`` when given, block by block) stacked in blocks of at
    most :data:`_STACK_VALUES` values (one row at least); a row's reduction along the block's axis 1 is bit for
    bit its own (numpy's pairwise sum per row)."""
    size = pick.size if pick is not None else (rows[0].size if rows else 0)
    per = max(1, _STACK_VALUES // max(1, size))
    for start in range(0, len(rows), per):
        block = rows[start : start + per]
        yield np.stack([r[pick] for r in block] if pick is not None else block)


_NO_STATS = LatencyStats(*(float("nan"),) * 6)
"""A stage's stats not computed (``build_report(stage_stats=False)``)."""


def _stage_stats(arr: FloatArray, pct: float, work: FloatArray) -> LatencyStats:
    """Stats of a stage over the turns where it ran (NaN marks the others), selecting in ``work`` (which may
    be ``arr`` itself); the turns where it ran, when some did not, are a copy already: selected in place."""
    if not np.isnan(np.min(arr)):
        return LatencyStats.of(arr, pct, work=work)
    ran = arr[~np.isnan(arr)]
    return LatencyStats.of(ran, pct, work=ran) if ran.size else _NO_STATS


def _beyond(values: FloatArray) -> bool:
    """Any value (NaN: a stage that did not run, ignored) beyond :data:`MAX_LATENCY_MS` or infinite."""
    ran = np.abs(values[~np.isnan(values)])
    return bool(np.any(ran > MAX_LATENCY_MS))


def _proportional(total: FloatArray, stages: Mapping[str, FloatArray]) -> dict[str, FloatArray]:
    """Credit each stage ``total * d_i / sum(d)`` per turn (NaN durations count as 0)."""
    durations = {k: np.nan_to_num(v, nan=0.0) for k, v in stages.items()}
    denom = sum(durations.values(), np.zeros_like(total))
    scale = np.divide(total, denom, out=np.zeros_like(total), where=denom > 0)
    return {k: d * scale for k, d in durations.items()}
