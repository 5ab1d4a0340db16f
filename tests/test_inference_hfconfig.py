"""``--model-config`` (a Hugging Face config.json) and ``--speculative A,G,C``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hfconfig_files import write_config
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.cli import app
from voicebudget.inference._catalog import model_from_hf_dict

runner = CliRunner()

# The published config.json fields (meta-llama/Llama-3.1-8B; mistralai/Mixtral-8x7B-v0.1).
LLAMA_31_8B = {
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "tie_word_embeddings": False,
    "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16",
    "model_type": "llama",
}
MIXTRAL = {
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 32000,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "max_position_embeddings": 32768,
    "torch_dtype": "bfloat16",
    "model_type": "mixtral",
}


def test_llama_config_reproduces_the_catalog(tmp_path: Path) -> None:
    m = vb.model_from_hf_config(write_config(tmp_path, "Llama-3.1-8B", LLAMA_31_8B))
    cat = vb.MODELS["llama-3.1-8b"]
    assert m.total_params == pytest.approx(cat.total_params, rel=0.005)  # 8.03e9 published
    assert (m.layers, m.kv_heads, m.head_dim, m.max_context_tokens) == (32, 8, 128, 131072)
    wl = vb.Workload(prompt_tokens=1000, output_tokens=200)
    assert vb.estimate_inference(m, "h100-sxm", workload=wl).tpot_ms == pytest.approx(
        vb.estimate_inference(cat, "h100-sxm", workload=wl).tpot_ms, rel=0.005
    )


def test_mixtral_config_counts_experts(tmp_path: Path) -> None:
    m = vb.model_from_hf_config(write_config(tmp_path, "Mixtral-8x7B", MIXTRAL))
    # Mistral AI's release post: 46.7B total, 12.9B active per token.
    assert m.total_params == pytest.approx(46.7e9, rel=0.01)
    assert m.active_params == pytest.approx(12.9e9, rel=0.01)
    assert (m.experts, m.experts_per_token) == (8, 2)


def test_bad_configs_name_the_file_and_field(tmp_path: Path) -> None:
    broken = {k: v for k, v in LLAMA_31_8B.items() if k != "hidden_size"}
    with pytest.raises(vb.ScenarioError, match=r"config.json: hidden_size: missing"):
        vb.model_from_hf_config(write_config(tmp_path, "a", broken))
    # multi-head latent attention needs its other dimensions (qk_rope_head_dim, qk_nope_head_dim, v_head_dim)
    with pytest.raises(vb.ScenarioError, match=r"config.json: qk_rope_head_dim: missing"):
        vb.model_from_hf_config(write_config(tmp_path, "b", {**LLAMA_31_8B, "kv_lora_rank": 512}))
    p = tmp_path / "c.json"
    p.write_text("{not json", encoding="utf-8")
    with pytest.raises(vb.ScenarioError, match=r"c.json: line 1: cannot parse JSON"):
        vb.model_from_hf_config(p)


def test_cli_model_config_and_speculative(tmp_path: Path) -> None:
    p = write_config(tmp_path, "Llama-3.1-8B", LLAMA_31_8B)
    base = ["infer", "--model-config", str(p), "-H", "h100-sxm", "-f", "json"]
    plain = json.loads(runner.invoke(app, base).stdout)
    res = runner.invoke(app, [*base, "--speculative", "0.7,4,0.05"])
    assert res.exit_code == 0, res.output
    spec = json.loads(res.stdout)
    # Leviathan et al. 2023: (1 - a^(g+1)) / ((1 - a)(g c + 1)) = (1 - 0.7^5) / (0.3 * 1.2) = 2.311
    speedup = (1 - 0.7**5) / (0.3 * 1.2)
    assert plain["tpot_ms"] / spec["tpot_ms"] == pytest.approx(speedup, rel=1e-4)  # verification ~ one step
    assert spec["speculative_speedup"] == pytest.approx(plain["tpot_ms"] / spec["tpot_ms"])
    assert spec["model"] == "llama-3.1-8b"
    for bad, msg in (
        ("0.7,4", "give acceptance,draft_tokens,draft_cost"),
        ("1.2,4,0.1", "acceptance rate must be"),
        ("0.7,0,0.1", "draft tokens must be >= 1"),
        ("a,b,c", "are numbers"),
    ):
        r = runner.invoke(app, [*base, "--speculative", bad])
        assert r.exit_code == 2
        assert msg in r.output
    r = runner.invoke(app, ["infer", "-H", "h100-sxm"])
    assert r.exit_code == 2
    assert "--model-config" in r.output
    r = runner.invoke(app, ["infer", "--model-config", str(tmp_path / "none.json"), "-H", "h100-sxm"])
    assert r.exit_code == 2
    assert "file not found" in r.output


@pytest.mark.parametrize(
    ("model", "total", "active"),
    [
        # Totals from each model card (Qwen2.5/Qwen3 cards, Meta's Llama-3.2 card, Mistral-7B-v0.3's card,
        # Gemma 3 report).
        ("qwen2.5-7b", 7.61e9, None),
        ("qwen2.5-72b", 72.7e9, None),
        ("qwen3-8b", 8.2e9, None),
        ("qwen3-32b", 32.8e9, None),
        ("qwen3-30b-a3b", 30.5e9, 3.3e9),
        ("llama-3.2-1b", 1.24e9, None),
        ("llama-3.2-3b", 3.21e9, None),
        ("mistral-7b", 7.25e9, None),
        ("gemma-3-27b", 27e9, None),
    ],
)
def test_catalog_from_configs_matches_model_cards(model: str, total: float, active: float | None) -> None:
    m = vb.MODELS[model]
    assert m.total_params == pytest.approx(total, rel=0.015)
    assert m.active_params == pytest.approx(active or total, rel=0.03)
    assert "config.json" in m.source


def test_speculative_with_request_rate_is_refused_not_ignored() -> None:
    r = runner.invoke(
        app, ["infer", "-m", "llama-3.1-8b", "-H", "h100-sxm", "--request-rate", "2", "--speculative", "0.7,4,0.05"]
    )
    assert r.exit_code == 2
    assert "does not include speculative decoding yet" in r.output


def test_gpt_oss_20b_counts_from_its_config_and_runs() -> None:
    # openai/gpt-oss-20b config.json fields (source on the entry); OpenAI's model card: 20.91B total, 3.61B active.
    cfg = {
        "hidden_size": 2880,
        "intermediate_size": 2880,
        "num_hidden_layers": 24,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "num_local_experts": 32,
        "num_experts_per_tok": 4,
        "vocab_size": 201088,
        "tie_word_embeddings": False,
        "max_position_embeddings": 131072,
        "quantization_config": {"quant_method": "mxfp4"},
    }
    counted = model_from_hf_dict(cfg, ident="x", name="x", source="test")
    m = vb.MODELS["gpt-oss-20b"]
    assert counted.total_params == pytest.approx(m.total_params, rel=0.001)
    # the card's active count leaves out the input embedding table (V x d), which decode does not stream
    assert counted.active_params - 201088 * 2880 == pytest.approx(m.active_params, rel=0.002)
    assert (m.native_expert_precision, counted.native_expert_precision) == ("fp4", "fp4")
    r = runner.invoke(app, ["infer", "-m", "gpt-oss-20b", "-H", "l4", "-f", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    # MXFP4 experts (0.5625 B/param) + bf16 rest: about 13 GB of weights, so one 24 GB L4 holds it.
    assert doc["chips"] == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # each once reached ModelArch's own validation and exited 3 ("internal error"), or ran on a nonsense model
        (
            {"num_local_experts": 8, "num_experts_per_tok": 16},
            "num_experts_per_tok: must be at most the number of routed experts (8), got 16",
        ),
        ({"max_position_embeddings": 0}, "max_position_embeddings: must be a positive integer, got 0"),
        ({"max_position_embeddings": -1}, "max_position_embeddings: must be a positive integer, got -1"),
        (
            {"num_key_value_heads": 5},
            "num_key_value_heads: must divide num_attention_heads (32) (grouped-query attention), got 5",
        ),
        ({"num_key_value_heads": 64}, "num_key_value_heads: must divide num_attention_heads (32)"),
        (
            {"layer_types": ["sliding_attention"] * 3, "sliding_window": 4096},
            "layer_types: lists 3 layers, but num_hidden_layers is 32",
        ),
    ],
)
def test_inconsistent_configs_exit_2_naming_the_field(tmp_path: Path, change: dict[str, object], message: str) -> None:
    p = write_config(tmp_path, "m", {**LLAMA_31_8B, **change})
    r = runner.invoke(app, ["infer", "--model-config", str(p), "-H", "h100-sxm"])
    assert r.exit_code == 2, r.output
    assert message in " ".join(r.output.split())
    assert "internal error" not in r.output


def test_null_head_dim_means_hidden_over_heads(tmp_path: Path) -> None:
    # some releases write "head_dim": null; it is the default d / H, as when the key is absent
    m = vb.model_from_hf_config(write_config(tmp_path, "n", {**LLAMA_31_8B, "head_dim": None}))
    assert m.head_dim == 4096 // 32
    assert m.total_params == pytest.approx(8.03e9, rel=0.005)


def test_empty_software_generation_exits_2() -> None:
    r = runner.invoke(app, ["infer", "-m", "llama-3.1-8b", "-H", "wse-3", "--software", ""])
    assert r.exit_code == 2, r.output
    assert "--software: give a generation id" in r.output


def test_request_rate_example_of_docs_prints_its_numbers() -> None:
    # docs/inference.md "Arrival rate (open loop)" shows this command's table; it once showed stale figures
    # (89.8 / 160.3 / 234.8 ms, capacity 9.6) that the tool no longer printed
    r = runner.invoke(
        app,
        [
            "infer",
            "-m",
            "llama-3.3-70b",
            "-H",
            "h100-sxm",
            "--chips",
            "2",
            "--precision",
            "fp8",
            "--prompt-tokens",
            "1000",
            "--output-tokens",
            "300",
            "--request-rate",
            "3",
        ],
    )
    assert r.exit_code == 0, r.output
    doc = (Path(__file__).parents[1] / "docs" / "inference.md").read_text(encoding="utf-8")
    for label, value in (
        ("TTFT p50 / p90 / p99", "95.2 / 148.5 / 209.8 ms"),
        ("TPOT (ITL)", "21.96 ms"),
        ("mean concurrency (Little's law)", "20.0"),
        ("capacity", "9.3 requests/s (32% used)"),
    ):
        line = next(x for x in r.output.splitlines() if x.startswith(f"│ {label} "))
        assert value in line, line
        assert line in doc, f"docs/inference.md does not show {line!r}"


@pytest.mark.parametrize(
    ("key", "value"), [("n_shared_experts", "x"), ("n_shared_experts", -2), ("shared_expert_intermediate_size", -1408)]
)
def test_shared_expert_fields_must_be_counts(tmp_path: Path, key: str, value: object) -> None:
    # 'x' exited 3 (int('x')); -2 silently took two shared experts' weights off the total
    p = write_config(tmp_path, "moe", {**MIXTRAL, key: value})
    r = runner.invoke(app, ["infer", "--model-config", str(p), "-H", "h200"])
    assert r.exit_code == 2, r.output
    assert f"{key}: must be an integer >= 0, got {value!r}" in " ".join(r.output.split())


@pytest.mark.parametrize("hardware", ["h100-sxm", "b200", "wse-3"])
@pytest.mark.parametrize("experts", [2, 8])
def test_every_expert_routed_reads_as_dense(tmp_path: Path, experts: int, hardware: str) -> None:
    # num_experts_per_tok == num_local_experts divided by E - k = 0 (exit 3): every expert runs on every
    # token, so the weights read per step are all of them, as for a dense model with the same totals
    p = write_config(tmp_path, "moe", {**MIXTRAL, "num_local_experts": experts, "num_experts_per_tok": experts})
    m = vb.model_from_hf_config(p)
    assert (m.is_moe, m.expert_params, m.total_params) == (False, 0.0, m.active_params)
    r = runner.invoke(app, ["infer", "--model-config", str(p), "-H", hardware, "-f", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["tpot_ms"] > 0


@pytest.mark.filterwarnings("always::UserWarning")
@pytest.mark.parametrize(
    ("change", "what"),
    [
        ({"quantization_config": {"quant_method": "awq", "bits": 4}}, "quantization_config.quant_method 'awq'"),
        ({"torch_dtype": "int3"}, "torch_dtype 'int3'"),
    ],
)
def test_an_unmodelled_weight_format_warns_that_bf16_is_assumed(
    tmp_path: Path, change: dict[str, object], what: str
) -> None:
    # an AWQ 4-bit release was costed at 2 bytes a weight without a word (16 GB for an 8B model, not ~5.5)
    p = write_config(tmp_path, "q", {**LLAMA_31_8B, **change})
    r = runner.invoke(app, ["infer", "--model-config", str(p), "-H", "h100-sxm", "-f", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["precision"] == "bf16"
    assert f"warning: {p}: {what} is not modelled: the weights are taken as bf16" in " ".join(r.stderr.split())
    plain = runner.invoke(
        app, ["infer", "--model-config", str(write_config(tmp_path, "b", LLAMA_31_8B)), "-H", "h100-sxm"]
    )
    assert "warning" not in plain.output
