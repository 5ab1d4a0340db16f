"""Catalogs of accelerator hardware and model architectures: frozen, typed, each entry sourced.

Spec-sheet values come from ``docs/reference/hardware-specs.csv`` and ``models.csv`` (their
sources are repeated on each entry). Users add their own entries inline in a scenario file
(``hardware = {...}`` instead of an id) or in code by building :class:`Hardware` /
:class:`ModelArch` directly.
"""

from __future__ import annotations

import typing
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from voicebudget._errors import ModelError, ScenarioError
from voicebudget._model import DataModel

__all__ = [
    "HARDWARE",
    "MODELS",
    "MODEL_ALIASES",
    "PRECISION_BYTES",
    "ChipPrice",
    "Hardware",
    "HostedPath",
    "ModelArch",
    "Precision",
    "SramTiming",
    "get_hardware",
    "get_model",
]

Precision = Literal["bf16", "fp16", "fp8", "fp4"]
"""Number format of weights (and, by default, of the KV cache)."""

PRECISIONS: tuple[str, ...] = typing.get_args(Precision)
"""The precisions, in order (the CLI's ``--precision`` choices)."""

PRECISION_BYTES: dict[str, float] = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "fp4": 0.5625}
"""Bytes per parameter. fp4 is NVFP4: 4-bit values plus one fp8 scale per 16 values = 4.5 bits
(NVIDIA, "Introducing NVFP4", developer.nvidia.com blog, 2025-06)."""


class _Frozen(DataModel):
    """The package's input-model base (its configuration is :data:`voicebudget._model.MODEL_CONFIG`)."""


class ChipPrice(_Frozen):
    """The price assumption behind a cost figure: US dollars per chip-hour, and where it comes from.

    At most US$ 1,000,000 (a wafer-scale system rents for tens of dollars an hour), so
    that every cost derived from it stays a finite number.
    """

    usd_per_chip_hour: float = Field(gt=0, le=1e6, allow_inf_nan=False)
    source: str = Field(min_length=1)


class SramTiming(_Frozen):
    """Per-token latency terms of an SRAM-resident (wafer-scale / LPU) chip, ms.

    Per output token: ``layers * tau_layer_ms + (chips - 1) * tau_hop_ms + tau_step_ms``, never below
    the physical floor (weight bytes / SRAM bandwidth, FLOPs / peak). ``source`` says which
    published figures fixed them (they are fitted, not spec-sheet values).
    """

    tau_layer_ms: float = Field(ge=0)
    tau_hop_ms: float = Field(ge=0)
    tau_step_ms: float = Field(ge=0)
    usable_sram_fraction: float = Field(gt=0, le=1)
    source: str = Field(min_length=1)
    generation: str = Field(default="user", min_length=1, max_length=40, pattern=r"^[a-z0-9][a-z0-9._-]*$")
    """Short id of the vendor software generation (``infer --software``, a wafer stage's ``software``)."""
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


class Hardware(_Frozen):
    """One accelerator chip (a GPU, a wafer, an LPU), per chip.

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
    collective_latency_ms: float = Field(default=0.008, ge=0)
    scaleup_topology: Literal["nvswitch", "xgmi", "pcie", "torus", "ethernet", "none"] = "nvswitch"
    collective_hop_latency_ms: float = Field(default=0.0005, ge=0)
    software_efficiency: float = Field(default=1.0, gt=0, le=2)
    software_efficiency_source: str = "the calibration rows' stack (TensorRT-LLM / NIM, FasterTransformer on NVIDIA)"
    max_tensor_parallel: int = Field(default=8, ge=1)
    sram: SramTiming | None = None
    sram_history: tuple[SramTiming, ...] = ()
    price: ChipPrice | None = None
    hosted: HostedPath | None = None
    source: str = Field(min_length=1)

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
        """Mixture-of-experts (routed experts)."""
        return self.experts is not None and self.experts_per_token is not None and self.experts > 1

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
        return [
            t
            for t in range(1, self.q_heads + 1)
            if self.q_heads % t == 0
            and (self.kv_heads % t == 0 or t % self.kv_heads == 0)
            and (limit is None or t <= limit)
        ]

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
        raise ScenarioError(f"must be a positive integer, got {value!r}", origin=where, field=key)
    return value


_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "bf16"}


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
            f"must be an integer in [0, {layers}), got {first!r}", origin=where, field="first_k_dense_replace"
        )
    freq = _cfg_int(cfg, where, "moe_layer_freq", 1)
    return sum(1 for i in range(first, layers) if i % freq == 0)


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
            n = sum(1 for i in range(layers) if (i + 1) % interval != 0)
        return {"sliding_window": chunk, "sliding_layers": n} if n else {}
    if not cfg.get("sliding_window") or cfg.get("use_sliding_window") is False:
        return {}
    window = _cfg_int(cfg, where, "sliding_window")
    default_pattern = 2 if str(cfg.get("model_type", "")).startswith("gemma2") else None
    pattern = cfg.get("sliding_window_pattern", default_pattern)
    if pattern is None:
        return {"sliding_window": window, "sliding_layers": layers}
    step = _cfg_int(cfg, where, "sliding_window_pattern", default_pattern)
    return {"sliding_window": window, "sliding_layers": sum(1 for i in range(layers) if (i + 1) % step != 0)}


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
    native = "fp8" if method == "fp8" else _DTYPES.get(str(cfg.get("torch_dtype", "bfloat16")), "bf16")
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


def _hw(**kw: object) -> Hardware:
    return Hardware.model_validate(kw)


_SPECS = "docs/reference/hardware-specs.csv"
_PRICE_SRC = "mercatus-ai.com/blog/cloud-gpu-pricing (May 2026), specialty-cloud on-demand range midpoint"

HARDWARE: dict[str, Hardware] = {
    h.id: h
    for h in (
        _hw(
            id="a100-40gb",
            name="NVIDIA A100 SXM 40GB",
            memory_bytes=40e9,
            memory_bandwidth_bytes_per_s=1.555e12,
            bf16_flops_per_s=312e12,
            scaleup_link_bytes_per_s=300e9,
            source="NVIDIA A100 datasheet (1.555 TB/s, 312 TFLOP/s bf16 dense, NVLink3 600 GB/s bidirectional); "
            "8 us collective floor as for H100 (cli99/llm-analysis)",
        ),
        _hw(
            id="a100-80gb",
            name="NVIDIA A100 SXM 80GB",
            memory_bytes=80e9,
            memory_bandwidth_bytes_per_s=2.0e12,
            bf16_flops_per_s=312e12,
            scaleup_link_bytes_per_s=300e9,
            price=ChipPrice(usd_per_chip_hour=1.30, source=_PRICE_SRC + " ($1.10-1.50)"),
            source="NVIDIA A100 datasheet (2.0 TB/s, 312 TFLOP/s bf16 dense); TensorRT-LLM v0.5 performance.md",
        ),
        _hw(
            id="a100-pcie-80gb",
            name="NVIDIA A100 PCIe 80GB",
            memory_bytes=80e9,
            memory_bandwidth_bytes_per_s=1.935e12,
            bf16_flops_per_s=312e12,
            scaleup_link_bytes_per_s=32e9,
            scaleup_topology="pcie",
            collective_latency_ms=0.025,
            collective_hop_latency_ms=0.008,
            source="NVIDIA A100 datasheet, PCIe 80GB column (1,935 GB/s, 312 TFLOP/s bf16 dense, PCIe Gen4 "
            "64 GB/s both directions = 32 GB/s one way); no NVLink bridge assumed (Azure NC A100 v4); "
            "25 us all-reduce floor and 8 us per further ring step through the PCIe root complex (assumption, "
            "about 3x and 8x the NVLink figures)",
        ),
        _hw(
            id="h100-pcie",
            name="NVIDIA H100 PCIe 80GB",
            memory_bytes=80e9,
            memory_bandwidth_bytes_per_s=2.0e12,
            bf16_flops_per_s=756.5e12,
            fp8_flops_per_s=1513e12,
            scaleup_link_bytes_per_s=64e9,
            scaleup_topology="pcie",
            collective_latency_ms=0.025,
            collective_hop_latency_ms=0.008,
            price=ChipPrice(
                usd_per_chip_hour=2.19,
                source="gpu.blog/gpus/nvidia-h100-pcie (read 2026-12-01): "
                "on-demand $1.99 (Civo) to $2.39 (RunPod), midpoint",
            ),
            source="NVIDIA H100 spec table, PCIe column (archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html, read "
            "2026-12-01): 80 GB HBM2e, 2,000 GB/s, BF16 1,513 / FP8 3,026 TFLOPS with sparsity (dense: "
            "half), PCIe Gen5 128 GB/s both directions (64 GB/s one way; the 600 GB/s NVLink bridge joins "
            "pairs only, not modelled); NVIDIA H100 PCIe product brief PB-11133-001_v02 (> 2,000 GB/s, "
            "350 W); PCIe collective latencies as a100-pcie-80gb (assumption)",
        ),
        _hw(
            id="l40s",
            name="NVIDIA L40S",
            memory_bytes=48e9,
            memory_bandwidth_bytes_per_s=864e9,
            bf16_flops_per_s=362.05e12,
            fp8_flops_per_s=733e12,
            scaleup_link_bytes_per_s=32e9,
            scaleup_topology="pcie",
            collective_latency_ms=0.025,
            collective_hop_latency_ms=0.008,
            source="NVIDIA L40S datasheet table as reproduced at mullet.se/product.html?product_id=355414 and "
            "itcreations.com/nvidia-gpu/nvidia-l40s-gpu-accelerator (read 2026-12-01): 48 GB GDDR6, "
            "864 GB/s, BF16 362.05 (733 sparse) / FP8 733 (1,466 sparse) TFLOPS, PCIe Gen4 x16 64 GB/s "
            "both directions, no NVLink; PCIe collective latencies as a100-pcie-80gb (assumption)",
        ),
        _hw(
            id="l4",
            name="NVIDIA L4",
            memory_bytes=24e9,
            memory_bandwidth_bytes_per_s=300e9,
            bf16_flops_per_s=121e12,
            fp8_flops_per_s=242.5e12,
            scaleup_link_bytes_per_s=32e9,
            scaleup_topology="pcie",
            collective_latency_ms=0.025,
            collective_hop_latency_ms=0.008,
            source="NVIDIA L4 datasheet figures as quoted at store.sourcecode.com (compare 125/9820) and "
            "grokipedia.com/page/NVIDIA_L4_vs_L40S (read 2026-12-01): 24 GB GDDR6, 300 GB/s, FP16/BF16 242 "
            "and FP8 485 TFLOPS with sparsity (dense: half), PCIe Gen4 x16, 72 W; PCIe collective "
            "latencies as a100-pcie-80gb (assumption)",
        ),
        _hw(
            id="h100-sxm",
            name="NVIDIA H100 SXM",
            memory_bytes=80e9,
            memory_bandwidth_bytes_per_s=3.35e12,
            bf16_flops_per_s=989e12,
            fp8_flops_per_s=1979e12,
            scaleup_link_bytes_per_s=450e9,
            price=ChipPrice(usd_per_chip_hour=3.00, source=_PRICE_SRC + " ($2.50-3.50)"),
            source=f"{_SPECS}: NVIDIA H100 datasheet; jax-ml/scaling-book gpus.md; "
            "cli99/llm-analysis h100-sxm-80gb.json (8 us small-message floor)",
        ),
        _hw(
            id="h200",
            name="NVIDIA H200 SXM",
            memory_bytes=141e9,
            memory_bandwidth_bytes_per_s=4.8e12,
            bf16_flops_per_s=989e12,
            fp8_flops_per_s=1979e12,
            scaleup_link_bytes_per_s=450e9,
            price=ChipPrice(usd_per_chip_hour=4.00, source=_PRICE_SRC + " ($3.50-4.50)"),
            source=f"{_SPECS}: NVIDIA H200 datasheet; MLPerf v4.1 H200 system json",
        ),
        _hw(
            id="b200",
            name="NVIDIA B200",
            memory_bytes=180e9,
            memory_bandwidth_bytes_per_s=8.0e12,
            bf16_flops_per_s=2250e12,
            fp8_flops_per_s=4500e12,
            fp4_flops_per_s=9000e12,
            scaleup_link_bytes_per_s=900e9,
            source=f"{_SPECS}: jax-ml/scaling-book; MLPerf v6.0 B200 system json; "
            "collective floor as H100 (assumption)",
        ),
        _hw(
            id="gb200",
            name="NVIDIA GB200 NVL72 (per GPU)",
            memory_bytes=186e9,
            memory_bandwidth_bytes_per_s=8.0e12,
            bf16_flops_per_s=2500e12,
            fp8_flops_per_s=5000e12,
            fp4_flops_per_s=10000e12,
            scaleup_link_bytes_per_s=900e9,
            collective_latency_ms=0.008,
            max_tensor_parallel=72,
            source=f"{_SPECS}: NVIDIA GB200 NVL72 figures; MLPerf v5.1 GB200 system json (186 GB); one NVLink "
            "domain of 72 GPUs; collective floor as H100 (GenZ assumes 0.25 us per hop, not per all-reduce)",
        ),
        _hw(
            id="mi300x",
            name="AMD Instinct MI300X",
            memory_bytes=192e9,
            memory_bandwidth_bytes_per_s=5.3e12,
            bf16_flops_per_s=1307e12,
            fp8_flops_per_s=2615e12,
            scaleup_link_bytes_per_s=400e9,
            scaleup_topology="xgmi",
            software_efficiency=0.70,
            software_efficiency_source="set so that 8 x MI300X serve Llama-2-70B fp8 at 0.975x the tokens/s of "
            "8 x H100 at saturation: AMD's MLPerf Inference v4.1 result, 'within 2-3% of "
            "NVIDIA DGX H100' in Server and Offline at FP8 (AMD announcement, Aug 2024, as "
            "summarised by partofstyle.com; read 2026-11-30); specs alone give 1.35x",
            source=f"{_SPECS}: AMD MI300X datasheet; MLPerf v4.1 AMD system json; GenZ system_configs.py (400 GB/s); "
            "collective floor as H100 (assumption)",
        ),
        _hw(
            id="mi325x",
            name="AMD Instinct MI325X",
            memory_bytes=256e9,
            memory_bandwidth_bytes_per_s=6.0e12,
            bf16_flops_per_s=1307.4e12,
            fp8_flops_per_s=2614.9e12,
            scaleup_link_bytes_per_s=400e9,
            scaleup_topology="xgmi",
            software_efficiency=0.70,
            software_efficiency_source="as mi300x (same CDNA 3 compute dies and ROCm serving stack; assumption)",
            price=ChipPrice(
                usd_per_chip_hour=2.13,
                source="awesomeagents.ai/hardware/amd-mi325x (read 2026-12-01): cloud rental $2.00-2.25/h, midpoint",
            ),
            source="AMD MI325X specifications as tabulated at awesomeagents.ai/hardware/amd-mi325x and "
            "wiaix.com/amd-instincttm-mi325x-accelerators (read 2026-12-01): 256 GB HBM3E, 6 TB/s, FP16/BF16 "
            "1,307.4 and FP8 2,614.9 TFLOPS dense (5,229.8 sparse), seven Infinity Fabric links joining 8 GPUs "
            "(link bandwidth and collective floor as mi300x)",
        ),
        _hw(
            id="mi355x",
            name="AMD Instinct MI355X",
            memory_bytes=288e9,
            memory_bandwidth_bytes_per_s=8.0e12,
            bf16_flops_per_s=2.52e15,
            fp8_flops_per_s=5.03e15,
            fp4_flops_per_s=10.05e15,
            scaleup_link_bytes_per_s=400e9,
            scaleup_topology="xgmi",
            software_efficiency=0.90,
            software_efficiency_source="set so that the fp8 compute-bound peak times efficiency is B200's "
            "(5.03 x 0.90 = 4.53 vs 4.5 PFLOP/s): MI355X matched B200 on Llama-2-70B "
            "throughput in MLPerf Inference v6.0 (aiwiki.ai/wiki/amd_instinct_mi355x, "
            "read 2026-12-01); both have 8 TB/s, so memory-bound decode is at 0.9x B200 "
            "(assumption)",
            source="AMD MI355X figures read 2026-12-01: 288 GB HBM3E and 8 TB/s (tomshardware.com 'AMD's Instinct "
            "MI355X accelerator will consume 1,400 watts', ISC 2025; MLPerf Inference v6.0 AMD system json, "
            "288 GB); "
            "FP8 5 PFLOP/s dense (ISSCC 2026 paper as reported at world-today-news.com/?p=7253162: 8,192 FP8 "
            "FLOPs per clock per CU, x 256 CUs (ROCm GPU specifications table) x 2.4 GHz (Hot Chips 2025, "
            "wccftech) = 5.03 PFLOP/s); FP16/BF16 2.52 PFLOP/s dense (table at "
            "gangliao.me/blog/2026/amd-gpu-architecture-deep-dive: the row is labelled FP32 but gives MI300X "
            "1.31 PFLOP/s, its FP16 matrix rate; = 4,096 FLOPs/clock/CU x 256 x 2.4 GHz); FP4 20.1 PFLOP/s "
            "with sparsity "
            "(svethardware.cz, tomshardware.com), dense half; Infinity Fabric link bandwidth and collective "
            "floor as mi300x (assumption)",
        ),
        _hw(
            id="gb300",
            name="NVIDIA GB300 NVL72 (per GPU)",
            memory_bytes=279e9,
            memory_bandwidth_bytes_per_s=8.0e12,
            bf16_flops_per_s=2.5e15,
            fp8_flops_per_s=5.0e15,
            fp4_flops_per_s=15.0e15,
            scaleup_link_bytes_per_s=900e9,
            collective_latency_ms=0.008,
            max_tensor_parallel=72,
            source="NVIDIA GB300 NVL72 rack figures (GTC 2025), as quoted at glennklockwood.com/garden/processors/B300 "
            "and vendordeep.com (read 2026-12-01): 1,080 PFLOP/s dense FP4 (1,440 sparse), 360 PFLOP/s dense "
            "FP8, 20 TB HBM3e at 576 TB/s across 72 GPUs = 15 / 5 PFLOP/s and 8 TB/s per GPU; per-GPU "
            "dense BF16 2.5 PFLOP/s and 279 GB usable HBM3e (288 GB nominal, 12-high stacks) from the "
            "per-GPU table at verda.com/blog/gb300-nvl72-architecture; NVLink 5 1.8 TB/s both directions, "
            "one 72-GPU domain; collective floor as gb200 (assumption)",
        ),
        _hw(
            id="gh200",
            name="NVIDIA GH200 Grace Hopper (96 GB HBM3)",
            memory_bytes=96e9,
            memory_bandwidth_bytes_per_s=4.0e12,
            bf16_flops_per_s=989e12,
            fp8_flops_per_s=1979e12,
            scaleup_link_bytes_per_s=450e9,
            source="NVIDIA GH200 figures read 2026-12-01: 96 GB HBM3 at 4 TB/s beside 480 GB LPDDR5X on the Grace CPU "
            "(NVIDIA's Aug 2023 announcement as reported at nishikiout.net/entry/2023/08/09/143040; "
            "spheron.network/blog/nvidia-gh200-guide); the GPU is an H100, so FLOP/s as h100-sxm (assumption: "
            "same clocks); the CPU's LPDDR5X (NVLink-C2C, 900 GB/s both directions) is not used for weights or "
            "KV cache here; GPU-to-GPU over NVLink 4 (450 GB/s one way) through the NVLink Switch System, "
            "8 per group as h100-sxm (assumption). The HBM3e variant is left out: its figures differ between "
            "NVIDIA's announcement (141 GB, 5 TB/s) and later datasheets (144 GB, 4.9 TB/s)",
        ),
        _hw(
            id="h20",
            name="NVIDIA H20",
            memory_bytes=96e9,
            memory_bandwidth_bytes_per_s=4.0e12,
            bf16_flops_per_s=148e12,
            scaleup_link_bytes_per_s=450e9,
            source="NVIDIA publishes no H20 datasheet page; figures as reported at willitrunai.com/es/gpus/h20-96gb "
            "and zangshuxian.com/new/674733024499207168 (read 2026-12-01): 96 GB HBM3, 4.0 TB/s, FP16/BF16 148 "
            "TFLOP/s dense, INT8 296 TOPS, NVLink 900 GB/s both directions (450 one way), 400 W. No FP8 figure "
            "in those sources: fp8 runs at the bf16 rate here (Hopper's FP8 usually equals its INT8 rate: "
            "pass --hardware-config to model that); collective floor as h100-sxm (assumption)",
        ),
        _hw(
            id="tpu-v5e",
            name="Google Cloud TPU v5e",
            memory_bytes=16e9,
            memory_bandwidth_bytes_per_s=819e9,
            bf16_flops_per_s=197e12,
            scaleup_link_bytes_per_s=200e9,
            scaleup_topology="torus",
            collective_latency_ms=0.001,
            software_efficiency_source="1.0, the default: no published serving-efficiency figure for JetStream / "
            "vLLM on TPU against TensorRT-LLM (assumption)",
            source="Google Cloud TPU v5e page, docs.cloud.google.com/tpu/docs/v5e (read 2026-12-01): 197 TFLOP/s bf16 "
            "(393 int8 TOPS, no fp8), 16 GB HBM2 (one version of the page says 16 GiB: the smaller is used), "
            "819 GB/s, inter-chip interconnect 400 GB/s per chip both directions over 4 ports (200 GB/s one "
            "way), 8 chips per host, 2D torus; 1 us small-message floor from jax-ml/scaling-book "
            f"({_SPECS})",
        ),
        _hw(
            id="tpu-v6e",
            name="Google Cloud TPU v6e (Trillium)",
            memory_bytes=32e9,
            memory_bandwidth_bytes_per_s=1638e9,
            bf16_flops_per_s=918e12,
            scaleup_link_bytes_per_s=400e9,
            scaleup_topology="torus",
            collective_latency_ms=0.001,
            software_efficiency_source="1.0, the default: no published serving-efficiency figure for JetStream / "
            "vLLM on TPU against TensorRT-LLM (assumption)",
            source="Google Cloud TPU v6e page, docs.cloud.google.com/tpu/docs/v6e (read 2026-12-01): 918 TFLOP/s bf16 "
            "(1,836 int8 TOPS, no fp8), 32 GB HBM, 1,638 GB/s, inter-chip interconnect 800 GB/s per chip both "
            "directions over 4 ports (400 GB/s one way), 8 chips per host, 2D torus; 1 us small-message floor "
            f"from jax-ml/scaling-book ({_SPECS})",
        ),
        _hw(
            id="trainium2",
            name="AWS Trainium2",
            memory_bytes=96 * 2**30,
            memory_bandwidth_bytes_per_s=2.9e12,
            bf16_flops_per_s=667e12,
            fp8_flops_per_s=1299e12,
            scaleup_link_bytes_per_s=640e9,
            scaleup_topology="torus",
            max_tensor_parallel=16,
            software_efficiency_source="1.0, the default: no published serving-efficiency figure for the Neuron SDK "
            "(NxD Inference) against TensorRT-LLM (assumption)",
            source="AWS Neuron documentation, Trainium2 architecture (aws-neuron/aws-neuron-sdk "
            "about-neuron/arch/neuron-hardware/trainium2.rst, read 2026-12-01): 667 BF16/FP16 and 1,299 FP8 "
            "TFLOP/s dense (2,563 sparse), 96 GiB HBM at 2.9 TB/s, NeuronLink-v3 1.28 TB/s per chip (taken as "
            "both directions: 640 GB/s one way, assumption); 16 chips per Trn2 instance as the largest "
            "tensor-parallel group (assumption); collective floor as h100-sxm (assumption)",
        ),
        _hw(
            id="gaudi3",
            name="Intel Gaudi 3",
            memory_bytes=128e9,
            memory_bandwidth_bytes_per_s=3.67e12,
            bf16_flops_per_s=1835e12,
            fp8_flops_per_s=1835e12,
            scaleup_link_bytes_per_s=600e9,
            scaleup_topology="ethernet",
            software_efficiency_source="1.0, the default: no published serving-efficiency figure for the Intel Gaudi "
            "software stack (vLLM / Optimum Habana) against TensorRT-LLM (assumption)",
            source="Intel, 'Intel Gaudi 3 AI Accelerator: Architected for Gen AI Training and Inference' (Hot Chips "
            "2024, R. Kaplan), spec table as reproduced at sgpjbg.com/baogao/465025.html (read 2026-12-01): "
            "BF16 and FP8 matrix 1,835 TFLOP/s, 128 GB HBM2e, 3.67 TB/s, 24 x 200 GbE RoCE = 1,200 GB/s both "
            "directions (600 GB/s one way; all 8 cards of a node joined directly, modelled as one group of 8), "
            "PCIe Gen5 x16; collective floor as h100-sxm (assumption: RoCE is likely slower)",
        ),
        _hw(
            id="wse-3",
            name="Cerebras WSE-3 (CS-3)",
            memory_kind="sram",
            memory_bytes=44e9,
            memory_bandwidth_bytes_per_s=21e15,
            bf16_flops_per_s=125e15,
            scaleup_link_bytes_per_s=150e9,
            collective_latency_ms=0.0,
            max_tensor_parallel=1,
            sram=SramTiming(
                tau_layer_ms=0.0041,
                tau_hop_ms=0.002,
                tau_step_ms=0.37,
                usable_sram_fraction=0.9,
                generation="2024-11",
                software="Cerebras Inference from the Oct/Nov 2024 update on (Llama-3.1-405B at 969 tok/s across 21 "
                "wafers, Nov 2024; Qwen3-235B ~1,450 tok/s, 2025), without speculative decoding",
                source="tau_layer and tau_step fitted (minimax relative error) to Cerebras Llama-3.1-8B 1800 tok/s "
                "(blog, Aug 2024), Llama-3.1-405B 969 tok/s (2024-11-20), Qwen3-235B 1450 tok/s (models page); "
                "tau_hop assumption: one 100GbE switch + NIC hop ~2 us for a 32 KB activation; "
                "usable SRAM 90% (assumption: the rest holds activations and code)",
            ),
            sram_history=(
                SramTiming(
                    tau_layer_ms=0.0041,
                    tau_hop_ms=0.51,
                    tau_step_ms=0.37,
                    usable_sram_fraction=0.9,
                    generation="2024-08",
                    software="Cerebras Inference at launch (Aug 2024): Llama-3.1-8B ~1,800 and Llama-3.1-70B ~450 "
                    "tok/s; wafer-to-wafer I/O not yet overlapped with compute",
                    source="tau_layer, tau_step and usable SRAM as 2024-11 (the single-wafer Llama-3.1-8B 1800 tok/s "
                    "of Aug 2024 fixed them); tau_hop 0.51 ms solved from Artificial Analysis' launch-day "
                    "measurement of Llama-3.1-70B on Cerebras, >446 output tok/s on 4 wafers (as quoted by "
                    "williamspurlock.com/blog/cerebras-inference-launch-llama-3-1-august-2024, read "
                    "2026-12-01); what changed: Cerebras' Oct 2024 release notes say the first implementation "
                    "used a fraction of the wafer's I/O capacity and that wafer I/O now runs asynchronously "
                    "from compute (quoted in news.ycombinator.com item 41942822, read 2026-12-01); 70B reached "
                    "2,148 tok/s after it (danielkim.sh/blog/how-is-cerebras-so-fast, read 2026-12-01)",
                ),
            ),
            hosted=HostedPath(
                provider="Cerebras Inference API",
                overhead_p50_ms=239.0,
                overhead_p95_ms=558.0,
                source="p50: Cerebras' TTFT of 0.24 s for Llama-3.1-405B (vendor figure, Tom's Hardware 2024-11-20, "
                "read 2026-12-01) minus the model's ~1 ms chip-time TTFT; p95: p50 x 2.33, the p95/p50 ratio "
                "of TTFT measured for the other SRAM-chip hosts (Groq 120/280 ms, SambaNova 150/350 ms; "
                "tokenmix.ai/blog/ai-api-latency-benchmark, 10,000+ requests, April 2026, read 2026-12-01); "
                "assumption: Cerebras' tail is alike (no Cerebras p95 is published)",
            ),
            source="Cerebras WSE-3 launch (Mar 2024): 44 GB SRAM, 21 PB/s, 125 PFLOP/s peak AI compute (used as the "
            "prefill peak; dense figure not published); CS-3 I/O 1.2 Tb/s (12x100 GbE)",
        ),
        _hw(
            id="groq-lpu",
            name="Groq LPU (TSP v1)",
            memory_kind="sram",
            memory_bytes=0.23e9,
            memory_bandwidth_bytes_per_s=80e12,
            bf16_flops_per_s=188e12,
            scaleup_link_bytes_per_s=512e9,
            collective_latency_ms=0.0,
            max_tensor_parallel=1,
            sram=SramTiming(
                tau_layer_ms=0.0,
                tau_hop_ms=0.0037,
                tau_step_ms=1.12,
                usable_sram_fraction=1.0,
                generation="2024-02",
                software="GroqCloud as of Feb 2024 (Llama-2 at 750 / 300 tok/s), without speculative decoding",
                source="tau_hop and tau_step solved from two Groq figures of one source (TechPowerUp, Feb 2024): "
                "Llama-2-7B 750 tok/s (2048 context) and Llama-2-70B 300 tok/s (4096 context), bf16 weights; "
                "per-layer time folded into the chip-to-chip hops (the LPU pipeline is hop-dominated)",
            ),
            hosted=HostedPath(
                provider="GroqCloud API",
                overhead_p50_ms=114.0,
                overhead_p95_ms=274.0,
                source="GroqCloud Llama-3.3-70B TTFT p50 120 / p95 280 ms at 2K-token prompts (10,000+ requests from "
                "US East; tokenmix.ai/blog/ai-api-latency-benchmark, April 2026, read 2026-12-01) minus the "
                "model's 6 ms chip-time TTFT at that prompt; consistent with 163 ms warm median via OpenRouter "
                "(krabarena.org, proxy floor subtracted) and ~250 ms for Llama-3.1-70B (Artificial Analysis as "
                "summarised by managedmodels.com, early 2026), both read 2026-12-01",
            ),
            source=f"{_SPECS}: Groq LPU figures (TechPowerUp Feb 2024); Groq ISCA 2022 (220 MiB SRAM, 16 C2C links)",
        ),
    )
}
"""Hardware catalog by id."""


def _m(**kw: object) -> ModelArch:
    return ModelArch.model_validate(kw)


MODELS: dict[str, ModelArch] = {
    m.id: m
    for m in (
        _m(
            id="llama-3.1-8b",
            name="Llama-3.1-8B",
            total_params=8.03e9,
            active_params=8.03e9,
            layers=32,
            d_model=4096,
            q_heads=32,
            kv_heads=8,
            head_dim=128,
            max_context_tokens=131072,
            source="meta-llama/Llama-3.1-8B config.json (max_position_embeddings 131072)",
        ),
        _m(
            id="llama-3.1-70b",
            name="Llama-3.1-70B",
            total_params=70.6e9,
            active_params=70.6e9,
            layers=80,
            d_model=8192,
            q_heads=64,
            kv_heads=8,
            head_dim=128,
            max_context_tokens=131072,
            source="meta-llama/Llama-3.1-70B config.json (max_position_embeddings 131072; "
            "Llama-3.3-70B: same architecture and context)",
        ),
        _m(
            id="llama-3.1-405b",
            name="Llama-3.1-405B",
            total_params=405.9e9,
            active_params=405.9e9,
            layers=126,
            d_model=16384,
            q_heads=128,
            kv_heads=8,
            head_dim=128,
            max_context_tokens=131072,
            source="meta-llama/Llama-3.1-405B config.json (max_position_embeddings 131072)",
        ),
        _m(
            id="llama-2-7b",
            name="Llama-2-7B",
            total_params=6.74e9,
            active_params=6.74e9,
            layers=32,
            d_model=4096,
            q_heads=32,
            kv_heads=32,
            head_dim=128,
            max_context_tokens=4096,
            source="meta-llama/Llama-2-7b-hf config.json (6.74e9 parameters, multi-head attention, "
            "max_position_embeddings 4096)",
        ),
        _m(
            id="llama-2-70b",
            name="Llama-2-70B",
            total_params=69e9,
            active_params=69e9,
            layers=80,
            d_model=8192,
            q_heads=64,
            kv_heads=8,
            head_dim=128,
            max_context_tokens=4096,
            source="meta-llama/Llama-2-70b-hf config.json (max_position_embeddings 4096)",
        ),
        _m(
            id="glm-4.7",
            name="GLM-4.7",
            total_params=358e9,
            active_params=32e9,
            layers=92,
            d_model=5120,
            q_heads=96,
            kv_heads=8,
            head_dim=128,
            experts=160,
            experts_per_token=8,
            moe_layers=89,
            max_context_tokens=202752,
            source="NVIDIA Megatron-Bridge glm45.md; Cerebras GLM-4.7 migration notes (3 dense + 89 MoE layers); "
            "context: zai-org/GLM-4.7 config.json max_position_embeddings 202752 (docs.z.ai GLM-4.7: "
            "200K; deepinfra.com/zai-org/GLM-4.7: 202,752)",
        ),
        _m(
            id="gpt-oss-120b",
            name="gpt-oss-120b",
            total_params=116.8e9,
            active_params=5.1e9,
            layers=36,
            d_model=2880,
            q_heads=64,
            kv_heads=8,
            head_dim=64,
            experts=128,
            experts_per_token=4,
            native_expert_precision="fp4",
            sliding_window=128,
            sliding_layers=18,
            max_context_tokens=131072,
            source="openai/gpt-oss-120b config.json (MXFP4 expert weights; layer_types alternate sliding_attention "
            "and full_attention, sliding_window 128: 18 of 36 layers keep 128 tokens of KV cache, modelled "
            "since 2026-12-01; max_position_embeddings 131072)",
        ),
        _m(
            id="gpt-oss-20b",
            name="gpt-oss-20b",
            total_params=20.91e9,
            active_params=3.61e9,
            layers=24,
            d_model=2880,
            q_heads=64,
            kv_heads=8,
            head_dim=64,
            experts=32,
            experts_per_token=4,
            native_expert_precision="fp4",
            max_context_tokens=131072,
            sliding_window=128,
            sliding_layers=12,
            source="openai/gpt-oss-20b config.json, a verbatim copy in a public repository found with the code "
            "index (file id 31112482743, read 2026-12-01): 24 layers, hidden 2880, 64 query / 8 KV heads of "
            "64, 32 local experts, 4 per token, MXFP4 experts, vocab 201088, untied head, "
            "max_position_embeddings 131072; counted from those fields: 20.91e9 total, 3.61e9 active "
            "without the input embedding table (OpenAI's model card convention, as gpt-oss-120b's 5.1e9); "
            "layer_types alternate sliding (window 128) and full attention: 12 of 24 layers local",
        ),
        _m(
            id="qwen3-235b-a22b",
            name="Qwen3-235B-A22B",
            total_params=235e9,
            active_params=22e9,
            layers=94,
            d_model=4096,
            q_heads=64,
            kv_heads=4,
            head_dim=128,
            experts=128,
            experts_per_token=8,
            max_context_tokens=32768,
            source="Qwen/Qwen3-235B-A22B config.json; context: the model card's native 32,768 tokens "
            "(131,072 needs YaRN rope scaling, off by default: define the model inline to use it)",
        ),
        _m(
            id="mixtral-8x7b",
            name="Mixtral-8x7B",
            total_params=46.7e9,
            active_params=12.9e9,
            layers=32,
            d_model=4096,
            q_heads=32,
            kv_heads=8,
            head_dim=128,
            experts=8,
            experts_per_token=2,
            max_context_tokens=32768,
            source="mistralai/Mixtral-8x7B-v0.1 config.json (32 layers, hidden 4096, 32 heads, 8 KV heads, 8 local "
            "experts, 2 per token, max_position_embeddings 32768); 46.7B total / 12.9B active from the "
            "Mistral AI release post (2023-12-11)",
        ),
    )
}
"""Model-architecture catalog by id."""

_HF = (
    "config.json fields as published on huggingface.co/{repo} (max_position_embeddings {ctx}; from memory of the "
    "release; parameters counted from them reproduce the model card's {total} total{extra})"
)
_HF_MODELS: tuple[tuple[str, str, str, str, dict[str, Any]], ...] = (
    (
        "qwen2.5-7b",
        "Qwen2.5-7B",
        "Qwen/Qwen2.5-7B-Instruct",
        "7.6B; checked against a public copy of the file, read 2026-11-30",
        {
            "hidden_size": 3584,
            "intermediate_size": 18944,
            "num_hidden_layers": 28,
            "num_attention_heads": 28,
            "num_key_value_heads": 4,
            "vocab_size": 152064,
            "tie_word_embeddings": False,
            "max_position_embeddings": 32768,
        },
    ),
    (
        "qwen2.5-72b",
        "Qwen2.5-72B",
        "Qwen/Qwen2.5-72B-Instruct",
        "72.7B",
        {
            "hidden_size": 8192,
            "intermediate_size": 29568,
            "num_hidden_layers": 80,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "vocab_size": 152064,
            "tie_word_embeddings": False,
            "max_position_embeddings": 32768,
        },
    ),
    (
        "qwen3-8b",
        "Qwen3-8B",
        "Qwen/Qwen3-8B",
        "8.2B; re-read 2026-12-01 against public copies (code index ids "
        "58026833216, 1570491832; the latter adds YaRN rope_scaling to 131072, not in the release): no field changed",
        {
            "hidden_size": 4096,
            "intermediate_size": 12288,
            "num_hidden_layers": 36,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 151936,
            "tie_word_embeddings": False,
            "max_position_embeddings": 40960,
        },
    ),
    (
        "qwen3-32b",
        "Qwen3-32B",
        "Qwen/Qwen3-32B",
        "32.8B",
        {
            "hidden_size": 5120,
            "intermediate_size": 25600,
            "num_hidden_layers": 64,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 151936,
            "tie_word_embeddings": False,
            "max_position_embeddings": 40960,
        },
    ),
    (
        "qwen3-30b-a3b",
        "Qwen3-30B-A3B",
        "Qwen/Qwen3-30B-A3B",
        "30.5B (3.3B active)",
        {
            "hidden_size": 2048,
            "intermediate_size": 6144,
            "moe_intermediate_size": 768,
            "num_hidden_layers": 48,
            "num_attention_heads": 32,
            "num_key_value_heads": 4,
            "head_dim": 128,
            "num_experts": 128,
            "num_experts_per_tok": 8,
            "vocab_size": 151936,
            "tie_word_embeddings": False,
            "max_position_embeddings": 40960,
        },
    ),
    (
        "llama-3.2-1b",
        "Llama-3.2-1B",
        "meta-llama/Llama-3.2-1B",
        "1.24B; re-read 2026-12-01 against public copies of "
        "the Instruct config (code index ids 10911396249, 58720427815): head_dim 64, tie_word_embeddings true (the "
        "output head is the embedding table, counted once), no field changed",
        {
            "hidden_size": 2048,
            "intermediate_size": 8192,
            "num_hidden_layers": 16,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 64,
            "vocab_size": 128256,
            "tie_word_embeddings": True,
            "max_position_embeddings": 131072,
        },
    ),
    (
        "llama-3.2-3b",
        "Llama-3.2-3B",
        "meta-llama/Llama-3.2-3B",
        "3.21B; re-read 2026-12-01 against public copies "
        "(code index ids 2750760194, 31940328998): 24 query / 8 KV heads of 128, tie_word_embeddings true, no field "
        "changed",
        {
            "hidden_size": 3072,
            "intermediate_size": 8192,
            "num_hidden_layers": 28,
            "num_attention_heads": 24,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 128256,
            "tie_word_embeddings": True,
            "max_position_embeddings": 131072,
        },
    ),
    (
        "mistral-7b",
        "Mistral-7B",
        "mistralai/Mistral-7B-v0.3",
        "7.25B; v0.3 since 2026-12-01 (was v0.1; v0.3's "
        "fields checked against a public copy, code index id 55623910263): vocab 32768, rope_theta 1e6 and "
        "sliding_window null, so every layer attends to the whole context and the KV cache is "
        "exact; v0.1 (vocab 32000) attends within a 4096-token sliding window, which this count would over-state "
        "beyond 4K tokens",
        {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "vocab_size": 32768,
            "tie_word_embeddings": False,
            "max_position_embeddings": 32768,
        },
    ),
    (
        "gemma-3-27b",
        "Gemma-3-27B",
        "google/gemma-3-27b-it (text_config)",
        "27B; re-read 2026-12-01 against a "
        "public copy of the 27B text_config (TensorRT-LLM's test config, code index id 926331895, layers cut to 6 "
        "there; 62 in the release): sliding_window 1024 with sliding_window_pattern 6, so 52 of the 62 layers are "
        "local (every 6th global) and keep only 1024 tokens of KV cache (modelled since 2026-12-01; it was counted "
        "as full attention)",
        {
            "hidden_size": 5376,
            "intermediate_size": 21504,
            "num_hidden_layers": 62,
            "num_attention_heads": 32,
            "num_key_value_heads": 16,
            "head_dim": 128,
            "vocab_size": 262208,
            "tie_word_embeddings": True,
            "max_position_embeddings": 131072,
            "sliding_window": 1024,
            "sliding_window_pattern": 6,
            "model_type": "gemma3_text",
        },
    ),
)
MODELS.update(
    {
        ident: model_from_hf_dict(
            cfg,
            ident=ident,
            name=name,
            source=_HF.format(
                repo=repo,
                ctx=cfg["max_position_embeddings"],
                total=note.split(";")[0].split(" (")[0],
                extra=(";" + note.split(";", 1)[1]) if ";" in note else "",
            ),
        )
        for ident, name, repo, note, cfg in _HF_MODELS
    }
)

_READ = "read 2026-12-01"
_DSV3: dict[str, Any] = {
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "first_k_dense_replace": 3,
    "moe_layer_freq": 1,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "n_routed_experts": 256,
    "num_experts_per_tok": 8,
    "n_shared_experts": 1,
    "vocab_size": 129280,
    "tie_word_embeddings": False,
    "max_position_embeddings": 163840,
    "model_type": "deepseek_v3",
    "quantization_config": {"quant_method": "fp8"},
    "num_nextn_predict_layers": 1,
}
_DSV3_SRC = (
    "config.json fields (huggingface.co/deepseek-ai/{repo}/blob/main/config.json; {read} from public verbatim copies "
    "found with the code index: DeepSeek-R1's whole file, id 1570491832, and DeepSeek-V3's fields, ids 66504138143 "
    "and 9990193600, the same values): 61 layers (3 dense of 18432, then 58 MoE), hidden 7168, 128 heads with "
    "multi-head latent attention (q_lora_rank 1536, kv_lora_rank 512, qk_nope 128 + qk_rope 64, v_head_dim 128), "
    "256 routed experts of 2048 (8 per token) + 1 shared, vocab 129280, fp8 e4m3 weights, max_position_embeddings "
    "163840 (the card says 128K); counted from them: 671.0e9 total, 37.6e9 active (36.6e9 without the input "
    "embedding table) vs the model card's 671B / 37B; the 14B multi-token-prediction module (685B on Hugging Face) "
    "is not counted (github.com/deepseek-ai/DeepSeek-V3 README). KV cache: 512 + 64 elements per token per layer "
    "(arXiv:2412.19437 section 2.1.1)"
)
_LLAMA4: dict[str, Any] = {
    "model_type": "llama4_text",
    "hidden_size": 5120,
    "intermediate_size": 8192,
    "intermediate_size_mlp": 16384,
    "num_hidden_layers": 48,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "num_experts_per_tok": 1,
    "vocab_size": 202048,
    "tie_word_embeddings": False,
    "attention_chunk_size": 8192,
}
_LLAMA4_SRC = (
    "text_config of huggingface.co/meta-llama/{repo}/blob/main/config.json ({read} from public copies found "
    "with the code index: Scout's in file ids 41112263523 and 57930777939, Maverick's in TensorRT-LLM's "
    "two-layer test config, id 115210306): 48 layers, hidden 5120, 40 query / 8 KV heads of 128, "
    "{experts} routed experts of 8192 (1 per token) + 1 shared expert of 8192 in {moe}, "
    "{dense}vocab 202048, max_position_embeddings {ctx}; counted: {total} total / 17.2e9 active vs Meta's "
    "model card {card} (the card's total includes the vision encoder, ~0.9e9); chunked local attention "
    "(8192-token chunks on 3 of 4 layers) is counted as full attention in the KV cache"
)
_GLM45: dict[str, Any] = {
    "model_type": "glm4_moe",
    "hidden_size": 5120,
    "intermediate_size": 12288,
    "moe_intermediate_size": 1536,
    "num_hidden_layers": 92,
    "first_k_dense_replace": 3,
    "num_attention_heads": 96,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "n_routed_experts": 160,
    "num_experts_per_tok": 8,
    "n_shared_experts": 1,
    "vocab_size": 151552,
    "tie_word_embeddings": False,
    "max_position_embeddings": 131072,
    "num_nextn_predict_layers": 1,
}
_GLM_SRC = (
    "config.json fields of huggingface.co/zai-org/{repo} ({read} from public copies found with the code index, "
    "ids 4289690615 and 56711705269 for the GLM-4.5/4.7 shape{extra}): {shape}; counted: {total} total, "
    "{active} active, {noemb} without the embedding tables (the convention of Z.ai's {card}); the "
    "multi-token-prediction layer is not counted"
)
_CONFIG_MODELS: tuple[tuple[str, str, dict[str, Any], str], ...] = (
    ("deepseek-v3", "DeepSeek-V3", _DSV3, _DSV3_SRC.format(repo="DeepSeek-V3", read=_READ)),
    (
        "deepseek-r1",
        "DeepSeek-R1",
        _DSV3,
        _DSV3_SRC.format(repo="DeepSeek-R1", read=_READ) + "; DeepSeek-R1 is DeepSeek-V3's architecture (its README)",
    ),
    (
        "llama-4-scout",
        "Llama-4-Scout-17B-16E",
        {**_LLAMA4, "num_local_experts": 16, "interleave_moe_layer_step": 1, "max_position_embeddings": 10485760},
        _LLAMA4_SRC.format(
            repo="Llama-4-Scout-17B-16E-Instruct",
            read=_READ,
            experts=16,
            moe="every layer",
            dense="",
            ctx="10485760 (the Instruct release; the base config copies say 262144)",
            total="107.8e9",
            card="109B / 17B",
        ),
    ),
    (
        "llama-4-maverick",
        "Llama-4-Maverick-17B-128E",
        {**_LLAMA4, "num_local_experts": 128, "interleave_moe_layer_step": 2, "max_position_embeddings": 1048576},
        _LLAMA4_SRC.format(
            repo="Llama-4-Maverick-17B-128E-Instruct",
            read=_READ,
            experts=128,
            moe="every second layer (interleave_moe_layer_step 2: 24 MoE layers)",
            dense="24 dense layers of intermediate_size_mlp 16384, ",
            ctx="1048576",
            total="400.7e9",
            card="400B / 17B",
        ),
    ),
    (
        "glm-4.5",
        "GLM-4.5",
        _GLM45,
        _GLM_SRC.format(
            repo="GLM-4.5",
            read=_READ,
            extra="; context 131072 from id 9990193600",
            shape="92 layers (3 dense of 12288, 89 MoE), hidden 5120, 96 query / 8 KV heads of 128, 160 routed experts "
            "of 1536 (8 per token) + 1 shared, vocab 151552, max_position_embeddings 131072",
            total="352.8e9",
            active="33.6e9",
            noemb="32.1e9",
            card="355B / 32B",
        ),
    ),
    (
        "glm-4.6",
        "GLM-4.6",
        {**_GLM45, "max_position_embeddings": 202752},
        _GLM_SRC.format(
            repo="GLM-4.6",
            read=_READ,
            extra="; GLM-4.6's own fields from an annotated copy of zai-org/GLM-4.6's config, "
            "id 2748342403: GLM-4.5's architecture with max_position_embeddings 202752, the 200K context",
            shape="as glm-4.5 (92 layers, 3 dense, hidden 5120, 96/8 heads of 128, 160 x 1536 routed + 1 shared, vocab "
            "151552), context 202752",
            total="352.8e9",
            active="33.6e9",
            noemb="32.1e9",
            card="355B / 32B",
        ),
    ),
    (
        "glm-4.5-air",
        "GLM-4.5-Air",
        {
            **_GLM45,
            "hidden_size": 4096,
            "intermediate_size": 10944,
            "moe_intermediate_size": 1408,
            "num_hidden_layers": 46,
            "first_k_dense_replace": 1,
            "n_routed_experts": 128,
        },
        _GLM_SRC.format(
            repo="GLM-4.5-Air",
            read=_READ,
            extra="; GLM-4.5-Air's from id 54377337437",
            shape="46 layers (1 dense of 10944, 45 MoE), hidden 4096, 96 query / 8 KV heads of 128, 128 routed experts "
            "of 1408 (8 per token) + 1 shared, vocab 151552, max_position_embeddings 131072",
            total="106.9e9",
            active="13.4e9",
            noemb="12.2e9",
            card="106B / 12B",
        ),
    ),
    (
        "llama-3-8b",
        "Llama-3-8B",
        {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "vocab_size": 128256,
            "tie_word_embeddings": False,
            "max_position_embeddings": 8192,
        },
        f"huggingface.co/meta-llama/Meta-Llama-3-8B config.json ({_READ} from public copies found with the code "
        "index: the -Instruct file verbatim, id 11169606224, and the base model's fields, id 71581043308): 32 "
        "layers, hidden 4096, 32 query / 8 KV heads, FFN 14336, vocab 128256, untied, max_position_embeddings 8192, "
        "rope_theta 500000, rope_scaling null (Llama-3.1 adds 'llama3' scaling to 131072); counted 8.03e9 as Meta's "
        "model card",
    ),
    (
        "llama-3-70b",
        "Llama-3-70B",
        {
            "hidden_size": 8192,
            "intermediate_size": 28672,
            "num_hidden_layers": 80,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "vocab_size": 128256,
            "tie_word_embeddings": False,
            "max_position_embeddings": 8192,
        },
        f"huggingface.co/meta-llama/Meta-Llama-3-70B config.json ({_READ} from a verbatim copy in a public repository "
        "found with the code index, id 4920998294): 80 layers, hidden 8192, 64 query / 8 KV heads, FFN 28672, vocab "
        "128256, untied, max_position_embeddings 8192, rope_theta 500000, rope_scaling null; counted 70.55e9 (Meta's "
        "card: 70B)",
    ),
)
MODELS.update(
    {ident: model_from_hf_dict(cfg, ident=ident, name=name, source=src) for ident, name, cfg, src in _CONFIG_MODELS}
)

MODEL_ALIASES: dict[str, str] = {"llama-3.3-70b": "llama-3.1-70b", "llama-2-7b-hf": "llama-2-7b"}
"""Alternative ids: Llama-3.3-70B has Llama-3.1-70B's architecture (models.csv)."""


def get_hardware(hw: str | Hardware) -> Hardware:
    """Look up a hardware id (case-insensitive) or pass a :class:`Hardware` through.

    :raises ModelError: unknown id; the message lists the known ones.
    """
    if isinstance(hw, Hardware):
        return hw
    key = hw.strip().lower()
    if key not in HARDWARE:
        raise ModelError(f"unknown hardware {hw!r}; known: {', '.join(sorted(HARDWARE))}")
    return HARDWARE[key]


def get_model(model: str | ModelArch) -> ModelArch:
    """Look up a model id or alias (case-insensitive) or pass a :class:`ModelArch` through.

    :raises ModelError: unknown id; the message lists the known ones.
    """
    if isinstance(model, ModelArch):
        return model
    key = model.strip().lower()
    key = MODEL_ALIASES.get(key, key)
    if key not in MODELS:
        known = sorted([*MODELS, *MODEL_ALIASES])
        raise ModelError(f"unknown model {model!r}; known: {', '.join(known)}")
    return MODELS[key]
