"""SRAM-resident inference (Cerebras WSE-3 wafers, Groq LPUs): weights live on chip.

Chips needed: ``ceil((weights + KV cache) / (sram_bytes * usable_sram_fraction))``. Measured speeds
are far below the SRAM-bandwidth bound and track the layer count and the number of chips a token
crosses, so per output token (docs/design.md section 4)::

    T_token = max(layers * tau_layer + (chips - 1) * tau_hop + tau_step,  floor)
    floor   = max(weight bytes / (chips * SRAM BW),  2 * active / (chips * peak FLOP/s))

The model is a pipeline across chips: sharding adds hop latency per token but not a throughput
cost, so the deployment's throughput is ``concurrency / T_token`` up to the floor's limit (one
token in flight per pipeline position); this is an upper bound that the vendors do not publish.
TTFT is the prompt's FLOPs at the chips' peak plus one pipeline traversal (``T_token``); the API
path (network, queueing) is not included.
"""

from __future__ import annotations

import math

from voicebudget._errors import ModelError
from voicebudget.inference._catalog import Hardware, ModelArch, SramTiming
from voicebudget.inference._gpu import kv_bytes_per_token, total_weights_bytes
from voicebudget.inference._types import Bound, MemoryUse, StepBreakdown

__all__ = ["wafer_chips_needed", "wafer_prefill_ms", "wafer_token_step"]


def _timing(hw: Hardware) -> SramTiming:
    if hw.sram is None:  # pragma: no cover - guarded by Hardware validation
        raise ModelError(f"{hw.name} is not an SRAM-resident chip")
    return hw.sram


def wafer_memory(
    model: ModelArch, hw: Hardware, precision: str | None, kv_precision: str, concurrency: int, context: int, chips: int
) -> MemoryUse:
    """Weights + KV bytes and the chips' total SRAM (``precision`` None: the released precision mix)."""
    w = total_weights_bytes(model, precision)
    kv = concurrency * context * kv_bytes_per_token(model, kv_precision, context)
    return MemoryUse.model_construct(weights_bytes=w, kv_cache_bytes=kv, capacity_bytes=chips * hw.memory_bytes)


def wafer_chips_needed(
    model: ModelArch, hw: Hardware, precision: str | None, kv_precision: str, concurrency: int, context: int
) -> int:
    """Fewest chips whose usable SRAM holds the weights and the KV cache."""
    use = wafer_memory(model, hw, precision, kv_precision, concurrency, context, 1)
    usable = hw.memory_bytes * _timing(hw).usable_sram_fraction
    return max(1, math.ceil((use.weights_bytes + use.kv_cache_bytes) / usable))


def check_wafer_fits(
    model: ModelArch,
    hw: Hardware,
    precision: str | None,
    use: MemoryUse,
    chips: int,
    needed: int,
    concurrency: int,
    context: int,
) -> None:
    """Raise :class:`ModelError` naming the gap when the chips' SRAM cannot hold the model."""
    if chips >= needed:
        return
    frac = _timing(hw).usable_sram_fraction
    usable = use.capacity_bytes * frac
    need = use.weights_bytes + use.kv_cache_bytes
    raise ModelError(
        f"{model.name} {precision or model.native_precision} on {chips} x {hw.name} does not fit: "
        f"needs {need / 1e9:.1f} GB of SRAM "
        f"(weights {use.weights_bytes / 1e9:.1f} GB + KV cache {use.kv_cache_bytes / 1e9:.1f} GB for "
        f"{concurrency} x {context} tokens) but has {usable / 1e9:.2f} GB usable ({frac:.0%} of {chips} x "
        f"{hw.memory_bytes / 1e9:g} GB); short by {(need - usable) / 1e9:.1f} GB; it fits on {needed} chips"
    )


def wafer_token_step(model: ModelArch, hw: Hardware, precision: str | None, chips: int) -> StepBreakdown:
    """Per-output-token time of one request, ms, with its terms."""
    t = _timing(hw)
    layer = model.layers * t.tau_layer_ms + t.tau_step_ms
    hops = (chips - 1) * t.tau_hop_ms
    weights = 1e3 * total_weights_bytes(model, precision) / (chips * hw.memory_bandwidth_bytes_per_s)
    compute = 1e3 * 2.0 * model.active_params / (chips * hw.flops_per_s(precision or model.native_precision))
    floor = max(weights, compute)
    latency = layer + hops
    total = max(latency, floor)
    bound: Bound
    if floor > latency:
        bound = "memory" if weights >= compute else "compute"
    else:
        bound = "communication" if hops > layer else "per-layer latency"
    return StepBreakdown.model_construct(
        weights_ms=weights,
        compute_ms=compute,
        kv_cache_ms=0.0,
        attention_ms=0.0,
        overhead_ms=layer,
        communication_ms=hops,
        total_ms=total,
        bound=bound,
    )


def wafer_prefill_ms(
    model: ModelArch, hw: Hardware, precision: str | None, chips: int, prompt_tokens: float, token_ms: float
) -> float:
    """TTFT on SRAM chips: the prompt's FLOPs (linear + causal attention) at the chips' peak plus one
    pipeline traversal, ms."""
    flops = 2.0 * model.active_params * prompt_tokens
    flops += (
        0.5
        * model.attention_flops_per_pair("prefill")
        * prompt_tokens
        * prompt_tokens
        * model.window_share(prompt_tokens, causal_prompt=True)
    )
    return 1e3 * flops / (chips * hw.flops_per_s(precision or model.native_precision)) + token_ms
