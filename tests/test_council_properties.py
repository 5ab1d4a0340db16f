"""Invariants of council quality and latency (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from voicebudget.councils import (
    Council,
    correct_count_pmf,
    majority_accuracy,
    router_accuracy,
    sample_council,
    weighted_vote_accuracy,
)

probs = st.lists(st.floats(0.05, 0.95), min_size=1, max_size=7)
rhos = st.sampled_from([0.0, 0.05, 0.3, 0.7])


@given(probs, rhos)
@settings(max_examples=60, deadline=None)
def test_pmf_is_a_distribution_with_the_right_mean(p: list[float], rho: float) -> None:
    pmf = correct_count_pmf(p, rho)
    assert np.all(pmf >= -1e-12)
    assert abs(pmf.sum() - 1) < 1e-9
    assert abs(pmf @ np.arange(len(p) + 1) - sum(p)) < 1e-6


@given(probs)
@settings(max_examples=60, deadline=None)
def test_log_odds_weighted_vote_is_never_worse_than_majority(p: list[float]) -> None:
    # for independent members the log-odds weighted vote is the MAP rule (Nitzan & Paroush 1982)
    assert weighted_vote_accuracy(p) >= majority_accuracy(p) - 1e-12


@given(st.floats(0.55, 0.95), st.integers(1, 7), st.sampled_from([0.05, 0.3, 0.7]))
@settings(max_examples=40, deadline=None)
def test_correlation_never_helps_an_equal_majority(p: float, half: int, rho: float) -> None:
    n = 2 * half + 1
    assert majority_accuracy([p] * n, rho) <= majority_accuracy([p] * n) + 1e-12


@given(st.lists(st.floats(0, 1), min_size=2, max_size=4), st.floats(0, 1))
@settings(max_examples=40, deadline=None)
def test_router_accuracy_lies_between_its_members(p: list[float], acc: float) -> None:
    share = [1 / len(p)] * len(p)
    value = router_accuracy(p, p, share, acc)
    assert min(p) - 1e-12 <= value <= max(p) + 1e-12


@given(st.integers(2, 5), st.integers(0, 2**31))
@settings(max_examples=20, deadline=None)
def test_first_k_is_never_slower_than_waiting_for_all(n: int, seed: int) -> None:
    members = [
        {"name": f"m{i}", "p": 0.7, "stage": {"kind": "lognormal", "p50_ms": 100 + 20 * i, "p95_ms": 300}}
        for i in range(n)
    ]
    all_ = sample_council(Council.model_validate({"topology": "all", "members": members}), 500, seed).total
    for k in range(1, n + 1):
        c = Council.model_validate({"topology": "first_k", "k": k, "members": members})
        assert np.all(sample_council(c, 500, seed).total <= all_)
