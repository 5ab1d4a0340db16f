"""Known answers for the bootstrap comparison (voicebudget.baseline): the resampling shortcuts equal explicit
resampling, two samples of one distribution do not gate, a 2-standard-error shift does, and calls resampled as
clusters widen the interval when the turns of a call move together."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
from scipy import stats

from voicebudget import Budget
from voicebudget._measured import TurnSet
from voicebudget.baseline import CompareSettings, Tolerance, compare_sets
from voicebudget.baseline._bootstrap import column, draw_percentiles, jackknife_percentiles

MU, SIGMA = math.log(600.0), 0.35  # a log-normal voice-to-voice total: median 600 ms
ZERO = Tolerance(ms=0.0, origin="test")
SEEDS = range(2000)


def turn_set(total_ms: np.ndarray, calls: tuple[str, ...] | None = None, name: str = "agent") -> TurnSet:
    n = total_ms.size
    return TurnSet(
        name, "trace", "trace: test", "server side", Budget(), total_ms, {}, tuple(map(str, range(n))), calls
    )


def test_turn_draws_are_explicit_resampling_in_distribution() -> None:
    x = np.random.default_rng(1).lognormal(MU, SIGMA, 150)
    draws = draw_percentiles([column(x)], [50, 95], 4000, np.random.default_rng(2))[0]
    idx = np.random.default_rng(3).integers(0, x.size, (4000, x.size))
    explicit = np.percentile(x[idx], [50, 95], axis=1)
    for row, ref in zip(draws, explicit, strict=True):
        assert stats.ks_2samp(row, ref).pvalue > 0.01


def test_cluster_draws_are_explicit_call_resampling_in_distribution() -> None:
    rng = np.random.default_rng(4)
    x = rng.lognormal(MU, SIGMA, 240)
    calls = rng.integers(0, 24, 240)
    draws = draw_percentiles([column(x, calls, 24)], [50, 95], 3000, np.random.default_rng(5))[0]
    members = [np.flatnonzero(calls == c) for c in range(24)]
    pick = np.random.default_rng(6).integers(0, 24, (3000, 24))
    explicit = np.array([np.percentile(x[np.concatenate([members[c] for c in row])], [50, 95]) for row in pick]).T
    for row, ref in zip(draws, explicit, strict=True):
        assert stats.ks_2samp(row, ref).pvalue > 0.01


@pytest.mark.parametrize("clustered", [False, True])
def test_jackknife_is_leave_one_out(clustered: bool) -> None:
    rng = np.random.default_rng(7)
    x = rng.lognormal(MU, SIGMA, 90)
    calls = rng.integers(0, 12, 90) if clustered else None
    col = column(x, calls, 12) if clustered else column(x)
    units = range(col.n_calls)
    keep = [(col.calls != u) if clustered else (np.arange(col.n) != u) for u in units]  # type: ignore[operator]
    expected = [np.percentile(col.values[k], 95) for k in keep]
    assert jackknife_percentiles(col, 95) == pytest.approx(expected, abs=1e-9)


def _rates(n: int, shift_ms: float, settings: CompareSettings, q: float) -> float:
    hits = 0
    for seed in SEEDS:
        rng = np.random.default_rng(10_000 + seed)
        a, b = rng.lognormal(MU, SIGMA, n), rng.lognormal(MU, SIGMA, n) + shift_ms
        row = next(r for r in compare_sets([turn_set(a)], [turn_set(b)], settings).sets[0].rows if r.q == q)
        hits += row.verdict == "regression"
    return hits / len(SEEDS)


@pytest.mark.parametrize("q", [50.0, 95.0])
def test_same_distribution_false_regressions_at_most_nominal(q: float) -> None:
    # tolerance 0: the bare test. A 90% interval wholly above 0 is a one-sided test at 5%. Measured on this
    # seed list (2,000 pairs of 300 turns): p50 0.040, p95 0.035 (BCa: 0.052, 0.0485, at the nominal level).
    settings = CompareSettings(tolerance=ZERO, resamples=1000)
    rate = _rates(300, 0.0, settings, q)
    assert rate <= 0.05
    # with the defaults (the larger of 20 ms and 10%) the same 2,000 pairs never gate
    assert _rates(300, 0.0, CompareSettings(resamples=500), q) == 0.0


def _se_percentile(p: float, n: int) -> float:
    """Asymptotic standard error of a sample percentile of the log-normal: sqrt(p(1-p)/n) / f(x_p)."""
    z = NormalDist().inv_cdf(p)
    x = math.exp(MU + SIGMA * z)
    density = math.exp(-z * z / 2) / math.sqrt(2 * math.pi) / (x * SIGMA)
    return math.sqrt(p * (1 - p) / n) / density


@pytest.mark.parametrize("q", [50.0, 95.0])
def test_a_two_standard_error_shift_is_caught_in_most_seeds(q: float) -> None:
    n = 300
    shift = 2 * math.sqrt(2) * _se_percentile(q / 100, n)  # two standard errors of the difference
    rate = _rates(n, shift, CompareSettings(tolerance=ZERO, resamples=1000), q)
    # a one-sided 5% test at 2 SE has power 1 - Phi(1.645 - 2) = 0.64; measured p50 0.62, p95 0.64
    assert rate > 0.55


def _calls(rng: np.random.Generator, n_calls: int, per_call: int, call_sd: float) -> tuple[np.ndarray, tuple[str, ...]]:
    """Turns whose call adds a shared offset (a slow network, a cold cache for the whole call)."""
    offsets = rng.normal(0.0, call_sd, n_calls)
    totals = rng.lognormal(MU, SIGMA, n_calls * per_call) + np.repeat(offsets, per_call)
    return np.maximum(totals, 1.0), tuple(f"call-{i}" for i in np.repeat(np.arange(n_calls), per_call))


def _width(base: TurnSet, new: TurnSet, q: float) -> float:
    row = next(r for r in compare_sets([base], [new]).sets[0].rows if r.q == q)
    assert row.interval is not None
    return row.interval.high_ms - row.interval.low_ms


@pytest.mark.parametrize("q", [50.0, 95.0])
def test_clustered_interval_is_wider_when_calls_are_correlated(q: float) -> None:
    rng = np.random.default_rng(11)
    (a, ca), (b, cb) = _calls(rng, 40, 20, 250.0), _calls(rng, 40, 20, 250.0)
    clustered = _width(turn_set(a, ca), turn_set(b, cb), q)
    independent = _width(turn_set(a), turn_set(b), q)
    assert compare_sets([turn_set(a, ca)], [turn_set(b, cb)]).sets[0].resampled == "calls"
    assert clustered > 1.5 * independent  # measured: p50 2.7x, p95 1.76x (call offsets sd 250 ms)
    # without a call effect the two agree
    (a, ca), (b, cb) = _calls(rng, 40, 20, 0.0), _calls(rng, 40, 20, 0.0)
    ratio = _width(turn_set(a, ca), turn_set(b, cb), q) / _width(turn_set(a), turn_set(b), q)
    assert 0.8 < ratio < 1.25  # measured: p50 0.97, p95 0.88
