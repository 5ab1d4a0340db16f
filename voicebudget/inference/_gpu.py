"""GPU serving: an iteration-level roofline with efficiency factors and fixed costs.

A continuous-batching step that carries ``b`` decode tokens (mean context ``S``) and ``p`` prefill
tokens (chunked prefill of other users' prompts) on ``tp`` tensor-parallel chips takes
(docs/design.md section 4)::

    T_gemm = max(weights_read(b + p) / (tp * BW * eta_m),  2 * active * (b + p) / (chips * F * eta_c))
    T_kv   = b * S * kv_bytes_per_token / (chips * BW * eta_m)      (decode attention: memory-bound)
    T_attn = attention FLOPs / (chips * F * eta_c)                  (prefill attention: compute-bound)
    T_step = T_gemm + T_kv + T_attn + layers * tau_layer + tau_step + T_collectives

``weights_read`` of a mixture-of-experts model counts the distinct experts the step's tokens touch,
``E * (1 - (1 - k/E)^n)`` per MoE layer. ``T_collectives`` is two ring all-reduces per layer across
the tensor-parallel group, ``2 * layers * (latency + 2 (tp-1)/tp * tokens * d_model * 2 B / link)``, with
``latency = collective_latency + 2 (tp - 2) * hop_latency`` (a ring of ``tp`` chips has ``2 (tp - 1)``
sequential steps; the pair's two are in ``collective_latency``).
KV heads fewer than ``tp`` are replicated (``tp / kv_heads`` copies: more KV bytes to hold and read); a
multi-head latent attention model has one shared latent (``kv_heads == 1``), so each chip holds all of it.
Attention FLOPs per (query, cached token) pair are :meth:`ModelArch.attention_flops_per_pair` (MLA: absorbed
weights at decode, decompressed keys and values at prefill). Local-attention layers (sliding window, chunked)
hold and attend to only their window: KV bytes and attention pairs are scaled by
:meth:`ModelArch.window_share` of the mean context.
Pipeline stages add one hop each; they do not cut a single user's latency (the weight term uses the
``tp`` chips of one stage) but they do add throughput (compute and KV terms use all chips).

Under load (closed loop, concurrency ``C`` per replica), each step carries ``C`` decode tokens and, on
average, ``(C - 1) * P / O`` prompt tokens of the other users (each request brings ``P`` prompt
tokens per ``O`` output tokens): that is why serving TPOT is 2-5x the pure decode step. TTFT is the
mean wait for the running step to end (half a step) plus the prompt's prefill in chunks of the step
budget left after the other users' decode tokens.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from voicebudget._errors import ModelError, param
from voicebudget.inference._catalog import PRECISION_BYTES, Hardware, ModelArch
from voicebudget.inference._types import Bound, GPUCalibration, MemoryUse, StepBreakdown

if TYPE_CHECKING:
    from voicebudget._algebra import FloatArray

_Tokens = TypeVar("_Tokens", float, "FloatArray")
"""Token counts: one step's (a float) or a grid of steps' (``float64[m]``)."""

__all__ = [
    "GPU_STACKS",
    "KV_FREE_MEMORY_FRACTION",
    "ServingStack",
    "admitted_requests",
    "default_step_budget",
    "fits",
    "gpu_stack",
    "OPEN_LOOP_PREDICTABLE_LOAD",
    "PREDICTABLE_LOAD",
    "PROMPT_SHARE_FLOOR",
    "GPUPlan",
    "lower_bound_note",
    "decode_step",
    "kv_bytes_per_token",
    "prefill_ms",
    "weights_bytes",
    "weights_read_bytes",
]

ACTIVATION_BYTES = 2.0
"""Activations exchanged by tensor-parallel all-reduces are bf16."""

PCIE_ALLREDUCE_EFFICIENCY = 0.65
"""All-reduce bus bandwidth over PCIe as a share of the link's one-way figure: NCCL's all_reduce_perf
reaches at most 21 GB/s bus bandwidth on 8 x A100 80GB PCIe (Gen4 x16, 32 GB/s one way; 8-21 GB/s
reported, github.com/NVIDIA/nccl/issues/841, 2023-05-19) and 35 GB/s on 4 x RTX 5090 (Gen5, 64 GB/s;
github.com/NVIDIA/nccl/issues/1639, 2025-03-14, where NCCL's maintainer notes that on PCIe systems the
host's CPU and memory bound it); 21 / 32 = 0.65 (read 2026-12-01). NVLink and xGMI links keep their figure."""


PREDICTABLE_LOAD = 0.9
"""Above this share of the prefill capacity a TTFT is not predictable (a few percent of capacity error is an
order of magnitude of queueing): it is shown at this share, as a lower bound, and a note says so."""


OPEN_LOOP_PREDICTABLE_LOAD = 0.75
"""The same line for Poisson arrivals (``estimate_open_loop``): MLPerf Server runs the model put at 76-92% of its
capacity came out 26-92% too fast in TTFT (issue 21's collected rows, tests/test_inference_measurements.py), and
the discrete-event check already finds the tails up to a quarter optimistic at 70-85% (docs/inference.md): above
75% of capacity the open-loop TTFT is shown at 75%, as a lower bound."""


def lower_bound_note(load: float, line: float = PREDICTABLE_LOAD, of: str = "prefill capacity") -> str:
    """The sentence a prediction carries when its load is above ``line`` (:data:`PREDICTABLE_LOAD` of the prefill
    capacity in a closed loop, or :data:`OPEN_LOOP_PREDICTABLE_LOAD` of the capacity for Poisson arrivals,
    ``of="capacity"``: there the prefill may be the lesser limit, the KV cache or the step budget the binding one)."""
    return (
        f"at {load:.0%} of {of}: TTFT not predictable, shown as a lower bound (its queueing at "
        f"{line:.0%} of capacity); a few percent of capacity error is an order of magnitude of wait here"
    )


@dataclass(frozen=True)
class ServingStack:
    """A generation of GPU serving stacks, as the published measurements separate them (``Deployment.software`` on a
    GPU, ``infer --software``): whether a decoding sequence's per-step cost grows with the tensor-parallel group."""

    generation: str
    per_rank_sequence_cost: bool
    """Each sequence also costs ``tau_seq_rank_ms`` per tensor-parallel rank beyond the first, every step."""
    software: str
    """What the generation is, with the measurements that separate it."""


GPU_STACKS: tuple[ServingStack, ...] = (
    ServingStack(
        "2025",
        False,
        "2025 serving stacks, whose tensor-parallel ranks each keep their requests' state and prepare their own "
        "step: vLLM V1 (default from 0.8; workers cache request states and receive only each step's changes, "
        "blog.vllm.ai 2025-01-27, 'vLLM V1: A Major Upgrade to vLLM's Core Architecture', section 4) and "
        "TensorRT-LLM's PyTorch backend (a PyExecutor on each rank, its CPU work overlapped with the GPU's next step: "
        "docs/source/developer-guide/overview.md, docs/source/features/overlap-scheduler.md), read 2026-12-02; a "
        "sequence costs tau_seq per step at any tp",
    ),
    ServingStack(
        "2024",
        True,
        "2023-24 serving stacks (vLLM V0, whose driver worker prepared and broadcast every step's inputs; TensorRT-LLM "
        "0.x): a sequence costs tau_seq + (tp - 1) x tau_seq_rank per step, as vLLM's static-batch sweep on 8 x "
        "MI300X (Oracle OCI, 2024-10-10), TensorRT-LLM v0.6.1's tp 2-4 rows and NVIDIA's MLPerf v4.1 tp-2 run show; "
        "at tp 8 it caps a replica near 1 / (tau_seq + 7 tau_seq_rank) = 4,500 tokens/s",
    ),
)
"""GPU serving-stack generations, the newest (the default) first."""


def gpu_stack(generation: str | None) -> ServingStack:
    """The GPU serving-stack generation ``generation`` (``None``: the newest, :data:`GPU_STACKS`' first).

    :raises ModelError: no such generation (the message lists the known ones).
    """
    if generation is None:
        return GPU_STACKS[0]
    for s in GPU_STACKS:
        if s.generation == generation.strip().lower():
            return s
    known = ", ".join(s.generation for s in GPU_STACKS)
    raise ModelError(
        f"{param('software', 'Deployment.software')} {generation!r}: unknown serving-stack generation for a GPU; "
        f"known: {known} (the first is the default)"
    )


@dataclass(frozen=True)
class GPUPlan:
    """A resolved deployment: everything the step formulas need (one replica)."""

    model: ModelArch
    hardware: Hardware
    precision: str | None  # None: the model's released precision mix
    kv_precision: str
    tp: int
    pp: int
    replicas: int
    cal: GPUCalibration
    stack: ServingStack = GPU_STACKS[0]

    @property
    def chips_per_replica(self) -> int:
        return self.tp * self.pp

    @property
    def compute_precision(self) -> str:
        """The precision GEMMs run in (the released dense precision when ``precision`` is None)."""
        return self.precision or self.model.native_precision

    @functools.cached_property
    def per_sequence_ms(self) -> float:
        """Cost of one decoding sequence per step, ms: ``tau_seq``, plus ``tau_seq_rank`` per tensor-parallel rank
        beyond the first on a stack generation that pays it (:attr:`ServingStack.per_rank_sequence_cost`)."""
        rank = self.cal.tau_seq_rank_ms if self.stack.per_rank_sequence_cost else 0.0
        return self.cal.tau_seq_ms + (self.tp - 1) * rank

    @functools.cached_property
    def peak_flops(self) -> float:
        """Achieved GEMM FLOP/s per chip: peak of the format x its fitted efficiency."""
        hw = self.hardware
        peak = hw.flops_per_s(self.compute_precision)
        if hw.fp4_flops_per_s is not None and peak >= hw.fp4_flops_per_s:  # fp4 GEMMs on fp4 tensor cores
            eff = self.cal.fp4_compute_efficiency
        elif peak > hw.bf16_flops_per_s:
            eff = self.cal.low_precision_compute_efficiency
        else:
            eff = self.cal.compute_efficiency
        return peak * eff * hw.software_efficiency

    @functools.cached_property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes per token across the tensor-parallel group, KV heads replicated when
        ``tp > kv_heads`` (each chip holds whole KV heads, as vLLM and TensorRT-LLM do), every layer counted
        whole (:meth:`kv_bytes_at` applies local layers' windows)."""
        return kv_bytes_per_token(self.model, self.kv_precision) * self.model.kv_replication(self.tp)

    def kv_bytes_at(self, context_tokens: float) -> float:
        """:attr:`kv_bytes_per_token` for sequences of ``context_tokens`` (local layers keep their window)."""
        return self.kv_bytes_per_token * self.model.window_share(context_tokens)

    @functools.cached_property
    def _weight_parts(self) -> tuple[float, float, float, float]:
        """(dense bytes, one expert's bytes x MoE layers, experts, experts per token): the terms of
        :func:`weights_read_bytes`, computed once per plan (the hot path reads them every step)."""
        dense, expert = weights_bytes(self.model, self.precision)
        m = self.model
        if not m.is_moe:
            return dense, 0.0, 0.0, 0.0
        assert m.experts is not None
        assert m.experts_per_token is not None
        return dense, expert * m.n_moe_layers, float(m.experts), float(m.experts_per_token)

    def weights_read(self, tokens: float) -> float:
        """:func:`weights_read_bytes` of this plan's model and precision, bytes."""
        dense, per_expert, e, k = self._weight_parts
        if per_expert == 0.0:
            return dense
        return dense + per_expert * e * (1.0 - float((1.0 - k / e) ** max(tokens, 1.0)))

    @functools.cached_property
    def total_weights(self) -> float:
        """:func:`total_weights_bytes` of this plan's model and precision (one replica's copy), bytes."""
        return total_weights_bytes(self.model, self.precision)

    @functools.cached_property
    def capacity_bytes(self) -> float:
        """Memory of one replica's chips, bytes."""
        return self.chips_per_replica * self.hardware.memory_bytes

    @functools.cached_property
    def bandwidth(self) -> float:
        hw = self.hardware
        return hw.memory_bandwidth_bytes_per_s * self.cal.memory_efficiency * hw.software_efficiency


def weights_bytes(model: ModelArch, precision: str | None) -> tuple[float, float]:
    """Bytes of weights: ``(dense part, one routed expert in one layer)``.

    :param precision: ``None`` for the released precision (gpt-oss: MXFP4 experts, bf16 rest).
    """
    dense_params = model.total_params - model.routed_params
    dense_prec = precision or model.native_precision
    expert_prec = precision or model.native_expert_precision or model.native_precision
    return dense_params * PRECISION_BYTES[dense_prec], model.expert_params * PRECISION_BYTES[expert_prec]


def total_weights_bytes(model: ModelArch, precision: str | None) -> float:
    """All weight bytes of one copy of the model."""
    dense, expert = weights_bytes(model, precision)
    return dense + expert * model.n_moe_layers * (model.experts or 0)


def weights_read_bytes(model: ModelArch, precision: str | None, tokens: float) -> float:
    """Weight bytes one step reads for ``tokens`` tokens: dense part + distinct experts touched.

    Distinct experts of ``E`` with ``k`` per token among ``n`` tokens: ``E * (1 - (1 - k/E)^n)``
    (uniform routing assumption, docs/design.md section 4).
    """
    dense, expert = weights_bytes(model, precision)
    if not model.is_moe:
        return dense
    assert model.experts is not None
    assert model.experts_per_token is not None
    e, k = model.experts, model.experts_per_token
    touched = e * (1.0 - float((1.0 - k / e) ** max(tokens, 1.0)))
    return dense + expert * model.n_moe_layers * touched


def kv_bytes_per_token(model: ModelArch, kv_precision: str, context_tokens: float | None = None) -> float:
    """KV-cache bytes per token: :meth:`ModelArch.kv_elements_per_token` x bytes per element
    (``2 * layers * kv_heads * head_dim * bytes``; MLA: ``layers * (kv_lora_rank + rope_head_dim) * bytes``;
    with ``context_tokens``, local-attention layers keep only their window)."""
    return model.kv_elements_per_token(context_tokens) * PRECISION_BYTES[kv_precision]


def _collectives_ms(plan: GPUPlan, tokens: float) -> float:
    hw, tp = plan.hardware, plan.tp
    hops = (plan.pp - 1) * hw.collective_latency_ms
    if tp == 1:
        return hops
    return _all_reduces_ms(plan, tokens) + hops


def _all_reduces_ms(plan: GPUPlan, tokens: _Tokens) -> _Tokens:
    """A step's two ring all-reduces per layer across the tensor-parallel group (``tp > 1``), ms."""
    hw, tp = plan.hardware, plan.tp
    msg = tokens * plan.model.d_model * ACTIVATION_BYTES
    latency = hw.collective_latency_ms + 2.0 * (tp - 2) * hw.collective_hop_latency_ms
    link = hw.scaleup_link_bytes_per_s * (PCIE_ALLREDUCE_EFFICIENCY if hw.scaleup_topology == "pcie" else 1.0)
    one = latency + 1e3 * 2.0 * (tp - 1) / tp * msg / link
    return 2.0 * plan.model.layers * one


def gemm_ms(plan: GPUPlan, weights_ms: float, compute_ms: float, prompt_share: float) -> float:
    """The GEMMs of one step, ms: the larger of streaming the weights and their FLOPs, plus the share
    ``gemm_overlap_loss`` of the prompt tokens' FLOPs (``prompt_share`` of the step's tokens) that is not
    hidden behind the weight stream, at most the weight read.

    A step carrying a prompt's chunk runs the context-phase kernels (outside the decode path's fused,
    graph-captured kernels); near the ridge point (~100-500 prompt tokens) its GEMMs are neither
    bandwidth- nor compute-saturated, so a short prompt costs about the weight read *plus* its FLOPs
    (1.5-2.5 decode steps), where the bare roofline ``max`` gives about one. Far above the ridge (long
    prompts) the weight read is small next to the FLOPs and the term hardly matters. Used for the
    prompt's own prefill (TTFT, :func:`prefill_ms`); decode-only and speculative-verification steps
    (no prompt tokens) keep the roofline ``max``, and so, for now, do the steps of other users' chunks
    in :func:`decode_step` (loaded TPOT and the open-loop step times; docs/inference.md).
    """
    prompt = compute_ms * prompt_share
    return max(weights_ms, compute_ms) + plan.cal.gemm_overlap_loss * min(weights_ms, prompt)


def _overhead_ms(plan: GPUPlan, sequences: _Tokens) -> _Tokens:
    """Fixed costs of a step carrying ``sequences`` decoding sequences, ms: per layer, per step, and per sequence
    (:attr:`GPUPlan.per_sequence_ms`)."""
    cal = plan.cal
    return plan.model.layers * cal.tau_layer_ms + cal.tau_step_ms + sequences * plan.per_sequence_ms


def _kv_read_ms(plan: GPUPlan, sequences: _Tokens, context_tokens: float) -> _Tokens:
    """Decode attention's KV-cache read of ``sequences`` sequences at ``context_tokens`` each, ms, spread over the
    replica's chips."""
    kv_bytes = sequences * context_tokens * plan.kv_bytes_at(context_tokens)
    return 1e3 * kv_bytes / (plan.chips_per_replica * plan.bandwidth)


def _attention_ms(
    plan: GPUPlan, queries: _Tokens, context_tokens: float, prefill_tokens: _Tokens, prefill_context: float
) -> _Tokens:
    """Attention FLOPs of a step's decode queries and prompt tokens (their pairs with the cached tokens), ms."""
    m = plan.model
    attn_flops = m.attention_flops_per_pair("decode") * queries * context_tokens * m.window_share(
        context_tokens
    ) + m.attention_flops_per_pair("prefill") * prefill_tokens * prefill_context * m.window_share(prefill_context)
    return 1e3 * attn_flops / (plan.chips_per_replica * plan.peak_flops)


StepTerms = tuple[float, float, float, float, float, float, float]
"""A step's terms, ms: weights, compute, KV cache, attention, overhead, communication, total."""


def step_terms(
    plan: GPUPlan,
    decode_tokens: float,
    context_tokens: float,
    prefill_tokens: float,
    prefill_context: float,
    query_tokens: float = 1.0,
) -> StepTerms:
    """:func:`decode_step`'s terms as a plain tuple (the hot path: no model is built)."""
    m, chips = plan.model, plan.chips_per_replica
    queries = decode_tokens * query_tokens
    n = queries + prefill_tokens
    weights = 1e3 * plan.weights_read(n / plan.pp) / (plan.tp * plan.bandwidth)
    compute = 1e3 * 2.0 * m.active_params * n / (chips * plan.peak_flops)
    kv = _kv_read_ms(plan, decode_tokens, context_tokens)
    attention = _attention_ms(plan, queries, context_tokens, prefill_tokens, prefill_context)
    overhead = _overhead_ms(plan, decode_tokens)
    comm = _collectives_ms(plan, n / plan.pp)
    total = max(weights, compute) + kv + attention + overhead + comm
    return weights, compute, kv, attention, overhead, comm, total


def step_ms_array(
    plan: GPUPlan,
    decode_tokens: FloatArray,
    context_tokens: float,
    prefill_tokens: FloatArray,
    prefill_context: float,
) -> FloatArray:
    """:func:`decode_step_ms` over arrays of decoding sequences and prompt tokens (``float64[m]`` each, contexts
    shared), ms: :func:`step_terms`' terms in the same floating-point operations, so equal to the scalar model
    element by element (tests/test_inference_queue.py checks it on every catalog model). The open-loop model
    reads the step time on grids of ~50-100 population states per request rate."""
    import numpy as np  # here, not at the top: the scalar model (``voicebudget infer``'s start-up) loads no numpy

    m, chips = plan.model, plan.chips_per_replica
    n = decode_tokens + prefill_tokens
    dense, per_expert, e, k = plan._weight_parts
    read = dense + per_expert * e * (1.0 - (1.0 - k / e) ** np.maximum(n / plan.pp, 1.0)) if per_expert else dense
    weights = 1e3 * read / (plan.tp * plan.bandwidth)
    compute = 1e3 * 2.0 * m.active_params * n / (chips * plan.peak_flops)
    kv = _kv_read_ms(plan, decode_tokens, context_tokens)
    attention = _attention_ms(plan, decode_tokens, context_tokens, prefill_tokens, prefill_context)
    overhead = _overhead_ms(plan, decode_tokens)
    hops = (plan.pp - 1) * plan.hardware.collective_latency_ms
    comm = hops if plan.tp == 1 else _all_reduces_ms(plan, n / plan.pp) + hops
    out: FloatArray = np.maximum(weights, compute) + kv + attention + overhead + comm
    return out


def step_bound(terms: StepTerms) -> Bound:
    """What limits a step with these terms."""
    return _bound(*terms[:6])


def step_breakdown(terms: StepTerms, bound: Bound | None = None) -> StepBreakdown:
    """The :class:`StepBreakdown` of a step's terms (``bound`` default: the terms' own)."""
    weights, compute, kv, attention, overhead, comm, total = terms
    return StepBreakdown.model_construct(
        weights_ms=weights,
        compute_ms=compute,
        kv_cache_ms=kv,
        attention_ms=attention,
        overhead_ms=overhead,
        communication_ms=comm,
        total_ms=total,
        bound=step_bound(terms) if bound is None else bound,
    )


def decode_step_ms(
    plan: GPUPlan,
    decode_tokens: float,
    context_tokens: float,
    prefill_tokens: float,
    prefill_context: float,
    query_tokens: float = 1.0,
) -> float:
    """:func:`decode_step`'s total, ms."""
    return step_terms(plan, decode_tokens, context_tokens, prefill_tokens, prefill_context, query_tokens)[6]


def decode_step(
    plan: GPUPlan,
    decode_tokens: float,
    context_tokens: float,
    prefill_tokens: float,
    prefill_context: float,
    query_tokens: float = 1.0,
) -> StepBreakdown:
    """One continuous-batching step of one replica, ms.

    :param decode_tokens: sequences decoding in this step (``b``).
    :param context_tokens: their mean context length (``S``), tokens.
    :param prefill_tokens: prompt tokens prefilled in the same step (``p``).
    :param prefill_context: mean position of those prompt tokens (for their attention FLOPs).
    :param query_tokens: tokens each decoding sequence runs through the model in this step: 1 for plain
        decoding, ``V`` when speculative decoding verifies ``V`` drafted tokens (their GEMM and attention
        FLOPs count ``b V`` tokens; the sequence's KV cache is read once and the per-sequence cost is paid
        once).
    """
    return step_breakdown(
        step_terms(plan, decode_tokens, context_tokens, prefill_tokens, prefill_context, query_tokens)
    )


def _bound(weights: float, compute: float, kv: float, attention: float, overhead: float, comm: float) -> Bound:
    memory = (weights if weights >= compute else 0.0) + kv
    comp = (compute if compute > weights else 0.0) + attention
    terms: dict[Bound, float] = {
        "memory": memory,
        "compute": comp,
        "per-layer latency": overhead,
        "communication": comm,
    }
    return max(terms, key=lambda k: terms[k])


def prefill_ms(
    plan: GPUPlan,
    prompt_tokens: float,
    chunk_tokens: float,
    others_decoding: float,
    others_context: float,
    co_tokens: float = 0.0,
) -> float:
    """Prefill of one prompt in chunks of ``chunk_tokens``, sharing each step with ``others_decoding``
    decode tokens of other users and ``co_tokens`` prompt tokens of other requests, ms (excludes the wait for
    the running step).

    A prompt of ``P <= K`` tokens (``K = chunk_tokens``) is one step carrying it and, within the budget, the
    other prompts scheduled with it (``min(co_tokens, K - P)``): a continuous-batching scheduler forms each step
    from every prompt waiting at the step boundary (vLLM's chunked prefill, TensorRT-LLM's in-flight batching,
    first come first served), so under load the step that holds a prompt also holds the prompts that arrived
    during the step before it (the caller passes their mean token count). A longer prompt holds ``P / K`` steps'
    worth of the budget: its full chunks are steps of ``K`` prompt tokens, and its last, partial chunk shares a
    step with the next prompts in the queue, so it is charged its share ``r / K`` of a full step, not a whole
    step. TTFT is then continuous in the prompt length (a 2,050-token prompt at a 2,048-token budget costs a
    hair more than a 2,048-token one, not a second step's fixed costs; at ``P = K`` the co-scheduled share is 0
    from both sides).

    Attention FLOPs of a causal prompt of ``P`` tokens: ``P^2 / 2`` pairs at
    :meth:`ModelArch.attention_flops_per_pair` ``("prefill")`` (``2 * layers * P^2 * q_heads * head_dim`` for
    grouped-query attention); a co-scheduled prompt token attends to ``P / 2`` earlier tokens on average.
    Prefill runs stage after stage, so only one stage's ``tp`` chips count for its latency.
    """
    m = plan.model
    flops_chips = plan.tp  # one stage at a time

    def step(c: float, extra: float = 0.0) -> float:
        n = c + extra + others_decoding
        weights = 1e3 * plan.weights_read(n) / (plan.tp * plan.bandwidth)
        compute = 1e3 * 2.0 * m.active_params * n / (flops_chips * plan.peak_flops)
        kv = _kv_read_ms(plan, others_decoding, others_context)
        overhead = _overhead_ms(plan, others_decoding)
        return gemm_ms(plan, weights, compute, (c + extra) / n) + kv + overhead + _collectives_ms(plan, n)

    if prompt_tokens <= chunk_tokens:
        extra = min(max(co_tokens, 0.0), chunk_tokens - prompt_tokens)
        total = step(prompt_tokens, extra)
    else:
        extra = 0.0
        total = prompt_tokens / chunk_tokens * step(chunk_tokens)
    pairs = 0.5 * prompt_tokens * prompt_tokens * m.window_share(
        prompt_tokens, causal_prompt=True
    ) + 0.5 * extra * prompt_tokens * m.window_share(prompt_tokens / 2.0)
    return total + 1e3 * m.attention_flops_per_pair("prefill") * pairs / (flops_chips * plan.peak_flops)


def memory_need(plan: GPUPlan, concurrency_per_replica: int, context_tokens: float) -> MemoryUse:
    """Weights + KV cache of one replica vs its usable memory (``capacity_bytes`` before utilisation)."""
    kv = concurrency_per_replica * context_tokens * plan.kv_bytes_at(context_tokens)
    return MemoryUse.model_construct(
        weights_bytes=plan.total_weights, kv_cache_bytes=kv, capacity_bytes=plan.capacity_bytes
    )


LARGE_CHIP_BYTES = 70 * 2**30
"""vLLM's threshold for its larger scheduler defaults (device memory of at least 70 GiB, A100 excluded)."""

LARGE_STEP_BUDGET = 8192
"""Step budget on chips of at least :data:`LARGE_CHIP_BYTES` other than A100: vLLM's ``max_num_batched_tokens``
for its OpenAI-compatible server there (``EngineArgs.get_batch_defaults``, vllm/engine/arg_utils.py: 8192 "for GPUs
like H100 and MI300x", 2048 otherwise and on A100, where "setting large max_num_batched_tokens ... reduces
throughput", PR #17885), which is also TensorRT-LLM's ``max_num_tokens`` default (``BuildConfig.max_num_tokens``
8192); read 2026-12-02."""

SMALL_STEP_BUDGET = 2048
"""Step budget on smaller chips and A100: vLLM's OpenAI-server default there (as :data:`LARGE_STEP_BUDGET`)."""

PROMPT_SHARE_FLOOR = 1.0 / 8.0
"""Share of the step budget a running batch leaves to prompt tokens at least: a scheduler that gave every token
of a step to decoding sequences would never start a new prompt, so stacks cap the running batch below the budget
(vLLM's default ``max_num_seqs`` 1,024 against ``max_num_batched_tokens`` 8,192 leaves 7/8; the 1/8 floor is that
ratio, an assumption for other settings). Above ``7/8`` of the budget, requests wait for a slot."""


def default_step_budget(hw: Hardware) -> int:
    """The continuous-batching step budget serving stacks default to on ``hw``, tokens: :data:`LARGE_STEP_BUDGET` on
    chips of at least 70 GiB other than A100, else :data:`SMALL_STEP_BUDGET` (vLLM's rule)."""
    large = hw.memory_bytes >= LARGE_CHIP_BYTES and not hw.id.startswith("a100")
    return LARGE_STEP_BUDGET if large else SMALL_STEP_BUDGET


def admitted_requests(plan: GPUPlan, utilization: float | None, context_tokens: float) -> int:
    """Requests one replica's KV cache holds at ``context_tokens`` resident tokens each (at least 0): the memory
    :func:`usable_bytes` leaves after the weights, over one request's KV bytes."""
    per_request = context_tokens * plan.kv_bytes_at(context_tokens)
    room = _usable(plan.total_weights, plan.capacity_bytes, utilization) - plan.total_weights
    return max(int(room // per_request), 0) if per_request > 0 else 2**62


def fits(plan: GPUPlan, requests: int, context_tokens: float, utilization: float | None) -> bool:
    """Weights + the KV cache of ``requests`` requests at ``context_tokens`` resident tokens fit one replica's
    usable memory (:func:`usable_bytes`; the plain-float twin of :func:`memory_need` + :func:`check_fits`)."""
    need = plan.total_weights + requests * context_tokens * plan.kv_bytes_at(context_tokens)
    return need <= _usable(plan.total_weights, plan.capacity_bytes, utilization)


KV_FREE_MEMORY_FRACTION = 0.9
"""Default share of the memory left after the weights that the KV cache may take: TensorRT-LLM's
``kv_cache_free_gpu_mem_fraction`` (default 0.9), the rule audited deployments are sized by (NVIDIA's MLPerf
Inference v4.1 llama2-70b Server config, ``kvcache_free_gpu_mem_frac = 0.90``,
mlcommons/inference_results_v4.1 closed/NVIDIA/configs/llama2-70b/Server/__init__.py, read 2026-12-01)."""


def usable_bytes(use: MemoryUse, utilization: float | None) -> float:
    """Memory weights + KV cache may take, bytes: ``utilization`` of the capacity (vLLM's
    ``gpu_memory_utilization``) when given, else the weights plus :data:`KV_FREE_MEMORY_FRACTION` of the rest
    (TensorRT-LLM's rule; never less than 90% of the capacity when the weights fit)."""
    return _usable(use.weights_bytes, use.capacity_bytes, utilization)


def _usable(weights: float, capacity: float, utilization: float | None) -> float:
    if utilization is not None:
        return capacity * utilization
    if weights >= capacity:  # the weights alone do not fit: no rest to share
        return capacity * KV_FREE_MEMORY_FRACTION
    return weights + KV_FREE_MEMORY_FRACTION * (capacity - weights)


def _usable_rule(use: MemoryUse, utilization: float | None) -> str:
    if utilization is not None:
        return f"{utilization:.0%} of"
    if use.weights_bytes >= use.capacity_bytes:
        return f"{KV_FREE_MEMORY_FRACTION:.0%} of"
    return f"weights + {KV_FREE_MEMORY_FRACTION:.0%} of the rest of"


def check_fits(
    plan: GPUPlan, use: MemoryUse, utilization: float | None, concurrency: int, context: float, fewest: int | None
) -> None:
    """Raise :class:`ModelError` naming the gap when weights + KV exceed the usable memory (:func:`usable_bytes`)."""
    usable = usable_bytes(use, utilization)
    need = use.weights_bytes + use.kv_cache_bytes
    if need <= usable:
        return
    hw = plan.hardware
    where = f"{plan.model.name} {plan.compute_precision} on {plan.chips_per_replica} x {hw.name}" + (
        f" (tp {plan.tp}, pp {plan.pp})" if plan.chips_per_replica > 1 else ""
    )
    hint = f"; it fits on {fewest} chips" if fewest else ""
    raise ModelError(
        f"{where} does not fit: needs {need / 1e9:.1f} GB (weights {use.weights_bytes / 1e9:.1f} GB + KV cache "
        f"{use.kv_cache_bytes / 1e9:.1f} GB for {concurrency} x {context:,.0f} resident tokens, prompt + half the "
        f"output) but has {usable / 1e9:.1f} GB "
        f"usable ({_usable_rule(use, utilization)} {plan.chips_per_replica} x {hw.memory_bytes / 1e9:.0f} GB); "
        f"short by {(need - usable) / 1e9:.1f} GB{hint}"
    )
