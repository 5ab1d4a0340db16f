"""Reliability cases 29 and 30: a small error correlation ``rho`` keeps quality finite (the small-rho
limit), and a NaN objective in the tuner is an error, never a silent ranking."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, stats
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.cli import app
from voicebudget.councils import correct_count_pmf, evaluate_council, majority_accuracy, majority_cap
from voicebudget.councils._quality import beta_params
from voicebudget.tuning import tune_council

runner = CliRunner()

MEMBERS = """
[[members]]
name = "a"
p = 0.8
output_tokens = 10
output_usd_per_mtok = 1.0
stage = { kind = "lognormal", p50_ms = 200, p95_ms = 300 }
[[members]]
name = "b"
p = 0.85
output_tokens = 10
output_usd_per_mtok = 5.0
stage = { kind = "lognormal", p50_ms = 300, p95_ms = 500 }
[[members]]
name = "c"
p = 0.9
output_tokens = 10
output_usd_per_mtok = 20.0
stage = { kind = "lognormal", p50_ms = 500, p95_ms = 900 }
"""
# the shape of /work/shared/cases/reliability/30_tune_small_rho_wrong_pick.toml (29 is the same
# council without [search])
TUNE = (
    'kind = "council"\nname = "t"\ntopology = "all"\nrho = 1e-5\n[budget]\ntotal_ms = 800\n'
    + MEMBERS
    + '[search]\nmembers = { n = [1, 2, 3] }\ntopology = ["all", "first_k", "vote"]\nk = [1, 2]\n'
    'rule = ["majority", "weighted"]\n'
)


def poisson_binomial_under_beta(p: list[float], rho: float) -> np.ndarray:
    """The count pmf by adaptive quadrature (scipy) of the same model: theta ~ Beta(a, b), member i
    right with theta**gamma_i, gamma_i solving E[theta**gamma_i] = p_i."""
    from voicebudget.councils._quality import solve_gammas

    a, b = beta_params(float(np.mean(p)), rho)
    gammas = solve_gammas(p, a, b)
    dist = stats.beta(a, b)
    lo, hi = dist.ppf(1e-15), dist.isf(1e-15)
    out = []
    for k in range(len(p) + 1):

        def f(theta: float, k: int = k) -> float:
            q = theta**gammas
            pmf = np.zeros(len(p) + 1)
            pmf[0] = 1.0
            for qi in q:
                pmf[1:] = pmf[1:] * (1 - qi) + pmf[:-1] * qi
                pmf[0] *= 1 - qi
            return float(pmf[k] * dist.pdf(theta))

        out.append(integrate.quad(f, lo, hi, points=[dist.mean()], limit=200, epsabs=1e-13)[0])
    return np.asarray(out)


@pytest.mark.parametrize("rho", [1e-7, 1e-5, 1e-3, 0.01, 0.04])
def test_small_rho_count_pmf_matches_adaptive_quadrature(rho: float) -> None:
    p = [0.8, 0.84, 0.86]
    np.testing.assert_allclose(correct_count_pmf(p, rho), poisson_binomial_under_beta(p, rho), atol=1e-7)


def test_accuracy_is_finite_and_continuous_down_to_the_independent_limit() -> None:
    p = [0.8, 0.84, 0.86]
    independent = majority_accuracy(p)  # 0.92656 = Poisson-binomial majority of three
    assert independent == pytest.approx(0.8 * 0.84 + 0.8 * 0.86 + 0.84 * 0.86 - 2 * 0.8 * 0.84 * 0.86, abs=1e-12)
    rhos = [1e-300, 1e-12, 1e-9, 1e-7, 1e-5, 1e-3, 0.01, 0.05, 0.2]
    accs = [majority_accuracy(p, rho) for rho in rhos]
    assert all(math.isfinite(x) for x in accs)
    # correlation only lowers a majority of members above 1/2, and O(rho) near 0
    assert accs == sorted(accs, reverse=True)
    assert independent - accs[4] < 1e-5
    assert majority_accuracy([0.8] * 5, 1e-5) == pytest.approx(majority_accuracy([0.8] * 5), abs=1e-5)
    for rho in (1e-7, 1e-4, 0.01):
        a, b = beta_params(0.8, rho)
        assert majority_cap(0.8, rho) == pytest.approx(stats.beta(a, b).sf(0.5), abs=1e-9)


def test_case_29_council_reports_a_finite_accuracy(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('name = "t"\ntopology = "all"\nrho = 1e-5\n[budget]\ntotal_ms = 800\n' + MEMBERS)
    res = evaluate_council(vb.load_council(path), samples=2000)
    assert res.quality.accuracy == pytest.approx(majority_accuracy([0.8, 0.85, 0.9]), abs=1e-5)
    assert math.isfinite(res.expected_user_time_ms)
    out = runner.invoke(app, ["council", str(path), "-f", "json"])
    assert out.exit_code == 1, out.stderr  # member c's p95 (900 ms) is over the 800 ms budget
    doc = json.loads(out.stdout)
    assert doc["quality"]["accuracy"] == pytest.approx(0.941, abs=1e-5)  # 0.68 + 0.72 + 0.765 - 2 * 0.612
    table = runner.invoke(app, ["council", str(path)])
    assert "nan" not in table.stdout


def test_case_30_pick_is_the_lowest_user_time_on_a_front_without_nan(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text(TUNE)
    result = tune_council(path)
    objectives = np.array([c.objectives() for c in result.pareto])
    assert not np.isnan(objectives).any()
    assert result.best is not None
    assert result.best.expected_user_time_ms == objectives[:, 0].min()
    assert result.errors == ()


def test_a_nan_objective_is_an_error_not_a_ranking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from voicebudget.councils._evaluate import QualityResult
    from voicebudget.tuning import _evaluator

    path = tmp_path / "t.toml"
    path.write_text(TUNE)
    original = _evaluator.evaluate_checked

    def nan_for_pairs(council, *args, **kw):  # type: ignore[no-untyped-def]
        res = original(council, *args, **kw)
        if len(council.members) != 2:
            return res
        return type(res)(
            res.council, res.report, QualityResult(math.nan, "exact"), res.cost_per_turn_usd, math.nan, math.nan
        )

    monkeypatch.setattr(_evaluator, "evaluate_checked", nan_for_pairs)
    result = tune_council(path)
    # 3 pairs x (all: 2 rules; first_k k=1, k=2: 2 rules each; vote m=2) = 18 configurations
    assert len(result.errors) == 18
    assert all("NaN" in e["error"] and "quality" in e["error"] for e in result.errors)
    assert all(len(c.config["members"]) != 2 for c in result.pareto)
    out = runner.invoke(app, ["tune", str(path)])
    assert out.exit_code == 2
    assert "18 of 33 evaluations failed" in out.stderr
