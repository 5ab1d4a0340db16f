"""Tables of inference results and catalogs (rich renderables for the CLI; no modelling here)."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from voicebudget._text import literal
from voicebudget.inference._catalog import HARDWARE, MODEL_ALIASES, MODELS
from voicebudget.inference._fastmode import FastModeBand
from voicebudget.inference._types import InferenceResult, OpenLoopResult

__all__ = [
    "hardware_rows",
    "model_rows",
    "render_catalog",
    "render_fast_mode_band",
    "render_inference",
    "render_open_loop",
]


def hardware_rows() -> list[dict[str, Any]]:
    """The hardware catalog as JSON-ready rows (key figures in SI units, price with its source)."""
    return [
        {
            "id": h.id,
            "name": h.name,
            "memory_kind": h.memory_kind,
            "memory_bytes": h.memory_bytes,
            "memory_bandwidth_bytes_per_s": h.memory_bandwidth_bytes_per_s,
            "bf16_flops_per_s": h.bf16_flops_per_s,
            "fp8_flops_per_s": h.fp8_flops_per_s,
            "fp4_flops_per_s": h.fp4_flops_per_s,
            "max_tensor_parallel": h.max_tensor_parallel,
            "scaleup_topology": h.scaleup_topology,
            "software_efficiency": h.software_efficiency,
            "software_efficiency_source": h.software_efficiency_source,
            "usd_per_chip_hour": h.price.usd_per_chip_hour if h.price else None,
            "source": h.source,
            "software_generations": [
                {
                    "generation": t.generation,
                    "default": i == 0,
                    "software": t.software,
                    "includes_speculative": t.includes_speculative,
                    "tau_layer_ms": t.tau_layer_ms,
                    "tau_hop_ms": t.tau_hop_ms,
                    "tau_step_ms": t.tau_step_ms,
                    "source": t.source,
                }
                for i, t in enumerate(h.sram_generations)
            ],
            "hosted": h.hosted.model_dump(mode="json") if h.hosted else None,
        }
        for h in HARDWARE.values()
    ]


def model_rows() -> list[dict[str, Any]]:
    """The model catalog as JSON-ready rows."""
    aliases: dict[str, list[str]] = {}
    for alias, target in MODEL_ALIASES.items():
        aliases.setdefault(target, []).append(alias)
    return [
        {
            "id": m.id,
            "name": m.name,
            "aliases": aliases.get(m.id, []),
            "total_params": m.total_params,
            "active_params": m.active_params,
            "layers": m.layers,
            "d_model": m.d_model,
            "kv_heads": m.kv_heads,
            "experts": m.experts,
            "experts_per_token": m.experts_per_token,
            "native_precision": m.native_precision,
            "max_context_tokens": m.max_context_tokens,
            "attention": "mla" if m.is_mla else "gqa",
            "kv_elements_per_token": m.kv_elements_per_token(),
            "sliding_window": m.sliding_window,
            "sliding_layers": m.sliding_layers,
            "source": m.source,
        }
        for m in MODELS.values()
    ]


def _g(x: float | None, scale: float, fmt: str = "{:.0f}") -> str:
    return "-" if x is None else fmt.format(x / scale)


def _software_table() -> Table:
    t = Table(
        "hardware",
        "software",
        "what",
        title="Wafer/LPU software generations (infer --software; a wafer stage's software)",
        caption="the first of each chip is the default (the latest); sources: --format json",
        caption_justify="left",
        title_justify="left",
    )
    t.columns[0].no_wrap = True
    t.columns[1].no_wrap = True
    for h in HARDWARE.values():
        for i, g in enumerate(h.sram_generations):
            t.add_row(h.id if i == 0 else "", g.generation + (" *" if i == 0 else ""), g.software)
    return t


def render_catalog(kind: str) -> RenderableType:
    """A table of ``"hardware"`` (with the wafer/LPU software generations) or ``"models"``."""
    if kind == "hardware":
        t = Table(
            "id",
            "name",
            "mem GB",
            "TB/s",
            "bf16 TF",
            "fp8 TF",
            "eff",
            "$/h",
            title="Hardware",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            collapse_padding=True,
            show_edge=False,  # fits 80 columns
            caption="mem: memory per chip; TB/s: memory bandwidth; bf16/fp8 TF: dense TFLOP/s; eff: share "
            "of the fitted efficiencies this chip's serving stack reaches (1 = TensorRT-LLM on NVIDIA); "
            "$/h: US$ per chip-hour; sources: --format json",
            caption_justify="left",
        )
        for col in t.columns[:1] + t.columns[2:]:
            col.no_wrap = True  # ids and numbers whole: only the name wraps
        for col in t.columns[2:]:
            col.justify = "right"
        t.columns[1].overflow = "fold"  # names wrap over lines rather than end in "..."
        for r in hardware_rows():
            t.add_row(
                r["id"],
                r["name"],
                _g(r["memory_bytes"], 1e9, "{:g}"),
                _g(r["memory_bandwidth_bytes_per_s"], 1e12, "{:g}"),
                _g(r["bf16_flops_per_s"], 1e12),
                _g(r["fp8_flops_per_s"], 1e12),
                f"{r['software_efficiency']:.2f}",
                _g(r["usd_per_chip_hour"], 1, "{:.2f}"),
            )
        return Group(t, Text(""), _software_table())
    t = Table(
        "id",
        "params B",
        "active B",
        "layers",
        "kv",
        "ctx",
        "MoE",
        "aliases",
        title="Models",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
        show_edge=False,  # fits 80 columns
        caption="kv: KV heads (MLA: one shared latent, multi-head latent attention); ctx: longest context, "
        "tokens; MoE: experts, top k per token",
        caption_justify="left",
    )
    for col in t.columns[:7]:
        col.no_wrap = True  # ids, numbers and headers whole: only the aliases fold
    for col in t.columns[1:6]:
        col.justify = "right"
    for col in t.columns[7:]:
        col.overflow = "fold"  # ids have no spaces: fold them over lines rather than cut them with "..."
    for r in model_rows():
        experts = f"{r['experts']}/{r['experts_per_token']}" if r["experts"] else "dense"
        ctx = "-" if r["max_context_tokens"] is None else f"{r['max_context_tokens'] / 1024:g}k"
        t.add_row(
            r["id"],
            f"{r['total_params'] / 1e9:.1f}",
            f"{r['active_params'] / 1e9:.1f}",
            str(r["layers"]),
            "MLA" if r["attention"] == "mla" else str(r["kv_heads"]),
            ctx,
            experts,
            "\n".join(r["aliases"]),
        )
    return t


def _model_label(r: InferenceResult) -> str:
    """The model as the caller named it (an alias says which catalog entry it shares)."""
    # names can come from the user's files (a config.json's folder, a chip TOML's id): never read as markup
    label = r.model if r.model_alias is None else f"{r.model_alias} (same architecture as {r.model})"
    return literal(label)


def render_inference(r: InferenceResult) -> Table:
    """One prediction as a two-column table."""
    model = _model_label(r)
    scope = " - chip time only" if r.kind == "wafer" else ""
    t = Table("", "", title=f"{model} on {r.chips} x {literal(r.hardware)} ({r.precision}){scope}", show_header=False)
    cost = "-" if r.cost_per_million_output_tokens is None else f"${r.cost_per_million_output_tokens:.2f}"
    price = (
        f"${r.price.usd_per_chip_hour:.2f}/chip-hour ({literal(r.price.source)})"
        if r.price
        else "no public per-chip price (--price-per-chip-hour)"
    )
    layout = f"tp {r.tensor_parallel} x pp {r.pipeline_parallel} x {r.replicas} replica(s)"
    ttft = f"{r.ttft_ms:.1f} ms" + (" (lower bound)" if r.ttft_lower_bound else "")
    if r.queue_wait_ms > 0:
        ttft += f", of which {r.queue_wait_ms:.1f} ms waiting for a slot"
    concurrency = str(r.concurrency)
    if r.kind == "gpu" and r.running_requests < r.concurrency:
        concurrency += f" ({r.running_requests} running, the rest queued)"
    for k, v in (
        ("TTFT", ttft),
        ("TPOT (ITL)", f"{r.tpot_ms:.2f} ms"),
        ("tokens/s per user", f"{r.tokens_per_s_per_user:.1f}"),
        ("throughput", f"{r.throughput_tokens_per_s:.0f} tokens/s"),
        ("chips", f"{r.chips} ({layout})" + (" - fewest that fit" if r.chips_chosen else "")),
        ("concurrency", concurrency),
        ("workload", f"{r.prompt_tokens} in / {r.output_tokens} out"),
        ("bound", r.bound),
        ("cost per 1M output tokens", cost),
        ("price assumption", price),
        (
            "memory",
            f"weights {r.memory.weights_bytes / 1e9:.1f} GB + KV {r.memory.kv_cache_bytes / 1e9:.1f} GB "
            f"of {r.memory.capacity_bytes / 1e9:.0f} GB",
        ),
    ):
        t.add_row(k, v)
    if r.kind == "gpu":
        t.add_row("step budget", _step_budget(r))
    if r.speculative_speedup is not None:
        t.add_row("speculative decoding", f"x{r.speculative_speedup:.2f} decode speed-up at this concurrency")
    for note in r.notes:
        t.add_row("note", literal(note))
    return t


def _step_budget(r: InferenceResult) -> str:
    groups = f"; {r.scheduler_steps} decode steps per scheduler call" if r.scheduler_steps > 1 else ""
    if r.chunked_prefill:
        return f"{r.step_budget_tokens:,} tokens (decoding sequences + prompt chunks per step){groups}"
    return f"{r.step_budget_tokens:,} prompt tokens per prefill-only step (no chunked prefill){groups}"


def render_open_loop(r: OpenLoopResult) -> Table:
    """An open-loop (request-rate) prediction as a two-column table."""
    a = r.at_mean_concurrency
    t = Table(
        "",
        "",
        title=f"{_model_label(a)} on {a.chips} x {literal(a.hardware)} ({a.precision}) at {r.request_rate_per_s:g} "
        "requests/s",
        show_header=False,
    )
    bound = " (lower bounds)" if r.ttft_lower_bound else ""  # the quantiles and the mean, at 75% of capacity
    for k, v in (
        ("TTFT p50 / p90 / p99", f"{r.ttft_p50_ms:.1f} / {r.ttft_p90_ms:.1f} / {r.ttft_p99_ms:.1f} ms{bound}"),
        ("TTFT mean", f"{r.ttft_mean_ms:.1f} ms{bound.replace('bounds', 'bound')}"),
        ("TPOT (ITL)", f"{r.tpot_ms:.2f} ms"),
        ("mean concurrency (Little's law)", f"{r.mean_concurrency:.1f}"),
        (
            "capacity",
            f"{r.capacity_requests_per_s:.3g} requests/s ({r.request_rate_per_s / r.capacity_requests_per_s:.0%} used)",
        ),
        ("prefill utilisation", f"{r.prefill_utilization:.0%}"),
        ("throughput", f"{r.throughput_tokens_per_s:.0f} output tokens/s"),
        ("chips", f"{a.chips} (tp {a.tensor_parallel} x pp {a.pipeline_parallel} x {a.replicas} replica(s))"),
        ("workload", f"{a.prompt_tokens} in / {a.output_tokens} out"),
    ):
        t.add_row(k, v)
    t.add_row("step budget", _step_budget(a))
    for note in r.notes:
        t.add_row("note", literal(note))
    if r.request_rate_per_s > 0.5 * r.capacity_requests_per_s and not r.ttft_lower_bound:
        t.add_row("note", "above half the capacity the TTFT tail is indicative (docs/inference.md)")
    return t


def render_fast_mode_band(band: FastModeBand) -> Table:
    """The fast-mode band: per baseline load, reachability and the price multiple over the uncertain constants."""
    t = Table(
        "baseline in flight",
        "reachable (share of constants)",
        "price x (default)",
        "price x (range)",
        title=f"fast mode {band.target_speedup:g}x output speed, by baseline load",
        caption=literal(band.message),
        caption_justify="left",
    )
    for r in band.rows:
        rng = "-" if r.price_min is None else f"{r.price_min:.2f}-{r.price_max:.2f}"
        t.add_row(
            str(r.baseline_concurrency),
            f"{r.reachable_share:.0%}",
            "out of reach" if r.price_ratio is None else f"{r.price_ratio:.2f}",
            rng,
        )
    return t
