"""Pareto fronts: the configurations no other configuration beats on every objective."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["dominates", "pareto_front"]


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
