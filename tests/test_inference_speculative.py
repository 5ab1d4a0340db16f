"""Speculative decoding: closed forms, the verification step under load, and published speed-ups.

Published rows (each with its source and the date read); the model is given what the source measured
(mean accepted tokens, the method's tree and draft size) and predicts the speed-up:

* Spec-Bench leaderboard (github.com/hemingkx/Spec-Bench Leaderboard.md, read 2026-12-01): one A100
  80GB, fp16, greedy, batch 1, Vicuna-7B/13B/33B v1.3; "Overall" speed-up and "#Mean Accepted Tokens"
  of EAGLE(-1) and Medusa(-1). Research implementations in eager PyTorch: the model, which charges no
  tree bookkeeping, is 20-29% optimistic on all six rows (tolerance 30%).
* NVIDIA technical blog "Low Latency Inference Chapter 1: Up to 1.9x Higher Llama 3.1 Performance with
  Medusa on NVIDIA HGX H200 with NVLink Switch" (developer.nvidia.com, Sep 2024, read 2026-12-01):
  TensorRT-LLM Medusa, Llama-3.1-70B 268 and Llama-3.1-405B 108 tokens/s/user on eight H200. Acceptance
  not published: Spec-Bench's Medusa-1 acceptance is assumed (tolerance 15%).
* GPUStack performance lab "Optimizing Qwen3-8B Latency on NVIDIA H100 GPUs"
  (docs.gpustack.ai/latest/performance-lab/qwen3-8b/h100-latency, read 2026-12-01): SGLang EAGLE-3 on
  Qwen3-8B-FP8 (4 steps, top-k 4, 16 draft tokens) vs vLLM bf16 without it, ShareGPT: 2.7x at batch 1,
  2.4x at 2, 2.2x at 4, 1.6x at 8. The acceptance is not published: it is solved from the batch-1 row,
  the other three are predicted.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.cli import app

runner = CliRunner()

VOCAB_LLAMA1 = 32_000  # Vicuna v1.3 (LLaMA-1) config.json vocab_size
VOCAB_LLAMA31 = 128_256  # meta-llama/Llama-3.1-70B config.json vocab_size


def _llama1(ident: str, d: int, layers: int, heads: int, params: float) -> vb.ModelArch:
    """Vicuna-13B/33B v1.3 (LLaMA-1 architecture) from lmsys/vicuna-{13b,33b}-v1.3 config.json: hidden_size
    5120/6656, num_hidden_layers 40/60, num_attention_heads 40/52 (no GQA), max_position_embeddings 2048."""
    return vb.ModelArch(
        id=ident,
        name=ident,
        total_params=params,
        active_params=params,
        layers=layers,
        d_model=d,
        q_heads=heads,
        kv_heads=heads,
        head_dim=d // heads,
        max_context_tokens=2048,
        source="lmsys config.json (see test docstring)",
    )


VICUNA = {  # model, d_model, MLP width (intermediate_size)
    "7b": (vb.MODELS["llama-2-7b"], 4096, 11_008),
    "13b": (_llama1("vicuna-13b", 5120, 40, 40, 13.0e9), 5120, 13_824),
    "33b": (_llama1("vicuna-33b", 6656, 60, 52, 32.5e9), 6656, 17_920),
}


def _eagle(tau: float, d: int, ffn: int, params: float, vocab: int = VOCAB_LLAMA1) -> vb.SpeculativeDecoding:
    """EAGLE-1: draft tree of 25 nodes, depth 5 (SafeAILab/EAGLE choices.py); one draft pass reads one
    decoder layer (4 d^2 attention + 3 d ffn MLP), a 2d -> d projection and the LM head."""
    c = (4 * d * d + 3 * d * ffn + 2 * d * d + d * vocab) / params
    return vb.SpeculativeDecoding.from_accepted_tokens(tau, draft_tokens=5, draft_cost_ratio=c, verify_tokens=26)


def _medusa(tau: float, d: int, params: float, vocab: int = VOCAB_LLAMA1) -> vb.SpeculativeDecoding:
    """Medusa-1: tree mc_sim_7b_63 (63 candidates, depth 4: FasterDecoding/Medusa medusa_choices.py); one
    head reads a d x d residual block and its own LM head."""
    c = (d * d + d * vocab) / params
    return vb.SpeculativeDecoding.from_accepted_tokens(tau, draft_tokens=4, draft_cost_ratio=c, verify_tokens=64)


def test_accepted_tokens_round_trip_and_bounds() -> None:
    spec = vb.SpeculativeDecoding.from_accepted_tokens(3.61, draft_tokens=5, draft_cost_ratio=0.05, verify_tokens=26)
    assert spec.tokens_per_step == pytest.approx(3.61, rel=1e-9)
    a = spec.acceptance_rate
    assert (1 - a**6) / (1 - a) == pytest.approx(3.61, rel=1e-9)
    assert spec.verified_tokens == 26
    assert vb.SpeculativeDecoding(acceptance_rate=0.5, draft_tokens=3, draft_cost_ratio=0.0).verified_tokens == 4
    with pytest.raises(vb.ScenarioError, match=r"must be in \[1, 6\)"):
        vb.SpeculativeDecoding.from_accepted_tokens(6.0, draft_tokens=5, draft_cost_ratio=0.0)
    with pytest.raises(ValueError, match="verify_tokens"):
        vb.SpeculativeDecoding(acceptance_rate=0.5, draft_tokens=5, draft_cost_ratio=0.0, verify_tokens=4)


@pytest.mark.parametrize("name", sorted(vb.SPECULATIVE_PRESETS))
def test_presets_carry_their_published_acceptance(name: str) -> None:
    preset = vb.get_speculative_preset(name.upper())
    assert preset.speculative.tokens_per_step == pytest.approx(preset.accepted_tokens, rel=1e-9)
    assert "Spec-Bench" in preset.source
    assert "read 2026-12-01" in preset.source
    with pytest.raises(vb.ScenarioError, match="known: eagle, medusa"):
        vb.get_speculative_preset("lookahead")


def test_speedup_is_bounded_and_shrinks_with_concurrency() -> None:
    """``tau / (V + g c) <= S(B) <= tau / (1 + g c)``: verification costs between one step and ``V`` steps."""
    spec = vb.get_speculative_preset("eagle").speculative
    tau, g, c, v = spec.tokens_per_step, spec.draft_tokens, spec.draft_cost_ratio, spec.verified_tokens
    wl = vb.Workload(prompt_tokens=500, output_tokens=300)
    gains = []
    for conc in (1, 2, 4, 8, 16, 32, 64, 128):
        r = vb.estimate_inference("llama-3.1-8b", "h100-sxm", vb.Deployment(concurrency=conc), wl, speculative=spec)
        assert r.speculative_speedup is not None
        assert tau / (v + g * c) <= r.speculative_speedup <= tau / (1 + g * c) + 1e-12
        gains.append(r.speculative_speedup)
    assert gains == sorted(gains, reverse=True)
    assert gains[0] == pytest.approx(spec.speedup, rel=0.01)  # batch 1: verification ~ one memory-bound step
    assert gains[-1] < 1.0  # 128 x 26 verified tokens per step: compute-bound, a slowdown
    slow = vb.estimate_inference("llama-3.1-8b", "h100-sxm", vb.Deployment(concurrency=128), wl, speculative=spec)
    assert any("costs more than they save" in n for n in slow.notes)


@pytest.mark.parametrize(
    ("method", "size", "tau", "measured"),
    [
        ("eagle", "7b", 3.61, 2.29),
        ("eagle", "13b", 3.64, 2.34),
        ("eagle", "33b", 3.39, 2.47),
        ("medusa", "7b", 2.32, 1.78),
        ("medusa", "13b", 2.39, 1.75),
        ("medusa", "33b", 2.33, 1.79),
    ],
)
def test_spec_bench_batch_1_speedups(method: str, size: str, tau: float, measured: float) -> None:
    """Predicted vs Spec-Bench (A100, batch 1): eagle +24/+29/+22%, medusa +20/+29/+26%."""
    model, d, ffn = VICUNA[size]
    spec = _eagle(tau, d, ffn, model.total_params) if method == "eagle" else _medusa(tau, d, model.total_params)
    r = vb.estimate_inference(
        model, "a100-80gb", vb.Deployment(), vb.Workload(prompt_tokens=200, output_tokens=300), speculative=spec
    )
    assert r.speculative_speedup is not None
    assert r.speculative_speedup == pytest.approx(measured, rel=0.30)
    assert r.speculative_speedup > measured  # the model charges no tree bookkeeping: optimistic, never pessimistic


@pytest.mark.parametrize(
    ("model", "d", "measured_tokens_per_s"),
    [
        ("llama-3.1-70b", 8192, 268.0),
        ("llama-3.1-405b", 16384, 108.0),
    ],
)
def test_nvidia_medusa_on_hgx_h200(model: str, d: int, measured_tokens_per_s: float) -> None:
    """Predicted 239 and 95 tokens/s/user (-11%, -12%); TP8 over eight H200, fp8 (assumption: the blog does not
    state it), 1,000 in / 200 out (assumption), Spec-Bench Medusa-1 acceptance (assumption)."""
    m = vb.MODELS[model]
    spec = _medusa(2.32, d, m.total_params, VOCAB_LLAMA31)
    r = vb.estimate_inference(
        model,
        "h200",
        vb.Deployment(chips=8, tensor_parallel=8, precision="fp8"),
        vb.Workload(prompt_tokens=1000, output_tokens=200),
        speculative=spec,
    )
    assert r.tokens_per_s_per_user == pytest.approx(measured_tokens_per_s, rel=0.15)


def _qwen3_ratio(tau: float, concurrency: int) -> float:
    """vLLM bf16 TPOT / SGLang fp8 EAGLE-3 TPOT at one concurrency (the GPUStack comparison)."""
    m = vb.MODELS["qwen3-8b"]
    # EAGLE-3 head on Qwen3-8B (d 4096, MLP 12,288): one layer, a 3d -> d fusion, a 32,000-token draft LM head.
    c = (4 * 4096**2 + 3 * 4096 * 12_288 + 3 * 4096**2 + 4096 * 32_000) / m.total_params
    spec = vb.SpeculativeDecoding.from_accepted_tokens(tau, draft_tokens=4, draft_cost_ratio=c, verify_tokens=16)
    wl = vb.Workload(prompt_tokens=300, output_tokens=300)
    plain = vb.estimate_inference(m, "h100-sxm", vb.Deployment(concurrency=concurrency), wl)
    fast = vb.estimate_inference(
        m, "h100-sxm", vb.Deployment(concurrency=concurrency, precision="fp8"), wl, speculative=spec
    )
    return plain.tpot_ms / fast.tpot_ms


def test_gain_shrinks_under_load_gpustack_qwen3_8b_h100() -> None:
    """Measured 2.7x / 2.4x / 2.2x / 1.6x at batch 1 / 2 / 4 / 8. With the acceptance solved from batch 1
    (tau 2.05), the model gives 2.69x (+12%), 2.68x (+22%) and 2.64x (+65%): its gain starts shrinking
    only past batch 8 (2.18x at 16, 1.47x at 32, 0.98x at 64) while the measured one shrinks from batch 2.
    The roofline takes a step as max(weight read, GEMM time): 16 x 8 verified tokens still hide behind the
    weight read, where SGLang's batched tree verification does not. Kept as a known gap, pinned here."""
    lo, hi = 1.0, 4.99
    for _ in range(60):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if _qwen3_ratio(mid, 1) < 2.7 else (lo, mid)
    tau = lo
    assert _qwen3_ratio(tau, 2) == pytest.approx(2.4, rel=0.15)
    assert _qwen3_ratio(tau, 4) == pytest.approx(2.2, rel=0.25)
    assert 1.4 < _qwen3_ratio(tau, 8) / 1.6 < 1.9  # the known gap: too optimistic at batch 8
    assert _qwen3_ratio(tau, 64) < 1.0  # the crossover exists, at a larger batch than measured


def test_wafer_verification_costs_one_traversal() -> None:
    """On SRAM chips a token's time is pipeline latency: verifying V tokens costs one traversal until the
    compute floor, so the speed-up is Leviathan's closed form ``tau / (1 + g c)``."""
    spec = vb.SpeculativeDecoding(acceptance_rate=0.8, draft_tokens=4, draft_cost_ratio=0.1)
    launch = vb.Deployment(software="2024-08")  # the launch software, without speculative decoding
    base = vb.estimate_inference("llama-3.1-70b", "wse-3", launch)
    fast = vb.estimate_inference("llama-3.1-70b", "wse-3", launch, speculative=spec)
    assert fast.speculative_speedup == pytest.approx(spec.speedup, rel=1e-12)
    assert base.tpot_ms / fast.tpot_ms == pytest.approx(spec.tokens_per_step / 1.4, rel=1e-12)
    assert any("software generation" in n and "counted twice" in n for n in fast.notes)


def test_eagle_on_a_wafer_generation_with_speculation_does_not_overshoot() -> None:
    """Issue 21 item 5: ``eagle`` on WSE-3 gave 4,031 tokens/s for a 70B (1,420 x 2.84) where Cerebras' own
    figure with its speculative decoding is ~2,100: the default generation's figures already include it, so the
    preset is not applied on top (x1.00, a note says so, and names the generation without it)."""
    eagle = vb.get_speculative_preset("eagle").speculative
    plain = vb.estimate_inference("llama-3.1-70b", "wse-3")
    r = vb.estimate_inference("llama-3.1-70b", "wse-3", speculative=eagle)
    assert r.speculative_speedup == 1.0
    assert r.tokens_per_s_per_user == pytest.approx(plain.tokens_per_s_per_user)
    assert r.tokens_per_s_per_user < 2148  # Cerebras' Oct 2024 figure with speculation (danielkim.sh)
    assert any("already include it" in n and "pick generation 2024-08" in n for n in r.notes)


def test_wafer_stage_takes_a_preset() -> None:
    stage = vb.WaferStage(model="llama-3.1-70b", hardware="wse-3", speculative="eagle")
    assert stage.speculative == vb.SPECULATIVE_PRESETS["eagle"].speculative
    with pytest.raises(ValueError, match="unknown speculative preset 'nope'; known: eagle, medusa"):
        vb.WaferStage(model="llama-3.1-70b", hardware="wse-3", speculative="nope")


def test_cli_presets_tree_size_and_request_rate() -> None:
    base = ["infer", "-m", "llama-2-7b", "-H", "a100-80gb", "-f", "json"]
    res = runner.invoke(app, [*base, "--speculative", "eagle"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    spec = vb.SPECULATIVE_PRESETS["eagle"].speculative
    assert doc["speculative_speedup"] == pytest.approx(spec.speedup, rel=0.01)  # 2.84 at concurrency 1
    loaded = json.loads(runner.invoke(app, [*base, "--speculative", "eagle", "-c", "64"]).stdout)
    assert loaded["speculative_speedup"] < 1.0
    tree = json.loads(runner.invoke(app, [*base, "--speculative", "0.8,4,0.05,64", "-c", "16"]).stdout)
    chain = json.loads(runner.invoke(app, [*base, "--speculative", "0.8,4,0.05", "-c", "16"]).stdout)
    assert tree["speculative_speedup"] < chain["speculative_speedup"]  # a 64-node tree costs compute
    table = runner.invoke(app, ["infer", "-m", "llama-2-7b", "-H", "a100-80gb", "--speculative", "medusa"])
    assert "speculative decoding" in table.output
    for bad, msg in (("nope", "known: eagle, medusa"), ("0.8,4,0.05,4", "verify tokens must be >= draft tokens + 1")):
        r = runner.invoke(app, [*base, "--speculative", bad])
        assert r.exit_code == 2
        assert msg in r.output
    r = runner.invoke(app, [*base, "--speculative", "eagle", "--request-rate", "2"])
    assert r.exit_code == 2
    assert "--speculative" in r.output
    assert "--request-rate" in r.output


def test_wafer_vendor_speculative_figures_are_partly_software() -> None:
    """Vendor speeds with speculative decoding, against the model with the most accepting preset.

    * Groq ``llama-3.1-70b-specdec``: 250 -> 1,665 tokens/s (GroqCloud, Nov 2024; The AI Observer's report
      of Groq's announcement and Artificial Analysis' measurement, read 2026-12-01). The ``groq-lpu`` timing
      (Feb 2024 software, no speculative decoding) gives 294 tokens/s; with ``eagle`` (x2.84) 836, half the
      vendor figure: x5.7 over the model's own speed needs tau >= 5.7 with a free draft, beyond every
      acceptance published for the presets.
    * Cerebras Llama-3.1-70B: 450 tokens/s at launch (Cerebras blog, Aug 2024) and ~2,100 after the Oct 2024
      release that rewrote kernels and "implements speculative decoding" (its notes, read 2026-12-01). The
      ``wse-3`` fit (Nov 2024 on) already gives 1,420 tokens/s without ``speculative``: 68% of the figure.
    """
    eagle = vb.get_speculative_preset("eagle").speculative
    feb24 = vb.Deployment(software="2024-02")
    groq = vb.estimate_inference("llama-3.1-70b", "groq-lpu", feb24, speculative=eagle)
    assert groq.tokens_per_s_per_user == pytest.approx(836, rel=0.02)
    assert groq.tokens_per_s_per_user < 0.55 * 1665
    plain = vb.estimate_inference("llama-3.1-70b", "groq-lpu", feb24)
    needed = 1665 / plain.tokens_per_s_per_user  # 5.66 tokens per target step even with a free draft
    assert needed > max(p.accepted_tokens for p in vb.SPECULATIVE_PRESETS.values())
    cerebras = vb.estimate_inference("llama-3.1-70b", "wse-3", vb.Deployment(software="2024-11"))
    assert cerebras.tokens_per_s_per_user / 2100 == pytest.approx(0.68, abs=0.02)
    assert 2100 / cerebras.tokens_per_s_per_user < eagle.speedup  # the rest of the 2,100 needs only a weak draft


def test_eagle_on_the_newest_generations_does_not_overshoot_their_figures() -> None:
    """Issue 21 item 5: the default (newest) generations. Cerebras 2025-05 includes speculative decoding, so
    ``eagle`` is not applied on it (x1.00) and Llama-3.3-70B stays under Artificial Analysis' 2,314 tok/s and
    Cerebras' own ~2,100; Groq 2026-05 does not, so ``eagle`` applies (x2.84 at batch 1) and stays under Groq's
    own speculative endpoint of Nov 2024 (llama-3.1-70b-specdec, 1,665 tok/s)."""
    eagle = vb.get_speculative_preset("eagle").speculative
    wse = vb.estimate_inference("llama-3.3-70b", "wse-3", speculative=eagle)
    assert wse.speculative_speedup == 1.0
    assert any("already include it" in n for n in wse.notes)
    assert wse.tokens_per_s_per_user < 2100 < 2314
    groq = vb.estimate_inference("llama-3.3-70b", "groq-lpu", speculative=eagle)
    assert groq.speculative_speedup == pytest.approx(eagle.speedup)
    assert groq.tokens_per_s_per_user < 1665


def test_capacity_open_loop_uses_the_speedup_at_its_mean_concurrency() -> None:
    """``capacity`` with an open-loop GPU stage divides its TPOT by the speed-up at the scheduler's mean
    concurrency (not the batch-1 closed form): smaller than x2.84 under the support line's load."""
    import dataclasses
    import math
    from pathlib import Path

    from voicebudget.capacity import OpenLoopLLM, deployments_from_scenario

    scenario = vb.load_scenario(Path(__file__).resolve().parents[1] / "scenarios" / "support-line.toml")
    assert scenario.traffic is not None
    gpu = deployments_from_scenario(scenario)[0]
    spec = vb.get_speculative_preset("eagle").speculative
    fast = dataclasses.replace(gpu, stage=gpu.stage.model_copy(update={"speculative": spec}))
    plain, sped = gpu.stage_at(40, scenario.traffic), fast.stage_at(40, scenario.traffic)
    assert isinstance(plain, OpenLoopLLM)
    assert isinstance(sped, OpenLoopLLM)
    dep = gpu.stage.deployment().model_copy(update={"concurrency": math.ceil(plain.concurrency)})
    at = vb.estimate_inference(
        gpu.stage.model, gpu.stage.hardware, dep, fast._workload(scenario.traffic), speculative=spec
    )
    assert at.speculative_speedup is not None
    assert plain.tpot_ms / sped.tpot_ms == pytest.approx(at.speculative_speedup, rel=1e-9)
    assert at.speculative_speedup < spec.speedup


@pytest.mark.parametrize("value", [3, 0.7, True, [0.7, 4, 0.05]])
def test_a_stage_speculative_that_is_neither_preset_nor_table_says_what_is_allowed(value: object) -> None:
    # was pydantic's "Input should be a valid dictionary or instance of SpeculativeDecoding"
    with pytest.raises(
        ValueError,
        match=r"give a preset name \(eagle, medusa\) or a table \(acceptance_rate, "
        r"draft_tokens, draft_cost_ratio, verify_tokens\), got ",
    ):
        vb.GPUStage(model="llama-3.1-8b", hardware="h100-sxm", speculative=value)


@pytest.mark.parametrize("value", [50, 50.0, "50 ms"])
def test_a_bare_number_as_hosted_overhead_asks_for_a_distribution(value: object) -> None:
    # was "Input should be a valid dictionary or object to extract fields from"
    with pytest.raises(ValueError, match=r'give a distribution \(ms\), e\.g\. \{ kind = "fixed", value_ms = 50 \}'):
        vb.WaferStage(model="llama-3.1-70b", hardware="wse-3", hosted_overhead=value)
    ok = vb.WaferStage(model="llama-3.1-70b", hardware="wse-3", hosted_overhead={"kind": "fixed", "value_ms": 50})
    assert ok.hosted_overhead is not None
