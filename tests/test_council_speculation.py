"""Reply cache and preemptive generation: mixture CDFs, hit rates, break-even, extra calls."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

import voicebudget as vb
from voicebudget.councils import (
    Preemptive,
    ReplyCache,
    UserTime,
    break_even_false_hit_rate,
    evaluate_cache,
    evaluate_preemptive,
)


def lognormal_cdf(x: float, p50: float, p95: float) -> float:
    sigma = math.log(p95 / p50) / NormalDist().inv_cdf(0.95)
    return NormalDist().cdf((math.log(x) - math.log(p50)) / sigma)


def cache(**kw: object) -> ReplyCache:
    doc = {
        "hit_rate": 0.3,
        "hit": {"kind": "lognormal", "p50_ms": 60, "p95_ms": 150},
        "miss": {"kind": "lognormal", "p50_ms": 450, "p95_ms": 700},
        **kw,
    }
    return ReplyCache.model_validate(doc)


def test_cache_latency_cdf_is_the_hit_miss_mixture() -> None:
    res = evaluate_cache(cache(), samples=400_000, seed=7)
    total = res.report.total_samples_ms
    expected = 0.3 * lognormal_cdf(200, 60, 150) + 0.7 * lognormal_cdf(200, 450, 700)
    se = math.sqrt(expected * (1 - expected) / total.size)
    assert np.mean(total <= 200) == pytest.approx(expected, abs=4 * se)
    assert {"cache_hit", "cache_miss"} <= {s.name for s in res.report.stages}


def test_per_turn_and_per_conversation_hit_rates() -> None:
    c = cache(false_hit_rate=0.03, conversation_turns=8)
    assert c.conversation_hit_rate() == pytest.approx(1 - 0.7**8)
    assert c.conversation_false_hit_rate() == pytest.approx(1 - (1 - 0.3 * 0.03) ** 8)
    doc = evaluate_cache(c, samples=2000).to_dict()
    assert doc["conversation_hit_rate"] == pytest.approx(0.94235199, abs=1e-8)
    assert {"latency", "expected_user_time_ms", "cost_per_turn", "break_even_false_hit_rate"} <= set(doc)


def test_break_even_false_hit_rate_equalises_user_time() -> None:
    ut = UserTime(user_turn_ms=2500, agent_turn_ms=4000, repair_error_rate=0.3)
    fixed = {"hit": {"kind": "fixed", "value_ms": 50}, "miss": {"kind": "fixed", "value_ms": 650}}
    e_star = break_even_false_hit_rate(0.3, 0.05, 50, 650, ut)
    assert 0.05 < e_star < 1
    res = evaluate_cache(cache(false_hit_rate=e_star, miss_error_rate=0.05, **fixed), samples=1000, user_time=ut)
    assert res.expected_user_time_ms == pytest.approx(res.expected_user_time_without_ms, rel=1e-9)
    worse = evaluate_cache(
        cache(false_hit_rate=e_star + 0.01, miss_error_rate=0.05, **fixed), samples=1000, user_time=ut
    )
    assert worse.expected_user_time_ms > worse.expected_user_time_without_ms
    # with e_r defaulting to e (X = 1 / (1 - e)) the same equality holds
    e_geo = break_even_false_hit_rate(0.3, 0.05, 50, 650, UserTime())
    geo = evaluate_cache(cache(false_hit_rate=e_geo, miss_error_rate=0.05, **fixed), samples=1000)
    assert geo.expected_user_time_ms == pytest.approx(geo.expected_user_time_without_ms, rel=1e-9)


def test_cache_cost_counts_presynthesised_candidates_and_misses() -> None:
    c = cache(candidates_per_turn=3, tts_usd_per_candidate=0.0004, miss_usd=0.002, lookup_usd=0.00001)
    assert evaluate_cache(c, samples=100).cost_per_turn_usd == pytest.approx(0.00001 + 0.0012 + 0.7 * 0.002)


def test_cache_miss_path_can_be_a_council() -> None:
    members = [
        {"name": f"m{i}", "p": 0.7, "usd_per_call": 0.001, "stage": {"kind": "fixed", "value_ms": 300}}
        for i in range(3)
    ]
    c = cache(miss={"kind": "council", "topology": "all", "members": members}, false_hit_rate=0.02)
    res = evaluate_cache(c, samples=1000)
    assert res.error_rate == pytest.approx(0.3 * 0.02 + 0.7 * 0.216)
    assert res.cost_per_turn_usd == pytest.approx(0.7 * 0.003)


def test_preemptive_generation_saves_the_lead_when_the_transcript_matches() -> None:
    pre = Preemptive.model_validate(
        {
            "stage": {"kind": "fixed", "value_ms": 500},
            "trigger_rate": 0.8,
            "match_rate": 0.75,
            "retries": 0.5,
            "speculative_tts": True,
            "lead": {"kind": "fixed", "value_ms": 200},
        }
    )
    res = evaluate_preemptive(pre, samples=200_000, seed=1)
    total = res.report.total_samples_ms
    assert np.mean(total == 300.0) == pytest.approx(0.8 * 0.75, abs=0.004)
    assert res.baseline.total.mean_ms == pytest.approx(500.0)
    assert pre.extra_llm_calls == pytest.approx(0.8 * (0.5 + 0.25))
    assert pre.extra_tts_calls == pytest.approx(pre.extra_llm_calls)
    # a lead longer than the generation leaves nothing to wait for
    long = pre.model_copy(update={"lead": vb.Fixed(value_ms=900), "trigger_rate": 1.0, "match_rate": 1.0})
    assert float(np.max(long.sample(np.random.default_rng(0), 100))) == 0.0


def test_cache_and_preemptive_are_scenario_stages() -> None:
    doc = {
        "name": "speculation",
        "pipeline": {
            "kind": "sequence",
            "stages": {
                "asr": {"kind": "fixed", "value_ms": 100},
                "llm": {
                    "kind": "preemptive",
                    "stage": {"kind": "fixed", "value_ms": 400},
                    "trigger_rate": 1.0,
                    "match_rate": 1.0,
                    "lead": {"kind": "fixed", "value_ms": 100},
                },
            },
        },
        "variants": {
            "cache": {
                "stages": {
                    "llm": {
                        "kind": "reply_cache",
                        "hit_rate": 0.5,
                        "hit": {"kind": "fixed", "value_ms": 50},
                        "miss": {"kind": "fixed", "value_ms": 400},
                    }
                }
            }
        },
    }
    run = vb.simulate(vb.parse_scenario(doc), samples=100_000, seed=1)
    assert run.report("baseline").total.p50_ms == pytest.approx(400.0)
    assert run.report("cache").total.mean_ms == pytest.approx(100 + 0.5 * 50 + 0.5 * 400, rel=0.01)
