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

Prompt tokens are a queue served at ``K = B - N`` tokens per step (``N`` the decoding sequences), packed
first come, first served, several prompts to a step when they fit: bulk service. A request holds the
prefill slot for its share of a full step, ``s = (P / K) T_full`` (``T_full`` a step carrying ``K``
prompt tokens); with ``N`` drawn from its stationary law (below) the wait ``W`` for the slot is that of an
M/G/1 queue: ``P(W > 0) = rho = lambda_r E[s]`` and ``P(W > t) = min(rho, C exp(-gamma t))``, ``gamma``
the Cramer-Lundberg root of ``lambda_r (E[exp(gamma s)] - 1) = gamma`` and
``C = (1 - rho) / (lambda_r E[s exp(gamma s)] - 1)`` (the exact tail of M/G/1; Asmussen, *Applied
Probability and Queues*, 2003, XIII.5). Then::

    TTFT = U + W + T_own           (T_own: one step for P <= K, else P / K full steps)

with ``U`` the rest of the running step (uniform over a step carrying prompt tokens, a decode-only step,
or 0 when the server is idle) and ``T_own`` the duration of a step that holds this prompt's chunk and, within the
budget, the ``n_p`` prompt tokens of the others that arrived during the step before it (a step carrying prompt
tokens holds ``max(P, n_p)`` of them: continuous batching forms each step from every prompt waiting at its
boundary; issue 21 round 4); the CDF of ``U + W`` is closed-form (a uniform convolved with an atom and an
exponential tail), and so is its density: the quantiles come from Newton's steps kept in a bracket, all three at
once (``TTFTLaw``). Every term is stochastically non-decreasing in the rate (``N``'s law shifts up, ``s`` and
``rho`` grow, ``gamma`` falls), so p50/p90/p99 are non-decreasing in the request rate up to saturation (a
property test). The same scheduler is simulated event by event in tests/test_inference_queue.py: p50 and p99
within 10% at 20% and 35% of capacity; at 50-70% the p50 is within 10% and the p99 4-22% low (since the step
holding a prompt carries the others that arrived with it), so treat tails there as optimistic by up to a fifth;
above 75% the quantiles are lower bounds (docs/inference.md has the table).

Without chunked prefill (``Deployment.chunked_prefill`` ``False``) prompts run in prefill-only steps between groups
of decode steps; the open loop is then the prefill/decode cycle of :mod:`voicebudget.inference._prefill_first` at
the rate (``_cycle_at_rate``). With ``scheduler_steps`` ``N`` > 1 and chunked prefill, every quantile carries the
rest of the running group of steps, ``(N - 1) T / 2``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from voicebudget._algebra import FloatArray
from voicebudget._errors import ModelError
from voicebudget.inference._catalog import Hardware, ModelArch, get_hardware, get_model
from voicebudget.inference._gpu import (
    OPEN_LOOP_PREDICTABLE_LOAD,
    PROMPT_SHARE_FLOOR,
    GPUPlan,
    admitted_requests,
    decode_step_ms,
    default_step_budget,
    lower_bound_note,
    step_ms_array,
)
from voicebudget.inference._prefill_first import open_loop_cycle
from voicebudget.inference._queue_law import TTFTLaw, prefill_wait
from voicebudget.inference._types import Deployment, GPUCalibration, OpenLoopResult, Workload

__all__ = ["estimate_open_loop", "step_time_function"]

_PERCENTILES = (0.50, 0.90, 0.99)

_Steps = Callable[[FloatArray, FloatArray], FloatArray]
"""The step model over arrays: ``(decoding sequences, prompt tokens) -> ms``, float64[m] each."""


def _resolve(
    model: str | ModelArch,
    hardware: str | Hardware,
    deployment: Deployment,
    workload: Workload,
    calibration: GPUCalibration | None,
) -> GPUPlan:
    from voicebudget.inference._predict import DEFAULT_CALIBRATION, _check_context, _resolve_gpu

    m, hw = get_model(model), get_hardware(hardware)
    if hw.memory_kind == "sram":
        raise ModelError(
            f"{hw.name} is SRAM-resident: the open-loop scheduler model is for GPU serving "
            "(use estimate_inference with a concurrency)"
        )
    _check_context(m, workload)
    plan, _ = _resolve_gpu(
        m, hw, deployment.model_copy(update={"concurrency": 1}), workload, calibration or DEFAULT_CALIBRATION
    )
    return plan


def step_time_function(
    model: str | ModelArch,
    hardware: str | Hardware,
    deployment: Deployment,
    workload: Workload,
    *,
    calibration: GPUCalibration | None = None,
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
        return decode_step_ms(plan, decode_tokens, p + o / 2.0, prefill_tokens, p / 2.0)

    return step_ms


def _mean_step(
    step: Callable[[float, float], float],
    lam_per_ms: float,
    p: float,
    o: float,
    budget: float,
    running_cap: float = math.inf,
) -> float | None:
    """Solve ``T = step(lam (O-1) T, lam P T)`` for the smallest root; ``None`` when none exists below the
    step budget with at most ``running_cap`` sequences decoding (the scheduler cannot keep up, or the KV cache
    cannot hold the decoding population)."""
    bracket = _step_bracket(step, lam_per_ms, p, o, budget, running_cap)
    if bracket is None:
        return None
    lo, hi, g = bracket
    if hi == lo:
        return lo
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        if g(mid) > 0:
            lo = mid
        else:
            hi = mid
    return hi


def _step_bracket(
    step: Callable[[float, float], float],
    lam_per_ms: float,
    p: float,
    o: float,
    budget: float,
    running_cap: float,
) -> tuple[float, float, Callable[[float], float]] | None:
    """:func:`_mean_step`'s bracket ``(lo, hi, g)`` of the root of ``g(T) = step(...) - T`` (``lo == hi``: the unloaded
    step is the root), or ``None``; whether the rate is served is known here, without the bisection."""
    per_t = lam_per_ms * (max(o - 1.0, 0.0) + p)  # tokens per step per ms of step
    t_max = budget / per_t if per_t > 0 else math.inf
    dec = lam_per_ms * max(o - 1.0, 0.0)
    if dec > 0:
        t_max = min(t_max, running_cap / dec)

    def g(t: float) -> float:
        return step(lam_per_ms * max(o - 1.0, 0.0) * t, lam_per_ms * p * t) - t

    lo = step(0.0, 0.0)
    if g(lo) <= 0:
        return lo, lo, g
    # T grows from lo; walk up geometrically (the caller bisects).
    hi = lo
    while True:
        hi = min(hi * 2.0, t_max)
        if g(hi) <= 0:
            return lo, hi, g
        if hi >= t_max:
            return None


def _decode_population(
    steps: _Steps, lam: float, o: float, n_p: float, mean_nd: float
) -> tuple[FloatArray, FloatArray]:
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
    grid = _distinct(np.linspace(1, n_max, min(n_max, 96)).round())
    t_grid = steps(grid, np.full_like(grid, n_p))
    n = np.arange(0, n_max + 1, dtype=np.float64)
    t_n = np.interp(n, grid, t_grid)
    log_ratio = np.log(lam * dec * t_n[1:]) - np.log(n[1:])
    logp = np.concatenate(([0.0], np.cumsum(log_ratio)))
    pmf = np.exp(logp - logp.max())
    pmf /= pmf.sum()
    keep = pmf > 1e-9 * pmf.max()
    return n[keep], pmf[keep] / pmf[keep].sum()


def _ttft_quantiles(
    steps: _Steps,
    lam: float,
    p: float,
    o: float,
    budget: float,
    n_p: float,
    mean_nd: float,
    qs: tuple[float, ...],
) -> tuple[tuple[float, ...], float, float, float] | None:
    """Quantiles and mean of TTFT over the decode population, the prefill utilisation and the mean
    inter-token latency (module docstring); ``None`` when the prefill slot is saturated (``rho >= 1``:
    the decoding population leaves too few prompt tokens per step)."""
    n, pn = _decode_population(steps, lam, o, n_p, mean_nd)
    pts = _sparse(n)
    k = np.maximum(budget - n, 1.0)
    room = np.maximum(budget - pts, 1.0)
    # A step carrying prompt tokens holds one prompt, or at high rates the n_p a step collects on average; the step
    # that holds this prompt also holds the prompts that arrived during the step before it (n_p on average),
    # within the budget: continuous batching forms each step from every prompt waiting at its boundary.
    # Decode-only, carrying prompts, holding this prompt, full: four grids of step times in one call.
    prompts = np.concatenate([np.zeros_like(pts), np.minimum(max(p, n_p), room), np.minimum(p + n_p, room), room])
    grids = steps(np.tile(pts, 4), prompts).reshape(4, -1)
    t_dec, t_pf, t_in, t_full = (np.interp(n, pts, g) for g in grids)
    r = p / k  # steps' worth of prompt tokens in one request
    # The prefill slot serves prompt tokens at K per full step, packed first come first served: a request
    # holds it for its P / K share of a full step (bulk service), so W is M/G/1 over N's law.
    wait = prefill_wait(lam, r * t_full, pn)
    if wait.rho >= 1.0:
        return None
    # Where the arrival lands: in a step carrying prompt tokens (time share f), a decode-only step, or idle.
    f = np.minimum(lam * np.maximum(1.0, r) * t_pf, 1.0)
    busy_dec = np.where(n > 0, 1.0 - f, 0.0)
    idle = 1.0 - f - busy_dec
    # Then W, and the steps holding this prompt's chunks: one step of T_pf for P <= K, else its P / K share of
    # full steps (its last, partial chunk shares a step with the next prompts: continuous in P).
    own = np.where(r > 1.0, r * t_full, t_in)

    law = TTFTLaw(own, np.stack([t_pf, t_dec]), pn * np.stack([f, busy_dec]), pn * idle, wait)
    mean = float(np.dot(pn, f * t_pf / 2.0 + busy_dec * t_dec / 2.0 + own)) + wait.mean()
    out = law.quantiles(np.asarray(qs, dtype=np.float64), float(np.max(own + t_pf)) + 2.0 * wait.mean() + 1.0)
    # Inter-token latency: steps per ms r = f / T_pf + (1 - f) / T_dec; a user's token per step, so
    # weight each population state by the sequences decoding in it.
    rate = f / t_pf + (1.0 - f) / t_dec
    w = pn * n
    tpot = float(np.sum(w) / np.sum(w * rate)) if np.sum(w) > 0 else float(t_dec[0])
    return tuple(float(x) for x in out), mean, wait.rho, tpot


def _distinct(ascending: FloatArray) -> FloatArray:
    """The distinct values of a non-decreasing array (``np.unique`` without its sort, and without the first call's
    import of ``numpy.ma``, ~10 ms of a cold capacity search)."""
    out: FloatArray = ascending[np.concatenate(([True], ascending[1:] != ascending[:-1]))]
    return out


def _sparse(n: FloatArray) -> FloatArray:
    """At most 48 evenly spread points of ``n`` (the step model is smooth: interpolate between them)."""
    return _distinct(np.linspace(float(n[0]), float(n[-1]), min(len(n), 48)).round())


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
    (``deployment.prefill_chunk_tokens``, vLLM's ``max_num_batched_tokens``), or, with
    ``deployment.chunked_prefill`` ``False``, prefill-only steps between groups of ``deployment.scheduler_steps``
    decode steps (:mod:`voicebudget.inference._prefill_first`); see the module docstring
    for the formulas (mean step as a fixed point, M/G/1 wait for a prefill slot with its exact tail
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
    served, at_rate = open_loop_at(model, hardware, deployment, workload, request_rate_per_s, calibration)
    plan, o, capacity = served.plan, served.o, served.capacity
    from voicebudget.inference._predict import estimate_inference

    load = request_rate_per_s / capacity
    line = OPEN_LOOP_PREDICTABLE_LOAD
    (p50, p90, p99), mean_ttft, rho, tpot, n_d, n_p = at_rate
    conc = served.concurrency(request_rate_per_s, at_rate)
    at = estimate_inference(
        plan.model,
        plan.hardware,
        deployment.model_copy(
            update={
                "concurrency": max(1, math.ceil(conc)),
                "chips": plan.chips_per_replica * plan.replicas,
                "tensor_parallel": plan.tp,
                "pipeline_parallel": plan.pp,
            }
        ),
        workload,
        calibration=plan.cal,
    )
    alias = model.strip().lower() if isinstance(model, str) else None
    if alias is not None and alias != at.model:  # the id the caller used, as estimate_inference keeps it
        at = at.model_copy(update={"model_alias": alias})
    return OpenLoopResult(
        request_rate_per_s=request_rate_per_s,
        capacity_requests_per_s=capacity,
        load=load,
        ttft_lower_bound=load > line,
        notes=(lower_bound_note(load, line, of="capacity"),) if load > line else (),
        replicas=plan.replicas,
        ttft_p50_ms=p50,
        ttft_p90_ms=p90,
        ttft_p99_ms=p99,
        ttft_mean_ms=mean_ttft,
        tpot_ms=tpot,
        mean_concurrency=conc,
        decode_batch=n_d,
        prefill_tokens_per_step=n_p,
        prefill_utilization=rho,
        throughput_tokens_per_s=request_rate_per_s * o,
        at_mean_concurrency=at,
    )


_AtRate = tuple[tuple[float, ...], float, float, float, float, float]
"""TTFT p50/p90/p99, TTFT mean, prefill utilisation, TPOT, decoding sequences and prompt tokens per step."""


def open_loop_at(
    model: str | ModelArch,
    hardware: str | Hardware,
    deployment: Deployment,
    workload: Workload,
    request_rate_per_s: float,
    calibration: GPUCalibration | None = None,
) -> tuple[_Served, _AtRate]:
    """:func:`estimate_open_loop`'s scheduler model alone (the deployment's rate-free part, and
    :data:`_AtRate` at the rate, TTFT at or above :data:`OPEN_LOOP_PREDICTABLE_LOAD` the lower bound), without the
    closed-loop estimate at the mean concurrency: what a capacity search reads at each load level.

    :raises ModelError: as :func:`estimate_open_loop`.
    """
    if not request_rate_per_s > 0 or not math.isfinite(request_rate_per_s):
        raise ModelError(f"request_rate_per_s must be a finite number > 0, got {request_rate_per_s}")
    served = _served(model, hardware, deployment, workload, calibration)
    plan, p, o, budget, capacity = served.plan, served.p, served.o, served.budget, served.capacity
    lam = request_rate_per_s / plan.replicas / 1e3  # per ms per replica
    quantiles = served.at_rate(lam) if request_rate_per_s < capacity else None
    if quantiles is not None and request_rate_per_s / capacity > OPEN_LOOP_PREDICTABLE_LOAD:  # a lower bound
        bound = served.bound()
        if bound is not None:
            quantiles = (bound[0], bound[1], quantiles[2], quantiles[3], quantiles[4], quantiles[5])
    if quantiles is None:
        raise ModelError(
            f"{request_rate_per_s:g} requests/s is at or beyond what this deployment serves (about "
            f"{capacity:.3g} requests/s with a step budget of {budget:.0f} tokens for {p:.0f} in / {o:.0f} out); "
            "the queue would grow without bound: add replicas or lower the rate"
        )
    return served, quantiles


@dataclass(frozen=True)
class _Served:
    """What does not depend on the arrival rate: the plan, the step model, the step budget and admission
    limit, the capacity (requests/s over the replicas), the scheduler model at a rate (``at_rate``, requests per ms
    per replica) and, once asked, the TTFT at the predictable load."""

    plan: GPUPlan
    step: Callable[[float, float], float]
    p: float
    o: float
    budget: float
    cap: float
    capacity: float
    at_rate: Callable[[float], _AtRate | None]
    _bound: list[_AtRate | None] = field(default_factory=list)

    def concurrency(self, request_rate_per_s: float, at_rate: _AtRate) -> float:
        """Requests in flight on average at the rate (Little's law): ``lambda (E[TTFT] + (O - 1) TPOT)``."""
        return request_rate_per_s / 1e3 * (at_rate[1] + max(self.o - 1.0, 0.0) * at_rate[3])

    def bound(self) -> _AtRate | None:
        """:attr:`at_rate` at :data:`OPEN_LOOP_PREDICTABLE_LOAD` of the capacity (computed on first use)."""
        if not self._bound:
            self._bound.append(self.at_rate(OPEN_LOOP_PREDICTABLE_LOAD * self.capacity / self.plan.replicas / 1e3))
        return self._bound[0]


@functools.lru_cache(maxsize=256)
def _served(
    model: str | ModelArch,
    hardware: str | Hardware,
    deployment: Deployment,
    workload: Workload,
    calibration: GPUCalibration | None,
) -> _Served:
    """The rate-free part of :func:`estimate_open_loop`, once per deployment and workload: a capacity search
    evaluates one deployment at ~15-40 rates, and the capacity's bisection was ~40% of each call."""
    plan = _resolve(model, hardware, deployment, workload, calibration)
    p, o = float(workload.prompt_tokens), float(workload.output_tokens)
    budget = float(deployment.prefill_chunk_tokens or default_step_budget(plan.hardware))
    admitted = float(admitted_requests(plan, deployment.memory_utilization, p + o / 2.0))

    def step(nd: float, npf: float) -> float:
        return decode_step_ms(plan, nd, p + o / 2.0, npf, p / 2.0)

    def step_grid(nd: FloatArray, npf: FloatArray) -> FloatArray:
        return step_ms_array(plan, nd, p + o / 2.0, npf, p / 2.0)

    cap = min(admitted, budget * (1.0 - PROMPT_SHARE_FLOOR))
    steps = deployment.scheduler_steps
    if deployment.chunked_prefill:

        def at_rate(lam: float) -> _AtRate | None:
            q = _at_rate(step, step_grid, lam, p, o, budget, cap)
            if q is None or steps == 1:
                return q
            extra = (steps - 1) * q[3] / 2.0  # the rest of the running multi-step group
            return (tuple(x + extra for x in q[0]), q[1] + extra, *q[2:])

        capacity = _capacity(step, p, o, budget, cap)
    else:  # prefill-only steps between decode groups (._prefill_first)

        def at_rate(lam: float) -> _AtRate | None:
            return _cycle_at_rate(plan, lam, p, o, budget, steps, cap)

        cycle = functools.partial(open_loop_cycle, plan, p=p, o=o, budget=budget, steps=steps, running_cap=cap)
        capacity = _largest_rate(lambda lam: cycle(lam) is not None)
    return _Served(plan, step, p, o, budget, cap, capacity * plan.replicas, at_rate)


def _at_rate(
    step: Callable[[float, float], float],
    step_grid: _Steps,
    lam: float,
    p: float,
    o: float,
    budget: float,
    running_cap: float = math.inf,
) -> _AtRate | None:
    """TTFT quantiles, mean, prefill utilisation, TPOT, decode batch and prompt tokens per step at ``lam``
    requests per ms per replica (``step``: the step model, ``step_grid`` the same over arrays); ``None`` when the
    scheduler cannot keep up."""
    t = _mean_step(step, lam, p, o, budget, running_cap)
    if t is None or lam * p * t >= budget - lam * max(o - 1.0, 0.0) * t:
        return None
    n_d, n_p = lam * max(o - 1.0, 0.0) * t, lam * p * t
    q = _ttft_quantiles(step_grid, lam, p, o, budget, n_p, n_d, _PERCENTILES)
    return None if q is None else (*q, n_d, n_p)


def _capacity(
    step: Callable[[float, float], float], p: float, o: float, budget: float, running_cap: float = math.inf
) -> float:
    """Largest arrival rate (requests/s per replica) with a fixed point below the step budget and the KV cache's
    admission limit ``running_cap``."""
    return _largest_rate(lambda lam: _step_bracket(step, lam, p, o, budget, running_cap) is not None)


def _largest_rate(served: Callable[[float], bool]) -> float:
    """Largest rate (requests/s) for which ``served(rate / 1e3)`` holds (a served rate's lower rates are served)."""
    lo, hi = 0.0, 1.0
    while served(hi / 1e3):
        lo, hi = hi, hi * 2.0
        if hi > 1e7:  # pragma: no cover - no real deployment serves this
            break
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if served(mid / 1e3):
            lo = mid
        else:
            hi = mid
    return lo


def _cycle_at_rate(
    plan: GPUPlan, lam: float, p: float, o: float, budget: float, steps: int, running_cap: float
) -> _AtRate | None:
    """:data:`_AtRate` of the prefill/decode cycle (no chunked prefill, :mod:`._prefill_first`) at ``lam`` requests
    per ms per replica: the wait before the prefill step is uniform over the cycle (or the decode group, at light
    load), so a quantile is that of the wait plus the prefill step; ``None`` beyond what the replica serves."""
    at = open_loop_cycle(plan, lam, p, o, budget, steps, running_cap)
    if at is None:
        return None
    cy, decoding = at
    quantiles = tuple(cy.wait_quantile(q) + cy.prefill_ms for q in _PERCENTILES)
    per_step = cy.prompts * p / (cy.cycle_ms / cy.tpot_ms + 1.0)  # a cycle's prompt tokens over its steps
    return quantiles, cy.ttft_ms, cy.load, cy.tpot_ms, decoding, per_step
