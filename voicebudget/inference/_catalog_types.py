"""The catalog's types: accelerator hardware, model architectures, and a Hugging Face config reader.

Frozen, typed, validated on construction; the catalog's entries are in :mod:`._catalog_data`, the
lookups in :mod:`._catalog`. Users build their own :class:`Hardware` / :class:`ModelArch` (or give them
inline in a scenario file).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from voicebudget._errors import ModelError, ScenarioError
from voicebudget._model import DataModel
from voicebudget.inference._precision import PRECISION_BYTES, PRECISIONS, Precision

__all__ = [
    "PRECISIONS",
    "PRECISION_BYTES",
    "ChipPrice",
    "Hardware",
    "HostedPath",
    "ModelArch",
    "Precision",
    "SramTiming",
    "divisors",
    "model_from_hf_dict",
]


class _Frozen(DataModel):
    """The package's input-model base (its configuration is :data:`voicebudget._model.MODEL_CONFIG`)."""


class ChipPrice(_Frozen):
    """The price assumption behind a cost figure: US dollars per chip-hour, and where it comes from.

    At most US$ 1,000,000 (a wafer-scale system rents for tens of dollars an hour), so
    that every cost derived from it stays a finite number.
    """

    usd_per_chip_hour: float = Field(gt=0, le=1e6, allow_inf_nan=False)
    source: str = Field(min_length=1)


MAX_TERM_MS = 1000.0
"""A chip's fixed latency terms (a collective's floor and ring hop, an SRAM chip's per-layer, per-hop and per-step
times) are at most 1,000 ms: the catalog's largest is 1.12 ms (``groq-lpu``'s per-step time), so a second per
collective or per layer is a unit slip, and ``1e300`` gave TTFTs of 10^301 ms."""


class SramTiming(_Frozen):
    """Per-token latency terms of an SRAM-resident (wafer-scale / LPU) chip, ms.

    Per output token: ``layers * tau_layer_ms + (chips - 1) * tau_hop_ms + tau_step_ms``, never below
    the physical floor (weight bytes / SRAM bandwidth, FLOPs / peak). ``source`` says which
    published figures fixed them (they are fitted, not spec-sheet values).
    """

    tau_layer_ms: float = Field(ge=0, le=MAX_TERM_MS)
    tau_hop_ms: float = Field(ge=0, le=MAX_TERM_MS)
    tau_step_ms: float = Field(ge=0, le=MAX_TERM_MS)
    usable_sram_fraction: float = Field(gt=0, le=1)
    source: str = Field(min_length=1)
    generation: str = Field(default="user", min_length=1, max_length=40, pattern=r"^[a-z0-9][a-z0-9._-]*$")
    """Short id of the vendor software generation (``infer --software``, a wafer stage's ``software``)."""
    includes_speculative: bool = False
    """The vendor figures this generation was fitted to were measured with speculative decoding on: a
    ``speculative`` on top is then not applied (it would count the gain twice; the prediction says so)."""
    software: str = "unnamed (user-defined)"
    """What that generation is: speeds of one chip moved several-fold with software (Cerebras
    Llama-3.1-70B: ~450 tok/s at launch in Aug 2024, ~2,100 tok/s after the Oct 2024 update), so every
    prediction names it; ``Hardware.sram_history`` holds earlier generations to pick from."""


class HostedPath(_Frozen):
    """The hosted API path in front of a chip that users mostly reach as a provider's service (Cerebras,
    Groq): the network from the client to the provider and the provider's front end and queueing, as a
    log-normal overhead added to the chip time of each request (``WaferStage(path="hosted")``).

    The figures are a provider's measured TTFT at a small prompt minus the model's chip-time TTFT at that
    prompt (a few ms on these chips), so they include the measuring client's distance to the provider:
    pass your own ``hosted_overhead`` distribution when yours differs.

    :param provider: the service (``"Cerebras Inference API"``).
    :param overhead_p50_ms: median overhead, ms; ``overhead_p95_ms`` its 95th percentile (>= p50).
    :param source: where the figures come from, with the date read.
    """

    provider: str = Field(min_length=1)
    overhead_p50_ms: float = Field(gt=0, allow_inf_nan=False)
    overhead_p95_ms: float = Field(gt=0, allow_inf_nan=False)
    source: str = Field(min_length=1)

    @model_validator(mode="after")
    def _p95_ge_p50(self) -> HostedPath:
        if self.overhead_p95_ms < self.overhead_p50_ms:
            raise ValueError(f"overhead_p95_ms ({self.overhead_p95_ms:g}) < overhead_p50_ms ({self.overhead_p50_ms:g})")
        return self


HARDWARE_RANGES: dict[str, tuple[float, float, str]] = {
    "memory_bytes": (1e5, 1e15, "230 MB (groq-lpu) to 288 GB (mi355x)"),
    "memory_bandwidth_bytes_per_s": (1e8, 1e20, "300 GB/s (l4) to 21 PB/s (wse-3)"),
    "bf16_flops_per_s": (1e11, 1e21, "121 TFLOP/s (l4) to 125 PFLOP/s (wse-3)"),
    "fp8_flops_per_s": (1e11, 1e21, "243 TFLOP/s (l4) to 5 PFLOP/s (mi355x)"),
    "fp4_flops_per_s": (1e11, 1e21, "9 PFLOP/s (b200) to 15 PFLOP/s (gb300)"),
    "scaleup_link_bytes_per_s": (1e6, 1e16, "32 GB/s (a100-pcie-80gb) to 900 GB/s (gb300)"),
}
"""A chip's figures that the model divides by -> (lowest, highest, what the catalog spans): at least
1,000x beyond the catalog's own range either side (its entries cite their spec sheets; ``voicebudget
hardware`` lists them). A figure outside is a typo or a unit slip (``864`` for 864 GB/s) that would give
TTFTs of 10^16 ms or ``inf`` (5e-324 B/s), so a :class:`Hardware` refuses it."""


class Hardware(_Frozen):
    """One accelerator chip (a GPU, a wafer, an LPU), per chip.

    Its memory, bandwidth and FLOP/s figures must be within :data:`HARDWARE_RANGES` (1,000x beyond the
    catalog's range either side).

    :param memory_kind: ``"hbm"`` for GPUs (weights streamed from HBM every step) or ``"sram"`` for
        chips that keep the weights on chip (wafer-scale, LPU).
    :param scaleup_link_bytes_per_s: one-direction bandwidth of the scale-up link (NVLink, ...).
    :param collective_latency_ms: fixed latency of one small all-reduce across a tensor-parallel pair
        (launch + one link hop); a ring over ``tp`` chips adds one hop per extra step (``_gpu``).
    :param scaleup_topology: how the chips of one tensor-parallel group connect: ``"nvswitch"``
        (NVLink through switches, every pair at full link speed), ``"xgmi"`` (AMD Infinity Fabric,
        point-to-point links, one to each other GPU of an 8-GPU board; RCCL runs its rings over all of
        them at once, so the all-reduce is charged the aggregate ``scaleup_link_bytes_per_s`` as on
        NVSwitch), ``"pcie"`` (through the host's PCIe switches; all-reduces reach
        ``PCIE_ALLREDUCE_EFFICIENCY`` of the link figure, ``_gpu``), ``"torus"`` (chip-to-chip links
        in a 2D torus: TPU ICI, Trainium NeuronLink), ``"ethernet"`` (RDMA over Converged Ethernet
        ports on the chip: Gaudi), ``"none"`` (SRAM chips that pipeline layers).
    :param collective_hop_latency_ms: latency of each further step of a ring all-reduce beyond a pair:
        a ring over ``tp`` chips takes ``2 (tp - 1)`` steps, so ``tp`` chips pay
        ``collective_latency_ms + 2 (tp - 2) * collective_hop_latency_ms`` per all-reduce. Default 0.5 us
        (NVLink/NVSwitch; assumption: one link traversal plus the NCCL step hand-off); 8 us over PCIe.
    :param max_tensor_parallel: the largest tensor-parallel group (one NVLink domain).
    :param software_efficiency: how much of the fitted GPU efficiencies (memory and compute) this chip's
        serving stack achieves, relative to the stack the calibration rows ran (1.0: TensorRT-LLM on
        NVIDIA). It multiplies ``memory_efficiency`` and both compute efficiencies; sourced per entry in
        ``software_efficiency_source`` and shown by ``voicebudget hardware``.
    :param sram: per-token latency terms; required when ``memory_kind == "sram"``. They describe the latest
        vendor software generation (the default); ``sram_history`` holds earlier ones, picked by
        :meth:`with_software` (``infer --software``, a wafer stage's ``software``).
    :param price: $/chip-hour with its source, or ``None`` when no public price is known.
    :param hosted: the measured hosted API path of a chip mostly reached as a service (wafer/LPU
        providers); a scenario's ``wafer`` stage on it adds that path unless ``path = "on-prem"``.
    """

    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    memory_kind: Literal["hbm", "sram"] = "hbm"
    memory_bytes: float = Field(gt=0)
    memory_bandwidth_bytes_per_s: float = Field(gt=0)
    bf16_flops_per_s: float = Field(gt=0)
    fp8_flops_per_s: float | None = Field(default=None, gt=0)
    fp4_flops_per_s: float | None = Field(default=None, gt=0)
    scaleup_link_bytes_per_s: float = Field(gt=0)
    collective_latency_ms: float = Field(default=0.008, ge=0, le=MAX_TERM_MS)
    scaleup_topology: Literal["nvswitch", "xgmi", "pcie", "torus", "ethernet", "none"] = "nvswitch"
    collective_hop_latency_ms: float = Field(default=0.0005, ge=0, le=MAX_TERM_MS)
    software_efficiency: float = Field(default=1.0, gt=0, le=2)
    software_efficiency_source: str = "the calibration rows' stack (TensorRT-LLM / NIM, FasterTransformer on NVIDIA)"
    max_tensor_parallel: int = Field(default=8, ge=1)
    sram: SramTiming | None = None
    sram_history: tuple[SramTiming, ...] = ()
    price: ChipPrice | None = None
    hosted: HostedPath | None = None
    source: str = Field(min_length=1)

    @model_validator(mode="after")
    def _plausible_figures(self) -> Hardware:
        for name, (low, high, spans) in HARDWARE_RANGES.items():
            value = getattr(self, name)
            if value is not None and not low <= value <= high:
                raise ValueError(
                    f"{name}: must be within {low:g} to {high:g} (the catalog spans {spans}; 1,000x beyond "
                    f"either side), got {value:g}"
                )
        return self

    @model_validator(mode="after")
    def _sram_needs_timing(self) -> Hardware:
        if self.memory_kind == "sram" and self.sram is None:
            raise ValueError("memory_kind 'sram' needs an 'sram' table (tau_layer_ms, tau_hop_ms, tau_step_ms, ...)")
        if self.sram_history and self.sram is None:
            raise ValueError("sram_history holds earlier software generations of 'sram': give 'sram' too")
        ids = [t.generation for t in self.sram_generations]
        if len(set(ids)) != len(ids):
            raise ValueError(f"software generations must have distinct ids, got {ids}")
        return self

    @property
    def sram_generations(self) -> tuple[SramTiming, ...]:
        """The SRAM timings of every software generation, the latest (the default) first."""
        return ((self.sram,) if self.sram is not None else ()) + self.sram_history

    def with_software(self, generation: str | None) -> Hardware:
        """This chip with the SRAM timings of software ``generation`` (``None``: the latest, unchanged).

        :raises ModelError: the chip has no SRAM timings (a GPU), or no such generation (the message
            lists the known ones).
        """
        if generation is None:
            return self
        if self.sram is None:
            raise ModelError(
                f"software {generation!r}: software generations are wafer/LPU timings; {self.name} "
                "is a GPU (its serving stack is software_efficiency)"
            )
        for t in self.sram_generations:
            if t.generation == generation.strip().lower():
                return self if t is self.sram else self.model_copy(update={"sram": t})
        known = ", ".join(t.generation for t in self.sram_generations)
        raise ModelError(
            f"unknown software generation {generation!r} for {self.name}; known: {known} (the first is the default)"
        )

    def flops_per_s(self, precision: str) -> float:
        """Dense peak for GEMMs in ``precision``; a format the chip lacks runs at the next wider one."""
        if precision == "fp4" and self.fp4_flops_per_s is not None:
            return self.fp4_flops_per_s
        if precision in ("fp4", "fp8") and self.fp8_flops_per_s is not None:
            return self.fp8_flops_per_s
        return self.bf16_flops_per_s


class ModelArch(_Frozen):
    """A decoder-only transformer's architecture (dense or mixture-of-experts).

    :param total_params: every parameter (weights stored).
    :param active_params: parameters used per token (== total for dense models).
    :param experts: routed experts per MoE layer (``None`` for dense).
    :param moe_layers: layers with routed experts (default: all layers when ``experts`` is set).
    :param native_precision: the precision of the released weights.
    :param native_expert_precision: released precision of the routed experts when it differs
        (gpt-oss ships MXFP4 experts).
    :param max_context_tokens: the longest sequence (prompt + output tokens) the model is released
        for, from its ``config.json`` ``max_position_embeddings`` (the source says which variant);
        ``None`` (the default for user-defined models): not checked.
    :param kv_lora_rank: multi-head latent attention (MLA, DeepSeek-V2/V3): the width of the compressed
        KV latent cached per token per layer (``kv_lora_rank``). With it, ``kv_heads`` must be 1 (one latent
        shared by every head: a tensor-parallel group holds it whole on each chip, as vLLM and SGLang do
        without data-parallel attention), ``head_dim`` is the query/key head width
        (``qk_nope_head_dim + qk_rope_head_dim``) and ``rope_head_dim`` is required.
    :param rope_head_dim: MLA's decoupled RoPE key width (``qk_rope_head_dim``), cached next to the latent.
    :param v_head_dim: the value head width when it differs from ``head_dim`` (MLA: ``v_head_dim``).
    :param sliding_window: tokens a local-attention layer attends to and keeps in its KV cache (Gemma 3's
        ``sliding_window`` 1024, gpt-oss's 128, Llama-4's ``attention_chunk_size`` 8192, treated as a window);
        required when ``sliding_layers > 0``.
    :param sliding_layers: how many of the ``layers`` use that local attention (Gemma 3 27B: 52 of 62, five
        local to one global); the others attend to the whole context. ``0``: every layer is global.
    """

    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    total_params: float = Field(gt=0)
    active_params: float = Field(gt=0)
    layers: int = Field(ge=1)
    d_model: int = Field(ge=1)
    q_heads: int = Field(ge=1)
    kv_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    experts: int | None = Field(default=None, ge=1)
    experts_per_token: int | None = Field(default=None, ge=1)
    moe_layers: int | None = Field(default=None, ge=1)
    native_precision: Precision = "bf16"
    native_expert_precision: Precision | None = None
    max_context_tokens: int | None = Field(default=None, ge=1)
    kv_lora_rank: int | None = Field(default=None, ge=1)
    rope_head_dim: int | None = Field(default=None, ge=1)
    v_head_dim: int | None = Field(default=None, ge=1)
    sliding_window: int | None = Field(default=None, ge=1)
    sliding_layers: int = Field(default=0, ge=0)
    source: str = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> ModelArch:
        if (self.kv_lora_rank is None) != (self.rope_head_dim is None):
            raise ValueError("multi-head latent attention needs both kv_lora_rank and rope_head_dim, or neither")
        if self.kv_lora_rank is not None and self.kv_heads != 1:
            raise ValueError(
                f"multi-head latent attention caches one latent shared by every head: kv_heads must be "
                f"1, got {self.kv_heads}"
            )
        if self.sliding_layers > self.layers:
            raise ValueError(f"sliding_layers ({self.sliding_layers}) > layers ({self.layers})")
        if self.sliding_layers > 0 and self.sliding_window is None:
            raise ValueError("sliding_layers > 0 needs a sliding_window (tokens each local layer attends to)")
        if self.active_params > self.total_params:
            raise ValueError(f"active_params ({self.active_params:g}) > total_params ({self.total_params:g})")
        if (self.experts is None) != (self.experts_per_token is None):
            raise ValueError("give both experts and experts_per_token, or neither")
        if self.experts is not None and self.experts_per_token is not None and self.experts_per_token > self.experts:
            raise ValueError("experts_per_token > experts")
        return self

    @property
    def is_moe(self) -> bool:
        """Mixture-of-experts whose routing leaves experts idle (``experts_per_token < experts``). With
        ``experts_per_token == experts`` every expert runs on every token: the weights read per step are
        a dense model's, and one expert's size cannot be told from the two totals (they are equal)."""
        return self.experts is not None and self.experts_per_token is not None and self.experts > self.experts_per_token

    @property
    def n_moe_layers(self) -> int:
        """Layers with routed experts."""
        return (self.moe_layers or self.layers) if self.is_moe else 0

    @property
    def expert_params(self) -> float:
        """Parameters of one routed expert in one layer: ``(total - active) / (moe_layers * (E - k))``.

        Derived from the two totals so dense + routed parameters add up to both of them exactly.
        """
        if not self.is_moe:
            return 0.0
        assert self.experts is not None
        assert self.experts_per_token is not None
        return (self.total_params - self.active_params) / (self.n_moe_layers * (self.experts - self.experts_per_token))

    @property
    def routed_params(self) -> float:
        """All routed-expert parameters."""
        return self.expert_params * self.n_moe_layers * (self.experts or 0)

    def tensor_parallel_options(self, limit: int | None = None) -> list[int]:
        """Tensor-parallel degrees this model splits into, ascending (up to ``limit`` when given).

        A degree ``tp`` must divide the query heads, and either divide the KV heads or be a multiple
        of them (each KV head is then replicated on ``tp / kv_heads`` chips): the rule vLLM's
        attention layers assert (vllm/model_executor/models/llama.py, ``LlamaAttention``).
        """
        return [t for t in divisors(self.q_heads, limit) if self.kv_heads % t == 0 or t % self.kv_heads == 0]

    def kv_replication(self, tp: int) -> float:
        """Copies of each KV head a tensor-parallel group of ``tp`` chips holds: ``max(1, tp / kv_heads)``."""
        return max(1.0, tp / self.kv_heads)

    @property
    def is_mla(self) -> bool:
        """Multi-head latent attention (a compressed KV latent instead of per-head keys and values)."""
        return self.kv_lora_rank is not None

    def window_share(self, context_tokens: float | None, *, causal_prompt: bool = False) -> float:
        """The share of a full-attention model's KV cache (and of its attention pairs) this model keeps at a
        context of ``S`` tokens: ``(global_layers + sliding_layers * min(1, W / S)) / layers``.

        ``1.0`` without local layers, or when ``context_tokens`` is ``None`` (the per-token upper bound).
        With ``causal_prompt`` the pairs of a whole causal prompt of ``S`` tokens are meant: a local layer sees
        ``min(i, W)`` keys at position ``i``, so it keeps ``2 W / S - (W / S)^2`` of the ``S^2 / 2`` pairs when
        ``S > W``. A mean context stands for every sequence of a batch (exact when all are longer than
        ``W``, an over-count otherwise).
        """
        if self.sliding_layers == 0 or self.sliding_window is None or context_tokens is None or context_tokens <= 0:
            return 1.0
        w = min(1.0, self.sliding_window / context_tokens)
        local = 2.0 * w - w * w if causal_prompt else w
        return ((self.layers - self.sliding_layers) + self.sliding_layers * local) / self.layers

    def kv_elements_per_token(self, context_tokens: float | None = None) -> float:
        """KV-cache elements per token across all layers (a mean over a sequence of ``context_tokens``).

        Grouped-query (and multi-head) attention: ``2 * layers * kv_heads * head_dim`` (a key and a value per
        KV head). Multi-head latent attention: ``layers * (kv_lora_rank + rope_head_dim)``, the compressed
        latent and the decoupled RoPE key (DeepSeek-V3 technical report, arXiv:2412.19437, section 2.1.1:
        only these two are cached during generation), e.g. ``61 * (512 + 64) = 35,136`` for DeepSeek-V3.
        Local-attention layers keep only their window: times :meth:`window_share` of ``context_tokens``
        (``None``: every layer counted whole, the upper bound).
        """
        if self.kv_lora_rank is not None and self.rope_head_dim is not None:
            full = float(self.layers * (self.kv_lora_rank + self.rope_head_dim))
        else:
            full = 2.0 * self.layers * self.kv_heads * self.head_dim
        return full * self.window_share(context_tokens)

    def attention_flops_per_pair(self, phase: Literal["decode", "prefill"]) -> float:
        """Attention FLOPs for one (query token, cached token) pair across all layers (scores + weighted sum).

        Grouped-query attention, either phase: ``2 * layers * q_heads * (head_dim + v_head_dim)``
        (``= 4 * layers * q_heads * head_dim`` when the widths match). A causal prompt of ``P`` tokens has
        ``P^2 / 2`` pairs.

        Multi-head latent attention differs by phase (assumption, as DeepSeek's reference inference code,
        vLLM and SGLang run it): at **decode** the key and value up-projections are absorbed into the query
        and output projections, so each head scores against the cached latent plus RoPE key and sums over the
        latent: ``2 * layers * q_heads * (2 * kv_lora_rank + rope_head_dim)`` per pair (DeepSeek-V3: 1,088
        per head per layer, versus 320 for the decompressed form) while reading only the cached latent; at
        **prefill** the latent is decompressed into per-head keys and values (compute-friendlier), so the
        pair costs ``2 * layers * q_heads * (head_dim + v_head_dim)``. The projections themselves are in
        ``2 * active_params`` per token either way.
        """
        v_dim = self.v_head_dim or self.head_dim
        if phase == "decode" and self.kv_lora_rank is not None and self.rope_head_dim is not None:
            return 2.0 * self.layers * self.q_heads * (2 * self.kv_lora_rank + self.rope_head_dim)
        return 2.0 * self.layers * self.q_heads * (self.head_dim + v_dim)


def divisors(n: int, limit: int | None = None) -> list[int]:
    """The divisors of ``n >= 1`` up to ``limit`` (all when None), ascending; ``O(min(limit, sqrt(n)))``
    steps, so a count of 2^31 heads or chips costs ~46,000 steps, not 2^31."""
    root = math.isqrt(n)
    if limit is not None and limit <= root:
        return [d for d in range(1, limit + 1) if n % d == 0]
    small = [d for d in range(1, root + 1) if n % d == 0]
    found = small + [n // d for d in reversed(small) if n // d != d]
    return found if limit is None else [d for d in found if d <= limit]


MAX_CONFIG_INT = 2**31 - 1
"""Largest count a model config may give (layers, widths, heads, experts, vocabulary, context); the largest
released models stay below 2^24 in every field (Llama 4 Scout's 10,485,760-token context). Counts are
used in closed forms, never looped over, so this bounds the numbers, not the time."""


def _shown(value: object) -> str:
    """A config value for a message: its repr, cut at 40 characters (a 4,000-digit integer, a long text)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _cfg_int(cfg: dict[str, Any], where: str, key: str, default: int | None = None) -> int:
    value = cfg.get(key)
    if value is None:  # absent or null ("head_dim": null in some releases): the default, if any
        value = default
    if value is None:
        raise ScenarioError(
            "missing (a Hugging Face config.json of a decoder-only model gives num_hidden_layers, "
            "hidden_size, num_attention_heads, intermediate_size, vocab_size)",
            origin=where,
            field=key,
        )
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ScenarioError(f"must be a positive integer, got {_shown(value)}", origin=where, field=key)
    if value > MAX_CONFIG_INT:
        raise ScenarioError(f"must be at most {MAX_CONFIG_INT:,} (2^31 - 1), got {value:.3g}", origin=where, field=key)
    return value


_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "bf16"}


class UnmodelledPrecision(UserWarning):
    """A Hugging Face config's weight format the model does not read (an AWQ/GPTQ/bitsandbytes
    ``quantization_config``, an unknown ``torch_dtype``): the weights are then taken as bf16."""


def _moe_layer_count(cfg: dict[str, Any], where: str, layers: int) -> int:
    """Layers with routed experts: Llama-4's ``moe_layers`` list or ``interleave_moe_layer_step`` (every
    ``step``-th layer from ``step - 1``, transformers ``Llama4TextConfig``), else DeepSeek/GLM's
    ``first_k_dense_replace`` dense layers then every ``moe_layer_freq``-th layer (vLLM ``deepseek_v2.py``)."""
    listed = cfg.get("moe_layers")
    if isinstance(listed, list) and listed:
        if not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < layers for i in listed):
            raise ScenarioError(f"must list layer indices in [0, {layers})", origin=where, field="moe_layers")
        return len(set(listed))
    if cfg.get("interleave_moe_layer_step") is not None:
        step = _cfg_int(cfg, where, "interleave_moe_layer_step")
        return len(range(step - 1, layers, step))
    first = cfg.get("first_k_dense_replace") or 0
    if isinstance(first, bool) or not isinstance(first, int) or not 0 <= first < layers:
        raise ScenarioError(
            f"must be an integer in [0, {layers}), got {_shown(first)}", origin=where, field="first_k_dense_replace"
        )
    freq = _cfg_int(cfg, where, "moe_layer_freq", 1)
    return (layers - 1) // freq - (first - 1) // freq  # the multiples of freq in [first, layers)


def _local_attention(cfg: dict[str, Any], where: str, layers: int) -> dict[str, Any]:
    """``sliding_window`` / ``sliding_layers`` from a config: the ``layer_types`` list (``sliding_attention``:
    gpt-oss, newer Gemma configs), Llama-4's chunked attention (``attention_chunk_size`` on the RoPE layers of
    ``no_rope_layers``, else all but every ``no_rope_layer_interval``-th, default 4: transformers
    ``Llama4TextConfig``), Gemma's ``sliding_window_pattern`` (every ``pattern``-th layer global; Gemma 2
    alternates), else ``sliding_window`` on every layer (Mistral-7B-v0.1) unless ``use_sliding_window`` is
    false (Qwen configs carry a window they do not use)."""
    types = cfg.get("layer_types")
    if isinstance(types, list) and len(types) != layers:
        raise ScenarioError(
            f"lists {len(types)} layers, but num_hidden_layers is {layers}", origin=where, field="layer_types"
        )
    if isinstance(types, list) and all(isinstance(t, str) for t in types):
        n = sum(1 for t in types if t in ("sliding_attention", "chunked_attention"))
        if n == 0:
            return {}
        key = "sliding_window" if cfg.get("sliding_window") else "attention_chunk_size"
        return {"sliding_window": _cfg_int(cfg, where, key), "sliding_layers": n}
    if cfg.get("attention_chunk_size"):
        chunk = _cfg_int(cfg, where, "attention_chunk_size")
        flags = cfg.get("no_rope_layers")
        if isinstance(flags, list) and len(flags) == layers:
            n = sum(1 for f in flags if f)
        else:
            interval = _cfg_int(cfg, where, "no_rope_layer_interval", 4)
            n = layers - layers // interval  # all but every interval-th layer
        return {"sliding_window": chunk, "sliding_layers": n} if n else {}
    if not cfg.get("sliding_window") or cfg.get("use_sliding_window") is False:
        return {}
    window = _cfg_int(cfg, where, "sliding_window")
    default_pattern = 2 if str(cfg.get("model_type", "")).startswith("gemma2") else None
    pattern = cfg.get("sliding_window_pattern", default_pattern)
    if pattern is None:
        return {"sliding_window": window, "sliding_layers": layers}
    step = _cfg_int(cfg, where, "sliding_window_pattern", default_pattern)
    return {"sliding_window": window, "sliding_layers": layers - layers // step}  # all but every step-th


def _attention_params(cfg: dict[str, Any], where: str, d: int, heads: int) -> tuple[int, dict[str, Any]]:
    """Attention weights of one layer and the :class:`ModelArch` attention fields (module docstring of
    ``_hfconfig``)."""
    if cfg.get("kv_lora_rank"):
        r = _cfg_int(cfg, where, "kv_lora_rank")
        rope = _cfg_int(cfg, where, "qk_rope_head_dim")
        nope = _cfg_int(cfg, where, "qk_nope_head_dim")
        vh = _cfg_int(cfg, where, "v_head_dim")
        qk = nope + rope
        # queries: low-rank (W_DQ d x q_rank, W_UQ q_rank x H*qk) or full (d x H*qk); the joint KV down-projection
        # with the RoPE key (d x (r + rope)); key/value up-projections (r x H*(nope + v)); output (H*v x d).
        if cfg.get("q_lora_rank"):
            q_rank = _cfg_int(cfg, where, "q_lora_rank")
            q = d * q_rank + q_rank * heads * qk
        else:
            q = d * heads * qk
        attn = q + d * (r + rope) + r * heads * (nope + vh) + heads * vh * d
        return attn, {"kv_heads": 1, "head_dim": qk, "v_head_dim": vh, "kv_lora_rank": r, "rope_head_dim": rope}
    kv = _cfg_int(cfg, where, "num_key_value_heads", heads)
    if heads % kv:  # grouped-query attention: each KV head serves heads / kv query heads
        raise ScenarioError(
            f"must divide num_attention_heads ({heads}) (grouped-query attention), got {kv}",
            origin=where,
            field="num_key_value_heads",
        )
    hd = _cfg_int(cfg, where, "head_dim", d // heads)
    return d * heads * hd + 2 * d * kv * hd + heads * hd * d, {"kv_heads": kv, "head_dim": hd}


def model_from_hf_dict(
    cfg: dict[str, Any], *, ident: str, name: str, source: str, where: str = "<config>"
) -> ModelArch:
    """A :class:`ModelArch` from the fields of a Hugging Face ``config.json`` (parsed), parameters counted
    from them (``_hfconfig`` module docstring).

    :raises ScenarioError: a missing or invalid field (named).
    """
    if isinstance(cfg.get("text_config"), dict):
        cfg = {**cfg, **cfg["text_config"]}
    layers = _cfg_int(cfg, where, "num_hidden_layers")
    d = _cfg_int(cfg, where, "hidden_size")
    heads = _cfg_int(cfg, where, "num_attention_heads")
    inter = _cfg_int(cfg, where, "intermediate_size")
    vocab = _cfg_int(cfg, where, "vocab_size")
    attn, attn_fields = _attention_params(cfg, where, d, heads)
    experts = cfg.get("num_local_experts") or cfg.get("num_experts") or cfg.get("n_routed_experts")
    per_tok = cfg.get("num_experts_per_tok")
    emb = vocab * d * (1 if cfg.get("tie_word_embeddings", False) else 2)
    if experts:
        e = _cfg_int(
            cfg,
            where,
            "num_local_experts"
            if cfg.get("num_local_experts")
            else ("num_experts" if cfg.get("num_experts") else "n_routed_experts"),
        )
        k = _cfg_int(cfg, where, "num_experts_per_tok")
        if k > e:
            raise ScenarioError(
                f"must be at most the number of routed experts ({e}), got {k}",
                origin=where,
                field="num_experts_per_tok",
            )
        ie = _cfg_int(cfg, where, "moe_intermediate_size", inter)
        moe_layers = _moe_layer_count(cfg, where, layers)
        dense_layers = layers - moe_layers
        # Llama-4's dense layers use intermediate_size_mlp; each of its MoE layers has one shared expert of
        # intermediate_size that no config field names (transformers Llama4TextMoe.shared_expert).
        dense_inter = _cfg_int(cfg, where, "intermediate_size_mlp", inter)
        llama4_shared = str(cfg.get("model_type", "")).startswith("llama4")
        for key in ("shared_expert_intermediate_size", "n_shared_experts"):
            count = cfg.get(key)
            if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
                raise ScenarioError(f"must be an integer >= 0, got {count!r}", origin=where, field=key)
        shared = (
            3
            * d
            * int(
                cfg.get("shared_expert_intermediate_size")
                or (int(cfg.get("n_shared_experts") or (1 if llama4_shared else 0)) * ie)
            )
        )
        common = emb + layers * attn + dense_layers * 3 * d * dense_inter + moe_layers * (shared + d * e)
        total = common + moe_layers * e * 3 * d * ie
        active = common + moe_layers * k * 3 * d * ie
        moe: dict[str, Any] = {"experts": e, "experts_per_token": k, "moe_layers": moe_layers}
    else:
        if per_tok:
            raise ScenarioError(
                "given without a number of experts (num_local_experts)", origin=where, field="num_experts_per_tok"
            )
        total = active = emb + layers * (attn + 3 * d * inter)
        moe = {}
    quant = cfg.get("quantization_config") or {}
    method = str(quant.get("quant_method", "")).lower() if isinstance(quant, dict) else ""
    dtype = str(cfg.get("torch_dtype", "bfloat16"))
    native = "fp8" if method == "fp8" else _DTYPES.get(dtype, "bf16")
    if (method or "fp8") not in ("fp8", "mxfp4") or (not method and dtype not in _DTYPES):
        what = f"quantization_config.quant_method {method!r}" if method else f"torch_dtype {dtype!r}"
        warnings.warn(
            f"{where}: {what} is not modelled: the weights are taken as bf16 (2 bytes each); give the precision "
            "they are served at (precision = 'fp8' or 'fp4', infer --precision)",
            UnmodelledPrecision,
            stacklevel=2,
        )
    context = (
        _cfg_int(cfg, where, "max_position_embeddings") if cfg.get("max_position_embeddings") is not None else None
    )
    fields = {
        "id": ident,
        "name": name,
        "total_params": float(total),
        "active_params": float(active),
        "layers": layers,
        "d_model": d,
        "q_heads": heads,
        **attn_fields,
        **_local_attention(cfg, where, layers),
        "native_precision": native,
        "native_expert_precision": "fp4" if method == "mxfp4" else None,
        "max_context_tokens": context,
        "source": source,
        **moe,
    }
    try:
        return ModelArch.model_validate(fields)
    except ValidationError as exc:  # a combination of fields no checked one above catches
        first = exc.errors()[0]
        raise ScenarioError(f"the fields do not describe a model: {first['msg']}", origin=where) from None
