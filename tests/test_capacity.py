"""Capacity planning: known answers, monotonicity, executors, the CLI."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget._algebra import Sequence
from voicebudget._distributions import Empirical, Fixed
from voicebudget.capacity import (
    CallTraffic,
    HostedDeployment,
    ModelledDeployment,
    OpenLoopLLM,
    Overloaded,
    deployments_from_options,
    deployments_from_scenario,
    find_capacity,
    plan_capacity,
)
from voicebudget.cli import app

ROOT = Path(__file__).resolve().parents[1]
SUPPORT = ROOT / "scenarios" / "support-line.toml"


@dataclass(frozen=True)
class MM1:
    """A single M/M/1 server: the sojourn time at arrival rate lam is exponential with rate mu - lam."""

    name: str
    service_rate_per_s: float

    def stage_at(self, calls: int, traffic: CallTraffic) -> Empirical:
        lam = traffic.request_rate_per_s(calls)
        if lam >= self.service_rate_per_s:
            raise Overloaded("batch cap", "lambda >= mu")
        u = (np.arange(20_000) + 0.5) / 20_000  # exact quantiles of the exponential, resampled
        return Empirical(samples_ms=tuple(-np.log1p(-u) / (self.service_rate_per_s - lam) * 1000.0))

    def chips(self) -> int:
        return 1

    def cost_per_call_minute(self, calls: int, traffic: CallTraffic) -> float | None:
        return 2.0 / 60.0 / calls

    def describe(self) -> dict[str, Any]:
        return {"kind": "mm1", "service_rate_per_s": self.service_rate_per_s}


def _scenario_with(stage_name: str, *, budget_ms: float, fixed_ms: float) -> vb.Scenario:
    pipeline = Sequence(stages={"network": Fixed(value_ms=fixed_ms), stage_name: Fixed(value_ms=1.0)})
    return vb.Scenario(name="mm1", pipeline=pipeline, budget=vb.Budget(total_ms=budget_ms))


@pytest.mark.parametrize(
    ("mu", "budget_ms", "fixed_ms", "percentile"), [(20.0, 800.0, 50.0, 95.0), (5.0, 2000.0, 0.0, 99.0)]
)
def test_mm1_capacity_matches_closed_form(mu: float, budget_ms: float, fixed_ms: float, percentile: float) -> None:
    # M/M/1 sojourn time ~ Exp(mu - lam): its q-quantile is -ln(1-q)/(mu - lam), so the largest rate
    # within a budget T (after a fixed part f) is lam* = mu + ln(1-q) / (T - f) (Kleinrock 1975, sec. 3.2).
    scenario = _scenario_with("llm", budget_ms=budget_ms, fixed_ms=fixed_ms)
    budget = vb.Budget(total_ms=budget_ms, percentile=percentile)
    traffic = CallTraffic(turns_per_call_minute=6.0)  # 0.1 requests/s per call
    result = plan_capacity(scenario, [MM1("mm1", mu)], traffic=traffic, budget=budget, samples=20_000, seed=3)
    q = percentile / 100
    lam_star = mu + math.log(1 - q) / ((budget_ms - fixed_ms) / 1000.0)
    calls_star = lam_star / traffic.request_rate_per_s(1)
    got = result.deployments[0].max_concurrent_calls
    assert got is not None
    assert got == pytest.approx(calls_star, rel=0.05)
    assert result.deployments[0].limited_by == "budget"


def test_find_capacity_is_the_largest_within() -> None:
    cap, seen = find_capacity(lambda c: 10.0 * c, budget_ms=1234.0)
    assert cap == 123
    assert [c for c, _ in seen] == sorted(c for c, _ in seen)
    assert find_capacity(lambda c: 900.0, budget_ms=800.0)[0] == 0


def test_support_line_curve_never_falls_with_load() -> None:
    scenario = vb.load_scenario(SUPPORT)
    result = plan_capacity(scenario, samples=5_000)
    for d in result.deployments:
        finite = [p for p in d.curve if math.isfinite(p.percentile_ms)]
        values = [p.percentile_ms for p in finite]
        assert values == sorted(values), d.name
        conc = [p.concurrency for p in finite if p.concurrency is not None]
        assert conc == sorted(conc), d.name


def test_capacity_monotone_in_budget_and_chips() -> None:
    scenario = vb.load_scenario(SUPPORT)
    caps = []
    for total in (700.0, 800.0, 900.0):
        r = plan_capacity(
            scenario, deployments_from_scenario(scenario)[:1], budget=vb.Budget(total_ms=total), samples=5_000
        )
        caps.append(r.deployments[0].max_concurrent_calls)
    assert caps == sorted(caps)
    assert caps[0] < caps[-1]
    by_chips = []
    for chips in (1, 2, 4):
        deps = deployments_from_options(
            scenario, hardware="h100-sxm", model="llama-3.1-8b", chips=chips, precision="fp8"
        )
        by_chips.append(plan_capacity(scenario, deps, samples=5_000).deployments[0].max_concurrent_calls)
    assert by_chips == sorted(by_chips)
    assert by_chips[0] < by_chips[-1]


def test_prefix_caching_prefills_only_the_new_turn_and_carries_more_calls() -> None:
    traffic = CallTraffic(
        prompt_tokens_start=1500,
        prompt_tokens_per_turn=100,
        call_minutes=1,
        turns_per_call_minute=4,
        prefix_caching=True,
    )
    assert traffic.prompt_tokens_by_turn == (1500, 1600, 1700, 1800)
    assert traffic.prefill_tokens_by_turn == (1500, 100, 100, 100)
    scenario = vb.load_scenario(SUPPORT)
    assert scenario.traffic is not None
    deps = deployments_from_scenario(scenario)[:1]
    plain = plan_capacity(scenario, deps, samples=5_000).deployments[0].max_concurrent_calls
    cached = (
        plan_capacity(
            scenario, deps, samples=5_000, traffic=scenario.traffic.model_copy(update={"prefix_caching": True})
        )
        .deployments[0]
        .max_concurrent_calls
    )
    assert plain is not None
    assert cached is not None
    assert cached > 2 * plain


def test_cost_per_call_minute_is_chip_hours_shared_by_calls() -> None:
    scenario = vb.load_scenario(SUPPORT)
    d = plan_capacity(scenario, deployments_from_scenario(scenario)[:1], samples=5_000).deployments[0]
    assert d.max_concurrent_calls
    assert d.chips == 1
    # H100 SXM at $3.00/chip-hour (the hardware catalog's price)
    assert d.cost_per_call_minute == pytest.approx(3.00 / 60 / d.max_concurrent_calls)


def test_hosted_api_is_bounded_by_its_rate_limit() -> None:
    scenario = vb.load_scenario(SUPPORT)
    traffic = scenario.traffic
    assert traffic is not None
    api = scenario.variants["hosted-flash-lite"].llm
    relaxed = HostedDeployment("api", api)
    assert relaxed.max_calls_by_rate_limit(traffic) == 30_000 // 6
    generous = vb.Budget(total_ms=5_000)
    r = plan_capacity(scenario, [relaxed], budget=generous, samples=2_000)
    assert r.deployments[0].max_concurrent_calls == 5_000
    assert r.deployments[0].limited_by == "rate limit"
    # token price: 6 requests/min x (mean prompt x $0.10 + 60 x $0.40) / 1e6
    expected = 6 * (traffic.mean_prompt_tokens * 0.10 + 60 * 0.40) / 1e6
    assert r.deployments[0].cost_per_call_minute == pytest.approx(expected)


def test_batch_cap_limits_fast_mode() -> None:
    scenario = vb.load_scenario(SUPPORT)
    deps = deployments_from_options(
        scenario, hardware="h100-sxm", model="llama-3.1-70b", chips=2, precision="fp8", batch_caps=(1, 2, 32)
    )
    r = plan_capacity(scenario, deps, budget=vb.Budget(total_ms=1_500), samples=5_000)
    calls = [d.max_concurrent_calls for d in r.deployments]
    assert calls == sorted(calls)
    assert calls[0] is not None
    assert calls[0] < calls[-1]
    assert r.deployments[0].limited_by == "batch cap"
    costs = [d.cost_per_call_minute for d in r.deployments]
    assert costs == sorted(costs, reverse=True)  # fast mode: fewer calls per chip, a dearer call-minute


def test_capacity_never_falls_as_the_batch_cap_grows() -> None:
    # a larger cap only admits more: capacity is non-decreasing in it (loads near the scheduler's
    # saturation, where its TTFT tail is not monotone, count as overloaded)
    scenario = vb.load_scenario(SUPPORT)
    deps = deployments_from_options(
        scenario, hardware="h100-sxm", model="llama-3.1-8b", chips=1, precision="fp8", batch_caps=tuple(range(2, 34, 2))
    )
    r = plan_capacity(scenario, deps, budget=vb.Budget(total_ms=1_200), samples=1_000)
    calls = [d.max_concurrent_calls or 0 for d in r.deployments]
    assert calls == sorted(calls)
    assert calls[0] < calls[-1]


def test_open_loop_stage_reproduces_the_scheduler_quantiles() -> None:
    stage = OpenLoopLLM(
        ttft_quantiles_ms=(80.0, 150.0, 400.0),
        ttft_floor_ms=10.0,
        prompts=(1000,),
        prompt_offsets_ms=(0.0,),
        tpot_ms=5.0,
        first_phrase_tokens=0,
        jitter_cv=0.0,
        concurrency=3.0,
    )
    x = stage.sample(np.random.default_rng(7), 400_000)
    assert np.percentile(x, [50, 90, 99]) == pytest.approx([80.0, 150.0, 400.0], rel=0.01)
    gpu = deployments_from_scenario(vb.load_scenario(SUPPORT))[0]
    traffic = vb.load_scenario(SUPPORT).traffic
    assert traffic is not None
    loaded = gpu.stage_at(20, traffic)
    assert isinstance(loaded, OpenLoopLLM)
    assert loaded.prompts == traffic.prompt_tokens_by_turn
    assert loaded.prompt_offsets_ms[0] < 0 < loaded.prompt_offsets_ms[-1]  # short prompts prefill faster


def test_the_stage_at_a_load_reads_estimate_open_loop_s_numbers() -> None:
    """Issue 24: the search reads the scheduler model alone (open_loop_at, without estimate_open_loop's closed-loop
    estimate at the mean concurrency): the same TTFT quantiles, TPOT and concurrency, to the bit."""
    gpu = deployments_from_scenario(vb.load_scenario(SUPPORT))[0]
    assert isinstance(gpu, ModelledDeployment)
    traffic = vb.load_scenario(SUPPORT).traffic
    assert traffic is not None
    for calls in (1, 20, 180):  # light load, and past 75% of capacity (TTFT p50/p90 the lower bound there)
        loaded = gpu.stage_at(calls, traffic)
        assert isinstance(loaded, OpenLoopLLM)
        ol = vb.estimate_open_loop(
            gpu.stage.model,
            gpu.stage.hardware,
            gpu.stage.deployment(),
            gpu._workload(traffic),
            traffic.request_rate_per_s(calls),
        )
        assert loaded.ttft_quantiles_ms == (ol.ttft_p50_ms, ol.ttft_p90_ms, ol.ttft_p99_ms)
        assert (loaded.tpot_ms, loaded.concurrency) == (ol.tpot_ms, ol.mean_concurrency)


def test_workers_equal_single_process() -> None:
    scenario = vb.load_scenario(SUPPORT)
    one = plan_capacity(scenario, samples=2_000, seed=5)
    two = plan_capacity(scenario, samples=2_000, seed=5, workers=2)
    assert one.to_dict() == two.to_dict()


runner = CliRunner()


def test_cli_json_has_stable_keys_and_numbers() -> None:
    res = runner.invoke(app, ["capacity", str(SUPPORT), "-f", "json", "-n", "2000", "--target-calls", "500"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["target_calls"] == 500
    assert doc["budget_ms"] == 800
    names = [d["name"] for d in doc["deployments"]]
    assert names[0] == "baseline"
    assert "h200" in names
    base = doc["deployments"][0]
    assert {"max_concurrent_calls", "cost_per_call_minute", "limited_by", "chips_for_target", "curve"} <= set(base)
    assert base["max_concurrent_calls"] > 20
    assert base["chips_for_target"] == math.ceil(500 / base["max_concurrent_calls"])


def test_cli_table_fits_80_columns() -> None:
    res = runner.invoke(app, ["capacity", str(SUPPORT), "-n", "2000", "--target-calls", "500"], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    assert "…" not in res.stdout
    assert max(len(line) for line in res.stdout.splitlines()) <= 80


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--batch-cap", "4,x"], "--batch-cap"),
        (["--batch-cap", "0"], "--batch-cap"),
        (["--batch-cap", "2,,8"], "--batch-cap"),
        (["--hardware", "h100-sxm"], "--hardware/--model"),
        (["--batch-cap", "2,8,32"], "--batch-cap: applies only with --hardware and --model"),  # not ignored
        (["--chips", "2", "--precision", "fp8"], "--chips, --precision: apply only with --hardware and --model"),
        (["--hardware", "nope", "--model", "llama-3.1-8b"], "nope"),
        # the stage's own check, not pydantic's "For further information visit ..." line
        (["--hardware", "h100-sxm", "--model", "llama-3.1-405b", "--chips", "1"], "does not fit: needs 812"),
        (["--turns-per-minute", "-3"], "--turns-per-minute: Input should be greater than or equal to 0.01"),
        (["--budget-ms", "-5"], "--budget-ms"),
        (["--workers", "100000"], "--workers"),
    ],
)
def test_cli_bad_input_exits_2(args: list[str], message: str) -> None:
    res = runner.invoke(app, ["capacity", str(SUPPORT), "-n", "500", *args])
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert "Traceback" not in res.output


def test_a_prompt_beyond_the_model_s_context_is_refused_not_a_throughput_limit(tmp_path: Path) -> None:
    # 200,000 + 23 turns x 100 tokens on Llama-3.1-8B (131,072): was "0 calls, limited by throughput", exit 1
    text = SUPPORT.read_text(encoding="utf-8").replace("prompt_tokens_start = 1500", "prompt_tokens_start = 200000")
    path = tmp_path / "long.toml"
    path.write_text(text, encoding="utf-8")
    res = runner.invoke(app, ["capacity", str(path), "-n", "500"])
    assert res.exit_code == 2, res.output
    assert " ".join(res.output.split()) == (
        f"error: {path}: traffic: deployment 'baseline': the call's longest prompt (202,300 tokens: "
        "traffic.prompt_tokens_start + prompt_tokens_per_turn x its turns) + 60 output tokens exceeds "
        "Llama-3.1-8B's maximum context of 131,072 tokens at any load"
    )


def test_cli_exit_1_when_no_deployment_carries_a_call() -> None:
    res = runner.invoke(app, ["capacity", str(SUPPORT), "-n", "1000", "--budget-ms", "300"])
    assert res.exit_code == 1, res.output


def test_cli_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "cap.png"
    res = runner.invoke(app, ["capacity", str(SUPPORT), "-n", "1000", "--plot", str(out)])
    assert res.exit_code == 0, res.output
    assert out.stat().st_size > 10_000


def test_run_shows_an_api_stage_cost_per_turn() -> None:
    # wafer-scale-api: the call's mean prompt (2,650 tokens) x $0.85 + 60 output tokens x $1.20, per million
    res = runner.invoke(app, ["run", str(SUPPORT), "-n", "2000", "-f", "json"])
    assert res.exit_code == 1, res.output
    by_name = {v["name"]: v for v in json.loads(res.stdout)["variants"]}
    assert by_name["wafer-scale-api"]["cost_per_turn_usd"] == pytest.approx((2650 * 0.85 + 60 * 1.20) / 1e6)
    assert by_name["hosted-flash-lite"]["cost_per_turn_usd"] == pytest.approx((2650 * 0.10 + 60 * 0.40) / 1e6)
    assert by_name["baseline"]["cost_per_turn_usd"] is None  # a gpu stage: chip-hours, see `capacity`
    table = runner.invoke(app, ["run", str(SUPPORT), "-n", "2000"], env={"COLUMNS": "80"})
    assert "cost: $0.002325 per turn" in table.stdout


SLOW_API = """
name = "slow api"
[pipeline]
kind = "sequence"
[pipeline.stages.llm]
kind = "api"
ttft = { kind = "lognormal", p50_ms = 1500, p95_ms = 2000 }
tpot = { kind = "fixed", value_ms = 5 }
usd_per_million_input_tokens = 0.15
usd_per_million_output_tokens = 0.60
"""


@pytest.mark.parametrize("limits", ["", "requests_per_minute_limit = 30000\n"])
def test_an_api_over_budget_carries_no_call_whatever_its_limits(tmp_path: Path, limits: str) -> None:
    # issue 25 item 1: a priced API with no rate limits, p95 ~2,040 ms against 800, was "no limit", on the
    # front, 1 replica for 500 calls, exit 0; its latency does not depend on the load, so it carries 0 calls
    path = tmp_path / "api.toml"
    path.write_text(SLOW_API + limits)
    res = runner.invoke(app, ["capacity", str(path), "-f", "json", "-n", "2000", "--target-calls", "500"])
    assert res.exit_code == 1, res.output
    (d,) = json.loads(res.stdout)["deployments"]
    assert d["max_concurrent_calls"] == 0
    assert d["limited_by"] == "budget"
    assert d["on_front"] is False
    assert d["replicas_for_target"] is None
    assert d["chips_for_target"] is None
    assert d["percentile_ms_at_max"] > 1900  # the measured TTFT's p95 is 2,000 ms
    table = runner.invoke(app, ["capacity", str(path), "-n", "2000"], env={"COLUMNS": "80"})
    assert table.exit_code == 1
    row = next(line for line in table.stdout.splitlines() if line.lstrip().startswith("baseline"))
    assert row.split()[:3] == ["baseline", "0", "budget"]
    assert "no limit" not in table.stdout
    assert "on the front" not in table.stdout


def test_a_deployment_without_a_call_shows_its_price_in_brackets_and_skipped_variants_are_named(
    tmp_path: Path,
) -> None:
    # What a user saw (round 4): "baseline  0  budget  4,906  $0.0019  api" read as this fleet's cost
    # (docs/capacity.md brackets it), and a council variant left out of the table without a word.
    path = tmp_path / "api.toml"
    path.write_text(
        SLOW_API + '\n[variants.fixed]\nstages.llm = { kind = "fixed", value_ms = 300 }\n', encoding="utf-8"
    )
    table = runner.invoke(app, ["capacity", str(path), "-n", "2000"], env={"COLUMNS": "80"})
    assert table.exit_code == 1, table.output
    row = next(line for line in table.stdout.splitlines() if line.lstrip().startswith("baseline"))
    # CallTraffic defaults: 6 requests/min, prompts 1,000 + 100 per turn over 24 turns (mean 2,150 tokens),
    # the api stage's 200 output tokens: 6 x (2,150 x $0.15 + 200 x $0.60) / 1e6 = $0.002655 per call-minute
    assert row.split()[:5] == ["baseline", "0", "budget", row.split()[3], "($0.0027)"]
    text = " ".join(table.stdout.split())
    assert "(bracketed: what a call-minute would cost on a deployment that carries no call within budget)" in text
    assert "note: not deployments (their 'llm' stage is not a gpu, wafer or api stage): fixed" in text
    doc = json.loads(runner.invoke(app, ["capacity", str(path), "-n", "2000", "-f", "json"]).stdout)
    assert doc["deployments"][0]["cost_per_call_minute"] == pytest.approx(0.002655)
    assert "not deployments (their 'llm' stage is not a gpu, wafer or api stage): fixed" in doc["notes"]


def test_an_api_within_budget_and_without_limits_has_no_limit(tmp_path: Path) -> None:
    path = tmp_path / "api.toml"
    path.write_text(SLOW_API)
    res = runner.invoke(app, ["capacity", str(path), "-f", "json", "-n", "2000", "--budget-ms", "3000"])
    assert res.exit_code == 0, res.output
    (d,) = json.loads(res.stdout)["deployments"]
    assert (d["max_concurrent_calls"], d["limited_by"], d["on_front"]) == (None, "no limit", True)


def test_capacity_plot_does_not_place_an_over_budget_api(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from voicebudget.capacity import plan_capacity_file
    from voicebudget.capacity._render import capacity_figure

    path = tmp_path / "api.toml"
    path.write_text(SLOW_API)
    fig = capacity_figure(plan_capacity_file(path, samples=1000))
    try:
        labels = [line.get_label() for line in fig.axes[0].get_lines()]
        assert "baseline (load-independent, over budget at any load)" in labels
        assert not [off for coll in fig.axes[1].collections for off in coll.get_offsets()]  # no capacity, no point
    finally:
        plt.close(fig)
