"""Council latency: order statistics, mixtures, the algebra's streams, tail attribution, cost, user time."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

import voicebudget as vb
from voicebudget.councils import Council, UserTime, evaluate_council, sample_council

P50, P95 = 200.0, 400.0
MU, SIGMA = math.log(P50), math.log(P95 / P50) / NormalDist().inv_cdf(0.95)


def member_quantile(q: float) -> float:
    """Exact quantile of the log-normal member."""
    return math.exp(MU + SIGMA * NormalDist().inv_cdf(q))


def member(name: str, p: float = 0.7, **stage: float) -> dict[str, object]:
    spec = stage or {"p50_ms": P50, "p95_ms": P95}
    return {"name": name, "p": p, "stage": {"kind": "lognormal", **spec}}


def council(topology: str, n: int = 4, **kw: object) -> Council:
    members = kw.pop("members", None) or [member(f"m{i}") for i in range(n)]
    return Council.model_validate({"topology": topology, "members": members, **kw})


def test_wait_for_all_of_four_has_its_median_at_a_members_84th_percentile() -> None:
    # P(max <= x) = F(x)^4 = 1/2  =>  F(x) = 0.5^(1/4) = 0.8409
    total = sample_council(council("all"), 400_000, seed=11).total
    q = 0.5 ** (1 / 4)
    assert q == pytest.approx(0.841, abs=5e-4)
    assert np.median(total) == pytest.approx(member_quantile(q), rel=0.005)


def test_first_one_of_four_has_its_median_at_a_members_16th_percentile() -> None:
    # P(min > x) = (1 - F(x))^4 = 1/2  =>  F(x) = 1 - 0.5^(1/4) = 0.1591
    total = sample_council(council("first_k", k=1), 400_000, seed=12).total
    assert np.median(total) == pytest.approx(member_quantile(1 - 0.5 ** (1 / 4)), rel=0.005)


def test_council_members_draw_the_algebras_streams() -> None:
    c = council("first_k", k=2)
    tree = vb.KOfN(stages={mb.name: mb.stage for mb in c.members}, k=2)
    np.testing.assert_array_equal(sample_council(c, 5000, seed=3).total, vb.evaluate(tree, 5000, 3).total)


def test_common_random_numbers_across_configurations() -> None:
    a = sample_council(council("all", n=3), 2000, seed=9)
    b = sample_council(council("first_k", n=4, k=2), 2000, seed=9)
    np.testing.assert_array_equal(a.parts["m1"], b.parts["m1"])


def test_members_within_budget_council_over_budget_and_the_tail_driver_is_named() -> None:
    members = [
        member("steady", p50_ms=300, p95_ms=350),
        member("steady-2", p50_ms=300, p95_ms=350),
        member("jittery", p50_ms=250, p95_ms=360),
    ]
    c = council("all", members=members)
    res = evaluate_council(c, vb.Budget(total_ms=365), samples=100_000, seed=2)
    for s in res.report.stages:
        assert s.stats.p95_ms < 362, f"member {s.name} alone is within budget"
    assert not res.passed
    assert res.report.total.p95_ms > 372
    assert res.tail_driver == "jittery"
    assert "jittery" in res.summary()
    shares = [s.tail_share for s in res.report.stages]
    assert sum(shares) == pytest.approx(1.0)


def test_router_latency_is_the_routing_mixture() -> None:
    members = [
        {**member("small", p50_ms=100, p95_ms=150), "share": 0.8},
        {**member("large", p50_ms=1000, p95_ms=1500), "share": 0.2},
    ]
    router = {"latency": {"kind": "fixed", "value_ms": 20}, "accuracy": 0.9}
    res = evaluate_council(council("router", members=members, router=router), samples=200_000, seed=4)
    # P(large) = 0.2 * 0.9 + 0.8 * 0.1 = 0.26
    total = res.report.total_samples_ms
    assert np.mean(total > 500) == pytest.approx(0.26, abs=0.004)
    assert res.report.stage("router").tail_ms == pytest.approx(20.0)
    assert res.tail_driver == "large"


def test_cascade_escalates_at_the_scorers_rate_and_adds_latencies() -> None:
    members = [
        {
            "name": "small",
            "p": 0.8,
            "stage": {"kind": "fixed", "value_ms": 100},
            "output_tokens": 10,
            "usd_per_call": 0.001,
        },
        {"name": "large", "p": 0.95, "stage": {"kind": "fixed", "value_ms": 300}, "usd_per_call": 0.01},
    ]
    scorer = {
        "latency": {"kind": "fixed", "value_ms": 10},
        "accept_if_correct": 0.9,
        "accept_if_wrong": 0.2,
        "usd_per_call": 0.0001,
    }
    res = evaluate_council(council("cascade", members=members, scorer=scorer), samples=100_000, seed=1)
    accept = 0.8 * 0.9 + 0.2 * 0.2  # 0.76
    total = res.report.total_samples_ms
    assert set(np.unique(total)) == {110.0, 410.0}
    assert np.mean(total == 410.0) == pytest.approx(1 - accept, abs=0.004)
    assert res.cost_per_turn_usd == pytest.approx(0.001 + 0.0001 + (1 - accept) * 0.01, abs=1e-12)


def test_aggregator_prefill_grows_with_the_answers_it_reads() -> None:
    members = [
        {"name": f"m{i}", "p": 0.7, "stage": {"kind": "fixed", "value_ms": 100 * (i + 1)}, "output_tokens": 50}
        for i in range(3)
    ]
    agg = {
        "ttft": {"kind": "fixed", "value_ms": 80},
        "prefill_ms_per_token": 0.2,
        "tpot": {"kind": "fixed", "value_ms": 5},
        "first_phrase_tokens": 10,
        "prompt_tokens": 200,
        "input_usd_per_mtok": 1.0,
    }
    all3 = evaluate_council(council("all", members=members, aggregator=agg), samples=100)
    # 300 (slowest) + 80 + 0.2 * 150 + 10 * 5
    assert all3.report.total.p50_ms == pytest.approx(460.0)
    first2 = evaluate_council(council("first_k", k=2, members=members, aggregator=agg), samples=100)
    assert first2.report.total.p50_ms == pytest.approx(200 + 80 + 0.2 * 100 + 50)
    assert first2.cost_per_turn_usd == pytest.approx((200 + 100) * 1.0 / 1e6)


def test_expected_user_time_per_completed_request() -> None:
    ut = UserTime(user_turn_ms=2000, agent_turn_ms=3000, repair_error_rate=0.5)
    assert ut.exchanges(0.2) == pytest.approx(1 + 0.2 / 0.5)
    assert ut.expected_ms(0.2, 500) == pytest.approx(1.4 * 5500)
    assert UserTime().exchanges(0.2) == pytest.approx(1 / 0.8)  # e_r defaults to e
    members = [{"name": f"m{i}", "p": 0.7, "stage": {"kind": "fixed", "value_ms": 400}} for i in range(3)]
    res = evaluate_council(council("all", members=members, user_time=ut.model_dump()), samples=100)
    assert res.expected_user_time_ms == pytest.approx((1 + 0.216 / 0.5) * (2000 + 400 + 3000))
    doc = res.to_dict()
    assert {"latency", "quality", "cost_per_turn", "expected_user_time_ms", "passed"} <= set(doc)
    assert doc["latency"]["p95_ms"] == pytest.approx(400.0)


def test_a_council_is_a_stage_in_a_scenario(tmp_path: object) -> None:
    members = [member(f"m{i}") for i in range(3)]
    doc = {
        "name": "council in a pipeline",
        "pipeline": {
            "kind": "sequence",
            "stages": {
                "asr": {"kind": "fixed", "value_ms": 100},
                "llm": {"kind": "council", "topology": "all", "members": members},
            },
        },
        "variants": {
            "fastest": {"stages": {"llm": {"kind": "council", "topology": "first_k", "k": 1, "members": members}}}
        },
    }
    run = vb.simulate(vb.parse_scenario(doc), samples=100_000, seed=1)
    base, fast = run.report("baseline"), run.report("fastest")
    assert base.stage("llm").stats.p50_ms == pytest.approx(member_quantile(0.5 ** (1 / 3)), rel=0.01)
    assert fast.stage("llm").stats.p50_ms == pytest.approx(member_quantile(1 - 0.5 ** (1 / 3)), rel=0.01)


def test_first_k_reads_exactly_k_answers_even_when_latencies_tie() -> None:
    members = [
        {"name": f"m{i}", "p": p, "output_tokens": 10, "stage": {"kind": "fixed", "value_ms": 300}}
        for i, p in enumerate([0.9, 0.6, 0.6])
    ]
    agg = {"ttft": {"kind": "fixed", "value_ms": 0}, "prefill_ms_per_token": 1.0}
    res = evaluate_council(council("first_k", k=1, members=members, aggregator=agg), samples=100)
    assert res.report.total.p50_ms == pytest.approx(300 + 10)  # one answer of 10 tokens read
    assert res.quality.accuracy == pytest.approx(0.9)  # ties break in member order: m0 is first
