"""Council quality: closed forms (Condorcet, beta-binomial, Poisson-binomial, cascade, router)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from voicebudget.councils import (
    Council,
    cascade_accuracy,
    correct_count_pmf,
    evaluate_council,
    majority_accuracy,
    majority_cap,
    router_accuracy,
    weighted_vote_accuracy,
)
from voicebudget.councils._latency import answers
from voicebudget.councils._quality import beta_params


def brute_force_majority(p: list[float]) -> float:
    """Enumerate every right/wrong outcome of independent members."""
    total = 0.0
    n = len(p)
    for outcome in itertools.product([0, 1], repeat=n):
        prob = math.prod(pi if o else 1 - pi for pi, o in zip(p, outcome, strict=True))
        right = sum(outcome)
        total += prob * (1.0 if 2 * right > n else 0.5 if 2 * right == n else 0.0)
    return total


def test_three_independent_members_at_0_7_give_0_784() -> None:
    # Condorcet: 0.7^3 + 3 * 0.7^2 * 0.3 = 0.343 + 0.441
    assert majority_accuracy([0.7, 0.7, 0.7]) == pytest.approx(0.784, abs=1e-12)


@pytest.mark.parametrize("p", [[0.9, 0.6, 0.55], [0.8, 0.7, 0.65, 0.6, 0.51], [0.7, 0.7, 0.9, 0.3]])
def test_unequal_independent_members_are_exact_poisson_binomial(p: list[float]) -> None:
    assert majority_accuracy(p) == pytest.approx(brute_force_majority(p), abs=1e-12)


@pytest.mark.parametrize(("p", "rho", "n"), [(0.7, 0.3, 5), (0.9, 0.1, 7), (0.55, 0.6, 4)])
def test_equal_members_with_correlation_are_beta_binomial(p: float, rho: float, n: int) -> None:
    a, b = beta_params(p, rho)
    expected = stats.betabinom(n, a, b).pmf(np.arange(n + 1))
    np.testing.assert_allclose(correct_count_pmf([p] * n, rho), expected, atol=1e-12)
    # the parametrisation gives pairwise correlation rho: 1 / (a + b + 1)
    assert 1 / (a + b + 1) == pytest.approx(rho)


@pytest.mark.parametrize("rho", [0.05, 0.2, 0.5])
def test_correlation_keeps_accuracy_below_independent_and_under_its_cap(rho: float) -> None:
    accs = [majority_accuracy([0.7] * n, rho) for n in (3, 5, 11, 51, 201, 1001)]
    independent = [majority_accuracy([0.7] * n) for n in (3, 5, 11, 51, 201, 1001)]
    assert all(c < i for c, i in zip(accs, independent, strict=True))
    assert accs == sorted(accs), "more members still help, a little"
    a, b = beta_params(0.7, rho)
    cap = stats.beta(a, b).sf(0.5)  # P(theta > 1/2)
    assert majority_cap(0.7, rho) == pytest.approx(cap, abs=1e-9)
    assert all(x < cap for x in accs)
    assert cap - accs[-1] < 0.01, "1001 members are within 1 point of the cap"
    assert independent[-1] > 0.999, "without correlation, the jury theorem goes to 1"


def test_unequal_correlated_members_keep_their_marginals() -> None:
    p = [0.6, 0.75, 0.9]
    pmf = correct_count_pmf(p, 0.3)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    assert pmf @ np.arange(4) == pytest.approx(sum(p), abs=1e-8)  # E[#right] = sum of p_i


def test_sampled_answers_match_the_exact_model() -> None:
    members = [{"name": f"m{i}", "p": 0.7, "stage": {"kind": "fixed", "value_ms": 100}} for i in range(3)]
    council = Council.model_validate({"topology": "all", "members": members, "rho": 0.3})
    right = answers(council, 200_000, seed=3)
    assert right.mean(axis=1) == pytest.approx([0.7] * 3, abs=0.005)
    corr = np.corrcoef(right.astype(float))[0, 1]
    assert corr == pytest.approx(0.3, abs=0.01)
    exact = majority_accuracy([0.7] * 3, 0.3)
    assert (right.sum(axis=0) >= 2).mean() == pytest.approx(exact, abs=0.005)


def test_weighted_vote_follows_the_best_member_when_it_outweighs_the_rest() -> None:
    # log-odds weights: log(9) = 2.197 > 2 * log(1.5) = 0.811, so the 0.9 member decides alone
    assert weighted_vote_accuracy([0.9, 0.6, 0.6]) == pytest.approx(0.9, abs=1e-12)
    assert majority_accuracy([0.9, 0.6, 0.6]) == pytest.approx(0.792, abs=1e-12)
    # equal members: weighted == simple majority
    assert weighted_vote_accuracy([0.7] * 5) == pytest.approx(majority_accuracy([0.7] * 5), abs=1e-12)
    assert weighted_vote_accuracy([0.7] * 5, 0.3) == pytest.approx(majority_accuracy([0.7] * 5, 0.3), abs=1e-9)


def test_cascade_closed_form() -> None:
    p1, p2, tpr, far = 0.8, 0.95, 0.9, 0.2
    acc, stop = cascade_accuracy([p1, p2], 0.0, tpr, far)
    accept = p1 * tpr + (1 - p1) * far
    assert acc == pytest.approx(p1 * tpr + (1 - accept) * p2, abs=1e-12)
    np.testing.assert_allclose(stop, [accept, 1 - accept], atol=1e-12)


def test_router_closed_form() -> None:
    # easy turns (0.8) to the small model, hard (0.2) to the large one; 90% routed right
    acc = router_accuracy([0.92, 0.95], [0.55, 0.97], [0.8, 0.2], 0.9)
    assert acc == pytest.approx(0.8 * (0.9 * 0.92 + 0.1 * 0.97) + 0.2 * (0.9 * 0.95 + 0.1 * 0.55), abs=1e-12)


def _council(**kw: object) -> Council:
    members = kw.pop("members", None) or [
        {"name": f"m{i}", "p": 0.7, "stage": {"kind": "lognormal", "p50_ms": 100, "p95_ms": 200}} for i in range(3)
    ]
    return Council.model_validate({"members": members, **kw})


def test_vote_stopping_at_two_of_three_is_the_majority() -> None:
    # binary answers: the first two agreeing answers are the majority's answer
    # (identical members: every finishing order gives the same exact accuracy, so no Monte Carlo error)
    res = evaluate_council(_council(topology="vote", m=2), samples=100_000, seed=5)
    assert res.quality.method == "monte-carlo"
    assert res.quality.accuracy == pytest.approx(0.784, abs=1e-12)
    assert res.quality.standard_error == pytest.approx(0.0, abs=1e-12)


def test_vote_accuracy_given_the_order_agrees_with_the_simulated_answers() -> None:
    # unequal members, correlated errors, m=1 (the first answer wins, so the order matters): the exact
    # accuracy per finishing order averaged over the turns estimates what the simulated answers
    # estimate, with a far smaller standard error
    from voicebudget.councils._latency import sample_council

    members = [
        {"name": f"m{i}", "p": p, "stage": {"kind": "lognormal", "p50_ms": 100 + 40 * i, "p95_ms": 200 + 60 * i}}
        for i, p in enumerate((0.6, 0.85, 0.9))
    ]
    council = _council(members=members, topology="vote", m=1, rho=0.4)
    res = evaluate_council(council, samples=200_000, seed=3)
    simulated = sample_council(council, 200_000, 3).correct
    sim_se = simulated.std() / np.sqrt(simulated.size)
    assert res.quality.accuracy == pytest.approx(simulated.mean(), abs=4 * sim_se)
    assert 0 < res.quality.standard_error < sim_se / 2


def test_first_k_quality_is_the_subset_majority() -> None:
    res = evaluate_council(_council(topology="first_k", k=3), samples=5000)
    assert res.quality.accuracy == pytest.approx(0.784, abs=1e-12)
    res1 = evaluate_council(_council(topology="first_k", k=1), samples=5000)
    assert res1.quality.accuracy == pytest.approx(0.7, abs=1e-12)


def test_gain_curve_for_free_form_aggregation() -> None:
    res = evaluate_council(_council(topology="first_k", k=2, rule="gain", gain=[0.7, 0.76, 0.79]), samples=1000)
    assert res.quality.accuracy == pytest.approx(0.76)
    assert res.quality.best_member == 0.7


def test_council_reports_its_cap_under_correlation() -> None:
    res = evaluate_council(_council(topology="all", rho=0.3), samples=1000)
    a, b = beta_params(0.7, 0.3)
    assert res.quality.cap == pytest.approx(stats.beta(a, b).sf(0.5), abs=1e-9)
    assert res.quality.accuracy < 0.784
