"""Filler policies replayed offline (``voicebudget guard-report``): closed forms on turns built by hand, the
vectorised guard against its own ``decide``, and the command's numbers and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from voicebudget import Budget, BudgetGuard, load_scenario
from voicebudget.checker._fillers import (
    GuardPolicy,
    MedianPolicy,
    TimeoutPolicy,
    evaluate_fillers,
    guard_report,
    guard_report_file,
    parse_policy,
)
from voicebudget.cli import app

ROOT = Path(__file__).resolve().parent.parent
WEBRTC = str(ROOT / "scenarios" / "webrtc-cascade.toml")
runner = CliRunner()
N = 1000
X = np.arange(N) + 0.5
"""The LLM stage of turn i: i + 0.5 ms, an even grid over (0, 1000) ms."""


def fixed_commit() -> dict[str, np.ndarray]:
    """Commit 300 ms, then the LLM: voice-to-voice 300 + x; half the turns (x <= 500) fit 800 ms."""
    return {"commit": np.full(N, 300.0), "llm": X.copy()}


def two_commits() -> dict[str, np.ndarray]:
    """Commit 200 ms (even turns) or 400 ms (odd turns), then the LLM."""
    return {"commit": np.where(np.arange(N) % 2 == 0, 200.0, 400.0), "llm": X.copy()}


def share(condition: np.ndarray) -> float:
    return float(np.mean(condition))


def test_timeout_on_the_llm_closed_form() -> None:
    turns = fixed_commit()
    guard = BudgetGuard(Budget(total_ms=800), turns)
    (r,) = evaluate_fillers(turns, guard, [TimeoutPolicy(200.0, "llm")]).results
    # fires at 300 + 200 ms when the LLM takes longer than 200 ms: 800 of 1000 turns; wasted when it took
    # 200-500 ms (the reply fit): 300 turns; every late turn (x > 500) hears the filler at 500 ms
    assert (r.fired, r.wasted, r.rescued, r.still_over) == (0.8, 0.3, 0.5, 0.0)
    assert r.fire_p50_ms == 500.0
    assert r.heard_ms == 500.0  # 80% of turns hear the filler at 500 ms
    reply = 300.0 + np.percentile(X, 95)  # 1249.55 ms
    assert r.hidden_ms == pytest.approx(reply - 500.0)
    # heard 400 ms after firing: at 900 ms, too late for every late turn
    (slow,) = evaluate_fillers(turns, guard, [TimeoutPolicy(200.0, "llm")], filler_ms=400.0).results
    assert (slow.fired, slow.wasted, slow.rescued, slow.still_over) == (0.8, 0.3, 0.0, 0.5)
    assert slow.heard_ms == 900.0  # the 40% with x >= 600 hear the filler at 900 ms


def test_the_guard_at_q_one_half_closed_form() -> None:
    turns = fixed_commit()
    guard = BudgetGuard(Budget(total_ms=800), turns)
    (r,) = evaluate_fillers(turns, guard, [GuardPolicy(0.5)]).results
    # During the commit, and at the LLM's start (300 ms), P(fit) = P(x <= 500) = 0.5: no filler. At the next
    # poll (320 ms, 20 ms into the LLM) the guard conditions on x >= its next grid value, and P(fit) < 0.5:
    # every turn still running then (x > 20: 980 turns) gets its filler at 320 ms; 480 of them fit anyway.
    assert (r.fired, r.wasted, r.rescued, r.still_over) == (0.98, 0.48, 0.5, 0.0)
    assert r.fire_p50_ms == 320.0


def test_the_guard_policy_equals_asking_decide_every_poll() -> None:
    rng = np.random.default_rng(3)
    learn = {k: rng.lognormal(np.log(m), 0.5, 4000) for k, m in (("asr", 250.0), ("llm", 350.0), ("tts", 120.0))}
    replay = {k: rng.lognormal(np.log(m), 0.5, 300) for k, m in (("asr", 250.0), ("llm", 350.0), ("tts", 120.0))}
    guard = BudgetGuard(Budget(total_ms=800), learn, min_rows=30)
    policy = GuardPolicy(0.6, poll_ms=25.0)
    (r,) = evaluate_fillers(replay, guard, [policy]).results
    rows = np.stack([replay[k] for k in guard.stages], axis=1)
    fired = []
    for row in rows:
        ends = np.cumsum(row)
        t, fire = 0.0, None
        while t < ends[-1] and fire is None:
            k = int(np.sum(ends <= t))
            decision = guard.decide(guard.stages[k], t, t - (ends[k] - row[k]))
            fire = t if decision.p_fit < 0.6 else None
            t += 25.0
        fired.append(fire)
    assert r.fired == share(np.array([f is not None for f in fired]))
    assert r.fire_p50_ms == pytest.approx(float(np.median([f for f in fired if f is not None])))


def test_vectorised_fits_probability_equals_decide_at_every_point() -> None:
    rng = np.random.default_rng(5)
    samples = {"a": rng.gamma(2.0, 100.0, 3000), "b": rng.lognormal(5.5, 0.8, 3000)}
    guard = BudgetGuard(Budget(total_ms=900), samples, levels=16, resolution=64, min_rows=40)
    for k, stage in enumerate(guard.stages):
        in_stage = np.concatenate([rng.uniform(0.0, 3000.0, 400), [0.0, 1e5]])  # the tail level too
        elapsed = in_stage + rng.uniform(0.0, 500.0, in_stage.size)
        got = guard._p_fit_many(k, elapsed, in_stage)
        want = [guard.decide(stage, e, i).p_fit for e, i in zip(elapsed, in_stage, strict=True)]
        assert got.tolist() == want


def test_median_policies_closed_form() -> None:
    turns = two_commits()
    guard = BudgetGuard(Budget(total_ms=800), turns)  # medians: commit 300 ms, llm 500 ms
    budget_left, at_llm, never = evaluate_fillers(
        turns, guard, [MedianPolicy(None), MedianPolicy(400.0, "llm"), MedianPolicy(1500.0)]
    ).results
    # median:budget: at the end of speech 0 + 300 + 500 = 800 is not over 800; at the LLM's start the 400 ms
    # commits see 400 + 500 > 800 and fire there (half the turns); wasted when 400 + x <= 800 (200 turns)
    assert (budget_left.fired, budget_left.wasted, budget_left.fire_p50_ms) == (0.5, 0.2, 400.0)
    # median:400@llm: the LLM's median 500 >= 400: every turn, at the LLM's start; the 500 that fit are wasted
    assert (at_llm.fired, at_llm.wasted) == (1.0, 0.5)
    assert never.fired == 0.0
    assert never.policy == "median:1500"
    over = share(turns["commit"] + X > 800)
    for r in (budget_left, at_llm, never):
        assert r.still_over == pytest.approx(over - r.rescued)  # a filler only moves the first audio earlier
        assert r.wasted <= r.fired


@pytest.mark.parametrize(
    ("text", "policy"),
    [
        ("p-fit", GuardPolicy()),
        ("p-fit:0.8", GuardPolicy(0.8)),
        ("timeout", TimeoutPolicy()),
        ("timeout:300@llm_ttft", TimeoutPolicy(300.0, "llm_ttft")),
        ("median", MedianPolicy()),
        ("median:budget", MedianPolicy(None)),
        ("median:900@tool", MedianPolicy(900.0, "tool")),
    ],
)
def test_policy_spellings(text: str, policy: object) -> None:
    assert parse_policy(text) == policy
    assert parse_policy(text).label == text.replace("timeout", "timeout:1000", text == "timeout").replace(
        "median", "median:1500", text == "median"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("filler", r"policies: unknown policy 'filler'; known: p-fit\[:Q\], timeout\[:MS\]\[@STAGE\]"),
        ("p-fit:1.5", r"policies: p-fit: the threshold must be in \(0, 1\), got 1.5"),
        ("p-fit@llm", r"p-fit watches every stage; it takes no @STAGE"),
        ("timeout:soon", r"'timeout:soon': 'soon' is not a number"),
        ("timeout:-5", r"timeout: the wait must be a finite number > 0 ms, got -5.0"),
    ],
)
def test_bad_policies_are_named(text: str, message: str) -> None:
    from voicebudget import ScenarioError

    with pytest.raises(ScenarioError, match=message):
        parse_policy(text)


def test_a_stage_a_policy_names_must_exist() -> None:
    from voicebudget import ScenarioError

    turns = fixed_commit()
    guard = BudgetGuard(Budget(), turns)
    with pytest.raises(ScenarioError, match=r"timeout:1000@tts: no stage 'tts'; stages: \['commit', 'llm'\]"):
        evaluate_fillers(turns, guard, [TimeoutPolicy(stage="tts")])
    no_llm = {"commit": turns["commit"], "reply": turns["llm"]}
    with pytest.raises(ScenarioError, match=r"no stage named llm\.\.\.; name the stage it watches"):
        evaluate_fillers(no_llm, BudgetGuard(Budget(), no_llm), [TimeoutPolicy()])
    no_llm_guard = BudgetGuard(Budget(), no_llm)
    assert [r.policy for r in evaluate_fillers(no_llm, no_llm_guard).results] == ["p-fit", "median:budget"]
    with pytest.raises(ScenarioError, match=r"turns_ms: the turns' stages \['commit'\] are not the guard's"):
        evaluate_fillers({"commit": turns["commit"]}, guard)


def test_a_scenario_replays_other_turns_than_the_guard_learnt_and_is_reproducible() -> None:
    scenario = load_scenario(WEBRTC)
    policies = [parse_policy("p-fit:0.2"), parse_policy("timeout:300")]
    one = guard_report(scenario, policies, variant="wafer-scale-llm", turns=4000, guard_turns=4000, seed=7)
    again = guard_report(scenario, policies, variant="wafer-scale-llm", turns=4000, guard_turns=4000, seed=7)
    other = guard_report(scenario, policies, variant="wafer-scale-llm", turns=4000, guard_turns=4000, seed=8)
    assert one == again
    assert one.results != other.results
    assert (one.seed, one.n_turns, one.guard_turns) == (7, 4000, 4000)
    # the webrtc scenario's wafer-scale variant: ~44% of turns over 800 ms, its LLM starts ~600 ms in
    assert 0.35 < one.over < 0.5
    timeout = one.results[1]
    assert 550.0 < (timeout.fire_p50_ms or 0.0) < 700.0


def run_cli(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["guard-report", *args])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def test_cli_json_is_the_library_report_and_exit_codes() -> None:
    args = [WEBRTC, "--variant", "wafer-scale-llm", "-n", "3000", "--guard-turns", "3000", "--seed", "2"]
    code, out = run_cli(*args, "-p", "p-fit", "-p", "timeout:300", "--filler-ms", "100", "-f", "json")
    assert code == 0  # p-fit at 0.95 fires at the end of speech on every turn: all heard at 100 ms
    doc = json.loads(out)
    report = guard_report_file(
        WEBRTC, ["p-fit", "timeout:300"], variant="wafer-scale-llm", turns=3000, guard_turns=3000, seed=2,
        filler_ms=100.0,
    )  # fmt: skip
    assert doc == json.loads(json.dumps(report.to_dict()))
    assert [p["policy"] for p in doc["policies"]] == ["p-fit", "timeout:300"]
    assert (doc["passed"], doc["policies"][0]["heard_ms"], doc["policies"][0]["fired"]) == (True, 100.0, 1.0)
    assert doc["policies"][1]["heard_ms"] > 800.0  # the LLM starts ~600 ms in: +300 +100 is too late
    # a filler heard 900 ms after it fires cannot bring any turn within 800 ms that was not already: exit 1
    code, out = run_cli(*args, "-p", "timeout:300", "--filler-ms", "900")
    assert code == 1
    assert "timeout:300" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-p", "later"], "--policy/-p: unknown policy 'later'"),
        (["--variant", "nope"], "--variant: no variant 'nope'; variants: ['baseline', 'warm-connections'"),
        (["--filler-ms", "-1"], "--filler-ms"),
    ],
)
def test_cli_bad_input_exits_2_naming_the_option(args: list[str], message: str) -> None:
    code, out = run_cli(WEBRTC, "-n", "100", "--guard-turns", "100", *args)
    assert code == 2
    assert message in " ".join(out.split())
