"""Serving without chunked prefill: prompts run as prefill-only steps between groups of decode steps.

vLLM's V0 scheduler with ``enable_chunked_prefill`` off (and SGLang's separate prefill batches) does not mix prompt
tokens into decode steps: when the scheduler finds requests waiting it runs one step holding every waiting prompt
(up to the step budget, ``max_num_batched_tokens``), and the decoding sequences wait for it; with multi-step
scheduling (vLLM's ``num_scheduler_steps``, ``N``) the scheduler runs only between groups of ``N`` decode steps, so
a new request waits for the running group to end (vLLM PR #7000, "Multi Step Scheduling", 2024-08: the scheduler
is invoked once per ``N`` forward steps; read 2026-12-02). AMD's MLPerf Inference v5.1 Llama-2-70B Server
submissions run that way: ``enable_chunked_prefill: False``, ``num_scheduler_steps: 9``,
``max_num_batched_tokens: 40960`` (mlcommons/inference_results_v5.1, closed/AMD/code/llama2-70b-99/harness_llm/
models/llama2-70b/server_mi300x.yaml and server_mi325x.yaml; Interactive on MI300X: 8 steps), and their TTFT is
three to six times what a chunked scheduler at the same load gives.

The model, per replica (times in ms, ``lam`` prompts per ms)::

    D      = N * T_dec(b)                       one decode group of the b running sequences
    T_pf(n)                                     a prefill-only step of n prompts of P tokens (P / K steps' worth
                                                beyond the budget K): a + beta n, then gamma n
    C      = D + T_pf(n),  n = max(1, lam C)    the cycle: the prompts that arrived during one cycle go in the next
    TTFT   = rho C / 2 + (1 - rho) D / 2 + T_pf(n),   rho = min(1, lam C)
    TPOT   = T_dec / (1 - s),   s = lam T_pf(n) / n    (= C / N when every cycle holds a prefill)

A request arriving in a loaded cycle waits for its end (``C / 2`` on average) and then for the prefill step that
holds it and the cycle's other arrivals; at light load a prefill holds one prompt and the wait is the rest of the
running decode group, if one runs (a lone user's request, or one reaching an idle server, waits for nothing).
``s`` is the share of time the prefill-only steps take (``prefill_load``); the cycle has no fixed point when its
margin ``beta lam`` (or ``gamma lam``) reaches 1. The closed loop solves ``lam = (c - 1) /
(TTFT + (O - 1) TPOT)`` for it (bisection); the open loop takes the rate and solves the decoding population
``b = lam (O - 1) TPOT`` instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from voicebudget.inference._gpu import GPUPlan, decode_step_ms, prefill_ms

__all__ = ["Cycle", "PrefillShape", "cycle_at", "closed_loop_cycle", "open_loop_cycle", "prefill_shape"]


@dataclass(frozen=True)
class PrefillShape:
    """A prefill-only step of ``n`` prompts, ms: ``a + beta n`` up to ``n_k`` prompts (the budget), ``gamma n``
    beyond (budget-sized steps)."""

    a: float
    beta: float
    gamma: float
    n_k: float

    def ms(self, n: float) -> float:
        return self.a + self.beta * n if n <= self.n_k else self.gamma * n

    def margin(self, n: float) -> float:
        """``d T_pf / d n`` at ``n`` prompts, ms per prompt."""
        return self.beta if n <= self.n_k else self.gamma


def prefill_shape(plan: GPUPlan, p: float, budget: float, ctx: float) -> PrefillShape:
    """:class:`PrefillShape` of ``plan`` for prompts of ``p`` tokens under a step budget of ``budget`` tokens (two
    evaluations of :func:`~voicebudget.inference._gpu.prefill_ms`: one prompt, and a budget's worth)."""
    one = prefill_ms(plan, p, budget, 0.0, ctx)
    n_k = budget / p
    if n_k <= 1.0:  # a prompt longer than the budget: P / K budget-sized steps each
        return PrefillShape(0.0, one, one, 1.0)
    full = prefill_ms(plan, p, budget, 0.0, ctx, budget - p)
    beta = (full - one) / (n_k - 1.0)
    return PrefillShape(one - beta, beta, full / n_k, n_k)


@dataclass(frozen=True)
class Cycle:
    """One replica's prefill/decode cycle at ``lam`` prompts per ms (module docstring); times in ms."""

    lam: float
    cycle_ms: float
    group_ms: float
    prefill_ms: float
    prompts: float
    ttft_ms: float
    tpot_ms: float
    load: float

    def wait_quantile(self, q: float) -> float:
        """The ``q``-quantile of the wait before the prefill step: uniform over the cycle (share ``rho``) or over
        the decode group, ms."""
        rho = min(1.0, self.lam * self.cycle_ms)
        c, d = self.cycle_ms, self.group_ms
        if rho >= 1.0 or d <= 0.0:
            return q * c
        x = q / (rho / c + (1.0 - rho) / d)
        return x if x <= d else (q - (1.0 - rho)) * c / rho


def cycle_at(lam: float, t_dec: float, steps: int, shape: PrefillShape, busy: float = 1.0) -> Cycle | None:
    """The cycle at ``lam`` prompts per ms with decode steps of ``t_dec`` ms in groups of ``steps``; ``None`` when
    the prefill-only steps leave no time to decode (no fixed point). ``busy``: the chance that a request arriving
    between prefills finds a decode group running (1 with other users in flight; 0 on an idle server)."""
    d = steps * t_dec
    c = d + shape.ms(1.0)
    n = 1.0
    if lam * c > 1.0:
        for a, slope, lo, hi in ((shape.a, shape.beta, 1.0, shape.n_k), (0.0, shape.gamma, shape.n_k, math.inf)):
            if lam * slope >= 1.0:
                continue
            c = (d + a) / (1.0 - lam * slope)
            n = lam * c
            if lo <= n <= hi:
                break
        else:
            return None
    t_pf = shape.ms(n)
    rho = min(1.0, lam * c)
    share = lam * t_pf / n
    if share >= 1.0:
        return None
    ttft = rho * c / 2.0 + (1.0 - rho) * busy * d / 2.0 + t_pf
    return Cycle(lam, c, busy * d, t_pf, n, ttft, t_dec / (1.0 - share), share)


def closed_loop_cycle(
    plan: GPUPlan, running: float, p: float, o: float, budget: float, steps: int, line: float
) -> tuple[Cycle, float]:
    """The cycle of a closed loop of ``running`` requests per replica, and its prefill load; above ``line`` the
    returned cycle is the one at that load (its TTFT a lower bound).

    The other ``running - 1`` users send prompts at ``lam = (running - 1) / (TTFT + (O - 1) TPOT)``; the cycle's
    TTFT and TPOT grow with ``lam`` without bound near saturation, so the root is found by bisection below it.
    """
    ctx = p + o / 2.0
    t_dec = decode_step_ms(plan, running, ctx, 0.0, p / 2.0)
    shape = prefill_shape(plan, p, budget, ctx)
    others = running - 1.0
    if others <= 0.0:  # a lone user: nothing runs when its request arrives
        return cycle_at(0.0, t_dec, steps, shape, busy=0.0) or _unreachable(), 0.0
    lo, hi = 0.0, others / (max(o - 1.0, 0.0) * t_dec + shape.ms(1.0))
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        cy = cycle_at(mid, t_dec, steps, shape)
        if cy is not None and others / (cy.ttft_ms + max(o - 1.0, 0.0) * cy.tpot_ms) > mid:
            lo = mid
        else:
            hi = mid
    cy = cycle_at(lo, t_dec, steps, shape) or _unreachable()
    if cy.load <= line:
        return cy, cy.load
    return _at_load(cy, t_dec, steps, shape, line), cy.load


def _at_load(cy: Cycle, t_dec: float, steps: int, shape: PrefillShape, line: float) -> Cycle:
    """The cycle at the arrival rate (below ``cy.lam``) where the prefill load is ``line``."""
    lo, hi = 0.0, cy.lam
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        at = cycle_at(mid, t_dec, steps, shape)
        if at is not None and at.load <= line:
            lo = mid
        else:
            hi = mid
    return cycle_at(lo, t_dec, steps, shape) or cy


def open_loop_cycle(
    plan: GPUPlan, lam: float, p: float, o: float, budget: float, steps: int, running_cap: float
) -> tuple[Cycle, float] | None:
    """The cycle of one replica at ``lam`` arrivals per ms and its decoding population ``b = lam (O - 1) TPOT``
    (iterated from below to its smallest fixed point); ``None`` beyond what the replica serves (no cycle, or more
    sequences decoding than ``running_cap`` admits)."""
    ctx = p + o / 2.0
    shape = prefill_shape(plan, p, budget, ctx)
    b = 0.0
    for _ in range(400):
        cy = cycle_at(lam, decode_step_ms(plan, b, ctx, 0.0, p / 2.0), steps, shape, busy=min(1.0, b))
        if cy is None:
            return None
        nxt = lam * max(o - 1.0, 0.0) * cy.tpot_ms
        if nxt > running_cap:
            return None
        if abs(nxt - b) <= 1e-9 * max(nxt, 1.0):
            return cy, nxt
        b = nxt
    return None  # the population keeps growing: beyond what the replica serves


def _unreachable() -> Cycle:  # pragma: no cover - a light cycle always exists
    raise AssertionError("no cycle at zero load")
