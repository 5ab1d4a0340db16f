"""A model architecture from a Hugging Face ``config.json``, a chip from a small TOML file, and speculative
settings from ``A,G,C`` text.

Parameter counts are computed from the config (the catalog entries quote the released totals; these
formulas reproduce them within ~1% for Llama and Mixtral, DeepSeek-V3 and Llama-4, tested):

* attention per layer: ``d * H * hd`` (Q) + ``2 * d * KV * hd`` (K, V) + ``H * hd * d`` (O);
* multi-head latent attention (DeepSeek-V2/V3 ``kv_lora_rank``): queries ``d * q_lora_rank +
  q_lora_rank * H * (qk_nope + qk_rope)`` (or ``d * H * (qk_nope + qk_rope)`` without ``q_lora_rank``), the
  joint KV down-projection with the RoPE key ``d * (kv_lora_rank + qk_rope)``, the key/value up-projections
  ``kv_lora_rank * H * (qk_nope + v_head_dim)`` and the output ``H * v_head_dim * d``; the KV cache holds
  ``kv_lora_rank + qk_rope_head_dim`` elements per token per layer (:meth:`ModelArch.kv_elements_per_token`);
* a gated MLP (SwiGLU, what Llama/Mistral/Qwen/Gemma use): ``3 * d * I``;
* mixture of experts: ``E`` routed experts of ``3 * d * I_e`` each (``moe_intermediate_size``, else
  ``intermediate_size``), ``k`` per token, plus shared experts (``n_shared_experts`` x ``I_e``, or
  ``shared_expert_intermediate_size``; Llama-4: one of ``intermediate_size``) and the router ``d * E``;
  which layers are MoE: ``first_k_dense_replace`` dense layers first, then every ``moe_layer_freq``-th
  (DeepSeek, GLM), or every ``interleave_moe_layer_step``-th / the ``moe_layers`` list (Llama-4, whose dense
  layers use ``intermediate_size_mlp``);
* embeddings ``V * d``, and the output head again unless ``tie_word_embeddings``.

Norms, biases and multi-token-prediction layers (``num_nextn_predict_layers``, not used for plain decoding)
are ignored (< 0.1%; DeepSeek-V3's MTP module is 14B of its 685B stored weights and outside its 671B).
Active parameters count both embedding tables; model cards differ on that (DeepSeek's 37B and GLM's 32B
leave embeddings out, Mixtral's 12.9B keeps them): the tests say which. Local-attention layers are read
too (``layer_types``; Gemma's ``sliding_window`` + ``sliding_window_pattern``; Llama-4's
``attention_chunk_size`` on its RoPE layers; a bare ``sliding_window`` on every layer, as Mistral-7B-v0.1,
unless ``use_sliding_window`` is false): they keep only their window in the KV cache
(:meth:`ModelArch.window_share`, docs/inference.md).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from voicebudget._errors import ScenarioError, param
from voicebudget._io import load_toml, parse_json, read_text, validation_error
from voicebudget.inference._catalog import Hardware, ModelArch, model_from_hf_dict
from voicebudget.inference._speculative import SPECULATIVE_PRESETS, SpeculativeDecoding, get_speculative_preset

__all__ = ["hardware_from_toml", "model_from_hf_config", "parse_speculative"]


def model_from_hf_config(path: str | Path) -> ModelArch:
    """Build a :class:`ModelArch` from a Hugging Face ``config.json`` (module docstring for the counts).

    :param path: the file. Nested ``text_config`` (multimodal releases) is used when present.
    :returns: the architecture; ``id`` is the file's folder name (or ``model_type``), ``source`` the path.
    :raises ScenarioError: unreadable, over the size cap, a device, not UTF-8 or non-JSON file (read through
        :mod:`voicebudget._io`), or a missing or invalid field (named).
    """
    p = Path(path)
    where = str(p)
    # the input boundary: size cap, devices refused, BOM accepted, UTF-8 checked, nesting/digit limits
    cfg = parse_json(read_text(p), origin=where, allow_nan=False)
    if not isinstance(cfg, dict):
        raise ScenarioError("must be a JSON object (a config.json)", origin=where)
    ident = p.parent.name if p.parent.name not in ("", ".") else str(cfg.get("model_type", "custom"))
    return model_from_hf_dict(
        cfg, ident=ident.lower(), name=ident, source=f"{where} (Hugging Face config.json)", where=where
    )


def hardware_from_toml(path: str | Path) -> Hardware:
    """Build a :class:`Hardware` from a TOML file whose top-level keys are its fields (docs/inference.md).

    ``memory_bytes``, ``memory_bandwidth_bytes_per_s``, ``bf16_flops_per_s``, ``scaleup_link_bytes_per_s``
    and ``source`` are required; ``id`` defaults to the file name without ``.toml``, ``name`` to the id;
    ``[price]`` (``usd_per_chip_hour``, ``source``) and ``[sram]`` are tables.

    :param path: the file.
    :returns: the chip, validated like a catalog entry.
    :raises ScenarioError: unreadable file, TOML syntax error (with its line), or a missing, unknown or
        out-of-range field (each named with what is allowed).
    """

    p = Path(path)
    where = str(p)
    doc = load_toml(read_text(p), origin=where)  # the input boundary: size cap, devices refused, UTF-8
    data = {"id": p.stem.lower() or "custom", **doc}
    data.setdefault("name", data["id"])
    try:
        return Hardware.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, where, data) from None


def parse_speculative(text: str) -> SpeculativeDecoding:
    """``"A,G,C"`` or ``"A,G,C,V"`` -> :class:`SpeculativeDecoding` (acceptance rate, draft tokens,
    draft/target cost, tokens verified per sequence); or a preset name (``eagle``, ``medusa``: see
    :data:`SPECULATIVE_PRESETS`).

    :raises ScenarioError: not three or four numbers nor a preset name, or a value out of range (the
        message says which).
    """
    parts = [x.strip() for x in text.split(",")]
    if len(parts) == 1 and parts[0] and not parts[0][0].isdigit() and parts[0][0] not in "+-.":
        return get_speculative_preset(parts[0]).speculative
    if len(parts) not in (3, 4):
        raise ScenarioError(
            f"give acceptance,draft_tokens,draft_cost[,verify_tokens] (e.g. 0.7,4,0.05) or a preset "
            f"({', '.join(sorted(SPECULATIVE_PRESETS))}), got {text!r}",
            origin=param("speculative"),
        )
    try:
        a, g, c = float(parts[0]), int(parts[1]), float(parts[2])
        v = int(parts[3]) if len(parts) == 4 else None
    except ValueError:
        raise ScenarioError(
            f"{text!r}: acceptance and cost are numbers, draft and verify tokens integers", origin=param("speculative")
        ) from None
    if not 0.0 <= a < 1.0:
        raise ScenarioError(f"acceptance rate must be in [0, 1), got {a}", origin=param("speculative"))
    if g < 1:
        raise ScenarioError(f"draft tokens must be >= 1, got {g}", origin=param("speculative"))
    if not c >= 0.0 or c != c or c == float("inf"):
        raise ScenarioError(f"draft cost ratio must be a finite number >= 0, got {c}", origin=param("speculative"))
    if v is not None and v < g + 1:
        raise ScenarioError(
            f"verify tokens must be >= draft tokens + 1 ({g + 1}), got {v}", origin=param("speculative")
        )
    return SpeculativeDecoding(acceptance_rate=a, draft_tokens=g, draft_cost_ratio=c, verify_tokens=v)
