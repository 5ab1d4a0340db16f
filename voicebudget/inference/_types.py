"""The inference model's inputs and result: deployment, workload, calibration constants, result."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from voicebudget._model import DataModel
from voicebudget.inference._catalog import ChipPrice, Precision

__all__ = [
    "Bound",
    "Deployment",
    "GPUCalibration",
    "InferenceResult",
    "MemoryUse",
    "OpenLoopResult",
    "StepBreakdown",
    "Workload",
]

Bound = Literal["memory", "compute", "per-layer latency", "communication"]
"""What limits the decode step."""


class _Frozen(DataModel):
    """The package's input-model base (its configuration is :data:`voicebudget._model.MODEL_CONFIG`)."""


MAX_CHIPS = 2**20
"""Most chips (and tensor-parallel degree, pipeline stages, replicas) a deployment may ask for: 1,048,576,
above the largest accelerator clusters announced (~10^5 GPUs); the layouts of a chip count are its divisors,
found in ``O(sqrt(chips))`` steps."""


class Deployment(_Frozen):
    """How the model is served.

    :param chips: chips in the deployment; ``None``: the fewest the model fits on (with tensor
        parallelism up to the hardware's NVLink domain, then pipeline stages).
    :param tensor_parallel: chips per tensor-parallel group; it must split the attention heads
        (:meth:`ModelArch.tensor_parallel_options`). ``None``: the largest valid degree that divides
        ``chips`` within the hardware's scale-up domain (the rest become pipeline stages or replicas).
    :param pipeline_parallel: pipeline stages; ``None``: 1 when one tensor-parallel group holds the model (the
        chips beyond it are replicas: 8 chips at tp 2 are 4 replicas, and a note says so), else the fewest that
        fit. Chips left over after ``tensor_parallel x pipeline_parallel`` become data-parallel replicas sharing
        the load.
    :param replicas: data-parallel copies (the load split evenly); ``None``: what is left of ``chips`` after
        ``tensor_parallel x pipeline_parallel``. With ``chips`` and without ``pipeline_parallel`` it fixes the
        stages: ``chips / (tensor_parallel x replicas)``.
    :param precision: weight precision; ``None``: the model's native precision.
    :param kv_precision: KV-cache precision; ``None``: fp8 when weights are fp8/fp4, else bf16.
    :param concurrency: requests in flight across the deployment (a closed loop: each user sends its
        next request when the last one finishes, as in NIM/genai-perf sweeps). More than the KV cache (or the
        step budget) admits wait for a slot: the prediction adds that wait to TTFT and says so.
    :param prefill_chunk_tokens: token budget of one continuous-batching step (decode tokens + chunked prefill:
        vLLM's ``max_num_batched_tokens``, TensorRT-LLM's ``max_num_tokens``); ``None``: what the serving stacks
        default to on the chip (:func:`voicebudget.inference.default_step_budget`: 8,192 on chips of 70 GiB or more
        other than A100, 2,048 otherwise). The decoding sequences take one token each; the prompts share the rest.
        A running batch leaves at least 1/8 of it to prompts, so a scheduler admits at most 7/8 of it as running
        requests (the others queue).
    :param chunked_prefill: ``True`` (default): continuous batching with chunked prefill, prompt tokens sharing each
        step's budget with the decoding sequences (vLLM V1, TensorRT-LLM in-flight batching with chunked context,
        SGLang's mixed chunks). ``False``: waiting prompts run whole in prefill-only steps (up to the budget) while
        the decoding sequences wait, vLLM V0 with ``enable_chunked_prefill`` off (AMD's MLPerf vLLM configs);
        TTFT and TPOT then follow the prefill/decode cycle of :mod:`voicebudget.inference._prefill_first`.
    :param scheduler_steps: decode steps per scheduler call, vLLM's ``num_scheduler_steps`` (multi-step scheduling;
        SGLang's ``num_continuous_decode_steps``): a new request waits for the running group of steps to end
        (default 1: every step).
    :param memory_utilization: share of chip memory for weights + KV cache, as vLLM's ``gpu_memory_utilization``
        (the rest: activations, CUDA graphs, fragmentation); ``None`` (default): the weights plus 90% of the memory
        left after them, TensorRT-LLM's ``kv_cache_free_gpu_mem_fraction`` rule that audited MLPerf deployments
        are sized by (never less than 0.9 of the memory; it admits the single-B200 fp4 Llama-2-70B of MLPerf
        v4.1, which 0.9 of the whole refused).
    :param software: the vendor software generation of a wafer/LPU chip's timings (``voicebudget
        hardware`` lists them), or on a GPU the serving-stack generation (``voicebudget.inference._gpu.GPU_STACKS``:
        ``"2025"``, symmetric tensor-parallel ranks, or ``"2024"``, where each decoding sequence also costs
        ``tau_seq_rank_ms`` per rank beyond the first); ``None``: the latest.
    """

    chips: int | None = Field(default=None, ge=1, le=MAX_CHIPS)
    tensor_parallel: int | None = Field(default=None, ge=1, le=MAX_CHIPS)
    pipeline_parallel: int | None = Field(default=None, ge=1, le=MAX_CHIPS)
    replicas: int | None = Field(default=None, ge=1, le=MAX_CHIPS)
    precision: Precision | None = None
    kv_precision: Precision | None = None
    concurrency: int = Field(default=1, ge=1)
    prefill_chunk_tokens: int | None = Field(default=None, ge=16)
    chunked_prefill: bool = True
    scheduler_steps: int = Field(default=1, ge=1, le=1024)
    memory_utilization: float | None = Field(default=None, gt=0, le=1)
    software: str | None = Field(default=None, min_length=1, max_length=40)


class Workload(_Frozen):
    """One request's size: ``prompt_tokens`` in, ``output_tokens`` out (means, for a loaded server)."""

    prompt_tokens: int = Field(default=1000, ge=1)
    output_tokens: int = Field(default=200, ge=1)


class GPUCalibration(_Frozen):
    """The few fitted constants of the GPU serving model (physics, not rows).

    Fitted once by grid search on the calibration rows (docs/reference/inference-calibration.csv:
    G1, G1p, G3, G3p, G5a, P4, P8, M18, M3, and the short-prompt rows P4s, P8s of
    tests/data/inference-calibration-added.csv), minimising the worst error relative to each row's
    tolerance (benchmarks/bench_infer.py re-runs the fit); see docs/inference.md. Seven constants for
    eleven rows; ``fp4_compute_efficiency`` and ``tau_seq_rank_ms`` (issue 21) from the rows named below.

    :param memory_efficiency: achieved / peak HBM bandwidth when streaming weights and KV cache.
    :param compute_efficiency: achieved / peak dense bf16/fp16 tensor throughput in GEMMs.
    :param low_precision_compute_efficiency: the same for fp8/fp4 GEMMs, relative to *their* peak
        (quantisation, scaling and non-GEMM work do not speed up 2x; fitted to NIM's fp8 TTFT, G3p).
    :param tau_layer_ms: fixed cost per layer per step (kernel launches, norms, synchronisation).
    :param tau_step_ms: fixed cost per step (scheduling, sampling, detokenisation).
    :param tau_seq_ms: cost per decoding sequence per step (sampling, logits processing, scheduler
        and block-table bookkeeping, per-sequence attention work): why decode steps slow down with
        batch size even where weights dominate the bytes read.
    :param fp4_compute_efficiency: the same for fp4 GEMMs on fp4 tensor cores, relative to their peak: 0.40,
        solved from TensorRT-LLM v1.0's maximum throughput of Llama-3.3-70B FP4 on one B200 at 2,048 in / 128
        out (1,339 tok/s; docs/source/performance/perf-overview.md, read 2026-12-02), 0.71 of the fp8 figure
        (the H200 FP8 row of the same table and shape is within 3% at 0.56).
    :param tau_seq_rank_ms: cost per decoding sequence per step per tensor-parallel rank beyond the first, paid on
        a 2023-24 serving stack only (``Deployment.software="2024"``; vLLM V0's driver worker prepared and broadcast
        every step's per-sequence inputs): 0.03, fitted on two static-batch sweeps, Llama 3.1 405B FP8 on 8 x MI300X
        (Oracle OCI blog, 2024-10-10) and TensorRT-LLM v0.6.1's Llama-2-70B H100 FP8 rows
        (tests/data/inference-measurements.csv; docs/inference.md). 2025 stacks do not pay it: vLLM 0.11 at tp 8
        with 984 sequences in flight runs its steps in 51 ms, where it would add 207 ms.
    :param gemm_overlap_loss: share of a prompt chunk's GEMM FLOPs (at most the weight read) that its
        prefill step does not hide behind the weight stream (0: the bare roofline ``max``; 1: none).
        It matters only near the ridge point, i.e. for short prompts: fitted to TensorRT-LLM's
        128-token first-token latencies (P4s, P8s) with kipply's 512-token prefill (G1p) bounding it.
    """

    memory_efficiency: float = Field(default=0.9, gt=0, le=1)
    compute_efficiency: float = Field(default=0.65, gt=0, le=1)
    low_precision_compute_efficiency: float = Field(default=0.56, gt=0, le=1)
    tau_layer_ms: float = Field(default=0.05, ge=0)
    tau_step_ms: float = Field(default=0.2, ge=0)
    tau_seq_ms: float = Field(default=0.01, ge=0)
    gemm_overlap_loss: float = Field(default=0.4, ge=0, le=1)
    fp4_compute_efficiency: float = Field(default=0.40, gt=0, le=1)
    tau_seq_rank_ms: float = Field(default=0.03, ge=0)


class StepBreakdown(_Frozen):
    """One decode step's terms, ms (per token of one user, ``T_step``)."""

    weights_ms: float
    compute_ms: float
    kv_cache_ms: float
    attention_ms: float
    overhead_ms: float
    communication_ms: float
    total_ms: float
    bound: Bound


class MemoryUse(_Frozen):
    """Memory per deployment (all replicas' copies counted once per replica), bytes."""

    weights_bytes: float
    kv_cache_bytes: float
    capacity_bytes: float


class InferenceResult(_Frozen):
    """Prediction for one model on one deployment under one workload (all times ms).

    :ivar ttft_ms: time to first token at this concurrency (mean queue wait + prefill, plus ``queue_wait_ms`` when
        more requests are in flight than run); a lower bound when ``ttft_lower_bound``.
    :ivar ttft_lower_bound: the prefill load is above 90% of capacity, where TTFT is not predictable: ``ttft_ms``
        is its value at 90% (a note says so).
    :ivar prefill_load: share of the prefill capacity the other users' prompts take (``rho``; 0 at concurrency 1).
    :ivar step_budget_tokens: the continuous-batching step budget used (decode tokens + prompt tokens per step; without
        chunked prefill, the prompt tokens of one prefill-only step).
    :ivar chunked_prefill: the scheduler modelled: chunked prefill (``True``) or prefill-only steps between decode
        groups (``Deployment.chunked_prefill``).
    :ivar scheduler_steps: decode steps per scheduler call (``Deployment.scheduler_steps``).
    :ivar running_requests: requests running across the deployment: the concurrency, or fewer when the KV cache
        (or the step budget) admits fewer; the rest wait for a slot (0 on SRAM chips, which model no admission).
    :ivar queue_wait_ms: the mean wait for a slot of the requests beyond ``running_requests`` (a closed loop past
        its admission limit: ``(concurrency / running - 1) x`` a running request's time), included in ``ttft_ms``.
    :ivar tpot_ms: time per output token (inter-token latency) at this concurrency.
    :ivar tokens_per_s_per_user: ``1000 / tpot_ms``.
    :ivar throughput_tokens_per_s: output tokens/s of the whole deployment.
    :ivar cost_per_million_output_tokens: US dollars, from ``price`` (``None`` without a price).
    :ivar bound: what limits the decode step.
    :ivar chips_chosen: ``True`` when the tool picked the fewest chips that fit.
    :ivar model_alias: the id the caller asked for when it is an alias of ``model``
        (``llama-3.3-70b`` for ``llama-3.1-70b``), else ``None``.
    :ivar speculative_speedup: with speculative decoding, plain TPOT / speculative TPOT at this
        concurrency (the verification step costed by the hardware model; below 1 when verifying the
        drafted tokens costs more than they save), else ``None``.
    :ivar notes: what the tool chose or assumed for this prediction, one sentence each.
    """

    kind: str
    """The hardware kind whose model made the prediction: ``"gpu"`` (HBM roofline), ``"wafer"`` (SRAM-resident)."""
    model: str
    model_alias: str | None = None
    hardware: str
    precision: Precision
    kv_precision: Precision
    chips: int
    tensor_parallel: int
    pipeline_parallel: int
    replicas: int
    chips_chosen: bool
    concurrency: int
    prompt_tokens: int
    output_tokens: int
    ttft_ms: float
    ttft_lower_bound: bool = False
    prefill_load: float = 0.0
    step_budget_tokens: int = 0
    chunked_prefill: bool = True
    scheduler_steps: int = 1
    running_requests: int = 0
    queue_wait_ms: float = 0.0
    tpot_ms: float
    tokens_per_s_per_user: float
    throughput_tokens_per_s: float
    cost_per_million_output_tokens: float | None
    price: ChipPrice | None
    bound: Bound
    step: StepBreakdown
    memory: MemoryUse
    speculative_speedup: float | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the ``voicebudget infer --format json`` document)."""
        d = self.model_dump(mode="json")
        d["price_assumption"] = (
            f"${self.price.usd_per_chip_hour:.2f} per chip-hour ({self.price.source})"
            if self.price
            else "no public per-chip price; pass one to get a cost"
        )
        return d


class OpenLoopResult(_Frozen):
    """Serving Poisson arrivals (``estimate_open_loop``); all times ms, rates per second.

    :ivar request_rate_per_s: the arrival rate across the deployment.
    :ivar capacity_requests_per_s: the rate at which the step budget fills (the queue diverges).
    :ivar load: ``request_rate_per_s / capacity_requests_per_s``.
    :ivar ttft_lower_bound: ``load`` above 75% (``OPEN_LOOP_PREDICTABLE_LOAD``), where TTFT is not predictable:
        the TTFT quantiles and mean are those at 75% of capacity, a lower bound (``notes`` says so); TPOT and the
        concurrency stay at the rate.
    :ivar notes: what the prediction assumed or could not predict, one sentence each.
    :ivar ttft_p50_ms: TTFT median (wait for the running step + for a prefill slot + prefill).
    :ivar ttft_p90_ms: TTFT 90th percentile.
    :ivar ttft_p99_ms: TTFT 99th percentile.
    :ivar ttft_mean_ms: TTFT mean.
    :ivar tpot_ms: mean step time, the inter-token latency of a decoding request.
    :ivar mean_concurrency: requests in flight, Little's law ``lambda (E[TTFT] + (O - 1) TPOT)``.
    :ivar decode_batch: mean sequences decoding per step (one replica).
    :ivar prefill_tokens_per_step: mean prompt tokens per step (one replica).
    :ivar prefill_utilization: ``rho``, prompt tokens per step / the budget left after decode tokens.
    :ivar throughput_tokens_per_s: output tokens/s (``rate x output_tokens``).
    :ivar at_mean_concurrency: the closed-loop prediction at the (rounded up) mean concurrency.
    """

    request_rate_per_s: float
    capacity_requests_per_s: float
    load: float = 0.0
    ttft_lower_bound: bool = False
    notes: tuple[str, ...] = ()
    replicas: int
    ttft_p50_ms: float
    ttft_p90_ms: float
    ttft_p99_ms: float
    ttft_mean_ms: float
    tpot_ms: float
    mean_concurrency: float
    decode_batch: float
    prefill_tokens_per_step: float
    prefill_utilization: float
    throughput_tokens_per_s: float
    at_mean_concurrency: InferenceResult
