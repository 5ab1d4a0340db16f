"""Tuning councils: the front is the non-dominated feasible set, reproducible on any executor."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from dask_cluster import local_client, port_held
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.cli import app
from voicebudget.tuning import pareto_front, tune_council

runner = CliRunner()
DATA = Path(__file__).parent / "data"
SMALL = DATA / "tune-small.toml"


def test_small_space_front_is_exactly_the_set_nothing_beats_beyond_the_noise() -> None:
    # without re-evaluation (refine_samples = samples) the front is computed from the first pass alone
    result = tune_council(SMALL, refine_samples=2000)
    # 3 members: sizes 1-3 (7 sets) x {all (+rule for n>1), first_k (k<=n, +rule for k>1), vote (majority m)}
    assert result.space_size == 33
    assert result.evaluated == 33
    assert result.errors == ()
    everything = tune_council(SMALL, max_exhaustive=10_000, refine_samples=2000)
    assert [c.config for c in everything.pareto] == [c.config for c in result.pareto]
    feasible = [c for c in _all_candidates() if c.feasible]
    assert len(feasible) == result.feasible

    # brute force, from the definition: a beats b when worse on no objective by more than the two
    # estimates' +/-2 SE intervals allow, and better on one by more than that
    def beats(a, b) -> bool:
        pairs = list(zip(a.objectives(), b.objectives(), a.objective_errors(), b.objective_errors(), strict=True))
        tol = [2 * (sa + sb) + 1e-9 * max(abs(x), abs(y)) for x, y, sa, sb in pairs]
        return all(x - y <= t for (x, y, _, _), t in zip(pairs, tol, strict=True)) and any(
            y - x > t for (x, y, _, _), t in zip(pairs, tol, strict=True)
        )

    brute = {i for i, b in enumerate(feasible) if not any(beats(a, b) for a in feasible)}
    shown = {str(c.config) for c in result.pareto} | {str(e) for c in result.pareto for e in c.equivalent}
    assert {str(feasible[i].config) for i in brute} == shown
    # every member of the front satisfies the budget at its percentile; the pick is on the front
    assert all(c.p95_ms <= result.budget.total_ms for c in result.pareto)
    assert result.best in result.pareto
    assert result.best.expected_user_time_ms == min(c.expected_user_time_ms for c in result.pareto)


def _all_candidates():
    return _evaluate_all(SMALL)[1]


def _evaluate_all(path: Path, **kw):
    """Tune and also return every evaluated candidate (front or not)."""
    from voicebudget.tuning import _tune

    captured = []
    original = _tune.summarise

    def spy(name, scope, budget, strategy, size, candidates, *rest):
        captured.extend(candidates)
        return original(name, scope, budget, strategy, size, candidates, *rest)

    _tune.summarise = spy
    try:
        result = tune_council(path, **kw)
    finally:
        _tune.summarise = original
    return result, captured


def test_known_answer_the_best_member_alone_wins_when_latency_is_free(tmp_path: Path) -> None:
    # Three members with identical fixed latency: the front trades accuracy against cost only.
    text = SMALL.read_text()
    for old in (
        '{ kind = "lognormal", p50_ms = 200, p95_ms = 300 }',
        '{ kind = "lognormal", p50_ms = 300, p95_ms = 500 }',
        '{ kind = "lognormal", p50_ms = 500, p95_ms = 900 }',
    ):
        text = text.replace(old, '{ kind = "fixed", value_ms = 300 }')
    path = tmp_path / "fixed.toml"
    path.write_text(
        text.replace('topology = ["all", "first_k", "vote"]', 'topology = ["all"]').replace("rho = 0.2", "rho = 0.0")
    )
    result = tune_council(path)
    # all-of with majority: {a}=0.8 ($1e-5), {b}=0.85, {c}=0.9, {a,b,c}: Condorcet 0.8*0.85 + ... = 0.919
    acc = {tuple(c.config["members"]): c.quality for c in result.pareto}
    p = (0.8, 0.85, 0.9)
    condorcet = p[0] * p[1] + p[0] * p[2] + p[1] * p[2] - 2 * p[0] * p[1] * p[2]
    assert acc[("a", "b", "c")] == pytest.approx(condorcet, abs=1e-9)
    assert result.best.config["members"] == ("a", "b", "c")
    assert all(c.p95_ms == pytest.approx(300) for c in result.pareto)


def test_budget_constraint_and_cost_limit_filter_the_front(tmp_path: Path) -> None:
    tight = tune_council(SMALL, budget_ms=300)
    assert tight.pareto
    assert all(c.p95_ms <= 300 for c in tight.pareto)
    assert tight.feasible < tune_council(SMALL).feasible
    path = tmp_path / "cost.toml"
    path.write_text(SMALL.read_text() + "[search.constraints]\nmax_cost_per_turn = 0.00006\n")
    cheap = tune_council(path)
    assert cheap.pareto
    assert all(c.cost_per_turn <= 0.00006 for c in cheap.pareto)
    nothing = tune_council(SMALL, budget_ms=50)
    assert nothing.best is None
    assert nothing.why.startswith("no configuration is within 50 ms at p95; the fastest reaches ")
    # A limit no configuration within budget meets: the pick says the cost left none, not the budget (it said
    # "no configuration is within ... ms (and the cost limit); the fastest reaches" a p95 well within it)
    path.write_text(SMALL.read_text() + "[search.constraints]\nmax_cost_per_turn = 0.0000001\n")
    priced_out = tune_council(path)
    free = tune_council(SMALL)  # no cost limit: its feasible ones are those within budget; cost is exact
    within, cheapest = free.feasible, min(c.cost_per_turn for c in free.pareto)
    assert priced_out.best is None
    assert priced_out.reason == "nothing within the cost limit"
    assert priced_out.why == (
        f"{within:,} configurations within 800 ms at p95, none within the cost limit; the cheapest of them costs "
        f"${cheapest:.6f}/turn"
    )


def test_same_seed_same_front_on_processes_and_dask() -> None:
    single = tune_council(SMALL, seed=7)
    again = tune_council(SMALL, seed=7)
    pooled = tune_council(SMALL, seed=7, workers=2)
    assert single.to_dict() == again.to_dict() == pooled.to_dict()
    with port_held(), local_client() as client:  # Dask's dashboard port busy (a Jupyter dashboard): no error
        on_dask = tune_council(SMALL, seed=7, scheduler=client)
    assert on_dask.to_dict() == single.to_dict()


def test_against_a_scenario_the_rest_of_the_turn_is_added(root: Path) -> None:
    scenario = vb.load_scenario(root / "scenarios" / "telephony-pstn.toml")
    from voicebudget.tuning import rest_of_turn

    alone = tune_council(SMALL, budget_ms=5000)
    voice = tune_council(SMALL, scenario=root / "scenarios" / "telephony-pstn.toml", budget_ms=5000)
    assert "voice-to-voice" in voice.latency_scope
    by_config = {str(c.config): c for c in alone.pareto}
    common = [c for c in voice.pareto if str(c.config) in by_config]
    assert common
    # the front is re-evaluated at 10x the turns: the rest of the turn is drawn at that size too
    assert {c.samples for c in common} == {voice.refine_samples} == {20_000}
    rest = rest_of_turn(scenario, voice.refine_samples, 1)
    for c in common:  # means add exactly: voice-to-voice = rest of turn + council, turn by turn
        assert c.mean_ms == pytest.approx(by_config[str(c.config)].mean_ms + rest.mean(), rel=1e-9)


def test_an_evaluation_error_is_reported_not_scored_infeasible(monkeypatch) -> None:
    from voicebudget.tuning import _evaluator

    original = _evaluator.evaluate_checked

    def flaky(council, *args, **kw):
        if len(council.members) == 2:
            raise vb.ModelError("model does not fit")
        return original(council, *args, **kw)

    monkeypatch.setattr(_evaluator, "evaluate_checked", flaky)
    result = tune_council(SMALL)
    # 3 pairs x (all: 2 rules; first_k: k=1, k=2 x 2 rules; vote m=2) = 3 x 6 configurations raise
    assert len(result.errors) == 18
    assert all("ModelError: model does not fit" in e["error"] for e in result.errors)
    assert all(len(c.config["members"]) != 2 for c in result.pareto)
    assert all(len(e["config"]["members"]) == 2 for e in result.errors)  # each error names its configuration


def test_errors_name_their_configurations_when_evaluated_out_of_order(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the tuner evaluates the configurations sharing a simulation side by side (cache and rule variants), not
    # in the space's order: the candidates come back in that order, and each error names its configuration
    from voicebudget.tuning import _evaluator

    path = tmp_path / "tune-intent-small.toml"
    text = (root / "councils" / "tune-intent.toml").read_text()
    path.write_text(
        text.replace("n = [1, 2, 3, 4]", "n = [1, 2]").replace("concurrency = [1, 16, 64]", "concurrency = [1, 64]")
    )
    original = _evaluator.evaluate_checked

    def flaky(council, *args, **kw):  # type: ignore[no-untyped-def]
        if council.topology == "first_k" and council.rule == "weighted":
            raise vb.ModelError("model does not fit")
        return original(council, *args, **kw)

    monkeypatch.setattr(_evaluator, "evaluate_checked", flaky)
    result, every = _evaluate_all(path, samples=500)
    assert [c.index for c in every] == sorted(c.index for c in every)
    # 10 pairs, 4 of them with the GPU member at 2 batch policies; first_k k = 2, with and without the cache
    assert len(result.errors) == (6 + 4 * 2) * 2
    assert {(e["config"]["topology"], e["config"]["rule"]) for e in result.errors} == {("first_k", "weighted")}


def test_cli_tune_json_keys_and_exit_codes(tmp_path: Path, root: Path) -> None:
    out = runner.invoke(app, ["tune", str(SMALL), "--format", "json"])
    assert out.exit_code == 0, out.stderr
    doc = json.loads(out.stdout)
    assert {"evaluated", "feasible", "pareto", "best"} <= set(doc)
    assert {"config", "p95_ms", "quality", "cost_per_turn", "expected_user_time_ms"} <= set(doc["pareto"][0])
    assert doc["best"] in doc["pareto"]
    assert runner.invoke(app, ["tune", str(SMALL), "--budget-ms", "50"]).exit_code == 1
    refused = runner.invoke(app, ["tune", str(root / "councils" / "intent-wafer-all.toml")])
    assert refused.exit_code == 2
    assert "declares no search space" in refused.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text(SMALL.read_text().replace("k = [1, 2]", "k = [0]"))
    invalid = runner.invoke(app, ["tune", str(bad)])
    assert invalid.exit_code == 2
    assert "search" in invalid.stderr
    table = runner.invoke(app, ["tune", str(SMALL)])
    assert "Pareto front" in table.stdout
    assert "pick:" in table.stdout


def test_large_space_goes_to_optuna_and_returns_a_non_dominated_front() -> None:
    pytest.importorskip("optuna")
    result = tune_council(SMALL, max_exhaustive=10, trials=60, seed=3)
    assert result.strategy.startswith("optuna")
    assert result.evaluated <= 33
    assert result.pareto
    from voicebudget.tuning._front import _comparable

    obj = _comparable(np.array([c.objectives() for c in result.pareto]))
    assert len(pareto_front(obj)) == len(result.pareto)
    again = tune_council(SMALL, max_exhaustive=10, trials=60, seed=3)
    assert [c.config for c in again.pareto] == [c.config for c in result.pareto]


def test_cache_knob_agrees_with_evaluate_cache(root: Path, tmp_path: Path) -> None:
    from voicebudget.councils import ReplyCache, evaluate_cache, evaluate_council
    from voicebudget.councils._config import Council
    from voicebudget.tuning import load_search

    text = (root / "councils" / "tune-intent.toml").read_text()
    path = tmp_path / "tune-intent-small.toml"
    path.write_text(
        text.replace("n = [1, 2, 3, 4]", "n = [1, 2]").replace("concurrency = [1, 16, 64]", "concurrency = [1]")
    )
    result, every = _evaluate_all(path, samples=4000)
    cached = [
        c
        for c in every
        if c.config.get("cache") and c.config["members"] == ("llama-8b",) and c.config["topology"] == "all"
    ]
    assert len(cached) == 1
    doc, space = load_search(path)
    council = Council.model_validate({**doc, "members": [doc["members"][0]]}, context={"base_dir": str(path.parent)})
    plain = evaluate_council(council, samples=4000, seed=1)
    spec = space.cache_spec.model_dump()
    cache = ReplyCache.model_validate(
        {**spec, "miss": council, "miss_error_rate": plain.quality.error_rate, "miss_usd": plain.cost_per_turn_usd}
    )
    ref = evaluate_cache(cache, samples=4000, seed=1, user_time=council.user_time)
    c = cached[0]
    assert c.quality == pytest.approx(1 - ref.error_rate, abs=1e-12)
    assert c.cost_per_turn == pytest.approx(ref.cost_per_turn_usd, rel=1e-12)
    assert c.p95_ms == pytest.approx(ref.report.total.p95_ms, rel=0.03)  # same model, other draws of the miss path
    assert result.evaluated == len(every) == 4 * 3 * 2 + 10 * 6 * 2  # singles: 3 topologies; pairs: 6; x cache


def test_memos_change_no_figure(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tuner's memos (councils judged, by configuration less its cache knob; their turns, less the cache
    and rule knobs; accuracies per member set, first-k subset and vote finishing order; a vote's answers per
    member set) give every candidate and the front bit for bit as computing each afresh does, on a space
    with every topology, both rules, the cache and batch-policy knobs."""
    from voicebudget.councils import _latency, _quality
    from voicebudget.councils._topologies import _all, _first_k, _vote
    from voicebudget.tuning import _evaluator

    text = (root / "councils" / "tune-intent.toml").read_text()
    path = tmp_path / "tune-intent-memo.toml"
    path.write_text(
        text.replace("n = [1, 2, 3, 4]", "n = [1, 2, 3]").replace("concurrency = [1, 16, 64]", "concurrency = [1, 64]")
    )
    memos = [
        (_first_k, "_subset_accuracy"),
        (_vote, "_order_accuracy"),
        (_vote, "_pattern_probabilities"),
        (_all, "_accuracy"),
        (_latency, "_memo_answers"),
        (_quality, "_majority_cap"),
    ]
    for module, name in memos:
        getattr(module, name).cache_clear()
    memoised, every = _evaluate_all(path, samples=500)
    for module, name in memos:
        assert getattr(module, name).cache_info().hits > 0, name
        monkeypatch.setattr(module, name, getattr(module, name).__wrapped__)
    monkeypatch.setattr(_evaluator, "MEMO_TURNS", 0)  # no council or turns memoised
    afresh, every_afresh = _evaluate_all(path, samples=500)
    assert len(every) == 678  # 34 member sets of 1-3 from a pool of 4, every topology, x cache, x batch policy
    assert [repr(c) for c in every] == [repr(c) for c in every_afresh]  # repr: floats to the last bit, NaN too
    assert json.dumps(memoised.to_dict()) == json.dumps(afresh.to_dict())


def test_batch_policy_knob_only_multiplies_councils_it_changes(root: Path) -> None:
    # The three WSE-3 members (no chip price) get no concurrency knob: Llama-8B's and gpt-oss's latency
    # does not move with it, and Qwen3-235B's 13th wafer at 64 in flight (its KV cache) moves its
    # 4-token call by 0.009 ms, below MATERIAL_MS. The self-hosted GPU member does: its price moves
    # with it (chip time per token).
    result, every = _evaluate_all(root / "councils" / "tune-intent.toml", samples=500)
    wafer_only = [c for c in every if set(c.config["members"]) <= {"llama-8b", "gpt-oss-120b", "qwen3-235b"}]
    gpu = [
        c
        for c in every
        if c.config["members"] == ("llama-8b-h100",) and c.config["topology"] == "all" and not c.config.get("cache")
    ]
    assert wafer_only
    assert all("concurrency" not in c.config for c in wafer_only)
    by_conc = {c.config["concurrency"]: c for c in gpu}
    assert sorted(by_conc) == [1, 16, 64]
    # price moves by the inference model's chip-time ratio against the declared concurrency (16)
    from voicebudget.inference import GPUStage

    def cost(c: int) -> float:
        stage = GPUStage(
            model="llama-3.1-8b",
            hardware="h100-sxm",
            concurrency=c,
            prompt_tokens=600,
            output_tokens=4,
            first_phrase_tokens=4,
        )
        return stage.predict().cost_per_million_output_tokens

    for conc in (1, 64):
        ratio = by_conc[conc].cost_per_turn / by_conc[16].cost_per_turn
        assert ratio == pytest.approx(cost(conc) / cost(16), rel=1e-9)
    assert by_conc[1].cost_per_turn > max(by_conc[16].cost_per_turn, by_conc[64].cost_per_turn)
    assert by_conc[1].mean_ms < by_conc[64].mean_ms
    assert result.best is not None
    from voicebudget.tuning._result import short_config

    assert result.why.startswith(short_config(result.best.config) + ": lowest expected user time")


def test_configurations_with_equal_objectives_share_one_front_row(root: Path) -> None:
    from voicebudget.tuning._front import _comparable

    result = tune_council(root / "councils" / "tune-intent.toml", samples=500)
    rows = [tuple(r) for r in _comparable(np.array([c.objectives() for c in result.pareto]))]
    assert len(set(rows)) == len(rows)
    merged = [c for c in result.pareto if c.equivalent]
    assert merged, "identical members under two combining rules should collapse"
    for c in merged:
        assert all(e["members"] == c.config["members"] for e in c.equivalent)


def test_cli_tune_table_reads_at_80_columns(root: Path) -> None:
    from voicebudget.tuning._render import short_config

    out = runner.invoke(
        app, ["tune", str(root / "councils" / "tune-intent.toml"), "--samples", "500"], env={"COLUMNS": "80"}
    )
    assert out.exit_code == 0, out.stderr
    lines = out.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in out.stdout  # no header or number cut short
    header = next(line for line in lines if "user time ms" in line)
    assert [h.strip() for h in header.strip("┃").split("┃")] == [
        "#",
        "user time ms",
        "p95 ms",
        "accuracy",
        "$/turn",
        "tail",
    ]
    result = tune_council(root / "councils" / "tune-intent.toml", samples=500)
    flat = " ".join(out.stdout.split())
    # every configuration is listed whole under its row number (wrapped, if at all, between words)
    for i, c in enumerate(result.pareto, 1):
        assert f"{i} {short_config(c.config)}" in flat
    rows = [line for line in lines if line.startswith("│")]
    # one line per row, nothing wraps inside the table; the last row is the council as written
    assert len(rows) == len(result.pareto) + 1
    assert rows[-1].startswith("│ you ")
    assert f"{result.best.expected_user_time_ms:.0f}±{result.best.expected_user_time_se_ms:.0f}" in rows[0]
    assert "pick:" in out.stdout
    assert "rule: among the configurations within budget" in flat


def test_short_config_counts_repeats_and_names_knobs() -> None:
    from voicebudget.tuning._render import short_config

    config = {
        "members": ("a", "a", "b"),
        "topology": "first_k",
        "k": 2,
        "rule": "weighted",
        "cache": False,
        "concurrency": 16,
    }
    assert short_config(config) == "2x a + b, first_k k=2, rule weighted, no cache, concurrency 16"
