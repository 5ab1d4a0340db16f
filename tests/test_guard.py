"""BudgetGuard: closed-form decisions, a fake clock for the live turn and its policy, calibration
against simulated turns, and learning from recorded turns."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fake_clock import FakeClock

import voicebudget
from voicebudget import Budget, BudgetGuard, GuardDecision, TurnRecorder

ROOT_SCENARIO = "voicebudget/data/webrtc-cascade.toml"


def uniform_guard(**options: object) -> BudgetGuard:
    """llm takes 0, 1, ..., 999 ms (one turn each), tts always 100 ms; a grid on every value: exact."""
    samples = {"llm": np.arange(1000.0), "tts": np.full(1000, 100.0)}
    return BudgetGuard(Budget(total_ms=800), samples, levels=2000, resolution=2000, **options)  # type: ignore[arg-type]


def test_decision_conditions_on_the_time_already_spent() -> None:
    guard = uniform_guard()
    # 300 ms in, 200 of them in the LLM: the LLM lasts >= 200 ms (rows 200..999, 800 rows). The turn fits
    # when 300 + (llm - 200) + 100 <= 800, i.e. llm <= 600: rows 200..600 = 401 of 800.
    d = guard.decide("llm", elapsed_ms=300.0, in_stage_ms=200.0)
    assert d.rows == 800
    assert d.p_fit == pytest.approx(401 / 800)
    assert d.fits is False
    # the rest at p95: the ceil(0.95 * 800) = 760th smallest of llm + 100 over rows 200..999 (959 + 100),
    # minus the 200 ms already spent
    assert d.rest_ms == pytest.approx(859.0)
    assert d.budget_left_ms == pytest.approx(500.0)
    assert d.slack_ms == pytest.approx(-359.0)
    # in TTS: only its fixed 100 ms remain, less what it already took
    d2 = guard.decide("tts", elapsed_ms=650.0, in_stage_ms=30.0)
    assert (d2.p_fit, d2.rest_ms, d2.fits) == (1.0, pytest.approx(70.0), True)
    # at the start the whole distribution counts: llm + 100 <= 800 for llm 0..700
    assert guard.decide("llm", 0.0).p_fit == pytest.approx(701 / 1000)


def test_beyond_the_data_the_tail_excess_is_used() -> None:
    guard = uniform_guard(min_rows=50)
    d = guard.decide("llm", elapsed_ms=1000.0, in_stage_ms=990.0)
    # the longest 50 rows (950..999): excess over 950 is 0..49 ms, plus 100 ms of TTS
    assert d.extrapolated is True
    assert d.rows == 50
    assert d.rest_ms == pytest.approx(100.0 + 47.0)  # ceil(0.95 * 50) = 48th smallest excess: 47
    assert d.p_fit == 0.0  # the budget is already spent


def test_thinned_levels_err_on_the_slow_side() -> None:
    exact = uniform_guard()
    thin = BudgetGuard(Budget(total_ms=800), {"llm": np.arange(1000.0), "tts": np.full(1000, 100.0)}, resolution=16)
    for elapsed, in_stage in [(0.0, 0.0), (300.0, 200.0), (500.0, 450.0)]:
        a, b = exact.decide("llm", elapsed, in_stage), thin.decide("llm", elapsed, in_stage)
        assert b.p_fit <= a.p_fit + 1e-12
        assert b.p_fit >= a.p_fit - 1 / 16 - 1 / 64 - 1e-12  # one kept rank, plus the coarser grid
        assert b.rest_ms >= a.rest_ms - 1e-9


def test_live_turn_with_a_fake_clock_calls_the_policy_once() -> None:
    clock = FakeClock()
    said: list[GuardDecision] = []

    def filler(decision: GuardDecision) -> str:
        said.append(decision)
        return "one moment..."

    guard = uniform_guard(policy=filler)
    live = guard.turn(clock=clock)
    clock.at_ms(100)
    first = live.check()  # 100 ms into the LLM: llm >= 100, fits when llm <= 700: 601 / 900
    assert (first.stage, first.elapsed_ms, first.in_stage_ms) == ("llm", 100.0, 100.0)
    assert first.p_fit == pytest.approx(601 / 900)
    assert first.action == "one moment..."
    assert live.acted
    clock.at_ms(400)
    second = live.check()
    assert second.action is None  # once per turn
    assert len(said) == 1
    clock.at_ms(650)
    live.enter("tts")
    clock.at_ms(690)
    d = live.check()
    assert (d.stage, d.elapsed_ms, d.in_stage_ms, d.p_fit) == ("tts", 690.0, 40.0, 1.0)
    assert d.rest_ms == pytest.approx(60.0)
    # a fresh turn may act again
    live2 = guard.turn(clock=clock)
    clock.at_ms(1000)
    assert live2.check().action == "one moment..."


def test_calibration_against_simulated_turns() -> None:
    """Of the decisions with p_fit >= 0.95, at least 95% of the turns fit (fresh turns, another seed).

    The live turn polls the guard every 150 ms until first audio; endpointing and ASR finalisation run
    in parallel, so they are one phase (a live turn cannot tell which of the two will gate it).
    """
    from voicebudget._algebra import evaluate

    budget_ms = 2300.0  # about the baseline's p95: p_fit starts near 0.95 and moves both ways
    scenario = voicebudget.load_scenario(ROOT_SCENARIO)
    scenario = scenario.model_copy(update={"budget": Budget(total_ms=budget_ms, percentile=95)})
    phases = {"commit": ["endpointing", "asr"]}
    guard = BudgetGuard.from_scenario(scenario, samples=20_000, seed=1, phases=phases)
    assert guard.stages == ("commit", "framework", "network", "llm", "tts", "transport")
    n = 4_000
    credit = evaluate(scenario.pipelines()["baseline"].to_tree(), n, 2).contributions(np.arange(n))
    credit["commit"] = credit.pop("endpointing") + credit.pop("asr")
    ends = np.cumsum(np.stack([credit[k] for k in guard.stages], axis=1), axis=1)
    total = ends[:, -1]
    predicted: list[bool] = []
    actual: list[bool] = []
    probs: list[float] = []
    confident_at: set[str] = set()
    for i in range(n):
        for t in np.arange(0.0, total[i], 150.0):  # polls before first audio
            k = int(np.searchsorted(ends[i], t, side="right"))
            start = 0.0 if k == 0 else float(ends[i, k - 1])
            d = guard.decide(guard.stages[k], float(t), float(t) - start)
            predicted.append(d.fits)
            probs.append(d.p_fit)
            actual.append(total[i] <= budget_ms)
            if d.fits:
                confident_at.add(d.stage)
    pred, act = np.array(predicted), np.array(actual)
    assert pred.sum() >= 5_000  # enough confident decisions to judge
    assert confident_at == {"framework", "llm", "tts", "transport"}
    assert act[pred].mean() >= 0.95
    # and calibrated across the range: in each band of p_fit with enough decisions, the share of turns
    # that fit is the mean predicted probability within 0.05 (measured: 0.02 at most)
    p = np.array(probs)
    for lo, hi in [(0.0, 0.2), (0.2, 0.5), (0.5, 0.8), (0.9, 0.95), (0.99, 1.01)]:
        band = (p >= lo) & (p < hi)
        assert band.sum() >= 400, (lo, hi, band.sum())
        assert abs(p[band].mean() - act[band].mean()) < 0.05, (lo, hi)
    assert act[~pred].mean() < 0.95  # and the others are the risky ones
    # docs/checker.md quotes this run's figures
    page = " ".join((Path(__file__).resolve().parents[1] / "docs" / "checker.md").read_text(encoding="utf-8").split())
    assert (
        f"({len(predicted):,} decisions). Of the {int(pred.sum()):,} decisions with `p_fit >= 0.95`, "
        f"{act[pred].mean():.0%} of the turns fit" in page
    )


def test_learns_from_recorded_turns() -> None:
    clock = FakeClock()
    recorder = TurnRecorder(clock=clock)
    for llm_ms in (200.0, 400.0):
        turn = recorder.turn()
        turn.mark("speech_end", at_ns=0)
        turn.add_stage("asr", start_ms=0.0, end_ms=100.0)
        turn.add_stage("llm", start_ms=100.0, end_ms=100.0 + llm_ms)
        turn.mark("first_audio", at_ms=100.0 + llm_ms)
        turn.end()
    guard = BudgetGuard.from_recorder(recorder, Budget(total_ms=450), min_rows=1, levels=10)
    assert guard.stages == ("asr", "llm", "untracked")
    assert guard.n_turns == 2
    assert guard.decide("asr", 0.0).p_fit == 0.5  # 300 ms fits 450, 500 does not
    # a third, slow turn learnt online; an incomplete turn is ignored
    slow = recorder.turn()
    slow.mark("speech_end", at_ns=0)
    slow.add_stage("asr", start_ms=0.0, end_ms=100.0)
    slow.add_stage("llm", start_ms=100.0, end_ms=900.0)
    slow.add_stage("tts", start_ms=900.0, end_ms=950.0)
    slow.mark("first_audio", at_ms=950.0)
    slow.end()
    assert guard.learn(slow) is True
    assert guard.learn(recorder.turn()) is False
    assert guard.stages == ("asr", "llm", "untracked", "tts")
    assert guard.n_turns == 3
    assert guard.decide("asr", 0.0).p_fit == pytest.approx(1 / 3)


def test_bad_inputs_are_clear_errors() -> None:
    budget = Budget(total_ms=800)
    with pytest.raises(ValueError, match="no stage samples"):
        BudgetGuard(budget, {})
    with pytest.raises(ValueError, match="one length"):
        BudgetGuard(budget, {"a": [1.0, 2.0], "b": [1.0]})
    with pytest.raises(ValueError, match=r"finite and >= 0 ms; stages with other values: \['b'\]"):
        BudgetGuard(budget, {"a": [1.0], "b": [-1.0]})
    with pytest.raises(ValueError, match="threshold must be in"):
        BudgetGuard(budget, {"a": [1.0]}, threshold=1.0)
    guard = BudgetGuard(budget, {"a": [1.0]})
    with pytest.raises(KeyError, match=r"no samples for stage 'llm'; stages: \['a'\]"):
        guard.decide("llm", 10.0)
    with pytest.raises(ValueError, match="in_stage_ms <= elapsed_ms"):
        guard.decide("a", 10.0, 20.0)
    with pytest.raises(KeyError, match="no variant 'nope'"):
        BudgetGuard.from_scenario(voicebudget.load_scenario(ROOT_SCENARIO), variant="nope", samples=10)
    with pytest.raises(voicebudget.ScenarioError, match="no complete turn"):
        BudgetGuard.from_recorder(TurnRecorder())
