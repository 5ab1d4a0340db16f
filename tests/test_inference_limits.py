"""Inference refusals and honesty: context limits, tensor-parallel splits, weight-only low precision,
aliases in the output, catalog tables that fold rather than cut (review findings on issue 3)."""

from __future__ import annotations

import json
import tomllib

import pytest
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.cli import app

runner = CliRunner()

LLAMA70 = ["infer", "--model", "llama-3.3-70b", "--hardware", "h100-sxm"]


def _refused(args: list[str]) -> str:
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    return " ".join(res.output.split())  # undo the console's line wrapping


def _json(args: list[str]) -> dict:  # type: ignore[type-arg]
    res = runner.invoke(app, [*args, "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)  # type: ignore[no-any-return]


# ---------------------------------------------------------------- 1. maximum context


def test_catalog_context_lengths() -> None:
    # config.json max_position_embeddings of each release (Qwen3: native, without YaRN)
    want = {
        "llama-3.1-8b": 131072,
        "llama-3.1-70b": 131072,
        "llama-3.1-405b": 131072,
        "llama-2-7b": 4096,
        "llama-2-70b": 4096,
        "glm-4.7": 202752,
        "gpt-oss-120b": 131072,
        "gpt-oss-20b": 131072,
        "qwen3-235b-a22b": 32768,
        "mixtral-8x7b": 32768,
        "qwen2.5-7b": 32768,
        "qwen2.5-72b": 32768,
        "qwen3-8b": 40960,
        "qwen3-32b": 40960,
        "qwen3-30b-a3b": 40960,
        "llama-3.2-1b": 131072,
        "llama-3.2-3b": 131072,
        "mistral-7b": 32768,
        "gemma-3-27b": 131072,
        "deepseek-v3": 163840,
        "deepseek-r1": 163840,
        "llama-4-scout": 10485760,
        "llama-4-maverick": 1048576,
        "glm-4.5": 131072,
        "glm-4.6": 202752,
        "glm-4.5-air": 131072,
        "llama-3-8b": 8192,
        "llama-3-70b": 8192,
    }
    assert {k: m.max_context_tokens for k, m in vb.MODELS.items()} == want
    for m in vb.MODELS.values():
        assert "max_position_embeddings" in m.source or "native 32,768" in m.source


def test_cli_refuses_a_prompt_beyond_the_context() -> None:
    out = _refused([*LLAMA70, "--prompt-tokens", "10000000"])
    assert "10,000,200 tokens exceeds Llama-3.1-70B's maximum context of 131,072 tokens" in out
    assert "the prompt can be at most 130,872 tokens" in out


def test_context_limit_is_prompt_plus_output() -> None:
    ok = vb.estimate_inference("llama-2-7b", "a100-80gb", workload=vb.Workload(prompt_tokens=3896, output_tokens=200))
    assert ok.prompt_tokens + ok.output_tokens == 4096
    with pytest.raises(vb.ModelError, match=r"3,897 \+ output 200 = 4,097 tokens exceeds .*4,096"):
        vb.estimate_inference("llama-2-7b", "a100-80gb", workload=vb.Workload(prompt_tokens=3897, output_tokens=200))
    with pytest.raises(vb.ModelError, match="the output alone exceeds it"):
        vb.estimate_inference("llama-2-70b", "groq-lpu", workload=vb.Workload(prompt_tokens=1, output_tokens=4096))


def _tiny(**kw: object) -> vb.ModelArch:
    return vb.ModelArch.model_validate(
        {
            "id": "tiny",
            "name": "Tiny",
            "total_params": 1e8,
            "active_params": 1e8,
            "layers": 2,
            "d_model": 256,
            "q_heads": 4,
            "kv_heads": 1,
            "head_dim": 64,
            "source": "test",
            **kw,
        }
    )


def test_inline_model_context_is_optional() -> None:
    long = vb.Workload(prompt_tokens=200_000, output_tokens=10)
    assert vb.estimate_inference(_tiny(), "h200", workload=long).prompt_tokens == 200_000  # no limit: no check
    with pytest.raises(vb.ModelError, match="Tiny's maximum context of 1,000 tokens"):
        vb.estimate_inference(_tiny(max_context_tokens=1000), "h200", workload=long)


SCENARIO = """
name = "ctx"
[pipeline]
kind = "sequence"
[pipeline.stages.llm]
kind = "gpu"
model = "llama-2-70b"
hardware = "h200"
prompt_tokens = 5000
"""


def test_scenario_context_error_names_the_field() -> None:
    with pytest.raises(vb.ScenarioError, match=r"ctx.toml: pipeline.stages.llm.*maximum context of 4,096"):
        vb.parse_scenario(tomllib.loads(SCENARIO), origin="ctx.toml")
    # a prompt range whose mean fits but whose longest prompt does not is refused when loading, not mid-run
    ranged = SCENARIO.replace("prompt_tokens = 5000", "prompt_tokens = { low = 1000, high = 4000 }")
    with pytest.raises(vb.ScenarioError, match=r"prompt 4,000 \+ output 200 = 4,200 tokens exceeds"):
        vb.parse_scenario(tomllib.loads(ranged), origin="ctx.toml")
    fits = SCENARIO.replace("prompt_tokens = 5000", "prompt_tokens = { low = 1000, high = 3896 }")
    assert vb.parse_scenario(tomllib.loads(fits), origin="ctx.toml").name == "ctx"


# ---------------------------------------------------------------- 2. tensor parallelism


def test_tensor_parallel_options_follow_the_heads() -> None:
    assert vb.MODELS["llama-3.1-70b"].tensor_parallel_options() == [1, 2, 4, 8, 16, 32, 64]
    # 96 query / 8 KV heads: 3, 6, 12 divide the query heads but neither divide nor are multiples of 8
    assert vb.MODELS["glm-4.7"].tensor_parallel_options() == [1, 2, 4, 8, 16, 24, 32, 48, 96]
    assert vb.MODELS["qwen3-235b-a22b"].tensor_parallel_options(8) == [1, 2, 4, 8]


def test_cli_refuses_tp_that_does_not_split_the_heads() -> None:
    out = _refused([*LLAMA70, "--tp", "3", "--chips", "3"])
    assert "tp must divide 64 query heads" in out
    assert "1, 2, 4, 8, 16, 32, 64" in out


def test_chips_without_tp_pick_a_valid_split() -> None:
    doc = _json([*LLAMA70, "--chips", "3"])
    assert (doc["tensor_parallel"], doc["pipeline_parallel"], doc["replicas"], doc["chips"]) == (1, 3, 1, 3)
    assert any("tp 1: the largest degree that divides 3 chips" in n for n in doc["notes"])
    six = _json([*LLAMA70, "--chips", "6"])  # tp 2 divides 6 and 64; 141.2 GB + KV fit 2 x 0.9 x 80 GB: 3 replicas
    assert (six["tensor_parallel"], six["pipeline_parallel"], six["replicas"]) == (2, 1, 3)


def test_kv_heads_replicated_beyond_their_count() -> None:
    # Qwen3-235B: 4 KV heads; at tp 8 each is held twice. fp8 KV: 2 * 94 layers * 4 heads * 128 * 1 B per token.
    wl = vb.Workload(prompt_tokens=1000, output_tokens=200)
    r = vb.estimate_inference("qwen3-235b-a22b", "h200", vb.Deployment(chips=8, tensor_parallel=8, precision="fp8"), wl)
    assert r.memory.kv_cache_bytes == pytest.approx(1100 * 2 * 94 * 4 * 128 * 1.0 * 2)  # resident: 1000 + 200 / 2
    assert any("each KV head replicated on 2 chips" in n for n in r.notes)
    r4 = vb.estimate_inference(
        "qwen3-235b-a22b", "h200", vb.Deployment(chips=8, tensor_parallel=4, precision="fp8"), wl
    )
    assert r4.replicas == 2
    assert r4.memory.kv_cache_bytes == pytest.approx(1100 * 2 * 94 * 4 * 128 * 1.0)  # per replica, one copy
    assert not any("replicated" in n for n in r4.notes)


def test_tp_refused_on_sram_chips() -> None:
    out = _refused(["infer", "--model", "llama-3.1-8b", "--hardware", "wse-3", "--tp", "2"])
    assert "tensor_parallel 2 does not apply to Cerebras WSE-3" in out
    assert _json(["infer", "--model", "llama-3.1-8b", "--hardware", "wse-3", "--tp", "1"])["tensor_parallel"] == 1


def test_fewest_chips_never_pick_an_invalid_tp() -> None:
    for hw in ("h100-sxm", "gb200", "mi300x"):
        for mid, m in vb.MODELS.items():
            r = vb.estimate_inference(mid, hw)
            assert r.tensor_parallel in m.tensor_parallel_options(), (mid, hw)


# ---------------------------------------------------------------- 3. weight-only low precision


def test_fp8_on_a100_is_weight_only_and_says_so() -> None:
    args = ["infer", "--model", "llama-3.3-70b", "--hardware", "a100-80gb", "--chips", "2"]
    fp8 = _json([*args, "--precision", "fp8"])
    bf16 = _json([*args, "--precision", "bf16"])
    assert any("weight-only fp8" in n and "GEMMs at the bf16 rate" in n for n in fp8["notes"])
    assert not any("weight-only" in n for n in bf16["notes"])
    # weights read at 1 byte: the memory-bound decode step speeds up...
    assert fp8["memory"]["weights_bytes"] == pytest.approx(bf16["memory"]["weights_bytes"] / 2)
    assert fp8["step"]["weights_ms"] == pytest.approx(bf16["step"]["weights_ms"] / 2)
    assert fp8["tpot_ms"] < 0.6 * bf16["tpot_ms"]
    # ...the compute stays at the bf16 rate (no fp8 tensor cores on Ampere)
    assert fp8["step"]["compute_ms"] == pytest.approx(bf16["step"]["compute_ms"])
    table = runner.invoke(app, [*args, "--precision", "fp8"], env={"COLUMNS": "200"})
    assert "weight-only fp8" in table.stdout


def test_fp8_on_h100_has_no_weight_only_note() -> None:
    doc = _json([*LLAMA70, "--precision", "fp8"])
    assert not any("weight-only" in n for n in doc["notes"])
    fp4 = _json([*LLAMA70, "--precision", "fp4"])  # H100: no fp4 tensor cores, fp8 ones
    assert any("weight-only fp4" in n and "GEMMs at the fp8 rate" in n for n in fp4["notes"])


# ---------------------------------------------------------------- 4. aliases in the output


def test_alias_explained_in_title_and_json() -> None:
    res = runner.invoke(app, LLAMA70, env={"COLUMNS": "200"})
    assert res.exit_code == 0
    assert "llama-3.3-70b (same architecture as llama-3.1-70b) on 2 x h100-sxm (bf16)" in res.stdout
    doc = _json(LLAMA70)
    assert (doc["model"], doc["model_alias"]) == ("llama-3.1-70b", "llama-3.3-70b")
    plain = runner.invoke(app, ["infer", "--model", "llama-3.1-70b", "--hardware", "h100-sxm"], env={"COLUMNS": "200"})
    assert "llama-3.1-70b on 2 x h100-sxm (bf16)" in plain.stdout
    assert "same architecture" not in plain.stdout
    assert _json(["infer", "--model", "llama-3.1-70b", "--hardware", "h100-sxm"])["model_alias"] is None


def _column_cells(table: str, row_id: str) -> str:
    """The aliases cell of ``row_id``'s row, its folded lines joined (the table has no column rules:
    the cell starts where the header's ``aliases`` does)."""
    lines = table.splitlines()
    at = next(ln for ln in lines if ln.split()[:1] == ["id"] and "aliases" in ln).index("aliases")
    start = next(i for i, ln in enumerate(lines) if ln.split()[:1] == [row_id])
    parts = [lines[start][at:].strip()]
    for ln in lines[start + 1 :]:
        if ln[:1].strip() or not ln.strip():  # the next row, or the end of the table
            break
        parts.append(ln[at:].strip())
    return "".join(parts)


@pytest.mark.parametrize("columns", ["80", "200"])
def test_models_table_folds_aliases(columns: str) -> None:
    res = runner.invoke(app, ["models"], env={"COLUMNS": columns})
    assert res.exit_code == 0
    assert _column_cells(res.stdout, "llama-3.1-70b") == "llama-3.3-70b"
    assert _column_cells(res.stdout, "llama-2-7b") == "llama-2-7b-hf"
    assert "…" not in res.stdout
    models = json.loads(runner.invoke(app, ["models", "--format", "json"]).stdout)
    assert next(r for r in models if r["id"] == "llama-2-70b")["max_context_tokens"] == 4096


def test_infinite_chip_price_is_refused() -> None:
    from typer.testing import CliRunner

    from voicebudget.cli import app

    result = CliRunner().invoke(
        app, ["infer", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--price-per-chip-hour", "inf"]
    )
    assert result.exit_code == 2
    assert "--price-per-chip-hour: must be a finite number" in result.stderr


# ---------------------------------------------------------------- review round 3 (issue 21/23 findings)


@pytest.mark.parametrize(
    ("args", "layout"),
    [
        # --replicas / --pp with --chips and without --tp: tp fills what they leave (was: tp 2 or 8 chosen from the
        # chips alone, then "chips (8) must be a multiple of tensor_parallel x replicas (64)")
        (["--chips", "8", "--replicas", "8"], (1, 1, 8)),
        (["--chips", "8", "--replicas", "4"], (2, 1, 4)),
        (["--chips", "2", "--pp", "2"], (1, 2, 1)),
        (["--chips", "8", "--pp", "2"], (4, 2, 1)),
        # --replicas without --chips: that many copies of the fewest (was: silently one copy)
        (["--replicas", "2"], (1, 1, 2)),
    ],
)
def test_replicas_and_pipeline_stages_choose_the_layout(args: list[str], layout: tuple[int, int, int]) -> None:
    d = _json(["infer", "-m", "llama-3.1-8b", "-H", "h100-sxm", *args])
    assert (d["tensor_parallel"], d["pipeline_parallel"], d["replicas"]) == layout
    assert d["chips"] == layout[0] * layout[1] * layout[2]


def test_more_pipeline_stages_than_layers_are_refused() -> None:
    # Llama-3.1-8B has 32 layers: 64 stages of 64 chips was accepted (and --pp 33 alone said "does not fit")
    for args in (["--chips", "64", "--pp", "64"], ["--pp", "33"]):
        out = _refused(["infer", "-m", "llama-3.1-8b", "-H", "h100-sxm", *args])
        assert "--pp" in out
        assert "exceeds Llama-3.1-8B's 32 layers" in out
    with pytest.raises(vb.ModelError, match="pipeline_parallel 33 exceeds"):
        vb.estimate_inference("llama-3.1-8b", "h100-sxm", vb.Deployment(pipeline_parallel=33))


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--chunk-tokens", "4096"], "--chunk-tokens"),
        (["--no-chunked-prefill"], "--no-chunked-prefill"),
        (["--scheduler-steps", "8"], "--scheduler-steps"),
        (["--replicas", "2"], "--replicas"),
        (["--pp", "3"], "--pp"),
    ],
)
def test_gpu_serving_options_are_refused_on_sram_chips(args: list[str], flag: str) -> None:
    # they were accepted and ignored (the wafer model has no scheduler, replicas or free pipeline split)
    out = _refused(["infer", "-m", "llama-3.1-70b", "-H", "wse-3", *args])
    assert out.startswith(f"error: {flag}")
    assert "SRAM-resident" in out


def test_sram_chips_refuse_the_scheduler_fields_in_python_too() -> None:
    with pytest.raises(vb.ModelError, match="prefill_chunk_tokens describes a GPU serving stack's scheduler"):
        vb.estimate_inference("llama-3.1-70b", "wse-3", vb.Deployment(prefill_chunk_tokens=4096))
    # the chips as pipeline stages, said either way, still run
    r = vb.estimate_inference("llama-3.1-70b", "wse-3", vb.Deployment(chips=5, pipeline_parallel=5, replicas=1))
    assert r.chips == 5


def test_fast_mode_band_refuses_what_it_cannot_scan() -> None:
    # an SRAM chip has no batch policy: it said "the deployment carries none of the baseline concurrencies scanned"
    out = _refused(["infer", "-m", "llama-3.1-70b", "-H", "wse-3", "--fast-mode", "2.5"])
    assert "the fast-mode band is a GPU batch policy" in out
    # an infinite target printed "infx is out of reach"; NaN in Python printed "nanx is reachable"
    out = _refused(["infer", "-m", "llama-3.1-8b", "-H", "h100-sxm", "--fast-mode", "1e309"])
    assert out == "error: --fast-mode must be a finite number >= 1, got inf"
    for bad in (float("nan"), float("inf")):
        with pytest.raises(vb.ModelError, match="target_speedup must be a finite number >= 1"):
            vb.fast_mode_band("llama-3.1-8b", "h100-sxm", vb.Deployment(), bad)
        with pytest.raises(vb.ModelError, match="target_speedup must be a finite number >= 1"):
            vb.plan_fast_mode("llama-3.1-8b", "h100-sxm", vb.Deployment(concurrency=64), bad)


@pytest.mark.parametrize(
    "line", ["collective_latency_ms = 1e300", "collective_hop_latency_ms = 2000", "[sram]\ntau_layer_ms = 1e300"]
)
def test_a_chips_latency_terms_are_bounded(tmp_path, line: str) -> None:  # type: ignore[no-untyped-def]
    # collective_latency_ms = 1e300 gave a TTFT of 6.4e301 ms; tau_layer_ms = 1e300 on an SRAM chip 3.2e301 ms
    sram = "[sram]" in line
    head = (
        "memory_bytes = 44e9\nmemory_bandwidth_bytes_per_s = 21e15\nbf16_flops_per_s = 125e15\n"
        if sram
        else ("memory_bytes = 48e9\nmemory_bandwidth_bytes_per_s = 864e9\nbf16_flops_per_s = 362e12\n")
    )
    body = head + 'scaleup_link_bytes_per_s = 32e9\nsource = "test"\n'
    if sram:
        body += 'memory_kind = "sram"\n' + line + "\ntau_hop_ms = 0\ntau_step_ms = 0\nusable_sram_fraction = 0.9\n"
        body += 'source = "test"\n'
    else:
        body = line + "\n" + body
    chip = tmp_path / "chip.toml"
    chip.write_text(body)
    out = _refused(["infer", "-m", "llama-3.1-8b", "--hardware-config", str(chip), "--chips", "2"])
    assert "less than or equal to 1000" in out
    assert "_ms" in out


def test_the_open_loop_lower_bound_note_names_the_capacity_it_is_a_share_of() -> None:
    # at 7.5 of 8.59 requests/s the note said "at 87% of prefill capacity" beside "prefill utilisation 54%"
    wl = vb.Workload(prompt_tokens=1000, output_tokens=300)
    r = vb.estimate_open_loop("llama-3.3-70b", "h100-sxm", vb.Deployment(chips=2, precision="fp8"), wl, 7.5)
    assert r.ttft_lower_bound
    assert r.notes[0].startswith(f"at {r.load:.0%} of capacity: TTFT not predictable")


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--fast-mode", "2.5"], "--fast-mode scans closed-loop baselines"),
        (["--price-per-chip-hour", "3"], "--price-per-chip-hour prices a --concurrency prediction"),
    ],
)
def test_options_the_open_loop_does_not_use_are_refused(extra: list[str], said: str) -> None:
    # with --request-rate both were accepted and dropped: exit 0, no band, no cost
    out = _refused(["infer", "-m", "llama-3.1-8b", "-H", "h100-sxm", "--request-rate", "3", *extra])
    assert out.startswith(f"error: {said}")
