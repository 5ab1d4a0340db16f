"""Pareto fronts: the configurations no other configuration beats on every objective."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from voicebudget.tuning._noise import NOISE_Z

__all__ = ["dominates", "noisy_front", "pareto_front"]


def dominates(a: NDArray[np.float64], b: NDArray[np.float64]) -> bool:
    """``a`` dominates ``b`` (all objectives minimised): no worse on every one, better on one."""
    return bool(np.all(a <= b) and np.any(a < b))


def pareto_front(objectives: NDArray[np.float64]) -> NDArray[np.intp]:
    """Indices of the non-dominated rows, all objectives minimised.

    Sweeps the rows in lexicographic order; a row can only be dominated by rows before it, and only
    front members need checking, so the cost is ``O(n log n + n * front size)``. Exact duplicates
    are all kept (neither dominates the other).

    :param objectives: ``float64[n_configs, n_objectives]``, no NaN.
    :returns: ``intp[k]`` row indices of the front, in ascending order.
    :raises ValueError: not 2-D, or NaN present.
    """
    obj = np.asarray(objectives, dtype=np.float64)
    if obj.ndim != 2:
        raise ValueError(f"objectives must be 2-D [n_configs, n_objectives], got shape {obj.shape}")
    if np.isnan(obj).any():
        raise ValueError("objectives contain NaN")
    order = np.lexsort(obj.T[::-1])
    front: list[int] = []
    front_rows = np.empty((0, obj.shape[1]))
    for i in order:
        row = obj[i]
        if front_rows.shape[0]:
            no_worse = np.all(front_rows <= row, axis=1)
            better = np.any(front_rows < row, axis=1)
            if np.any(no_worse & better):
                continue
        front.append(int(i))
        front_rows = np.vstack([front_rows, row])
    return np.sort(np.asarray(front, dtype=np.intp))


def noisy_front(
    objectives: NDArray[np.float64],
    standard_errors: NDArray[np.float64],
    dominators: NDArray[np.bool_] | None = None,
    *,
    z: float = NOISE_Z,
    sure: bool = False,
    chunk: int = 512,
) -> NDArray[np.intp]:
    """Indices of the rows no other row dominates **beyond the noise**.

    With ``tol`` ``z`` standard errors of a difference (:func:`tie_tolerance`):

    - ``sure=False``, differences inside the noise are ties (epsilon-dominance with a per-pair
      epsilon): row ``a`` dominates ``b`` when it is worse on no objective by more than ``tol`` and
      better on one by more than ``tol``. A configuration 10 ms better in expected user time, within
      that time's Monte Carlo error, does not push off one with a far lower p95, but is pushed off by
      it. The relation is not transitive; the front is every row no dominator beats.
    - ``sure=True``, only a sure win counts: ``a`` must be at least as good as ``b`` on every objective
      by ``tol`` (exact figures: simply as good) and better on one by more than ``tol``. The front
      then holds every row that might be non-dominated; it only grows with ``z`` (a safe screen).

    ``O(n^2)`` comparisons, in chunks of ``chunk`` rows.

    :param objectives: ``float64[n, m]``, all minimised, no NaN (``inf`` allowed).
    :param standard_errors: ``float64[n, m]``, Monte Carlo standard errors (0 for exact figures).
    :param dominators: ``bool[n]``, rows allowed to dominate (default all).
    :param z: the tie band in standard errors (default :data:`NOISE_Z`, 2).
    :param sure: the sure-win relation instead of ties within the noise.
    :returns: ``intp[k]`` ascending row indices.
    :raises ValueError: shapes differ or are not 2-D, or NaN in the objectives.
    """
    obj = np.asarray(objectives, dtype=np.float64)
    se = np.asarray(standard_errors, dtype=np.float64)
    if obj.ndim != 2 or se.shape != obj.shape:
        raise ValueError(f"objectives and standard errors must be 2-D of one shape, got {obj.shape}, {se.shape}")
    if np.isnan(obj).any():
        raise ValueError("objectives contain NaN")
    who = np.ones(obj.shape[0], dtype=bool) if dominators is None else np.asarray(dominators, dtype=bool)
    se = np.nan_to_num(se, nan=0.0, posinf=0.0)  # (non-finite standard errors count as 0)
    dom_obj, dom_se = obj[who], se[who]
    # first against the dominators on the exact front (a few dozen): they beat most rows, and only the
    # rows they leave are checked against every dominator (the same front, in a fraction of the time)
    strong = pareto_front(dom_obj) if dom_obj.shape[0] else np.empty(0, dtype=np.intp)
    keep = ~_beaten(obj, se, dom_obj[strong], dom_se[strong], z, sure, chunk)
    left = np.flatnonzero(keep)
    keep[left] = ~_beaten(obj[left], se[left], dom_obj, dom_se, z, sure, chunk)
    return np.flatnonzero(keep).astype(np.intp)


def _beaten(
    obj: NDArray[np.float64],
    se: NDArray[np.float64],
    dom_obj: NDArray[np.float64],
    dom_se: NDArray[np.float64],
    z: float,
    sure: bool,
    chunk: int,
) -> NDArray[np.bool_]:
    """Per row of ``obj``, whether some row of ``dom_obj`` beats it beyond the noise (see :func:`noisy_front`),
    in chunks of ``chunk`` rows; standard errors finite. The tolerance is :func:`~voicebudget.tuning._noise.
    tie_tolerance`'s, ``z (se_a + se_b) + 1e-9 max(|a|, |b|)``, its pair-free parts computed once."""
    beaten = np.zeros(obj.shape[0], dtype=bool)
    if not dom_obj.shape[0]:
        return beaten
    dom_abs = np.abs(dom_obj)
    for start in range(0, obj.shape[0], chunk):
        b = obj[start : start + chunk, None, :]  # [c, 1, m]
        b_se = se[start : start + chunk, None, :]
        scale = np.maximum(dom_abs[None, :, :], np.abs(b))
        scale[~np.isfinite(scale)] = 0.0
        eps = 1e-9 * scale  # tie_tolerance with no standard errors
        tol = z * (dom_se[None, :, :] + b_se) + eps
        with np.errstate(invalid="ignore"):  # inf - inf: equal, neither better
            diff = np.nan_to_num(b - dom_obj[None, :, :], nan=0.0)  # > 0: the dominator is better
        not_worse = np.all(diff >= (tol - 2 * eps if sure else -tol), axis=2)
        better = np.any(diff > tol, axis=2)
        beaten[start : start + chunk] = np.any(not_worse & better, axis=1)
    return beaten
