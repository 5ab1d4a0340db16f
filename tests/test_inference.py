"""Inference models: catalogs, closed forms, memory checks, MoE, speculative decoding, fast mode."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import voicebudget as vb
from voicebudget.inference._gpu import weights_read_bytes

CAL = vb.DEFAULT_CALIBRATION if hasattr(vb, "DEFAULT_CALIBRATION") else vb.GPUCalibration()


def test_catalog_ids_and_sources() -> None:
    for hid in ("a100-40gb", "a100-80gb", "h100-sxm", "h200", "b200", "gb200", "mi300x", "wse-3", "groq-lpu"):
        assert vb.get_hardware(hid).source
    for mid in (
        "llama-3.1-8b",
        "llama-3.1-70b",
        "llama-3.3-70b",
        "llama-3.1-405b",
        "llama-2-7b",
        "llama-2-70b",
        "glm-4.7",
        "gpt-oss-120b",
        "qwen3-235b-a22b",
    ):
        assert vb.get_model(mid).source
    assert vb.get_model("Llama-3.3-70B") is vb.MODELS["llama-3.1-70b"]
    with pytest.raises(vb.ModelError, match="known: .*h100-sxm"):
        vb.get_hardware("h100")


def test_moe_parameters_add_up() -> None:
    for m in vb.MODELS.values():
        if m.is_moe:
            assert m.experts is not None
            assert m.experts_per_token is not None
            dense = m.total_params - m.routed_params
            active = dense + m.expert_params * m.n_moe_layers * m.experts_per_token
            assert active == pytest.approx(m.active_params, rel=1e-9)
    # Qwen3-235B: 3 * d_model * expert FFN = 3 * 4096 * 1536 = 18.9M parameters per expert (config.json)
    assert vb.MODELS["qwen3-235b-a22b"].expert_params == pytest.approx(3 * 4096 * 1536, rel=0.01)


def test_single_user_decode_closed_form() -> None:
    """Llama-3.1-8B bf16 on one H100 at concurrency 1: memory-bound, every term by hand."""
    m, hw = vb.MODELS["llama-3.1-8b"], vb.HARDWARE["h100-sxm"]
    p, o = 1000, 200
    r = vb.estimate_inference(m, hw, vb.Deployment(), vb.Workload(prompt_tokens=p, output_tokens=o))
    bw = hw.memory_bandwidth_bytes_per_s * CAL.memory_efficiency
    weights = 1e3 * m.total_params * 2 / bw
    kv = 1e3 * (p + o / 2) * 2 * 32 * 8 * 128 * 2 / bw
    attn = 1e3 * 4 * 32 * 32 * 128 * (p + o / 2) / (hw.bf16_flops_per_s * CAL.compute_efficiency)
    expected = weights + kv + attn + 32 * CAL.tau_layer_ms + CAL.tau_step_ms + 1 * CAL.tau_seq_ms
    assert r.tpot_ms == pytest.approx(expected, rel=1e-9)
    assert r.bound == "memory"
    assert r.chips == 1
    assert r.chips_chosen
    assert r.tokens_per_s_per_user == pytest.approx(1e3 / expected)
    # $3.00 per H100-hour (catalog price) / tokens per hour at one user
    assert r.cost_per_million_output_tokens == pytest.approx(3.00 / 3600 / (1e3 / expected) * 1e6)
    assert r.price is not None
    assert "mercatus" in r.price.source


def test_per_sequence_cost_by_serving_stack_closed_form() -> None:
    """A decoding sequence costs tau_seq per step on a 2025 serving stack whatever the tensor-parallel degree, and
    tau_seq + (tp - 1) tau_seq_rank on a 2023-24 one (Deployment.software "2024"): the overhead term of a step of
    Llama-3.1-8B fp8 at tp 8 holding 512 sequences, by hand; at that tp the 2024 cost caps a replica near
    1 / (tau_seq + 7 tau_seq_rank) = 4,545 tokens/s (1000 in / 1000 out: 4,304), which the 2025 stack passes
    9.8-fold (44,377)."""
    wl = vb.Workload(prompt_tokens=1000, output_tokens=1000)
    fixed = 32 * CAL.tau_layer_ms + CAL.tau_step_ms
    tp8 = {"chips": 8, "tensor_parallel": 8, "precision": "fp8", "concurrency": 512}
    now = vb.estimate_inference("llama-3.1-8b", "h100-sxm", vb.Deployment(**tp8), wl)  # type: ignore[arg-type]
    old = vb.estimate_inference("llama-3.1-8b", "h100-sxm", vb.Deployment(**tp8, software="2024"), wl)  # type: ignore[arg-type]
    assert now.step.overhead_ms == pytest.approx(fixed + 512 * CAL.tau_seq_ms, rel=1e-12)
    assert old.step.overhead_ms == pytest.approx(fixed + 512 * (CAL.tau_seq_ms + 7 * CAL.tau_seq_rank_ms), rel=1e-12)
    assert now.notes == ()
    assert old.notes[-1].startswith("serving-stack generation 2024: 2023-24 serving stacks")
    ceiling = 1e3 / (CAL.tau_seq_ms + 7 * CAL.tau_seq_rank_ms)
    assert ceiling == pytest.approx(4545.45, rel=1e-4)
    cap = {}
    for software in (None, "2024"):
        dep = vb.Deployment(chips=8, tensor_parallel=8, precision="fp8", software=software)
        cap[software] = vb.estimate_open_loop("llama-3.1-8b", "h100-sxm", dep, wl, 1.0).capacity_requests_per_s * 1000
    assert cap["2024"] == pytest.approx(4304, rel=0.01)  # below the ceiling
    assert cap[None] == pytest.approx(44377, rel=0.01)  # 9.8 times it
    # tp 1: the two generations agree (no rank beyond the first)
    one = [
        vb.estimate_inference("llama-3.1-8b", "h100-sxm", vb.Deployment(concurrency=64, software=sw), wl).tpot_ms
        for sw in (None, "2024", "2025")
    ]
    assert one[0] == one[1] == one[2]


def test_405b_bf16_does_not_fit_one_h100() -> None:
    with pytest.raises(vb.ModelError) as exc:
        vb.estimate_inference("llama-3.1-405b", "h100-sxm", vb.Deployment(chips=1))
    msg = str(exc.value)
    assert "Llama-3.1-405B bf16 on 1 x NVIDIA H100 SXM does not fit" in msg
    assert "weights 811.8 GB" in msg
    assert "72.0 GB usable" in msg
    assert "short by" in msg
    assert "fits on 16 chips" in msg


def test_fewest_chips_is_chosen() -> None:
    r = vb.estimate_inference("llama-3.1-405b", "h100-sxm")
    # 812 GB of bf16 weights > 8 x 72 GB: two pipeline stages of an 8-GPU NVLink domain
    assert (r.chips, r.tensor_parallel, r.pipeline_parallel) == (16, 8, 2)
    assert r.chips_chosen
    assert "fewest" in r.notes[0]
    # 70.6 GB of fp8 weights fit 72 GB usable on one H100; bf16 (141 GB) needs two
    assert vb.estimate_inference("llama-3.1-70b", "h100-sxm", vb.Deployment(precision="fp8")).chips == 1
    assert vb.estimate_inference("llama-3.1-70b", "h100-sxm").chips == 2
    assert vb.estimate_inference("llama-3.1-70b", "h200", vb.Deployment(precision="fp8")).chips == 1


def test_moe_weights_read_grow_with_batch() -> None:
    m = vb.MODELS["qwen3-235b-a22b"]
    one = weights_read_bytes(m, "fp8", 1)
    many = weights_read_bytes(m, "fp8", 64)
    allw = weights_read_bytes(m, "fp8", 1e6)
    assert one == pytest.approx(m.active_params, rel=1e-9)  # fp8: one byte per active parameter
    assert one < many < allw
    assert allw == pytest.approx(m.total_params, rel=1e-6)
    # E (1 - (1 - k/E)^n): 128 * (1 - (120/128)^64) distinct experts per layer
    touched = 128 * (1 - (1 - 8 / 128) ** 64)
    dense = m.total_params - m.routed_params
    assert many == pytest.approx(dense + m.expert_params * 94 * touched, rel=1e-9)


def test_gpt_oss_native_fp4_experts_fit_one_h100() -> None:
    r = vb.estimate_inference(
        "gpt-oss-120b", "h100-sxm", vb.Deployment(), vb.Workload(prompt_tokens=1000, output_tokens=200)
    )
    assert r.chips == 1
    assert r.memory.weights_bytes < 70e9  # MXFP4-class experts (4.5 bits) + bf16 dense part
    with pytest.raises(vb.ModelError):
        vb.estimate_inference("gpt-oss-120b", "h100-sxm", vb.Deployment(chips=1, precision="bf16"))


def test_speculative_decoding_closed_form() -> None:
    spec = vb.SpeculativeDecoding(acceptance_rate=0.8, draft_tokens=4, draft_cost_ratio=0.05)
    assert spec.tokens_per_step == pytest.approx((1 - 0.8**5) / 0.2)  # 3.3616 (Leviathan et al. 2023)
    assert spec.speedup == pytest.approx(3.3616 / 1.2)
    base = vb.estimate_inference("llama-3.1-8b", "h100-sxm")
    fast = vb.estimate_inference("llama-3.1-8b", "h100-sxm", speculative=spec)
    # At concurrency 1 the 5 verified tokens ride on the weight read: verification costs one step,
    # plus their attention FLOPs (3e-5 of the speed-up here).
    assert base.tpot_ms / fast.tpot_ms == pytest.approx(spec.speedup, rel=1e-4)
    assert base.tpot_ms / fast.tpot_ms < spec.speedup
    assert fast.speculative_speedup == pytest.approx(base.tpot_ms / fast.tpot_ms)
    assert fast.ttft_ms == base.ttft_ms


def test_tensor_parallel_adds_collectives() -> None:
    one = vb.estimate_inference("llama-3.1-70b", "h200", vb.Deployment(chips=1, precision="fp8"))
    two = vb.estimate_inference("llama-3.1-70b", "h200", vb.Deployment(chips=2, precision="fp8"))
    assert one.step.communication_ms == 0
    # two all-reduces per layer at >= 8 us each
    assert two.step.communication_ms >= 2 * 80 * 0.008
    assert two.tpot_ms < one.tpot_ms


def test_bad_parallel_layout() -> None:
    with pytest.raises(vb.ModelError, match="multiple of tensor_parallel"):
        vb.estimate_inference("llama-3.1-8b", "h100-sxm", vb.Deployment(chips=6, tensor_parallel=4))
    with pytest.raises(vb.ModelError, match="scale-up domain"):
        vb.estimate_inference("llama-3.1-8b", "h100-sxm", vb.Deployment(chips=16, tensor_parallel=16))


# ---------------------------------------------------------------- wafer-scale / LPU


def test_wafer_chips_and_refusal() -> None:
    r = vb.estimate_inference("llama-3.1-405b", "wse-3")
    hw = vb.HARDWARE["wse-3"]
    assert hw.sram is not None
    need = (r.memory.weights_bytes + r.memory.kv_cache_bytes) / (44e9 * hw.sram.usable_sram_fraction)
    assert r.chips == math.ceil(need)
    t = hw.sram
    assert r.tpot_ms == pytest.approx(126 * t.tau_layer_ms + (r.chips - 1) * t.tau_hop_ms + t.tau_step_ms)
    assert r.bound == "per-layer latency"
    with pytest.raises(vb.ModelError, match="it fits on 21 chips"):
        vb.estimate_inference("llama-3.1-405b", "wse-3", vb.Deployment(chips=4))


def test_groq_is_hop_bound() -> None:
    # Feb 2024 software: the LPU pipeline's chip-to-chip hops dominate; the May 2026 generation (hops x 0.29,
    # Groq's pricing-page speeds) is bound by its per-step time instead.
    r = vb.estimate_inference("llama-2-70b", "groq-lpu", vb.Deployment(software="2024-02"))
    assert r.chips > 500
    assert r.bound == "communication"
    assert vb.estimate_inference("llama-2-70b", "groq-lpu").bound == "per-layer latency"


# ---------------------------------------------------------------- fast mode


NIM = {"model": "llama-3.3-70b", "hardware": "h100-sxm"}
NIM_WL = vb.Workload(prompt_tokens=5000, output_tokens=500)


def _nim(c: int) -> vb.Deployment:
    return vb.Deployment(chips=2, tensor_parallel=2, precision="fp8", concurrency=c)


def test_nim_concurrency_sweep_shape() -> None:
    """NVIDIA NIM 1.8 benchmarking page: Llama-3.3-70B on 2 x H100 fp8, ITL 59.73 ms at concurrency 50 and
    18.58 ms at 1 (5000 in / 500 out): a 3.21x speed-up; we allow 30%."""
    cmp = vb.compare_policies(NIM["model"], NIM["hardware"], _nim(50), _nim(1), NIM_WL)
    assert cmp.speedup == pytest.approx(59.73 / 18.58, rel=0.30)
    # 50 users share the chips: 50 x the chip-time per user, minus the speed-up
    assert cmp.price_ratio == pytest.approx(50 / cmp.speedup, rel=1e-9)
    assert cmp.baseline.throughput_tokens_per_s == pytest.approx(814, rel=0.30)  # NIM: 814 tok/s system


def test_bound_is_the_majority_step_s_not_the_mean_s() -> None:
    """docs/inference.md's first example: a tenth of the steps at 50 in flight prefill others' 5,000-token
    prompts (phi = 49 x 1 / 500), so the mean step shows compute 34.4 ms over weights 11.7 ms, while the nine
    tenths without a prompt are memory-bound, and ``bound`` is theirs."""
    r = vb.estimate_inference(NIM["model"], NIM["hardware"], _nim(50), NIM_WL)
    assert round(r.step.compute_ms, 1) == 34.4
    assert round(r.step.weights_ms, 1) == 11.7
    assert r.bound == r.step.bound == "memory"


def test_fast_mode_monotone_in_concurrency() -> None:
    speedups, prices = [], []
    for c in range(1, 51):
        cmp = vb.compare_policies(NIM["model"], NIM["hardware"], _nim(50), _nim(c), NIM_WL)
        speedups.append(cmp.speedup)
        prices.append(cmp.price_ratio)
    assert all(a >= b for a, b in zip(speedups, speedups[1:], strict=False))
    assert all(a >= b for a, b in zip(prices, prices[1:], strict=False))
    assert speedups[-1] == pytest.approx(1.0)
    assert prices[-1] == pytest.approx(1.0)


def test_plan_fast_mode_finds_the_cheapest_concurrency() -> None:
    plan = vb.plan_fast_mode(NIM["model"], NIM["hardware"], _nim(50), 2.0, NIM_WL)
    assert plan.reachable
    assert plan.concurrency is not None
    assert plan.comparison is not None
    assert plan.comparison.speedup >= 2.0
    nxt = vb.compare_policies(NIM["model"], NIM["hardware"], _nim(50), _nim(plan.concurrency + 1), NIM_WL)
    assert nxt.speedup < 2.0
    assert plan.ceiling == pytest.approx(
        vb.compare_policies(NIM["model"], NIM["hardware"], _nim(50), _nim(1), NIM_WL).speedup
    )


def test_plan_fast_mode_out_of_reach() -> None:
    plan = vb.plan_fast_mode(NIM["model"], NIM["hardware"], _nim(50), 10.0, NIM_WL)
    assert not plan.reachable
    assert plan.concurrency is None
    assert "out of reach" in plan.message
    assert f"{plan.ceiling:.2f}x" in plan.message


def test_published_fast_mode_trade() -> None:
    """Anthropic fast mode (calibration row A2): up to 2.5x output speed at 6x price, TTFT not the target.
    A dense frontier-size model (Llama-3.1-405B fp8 on 8 x B200, 1000 in / 300 out, a 2025 serving stack: no
    per-rank sequence cost at tp 8): the published 6x is what pins the standard tier's load, not a check of the
    physics. At 144 in flight 2.5x costs 5.21x (batch 144 -> 11), at 128 12.8x (docs/inference.md); TTFT does not
    get worse."""
    plan = vb.plan_fast_mode(
        "llama-3.1-405b",
        "b200",
        vb.Deployment(chips=8, precision="fp8", concurrency=144),
        2.5,
        vb.Workload(prompt_tokens=1000, output_tokens=300),
    )
    assert plan.reachable
    assert plan.comparison is not None
    assert plan.comparison.price_ratio == pytest.approx(5.21, rel=0.01)
    assert plan.concurrency == 11
    assert plan.comparison.ttft_ratio < 1.0  # TTFT does not get worse


# ---------------------------------------------------------------- scenario stages


def test_gpu_stage_closed_form_without_noise() -> None:
    st = vb.GPUStage(
        model="llama-3.1-8b",
        hardware="h100-sxm",
        prompt_tokens=800,
        output_tokens=200,
        first_phrase_tokens=12,
        jitter_cv=0.0,
    )
    r = vb.estimate_inference(
        "llama-3.1-8b", "h100-sxm", vb.Deployment(), vb.Workload(prompt_tokens=800, output_tokens=200)
    )
    x = st.sample(np.random.default_rng(3), 1000)
    assert np.allclose(x, r.ttft_ms + 12 * r.tpot_ms)


def test_gpu_stage_queue_wait_and_jitter() -> None:
    st = vb.GPUStage(
        model="llama-3.3-70b",
        hardware="h100-sxm",
        chips=2,
        precision="fp8",
        concurrency=50,
        prompt_tokens=5000,
        output_tokens=500,
        first_phrase_tokens=10,
        jitter_cv=0.0,
    )
    r = st.predict()
    x = st.sample(np.random.default_rng(3), 200_000)
    # mean wait for the running step = half a step: the sample mean equals the model's TTFT + 10 TPOT
    assert x.mean() == pytest.approx(r.ttft_ms + 10 * r.tpot_ms, rel=2e-3)
    assert x.max() - x.min() == pytest.approx(r.step.total_ms, rel=1e-2)  # uniform on [0, T_step]
    noisy = st.model_copy(update={"jitter_cv": 0.2}).sample(np.random.default_rng(3), 200_000)
    assert noisy.mean() == pytest.approx(x.mean(), rel=1e-2)  # mean-one noise
    assert noisy.std() > 5 * x.std()


def test_stage_prompt_range_varies_ttft() -> None:
    st = vb.GPUStage(
        model="llama-3.1-8b",
        hardware="h100-sxm",
        prompt_tokens=vb.TokenRange(low=100, high=4000),
        jitter_cv=0.0,
        first_phrase_tokens=0,
    )
    x = st.sample(np.random.default_rng(0), 5000)
    lo = vb.estimate_inference("llama-3.1-8b", "h100-sxm", workload=vb.Workload(prompt_tokens=100)).ttft_ms
    hi = vb.estimate_inference("llama-3.1-8b", "h100-sxm", workload=vb.Workload(prompt_tokens=4000)).ttft_ms
    assert lo <= x.min() < x.max() <= hi


SCENARIO = """
name = "hardware"
[pipeline]
kind = "sequence"
[pipeline.stages.llm]
kind = "gpu"
model = "llama-3.1-8b"
hardware = "h100-sxm"
jitter_cv = 0.0
[variants.wafer]
stages.llm = { kind = "wafer", path = "on-prem", model = "llama-3.1-8b", hardware = "wse-3", jitter_cv = 0.0 }
[variants.custom]
stages.llm.kind = "gpu"
stages.llm.model = "llama-3.1-8b"
stages.llm.jitter_cv = 0.0
[variants.custom.stages.llm.hardware]
id = "my-gpu"
name = "My GPU"
memory_bytes = 48e9
memory_bandwidth_bytes_per_s = 1e12
bf16_flops_per_s = 400e12
scaleup_link_bytes_per_s = 100e9
source = "my spec sheet"
"""


def test_scenario_with_modelled_llm_and_inline_hardware() -> None:
    import tomllib

    sc = vb.parse_scenario(tomllib.loads(SCENARIO), origin="hw.toml")
    res = vb.simulate(sc, samples=2000, seed=1)
    p50 = {r.name: r.total.p50_ms for r in res.reports}
    assert p50["wafer"] < p50["baseline"] < p50["custom"]


def test_scenario_errors_name_the_field() -> None:
    import tomllib

    bad = SCENARIO.replace('hardware = "h100-sxm"', 'hardware = "wse-3"')
    with pytest.raises(vb.ScenarioError, match=r"hw.toml: pipeline.stages.llm.*use kind = 'wafer'"):
        vb.parse_scenario(tomllib.loads(bad), origin="hw.toml")
    big = SCENARIO.replace(
        'model = "llama-3.1-8b"\nhardware = "h100-sxm"', 'model = "llama-3.1-405b"\nhardware = "h100-sxm"\nchips = 1'
    )
    with pytest.raises(vb.ScenarioError, match="does not fit.*short by"):
        vb.parse_scenario(tomllib.loads(big), origin="hw.toml")


def test_api_stage_fast_tier() -> None:
    base = vb.APIStage(
        ttft=vb.LogNormal(p50_ms=600, p95_ms=900),
        tpot=vb.Fixed(value_ms=20.0),
        first_phrase_tokens=10,
        fast=vb.FastTier(speed_factor=2.5, price_factor=6.0),
    )
    fast = base.model_copy(update={"use_fast": True})
    a = base.sample(np.random.default_rng(7), 10_000)
    b = fast.sample(np.random.default_rng(7), 10_000)
    assert np.allclose(a - b, 10 * (20.0 - 20.0 / 2.5))  # TTFT unchanged, 10 tokens 2.5x faster
    with pytest.raises(ValueError, match="use_fast"):
        vb.APIStage(ttft=vb.Fixed(value_ms=1.0), tpot=vb.Fixed(value_ms=1.0), use_fast=True)


def test_fast_mode_scenario_effect_on_the_budget(root: Path) -> None:
    sc = vb.load_scenario(root / "scenarios" / "fast-mode.toml")
    res = vb.simulate(sc, samples=20_000, seed=2)
    llm = {r.name: next(s for s in r.stages if s.name == "llm") for r in res.reports}
    # TTFT unchanged; ~10 first-phrase tokens at 14.7 ms/token become 2.5x faster: ~88 ms saved at the median
    saved = llm["baseline"].stats.p50_ms - llm["api-fast"].stats.p50_ms
    assert saved == pytest.approx(10 * 14.7 * (1 - 1 / 2.5), rel=0.1)
    p95 = {r.name: r.total.p95_ms for r in res.reports}
    assert p95["self-hosted-c8"] < p95["self-hosted-c128"]
    assert not res.passed  # a frontier API's ~1.7 s TTFT dominates the 800 ms budget, fast mode or not


def test_hardware_scenario_loads_and_orders(root: Path) -> None:
    sc = vb.load_scenario(root / "scenarios" / "hardware-llm.toml")
    res = vb.simulate(sc, samples=5_000, seed=2)
    p50 = {r.name: r.total.p50_ms for r in res.reports}
    assert p50["cerebras-wse3"] < p50["h100-concurrency-4"] < p50["baseline"]


def test_arrival_rate_littles_law_fixed_point() -> None:
    dep, wl = vb.Deployment(chips=2, precision="fp8"), vb.Workload(prompt_tokens=2000, output_tokens=200)
    lam = 5.0  # requests per second
    r = vb.estimate_at_arrival_rate("llama-3.3-70b", "h100-sxm", dep, wl, lam)

    def in_flight(c: int) -> float:  # Little's law: lambda x request time
        x = vb.estimate_inference("llama-3.3-70b", "h100-sxm", dep.model_copy(update={"concurrency": c}), wl)
        return lam * (x.ttft_ms + 200 * x.tpot_ms) / 1e3

    c = r.concurrency
    assert c >= in_flight(c)
    assert c - 1 < in_flight(c - 1)
    assert "Little's law" in r.notes[-1]
    with pytest.raises(vb.ModelError, match="requests/s exceeds what this deployment serves"):
        vb.estimate_at_arrival_rate("llama-3.3-70b", "h100-sxm", dep, wl, 200.0)


def test_fast_mode_on_more_chips() -> None:
    base = vb.Deployment(chips=2, tensor_parallel=2, precision="fp8", concurrency=8)
    more = base.model_copy(update={"chips": 4, "tensor_parallel": 4})
    cmp = vb.compare_policies("llama-3.3-70b", "h100-sxm", base, more, NIM_WL)
    assert cmp.speedup > 1.2
    # chip-time per token: twice the chips, same users, each token speedup-times faster
    assert cmp.price_ratio == pytest.approx(2.0 / cmp.speedup, rel=1e-9)
