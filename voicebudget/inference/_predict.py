"""One entry point: :func:`estimate_inference` (model x hardware x deployment x workload -> result)."""

from __future__ import annotations

import itertools
import math

from voicebudget._errors import ModelError, param
from voicebudget.inference._catalog import (
    PRECISION_BYTES,
    ChipPrice,
    Hardware,
    ModelArch,
    Precision,
    get_hardware,
    get_model,
)
from voicebudget.inference._catalog_types import divisors
from voicebudget.inference._gpu import (
    PREDICTABLE_LOAD,
    PROMPT_SHARE_FLOOR,
    GPUPlan,
    admitted_requests,
    check_fits,
    decode_step,
    decode_step_ms,
    default_step_budget,
    fits,
    gpu_stack,
    lower_bound_note,
    memory_need,
    prefill_ms,
    step_bound,
    step_breakdown,
    step_terms,
)
from voicebudget.inference._prefill_first import closed_loop_cycle
from voicebudget.inference._speculative import SpeculativeDecoding
from voicebudget.inference._types import Deployment, GPUCalibration, InferenceResult, StepBreakdown, Workload
from voicebudget.inference._wafer import (
    check_wafer_fits,
    wafer_chips_needed,
    wafer_memory,
    wafer_prefill_ms,
    wafer_token_step,
)

__all__ = ["DEFAULT_CALIBRATION", "estimate_inference"]

DEFAULT_CALIBRATION = GPUCalibration()
"""The fitted GPU constants (see :class:`GPUCalibration` and docs/inference.md)."""

CHIP_TIME_ONLY = (
    "chip time only: TTFT and TPOT on the chips, without the hosted API path (network, the "
    "provider's queueing and overhead); a hosted wafer or LPU model is reached through that path, "
    'which a scenario\'s wafer stage adds by default (path = "hosted"; docs/inference.md)'
)
"""The note every SRAM-resident (wafer, LPU) prediction carries."""

MAX_PIPELINE_STAGES = 64
"""The automatic chip count gives up beyond this many pipeline stages of one NVLink domain each."""


def estimate_inference(
    model: str | ModelArch,
    hardware: str | Hardware,
    deployment: Deployment | None = None,
    workload: Workload | None = None,
    *,
    speculative: SpeculativeDecoding | None = None,
    price: ChipPrice | None = None,
    calibration: GPUCalibration = DEFAULT_CALIBRATION,
) -> InferenceResult:
    """Predict TTFT, TPOT, throughput and cost of serving ``model`` on ``hardware``.

    HBM hardware (GPUs) uses the iteration-level roofline of :mod:`voicebudget.inference._gpu`;
    SRAM-resident hardware (wafer-scale, LPU) the per-layer/per-hop model of ``_wafer``.
    Takes ~20-100 us (benchmarks/bench_infer.py).

    :param model: a catalog id/alias or a :class:`ModelArch`.
    :param hardware: a catalog id or a :class:`Hardware`.
    :param deployment: chips, parallelism, precision, concurrency (default: fewest chips, native
        precision, concurrency 1).
    :param workload: prompt and output tokens per request (default 1000 in, 200 out).
    :param speculative: speculative decoding: TPOT is the verification step (``V`` query tokens per
        sequence, costed by the hardware model at this concurrency) plus the draft steps, over the mean
        tokens emitted per step (``voicebudget.inference._speculative``); the gain shrinks, and turns
        into a slowdown, as the verification step becomes compute-bound.
    :param price: $/chip-hour overriding the catalog's (needed for a cost on hardware without one).
    :param calibration: the fitted GPU constants.
    :returns: the frozen :class:`InferenceResult` (times in ms).
    :raises ModelError: unknown ids; prompt + output tokens beyond the model's maximum context; a
        tensor-parallel degree that does not split the attention heads or another impossible parallel
        layout; weights + one request's KV cache that do not fit the chips (the message names the gap and
        the chip count that would fit; more requests than the KV cache holds wait for a slot instead);
        ``deployment.memory_utilization``, the scheduler fields (``prefill_chunk_tokens``, ``chunked_prefill``,
        ``scheduler_steps``), ``replicas`` above 1 or ``pipeline_parallel`` other than ``chips`` on an
        SRAM-resident chip (its model has no use for them: they would be ignored).
    """
    m, hw = get_model(model), get_hardware(hardware)
    dep, wl = deployment or Deployment(), workload or Workload()
    if hw.sram is not None:  # a wafer/LPU software generation (a GPU's is its serving stack: ``_plan``)
        hw = hw.with_software(dep.software)
        _check_sram_deployment(hw, dep)
    _check_context(m, wl)
    if hw.memory_kind == "sram":
        result = _estimate_wafer(m, hw, dep, wl, speculative)
    else:
        result = _estimate_gpu(m, hw, dep, wl, calibration, speculative)
    alias = model.strip().lower() if isinstance(model, str) else None
    if alias is not None and alias != m.id:
        result = result.model_copy(update={"model_alias": alias})
    return _finish(result, price or hw.price)


def _check_sram_deployment(hw: Hardware, dep: Deployment) -> None:
    """Refuse the GPU serving fields an SRAM-resident chip's model has no use for (they would be ignored)."""
    assert hw.sram is not None
    if dep.memory_utilization is not None:
        raise ModelError(
            f"{param('memory_utilization', 'Deployment.memory_utilization')} applies to HBM chips; on an "
            f"SRAM-resident chip the usable share of SRAM is its timing's usable_sram_fraction "
            f"({hw.sram.usable_sram_fraction:g}); leave it out"
        )
    scheduler = (
        ("prefill_chunk_tokens", dep.prefill_chunk_tokens is not None),
        ("chunked_prefill", not dep.chunked_prefill),
        ("scheduler_steps", dep.scheduler_steps != 1),
    )
    for name, given in scheduler:
        if given:
            raise ModelError(
                f"{param(name, 'Deployment.' + name)} describes a GPU serving stack's scheduler; {hw.name} is "
                "SRAM-resident, modelled per layer and hop with no step budget: leave it out"
            )
    if (dep.replicas or 1) > 1:
        raise ModelError(
            f"{param('replicas', 'Deployment.replicas')} {dep.replicas} on {hw.name}: SRAM-resident chips are "
            "modelled as one pipeline; give the chips of one copy and its share of the concurrency"
        )
    if dep.pipeline_parallel is not None and dep.pipeline_parallel != dep.chips:
        raise ModelError(
            f"{param('pipeline_parallel', 'Deployment.pipeline_parallel')} {dep.pipeline_parallel} on {hw.name}: "
            "every SRAM-resident chip is a pipeline stage; give chips instead"
        )


def resident_tokens(wl: Workload) -> float:
    """KV-cache tokens one request holds on average over its life under paged attention: its prompt and
    half its output, ``P + O / 2`` (blocks are allocated as tokens are generated, vLLM's PagedAttention,
    Kwon et al., SOSP 2023). A deployment is sized for that mean, as audited MLPerf runs are (a single
    B200 at fp4 serving Llama-2-70B to ~1,400 queries in flight); a burst of long outputs is then
    absorbed by preemption, which this model does not charge."""
    return wl.prompt_tokens + wl.output_tokens / 2.0


def _check_context(m: ModelArch, wl: Workload) -> None:
    """Refuse a request longer than the model's maximum context (no check when it is not given)."""
    limit, total = m.max_context_tokens, wl.prompt_tokens + wl.output_tokens
    if limit is None or total <= limit:
        return
    room = limit - wl.output_tokens
    hint = (
        f"; with {wl.output_tokens:,} output tokens the prompt can be at most {room:,} tokens"
        if room > 0
        else "; the output alone exceeds it"
    )
    raise ModelError(
        f"prompt {wl.prompt_tokens:,} + output {wl.output_tokens:,} = {total:,} tokens exceeds {m.name}'s maximum "
        f"context of {limit:,} tokens (max_context_tokens, from its config.json max_position_embeddings){hint}"
    )


def _check_tp(m: ModelArch, hw: Hardware, tp: int) -> None:
    """Refuse a tensor-parallel degree beyond the scale-up domain or one that does not split the heads."""
    if tp > hw.max_tensor_parallel:
        raise ModelError(f"tensor_parallel {tp} exceeds {hw.name}'s scale-up domain of {hw.max_tensor_parallel} chips")
    options = m.tensor_parallel_options()
    if tp not in options:
        raise ModelError(
            f"tensor_parallel {tp} does not split {m.name}'s attention: tp must divide {m.q_heads} query heads "
            f"(and divide, or be a multiple of, its {m.kv_heads} KV heads): {', '.join(map(str, options))}"
        )


def _precisions(m: ModelArch, dep: Deployment) -> tuple[Precision | None, Precision, Precision]:
    """(weights precision for byte counts or None = released mix, reported precision, kv precision)."""
    reported: Precision = dep.precision or m.native_precision
    kv: Precision = dep.kv_precision or ("fp8" if reported in ("fp8", "fp4") else "bf16")
    return dep.precision, reported, kv


def _check_stages(m: ModelArch, pp: int) -> None:
    """A pipeline stage holds at least one layer."""
    if pp > m.layers:
        raise ModelError(
            f"{param('pipeline_parallel', 'Deployment.pipeline_parallel')} {pp} exceeds {m.name}'s {m.layers} layers "
            "(a pipeline stage holds at least one layer)"
        )


def _tp_candidates(m: ModelArch, hw: Hardware) -> list[int]:
    """Valid tensor-parallel degrees within one scale-up domain, ascending (1 is always valid)."""
    return m.tensor_parallel_options(hw.max_tensor_parallel)


def _plan(m: ModelArch, hw: Hardware, dep: Deployment, cal: GPUCalibration, tp: int, pp: int, replicas: int) -> GPUPlan:
    prec, _, kv = _precisions(m, dep)
    stack = gpu_stack(dep.software)
    return GPUPlan(
        model=m, hardware=hw, precision=prec, kv_precision=kv, tp=tp, pp=pp, replicas=replicas, cal=cal, stack=stack
    )


def _fits(plan: GPUPlan, dep: Deployment, wl: Workload) -> bool:
    return fits(plan, math.ceil(dep.concurrency / plan.replicas), resident_tokens(wl), dep.memory_utilization)


def _fewest(m: ModelArch, hw: Hardware, dep: Deployment, wl: Workload, cal: GPUCalibration) -> GPUPlan | None:
    tps = [dep.tensor_parallel] if dep.tensor_parallel else _tp_candidates(m, hw)
    # Fewest chips first: every tp alone (ascending), then pipeline stages of the largest tp (more chips
    # than any tp alone), the order sorting (chips, -tp) would give, without building the list.
    options = itertools.chain(((tp, 1) for tp in tps), ((tps[-1], pp) for pp in range(2, MAX_PIPELINE_STAGES + 1)))
    for tp, pp in options:
        if (dep.pipeline_parallel and pp != dep.pipeline_parallel) or pp > m.layers:
            continue
        plan = _plan(m, hw, dep, cal, tp, pp, dep.replicas or 1)  # replicas asked: copies of the fewest
        if _fits(plan, dep, wl):
            return plan
    return None


def _layout_options(m: ModelArch, hw: Hardware, dep: Deployment, chips: int) -> tuple[int, list[int]]:
    """The tensor-parallel degree for ``chips`` and the pipeline-stage counts to try, fewest first (the rest of the
    chips are replicas), with the caller's ``pipeline_parallel`` / ``replicas`` kept.

    :raises ModelError: a split that does not divide the chips, or more stages than layers.
    """
    # the largest valid degree that leaves whole pipeline stages and replicas where the caller fixed them
    fixed = (dep.pipeline_parallel or 1) * (dep.replicas or 1)
    tp = dep.tensor_parallel or max((t for t in _tp_candidates(m, hw) if chips % (t * fixed) == 0), default=1)
    if chips % tp:
        raise ModelError(f"chips ({chips}) must be a multiple of tensor_parallel ({tp})")
    pps = _stage_counts(dep, chips, tp)
    if dep.pipeline_parallel is not None or dep.replicas is not None:
        _check_stages(m, pps[0])
    return tp, [pp for pp in pps if pp <= m.layers]  # a stage holds at least one layer (1 always qualifies)


def _stage_counts(dep: Deployment, chips: int, tp: int) -> list[int]:
    """The pipeline-stage counts ``chips`` at ``tp`` allow: the caller's, the one its replicas leave, or every
    divisor of the chips beyond one tensor-parallel group."""
    pp, replicas = dep.pipeline_parallel, dep.replicas
    if pp is None:
        if replicas is None:
            return divisors(chips // tp)
        if chips % (tp * replicas):
            raise ModelError(f"chips ({chips}) must be a multiple of tensor_parallel x replicas ({tp * replicas})")
        return [chips // (tp * replicas)]
    if chips % (tp * pp):
        raise ModelError(f"chips ({chips}) must be a multiple of tensor_parallel x pipeline_parallel ({tp * pp})")
    if replicas is not None and tp * pp * replicas != chips:
        raise ModelError(
            f"chips ({chips}) must equal tensor_parallel x pipeline_parallel x replicas ({tp} x {pp} x {replicas})"
        )
    return [pp]


def _check_split(m: ModelArch, hw: Hardware, dep: Deployment) -> None:
    """The caller's tensor-parallel degree splits the heads within the domain; its stages hold a layer each."""
    if dep.tensor_parallel is not None:
        _check_tp(m, hw, dep.tensor_parallel)
    if dep.pipeline_parallel is not None:
        _check_stages(m, dep.pipeline_parallel)


def _resolve_gpu(
    m: ModelArch, hw: Hardware, dep: Deployment, wl: Workload, cal: GPUCalibration
) -> tuple[GPUPlan, bool]:
    _check_split(m, hw, dep)
    if dep.chips is None:
        plan = _fewest(m, hw, dep, wl, cal) or _fewest(m, hw, dep.model_copy(update={"concurrency": 1}), wl, cal)
        if plan is None:
            raise ModelError(
                f"{m.name} does not fit on {hw.name} even with {MAX_PIPELINE_STAGES} pipeline stages "
                f"of {hw.max_tensor_parallel} chips"
            )
        return plan, True
    chips = dep.chips
    tp, pps = _layout_options(m, hw, dep, chips)
    plans = [_plan(m, hw, dep, cal, tp, pp, chips // (tp * pp)) for pp in pps]
    one = dep.model_copy(update={"concurrency": 1})
    for d in (dep, one):  # all requests in flight held at once; else at least one (the rest wait for a slot)
        for plan in plans:
            if _fits(plan, d, wl):
                return plan, False
    plan = plans[-1]
    fewest = _fewest(m, hw, one.model_copy(update={"tensor_parallel": None, "pipeline_parallel": None}), wl, cal)
    conc = 1
    ctx = resident_tokens(wl)
    check_fits(
        plan,
        memory_need(plan, conc, ctx),
        dep.memory_utilization,
        conc,
        ctx,
        fewest.chips_per_replica if fewest else None,
    )
    raise AssertionError("unreachable")  # pragma: no cover


def _estimate_gpu(
    m: ModelArch,
    hw: Hardware,
    dep: Deployment,
    wl: Workload,
    cal: GPUCalibration,
    spec: SpeculativeDecoding | None = None,
) -> InferenceResult:
    plan, chosen = _resolve_gpu(m, hw, dep, wl, cal)
    _, reported, kv = _precisions(m, dep)
    c = max(dep.concurrency / plan.replicas, 1.0)
    p, o = float(wl.prompt_tokens), float(wl.output_tokens)
    k = float(dep.prefill_chunk_tokens or default_step_budget(hw))
    admitted = admitted_requests(plan, dep.memory_utilization, resident_tokens(wl))
    b = max(min(c, float(admitted), k * (1.0 - PROMPT_SHARE_FLOOR)), 1.0)  # running requests per replica
    others = b - 1.0
    budget = k - others  # the step budget the running decodes leave to prompts, at least PROMPT_SHARE_FLOOR of it
    step = _serving_step(plan, b, p, o, budget)
    tpot, gain = step.total_ms, None
    if spec is not None:
        tpot = _speculative_tpot(plan, spec, b, p, o, budget)
        gain = step.total_ms / tpot
    if dep.chunked_prefill:
        own, co = _own_prefill(plan, others, p, o, budget, step.total_ms, tpot)
        wait, load = _closed_loop_wait(plan, others, p, o, budget, own, tpot, co)
        wait += (dep.scheduler_steps - 1) * step.total_ms / 2.0  # the rest of the running multi-step group
    else:  # prefill-only steps between decode groups (vLLM V0 without chunked prefill)
        cycle, load = closed_loop_cycle(plan, b, p, o, k, dep.scheduler_steps, PREDICTABLE_LOAD)
        own, wait = cycle.prefill_ms, cycle.ttft_ms - cycle.prefill_ms
        tpot = cycle.tpot_ms / (gain or 1.0)
        step = decode_step(plan, b, p + o / 2.0, 0.0, p / 2.0)
    # A closed loop past the admission limit: c - b requests wait for a slot; Little's law on the running ones
    # (b per request time R) and on all c gives the wait (c / b - 1) R.
    queue = (c / b - 1.0) * (own + wait + max(o - 1.0, 0.0) * tpot) if c > b else 0.0
    ttft = own + wait + queue
    use = memory_need(plan, math.ceil(b), resident_tokens(wl))
    n_chips = plan.tp * plan.pp * plan.replicas
    notes: tuple[str, ...] = (f"chips not given: the fewest that fit ({n_chips})",) if chosen else ()
    notes += _layout_notes(m, hw, dep, plan)
    notes += _precision_notes(m, hw, dep)
    if c > b:
        notes += (_queue_note(c, b, admitted, k, queue, plan.replicas),)
    if load > PREDICTABLE_LOAD:
        notes += (lower_bound_note(load),)
    return InferenceResult.model_construct(
        kind="gpu",
        model=m.id,
        hardware=hw.id,
        precision=reported,
        kv_precision=kv,
        chips=plan.chips_per_replica * plan.replicas,
        tensor_parallel=plan.tp,
        pipeline_parallel=plan.pp,
        replicas=plan.replicas,
        chips_chosen=chosen,
        concurrency=dep.concurrency,
        prompt_tokens=wl.prompt_tokens,
        output_tokens=wl.output_tokens,
        ttft_ms=ttft,
        ttft_lower_bound=load > PREDICTABLE_LOAD,
        prefill_load=load,
        step_budget_tokens=int(k),
        chunked_prefill=dep.chunked_prefill,
        scheduler_steps=dep.scheduler_steps,
        running_requests=min(dep.concurrency, math.floor(b) * plan.replicas),
        queue_wait_ms=queue,
        tpot_ms=tpot,
        tokens_per_s_per_user=1e3 / tpot,
        throughput_tokens_per_s=min(float(dep.concurrency), b * plan.replicas) * 1e3 / tpot,
        cost_per_million_output_tokens=None,
        price=None,
        bound=step.bound,
        step=step,
        memory=use,
        speculative_speedup=gain,
        notes=notes + _speculative_notes(spec, gain),
    )


def _queue_note(c: float, b: float, admitted: int, budget: float, queue_ms: float, replicas: int) -> str:
    per = " per replica" if replicas > 1 else ""
    why = (
        f"the KV cache holds {admitted:,}"
        if admitted <= budget * (1.0 - PROMPT_SHARE_FLOOR)
        else f"the step budget of {budget:,.0f} tokens runs at most {b:,.0f} (7/8 of it)"
    )
    return (
        f"{c:,.0f} requests in flight{per} but {why}: {c - b:,.0f} wait for a slot, {queue_ms / 1e3:,.1f} s on average "
        "(in TTFT); a closed loop past its admission limit, not a load this deployment carries"
    )


def _speculative_tpot(plan: GPUPlan, spec: SpeculativeDecoding, c: float, p: float, o: float, budget: float) -> float:
    """TPOT with speculative decoding at concurrency ``c`` (one replica), ms.

    A target step verifies ``V`` query tokens per decoding sequence (the same prompt-chunk mix as plain
    decoding, spread over ``O / tau`` steps per request) and is preceded by ``g`` draft steps of ``c``
    plain decode steps each; it emits ``tau`` tokens per sequence on average.
    """
    tau = spec.tokens_per_step
    verify = _serving_step(plan, c, p, o / tau, budget, float(spec.verified_tokens))
    draft = spec.draft_tokens * spec.draft_cost_ratio * decode_step_ms(plan, c, p + o / 2.0, 0.0, p / 2.0)
    return (verify.total_ms + draft) / tau


def _speculative_notes(spec: SpeculativeDecoding | None, gain: float | None) -> tuple[str, ...]:
    if spec is None or gain is None:
        return ()
    head = (
        f"speculative decoding: {spec.tokens_per_step:.2f} tokens per target step (a {spec.acceptance_rate:.2f}, "
        f"g {spec.draft_tokens}, c {spec.draft_cost_ratio:.3g}, {spec.verified_tokens} tokens verified per "
        f"sequence); x{gain:.2f} decode speed-up at this concurrency (x{spec.speedup:.2f} if verification "
        "cost one step)"
    )
    if gain < 1.0:
        head += "; verifying the drafted tokens costs more than they save here: turn it off at this load"
    return (head,)


def _own_prefill(
    plan: GPUPlan, others: float, p: float, o: float, budget: float, step_ms: float, tpot_ms: float
) -> tuple[float, float]:
    """The prefill of a request's prompt at a closed-loop concurrency, ms, and the other prompts' tokens that share
    its step.

    The ``others`` users send prompts at ``lam = others / (T + (O - 1) TPOT)`` per ms (a first token about one mean
    step ``T`` after the request); the step that holds this prompt also holds, within the budget, the prompts that
    arrived during the step before it, ``lam T P`` tokens on average: continuous batching forms each step from every
    prompt waiting at its boundary.
    At MLPerf's Server rates that is several prompts per step (Llama-2-70B on one B200 at 1,412 in flight: ~1,100
    other prompt tokens), which a step holding one prompt leaves out (issue 21: the NVIDIA Server rows came out
    16-31% short). Below one arrival per step it is the expected share of one.

    :returns: ``(own_ms, co_tokens)``.
    """
    co = others / (step_ms + max(o - 1.0, 0.0) * tpot_ms) * step_ms * p if others > 0 else 0.0
    return prefill_ms(plan, p, budget, others, p + o / 2.0, co), co


def _closed_loop_wait(
    plan: GPUPlan,
    others: float,
    p: float,
    o: float,
    budget: float,
    own_ms: float,
    tpot_ms: float,
    co_tokens: float = 0.0,
) -> tuple[float, float]:
    """Mean wait before a request's prefill starts at a closed-loop concurrency, ms, and the prefill load.

    The ``others`` users send prompts at ``lam = others / (TTFT + (O - 1) TPOT)`` per ms. The arrival
    first waits for the running step: with probability ``f = lam max(1, P / K) T_pf`` it carries prompt chunks,
    ``max(P, co_tokens)`` tokens of them (one prompt, or at high rates the ``co_tokens`` a step collects, see
    :func:`_own_prefill`; mean wait ``T_pf / 2``), else it is a decode step (``T_dec / 2``). Then it queues
    behind prompts already waiting. Prompts are packed into each step's budget ``K`` (bulk service, as in
    the open-loop model, ``_queue``), so one prompt holds the prefill slot for its share of a full step,
    ``s = (P / K) T_full``; the M/D/1 mean ``rho s / (2 (1 - rho))`` with ``rho = lam s``
    (Pollaczek-Khinchine). Above :data:`PREDICTABLE_LOAD` the wait is that at :data:`PREDICTABLE_LOAD`
    (bounded, non-decreasing in the load; the caller flags it as a lower bound).

    :returns: ``(wait_ms, rho)``.
    """
    if others <= 0:
        return 0.0, 0.0
    ctx = p + o / 2.0
    t_dec = decode_step_ms(plan, others, ctx, 0.0, p / 2.0)
    t_pf = decode_step_ms(plan, others, ctx, min(max(p, co_tokens), budget), p / 2.0)
    t_full = decode_step_ms(plan, others, ctx, budget, p / 2.0)
    lam = others / (own_ms + max(o - 1.0, 0.0) * tpot_ms)
    f = min(1.0, lam * max(1.0, p / budget) * t_pf)
    s = p / budget * t_full
    rho = lam * s
    q = min(rho, PREDICTABLE_LOAD)
    return f * t_pf / 2.0 + (1.0 - f) * t_dec / 2.0 + q * s / (2.0 * (1.0 - q)), rho


def _serving_step(
    plan: GPUPlan, c: float, p: float, o: float, budget: float, query_tokens: float = 1.0
) -> StepBreakdown:
    """The mean step a decoding user sees at concurrency ``c`` (closed loop).

    Over one request of ``O`` steps the ``c - 1`` other users each bring a prompt of ``P`` tokens, in
    chunks of at most ``budget`` tokens. A prompt's chunk fills a step of its own (prompts coincide
    only when there are more of them than steps), so a share ``phi = min(1, (c - 1) max(1, P / budget) / O)``
    of the steps carries ``(c - 1) P / (O phi)`` prompt tokens and the rest carry none: the mean of the
    two step times, not the step time of the mean load (a step's time is not linear in its tokens).
    ``query_tokens`` per decoding sequence (speculative verification; ``O`` is then the steps per request).
    """
    others = c - 1.0
    ctx = p + o / 2.0
    if others <= 0:
        return decode_step(plan, c, ctx, 0.0, p / 2.0, query_tokens)
    phi = min(1.0, others * max(1.0, p / budget) / o)  # P / K steps' worth: continuous in P
    chunk = others * p / (o * phi)
    with_prompt = step_terms(plan, c, ctx, chunk, p / 2.0, query_tokens)
    if phi >= 1.0:
        return step_breakdown(with_prompt)
    plain = step_terms(plan, c, ctx, 0.0, p / 2.0, query_tokens)
    w = [phi * a + (1.0 - phi) * b for a, b in zip(with_prompt, plain, strict=True)]
    mix = (w[0], w[1], w[2], w[3], w[4], w[5], w[6])
    return step_breakdown(mix, step_bound(with_prompt if phi >= 0.5 else plain))


def _estimate_wafer(
    m: ModelArch, hw: Hardware, dep: Deployment, wl: Workload, spec: SpeculativeDecoding | None = None
) -> InferenceResult:
    if (dep.tensor_parallel or 1) > 1:
        raise ModelError(
            f"tensor_parallel {dep.tensor_parallel} does not apply to {hw.name}: SRAM-resident chips "
            "hold whole layers and run as a pipeline (leave tp unset or 1; set chips)"
        )
    _, reported, kv = _precisions(m, dep)
    prec = dep.precision  # None: the released precision mix (gpt-oss: fp4 experts)
    ctx = wl.prompt_tokens + wl.output_tokens
    needed = wafer_chips_needed(m, hw, prec, kv, dep.concurrency, ctx)
    chips = dep.chips or needed
    use = wafer_memory(m, hw, prec, kv, dep.concurrency, ctx, chips)
    check_wafer_fits(m, hw, prec, use, chips, needed, dep.concurrency, ctx)
    step = wafer_token_step(m, hw, prec, chips)
    # A pipeline: per-user speed holds while the chips' compute keeps up with the concurrency.
    compute_limit = dep.concurrency * step.compute_ms
    if compute_limit > step.total_ms:
        step = step.model_copy(update={"total_ms": compute_limit, "bound": "compute"})
    ttft = wafer_prefill_ms(m, hw, prec, chips, float(wl.prompt_tokens), step.total_ms)
    tpot, gain = step.total_ms, None
    counted = hw.sram is not None and hw.sram.includes_speculative
    if spec is not None and counted:
        gain = 1.0  # the generation's figures already include speculative decoding: adding it counts it twice
    elif spec is not None:
        # One traversal verifies V tokens per sequence until the chips' compute floor binds.
        verify = max(step.total_ms, dep.concurrency * spec.verified_tokens * step.compute_ms)
        gain = spec.speedup_given(step.total_ms, verify)
        tpot = step.total_ms / gain
    notes: tuple[str, ...] = ()
    if dep.chips is None:
        notes = (f"chips not given: the fewest whose SRAM holds the model ({chips})",)
    notes += _precision_notes(m, hw, dep)
    notes += (CHIP_TIME_ONLY,)
    if hw.hosted is not None:
        notes += (
            f"hosted path, not included here: {hw.hosted.provider} network + overhead, log-normal p50 "
            f"{hw.hosted.overhead_p50_ms:g} / p95 {hw.hosted.overhead_p95_ms:g} ms per request",
        )
    if hw.sram is not None:
        notes += (f"wafer/LPU timings of software generation {hw.sram.generation}: {hw.sram.software}",)
        if spec is not None and counted:
            earlier = [t.generation for t in hw.sram_generations if not t.includes_speculative]
            notes += (
                f"speculative decoding not added: software generation {hw.sram.generation}'s figures already "
                "include it (adding it would count the gain twice)"
                + (f"; pick generation {earlier[0]} to model your own speculation" if earlier else ""),
            )
        elif spec is not None:
            notes += (
                "speculative decoding on top of that software generation: if the vendor figures it was fitted "
                "to already used speculative decoding, its gain is counted twice",
            )
    return InferenceResult.model_construct(
        kind="wafer",
        model=m.id,
        hardware=hw.id,
        precision=reported,
        kv_precision=kv,
        chips=chips,
        tensor_parallel=1,
        pipeline_parallel=chips,
        replicas=1,
        chips_chosen=dep.chips is None,
        concurrency=dep.concurrency,
        prompt_tokens=wl.prompt_tokens,
        output_tokens=wl.output_tokens,
        ttft_ms=ttft,
        tpot_ms=tpot,
        tokens_per_s_per_user=1e3 / tpot,
        throughput_tokens_per_s=dep.concurrency * 1e3 / tpot,
        cost_per_million_output_tokens=None,
        price=None,
        bound=step.bound,
        step=step,
        memory=use,
        speculative_speedup=gain,
        notes=notes + _speculative_notes(spec, gain),
    )


def _layout_notes(m: ModelArch, hw: Hardware, dep: Deployment, plan: GPUPlan) -> tuple[str, ...]:
    out: tuple[str, ...] = ()
    chosen_split = dep.tensor_parallel is None and dep.pipeline_parallel is None and dep.replicas is None
    if dep.chips is not None and chosen_split and plan.tp < min(dep.chips, hw.max_tensor_parallel):
        out += (
            f"tp {plan.tp}: the largest degree that divides {dep.chips} chips and splits {m.q_heads} query / "
            f"{m.kv_heads} KV heads; the rest as {plan.pp} pipeline stage(s) x {plan.replicas} replica(s)",
        )
    if dep.chips is not None and dep.pipeline_parallel is None and dep.replicas is None:
        if plan.pp == 1 and plan.replicas > 1:
            out += (
                f"{dep.chips} chips at tp {plan.tp}: {plan.replicas} replicas (data parallel, the load split evenly); "
                "give Deployment.pipeline_parallel for pipeline stages instead",
            )
        elif plan.pp > 1:
            out += (
                f"{dep.chips} chips at tp {plan.tp}: one replica of tp {plan.tp} does not hold the model, so "
                f"{plan.pp} pipeline stages x {plan.replicas} replica(s); give Deployment.replicas or "
                "Deployment.pipeline_parallel to choose",
            )
    if m.is_mla and plan.tp > 1:
        out += (
            f"multi-head latent attention: every one of the {plan.tp} tensor-parallel chips holds the whole "
            f"latent KV cache (KV cache x{plan.tp}, as vLLM/SGLang without data-parallel attention)",
        )
    elif plan.tp > m.kv_heads:
        out += (
            f"tp {plan.tp} > {m.kv_heads} KV heads: each KV head replicated on {plan.tp // m.kv_heads} chips "
            f"(KV cache x{plan.tp // m.kv_heads})",
        )
    if dep.software is not None:
        out += (f"serving-stack generation {plan.stack.generation}: {plan.stack.software}",)
    return out


def _precision_notes(m: ModelArch, hw: Hardware, dep: Deployment) -> tuple[str, ...]:
    out: tuple[str, ...] = ()
    if dep.precision is None and m.native_expert_precision not in (None, m.native_precision):
        out += (f"released weights: routed experts {m.native_expert_precision}, the rest {m.native_precision}",)
    rate = {"fp8": hw.fp8_flops_per_s, "fp4": hw.fp4_flops_per_s}
    if dep.precision in rate and rate[dep.precision] is None:
        runs_at = "fp8" if dep.precision == "fp4" and hw.fp8_flops_per_s is not None else "bf16"
        kv = dep.kv_precision or "fp8"
        out += (
            f"{hw.name} lists no {dep.precision} FLOP/s (no {dep.precision} tensor cores): modelled as "
            f"weight-only {dep.precision}: weights read at {PRECISION_BYTES[dep.precision]:g} byte(s) per "
            f"parameter and the KV cache at {PRECISION_BYTES[kv]:g}, GEMMs at the {runs_at} rate",
        )
    return out


def _finish(r: InferenceResult, price: ChipPrice | None) -> InferenceResult:
    upd: dict[str, object] = {"price": price}
    if price is not None:
        upd["cost_per_million_output_tokens"] = (
            price.usd_per_chip_hour * r.chips / 3600.0 / r.throughput_tokens_per_s * 1e6
        )
    return r.model_copy(update=upd)
