"""Open-loop serving: requests arrive at a rate, TTFT is a distribution from the scheduler.

Benchmarks of servers (MLPerf Inference "Server", vLLM ``benchmark_serving --request-rate``,
production traffic) send requests as a Poisson process at ``lambda`` requests/s rather than at a fixed
concurrency. TTFT is then mostly the wait for a prefill slot. The scheduler modelled is continuous
batching with chunked prefill (vLLM V1, SGLang, TensorRT-LLM in-flight batching): every step carries
one token of each decoding sequence and fills the rest of its token budget ``B``
(``max_num_batched_tokens``) with prompt tokens taken first come, first served; a request's first
token is sampled at the end of the step that holds its last prompt token.

Mean step per replica (arrivals split evenly, ``lambda_r = lambda / replicas``, ms and tokens)::

    n_d = lambda_r * (O - 1) * T        sequences decoding in a step (Little's law on the decode phase)
    n_p = lambda_r * P * T              prompt tokens per step
    T   = T_step(n_d, n_p)              the GPU step model (``_gpu.decode_step``); solved as a fixed point

Prompt tokens are a queue served at ``K = B - n_d`` tokens per step; its utilisation is
``rho = n_p / K``. The wait ``W`` before a request's prompt starts is that of an M/D/1 queue with
service ``s = P T / K`` (fluid approximation of the bulk service): ``P(W > t) = rho exp(-gamma t)``,
``gamma`` the Cramer-Lundberg root of ``lambda_r (exp(gamma s) - 1) = gamma`` (exact tail decay of
M/D/1, e.g. Tijms, *A First Course in Stochastic Models*, 2003, section 9.1). Then::

    TTFT = U + T_own * ceil(W / T + P / K)

with ``U`` the rest of the running step (uniform on ``[0, T]`` when the server is busy, 0 when idle;
busy with probability ``1 - exp(-L)``, ``L`` the mean number of requests in the system) and ``T_own``
the duration of a step that holds this prompt's chunk. Quantiles come from this mixture's CDF.
The same scheduler is simulated event by event in tests/test_inference_queue.py: p50 and p99 within 10%
up to about half the capacity; at 70% of capacity the p99 is 12-55% off (step-time swings with the
decoding population and prompts packed into one step are only approximated), so treat figures there as
indicative. The wait ``W`` uses the exact M/D/1 tail constant ``C = (1 - rho) / (lam s e^(gamma s) - 1)``
capped at ``P(W > 0) = rho``; the decoding population ``N`` is the stationary law of the symmetric
queue below, and each quantity above is evaluated per ``N`` and mixed.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from voicebudget._algebra import FloatArray
from voicebudget._errors import ModelError
from voicebudget.inference._catalog import Hardware, ModelArch, get_hardware, get_model
from voicebudget.inference._gpu import GPUPlan, decode_step
from voicebudget.inference._types import Deployment, GPUCalibration, OpenLoopResult, Workload

__all__ = ["estimate_open_loop", "step_time_function"]

_PERCENTILES = (0.50, 0.90, 0.99)


def _resolve(model: str | ModelArch, hardware: str | Hardware, deployment: Deployment, workload: Workload,
             calibration: GPUCalibration | None) -> GPUPlan:
    from voicebudget.inference._predict import DEFAULT_CALIBRATION, _check_context, _resolve_gpu

    m, hw = get_model(model), get_hardware(hardware)
    if hw.memory_kind == "sram":
        raise ModelError(f"{hw.name} is SRAM-resident: the open-loop scheduler model is for GPU serving "
                         "(use estimate_inference with a concurrency)")
    _check_context(m, workload)
    plan, _ = _resolve_gpu(m, hw, deployment.model_copy(update={"concurrency": 1}), workload,
                           calibration or DEFAULT_CALIBRATION)
    return plan


def step_time_function(model: str | ModelArch, hardware: str | Hardware, deployment: Deployment,
                       workload: Workload, *, calibration: GPUCalibration | None = None
                       ) -> Callable[[float, float], float]:
    """The step-time model of one replica as a function, for simulators and capacity planners.

    :param deployment: chips, parallelism, precision (its ``concurrency`` is ignored).
    :param workload: mean prompt ``P`` and output ``O`` tokens (they set the contexts: decoding
        sequences at ``P + O / 2`` tokens, prompt tokens at ``P / 2``).
    :returns: ``f(decode_tokens, prefill_tokens) -> ms``, the duration of one continuous-batching step
        holding that many decoding sequences and prompt tokens (``_gpu.decode_step``).
    :raises ModelError: unknown ids, a layout that does not split the heads, weights that do not fit.
    """
    plan = _resolve(model, hardware, deployment, workload, calibration)
    p, o = float(workload.prompt_tokens), float(workload.output_tokens)

    def step_ms(decode_tokens: float, prefill_tokens: float) -> float:
        return decode_step(plan, decode_tokens, p + o / 2.0, prefill_tokens, p / 2.0).total_ms

    return step_ms


def _mean_step(step: Callable[[float, float], float], lam_per_ms: float, p: float, o: float,
               budget: float) -> float | None:
    """Solve ``T = step(lam (O-1) T, lam P T)`` for the smallest root; ``None`` when none exists below the
    step budget (the scheduler cannot keep up)."""
    per_t = lam_per_ms * (max(o - 1.0, 0.0) + p)  # tokens per step per ms of step
    t_max = budget / per_t if per_t > 0 else math.inf

    def g(t: float) -> float:
        return step(lam_per_ms * max(o - 1.0, 0.0) * t, lam_per_ms * p * t) - t

    lo = step(0.0, 0.0)
    if g(lo) <= 0:
        return lo
    # T grows from lo; walk up geometrically, then bisect.
    hi = lo
    while True:
        hi = min(hi * 2.0, t_max)
        if g(hi) <= 0:
            break
        if hi >= t_max:
            return None
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        if g(mid) > 0:
            lo = mid
        else:
            hi = mid
    return hi


def _gamma(lam: float, s: float) -> float:
    """Positive root of ``lam (exp(gamma s) - 1) = gamma`` (needs ``lam s < 1``), 1/ms."""
    # f(x) = lam (e^{x s} - 1) - x is convex, f(0) = 0, f'(0) = lam s - 1 < 0: one positive root.
    lo, hi = 0.0, 1.0 / s
    while lam * math.expm1(hi * s) - hi <= 0:
        hi *= 2.0
    lo = hi / 2.0 if lam * math.expm1(hi / 2.0 * s) - hi / 2.0 > 0 else lo
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if lam * math.expm1(mid * s) - mid > 0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def _decode_population(step: Callable[[float, float], float], lam: float, o: float, n_p: float,
                       mean_nd: float) -> tuple[FloatArray, FloatArray]:
    """Stationary distribution of the number ``N`` of decoding sequences: ``(n, pmf)``.

    Every decoding sequence advances one token per step, so the decode phase is a processor-sharing
    queue whose total rate depends on ``N`` (a symmetric queue, Kelly 1979: its stationary law does not
    depend on the output-length distribution). Birth-death balance gives
    ``pi(i) / pi(i-1) = lam (O - 1) T(i) / i`` with ``T(i)`` the step time at ``i`` sequences.
    """
    dec = max(o - 1.0, 0.0)
    if dec == 0.0 or mean_nd <= 0.0:
        return np.zeros(1), np.ones(1)
    n_max = int(mean_nd + 12.0 * math.sqrt(mean_nd * 50.0) + 50.0)
    grid = np.unique(np.linspace(1, n_max, min(n_max, 96)).round())
    t_grid = np.array([step(float(i), n_p) for i in grid])
    n = np.arange(0, n_max + 1, dtype=np.float64)
    t_n = np.interp(n, grid, t_grid)
    log_ratio = np.log(lam * dec * t_n[1:]) - np.log(n[1:])
    logp = np.concatenate(([0.0], np.cumsum(log_ratio)))
    pmf = np.exp(logp - logp.max())
    pmf /= pmf.sum()
    keep = pmf > 1e-9 * pmf.max()
    return n[keep], pmf[keep] / pmf[keep].sum()


def _ttft_quantiles(step: Callable[[float, float], float], lam: float, p: float, o: float, budget: float,
                    n_p: float, mean_nd: float, qs: tuple[float, ...]
                    ) -> tuple[tuple[float, ...], float, float, float]:
    """Quantiles and mean of TTFT over the decode population, the mean prefill utilisation and the mean
    inter-token latency (module docstring)."""
    n, pn = _decode_population(step, lam, o, n_p, mean_nd)
    pts = _sparse(n)
    k = np.maximum(budget - n, 1.0)
    t_dec = np.interp(n, pts, np.array([step(float(i), 0.0) for i in pts]))
    t_pf = np.interp(n, pts, np.array([step(float(i), min(p, max(budget - i, 1.0))) for i in pts]))
    steps_per_req = np.maximum(1.0, p / k)
    # Prefill server (M/D/1): a request alone holds ceil(P / K) steps that carry its chunks.
    s = np.ceil(p / k - 1e-9) * t_pf
    rho = np.minimum(lam * s, 0.999)
    gamma = np.array([_gamma(lam, float(si)) if lam * si < 1 else 1e-9 for si in s])
    # Where the arrival lands: in a step carrying prompt tokens (time share f), a decode-only step, or idle.
    f = np.minimum(lam * steps_per_req * t_pf, 1.0)
    busy_dec = np.where(n > 0, 1.0 - f, 0.0)
    # J = ceil(W / T_pf + P / K) steps of prefill after the running step, W ~ rho exp(-gamma t).
    j0 = np.maximum(1.0, np.ceil(p / k - 1e-9))
    rmax = float(np.max(rho))
    j_extra = int(math.ceil(math.log(max(rmax, 1.0) / 1e-5) / float(np.min(gamma * t_pf)))) + 2 if rmax > 1e-5 else 0
    j_extra = min(j_extra, 4000)
    js = j0[:, None] + np.arange(j_extra + 1)[None, :]
    # Cramer-Lundberg constant of M/D/1, C = (1 - rho) / (lam s e^(gamma s) - 1); P(W > 0) = rho exactly.
    c_tail = (1.0 - rho) / np.maximum(lam * s * np.exp(np.minimum(gamma * s, 700.0)) - 1.0, 1e-12)
    tail = c_tail[:, None] * np.exp(-gamma[:, None] * np.maximum((js - (p / k)[:, None]) * t_pf[:, None], 0.0))
    w_cdf = 1.0 - np.minimum(rho[:, None], tail)
    w_cdf[:, -1] = 1.0
    pj = np.diff(np.concatenate((np.zeros((len(n), 1)), w_cdf), axis=1), axis=1)
    base = (js * t_pf[:, None]).ravel()
    comps = [(pn[:, None] * pj * f[:, None]).ravel(), (pn[:, None] * pj * busy_dec[:, None]).ravel(),
             (pn[:, None] * pj * (1.0 - f - busy_dec)[:, None]).ravel()]
    spans = [np.repeat(t_pf, js.shape[1]), np.repeat(t_dec, js.shape[1]), np.zeros(base.size)]
    mean = float(sum(np.sum(w * (base + sp / 2.0)) for w, sp in zip(comps, spans, strict=True)))

    def cdf(x: float) -> float:
        tot = float(np.sum(comps[2] * (base <= x)))
        for w, sp in zip(comps[:2], spans[:2], strict=True):
            tot += float(np.sum(w * np.clip((x - base) / np.maximum(sp, 1e-12), 0.0, 1.0)))
        return tot

    out = []
    for q in qs:
        lo, hi = 0.0, float(np.max(base + spans[0]))
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            if cdf(mid) >= q:
                hi = mid
            else:
                lo = mid
        out.append(hi)
    # Inter-token latency: steps per ms r = f / T_pf + (1 - f) / T_dec; a user's token per step, so
    # weight each population state by the sequences decoding in it.
    rate = f / t_pf + (1.0 - f) / t_dec
    w = pn * n
    tpot = float(np.sum(w) / np.sum(w * rate)) if np.sum(w) > 0 else float(t_dec[0])
    return tuple(out), mean, float(np.dot(pn, rho)), tpot


def _sparse(n: FloatArray) -> FloatArray:
    """At most 48 evenly spread points of ``n`` (the step model is smooth: interpolate between them)."""
    return np.unique(np.linspace(float(n[0]), float(n[-1]), min(len(n), 48)).round())


def estimate_open_loop(
    model: str | ModelArch,
    hardware: str | Hardware,
    deployment: Deployment,
    workload: Workload,
    request_rate_per_s: float,
    *,
    calibration: GPUCalibration | None = None,
) -> OpenLoopResult:
    """Serve Poisson arrivals at ``request_rate_per_s``: TTFT p50/p90/p99, TPOT, the mean concurrency.

    The scheduler is continuous batching with chunked prefill under a per-step token budget
    (``deployment.prefill_chunk_tokens``, vLLM's ``max_num_batched_tokens``); see the module docstring
    for the formulas (mean step as a fixed point, M/D/1 wait for a prefill slot with its exact tail
    decay, the step-boundary wait). Little's law gives the mean concurrency
    ``lambda * (E[TTFT] + (O - 1) * TPOT)``; ``estimate_inference`` at that concurrency gives about the
    same TPOT. Checked against a discrete-event simulation of the same scheduler
    (tests/test_inference_queue.py) and published open-loop runs (tests/test_inference_validation.py).

    :param deployment: chips, parallelism, precision, step budget; ``concurrency`` is ignored (it is
        the result). Chips beyond one replica split the arrivals evenly.
    :param workload: mean prompt ``P`` and output ``O`` tokens per request.
    :param request_rate_per_s: arrivals, requests per second across the deployment, ``> 0``.
    :returns: :class:`OpenLoopResult` (times in ms).
    :raises ModelError: a rate at or beyond what the deployment serves (the message gives the
        capacity in requests/s), the KV cache of the mean concurrency not fitting, SRAM-resident
        hardware, or any error of :func:`estimate_inference`.
    """
    if not request_rate_per_s > 0 or not math.isfinite(request_rate_per_s):
        raise ModelError(f"request_rate_per_s must be a finite number > 0, got {request_rate_per_s}")
    plan = _resolve(model, hardware, deployment, workload, calibration)
    from voicebudget.inference._predict import estimate_inference

    p, o = float(workload.prompt_tokens), float(workload.output_tokens)
    budget = float(deployment.prefill_chunk_tokens)

    def step(nd: float, npf: float) -> float:
        return decode_step(plan, nd, p + o / 2.0, npf, p / 2.0).total_ms

    lam = request_rate_per_s / plan.replicas / 1e3  # per ms per replica
    capacity = _capacity(step, p, o, budget) * plan.replicas
    t = _mean_step(step, lam, p, o, budget)
    if t is None or lam * p * t >= budget - lam * max(o - 1.0, 0.0) * t or request_rate_per_s >= capacity:
        raise ModelError(
            f"{request_rate_per_s:g} requests/s is at or beyond what this deployment serves (about "
            f"{capacity:.3g} requests/s with a step budget of {budget:.0f} tokens for {p:.0f} in / {o:.0f} out); "
            "the queue would grow without bound: add replicas or lower the rate")
    n_d, n_p = lam * max(o - 1.0, 0.0) * t, lam * p * t
    (p50, p90, p99), mean_ttft, rho, tpot = _ttft_quantiles(step, lam, p, o, budget, n_p, n_d, _PERCENTILES)
    conc = request_rate_per_s / 1e3 * (mean_ttft + max(o - 1.0, 0.0) * tpot)
    at = estimate_inference(plan.model, plan.hardware, deployment.model_copy(
        update={"concurrency": max(1, math.ceil(conc)), "chips": plan.chips_per_replica * plan.replicas,
                "tensor_parallel": plan.tp, "pipeline_parallel": plan.pp}), workload, calibration=plan.cal)
    return OpenLoopResult(
        request_rate_per_s=request_rate_per_s, capacity_requests_per_s=capacity, replicas=plan.replicas,
        ttft_p50_ms=p50, ttft_p90_ms=p90, ttft_p99_ms=p99, ttft_mean_ms=mean_ttft, tpot_ms=tpot,
        mean_concurrency=conc, decode_batch=n_d, prefill_tokens_per_step=n_p, prefill_utilization=rho,
        throughput_tokens_per_s=request_rate_per_s * o, at_mean_concurrency=at,
    )


def _capacity(step: Callable[[float, float], float], p: float, o: float, budget: float) -> float:
    """Largest arrival rate (requests/s per replica) with a fixed point below the step budget."""
    lo, hi = 0.0, 1.0
    while _mean_step(step, hi / 1e3, p, o, budget) is not None:
        lo, hi = hi, hi * 2.0
        if hi > 1e7:  # pragma: no cover - no real deployment serves this
            break
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if _mean_step(step, mid / 1e3, p, o, budget) is not None:
            lo = mid
        else:
            hi = mid
    return lo
