"""Bootstrap intervals for the difference of two percentiles, over turns or over calls (clusters).

What is resampled
-----------------
- **Turns** (no call ids): each side's turns are resampled with replacement, ``n`` of ``n``. The percentile of a
  resample is drawn *without materialising the resample*: the ``k``-th smallest of ``n`` values drawn with
  replacement from the sorted sample ``x`` is ``x[floor(n * U_(k))]``, where ``U_(k)`` is the ``k``-th order
  statistic of ``n`` uniforms, ``Beta(k, n + 1 - k)``; the next one up is ``U_(k) + (1 - U_(k)) * Beta(1, n - k)``
  (given ``U_(k)``, the other ``n - k`` uniforms are uniform above it). So a percentile with numpy's linear
  interpolation of each resample costs two Beta draws, whatever ``n``: equal in distribution to resampling the
  turns (``tests/test_baseline_bootstrap.py`` checks it against explicit resampling), with one sort per column.
- **Calls** (every turn carries a call id): the calls are resampled with replacement, ``G`` of ``G``, and every
  turn of a drawn call comes along (the cluster bootstrap; Davison & Hinkley 1997, *Bootstrap Methods and their
  Application*, section 3.8): turns of one conversation share its network, its caches and its topic, so they
  are not independent and resampling them one by one makes the interval too narrow. A resample's percentile is
  a weighted one over the sorted turns (weight = how many times its call was drawn), found in a window of
  ranks around the sample's percentile (wide enough for all but the rarest resamples, which are redone over
  every rank). Memory is bounded by chunks of resamples (``CHUNK_ELEMENTS``), never ``resamples x n``.

Intervals
---------
``percentile``: the ``alpha/2`` and ``1 - alpha/2`` quantiles of the bootstrap differences (Efron & Tibshirani
1993, *An Introduction to the Bootstrap*, chapter 13). ``bca``: bias-corrected and accelerated (ibid., chapter
14): ``z0`` from the share of bootstrap differences below the estimate, the acceleration from jackknife
influence values of each side (leave one turn, or one call, out), combined over the two independent samples
as ``a = sum_s sum_i U_si^3 / n_s^3 / (6 (sum_s sum_i U_si^2 / n_s^2)^1.5)`` (the multi-sample form of the
empirical-influence acceleration, Davison & Hinkley 1997, section 5.3).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "CHUNK_ELEMENTS",
    "METHODS",
    "Column",
    "DiffInterval",
    "Method",
    "column",
    "diff_interval",
    "draw_percentiles",
    "jackknife_percentiles",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]
Method = Literal["bca", "percentile"]
METHODS: tuple[Method, ...] = ("percentile", "bca")
"""Interval methods, the default first."""

CHUNK_ELEMENTS = 4_000_000
"""Resamples are processed in chunks of at most this many (resample x call, or resample x rank) elements:
about 32 MB of float64 per working array, whatever the number of turns and resamples."""

_NORMAL = NormalDist()


@dataclass(frozen=True)
class Column:
    """One side's values of one measure (a stage or the total), ready to resample.

    :ivar values: ``float64[n]`` sorted ascending, ms (turns where the stage did not run left out).
    :ivar calls: ``intp[n]`` the call index (0 .. n_calls-1) of each sorted value; None: turns are independent.
    :ivar n_calls: number of calls (clusters) the values come from; ``n`` when ``calls`` is None.
    """

    values: FloatArray
    calls: IntArray | None
    n_calls: int

    @property
    def n(self) -> int:
        return int(self.values.size)


def column(values_ms: FloatArray, calls: IntArray | None = None, n_calls: int | None = None) -> Column:
    """Sort a side's values (NaN: the stage did not run in that turn, dropped) with their call indices.

    :param values_ms: ``float64[n_turns]``, ms.
    :param calls: ``intp[n_turns]`` call index per turn, 0 .. ``n_calls - 1`` (every column of one side uses
        the same numbering, so that they share the resampled calls), or None: turns are independent.
    :param n_calls: the side's number of calls (default: the largest index + 1).
    :returns: a :class:`Column` (possibly empty).
    """
    v = np.asarray(values_ms, dtype=np.float64)
    keep = ~np.isnan(v)
    v = v[keep]
    order = np.argsort(v, kind="stable")
    if calls is None:
        return Column(v[order], None, int(v.size))
    c = np.asarray(calls, dtype=np.intp)
    g = int(c.max()) + 1 if n_calls is None and c.size else int(n_calls or 0)
    return Column(v[order], c[keep][order], g)


def _positions(q: float, size: FloatArray | float) -> tuple[NDArray[np.int64], FloatArray]:
    """numpy's linear-interpolation position of percentile ``q`` in ``size`` sorted values: the floor rank
    (0-based) and the fraction towards the next rank."""
    pos = np.asarray(q / 100.0 * (np.asarray(size, dtype=np.float64) - 1.0))
    lo = np.floor(pos)
    return lo.astype(np.int64), pos - lo


def _lerp(a: FloatArray, b: FloatArray, t: FloatArray) -> FloatArray:
    """numpy's ``_lerp`` (from the upper end when ``t >= 0.5``), so single values match ``np.percentile``."""
    diff = b - a
    out = np.asarray(a + diff * t)
    np.subtract(b, diff * (1 - t), out=out, where=np.asarray(t) >= 0.5)
    return out


def draw_percentiles(
    cols: Sequence[Column], qs: Sequence[float], resamples: int, rng: np.random.Generator
) -> FloatArray:
    """Bootstrap draws of percentiles of one side's columns (stages, total).

    :param cols: the side's sorted columns, each with at least one value; with calls, all numbered alike
        (:func:`column`), so every column is read from the same resampled calls.
    :param qs: percentiles in [0, 100].
    :param resamples: number of bootstrap resamples, >= 1.
    :param rng: the generator the resamples are drawn from.
    :returns: ``float64[len(cols), len(qs), resamples]``: percentile ``qs[j]`` of column ``i`` in each
        resample (numpy's linear interpolation). Without calls each (column, percentile) is drawn on its own
        (an interval needs each one's bootstrap distribution, not their joint one).
    """
    if any(c.n == 0 for c in cols):
        raise ValueError("a column has no values to resample")
    out = np.empty((len(cols), len(qs), resamples))
    clustered = [i for i, c in enumerate(cols) if c.calls is not None]
    for i, c in enumerate(cols):
        if c.calls is None:
            out[i] = [_turn_draws(c.values, q, resamples, rng) for q in qs]
    if clustered:
        out[clustered] = _cluster_draws([cols[i] for i in clustered], qs, resamples, rng)
    return out


def _turn_draws(x: FloatArray, q: float, resamples: int, rng: np.random.Generator) -> FloatArray:
    n = x.size
    lo, frac = _positions(q, n)
    k = int(lo)  # 0-based floor rank: the (k+1)-th smallest
    u1 = rng.beta(k + 1, n - k, size=resamples)
    if k + 1 < n:
        u2 = u1 + (1.0 - u1) * rng.beta(1, n - k - 1, size=resamples)
    else:
        u2 = u1
    j1 = np.minimum((u1 * n).astype(np.int64), n - 1)
    j2 = np.minimum((u2 * n).astype(np.int64), n - 1)
    return _lerp(x[j1], x[j2], np.full(resamples, float(frac)))


def _call_counts(n_calls: int, rows: int, rng: np.random.Generator) -> FloatArray:
    """``float64[rows, n_calls]``: how many times each call is drawn in each resample (G draws of G)."""
    draws = rng.integers(0, n_calls, size=(rows, n_calls))
    draws += np.arange(rows)[:, None] * n_calls
    return np.bincount(draws.ravel(), minlength=rows * n_calls).reshape(rows, n_calls).astype(np.float64)


def _cluster_draws(cols: Sequence[Column], qs: Sequence[float], resamples: int, rng: np.random.Generator) -> FloatArray:
    g = cols[0].n_calls
    if any(c.n_calls != g for c in cols):
        raise ValueError("the columns of one side must number their calls alike")
    windows = [[_window(c, q) for q in qs] for c in cols]
    # per column: its turns per call, then for each percentile the turns per call before the window
    vectors = [np.bincount(c.calls, minlength=g) for c in cols]  # type: ignore[arg-type]
    for c, ws in zip(cols, windows, strict=True):
        vectors += [np.bincount(c.calls[:a], minlength=g) for a, _ in ws]  # type: ignore[index]
    basis = np.stack(vectors, axis=1).astype(np.float64)  # float64[g, k]: one BLAS product per chunk
    widest = max(b - a for ws in windows for a, b in ws)
    rows = max(1, CHUNK_ELEMENTS // max(g, widest, 1))
    out = np.empty((len(cols), len(qs), resamples))
    for start in range(0, resamples, rows):
        stop = min(resamples, start + rows)
        counts = _call_counts(g, stop - start, rng)
        sums = np.rint(counts @ basis).astype(np.int64)
        for i, c in enumerate(cols):
            total = sums[:, i]
            for j, (q, (a, b)) in enumerate(zip(qs, windows[i], strict=True)):
                before = sums[:, len(cols) + i * len(qs) + j]
                out[i, j, start:stop] = _weighted_percentile(c, counts, total, before, q, a, b)
    return out


_WINDOW_SD = 5.0
"""Half-width of the search window in standard deviations of the percentile's rank (a resample beyond it,
about 1 in 1.7 million, is redone over every rank)."""


def _window(col: Column, q: float) -> tuple[int, int]:
    """Ranks ``[a, b)`` of the sorted values that hold the resamples' percentile in all but rare resamples:
    five standard deviations of the rank around the sample's percentile, under resampling of calls (the rank
    of a resample moves by ``sum_c (count_c - 1) (below_c - share * size_c)``)."""
    assert col.calls is not None
    n = col.n
    j = int(np.floor(q / 100.0 * (n - 1)))
    sizes = np.bincount(col.calls, minlength=col.n_calls)
    below = np.bincount(col.calls[: j + 1], minlength=col.n_calls)  # turns of each call at or below the rank
    share = (j + 1) / n
    spread = float(np.sqrt(col.n_calls * np.var(below - share * sizes)))
    half = int(_WINDOW_SD * max(spread, np.sqrt(n * share * (1 - share))) + 16)
    return max(0, j - half), min(n, j + half + 2)


def _weighted_percentile(
    col: Column, counts: FloatArray, total: NDArray[np.int64], before: NDArray[np.int64], q: float, a: int, b: int
) -> FloatArray:
    """Percentile ``q`` of each resample (rows of ``counts``; ``total`` its turns, ``before`` its turns at ranks
    below ``a``), searching ranks ``[a, b)``; rows whose percentile falls outside are redone over every rank."""
    assert col.calls is not None
    lo, frac = _positions(q, total.astype(np.float64))
    cum = np.cumsum(counts[:, col.calls[a:b]], axis=1)
    cum += before[:, None]
    # the m-th (0-based) smallest of a resample is the first rank whose cumulative weight exceeds m
    hi_rank = np.minimum(lo + 1, total - 1)
    inside = (lo >= before) & (hi_rank < cum[:, -1])
    j1 = a + np.count_nonzero(cum <= lo[:, None], axis=1)
    j2 = a + np.count_nonzero(cum <= hi_rank[:, None], axis=1)
    if not np.all(inside):
        redo = np.flatnonzero(~inside)
        full = np.cumsum(counts[redo][:, col.calls], axis=1)
        j1[redo] = np.count_nonzero(full <= lo[redo, None], axis=1)
        j2[redo] = np.count_nonzero(full <= hi_rank[redo, None], axis=1)
    x = col.values
    return _lerp(x[np.minimum(j1, col.n - 1)], x[np.minimum(j2, col.n - 1)], frac)


def jackknife_percentiles(col: Column, q: float) -> FloatArray:
    """Leave-one-out percentiles: one turn out at a time (no calls), or one call out at a time.

    :returns: ``float64[n_units]``, the percentile ``q`` of the side without unit ``i`` (NaN when the unit is
        the whole side); units are the turns, or the calls that have a value in this column, in call order.
    """
    x = col.values
    n = col.n
    if col.calls is None:
        if n < 2:
            return np.full(n, np.nan)
        lo, frac = _positions(q, n - 1)
        k = int(lo)
        i = np.arange(n)
        k1 = k + (k >= i)  # the (k)-th smallest of the rest: skip the removed rank when at or before it
        k2 = np.minimum(k + 1, n - 2) + (np.minimum(k + 1, n - 2) >= i)
        return _lerp(x[k1], x[k2], np.full(n, float(frac)))
    return _jackknife_calls(col, q)


def _jackknife_calls(col: Column, q: float) -> FloatArray:
    assert col.calls is not None
    n, g = col.n, col.n_calls
    sizes = np.bincount(col.calls, minlength=g)
    rest = n - sizes
    lo, frac = _positions(q, rest.astype(np.float64))
    # key of each value: call * n + rank, sorted; N_c(j) = values of call c at ranks < j
    keys = np.sort(col.calls.astype(np.int64) * n + np.arange(n))
    starts = np.searchsorted(keys, np.arange(g, dtype=np.int64) * n)
    calls = np.arange(g, dtype=np.int64)

    def smallest_rest(m: NDArray[np.int64]) -> NDArray[np.int64]:
        """Per call c: the rank of the m[c]-th (0-based) smallest value not in c (binary search over ranks)."""
        low = np.zeros(g, dtype=np.int64)
        high = np.full(g, n - 1, dtype=np.int64)
        while np.any(low < high):
            mid = (low + high) // 2
            kept = (mid + 1) - (np.searchsorted(keys, calls * n + mid + 1) - starts)  # values <= mid not in c
            ok = kept >= m + 1
            high = np.where(ok, mid, high)
            low = np.where(ok, low, mid + 1)
        return low

    valid = rest > 0
    m1 = np.where(valid, lo, 0)
    m2 = np.where(valid, np.minimum(lo + 1, rest - 1), 0)
    out = _lerp(col.values[smallest_rest(m1)], col.values[smallest_rest(m2)], frac)
    out[~valid] = np.nan
    return out[sizes > 0]  # a call without a value in this column is not one of its units


def _influence_sums(col: Column, q: float) -> tuple[float, float]:
    """``(sum U^2 / m^2, sum U^3 / m^3)`` of one side's jackknife influence values ``U_i = (m-1)(mean - theta_i)``,
    ``m`` units (turns or calls)."""
    theta = jackknife_percentiles(col, q)
    theta = theta[~np.isnan(theta)]
    m = theta.size
    if m < 2:
        return 0.0, 0.0
    u = (m - 1) * (theta.mean() - theta)
    return float(np.sum(u**2)) / m**2, float(np.sum(u**3)) / m**3


@dataclass(frozen=True)
class DiffInterval:
    """The bootstrap interval of ``percentile(new) - percentile(baseline)``, ms.

    :ivar estimate_ms: the difference of the two samples' percentiles.
    :ivar low_ms: the interval's lower end.
    :ivar high_ms: its upper end.
    :ivar se_ms: the standard deviation of the bootstrap differences (the difference's standard error).
    """

    estimate_ms: float
    low_ms: float
    high_ms: float
    se_ms: float


def diff_interval(
    baseline_draws: FloatArray,
    new_draws: FloatArray,
    estimate_ms: float,
    *,
    level: float,
    method: Method,
    baseline: Column,
    new: Column,
    q: float,
) -> DiffInterval:
    """The interval of ``new - baseline`` at ``level`` from each side's bootstrap draws of percentile ``q``.

    :param baseline_draws: ``float64[R]`` draws of the baseline's percentile; ``new_draws`` likewise, same R.
    :param estimate_ms: the difference of the samples' percentiles.
    :param level: the two-sided level in (0, 1), e.g. 0.90.
    :param method: ``"percentile"`` or ``"bca"`` (Efron & Tibshirani 1993, chapters 13-14).
    :param baseline: the baseline's column (BCa's jackknife); ``new`` the new side's.
    """
    d = new_draws - baseline_draws
    alpha = 1.0 - level
    probs = np.array([alpha / 2, 1 - alpha / 2])
    if method == "bca":
        probs = _bca_probs(d, estimate_ms, probs, baseline, new, q)
    low, high = np.quantile(d, probs)
    return DiffInterval(float(estimate_ms), float(low), float(high), float(np.std(d)))


def _bca_probs(
    d: FloatArray, estimate: float, probs: FloatArray, baseline: Column, new: Column, q: float
) -> FloatArray:
    r = d.size
    below = float(np.count_nonzero(d < estimate) + 0.5 * np.count_nonzero(d == estimate)) / r
    below = min(max(below, 0.5 / r), 1 - 0.5 / r)
    z0 = _NORMAL.inv_cdf(below)
    s2_a, s3_a = _influence_sums(baseline, q)
    s2_b, s3_b = _influence_sums(new, q)
    spread = s2_a + s2_b
    accel = (s3_b - s3_a) / (6 * spread**1.5) if spread > 0 else 0.0  # the baseline enters with a minus sign
    out = []
    for p in probs:
        z = _NORMAL.inv_cdf(float(p))
        denom = 1 - accel * (z0 + z)
        out.append(_NORMAL.cdf(z0 + (z0 + z) / denom) if denom > 0 else float(p > 0.5))
    return np.array(out)
