"""The Monte Carlo engine pinned to closed forms (distributions and the latency algebra)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import voicebudget as vb

N = 400_000


def draw(dist: object, n: int = N, seed: int = 7) -> np.ndarray:
    return vb.evaluate(dist, n, seed).total


def mc_tol(p: float, n: int = N) -> float:
    """~5 standard errors of an empirical CDF value at probability p."""
    return 5 * math.sqrt(p * (1 - p) / n)


def test_fixed_uniform_normal() -> None:
    assert np.all(draw(vb.Fixed(value_ms=200)) == 200.0)
    u = draw(vb.Uniform(low_ms=100, high_ms=300))
    assert u.min() >= 100
    assert u.max() <= 300
    assert np.mean(u) == pytest.approx(200, abs=0.5)
    x = draw(vb.Normal(mean_ms=50, std_ms=50))
    assert x.min() == 0.0  # floored at 0
    # P(X <= 0) = Phi(-1) = 0.1587 mass sits exactly on the floor
    assert np.mean(x == 0.0) == pytest.approx(stats.norm.cdf(-1), abs=mc_tol(0.16))


def test_lognormal_hits_its_quantiles() -> None:
    x = draw(vb.LogNormal(p50_ms=247, p95_ms=298))
    assert np.mean(x <= 247) == pytest.approx(0.50, abs=mc_tol(0.5))
    assert np.mean(x <= 298) == pytest.approx(0.95, abs=mc_tol(0.95))
    assert np.allclose(draw(vb.LogNormal(p50_ms=100, p95_ms=100), 10), 100.0)


def test_empirical_inline_and_files(tmp_path) -> None:
    xs = draw(vb.Empirical(samples_ms=(100, 200, 400)), 30_000)
    assert set(np.unique(xs)) == {100.0, 200.0, 400.0}
    assert np.mean(xs == 400) == pytest.approx(1 / 3, abs=0.02)
    (tmp_path / "s.csv").write_text("latency_ms\n10\n20\n30\n")
    (tmp_path / "s.json").write_text(json.dumps({"samples_ms": [5, 6]}))
    csv_dist = vb.Empirical.model_validate({"kind": "empirical", "file": "s.csv"}, context={"base_dir": tmp_path})
    assert csv_dist.samples_ms == (10, 20, 30)
    json_dist = vb.Empirical.model_validate({"file": str(tmp_path / "s.json")})
    assert json_dist.samples_ms == (5, 6)


def test_mixture_cdf_is_weighted_sum_of_component_cdfs() -> None:
    # Semantic turn detector: min_delay 300 ms when confident, max_delay 2500 ms otherwise
    # (LiveKit EndpointingOptions; bimodal wait reported in livekit/agents issue 6415).
    fast = vb.LogNormal(p50_ms=300, p95_ms=400)
    slow = vb.Normal(mean_ms=2500, std_ms=100)
    mix = vb.Mixture(weights=(0.8, 0.2), components=(fast, slow))
    x = draw(mix)
    for t in (250.0, 350.0, 1000.0, 2550.0):
        expected = 0.8 * stats.lognorm.cdf(t, fast.sigma, scale=300) + 0.2 * stats.norm.cdf(t, 2500, 100)
        assert np.mean(x <= t) == pytest.approx(expected, abs=mc_tol(expected))


def test_shifted_adds_a_constant() -> None:
    base = vb.LogNormal(p50_ms=90, p95_ms=120)
    assert np.allclose(draw(vb.Shifted(shift_ms=200, base=base), 1000), draw(base, 1000) + 200)


def test_sequence_of_independent_normals_is_normal() -> None:
    seq = vb.Sequence(stages={"a": vb.Normal(mean_ms=300, std_ms=30), "b": vb.Normal(mean_ms=400, std_ms=40)})
    x = draw(seq)
    # N(700, 50): p95 = 700 + 1.6449 * 50 = 782.2 ms. Not 300+49.3 + 400+65.8 = 815.1 (percentiles do not add).
    assert np.percentile(x, 95) == pytest.approx(700 + stats.norm.ppf(0.95) * 50, abs=1.0)
    assert np.std(x) == pytest.approx(50, rel=0.01)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_quantile_of_max_is_member_quantile_at_p_to_the_1_over_n(n: int) -> None:
    member = vb.LogNormal(p50_ms=200, p95_ms=400)
    x = draw(vb.AllOf(stages={f"m{i}": member for i in range(n)}))
    for p in (0.5, 0.95):
        expected = stats.lognorm.ppf(p ** (1 / n), member.sigma, scale=200)
        assert np.mean(x <= expected) == pytest.approx(p, abs=mc_tol(p))


def test_k_of_n_and_race_are_order_statistics() -> None:
    member = vb.Uniform(low_ms=0, high_ms=1000)
    # k-th order statistic of 5 uniforms on [0, 1000] has mean 1000 * k / 6.
    for k in (1, 3, 5):
        x = draw(vb.KOfN(k=k, stages={f"m{i}": member for i in range(5)}))
        assert np.mean(x) == pytest.approx(1000 * k / 6, abs=2.0)
    race = draw(vb.Race(stages={f"m{i}": member for i in range(5)}))
    assert np.mean(race) == pytest.approx(1000 / 6, abs=2.0)


def test_choice_is_a_mixture() -> None:
    # Reply cache: hit with probability 0.3 answers in 150 ms, else the 900 ms miss path.
    x = draw(vb.Choice(weights=(0.3, 0.7), stages={"hit": vb.Fixed(value_ms=150), "miss": vb.Fixed(value_ms=900)}))
    assert np.mean(x == 150) == pytest.approx(0.3, abs=mc_tol(0.3))
    assert set(np.unique(x)) == {150.0, 900.0}


def test_contributions_add_up_to_the_total_on_the_critical_path() -> None:
    tree = vb.Sequence(
        stages={
            "commit": vb.AllOf(stages={"vad": vb.Fixed(value_ms=200), "asr": vb.LogNormal(p50_ms=247, p95_ms=298)}),
            "llm": vb.LogNormal(p50_ms=400, p95_ms=800),
            "cache": vb.Choice(weights=(0.5, 0.5), stages={"a": vb.Fixed(value_ms=1), "b": vb.Fixed(value_ms=2)}),
        }
    )
    ev = vb.evaluate(tree, 10_000, 3)
    turns = np.arange(10_000)
    contrib = ev.contributions(turns)
    assert np.allclose(sum(contrib.values()), ev.total)
    # when ASR finishes before the 200 ms timer, the timer gets the credit and ASR none
    early = ev.stages["asr"] < 200
    assert np.all(contrib["asr"][early] == 0)
    assert np.all(contrib["vad"][early] == 200)


@pytest.mark.parametrize(("kind", "first"), [(vb.AllOf, np.argmax), (vb.Race, np.argmin)])
def test_max_and_min_credit_the_first_child_that_reaches_the_value(kind, first) -> None:
    # ties included (two equal constants, a discrete resample): credit goes to the first such child
    members = {
        "u": vb.Empirical(samples_ms=(100.0, 150.0, 300.0)),
        "c1": vb.Fixed(value_ms=150),
        "c2": vb.Fixed(value_ms=150),
        "w": vb.Uniform(low_ms=90, high_ms=310),
    }
    ev = vb.evaluate(kind(stages=members), 5000, 11)
    stack = np.stack([ev.stages[k] for k in members])
    assert np.array_equal(ev.total, stack.max(axis=0) if first is np.argmax else stack.min(axis=0))
    contrib = ev.contributions(np.arange(5000))
    credited = np.argmax(np.stack([contrib[k] for k in members]) > 0, axis=0)
    assert np.array_equal(credited, first(stack, axis=0))
    assert 0 < np.mean(credited == 1) < 1
    assert not np.any(credited == 2)  # c2 always ties with c1, so it is never the first to reach the value


def test_seed_reproduces_exactly_and_streams_are_per_stage() -> None:
    tree = vb.Sequence(stages={"a": vb.LogNormal(p50_ms=100, p95_ms=200), "b": vb.Uniform(low_ms=0, high_ms=9)})
    assert np.array_equal(vb.evaluate(tree, 1000, 42).total, vb.evaluate(tree, 1000, 42).total)
    assert not np.array_equal(vb.evaluate(tree, 1000, 42).total, vb.evaluate(tree, 1000, 43).total)
    # common random numbers: changing stage b leaves stage a's samples untouched
    other = vb.Sequence(stages={"a": vb.LogNormal(p50_ms=100, p95_ms=200), "b": vb.Fixed(value_ms=1)})
    assert np.array_equal(vb.evaluate(tree, 1000, 42).stages["a"], vb.evaluate(other, 1000, 42).stages["a"])


def test_duplicate_stage_names_are_refused_when_the_tree_is_built() -> None:
    with pytest.raises(ValueError, match=r"two stages are named 'a' \(stages\.a and stages\.g\.stages\.a\)"):
        vb.Sequence(stages={"a": vb.Fixed(value_ms=1), "g": vb.AllOf(stages={"a": vb.Fixed(value_ms=2)})})


dists = st.one_of(
    st.builds(lambda v: vb.Fixed(value_ms=v), st.floats(0, 1000)),
    st.builds(lambda a, b: vb.Uniform(low_ms=min(a, b), high_ms=max(a, b)), st.floats(0, 500), st.floats(0, 500)),
    st.builds(lambda m, r: vb.LogNormal(p50_ms=m, p95_ms=m * r), st.floats(1, 1000), st.floats(1, 5)),
)


@settings(max_examples=40, deadline=None)
@given(base=dists, extra=dists, seed=st.integers(0, 2**32))
def test_adding_a_non_negative_stage_never_lowers_any_percentile(base, extra, seed) -> None:
    before = vb.evaluate(vb.Sequence(stages={"a": base}), 2000, seed).total
    after = vb.evaluate(vb.Sequence(stages={"a": base, "b": extra}), 2000, seed).total
    qs = [50, 90, 95, 99]
    assert np.all(np.percentile(after, qs) >= np.percentile(before, qs) - 1e-9)


@settings(max_examples=30, deadline=None)
@given(a=dists, b=dists, seed=st.integers(0, 2**32))
def test_max_never_below_either_branch_and_sum_never_below_max(a, b, seed) -> None:
    mx = vb.evaluate(vb.AllOf(stages={"a": a, "b": b}), 500, seed)
    sm = vb.evaluate(vb.Sequence(stages={"a": a, "b": b}), 500, seed)
    assert np.all(mx.total >= mx.stages["a"])
    assert np.all(mx.total >= mx.stages["b"])
    assert np.all(sm.total >= mx.total - 1e-9)


@settings(max_examples=200, deadline=None)
@given(
    xs=st.lists(st.floats(0, 1e6, allow_nan=False) | st.sampled_from([0.0, 1.0, 2.5]), min_size=1, max_size=300),
    qs=st.lists(st.floats(0, 100) | st.sampled_from([0.0, 50.0, 95.0, 99.0, 100.0]), min_size=1, max_size=6),
)
def test_report_percentiles_equal_numpys_linear_percentiles_exactly(xs, qs) -> None:
    # selection (partitions), not a sort: the values must still be numpy's, bit for bit, ties included
    from voicebudget._report import percentiles

    arr = np.asarray(xs)
    before = arr.copy()
    assert np.array_equal(percentiles(arr, qs), np.percentile(arr, qs))
    assert np.array_equal(arr, before)  # the caller's samples keep their order
    work = np.full(arr.size, np.nan)  # a scratch buffer (a report reuses one for every stage)
    assert np.array_equal(percentiles(arr, qs, work=work), np.percentile(arr, qs))
    assert np.array_equal(percentiles(arr, qs, work=arr), np.percentile(before, qs))  # selecting in place


def test_report_percentiles_exact_on_a_large_sample() -> None:
    from voicebudget._report import percentile_from_top, percentiles

    x = np.random.default_rng(3).lognormal(6.0, 0.4, 1_000_003)
    qs = [50.0, 90.0, 95.0, 99.0, 99.9, 0.0, 100.0]
    assert np.array_equal(percentiles(x, qs), np.percentile(x, qs))
    atom = np.where(np.arange(x.size) % 10 == 0, x, 0.0)  # 0 ms in 90% of turns (a warm connection)
    assert np.array_equal(percentiles(atom, qs), np.percentile(atom, qs))
    for q in (75.0, 95.0, 97.5, 99.0, 99.9, 100.0):  # among the values above a threshold: the same values
        assert percentile_from_top(x, q) == np.percentile(x, q)
        assert percentile_from_top(atom, q) == np.percentile(atom, q)
    report = vb.build_report("x", vb.Budget(total_ms=400, percentile=97.5), x, {"a": x})
    assert report.total.at_percentile_ms == np.percentile(x, 97.5)
    assert report.stage("a").stats.p99_ms == np.percentile(x, 99)


def test_variants_sharing_a_stage_report_its_exact_stats() -> None:
    # the bundled scenario's variants share five of seven stages (common random numbers); a run
    # summarises a shared stage once, and each variant's stats must still be those of its own samples
    from importlib import resources

    scenario = vb.load_scenario(str(resources.files("voicebudget") / "data" / "webrtc-cascade.toml"))
    result = vb.simulate(scenario, samples=40_000, seed=7)
    for name, pipeline in scenario.pipelines().items():
        ev = vb.evaluate(pipeline.to_tree(), 40_000, 7)
        report = result.report(name)
        assert report.total == vb.LatencyStats.of(ev.total, 95)
        for stage, samples in ev.stages.items():
            assert report.stage(stage).stats == vb.LatencyStats.of(samples, 95), (name, stage)
    network = [r.stage("network").stats.p99_ms for r in result.reports]
    assert network[0] >= 1300  # cold connections only in the baseline
    assert network[1] == network[2] == 0.0


def _phone_turn(uplink_in_transport: bool, uplink_ms: float = 120.0) -> vb.Scenario:
    asr = {"kind": "lognormal", "p50_ms": 247, "p95_ms": 298}
    transport = {"kind": "lognormal", "p50_ms": 100, "p95_ms": 200}
    before = not uplink_in_transport
    pipeline = {
        "kind": "voice_turn",
        "endpointing": {"kind": "fixed", "value_ms": 200 + (uplink_ms if before else 0)},
        "asr": {"kind": "shifted", "shift_ms": uplink_ms, "base": asr} if before else asr,
        "network": {"kind": "fixed", "value_ms": 0},
        "llm": {
            "kind": "llm",
            "ttft": {"kind": "lognormal", "p50_ms": 400, "p95_ms": 600},
            "tpot": {"kind": "fixed", "value_ms": 5},
        },
        "tts": {"kind": "tts", "ttfb": {"kind": "lognormal", "p50_ms": 135, "p95_ms": 187}},
        "transport": transport if before else {"kind": "shifted", "shift_ms": uplink_ms, "base": transport},
    }
    return vb.parse_scenario({"name": "phone", "pipeline": pipeline})


def test_the_callers_leg_in_transport_is_the_same_turn_as_before_the_commit() -> None:
    # docs/scenarios.md ("The voice turn"): a caller's leg to the server (a Twilio call) delays what the
    # server hears of the end of speech, so endpointing and ASR alike; max(e + u, a + u) = max(e, a) + u, so
    # writing it into transport gives the same voice-to-voice turn, sample for sample (to rounding), and the server-side
    # figure (voice-to-voice minus transport) is what the framework reports: it starts at what it heard.
    into_transport = vb.simulate(_phone_turn(True), samples=50_000, seed=3).report("baseline")
    before_commit = vb.simulate(_phone_turn(False), samples=50_000, seed=3).report("baseline")
    np.testing.assert_allclose(into_transport.total_samples_ms, before_commit.total_samples_ms, rtol=0, atol=1e-9)
    assert into_transport.server_side is not None
    assert before_commit.server_side is not None
    assert before_commit.server_side.p95_ms - into_transport.server_side.p95_ms == pytest.approx(120.0)


def _stage(doc: dict) -> object:
    return vb.parse_scenario({"name": "s", "pipeline": {"kind": "sequence", "stages": {"x": doc}}}).pipeline.stages["x"]


LLM = {"kind": "llm", "ttft": {"kind": "lognormal", "p50_ms": 400, "p95_ms": 600}}
LEAVES = {
    "fixed": {"kind": "fixed", "value_ms": 7.5},
    "uniform": {"kind": "uniform", "low_ms": 5, "high_ms": 25},
    "normal": {"kind": "normal", "mean_ms": 50, "std_ms": 40, "floor_ms": 10},
    "lognormal": {"kind": "lognormal", "p50_ms": 247, "p95_ms": 298},
    "empirical": {"kind": "empirical", "samples_ms": [1, 2, 3, 50, 7.5]},
    "mixture": {
        "kind": "mixture",
        "weights": [0.3, 0.7],
        "components": [{"kind": "fixed", "value_ms": 5}, {"kind": "lognormal", "p50_ms": 40, "p95_ms": 90}],
    },
    "shifted": {"kind": "shifted", "shift_ms": 200, "base": {"kind": "lognormal", "p50_ms": 90, "p95_ms": 120}},
    "llm": {**LLM, "tpot": {"kind": "lognormal", "p50_ms": 5, "p95_ms": 8}, "first_phrase_tokens": 12},
    "llm_range": {
        **LLM,
        "tpot": {"kind": "uniform", "low_ms": 1, "high_ms": 3},
        "first_phrase_tokens": {"low": 6, "high": 70_000},
    },
    "llm_observed": {**LLM, "tpot": {"kind": "fixed", "value_ms": 2}, "first_phrase_tokens": [3, 9, 27]},
    "tts": {"kind": "tts", "ttfb": {"kind": "lognormal", "p50_ms": 135, "p95_ms": 187}},
    "tts_silence": {
        "kind": "tts",
        "ttfb": {"kind": "lognormal", "p50_ms": 135, "p95_ms": 187},
        "leading_silence": {"kind": "uniform", "low_ms": 5, "high_ms": 40},
    },
    "network": {
        "kind": "network",
        "base": {"kind": "uniform", "low_ms": 1, "high_ms": 4},
        "cold": {"probability": 0.1, "extra": {"kind": "fixed", "value_ms": 1300}},
    },
}


@pytest.mark.parametrize("kind", sorted(LEAVES))
def test_sample_into_draws_what_sample_draws(kind) -> None:
    # the engine draws into reused buffers (pieces of 65,536 turns for integers): the same samples, bit for bit
    from voicebudget._algebra import Buffers

    stage = _stage(LEAVES[kind])
    n = 200_003
    out = np.full(n, np.nan)
    drawn = stage.sample_into(np.random.default_rng(5), out, Buffers(n))
    assert drawn is out
    assert np.array_equal(drawn, stage.sample(np.random.default_rng(5), n))


def test_leaves_draw_what_numpys_own_samplers_draw() -> None:
    # a seed gives the samples it gave when each kind called numpy's sampler for all n turns at once
    n, rng = 100_000, np.random.default_rng
    uniform, normal, lognormal = (_stage(LEAVES[k]) for k in ("uniform", "normal", "lognormal"))
    assert np.array_equal(uniform.sample(rng(1), n), rng(1).uniform(5, 25, n))
    assert np.array_equal(normal.sample(rng(1), n), np.maximum(rng(1).normal(50, 40, n), 10))
    z = rng(1).standard_normal(n)
    assert np.array_equal(lognormal.sample(rng(1), n), np.exp(z * lognormal.sigma + lognormal.mu))
    assert np.array_equal(
        _stage(LEAVES["empirical"]).sample(rng(1), n), np.array([1, 2, 3, 50, 7.5])[rng(1).integers(0, 5, n)]
    )
    llm = _stage(LEAVES["llm_range"])
    g = rng(1)
    ttft = llm.ttft.sample(g, n)
    expected = ttft + g.integers(6, 70_001, n).astype(np.float64) * g.uniform(1, 3, n)
    assert np.array_equal(llm.sample(rng(1), n), expected)


@settings(max_examples=150, deadline=None)
@given(
    xs=st.lists(st.floats(0, 1e6, allow_nan=False) | st.sampled_from([0.0, 1.0, 2.5]), min_size=1, max_size=3000),
    q=st.floats(0, 100) | st.sampled_from([0.0, 75.0, 95.0, 99.0, 99.9, 100.0]),
)
def test_percentile_from_the_top_is_numpys(xs, q) -> None:
    from voicebudget._report import percentile_from_top

    arr = np.asarray(xs)
    before = arr.copy()
    assert percentile_from_top(arr, q) == np.percentile(arr, q)
    assert np.array_equal(arr, before)


def test_a_report_selecting_in_the_callers_buffers_gives_the_same_report() -> None:
    # build_report(reorder=..., server_side_less=...) summarises stages in their own arrays and takes the
    # server side from the total; the figures are those of the copies it used to select in
    from importlib import resources

    scenario = vb.load_scenario(str(resources.files("voicebudget") / "data" / "webrtc-cascade.toml"))
    ev = vb.evaluate(scenario.pipeline.to_tree(), 300_000, 5)
    budget = vb.Budget(total_ms=800, percentile=97)
    server = ev.total - ev.stages["transport"]
    plain = vb.build_report("b", budget, ev.total, ev.stages, contributions=ev.contributions, server_side_ms=server)
    stages = {k: v.copy() for k, v in ev.stages.items()}
    reordered = vb.build_report(
        "b", budget, ev.total, stages, contributions=ev.contributions, reorder=set(stages), server_side_less="transport"
    )
    assert reordered.to_dict() == plain.to_dict()
    assert reordered.server_side == plain.server_side
    assert [s.tail_mean_ms for s in reordered.stages] == [s.tail_mean_ms for s in plain.stages]
    assert not np.array_equal(stages["asr"], ev.stages["asr"])  # selected in place: reordered
    with pytest.raises(ValueError, match="server_side_less: no stage 'speaker'"):
        vb.build_report("b", budget, ev.total, ev.stages, server_side_less="speaker")


def test_a_run_keeps_one_set_of_buffers_for_its_variants() -> None:
    # simulate draws every variant into the same buffers; the totals its reports keep are their own arrays
    from importlib import resources

    scenario = vb.load_scenario(str(resources.files("voicebudget") / "data" / "webrtc-cascade.toml"))
    result = vb.simulate(scenario, samples=20_000, seed=3)
    totals = [r.total_samples_ms for r in result.reports]
    assert len({id(t) for t in totals}) == 3
    for name, pipeline in scenario.pipelines().items():
        assert np.array_equal(result.report(name).total_samples_ms, vb.evaluate(pipeline.to_tree(), 20_000, 3).total)
