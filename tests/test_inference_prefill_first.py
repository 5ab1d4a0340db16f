"""Serving without chunked prefill (``Deployment(chunked_prefill=False)``, ``scheduler_steps``): prompts in
prefill-only steps between groups of decode steps, vLLM V0's scheduler as AMD's MLPerf submissions run it
(voicebudget/inference/_prefill_first.py, docs/inference.md)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.cli import app

# AMD's MLPerf Inference v5.1 Llama-2-70B Server on one MI300X of eight: vLLM V0, enable_chunked_prefill False,
# num_scheduler_steps 9, max_num_batched_tokens 40960 (closed/AMD/code/llama2-70b-99/harness_llm/models/llama2-70b/
# server_mi300x.yaml); 3,560 in flight over 8 GPUs by Little's law, OpenOrca's 222 tokens in, 301 out.
AMD = vb.Deployment(
    chips=1, tensor_parallel=1, precision="fp8", chunked_prefill=False, scheduler_steps=9, prefill_chunk_tokens=40960
)
WL = vb.Workload(prompt_tokens=222, output_tokens=301)


def _cycle(r: vb.InferenceResult, steps: int) -> tuple[float, float, float]:
    """(cycle C, decode step T_dec, prefill step T_pf) of a loaded closed loop, from its public figures: a decoding
    user gets ``steps`` tokens per cycle (TPOT = C / N) and the decode group is N steps of the running batch."""
    step = vb.step_time_function("llama-2-70b", "mi300x", AMD, WL)
    t_dec = step(float(r.running_requests), 0.0)
    cycle = steps * r.tpot_ms
    return cycle, t_dec, cycle - steps * t_dec


def test_a_loaded_cycle_has_its_closed_form() -> None:
    r = vb.estimate_inference("llama-2-70b", "mi300x", AMD.model_copy(update={"concurrency": 445}), WL)
    cycle, t_dec, t_pf = _cycle(r, 9)
    assert r.step.total_ms == pytest.approx(t_dec)  # the decode step shown is the group's step
    # TTFT = C / 2 (the rest of the running cycle) + T_pf (the prefill step of the cycle's arrivals)
    assert r.ttft_ms == pytest.approx(cycle / 2 + t_pf, rel=1e-6)
    # the prompts in that step are those of one cycle: n = lambda C, lambda from the closed loop
    lam = 444 / (r.ttft_ms + 300 * r.tpot_ms)
    n = lam * cycle
    assert n > 1
    roofline = vb.step_time_function("llama-2-70b", "mi300x", AMD, WL)(0.0, n * 222)
    assert roofline <= t_pf <= 1.25 * roofline  # the roofline, plus the short-prompt GEMM loss (omega)
    # AMD's log: mean TTFT 918.5 ms, mean TPOT 144.6 ms (closed/AMD/results/8xMI300X_2xEPYC_9575F/llama2-70b-99/
    # Server/performance/run_1/mlperf_log_summary.txt); chunked prefill at the same load gave 177 ms
    assert r.ttft_ms == pytest.approx(918.5, rel=0.10)
    assert r.tpot_ms == pytest.approx(144.6, rel=0.20)
    chunked = vb.estimate_inference(
        "llama-2-70b", "mi300x", vb.Deployment(chips=1, precision="fp8", concurrency=445), WL
    )
    assert chunked.ttft_ms < 0.25 * r.ttft_ms


def test_more_decode_steps_per_scheduler_call_trade_ttft_for_tpot() -> None:
    runs = [
        vb.estimate_inference(
            "llama-2-70b", "mi300x", AMD.model_copy(update={"concurrency": 445, "scheduler_steps": n}), WL
        )
        for n in (1, 3, 9, 27)
    ]
    ttft, tpot = [r.ttft_ms for r in runs], [r.tpot_ms for r in runs]
    assert ttft == sorted(ttft)
    assert tpot == sorted(tpot, reverse=True)


def test_light_load_waits_for_the_decode_group_not_the_cycle() -> None:
    step = vb.step_time_function("llama-2-70b", "mi300x", AMD, WL)
    # a lone user: nothing runs when its request arrives, TTFT is its prefill step
    one = vb.estimate_inference("llama-2-70b", "mi300x", AMD, WL)
    assert one.prefill_load == 0.0
    assert step(0.0, 222.0) <= one.ttft_ms <= 1.25 * step(0.0, 222.0)
    # two in flight: a prefill holds one prompt, and the arrival waits for the rest of a 9-step decode group
    two = vb.estimate_inference("llama-2-70b", "mi300x", AMD.model_copy(update={"concurrency": 2}), WL)
    group = 9 * step(2.0, 0.0)
    assert two.ttft_ms - one.ttft_ms == pytest.approx(group / 2, rel=0.05)


def test_open_loop_quantiles_are_uniform_over_a_loaded_cycle() -> None:
    # MI300X Interactive (AMD v5.1, 8 decode steps per scheduler call), one GPU
    dep = AMD.model_copy(update={"scheduler_steps": 8})
    # at 6 requests/s every cycle holds a prefill: the wait is uniform over the cycle, p50/p90/p99 evenly spaced in q
    r = vb.estimate_open_loop("llama-2-70b", "mi300x", dep, WL, 6.0)
    assert not r.ttft_lower_bound
    assert (r.ttft_p99_ms - r.ttft_p90_ms) / (r.ttft_p90_ms - r.ttft_p50_ms) == pytest.approx(9 / 40, rel=1e-6)
    cycle = (r.ttft_p90_ms - r.ttft_p50_ms) / 0.4
    assert r.tpot_ms == pytest.approx(cycle / 8, rel=1e-6)
    assert r.at_mean_concurrency.chunked_prefill is False
    assert r.at_mean_concurrency.scheduler_steps == 8
    # at the logged 3.68 requests/s per GPU some cycles hold no prefill. AMD's log (closed/AMD/results/
    # 8xMI300X_2xEPYC_9575F/llama2-70b-99/Interactive/.../mlperf_log_summary.txt): TTFT p50 198.6 ms, p99 436.0 ms;
    # the steady cycle leaves out the Poisson spread of its length (docs/inference.md)
    logged = vb.estimate_open_loop("llama-2-70b", "mi300x", dep, WL, 3.68)
    assert logged.ttft_p50_ms == pytest.approx(198.6, rel=0.25)
    assert logged.ttft_p99_ms < 436.0
    assert logged.ttft_p50_ms < r.ttft_p50_ms


def test_infer_flags_reach_the_model() -> None:
    args = ["infer", "-m", "llama-2-70b", "-H", "mi300x", "--chips", "1", "--precision", "fp8"]
    args += ["--prompt-tokens", "222", "--output-tokens", "301", "--chunk-tokens", "40960"]
    r = CliRunner().invoke(app, [*args, "-c", "445", "--no-chunked-prefill", "--scheduler-steps", "9", "-f", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    lib = vb.estimate_inference("llama-2-70b", "mi300x", AMD.model_copy(update={"concurrency": 445}), WL)
    assert (doc["chunked_prefill"], doc["scheduler_steps"]) == (False, 9)
    assert doc["ttft_ms"] == pytest.approx(lib.ttft_ms)
    assert doc["tpot_ms"] == pytest.approx(lib.tpot_ms)
    table = CliRunner().invoke(app, [*args, "-c", "445", "--no-chunked-prefill", "--scheduler-steps", "9"])
    flat = " ".join(table.stdout.replace("│", " ").split())
    assert "40,960 prompt tokens per prefill-only step (no chunked prefill); 9 decode steps per scheduler call" in flat
    rate = CliRunner().invoke(app, [*args, "--request-rate", "3.68", "--no-chunked-prefill", "--scheduler-steps", "8"])
    assert rate.exit_code == 0, rate.output
    assert "8 decode steps per scheduler call" in " ".join(rate.stdout.replace("│", " ").split())
    bad = CliRunner().invoke(app, [*args, "--scheduler-steps", "0"])
    assert bad.exit_code == 2


def test_a_scenario_stage_takes_the_scheduler() -> None:
    stage = vb.GPUStage(
        model="llama-2-70b",
        hardware="mi300x",
        chips=1,
        precision="fp8",
        concurrency=445,
        prompt_tokens=222,
        output_tokens=301,
        prefill_chunk_tokens=40960,
        chunked_prefill=False,
        scheduler_steps=9,
    )
    assert stage.deployment() == AMD.model_copy(update={"concurrency": 445, "tensor_parallel": None})
    assert stage.predict().ttft_ms == pytest.approx(
        vb.estimate_inference("llama-2-70b", "mi300x", AMD.model_copy(update={"concurrency": 445}), WL).ttft_ms
    )
