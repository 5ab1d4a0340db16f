"""``infer``, ``hardware`` and ``models``: one model on one chip, and the catalogs."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from voicebudget.cli._options import PrecisionOpt, TableOrJson
from voicebudget.cli._output import choice_value, emit_json, fail, spell_fields, user_errors

if TYPE_CHECKING:
    from voicebudget.inference import FastModeBand, Hardware, InferenceResult, ModelArch, SpeculativeDecoding

DEPLOYMENT_FLAGS = {
    "chips": "chips",
    "tensor_parallel": "tp",
    "pipeline_parallel": "pp",
    "replicas": "replicas",
    "prefill_chunk_tokens": "chunk_tokens",
    "memory_utilization": "memory_utilization",
}
"""``Deployment`` fields -> the ``infer`` parameters that set them (notes name the options, not the fields)."""

PARAMETERS = {**DEPLOYMENT_FLAGS, "chunked_prefill": "no_chunked_prefill", "target_speedup": "fast_mode"}
"""Library parameters -> the ``infer`` parameters that set them (errors name the options)."""


def infer(
    hardware: Annotated[str, typer.Option("--hardware", "-H", help="Hardware id (see `voicebudget hardware`).")] = "",
    model: Annotated[str, typer.Option("--model", "-m", help="Model id (see `voicebudget models`).")] = "",
    chips: Annotated[int | None, typer.Option("--chips", min=1, help="Chips (default: the fewest that fit).")] = None,
    tp: Annotated[int | None, typer.Option("--tp", min=1, help="Tensor-parallel size (splits the heads).")] = None,
    pp: Annotated[int | None, typer.Option("--pp", min=1, help="Pipeline stages (default: 1 if it fits).")] = None,
    replicas: Annotated[
        int | None, typer.Option("--replicas", min=1, help="Data-parallel replicas (default: the chips left).")
    ] = None,
    precision: Annotated[PrecisionOpt | None, typer.Option("--precision", help="Weights (default: native).")] = None,
    concurrency: Annotated[
        int | None, typer.Option("--concurrency", "-c", min=1, help="Requests in flight (default 1).")
    ] = None,
    kv_precision: Annotated[
        PrecisionOpt | None,
        typer.Option("--kv-precision", help="KV cache (default: fp8 with fp8/fp4 weights, else bf16)."),
    ] = None,
    speculative: Annotated[
        str | None,
        typer.Option(
            "--speculative",
            metavar="A,G,C[,V] | PRESET",
            help="Speculative decoding: acceptance rate a, draft tokens g, draft/target step cost c (Medusa/EAGLE "
            "heads: c ~ 0.02-0.05; a draft model: its step time ratio), tokens verified per sequence V (default "
            "g+1; a tree's node count), e.g. 0.7,4,0.05; or a preset: eagle, medusa (acceptance measured at "
            "batch 1). The verification step is costed at this concurrency.",
        ),
    ] = None,
    model_config_path: Annotated[
        Path | None,
        typer.Option(
            "--model-config",
            help="A Hugging Face config.json for a model not in the catalog (instead of --model).",
        ),
    ] = None,
    hardware_config_path: Annotated[
        Path | None,
        typer.Option(
            "--hardware-config",
            help="A TOML file of Hardware fields, a chip not in the catalog (instead of -H).",
        ),
    ] = None,
    memory_utilization: Annotated[
        float | None,
        typer.Option(
            "--memory-utilization",
            help="Share of chip memory for weights + KV cache (as vLLM's gpu memory utilization; "
            "default: weights + 90% of the rest, TensorRT-LLM's KV-cache rule).",
        ),
    ] = None,
    chunk_tokens: Annotated[
        int | None,
        typer.Option(
            "--chunk-tokens",
            min=16,
            help="Step budget, tokens: decoding sequences + prompt chunks per step (vLLM's and TensorRT-LLM's "
            "batched-token limit; default 8192 on chips of 70 GiB or more other than A100, else 2048).",
        ),
    ] = None,
    no_chunked_prefill: Annotated[
        bool,
        typer.Option(
            "--no-chunked-prefill",
            help="Prompts run whole in prefill-only steps while decoding waits (vLLM V0 with chunked prefill off), "
            "instead of sharing each step with the decoding sequences.",
        ),
    ] = False,
    scheduler_steps: Annotated[
        int,
        typer.Option(
            "--scheduler-steps",
            min=1,
            max=1024,
            help="Decode steps per scheduler call (vLLM's multi-step scheduling): a new request waits for the "
            "running group of steps (default 1).",
        ),
    ] = 1,
    request_rate: Annotated[
        float | None,
        typer.Option(
            "--request-rate",
            help="Open-loop Poisson arrivals, requests/s (instead of --concurrency): TTFT p50/p90/p99.",
        ),
    ] = None,
    fast_mode: Annotated[
        float | None,
        typer.Option(
            "--fast-mode",
            min=1.0,
            metavar="SPEEDUP",
            help="Also print the fast-mode band: the baseline loads at which this output speed-up is reachable "
            "by batch policy and its price range over the uncertain constants.",
        ),
    ] = None,
    prompt_tokens: Annotated[int, typer.Option("--prompt-tokens", min=1, help="Prompt tokens per request.")] = 1000,
    output_tokens: Annotated[int, typer.Option("--output-tokens", min=1, help="Output tokens per request.")] = 200,
    software: Annotated[
        str | None,
        typer.Option(
            "--software",
            metavar="GEN",
            help="Software generation: a wafer/LPU chip's vendor timings (see `voicebudget hardware`), or a GPU's "
            "serving stack (2025, or 2024: a per-sequence cost per tensor-parallel rank); default the latest.",
        ),
    ] = None,
    price: Annotated[
        float | None,
        typer.Option("--price-per-chip-hour", min=0.0, help="US$ per chip-hour (overrides catalog)."),
    ] = None,
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")] = TableOrJson.table,
) -> None:
    """Predict TTFT, TPOT, throughput and cost of a model on hardware (docs/inference.md).

    Exit code 2 when the model does not fit the chips (the message names the gap), when prompt + output
    tokens exceed the model's context, or when --tp does not split the attention heads.
    """
    _check_choices(
        (chips, tp, pp, replicas),
        (model, model_config_path),
        (hardware, hardware_config_path),
        concurrency,
        request_rate,
        software,
    )
    arch, chip, spec = _load(model, model_config_path, hardware, hardware_config_path, speculative)
    _check_numbers(memory_utilization, price)
    deployment = {
        "chips": chips,
        "tensor_parallel": tp,
        "pipeline_parallel": pp,
        "replicas": replicas,
        "precision": choice_value(precision),
        "kv_precision": choice_value(kv_precision),
        "memory_utilization": memory_utilization,
        "prefill_chunk_tokens": chunk_tokens,
        "chunked_prefill": not no_chunked_prefill,
        "scheduler_steps": scheduler_steps,
        "software": software,
    }
    if request_rate is not None:
        _open_loop(arch, chip, deployment, (prompt_tokens, output_tokens), request_rate, spec, fmt, fast_mode, price)
        return
    # lazy: start-up (the library loads when the command runs)
    from voicebudget.inference import ChipPrice, Deployment, Workload, estimate_inference

    chip_price = ChipPrice(usd_per_chip_hour=price, source="--price-per-chip-hour") if price else None
    with user_errors(**PARAMETERS):
        result = estimate_inference(
            arch,
            chip,
            Deployment(**deployment, concurrency=1 if concurrency is None else concurrency),
            Workload(prompt_tokens=prompt_tokens, output_tokens=output_tokens),
            price=chip_price,
            speculative=spec,
        )
    result = result.model_copy(
        update={"notes": tuple(spell_fields(n, DEPLOYMENT_FLAGS, "Deployment") for n in result.notes)}
    )
    band = None
    if fast_mode is not None:
        band = _fast_mode_band(arch, chip, result, deployment, fast_mode, (prompt_tokens, output_tokens))
    _print_inference(result, band, fmt)


def _check_choices(
    counts: tuple[int | None, int | None, int | None, int | None],
    model: tuple[str, Path | None],
    hardware: tuple[str, Path | None],
    concurrency: int | None,
    request_rate: float | None,
    software: str | None,
) -> None:
    """The flags that exclude or need one another, and the chip counts' ceiling (before anything loads)."""
    from voicebudget.inference._types import MAX_CHIPS  # lazy: start-up (the library loads when the command runs)

    for flag, count in zip(("--chips", "--tp", "--pp", "--replicas"), counts, strict=True):
        if count is not None and count > MAX_CHIPS:
            fail(f"{flag}: at most {MAX_CHIPS:,}, got {count:,}")
    _check_sources(model, hardware)
    if concurrency is not None and request_rate is not None:
        fail(
            "give --concurrency (a closed loop: that many requests always in flight) or --request-rate "
            "(open-loop arrivals: the concurrency follows), not both"
        )
    if software is not None and not software.strip():
        fail(
            f"--software: give a generation id (`voicebudget hardware` lists them, e.g. 2024-08; a GPU's serving "
            f"stack: 2025 or 2024), got {software!r}"
        )


def _check_sources(model: tuple[str, Path | None], hardware: tuple[str, Path | None]) -> None:
    """Exactly one of --model and --model-config, and of --hardware and --hardware-config."""
    if not model[0] and model[1] is None:
        fail("give --model ID (see `voicebudget models`) or --model-config path/to/config.json")
    if not hardware[0] and hardware[1] is None:
        fail("give --hardware ID (see `voicebudget hardware`) or --hardware-config path/to/chip.toml")
    if hardware[0] and hardware[1] is not None:
        fail("give --hardware or --hardware-config, not both")
    if model[0] and model[1] is not None:
        fail("give --model or --model-config, not both")


def _load(
    model: str, model_config: Path | None, hardware: str, hardware_config: Path | None, speculative: str | None
) -> tuple[str | ModelArch, str | Hardware, SpeculativeDecoding | None]:
    """The model and chip (a catalog id, or read from its file) and the speculative decoding asked for."""
    # lazy: start-up (the library loads when the command runs)
    from voicebudget.inference import hardware_from_toml, model_from_hf_config, parse_speculative

    arch: str | ModelArch = model
    chip: str | Hardware = hardware
    with user_errors(**PARAMETERS):
        spec = parse_speculative(speculative) if speculative is not None else None
        if model_config is not None:
            arch = model_from_hf_config(model_config)
        if hardware_config is not None:
            chip = hardware_from_toml(hardware_config)
    return arch, chip, spec


def _check_numbers(memory_utilization: float | None, price: float | None) -> None:
    if memory_utilization is not None and not (0.0 < memory_utilization <= 1.0):
        fail(f"--memory-utilization must be in (0, 1], got {memory_utilization}")
    if price is not None and not (math.isfinite(price) and price <= 1e6):
        fail(f"--price-per-chip-hour: must be a finite number of US$ > 0 and <= 1,000,000, got {price}")


def _open_loop(
    arch: str | ModelArch,
    chip: str | Hardware,
    deployment: dict[str, Any],
    tokens: tuple[int, int],
    request_rate: float,
    spec: SpeculativeDecoding | None,
    fmt: TableOrJson,
    fast_mode: float | None = None,
    price: float | None = None,
) -> None:
    """``--request-rate``: TTFT percentiles under open-loop Poisson arrivals."""
    # lazy: start-up (the library loads when the command runs)
    from voicebudget.inference import Deployment, Workload, estimate_open_loop
    from voicebudget.inference._render import render_open_loop

    if not (math.isfinite(request_rate) and request_rate > 0):
        fail(f"--request-rate: must be a finite number of requests/s > 0, got {request_rate}")
    if spec is not None:
        fail(
            "--speculative applies to --concurrency predictions; the --request-rate scheduler model does not "
            "include speculative decoding yet (run --concurrency at the mean concurrency it reports)"
        )
    if fast_mode is not None:
        fail(
            "--fast-mode scans closed-loop baselines (16-512 in flight) on the layout --concurrency predicts; "
            "give it without --request-rate"
        )
    if price is not None:
        fail("--price-per-chip-hour prices a --concurrency prediction; the --request-rate table shows no cost")
    with user_errors(**PARAMETERS):
        loaded = estimate_open_loop(
            arch,
            chip,
            Deployment(**deployment),
            Workload(prompt_tokens=tokens[0], output_tokens=tokens[1]),
            request_rate,
        )
    if fmt is TableOrJson.json:
        emit_json(loaded.model_dump(mode="json"))
    else:
        Console(highlight=False, emoji=False).print(render_open_loop(loaded))


def _fast_mode_band(
    arch: str | ModelArch,
    chip: str | Hardware,
    result: InferenceResult,
    deployment: dict[str, Any],
    speedup: float,
    tokens: tuple[int, int],
) -> FastModeBand:
    """``--fast-mode``: the band of this output speed-up on the layout the prediction chose."""
    from voicebudget.inference import Deployment, Workload, fast_mode_band  # lazy: start-up (only with --fast-mode)

    layout = {
        "chips": result.chips,
        "tensor_parallel": result.tensor_parallel,
        "pipeline_parallel": result.pipeline_parallel,
    }
    keep = (
        "precision",
        "kv_precision",
        "memory_utilization",
        "prefill_chunk_tokens",
        "chunked_prefill",
        "scheduler_steps",
        "software",
    )
    with user_errors(**PARAMETERS):
        return fast_mode_band(
            arch,
            chip,
            Deployment(**layout, **{k: deployment[k] for k in keep}),
            speedup,
            Workload(prompt_tokens=tokens[0], output_tokens=tokens[1]),
        )


def _print_inference(result: InferenceResult, band: FastModeBand | None, fmt: TableOrJson) -> None:
    # lazy: start-up (the library loads when the command runs)
    from voicebudget.inference._render import render_fast_mode_band, render_inference

    if fmt is TableOrJson.json:
        doc = result.to_dict()
        if band is not None:
            doc["fast_mode_band"] = band.model_dump(mode="json")
        emit_json(doc)
        return
    console = Console(highlight=False, emoji=False)
    console.print(render_inference(result))
    if band is not None:
        console.print(render_fast_mode_band(band))


def hardware_cmd(
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")] = TableOrJson.table,
) -> None:
    """List the hardware catalog with its key figures and sources."""
    # lazy: start-up (the library loads when the command runs)
    from voicebudget.inference._render import hardware_rows, render_catalog

    if fmt is TableOrJson.json:
        emit_json(hardware_rows())
    else:
        Console(highlight=False, emoji=False).print(render_catalog("hardware"))


def models_cmd(
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")] = TableOrJson.table,
) -> None:
    """List the model-architecture catalog with its key figures and sources."""
    # lazy: start-up (the library loads when the command runs)
    from voicebudget.inference._render import model_rows, render_catalog

    if fmt is TableOrJson.json:
        emit_json(model_rows())
    else:
        Console(highlight=False, emoji=False).print(render_catalog("models"))
