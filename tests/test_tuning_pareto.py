"""Pareto front and the evaluation map (in process, local processes, Dask)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from dask_cluster import local_client, port_held
from hypothesis import given, settings
from hypothesis import strategies as st

from voicebudget.tuning._executor import map_evaluations
from voicebudget.tuning._pareto import dominates, pareto_front


def brute_force_front(obj: np.ndarray) -> list[int]:
    return [i for i in range(len(obj)) if not any(dominates(obj[j], obj[i]) for j in range(len(obj)) if j != i)]


def test_front_of_a_known_set() -> None:
    obj = np.array([[1, 5, 1], [2, 2, 2], [3, 1, 3], [3, 3, 3], [1, 5, 1], [0.5, 9, 9]], dtype=float)
    # row 3 is dominated by row 1; rows 0 and 4 are duplicates and both stay
    assert pareto_front(obj).tolist() == [0, 1, 2, 4, 5]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(*[st.integers(0, 6)] * 3), min_size=1, max_size=60))
def test_front_equals_brute_force_non_dominated_set(rows) -> None:
    obj = np.asarray(rows, dtype=float)
    assert pareto_front(obj).tolist() == brute_force_front(obj)


def test_front_rejects_nan_and_wrong_shape() -> None:
    with pytest.raises(ValueError, match="NaN"):
        pareto_front(np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="2-D"):
        pareto_front(np.array([1.0, 2.0]))


def square_or_fail(x: int) -> int:
    if x == 13:
        raise RuntimeError("unlucky")
    return x * x


def test_map_in_process_and_on_processes_agree_and_keep_errors() -> None:
    items = list(range(40))
    serial = map_evaluations(square_or_fail, items, batch_size=7)
    pooled = map_evaluations(square_or_fail, items, workers=2, batch_size=7)
    assert [o.value for o in serial] == [o.value for o in pooled]
    failed = [o for o in serial if o.failure is not None]
    assert [(o.index, o.failure.error) for o in failed] == [(13, "RuntimeError: unlucky")]
    assert [o.value for o in serial if o.failure is None] == [x * x for x in items if x != 13]


def test_map_on_a_dask_local_cluster_agrees() -> None:
    with port_held(), local_client() as client:
        out = map_evaluations(square_or_fail, list(range(20)), scheduler=client, batch_size=3)
    assert [o.value for o in out] == [None if x == 13 else x * x for x in range(20)]


def test_map_progress_counts_every_item() -> None:
    seen: list[int] = []
    map_evaluations(square_or_fail, list(range(10)), batch_size=4, progress=seen.append)
    assert sum(seen) == 10
    assert list(itertools.accumulate(seen))[-1] == 10


def test_unreachable_dask_scheduler_is_a_clear_error(monkeypatch) -> None:
    pytest.importorskip("distributed")
    import voicebudget as vb
    from voicebudget.tuning import _executor

    monkeypatch.setattr(_executor, "CONNECT_TIMEOUT_S", 1)
    with pytest.raises(vb.ScenarioError, match="cannot reach the Dask scheduler at 'tcp://127.0.0.1:1' within 1 s"):
        map_evaluations(square_or_fail, [1, 2], scheduler="tcp://127.0.0.1:1")
