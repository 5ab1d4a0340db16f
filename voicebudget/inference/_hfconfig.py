"""A model architecture from a Hugging Face ``config.json``, and speculative settings from ``A,G,C`` text.

Parameter counts are computed from the config (the catalog entries quote the released totals; these
formulas reproduce them within ~1% for Llama and Mixtral, tested):

* attention per layer: ``d * H * hd`` (Q) + ``2 * d * KV * hd`` (K, V) + ``H * hd * d`` (O);
* a gated MLP (SwiGLU, what Llama/Mistral/Qwen/Gemma use): ``3 * d * I``;
* mixture of experts: ``E`` routed experts of ``3 * d * I_e`` each (``moe_intermediate_size``, else
  ``intermediate_size``), ``k`` per token, plus shared experts and the router ``d * E``; the first
  ``first_k_dense_replace`` layers (DeepSeek) are dense;
* embeddings ``V * d``, and the output head again unless ``tie_word_embeddings``.

Norms and biases are ignored (< 0.1%). Multi-head latent attention (DeepSeek ``kv_lora_rank``) is not
modelled: such a config is refused rather than given a wrong KV cache.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from voicebudget._errors import ScenarioError
from voicebudget.inference._catalog import ModelArch
from voicebudget.inference._speculative import SpeculativeDecoding

__all__ = ["model_from_hf_config", "parse_speculative"]

_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "bf16"}


def _int(cfg: dict[str, Any], where: str, key: str, default: int | None = None) -> int:
    value = cfg.get(key, default)
    if value is None:
        raise ScenarioError("missing (a Hugging Face config.json of a decoder-only model gives num_hidden_layers, "
                            "hidden_size, num_attention_heads, intermediate_size, vocab_size)", origin=where, field=key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ScenarioError(f"must be a positive integer, got {value!r}", origin=where, field=key)
    return value


def model_from_hf_config(path: str | Path) -> ModelArch:
    """Build a :class:`ModelArch` from a Hugging Face ``config.json`` (module docstring for the counts).

    :param path: the file. Nested ``text_config`` (multimodal releases) is used when present.
    :returns: the architecture; ``id`` is the file's folder name (or ``model_type``), ``source`` the path.
    :raises ScenarioError: unreadable or non-JSON file, a missing or invalid field (named), or multi-head
        latent attention (not modelled).
    """
    p = Path(path)
    where = str(p)
    try:
        cfg = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScenarioError(f"cannot read: {exc.strerror or exc}", origin=where) from None
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"line {exc.lineno}: not JSON: {exc.msg}", origin=where) from None
    if not isinstance(cfg, dict):
        raise ScenarioError("must be a JSON object (a config.json)", origin=where)
    if isinstance(cfg.get("text_config"), dict):
        cfg = {**cfg, **cfg["text_config"]}
    if cfg.get("kv_lora_rank"):
        raise ScenarioError("multi-head latent attention (DeepSeek MLA) is not modelled; define the model inline "
                            "with an equivalent kv_heads x head_dim", origin=where, field="kv_lora_rank")
    layers = _int(cfg, where, "num_hidden_layers")
    d = _int(cfg, where, "hidden_size")
    heads = _int(cfg, where, "num_attention_heads")
    kv = _int(cfg, where, "num_key_value_heads", heads)
    hd = _int(cfg, where, "head_dim", d // heads)
    inter = _int(cfg, where, "intermediate_size")
    vocab = _int(cfg, where, "vocab_size")
    experts = cfg.get("num_local_experts") or cfg.get("num_experts") or cfg.get("n_routed_experts")
    per_tok = cfg.get("num_experts_per_tok")
    attn = d * heads * hd + 2 * d * kv * hd + heads * hd * d
    emb = vocab * d * (1 if cfg.get("tie_word_embeddings", False) else 2)
    if experts:
        e = _int(cfg, where, "num_local_experts" if cfg.get("num_local_experts") else
                 ("num_experts" if cfg.get("num_experts") else "n_routed_experts"))
        k = _int(cfg, where, "num_experts_per_tok")
        ie = _int(cfg, where, "moe_intermediate_size", inter)
        dense_layers = int(cfg.get("first_k_dense_replace") or 0)
        moe_layers = layers - dense_layers
        shared = 3 * d * int(cfg.get("shared_expert_intermediate_size") or
                             (int(cfg.get("n_shared_experts") or 0) * ie))
        common = emb + layers * attn + dense_layers * 3 * d * inter + moe_layers * (shared + d * e)
        total = common + moe_layers * e * 3 * d * ie
        active = common + moe_layers * k * 3 * d * ie
        moe: dict[str, Any] = {"experts": e, "experts_per_token": k, "moe_layers": moe_layers}
    else:
        if per_tok:
            raise ScenarioError("given without a number of experts (num_local_experts)", origin=where,
                                field="num_experts_per_tok")
        total = active = emb + layers * (attn + 3 * d * inter)
        moe = {}
    quant = cfg.get("quantization_config") or {}
    method = str(quant.get("quant_method", "")).lower() if isinstance(quant, dict) else ""
    native = "fp8" if method == "fp8" else _DTYPES.get(str(cfg.get("torch_dtype", "bfloat16")), "bf16")
    ident = p.parent.name if p.parent.name not in ("", ".") else str(cfg.get("model_type", "custom"))
    return ModelArch.model_validate({
        "id": ident.lower(), "name": ident, "total_params": float(total), "active_params": float(active),
        "layers": layers, "d_model": d, "q_heads": heads, "kv_heads": kv, "head_dim": hd,
        "native_precision": native, "native_expert_precision": "fp4" if method == "mxfp4" else None,
        "max_context_tokens": cfg.get("max_position_embeddings"), "source": f"{where} (Hugging Face config.json)",
        **moe,
    })


def parse_speculative(text: str) -> SpeculativeDecoding:
    """``"A,G,C"`` -> :class:`SpeculativeDecoding` (acceptance rate, draft tokens, draft/target cost).

    :raises ScenarioError: not three numbers, or a value out of range (the message says which).
    """
    parts = [x.strip() for x in text.split(",")]
    if len(parts) != 3:
        raise ScenarioError(f"give acceptance,draft_tokens,draft_cost (e.g. 0.7,4,0.05), got {text!r}",
                            origin="--speculative")
    try:
        a, g, c = float(parts[0]), int(parts[1]), float(parts[2])
    except ValueError:
        raise ScenarioError(f"{text!r}: acceptance and cost are numbers, draft tokens an integer",
                            origin="--speculative") from None
    if not 0.0 <= a < 1.0:
        raise ScenarioError(f"acceptance rate must be in [0, 1), got {a}", origin="--speculative")
    if g < 1:
        raise ScenarioError(f"draft tokens must be >= 1, got {g}", origin="--speculative")
    if not c >= 0.0 or c != c or c == float("inf"):
        raise ScenarioError(f"draft cost ratio must be a finite number >= 0, got {c}", origin="--speculative")
    return SpeculativeDecoding(acceptance_rate=a, draft_tokens=g, draft_cost_ratio=c)
