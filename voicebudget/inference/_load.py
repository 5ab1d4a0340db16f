"""From an arrival rate to the concurrency it implies (Little's law), for open-loop traffic.

A server receiving ``lambda`` requests/s, each in flight for ``R(C) = TTFT(C) + O x TPOT(C)`` ms,
holds ``C = lambda x R(C) / 1000`` requests on average (Little's law). ``R`` grows with ``C``, so the
steady state is the fixed point of that equation; it exists while ``lambda`` is below the deployment's
request capacity ``max_C C / R(C)``. Above it the queue grows without bound: a :class:`ModelError`.
"""

from __future__ import annotations

from collections.abc import Callable

from voicebudget._errors import ModelError
from voicebudget.inference._catalog import Hardware, ModelArch
from voicebudget.inference._predict import DEFAULT_CALIBRATION, estimate_inference
from voicebudget.inference._types import Deployment, GPUCalibration, InferenceResult, Workload

__all__ = ["estimate_at_arrival_rate", "littles_law_fixed_point"]


def _request_ms(r: InferenceResult) -> float:
    return r.ttft_ms + r.output_tokens * r.tpot_ms


MAX_SEARCH_CONCURRENCY = 2**24
"""The fixed-point search gives up beyond this many requests in flight (the load is then beyond what the
deployment serves at any concurrency, as on SRAM chips whose chip count grows with the KV cache)."""


def estimate_at_arrival_rate(
    model: str | ModelArch,
    hardware: str | Hardware,
    deployment: Deployment,
    workload: Workload,
    arrival_rate_per_s: float,
    *,
    calibration: GPUCalibration = DEFAULT_CALIBRATION,
) -> InferenceResult:
    """Predict serving at an open-loop arrival rate: the concurrency is the fixed point of Little's law.

    :param deployment: chips, precision...; its ``concurrency`` is replaced by the fixed point (the
        smallest integer ``C`` with ``C >= arrival_rate x R(C)``).
    :param arrival_rate_per_s: requests per second, ``> 0``.
    :returns: the :class:`InferenceResult` at that concurrency.
    :raises ModelError: the rate exceeds what the deployment can serve before its memory is full (the
        message gives the capacity in requests/s), or the deployment does not fit at all.
    """

    def at(c: int) -> InferenceResult:
        return estimate_inference(
            model, hardware, deployment.model_copy(update={"concurrency": c}), workload, calibration=calibration
        )

    return littles_law_fixed_point(at, arrival_rate_per_s)


def littles_law_fixed_point(at: Callable[[int], InferenceResult], arrival_rate_per_s: float) -> InferenceResult:
    """:func:`estimate_at_arrival_rate` for any inference model: ``at(c)`` is the prediction at concurrency
    ``c`` (a hardware kind's own model, :meth:`voicebudget.inference.ModelledStage.at_arrival_rate`).

    :raises ModelError: a rate <= 0, or one beyond what ``at`` serves (``at`` raising ModelError past memory).
    """
    if arrival_rate_per_s <= 0:
        raise ModelError(f"arrival_rate_per_s must be > 0, got {arrival_rate_per_s}")

    def slack(c: int) -> tuple[bool, float]:
        """(c holds the load: c >= lambda R(c), requests/s served at c); raises ModelError past memory."""
        r = at(c)
        return c >= arrival_rate_per_s * _request_ms(r) / 1e3, c * 1e3 / _request_ms(r)

    lo, hi, capacity = 0, 1, 0.0
    while True:  # double until c holds the load or memory runs out
        try:
            ok, rate = slack(hi)
        except ModelError:
            raise ModelError(
                f"{arrival_rate_per_s:g} requests/s exceeds what this deployment serves before its memory is "
                f"full (about {capacity:.3g} requests/s at concurrency {max(lo, 1)}); add chips or replicas"
            ) from None
        capacity = max(capacity, rate)
        if ok:
            break
        if hi >= MAX_SEARCH_CONCURRENCY:  # e.g. wafers past their compute floor: more in flight serves no more
            raise ModelError(
                f"{arrival_rate_per_s:g} requests/s exceeds what this deployment serves (about {capacity:.3g} "
                f"requests/s; still short at concurrency {hi:,}): its throughput is saturated; add chips or replicas"
            )
        lo, hi = hi, hi * 2
    while hi - lo > 1:  # the smallest c that holds (holding is monotone in c)
        mid = (lo + hi) // 2
        if slack(mid)[0]:
            hi = mid
        else:
            lo = mid
    r = at(hi)
    return r.model_copy(
        update={"notes": (*r.notes, f"concurrency {hi} from Little's law at {arrival_rate_per_s:g} requests/s")}
    )
