"""Catalog models read from their config.json: DeepSeek-V3/R1 (multi-head latent attention), Llama-4 Scout and
Maverick, GLM-4.5/4.6/4.5-Air, Llama-3-8B/70B. Parameter totals against each model card (tolerance stated per
row), KV-cache bytes per token against their closed forms, and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hfconfig_files import write_config
from pydantic import ValidationError
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.cli import app
from voicebudget.inference._catalog import model_from_hf_dict
from voicebudget.inference._gpu import GPUPlan, decode_step, kv_bytes_per_token, prefill_ms

runner = CliRunner()

# deepseek-ai/DeepSeek-V3 (and -R1) config.json, the fields the count reads (the source on the catalog entry).
DEEPSEEK_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "first_k_dense_replace": 3,
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "kv_lora_rank": 512,
    "max_position_embeddings": 163840,
    "moe_intermediate_size": 2048,
    "moe_layer_freq": 1,
    "n_group": 8,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_attention_heads": 128,
    "num_experts_per_tok": 8,
    "num_hidden_layers": 61,
    "num_key_value_heads": 128,
    "num_nextn_predict_layers": 1,
    "q_lora_rank": 1536,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "quantization_config": {
        "activation_scheme": "dynamic",
        "fmt": "e4m3",
        "quant_method": "fp8",
        "weight_block_size": [128, 128],
    },
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "v_head_dim": 128,
    "vocab_size": 129280,
}
# meta-llama/Llama-4-Maverick-17B-128E-Instruct config.json (multimodal: the text model is in text_config).
MAVERICK = {
    "architectures": ["Llama4ForConditionalGeneration"],
    "model_type": "llama4",
    "text_config": {
        "model_type": "llama4_text",
        "hidden_size": 5120,
        "intermediate_size": 8192,
        "intermediate_size_mlp": 16384,
        "interleave_moe_layer_step": 2,
        "num_hidden_layers": 48,
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "num_local_experts": 128,
        "num_experts_per_tok": 1,
        "vocab_size": 202048,
        "max_position_embeddings": 1048576,
        "attention_chunk_size": 8192,
        "rope_theta": 500000.0,
        "torch_dtype": "bfloat16",
    },
    "tie_word_embeddings": False,
    "vision_config": {"hidden_size": 1408, "num_hidden_layers": 34},
}


def test_deepseek_v3_config_gives_the_published_totals(tmp_path: Path) -> None:
    m = vb.model_from_hf_config(write_config(tmp_path, "DeepSeek-V3", DEEPSEEK_V3))
    # DeepSeek-V3 model card / README: 671B total, 37B activated per token (MTP module's 14B not included).
    assert m.total_params == pytest.approx(671e9, rel=0.01)
    # The card's 37B is rounded: the count with both embedding tables is 37.55e9 (+1.5%), without the input
    # table (a lookup, not streamed at decode) 36.62e9 (-1.0%).
    assert m.active_params == pytest.approx(37e9, rel=0.016)
    assert m.active_params - 129280 * 7168 == pytest.approx(37e9, rel=0.011)
    assert (m.layers, m.moe_layers, m.experts, m.experts_per_token) == (61, 58, 256, 8)
    assert (m.kv_heads, m.head_dim, m.v_head_dim, m.kv_lora_rank, m.rope_head_dim) == (1, 192, 128, 512, 64)
    assert m.native_precision == "fp8"
    assert m.max_context_tokens == 163840
    cat = vb.MODELS["deepseek-v3"]
    assert (m.total_params, m.active_params) == (cat.total_params, cat.active_params)


def test_mla_kv_cache_is_the_latent_not_per_head_keys_and_values() -> None:
    m = vb.MODELS["deepseek-v3"]
    # per token per layer: kv_lora_rank 512 latent + 64 decoupled RoPE key elements (arXiv:2412.19437 sec 2.1.1)
    assert m.kv_elements_per_token() == 61 * (512 + 64) == 35136
    assert kv_bytes_per_token(m, "bf16") == 70272.0
    assert kv_bytes_per_token(m, "fp8") == 35136.0
    # what 128 heads x (K 192 + V 128) would cache, the form MLA avoids: 71x more
    assert 61 * 128 * (192 + 128) / m.kv_elements_per_token() == pytest.approx(71.11, rel=1e-3)
    # decode with absorbed weights: each head scores over 512 + 64 and sums over the 512-wide latent;
    # prefill decompresses keys (192) and values (128)
    assert m.attention_flops_per_pair("decode") == 2 * 61 * 128 * (2 * 512 + 64)
    assert m.attention_flops_per_pair("prefill") == 2 * 61 * 128 * (192 + 128)
    # grouped-query attention keeps the old form, 4 * layers * heads * head_dim, in both phases
    llama = vb.MODELS["llama-3.1-70b"]
    assert llama.attention_flops_per_pair("decode") == llama.attention_flops_per_pair("prefill") == 4 * 80 * 64 * 128


def test_mla_decode_step_terms_follow_the_closed_forms() -> None:
    m, hw, cal = vb.MODELS["deepseek-v3"], vb.get_hardware("h200"), vb.GPUCalibration()
    plan = GPUPlan(model=m, hardware=hw, precision=None, kv_precision="fp8", tp=8, pp=1, replicas=1, cal=cal)
    b, s = 16, 4000
    step = decode_step(plan, b, s, 0.0, 0.0)
    bw = hw.memory_bandwidth_bytes_per_s * cal.memory_efficiency
    # every chip reads the whole latent cache of every sequence (replicated 8x across tp 8)
    assert step.kv_cache_ms == pytest.approx(1e3 * b * s * 35136 * 8 / (8 * bw), rel=1e-12)
    flops = hw.fp8_flops_per_s * cal.low_precision_compute_efficiency  # type: ignore[operator]
    assert step.attention_ms == pytest.approx(1e3 * 2 * 61 * 128 * 1088 * b * s / (8 * flops), rel=1e-12)
    # prefill of P tokens: P^2 / 2 pairs at the decompressed cost
    p = 4096
    with_attn = prefill_ms(plan, p, 8192, 0, 0)
    gqa_like = m.model_copy(update={"kv_lora_rank": None, "rope_head_dim": None, "v_head_dim": None, "head_dim": 1})
    plan0 = GPUPlan(model=gqa_like, hardware=hw, precision=None, kv_precision="fp8", tp=8, pp=1, replicas=1, cal=cal)
    base = prefill_ms(plan0, p, 8192, 0, 0) - 1e3 * 0.5 * 4 * 61 * 128 * 1 * p * p / (8 * flops)
    assert with_attn - base == pytest.approx(1e3 * 0.5 * 2 * 61 * 128 * 320 * p * p / (8 * flops), rel=1e-9)


def test_mla_fields_are_checked() -> None:
    kw = {
        "id": "x",
        "name": "x",
        "total_params": 1e9,
        "active_params": 1e9,
        "layers": 2,
        "d_model": 64,
        "q_heads": 4,
        "head_dim": 16,
        "source": "test",
    }
    with pytest.raises(ValidationError, match="kv_heads must be 1"):
        vb.ModelArch.model_validate({**kw, "kv_heads": 4, "kv_lora_rank": 32, "rope_head_dim": 8})
    with pytest.raises(ValidationError, match="both kv_lora_rank and rope_head_dim"):
        vb.ModelArch.model_validate({**kw, "kv_heads": 1, "kv_lora_rank": 32})
    ok = vb.ModelArch.model_validate({**kw, "kv_heads": 1, "kv_lora_rank": 32, "rope_head_dim": 8})
    assert ok.kv_elements_per_token() == 2 * (32 + 8)


def test_mla_without_q_lora_rank_counts_a_full_query_projection() -> None:
    # DeepSeek-V2-Lite's layout: q_lora_rank null, so queries are d x H*(nope+rope)
    cfg = {**DEEPSEEK_V3, "q_lora_rank": None}
    full = model_from_hf_dict(cfg, ident="x", name="x", source="t")
    lowrank = vb.MODELS["deepseek-v3"]
    per_layer = 7168 * 128 * 192 - (7168 * 1536 + 1536 * 128 * 192)
    assert full.total_params - lowrank.total_params == 61 * per_layer


def test_maverick_config_interleaves_moe_layers(tmp_path: Path) -> None:
    m = vb.model_from_hf_config(write_config(tmp_path, "Llama-4-Maverick-17B-128E-Instruct", MAVERICK))
    # Meta's model card: 400B total, 17B active (the total also holds the ~0.9B vision encoder)
    assert m.total_params == pytest.approx(400e9, rel=0.02)
    assert m.active_params == pytest.approx(17e9, rel=0.02)
    assert (m.moe_layers, m.experts, m.experts_per_token) == (24, 128, 1)
    assert m.max_context_tokens == 1048576
    # every layer MoE (Scout's step 1) would hold twice the routed experts
    every = vb.model_from_hf_config(
        write_config(
            tmp_path, "every", {**MAVERICK, "text_config": {**MAVERICK["text_config"], "interleave_moe_layer_step": 1}}
        )
    )  # type: ignore[dict-item]
    assert every.moe_layers == 48
    assert every.routed_params == pytest.approx(2 * m.routed_params, rel=1e-12)
    assert vb.MODELS["llama-4-maverick"].total_params == m.total_params


@pytest.mark.parametrize(
    ("model", "total", "active", "tol", "active_without_embeddings"),
    [
        # DeepSeek-V3 README / model card (671B / 37B): tolerance 1% on the total, 1.6% on the rounded active count
        ("deepseek-v3", 671e9, 37e9, 0.016, False),
        ("deepseek-r1", 671e9, 37e9, 0.016, False),
        # Meta's Llama 4 model card: Scout 109B / 17B (16 experts), Maverick 400B / 17B (128 experts); totals include
        # the vision encoder, which the text model does not serve: 2%
        ("llama-4-scout", 109e9, 17e9, 0.02, False),
        ("llama-4-maverick", 400e9, 17e9, 0.02, False),
        # Z.ai GLM-4.5 release: 355B / 32B and GLM-4.5-Air 106B / 12B; active counted without embedding tables,
        # the MTP layer (in the 355B) not counted: 2%
        ("glm-4.5", 355e9, 32e9, 0.02, True),
        ("glm-4.6", 355e9, 32e9, 0.02, True),
        ("glm-4.5-air", 106e9, 12e9, 0.02, True),
        # Meta's Llama 3 model card: 8B (8.03e9 in the Llama-3.1 card, same layout) and 70B; 1%
        ("llama-3-8b", 8.03e9, 8.03e9, 0.01, False),
        ("llama-3-70b", 70.6e9, 70.6e9, 0.01, False),
    ],
)
def test_new_entries_match_their_model_cards(
    model: str, total: float, active: float, tol: float, active_without_embeddings: bool
) -> None:
    m = vb.MODELS[model]
    assert m.total_params == pytest.approx(total, rel=tol)
    emb = 2 * 151552 * m.d_model if active_without_embeddings else 0
    assert m.active_params - emb == pytest.approx(active, rel=tol)
    assert "config.json" in m.source
    assert "read 2026-12-01" in m.source


@pytest.mark.parametrize(
    ("model", "elements"),
    [
        ("deepseek-v3", 61 * (512 + 64)),  # MLA: layers x (latent + RoPE key)
        ("deepseek-r1", 61 * (512 + 64)),
        ("llama-4-scout", 2 * 48 * 8 * 128),  # 2 x layers x KV heads x head_dim
        ("llama-4-maverick", 2 * 48 * 8 * 128),
        ("glm-4.5", 2 * 92 * 8 * 128),
        ("glm-4.6", 2 * 92 * 8 * 128),
        ("glm-4.5-air", 2 * 46 * 8 * 128),
        ("llama-3-8b", 2 * 32 * 8 * 128),
        ("llama-3-70b", 2 * 80 * 8 * 128),
    ],
)
def test_kv_bytes_per_token_closed_form(model: str, elements: int) -> None:
    m = vb.MODELS[model]
    assert kv_bytes_per_token(m, "bf16") == 2.0 * elements
    assert kv_bytes_per_token(m, "fp8") == 1.0 * elements


def test_llama3_is_not_llama31() -> None:
    l3, l31 = vb.get_model("llama-3-8b"), vb.get_model("llama-3.1-8b")
    assert l3 is not l31
    assert (l3.max_context_tokens, l31.max_context_tokens) == (8192, 131072)
    assert l3.total_params == pytest.approx(l31.total_params, rel=0.001)
    with pytest.raises(vb.ModelError, match="8,192"):
        vb.estimate_inference("llama-3-70b", "h100-sxm", workload=vb.Workload(prompt_tokens=8100, output_tokens=200))


def test_cli_lists_and_runs_the_new_models() -> None:
    r = runner.invoke(app, ["models", "--format", "json"])
    assert r.exit_code == 0, r.output
    ids = {row["id"] for row in json.loads(r.stdout)}
    assert {
        "deepseek-v3",
        "deepseek-r1",
        "llama-4-scout",
        "llama-4-maverick",
        "glm-4.5",
        "glm-4.6",
        "glm-4.5-air",
        "llama-3-8b",
        "llama-3-70b",
    } <= ids
    r = runner.invoke(app, ["infer", "-m", "deepseek-v3", "--hardware", "h200", "--chips", "8", "-f", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert (doc["chips"], doc["tensor_parallel"], doc["precision"], doc["kv_precision"]) == (8, 8, "fp8", "fp8")
    # fp8 weights: one byte per parameter
    assert doc["memory"]["weights_bytes"] == pytest.approx(vb.MODELS["deepseek-v3"].total_params)
    # 1 user x (1000 prompt + 100 = half the output) resident tokens x 35,136 B x 8 tensor-parallel copies
    assert doc["memory"]["kv_cache_bytes"] == pytest.approx(1100 * 35136 * 8)
    assert any("latent KV cache" in n for n in doc["notes"])
    r = runner.invoke(app, ["infer", "-m", "deepseek-v3", "--hardware", "h100-sxm", "--chips", "8"])
    assert r.exit_code == 2
    assert "does not fit" in r.output
    for model, hw in (("llama-4-scout", "h100-sxm"), ("llama-4-maverick", "h200"), ("glm-4.5-air", "h100-sxm")):
        r = runner.invoke(app, ["infer", "-m", model, "--hardware", hw, "-f", "json"])
        assert r.exit_code == 0, (model, r.output)


# --- local attention (sliding window / chunked) in the KV cache ------------------------------------------------


def test_gemma3_keeps_a_1024_token_window_on_five_of_six_layers() -> None:
    m = vb.MODELS["gemma-3-27b"]
    # google/gemma-3-27b-it text_config: 62 layers, sliding_window 1024, sliding_window_pattern 6 -> layers 5, 11,
    # ..., 59 global (10), 52 local
    assert (m.sliding_window, m.sliding_layers) == (1024, 52)
    full = 2 * 62 * 16 * 128
    assert m.kv_elements_per_token() == full  # upper bound, every layer whole
    assert m.kv_elements_per_token(1000) == full  # within the window nothing is dropped
    # at 32,768 tokens: (10 global + 52 x 1024/32768) / 62 of the full cache
    assert m.kv_elements_per_token(32768) == pytest.approx(full * (10 + 52 * 1024 / 32768) / 62, rel=1e-12)
    assert m.kv_elements_per_token(32768) == pytest.approx(47616, rel=1e-12)
    # a causal prompt of 4096 tokens: a local layer keeps 2 W/P - (W/P)^2 = 0.4375 of the P^2/2 pairs
    assert m.window_share(4096, causal_prompt=True) == pytest.approx((10 + 52 * 0.4375) / 62, rel=1e-12)


def test_local_layers_shrink_the_decode_step_and_the_memory_need() -> None:
    m, hw, cal = vb.MODELS["gemma-3-27b"], vb.get_hardware("h100-sxm"), vb.GPUCalibration()
    plan = GPUPlan(model=m, hardware=hw, precision=None, kv_precision="bf16", tp=1, pp=1, replicas=1, cal=cal)
    b, s = 8, 16384
    step = decode_step(plan, b, s, 0.0, 0.0)
    share = (10 + 52 * 1024 / s) / 62
    bw = hw.memory_bandwidth_bytes_per_s * cal.memory_efficiency
    assert step.kv_cache_ms == pytest.approx(1e3 * b * s * 2 * 253952 * share / bw, rel=1e-12)
    flops = hw.bf16_flops_per_s * cal.compute_efficiency
    assert step.attention_ms == pytest.approx(1e3 * 4 * 62 * 32 * 128 * b * s * share / flops, rel=1e-12)
    r = vb.estimate_inference(
        "gemma-3-27b",
        "h100-sxm",
        vb.Deployment(chips=1, concurrency=4),
        vb.Workload(prompt_tokens=20000, output_tokens=200),
    )
    ctx = 20000 + 100  # prompt + half the output resident
    assert r.memory.kv_cache_bytes == pytest.approx(4 * ctx * 2 * 253952 * (10 + 52 * 1024 / ctx) / 62, rel=1e-12)


@pytest.mark.parametrize(
    ("extra", "window", "local"),
    [
        # Gemma 3: every 6th layer global
        ({"sliding_window": 1024, "sliding_window_pattern": 6, "model_type": "gemma3_text"}, 1024, 10),
        # gpt-oss style layer_types list
        ({"sliding_window": 128, "layer_types": ["sliding_attention", "full_attention"] * 6}, 128, 6),
        # Mistral-7B-v0.1: one window on every layer
        ({"sliding_window": 4096, "model_type": "mistral"}, 4096, 12),
        # Qwen configs carry a window they do not use
        ({"sliding_window": 131072, "use_sliding_window": False}, None, 0),
        # Llama-4 chunked attention: all but every 4th layer (NoPE, global)
        ({"attention_chunk_size": 8192, "model_type": "llama4_text"}, 8192, 9),
        ({"attention_chunk_size": 8192, "no_rope_layers": [1, 0] * 6}, 8192, 6),
    ],
)
def test_model_config_reads_local_attention(extra: dict[str, object], window: int | None, local: int) -> None:
    cfg = {
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 12,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 1000,
        **extra,
    }
    m = model_from_hf_dict(cfg, ident="x", name="x", source="t")
    assert (m.sliding_window, m.sliding_layers) == (window, local)


def test_local_attention_fields_are_checked() -> None:
    kw = {
        "id": "x",
        "name": "x",
        "total_params": 1e9,
        "active_params": 1e9,
        "layers": 4,
        "d_model": 64,
        "q_heads": 4,
        "kv_heads": 4,
        "head_dim": 16,
        "source": "test",
    }
    with pytest.raises(ValidationError, match=r"sliding_layers \(5\) > layers \(4\)"):
        vb.ModelArch.model_validate({**kw, "sliding_window": 8, "sliding_layers": 5})
    with pytest.raises(ValidationError, match="needs a sliding_window"):
        vb.ModelArch.model_validate({**kw, "sliding_layers": 2})


def test_models_listing_names_the_attention_kind() -> None:
    rows = {r["id"]: r for r in json.loads(runner.invoke(app, ["models", "--format", "json"]).stdout)}
    assert (rows["deepseek-v3"]["attention"], rows["deepseek-v3"]["kv_elements_per_token"]) == ("mla", 35136)
    assert (rows["gemma-3-27b"]["sliding_window"], rows["gemma-3-27b"]["sliding_layers"]) == (1024, 52)
    assert rows["llama-3-70b"]["attention"] == "gqa"
    table = runner.invoke(app, ["models"], terminal_width=200).stdout
    line = next(x for x in table.splitlines() if "deepseek-v3" in x)
    for cell in ("MLA", "671.0", "37.6"):
        assert cell in line
