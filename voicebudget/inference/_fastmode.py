"""Fast mode: the same model served at a lower concurrency (or on more chips), priced by chip-time.

Per-user output speed is ``1 / T_step(B)``; chip-time per output token is ``chips * T_step(B) / B``.
Lowering the concurrency ``B`` shortens the step (less KV cache to read, fewer tokens to compute,
fewer prompts of other users prefilled in each step), so each user's tokens come faster, and each
token costs more, because fewer users share the chips. The speed-up is capped by the step at batch
1: ``ceiling = T_step(B) / T_step(1)``; a target above it is out of reach by batch policy alone.

Anthropic's fast mode for Claude Opus 4.6 (docs/reference/inference-calibration.csv row A2): up to
2.5x output tokens/s at 6x the price, TTFT not the target. At equal chips, price multiple =
concurrency ratio / speed-up, so 6x at 2.5x implies a concurrency ratio of 15.
"""

from __future__ import annotations

import itertools
import math

from pydantic import BaseModel, ConfigDict

from voicebudget._errors import ModelError, param
from voicebudget.inference._catalog import Hardware, ModelArch, get_hardware
from voicebudget.inference._predict import DEFAULT_CALIBRATION, estimate_inference
from voicebudget.inference._types import Deployment, GPUCalibration, InferenceResult, Workload

__all__ = [
    "FastModeBand",
    "FastModeBandRow",
    "FastModeComparison",
    "FastModePlan",
    "compare_policies",
    "fast_mode_band",
    "plan_fast_mode",
]


class FastModeComparison(BaseModel):
    """Two batch policies of one model, side by side.

    :ivar speedup: per-user output speed, fast / baseline.
    :ivar ttft_ratio: TTFT, fast / baseline.
    :ivar price_ratio: chip-time per output token, fast / baseline (the price multiple at equal margin).
    """

    model_config = ConfigDict(frozen=True)

    baseline: InferenceResult
    fast: InferenceResult
    speedup: float
    ttft_ratio: float
    price_ratio: float


class FastModePlan(BaseModel):
    """The concurrency that delivers a target speed-up, and what it costs.

    :ivar concurrency: the largest (cheapest) concurrency reaching the target; ``None`` when out of reach.
    :ivar ceiling: the largest speed-up any batch policy gives, ``T_step(B) / T_step(1)``.
    :ivar concurrency_ratio: baseline concurrency / fast concurrency.
    """

    model_config = ConfigDict(frozen=True)

    target_speedup: float
    baseline_concurrency: int
    ceiling: float
    reachable: bool
    concurrency: int | None
    comparison: FastModeComparison | None
    concurrency_ratio: float | None
    message: str


def _chip_ms_per_token(r: InferenceResult) -> float:
    return r.chips * 1e3 / r.throughput_tokens_per_s


def compare_policies(
    model: str | ModelArch,
    hardware: str | Hardware,
    baseline: Deployment,
    fast: Deployment,
    workload: Workload | None = None,
    *,
    calibration: GPUCalibration = DEFAULT_CALIBRATION,
) -> FastModeComparison:
    """Compare two deployments of one model (e.g. concurrency 64 vs 4, or 8 vs 16 chips).

    :raises ModelError: either deployment does not fit.
    """
    b = estimate_inference(model, hardware, baseline, workload, calibration=calibration)
    f = estimate_inference(model, hardware, fast, workload, calibration=calibration)
    return FastModeComparison(
        baseline=b,
        fast=f,
        speedup=b.tpot_ms / f.tpot_ms,
        ttft_ratio=f.ttft_ms / b.ttft_ms,
        price_ratio=_chip_ms_per_token(f) / _chip_ms_per_token(b),
    )


def plan_fast_mode(
    model: str | ModelArch,
    hardware: str | Hardware,
    baseline: Deployment,
    target_speedup: float,
    workload: Workload | None = None,
    *,
    calibration: GPUCalibration = DEFAULT_CALIBRATION,
) -> FastModePlan:
    """Find the concurrency that gives ``target_speedup`` over ``baseline`` (same chips), by bisection
    (the speed-up falls monotonically with concurrency).

    :param target_speedup: wanted per-user output-speed multiple over the baseline, ``>= 1``.
    :returns: the plan; ``reachable`` is ``False`` (and ``message`` says so) when even concurrency 1
        falls short, with ``ceiling`` the best available.
    :raises ModelError: the baseline does not fit; ``target_speedup`` below 1 or not finite.
    """
    _check_speedup(target_speedup)
    base = estimate_inference(model, hardware, baseline, workload, calibration=calibration)
    fixed = baseline.model_copy(
        update={
            "chips": base.chips,
            "tensor_parallel": base.tensor_parallel,
            "pipeline_parallel": base.pipeline_parallel,
        }
    )

    def compare(c: int) -> FastModeComparison:
        return compare_policies(
            model, hardware, fixed, fixed.model_copy(update={"concurrency": c}), workload, calibration=calibration
        )

    top = compare(1)
    b0 = baseline.concurrency
    if top.speedup < target_speedup:
        return FastModePlan(
            target_speedup=target_speedup,
            baseline_concurrency=b0,
            ceiling=top.speedup,
            reachable=False,
            concurrency=None,
            comparison=None,
            concurrency_ratio=None,
            message=(
                f"out of reach: {target_speedup:.2f}x asked, but batch 1 gives only {top.speedup:.2f}x over "
                f"concurrency {b0} (ceiling T_step({b0})/T_step(1)); more chips or a faster chip needed"
            ),
        )
    lo, hi = 1, b0  # speedup(lo) >= target; find the largest such concurrency
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if compare(mid).speedup >= target_speedup:
            lo = mid
        else:
            hi = mid
    at_hi = compare(hi)
    best = at_hi if at_hi.speedup >= target_speedup else compare(lo)
    c = best.fast.concurrency
    return FastModePlan(
        target_speedup=target_speedup,
        baseline_concurrency=b0,
        ceiling=top.speedup,
        reachable=True,
        concurrency=c,
        comparison=best,
        concurrency_ratio=b0 / c,
        message=(
            f"concurrency {b0} -> {c} gives {best.speedup:.2f}x output speed at {best.price_ratio:.2f}x "
            f"chip-time per token (TTFT x{best.ttft_ratio:.2f}); ceiling {top.speedup:.2f}x at batch 1"
        ),
    )


UNCERTAIN_CONSTANTS: dict[str, tuple[float, ...]] = {
    "tau_layer_ms": (0.025, 0.05, 0.1),
    "tau_seq_ms": (0.005, 0.01, 0.015),
}
"""The fitted constants a fast-mode price is most sensitive to, each over a range the rows do not rule out:
``tau_layer`` 0.025 -> 0.1 ms moved 405B's 2.5x from 2.85x of the price to unreachable (issue 21); the per-sequence
cost (0.01 ms, half to 1.5 times it: the leave-one-source-out folds of the collected measurements re-choose
0.006-0.012) sets how much a large baseline batch costs. On a 2023-24 serving stack (``Deployment.software`` "2024")
the per-rank sequence cost ``tau_seq_rank_ms`` adds to it at tp > 1 (docs/inference.md)."""

DEFAULT_BASELINES = (16, 32, 48, 64, 96, 128, 144, 160, 192, 256, 384, 512)
"""Baseline concurrencies the band scans (requests in flight on the standard tier)."""


class FastModeBandRow(BaseModel):
    """One baseline load: whether the target is reachable and at what price, over the uncertain constants.

    :ivar reachable_share: share of the constant combinations under which the target is reachable.
    :ivar price_ratio: chip-time per token, fast / baseline, with the default constants (``None``: unreachable).
    :ivar price_min: the lowest price ratio over the combinations that reach the target (``None``: none does).
    :ivar price_max: the highest.
    """

    model_config = ConfigDict(frozen=True)

    baseline_concurrency: int
    reachable_share: float
    price_ratio: float | None
    price_min: float | None
    price_max: float | None


class FastModeBand(BaseModel):
    """The fast-mode curve: for each baseline load, whether ``target_speedup`` is reachable and its price range.

    :ivar min_reachable_baseline: the smallest scanned baseline at which the default constants reach the target.
    :ivar published_baseline: the scanned baseline whose default price ratio is closest to ``published_price``
        (Anthropic's 6x for 2.5x): the load the published trade pins, not a check of the physics; ``None`` when
        no scanned baseline's price range, over the uncertain constants, reaches that price (a 1.2x target
        costs at most 4.4x: nothing is pinned, and the message says so).
    """

    model_config = ConfigDict(frozen=True)

    target_speedup: float
    rows: tuple[FastModeBandRow, ...]
    min_reachable_baseline: int | None
    published_price: float | None
    published_baseline: int | None
    message: str


def _ranges() -> str:
    return " and ".join(f"{k.removesuffix('_ms')} {min(v):g}-{max(v):g} ms" for k, v in UNCERTAIN_CONSTANTS.items())


def _check_speedup(target_speedup: float) -> None:
    if not (math.isfinite(target_speedup) and target_speedup >= 1):
        raise ModelError(f"{param('target_speedup')} must be a finite number >= 1, got {target_speedup}")


def fast_mode_band(
    model: str | ModelArch,
    hardware: str | Hardware,
    deployment: Deployment,
    target_speedup: float,
    workload: Workload | None = None,
    *,
    baselines: tuple[int, ...] = DEFAULT_BASELINES,
    published_price: float | None = 6.0,
) -> FastModeBand:
    """The range of baseline loads for which ``target_speedup`` is reachable by batch policy, and the price
    multiple over :data:`UNCERTAIN_CONSTANTS` (a band, not one point: the trade is steep in the baseline).

    :param deployment: chips, parallelism, precision (its ``concurrency`` is replaced by each baseline).
    :param baselines: baseline concurrencies to scan; those the deployment does not carry (the KV cache or the step
        budget admits fewer, or the others' prompts exceed the step budget) are left out.
    :param published_price: a published price multiple for the target (Anthropic fast mode: 6x for 2.5x) to
        find the baseline load it implies; ``None``: not looked for.
    :returns: :class:`FastModeBand`, one row per baseline that fits.
    :raises ModelError: ``target_speedup`` below 1 or not finite, hardware that is SRAM-resident (no batch policy),
        or no baseline fits.
    """
    _check_speedup(target_speedup)
    hw = get_hardware(hardware)
    if hw.memory_kind == "sram":
        raise ModelError(
            f"the fast-mode band is a GPU batch policy; {hw.name} is SRAM-resident: its per-user speed does not "
            "depend on the batch until its compute floor (more chips or a faster software generation is its fast "
            "mode)"
        )
    combos = [
        GPUCalibration(**dict(zip(UNCERTAIN_CONSTANTS, values, strict=True)))
        for values in itertools.product(*UNCERTAIN_CONSTANTS.values())
    ]
    rows = []
    for b in baselines:
        dep = deployment.model_copy(update={"concurrency": b})
        try:
            default = plan_fast_mode(model, hardware, dep, target_speedup, workload)
        except ModelError:
            continue  # one request does not fit
        base = estimate_inference(model, hardware, dep, workload)
        if base.running_requests < b or base.prefill_load >= 1.0:
            continue  # a baseline the deployment does not carry (requests queue, or prompts exceed the budget)
        prices = []
        for cal in combos:
            p = plan_fast_mode(model, hardware, dep, target_speedup, workload, calibration=cal)
            if p.reachable and p.comparison is not None:
                prices.append(p.comparison.price_ratio)
        rows.append(
            FastModeBandRow(
                baseline_concurrency=b,
                reachable_share=len(prices) / len(combos),
                price_ratio=default.comparison.price_ratio if default.comparison is not None else None,
                price_min=min(prices) if prices else None,
                price_max=max(prices) if prices else None,
            )
        )
    if not rows:
        raise ModelError("the deployment carries none of the baseline concurrencies scanned")
    reach = [r.baseline_concurrency for r in rows if r.price_ratio is not None]
    pinned = None
    beyond = ""
    if published_price is not None:
        priced = [r for r in rows if r.price_ratio is not None]
        lows = [r.price_min for r in priced if r.price_min is not None]
        highs = [r.price_max for r in priced if r.price_max is not None]
        if priced and lows and highs and min(lows) <= published_price <= max(highs):
            pinned = min(priced, key=lambda r: abs(r.price_ratio - published_price)).baseline_concurrency  # type: ignore[operator]
        elif priced and lows and highs:  # no scanned baseline prices the target near it: nothing is pinned
            beyond = (
                f"; no scanned baseline prices it near {published_price:g}x "
                f"({min(lows):.1f}-{max(highs):.1f}x over {_ranges()})"
            )
    lo = reach[0] if reach else None
    at = next((r for r in rows if r.baseline_concurrency == pinned), None)
    msg = (
        f"{target_speedup:g}x is out of reach by batch policy at every scanned baseline"
        if lo is None
        else f"{target_speedup:g}x is reachable from a baseline of {lo} in flight"
    )
    msg += beyond
    if at is not None and at.price_min is not None:
        msg += (
            f"; a {published_price:g}x price pins the baseline near {pinned} in flight, where the price is "
            f"{at.price_min:.1f}-{at.price_max:.1f}x over {_ranges()} (reachable in {at.reachable_share:.0%} of them)"
        )
    return FastModeBand(
        target_speedup=target_speedup,
        rows=tuple(rows),
        min_reachable_baseline=lo,
        published_price=published_price,
        published_baseline=pinned,
        message=msg,
    )
