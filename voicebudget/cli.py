"""The ``voicebudget`` command line: a thin typer layer over the library.

Each command parses its arguments, calls one library function and renders the result.
Exit codes: 0 within budget, 1 over budget, 2 invalid input (message on stderr, no traceback),
3 an internal error (a bug: a one-line message with the version; ``VOICEBUDGET_TRACEBACK=1`` shows the
traceback). A crash never exits 1, which means only "over budget".
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from voicebudget._budget import Budget, with_overrides
from voicebudget._errors import BudgetExceeded, ModelError, ScenarioError, VoiceBudgetError
from voicebudget._io import check_target
from voicebudget._scenario import scenario_json_schema
from voicebudget._simulate import run_scenarios
from voicebudget.inference import PRECISIONS
from voicebudget.traces import ABSURD_MS, DEFAULT_STOP_SECS, FIT_METHODS, ReadOptions
from voicebudget.traces import FORMATS as TRACE_FORMATS
from voicebudget.tuning._executor import MAX_WORKERS

app = typer.Typer(
    name="voicebudget",
    help="Does your voice agent answer within budget? Model the pipeline, the hardware, councils; check traces.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_OK, EXIT_OVER_BUDGET, EXIT_INVALID, EXIT_BUG = 0, 1, 2, 3
PrecisionOpt = StrEnum("PrecisionOpt", {name: name for name in PRECISIONS})  # type: ignore[misc]
"""``--precision`` choices: the library's :data:`~voicebudget.inference.PRECISIONS`."""
TRACEBACK_ENV = "VOICEBUDGET_TRACEBACK"
"""Set to 1 to print the traceback of an internal error (exit code 3)."""
DEFAULT_SCENARIO = "webrtc-cascade.toml"


class Format(StrEnum):
    """Output formats of ``run``."""

    table = "table"
    json = "json"
    markdown = "markdown"


class TableOrJson(StrEnum):
    """Output formats of commands without a markdown form."""

    table = "table"
    json = "json"


class OnOff(StrEnum):
    """A setting that is on or off (a flag pair ``--x/--no-x`` would not fit ``--help`` at 80 columns)."""

    on = "on"
    off = "off"


SamplesOpt = Annotated[int | None, typer.Option("--samples", "-n", min=1, help="Simulated turns per variant.")]
SeedOpt = Annotated[int | None, typer.Option("--seed", min=0, help="Random seed (recorded in the output).")]
BudgetOpt = Annotated[
    float | None, typer.Option("--budget-ms", help=r"Budget in ms (default: the file's \[budget] table, else 800).")
]
PercentileOpt = Annotated[
    float | None, typer.Option("--percentile", help="Target percentile (default: the file's, else 95).")
]
AllowRootOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--allow-root",
        help="A folder that `file = ...` references may also read from (repeatable). "
        "Default: only the file's own folder and the working directory.",
    ),
]


def fail(message: str, code: int = EXIT_INVALID) -> NoReturn:
    """Print ``message`` to stderr and exit with ``code`` (2: invalid input)."""
    Console(stderr=True, highlight=False, soft_wrap=True).print(f"[red]error:[/] {escape(message)}", markup=True)
    raise typer.Exit(code)


def warn(message: str) -> None:
    """Print a warning to stderr (the exit code is unchanged)."""
    Console(stderr=True, highlight=False, soft_wrap=True).print(f"[yellow]warning:[/] {escape(message)}", markup=True)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the library's input/model errors into exit code 2 with their message, no traceback."""
    try:
        yield
    except (ScenarioError, ModelError) as exc:
        fail(str(exc))
    except BudgetExceeded as exc:  # a verdict, whoever raised it
        fail(str(exc), EXIT_OVER_BUDGET)
    except VoiceBudgetError as exc:  # pragma: no cover - every known subclass is handled above
        fail(str(exc))


def _value(choice: StrEnum | None) -> str | None:
    """A choice option's plain string (None stays None)."""
    return None if choice is None else choice.value


def budget_override(base: Budget, budget_ms: float | None, percentile: float | None) -> Budget:
    """``base`` with the CLI's ``--budget-ms``/``--percentile`` applied (exit 2 naming the option)."""
    try:
        return with_overrides(base, budget_ms, percentile)
    except ScenarioError as exc:
        fail(str(exc))


PLOT_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg")


def check_plot_path(
    path: Path | None, *, force: bool = False, inputs: list[Path] | tuple[Path, ...] = (), count: int = 1
) -> list[Path]:
    """Check ``--plot`` targets before any work: a known image format, an existing writable folder,
    no input file, and no existing file unless ``--force``. With ``count`` results (several scenarios)
    the targets are ``NAME-1.png`` ... ``NAME-count.png``, checked the same way.

    :returns: the target paths (empty without ``--plot``).
    """
    if path is None:
        return []
    if path.suffix.lower() not in PLOT_SUFFIXES:
        fail(f"--plot {path}: unknown image format {path.suffix!r}; allowed: {', '.join(PLOT_SUFFIXES)}")
    targets = plot_targets(path, count)
    with user_errors():
        for target in targets:
            check_target(target, overwrite=force, inputs=inputs, what="--plot")
    return targets


def plot_targets(path: Path, count: int) -> list[Path]:
    """``path`` for one result; ``NAME-1.SUFFIX`` ... for several."""
    return [path] if count == 1 else [path.with_stem(f"{path.stem}-{i + 1}") for i in range(count)]


ForceOpt = Annotated[bool, typer.Option("--force", help="Replace existing output files (never an input file).")]


def default_scenario_path() -> Path:
    """The bundled default scenario (``voicebudget/data/webrtc-cascade.toml``)."""
    return Path(str(resources.files("voicebudget") / "data" / DEFAULT_SCENARIO))


def emit_json(doc: Any) -> None:
    """Write a JSON document to stdout (flushed here, so a reader that went away is seen: exit 141)."""
    sys.stdout.write(json.dumps(doc, indent=2, allow_nan=False) + "\n")
    sys.stdout.flush()


@app.command()
def run(
    scenarios: Annotated[
        list[Path] | None, typer.Argument(help="Scenario files (.toml/.yaml). Default: the bundled WebRTC scenario.")
    ] = None,
    samples: SamplesOpt = None,
    seed: SeedOpt = None,
    budget_ms: BudgetOpt = None,
    percentile: PercentileOpt = None,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.table,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Also draw latency CDFs and a waterfall to this PNG.")
    ] = None,
    allow_root: AllowRootOpt = None,
    force: ForceOpt = False,
) -> None:
    """Simulate scenarios (every variant on common random numbers) and judge them against the budget.

    Exit code 0 when every variant is within budget, 1 when any is over, 2 on invalid input.
    """
    paths = scenarios or [default_scenario_path()]
    targets = check_plot_path(plot, force=force, inputs=paths, count=len(paths))
    with user_errors():
        results = run_scenarios(
            paths,
            samples=samples,
            seed=seed,
            budget_ms=budget_ms,
            percentile=percentile,
            allowed_roots=allow_root or (),
        )
    if targets:
        _plot_run(results, targets)
    _render_runs(results, fmt)
    raise typer.Exit(EXIT_OK if all(r.passed for r in results) else EXIT_OVER_BUDGET)


def _render_runs(results: list[Any], fmt: Format) -> None:
    from voicebudget._render import render_markdown, render_run

    if fmt is Format.json:
        emit_json(results[0].to_dict() if len(results) == 1 else [r.to_dict() for r in results])
    elif fmt is Format.markdown:
        sys.stdout.write("\n\n".join(render_markdown(r) for r in results) + "\n")
    else:
        console = Console(highlight=False)
        for r in results:
            console.print(render_run(r))


def _plot_run(results: list[Any], targets: list[Path]) -> None:
    try:
        from voicebudget._plot import plot_run  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        fail(f"--plot needs matplotlib: pip install 'voicebudget[plot]' ({exc})")
    for r, target in zip(results, targets, strict=True):
        plot_run(r, target)


@app.command()
def schema() -> None:
    """Print the JSON Schema of scenario files (for editor completion)."""
    emit_json(scenario_json_schema())


@app.command()
def infer(
    hardware: Annotated[str, typer.Option("--hardware", "-H", help="Hardware id (see `voicebudget hardware`).")] = "",
    model: Annotated[str, typer.Option("--model", "-m", help="Model id (see `voicebudget models`).")] = "",
    chips: Annotated[int | None, typer.Option("--chips", min=1, help="Chips (default: the fewest that fit).")] = None,
    tp: Annotated[int | None, typer.Option("--tp", min=1, help="Tensor-parallel size (splits the heads).")] = None,
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
            help="Share of chip memory for weights + KV cache (as vLLM's gpu memory utilization; default 0.9).",
        ),
    ] = None,
    request_rate: Annotated[
        float | None,
        typer.Option(
            "--request-rate",
            help="Open-loop Poisson arrivals, requests/s (instead of --concurrency): TTFT p50/p90/p99.",
        ),
    ] = None,
    prompt_tokens: Annotated[int, typer.Option("--prompt-tokens", min=1, help="Prompt tokens per request.")] = 1000,
    output_tokens: Annotated[int, typer.Option("--output-tokens", min=1, help="Output tokens per request.")] = 200,
    software: Annotated[
        str | None,
        typer.Option(
            "--software",
            metavar="GEN",
            help="Wafer/LPU vendor software generation (see `voicebudget hardware`; default the latest).",
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
    from voicebudget.inference import (
        ChipPrice,
        Deployment,
        Hardware,
        ModelArch,
        SpeculativeDecoding,
        Workload,
        estimate_inference,
        get_hardware,
        hardware_from_toml,
        model_from_hf_config,
        parse_speculative,
    )
    from voicebudget.inference._render import render_inference

    arch: str | ModelArch = model
    chip: str | Hardware = hardware
    if not model and model_config_path is None:
        fail("give --model ID (see `voicebudget models`) or --model-config path/to/config.json")
    if not hardware and hardware_config_path is None:
        fail("give --hardware ID (see `voicebudget hardware`) or --hardware-config path/to/chip.toml")
    if hardware and hardware_config_path is not None:
        fail("give --hardware or --hardware-config, not both")
    if model and model_config_path is not None:
        fail("give --model or --model-config, not both")
    if concurrency is not None and request_rate is not None:
        fail(
            "give --concurrency (a closed loop: that many requests always in flight) or --request-rate "
            "(open-loop arrivals: the concurrency follows), not both"
        )
    if software is not None and request_rate is not None:
        fail("--software picks a wafer/LPU software generation; --request-rate is the GPU scheduler model")
    if software is not None and not software.strip():
        fail(f"--software: give a generation id (`voicebudget hardware` lists them, e.g. 2024-08), got {software!r}")
    concurrency = 1 if concurrency is None else concurrency
    with user_errors():
        spec: SpeculativeDecoding | None = parse_speculative(speculative) if speculative is not None else None
        if model_config_path is not None:
            arch = model_from_hf_config(model_config_path)
        if hardware_config_path is not None:
            chip = hardware_from_toml(hardware_config_path)
    if memory_utilization is not None:
        if not (0.0 < memory_utilization <= 1.0):
            fail(f"--memory-utilization must be in (0, 1], got {memory_utilization}")
        with user_errors():
            sram = (chip if isinstance(chip, Hardware) else get_hardware(chip)).sram
        if sram is not None:  # it would be ignored: SRAM chips are sized by their timing's usable share
            fail(
                f"--memory-utilization applies to HBM chips; on an SRAM-resident chip the usable share of SRAM is "
                f"its timing's usable_sram_fraction ({sram.usable_sram_fraction:g}); leave the option out"
            )
    else:
        memory_utilization = 0.9
    if price is not None and not (math.isfinite(price) and price <= 1e6):
        fail(f"--price-per-chip-hour: must be a finite number of US$ > 0 and <= 1,000,000, got {price}")
    chip_price = ChipPrice(usd_per_chip_hour=price, source="--price-per-chip-hour") if price else None
    if request_rate is not None:
        from voicebudget.inference import estimate_open_loop
        from voicebudget.inference._render import render_open_loop

        if not (math.isfinite(request_rate) and request_rate > 0):
            fail(f"--request-rate: must be a finite number of requests/s > 0, got {request_rate}")
        if spec is not None:
            fail(
                "--speculative applies to --concurrency predictions; the --request-rate scheduler model does not "
                "include speculative decoding yet (run --concurrency at the mean concurrency it reports)"
            )
        with user_errors():
            loaded = estimate_open_loop(
                arch,
                chip,
                Deployment(
                    chips=chips,
                    tensor_parallel=tp,
                    precision=_value(precision),
                    kv_precision=_value(kv_precision),
                    memory_utilization=memory_utilization,
                ),
                Workload(prompt_tokens=prompt_tokens, output_tokens=output_tokens),
                request_rate,
            )
        if fmt is TableOrJson.json:
            emit_json(loaded.model_dump(mode="json"))
        else:
            Console(highlight=False).print(render_open_loop(loaded))
        return
    with user_errors():
        result = estimate_inference(
            arch,
            chip,
            Deployment(
                chips=chips,
                tensor_parallel=tp,
                precision=_value(precision),
                concurrency=concurrency,
                kv_precision=_value(kv_precision),
                memory_utilization=memory_utilization,
                software=software,
            ),
            Workload(prompt_tokens=prompt_tokens, output_tokens=output_tokens),
            price=chip_price,
            speculative=spec,
        )
    if fmt is TableOrJson.json:
        emit_json(result.to_dict())
    else:
        Console(highlight=False).print(render_inference(result))


@app.command("hardware")
def hardware_cmd(
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")] = TableOrJson.table,
) -> None:
    """List the hardware catalog with its key figures and sources."""
    from voicebudget.inference._render import hardware_rows, render_catalog

    if fmt is TableOrJson.json:
        emit_json(hardware_rows())
    else:
        Console(highlight=False).print(render_catalog("hardware"))


@app.command("models")
def models_cmd(
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")] = TableOrJson.table,
) -> None:
    """List the model-architecture catalog with its key figures and sources."""
    from voicebudget.inference._render import model_rows, render_catalog

    if fmt is TableOrJson.json:
        emit_json(model_rows())
    else:
        Console(highlight=False).print(render_catalog("models"))


FitMethodOpt = StrEnum("FitMethodOpt", {name: name for name in FIT_METHODS})  # type: ignore[misc]
"""How ``fit`` turns observed stages into distributions: the library's :data:`FIT_METHODS`."""
DEFAULT_FIT_METHOD = FitMethodOpt(FIT_METHODS[0])
"""The library lists its default method first (``fit_traces(method="joint")``)."""


TracesArg = Annotated[
    list[Path], typer.Argument(help="Trace files: Pipecat logs, LiveKit metrics JSON lines, OTLP JSON span exports.")
]
TraceFormatIn = StrEnum("TraceFormatIn", {name: name for name in TRACE_FORMATS})  # type: ignore[misc]
"""Trace formats ``check``/``fit`` read: the names of the library's reader table."""
FormatInOpt = Annotated[
    TraceFormatIn | None, typer.Option("--format-in", help="Trace format (default: detected from the content).")
]
IncludeOpt = Annotated[
    bool, typer.Option("--include-anomalies", help="Count flagged turns (that have a total) in the statistics.")
]
StopSecsOpt = Annotated[
    float | None,
    typer.Option(
        "--stop-secs", help=f"Pipecat VAD stop_secs in s (default: the log's VAD params, else {DEFAULT_STOP_SECS:g})."
    ),
]
LogFormatOpt = Annotated[
    str | None,
    typer.Option(
        "--log-format",
        help="Pipecat log written with your own loguru format: give the format string, "
        "e.g. '{time} - {level} - {extra[call_id]} - {message}' (default: common layouts detected).",
    ),
]
AbsurdOpt = Annotated[
    float, typer.Option("--absurd-ms", help=f"Flag any stage longer than this, ms (>= 1; default {ABSURD_MS:g}).")
]


@app.command("check")
def check_cmd(
    traces: TracesArg,
    budget_ms: BudgetOpt = None,
    percentile: PercentileOpt = None,
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")] = TableOrJson.table,
    format_in: FormatInOpt = None,
    include_anomalies: IncludeOpt = False,
    stop_secs: StopSecsOpt = None,
    absurd_ms: AbsurdOpt = ABSURD_MS,
    log_format: LogFormatOpt = None,
    turns: Annotated[bool, typer.Option("--turns", help="List every turn (default: the 10 slowest).")] = False,
) -> None:
    """Check real turns from traces against the budget: stage percentiles, tail attribution, first turn
    vs steady state, the slowest turns (every turn with --turns), anomalies (flagged, excluded unless
    --include-anomalies).

    Exit code 0 within budget, 1 over, 2 unreadable or unknown-format trace.
    """
    from voicebudget.traces import NoUsableTurnsError, check_traces

    with user_errors():
        budget = budget_override(Budget(), budget_ms, percentile)
        options = ReadOptions.checked(stop_secs=stop_secs, absurd_ms=absurd_ms, log_format=log_format)
        try:
            result = check_traces(
                traces,
                budget,
                fmt=format_in.value if format_in else None,
                include_anomalies=include_anomalies,
                options=options,
            )
        except NoUsableTurnsError as exc:  # still show what was read, then exit 2
            if fmt is TableOrJson.json:
                emit_json(exc.to_dict())
            else:
                from voicebudget.traces._render import render_unusable

                Console(highlight=False).print(render_unusable(exc))
            raise
    if fmt is TableOrJson.json:
        emit_json(result.to_dict())
    else:
        from voicebudget.traces._render import render_check

        Console(highlight=False).print(render_check(result, all_turns=turns))
    raise typer.Exit(EXIT_OK if result.passed else EXIT_OVER_BUDGET)


@app.command("fit")
def fit_cmd(
    traces: TracesArg,
    output: Annotated[Path, typer.Option("--output", "-o", help="Scenario file to write (.toml).")],
    method: Annotated[FitMethodOpt, typer.Option("--method", help="How stages become distributions.")] = (
        DEFAULT_FIT_METHOD
    ),
    budget_ms: BudgetOpt = None,
    percentile: PercentileOpt = None,
    format_in: FormatInOpt = None,
    include_anomalies: IncludeOpt = False,
    stop_secs: StopSecsOpt = None,
    absurd_ms: AbsurdOpt = ABSURD_MS,
    log_format: LogFormatOpt = None,
    force: ForceOpt = False,
) -> None:
    """Fit a scenario to traces: stages are the observed distributions, so `voicebudget run` on the
    written file reproduces the traces' percentiles and variants can swap a stage for a model.

    An existing output file is replaced only with --force, and never when it is one of the traces.
    """
    from voicebudget.traces import fit_traces
    from voicebudget.traces._render import render_fit

    with user_errors():
        check_target(output, overwrite=force, inputs=traces, what="-o")
        budget = budget_override(Budget(), budget_ms, percentile)
        options = ReadOptions.checked(stop_secs=stop_secs, absurd_ms=absurd_ms, log_format=log_format)
        result = fit_traces(
            traces,
            method=method.value,  # type: ignore[arg-type]  # one of FIT_METHODS
            budget=budget,
            fmt=format_in.value if format_in else None,
            include_anomalies=include_anomalies,
            options=options,
        )
    try:
        with user_errors():
            result.write(output, overwrite=force)
    except OSError as exc:
        fail(f"{output}: cannot write: {exc.strerror or exc}")
    for message in result.warnings:
        warn(f"{output}: {message}")
    sys.stdout.write(render_fit(result, str(output)) + "\n")


@app.command("council")
def council_cmd(
    file: Annotated[Path, typer.Argument(help="Council file (.toml/.yaml), e.g. councils/intent-wafer-all.toml.")],
    budget_ms: Annotated[
        float | None, typer.Option("--budget-ms", help="Budget for the council in ms (default: the file's, or 800).")
    ] = None,
    percentile: PercentileOpt = None,
    samples: Annotated[int | None, typer.Option("--samples", "-n", min=1, help="Simulated turns.")] = None,
    seed: SeedOpt = None,
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")] = TableOrJson.table,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Also draw the council's and members' CDFs and a waterfall to a PNG.")
    ] = None,
    allow_root: AllowRootOpt = None,
    force: ForceOpt = False,
) -> None:
    """Evaluate a council of models: latency against the budget (and the member driving the tail),
    quality, cost per turn and expected user time per completed request.

    Exit code 0 within budget, 1 over budget, 2 on an invalid file.
    """
    check_plot_path(plot, force=force, inputs=[file])
    from voicebudget.councils import run_council

    with user_errors():
        result = run_council(
            file, budget_ms=budget_ms, percentile=percentile, samples=samples, seed=seed, allowed_roots=allow_root or ()
        )
    if plot is not None:
        try:
            from voicebudget._plot import plot_council
        except ImportError as exc:
            fail(f"--plot needs matplotlib: pip install 'voicebudget[plot]' ({exc})")
        plot_council(result, plot)
    if fmt is TableOrJson.json:
        emit_json(result.to_dict())
    else:
        from voicebudget.councils._render import render_council

        Console(highlight=False).print(render_council(result))
    raise typer.Exit(EXIT_OK if result.passed else EXIT_OVER_BUDGET)


@app.command("council-fit")
def council_fit_cmd(
    file: Annotated[Path, typer.Argument(help="CSV of answers: item, member, answer, correct (one row per answer).")],
    answers: Annotated[
        str | None,
        typer.Option("--answers", help="Answer space: K (e.g. 40) or 'open' (default: the distinct answers seen)."),
    ] = None,
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")] = TableOrJson.table,
) -> None:
    """Estimate a council's rho, wrong_concentration and unsolved from your own logs (repeated answers
    per item) and print the council-file fields. Exit code 0, or 2 on an invalid file.
    """
    from voicebudget.councils import fit_answer_space

    space: int | str | None = answers
    if answers is not None and answers != "open":
        if not answers.isdigit() or int(answers) < 2:
            fail(f"--answers {answers}: expected an integer >= 2 or 'open'")
        space = int(answers)
    with user_errors():
        fit = fit_answer_space(file, answers=space)  # type: ignore[arg-type]
    if fmt is TableOrJson.json:
        emit_json(fit.to_dict())
    else:
        from voicebudget.councils._render import render_answer_space_fit

        Console(highlight=False).print(render_answer_space_fit(fit, str(file)))


@app.command("tune")
def tune_cmd(
    file: Annotated[Path, typer.Argument(help=r"Council file with a \[search] table, e.g. councils/tune-intent.toml.")],
    scenario: Annotated[
        Path | None,
        typer.Option("--scenario", help="Judge voice-to-voice latency with the council as this scenario's LLM."),
    ] = None,
    budget_ms: BudgetOpt = None,
    percentile: PercentileOpt = None,
    samples: Annotated[int, typer.Option("--samples", "-n", min=1, help="Turns per configuration.")] = 2_000,
    seed: Annotated[int, typer.Option("--seed", min=0, help="One seed for all configurations.")] = 1,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            "-w",
            min=1,
            max=MAX_WORKERS,
            help="Local worker processes (faster only on free cores and spaces of thousands: docs/tuning.md).",
        ),
    ] = 1,
    scheduler: Annotated[
        str | None, typer.Option("--scheduler", help="Dask scheduler address (tcp://host:8786).")
    ] = None,
    trials: Annotated[int, typer.Option("--trials", min=1, help="Optuna trials when the space is too large.")] = 2_000,
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")] = TableOrJson.table,
    allow_root: AllowRootOpt = None,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Also draw the Pareto front (user time vs p95 and cost) to a PNG.")
    ] = None,
    force: ForceOpt = False,
) -> None:
    """Search a council's configuration space; print the Pareto front of expected user time, latency at
    the target percentile and cost among configurations within budget, and the recommended pick.

    Exit code 0 when a configuration is within budget, 1 when none is, 2 on invalid input or when an
    evaluation failed (the errors are listed).
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    from voicebudget.tuning import tune_council
    from voicebudget.tuning._render import render_tune

    check_plot_path(plot, force=force, inputs=[file])
    columns = ("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar, user_errors():
        task = bar.add_task("tuning", total=None)
        result = tune_council(
            file,
            scenario=scenario,
            budget_ms=budget_ms,
            percentile=percentile,
            samples=samples,
            seed=seed,
            workers=workers,
            scheduler=scheduler,
            trials=trials,
            allowed_roots=allow_root or (),
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )
    if fmt is TableOrJson.json:
        emit_json(result.to_dict())
    else:
        Console(highlight=False).print(render_tune(result))
    if plot is not None:
        try:
            from voicebudget._plot import plot_tune
        except ImportError as exc:
            fail(f"--plot needs matplotlib: pip install 'voicebudget[plot]' ({exc})")
        plot_tune(result, plot)
    if result.errors:
        fail(f"{len(result.errors)} of {result.space_size} evaluations failed (listed above); results are incomplete")
    raise typer.Exit(EXIT_OK if result.best is not None else EXIT_OVER_BUDGET)


def _batch_caps(text: str | None) -> tuple[int | None, ...]:
    """``--batch-cap 4,16,64`` -> (4, 16, 64); exit 2 naming the option on anything else."""
    if text is None:
        return (None,)
    try:
        caps = tuple(int(x) for x in text.split(","))
    except ValueError:
        fail(f"--batch-cap: expected whole numbers separated by commas, got {text!r}")
    if not caps or min(caps) < 1 or max(caps) > 1_000_000:
        fail(f"--batch-cap: each cap must be in 1..1,000,000, got {text!r}")
    return caps


@app.command("capacity")
def capacity_cmd(
    scenario: Annotated[Path, typer.Argument(help="Scenario file whose voice turn the deployments serve.")],
    hardware: Annotated[
        str | None, typer.Option("--hardware", "-H", help="Hardware id; default: the scenario's own LLM stages.")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model id (with --hardware).")] = None,
    chips: Annotated[int | None, typer.Option("--chips", min=1, help="Chips per deployment (default: fewest).")] = None,
    precision: Annotated[PrecisionOpt | None, typer.Option("--precision", help="Weights.")] = None,
    batch_cap: Annotated[
        str | None, typer.Option("--batch-cap", help="Max requests in flight, e.g. 4,16,64 (one deployment each).")
    ] = None,
    price: Annotated[
        float | None, typer.Option("--price-per-chip-hour", min=0.0, max=1e6, help="US$ per chip-hour.")
    ] = None,
    turns_per_minute: Annotated[
        float | None, typer.Option("--turns-per-minute", help="Agent turns per call-minute (default: file's, else 6).")
    ] = None,
    prefix_caching: Annotated[
        OnOff | None,
        typer.Option(
            "--prefix-caching", help="on: servers keep each call's KV cache between turns (default: the file's)."
        ),
    ] = None,
    target_calls: Annotated[
        int | None, typer.Option("--target-calls", min=1, help="Also give chips for this many calls.")
    ] = None,
    budget_ms: BudgetOpt = None,
    percentile: PercentileOpt = None,
    samples: Annotated[int, typer.Option("--samples", "-n", min=100, help="Turns per load level.")] = 20_000,
    seed: SeedOpt = None,
    workers: Annotated[
        int, typer.Option("--workers", "-w", min=1, max=MAX_WORKERS, help="Local worker processes.")
    ] = 1,
    scheduler: Annotated[str | None, typer.Option("--scheduler", help="Dask scheduler address.")] = None,
    fmt: Annotated[TableOrJson, typer.Option("--format", "-f", help="Output format.")] = TableOrJson.table,
    plot: Annotated[Path | None, typer.Option("--plot", help="Draw p95 vs calls and cost vs p95 to this PNG.")] = None,
    force: ForceOpt = False,
) -> None:
    """How many concurrent calls each deployment carries within budget, and the cost per call-minute
    (docs/capacity.md).

    Exit code 0 when some deployment carries at least one call within budget, 1 when none does, 2 on
    invalid input.
    """
    from voicebudget.capacity import plan_capacity_file
    from voicebudget.capacity._render import render_capacity

    check_plot_path(plot, force=force, inputs=[scenario])
    caps = _batch_caps(batch_cap)
    overrides: dict[str, Any] = {} if turns_per_minute is None else {"turns_per_call_minute": turns_per_minute}
    if prefix_caching is not None:
        overrides["prefix_caching"] = prefix_caching is OnOff.on
    with user_errors():
        result = plan_capacity_file(
            scenario,
            hardware=hardware,
            model=model,
            chips=chips,
            precision=_value(precision),
            batch_caps=caps,
            usd_per_chip_hour=price,
            budget_ms=budget_ms,
            percentile=percentile,
            traffic_overrides=overrides,
            samples=samples,
            seed=seed,
            target_calls=target_calls,
            workers=workers,
            scheduler=scheduler,
        )
    if plot is not None:
        try:
            from voicebudget.capacity._render import plot_capacity

            plot_capacity(result, plot)
        except ImportError as exc:
            fail(f"--plot needs matplotlib: pip install 'voicebudget[plot]' ({exc})")
    if fmt is TableOrJson.json:
        emit_json(result.to_dict())
    else:
        Console(highlight=False).print(render_capacity(result))
    carried = any(d.max_concurrent_calls != 0 for d in result.deployments)
    raise typer.Exit(EXIT_OK if carried else EXIT_OVER_BUDGET)


Command = Callable[..., Any]


def report_bug(exc: BaseException) -> NoReturn:
    """Exit 3 with a one-line "internal error" message naming the version (the traceback only when
    ``VOICEBUDGET_TRACEBACK=1``): a crash must never look like a verdict (exit 1)."""
    from voicebudget import __version__

    if os.environ.get(TRACEBACK_ENV, "") not in ("", "0"):
        traceback.print_exception(exc, file=sys.stderr)
    detail = " ".join(str(exc).split())[:300]
    fail(
        f"internal error in voicebudget {__version__} (a bug, not a verdict): {type(exc).__name__}: {detail}. "
        f"Set {TRACEBACK_ENV}=1 to see the traceback, and please report it.",
        EXIT_BUG,
    )


def _usage_error_base() -> type[Exception]:
    """typer's ``ClickException``, wherever this typer version keeps it: click itself before typer 0.29,
    a copy inside typer since (which no longer depends on click, so importing click would fail)."""
    for cls in typer.BadParameter.__mro__:
        if cls.__name__ == "ClickException":
            return cls
    return typer.BadParameter


_EXITS = (typer.Exit,)
_PASS_THROUGH = (*_EXITS, typer.Abort, _usage_error_base())


def crash_guard(command: Command) -> Command:
    """Wrap a command so that any exception is an exit code: the library's input errors 2, an unexpected
    exception 3 (:func:`report_bug`); exit 1 stays "over budget" only."""

    @functools.wraps(command)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except _PASS_THROUGH:
            raise
        except BudgetExceeded as exc:
            fail(str(exc), EXIT_OVER_BUDGET)
        except VoiceBudgetError as exc:  # ScenarioError, ModelError not caught by the command itself
            fail(str(exc))
        except BrokenPipeError:  # the reader of stdout went away (| head): exit as a shell would (SIGPIPE)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise SystemExit(141) from None
        except Exception as exc:
            report_bug(exc)

    return guarded


def one_line_paragraphs(doc: str) -> str:
    """A docstring with each paragraph joined into one line: typer keeps a paragraph's line breaks
    (they would break ``--help`` mid-sentence at any width), rich wraps the lines to the terminal."""
    return "\n\n".join(" ".join(p.split()) for p in inspect.cleandoc(doc).split("\n\n"))


for _info in app.registered_commands:
    if _info.callback is not None:
        if _info.help is None and _info.callback.__doc__:
            _info.help = one_line_paragraphs(_info.callback.__doc__)
        _info.callback = crash_guard(_info.callback)


def main() -> None:
    """Console-script entry point (every command runs under :func:`crash_guard`)."""
    try:
        try:
            app()
        finally:  # flush here, not at interpreter exit, so a reader that went away is seen (exit 141)
            sys.stdout.flush()
    except _EXITS as exc:
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)
    except Exception as exc:  # outside a command (argument parsing, completion): still not exit 1
        try:
            report_bug(exc)
        except _EXITS as done:
            sys.exit(done.exit_code)


if __name__ == "__main__":  # pragma: no cover
    main()
