"""From evaluated configurations to the answer: the shortlist worth re-evaluating, the Pareto front of
expected user time, latency at the percentile and cost (beyond the Monte Carlo noise), and the pick."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from voicebudget._budget import Budget
from voicebudget._text import as_given, count
from voicebudget.tuning._noise import NOISE_Z, SCREEN_Z, tie_tolerance
from voicebudget.tuning._pareto import noisy_front, pareto_front
from voicebudget.tuning._result import AsWritten, Candidate, TuneResult, short_config

__all__ = ["PICK_RULE", "place", "shortlist", "summarise"]

FloatArray = NDArray[np.float64]


def _arrays(cands: list[Candidate]) -> tuple[FloatArray, FloatArray]:
    obj = _comparable(np.array([c.objectives() for c in cands], dtype=np.float64).reshape(-1, 3))
    se = np.array([c.objective_errors() for c in cands], dtype=np.float64).reshape(-1, 3)
    return obj, se


def shortlist(candidates: list[Candidate], budget: Budget) -> list[Candidate]:
    """Configurations worth re-evaluating: within the cost limit, plausibly within budget (latency at
    the percentile minus ``SCREEN_Z`` standard errors at or under it), and surely beaten (by
    ``SCREEN_Z`` standard errors on every objective) by no configuration within budget."""
    plausible = [
        c
        for c in candidates
        if c.skipped is None and c.within_cost and c.p95_ms - SCREEN_Z * c.p95_se_ms <= budget.total_ms
    ]
    if not plausible:
        return []
    obj, se = _arrays(plausible)
    keep = noisy_front(obj, se, np.array([c.within_budget for c in plausible]), z=SCREEN_Z, sure=True)
    return [plausible[i] for i in keep]


def summarise(
    name: str,
    scope: str,
    budget: Budget,
    strategy: str,
    size: int,
    candidates: list[Candidate],
    errors: list[dict[str, Any]],
    seed: int,
    samples: int,
    finals: list[Candidate] | None = None,
    shortlisted: int = 0,
    refine_samples: int = 0,
    own: Candidate | None = None,
    notes: tuple[str, ...] = (),
    cost_limit: float | None = None,
) -> TuneResult:
    """The :class:`TuneResult` of a search: counts, the front of the feasible ``finals`` (else of the valid
    candidates), the pick and the council as written placed against the front.

    :param cost_limit: the file's ``max_cost_per_turn`` (USD per turn), None when it sets none: messages then
        speak of the budget alone.
    """
    valid = [c for c in candidates if c.skipped is None]
    reasons: dict[str, int] = {}
    for c in candidates:
        if c.skipped is not None:
            reasons[c.skipped] = reasons.get(c.skipped, 0) + 1
    feasible = [c for c in valid if c.feasible]
    front = _front([c for c in (valid if finals is None else finals) if c.feasible])
    best, reason, why = _pick(front, valid, budget, cost_limit is not None)
    as_written = place(own, front, best, budget) if own is not None and own.skipped is None else None
    return TuneResult(
        name,
        scope,
        budget,
        strategy,
        size,
        len(valid),
        len(feasible),
        len(candidates) - len(valid),
        tuple(front),
        best,
        why,
        tuple(errors),
        seed,
        samples,
        reasons,
        shortlisted,
        refine_samples or samples,
        reason,
        as_written,
        notes,
        cost_limit,
    )


def place(own: Candidate, front: list[Candidate], best: Candidate | None, budget: Budget) -> AsWritten:
    """Where the council as written sits: its budget verdict, the front rows it ties with on every
    objective and those that beat it beyond the noise (the relation of :func:`noisy_front`), and what
    the pick changes against it."""
    ties: list[int] = []
    beaten_by: list[int] = []
    if front:
        obj, se = _arrays([own, *front])
        tol = tie_tolerance(se[0], se[1:], obj[0], obj[1:])
        with np.errstate(invalid="ignore"):
            diff = np.nan_to_num(obj[0] - obj[1:], nan=0.0)  # > 0: the front row is better
        ties = [int(i) + 1 for i in np.flatnonzero(np.all(np.abs(diff) <= tol, axis=1))]
        beaten_by = [int(i) + 1 for i in np.flatnonzero(np.all(diff >= -tol, axis=1) & np.any(diff > tol, axis=1))]
    label = budget.label
    if own.within_budget:
        verdict = f"within budget ({label} {own.p95_ms:.1f} ms <= {as_given(budget.total_ms)} ms)"
    else:
        verdict = f"over budget ({label} {own.p95_ms:.1f} ms > {as_given(budget.total_ms)} ms)"
    if not own.within_cost:
        verdict += ", over the cost limit"
    if ties:
        where = f"ties row {_rows(ties)} of the front on every objective"
    elif beaten_by:
        where = f"beaten beyond the noise by row{'s' if len(beaten_by) > 1 else ''} {_rows(beaten_by)}"
    elif own.feasible:
        where = "no row of the front beats it beyond the noise"
    else:  # was "no row of the front beats it ..., but it is not feasible", of an empty front too
        why = " and ".join(
            w
            for w, bad in (("over budget", not own.within_budget), ("over the cost limit", not own.within_cost))
            if bad
        )
        where = f"not feasible, as it is {why}" + (
            ", though no row of the front beats it beyond the noise"
            if front
            else "; the front is empty, so there is nothing to place it against"
        )
    verdict = f"{verdict}; {where}"
    if best is not None and not any(front[i - 1] is best for i in ties):
        verdict += (
            f"; the pick: user time {best.expected_user_time_ms - own.expected_user_time_ms:+.0f} ms, "
            f"{label} {best.p95_ms - own.p95_ms:+.1f} ms, {best.cost_per_turn - own.cost_per_turn:+.6f} $/turn"
        )
    return AsWritten(own, tuple(ties), tuple(beaten_by), verdict)


def _rows(rows: list[int]) -> str:
    shown = ", ".join(f"#{i}" for i in rows[:6])
    return shown + (f" and {len(rows) - 6} more" if len(rows) > 6 else "")


def _front(feasible: list[Candidate]) -> list[Candidate]:
    """The feasible configurations no other beats beyond the noise, best expected user time first.

    Configurations that tie with an earlier one (in the space's order) on every objective within the
    noise share its row (``equivalent``): e.g. one member under ``all`` and under ``vote`` with
    ``m = 1``, or a batch policy that changes nothing measurable.
    """
    if not feasible:
        return []
    obj, se = _arrays(feasible)
    keep = noisy_front(obj, se)
    if keep.size == 0:  # a cycle of within-noise trades (the relation is not transitive)
        keep = pareto_front(obj)
    groups: list[list[int]] = []
    for i in sorted(keep, key=lambda i: feasible[i].index):
        for g in groups:
            lead = g[0]
            if np.all(np.abs(obj[i] - obj[lead]) <= tie_tolerance(se[i], se[lead], obj[i], obj[lead])):
                g.append(int(i))
                break
        else:
            groups.append([int(i)])
    return sorted(
        (replace(feasible[g[0]], equivalent=tuple(feasible[j].config for j in g[1:])) for g in groups),
        key=lambda c: (*_finite_objectives(c), c.index),
    )


def _finite_objectives(c: Candidate) -> tuple[float, float, float]:
    big = float(np.finfo(np.float64).max)
    eut, p95, cost = c.objectives()
    return (eut if math.isfinite(eut) else big, p95, cost)


def _comparable(obj: FloatArray) -> FloatArray:
    """Objectives rounded to 10 significant digits (quadrature and float noise must not split ties);
    infinite expected user time (every repair fails) sorts last.

    :raises ValueError: a NaN objective (never ranked; :func:`_refuse_nan` stops it earlier).
    """
    if np.isnan(obj).any():
        raise ValueError("objectives contain NaN: a NaN is an error, never a ranking")
    obj = np.where(np.isfinite(obj), obj, np.finfo(np.float64).max)
    digits = 9 - np.floor(np.log10(np.abs(np.where(obj == 0, 1.0, obj))))
    scale = 10.0 ** np.clip(digits, -300, 300)  # a subnormal objective (5e-324 ms) would need 10^333: inf, NaN
    with np.errstate(over="ignore"):  # the largest float may round up to inf: it sorts last either way
        return np.asarray(np.round(obj * scale) / scale, dtype=np.float64)


PICK_RULE = (
    "among the configurations within budget on the front: the lowest expected user time; those whose "
    f"±{NOISE_Z:g} standard-error intervals overlap its interval tie, and the tie goes to the lowest "
    "{label} (ties within the noise again), then the lowest cost"
)
"""The recommended pick's rule (docs/tuning.md), ``{label}`` the budget's percentile."""


def _pick(
    front: list[Candidate], valid: list[Candidate], budget: Budget, cost_limited: bool = True
) -> tuple[Candidate | None, str, str]:
    """The recommended pick by :data:`PICK_RULE`: ``(pick, reason, sentence)``.

    :param cost_limited: the file sets a cost limit (else the sentence names the budget alone)."""
    label = budget.label
    if not front:
        if not valid:
            return None, "no valid configuration", "no valid configuration in the space"
        in_budget = [c for c in valid if c.within_budget]
        if in_budget and not any(c.within_cost for c in in_budget):  # the cost limit, not the budget, left none
            cheapest = min(in_budget, key=lambda c: c.cost_per_turn)
            return (
                None,
                "nothing within the cost limit",
                (
                    f"{count(len(in_budget), 'configuration')} within {as_given(budget.total_ms)} ms at {label}, "
                    f"none within the cost limit; the cheapest of them costs ${cheapest.cost_per_turn:.6f}/turn"
                ),
            )
        fastest = min(valid, key=lambda c: c.p95_ms)
        return (
            None,
            "nothing within budget",
            (
                f"no configuration is within {as_given(budget.total_ms)} ms at {label}"
                f"{' (and the cost limit)' if in_budget and cost_limited else ''}; "
                f"the fastest reaches {fastest.p95_ms:.1f} ms"
            ),
        )
    tied, steps = _ties(front, label)
    best = tied[0]
    if len(steps) == 1:
        reason = "lowest expected user time on the front, beyond the noise"
    else:
        reason = f"{steps[0]}; of them {', then '.join(steps[1:])}"
    return (
        best,
        reason,
        (
            f"{short_config(best.config)}: {reason} "
            f"(user time {best.expected_user_time_ms:.0f} ± {best.expected_user_time_se_ms:.0f} ms per completed "
            f"request, accuracy {best.quality:.3f}, {label} {best.p95_ms:.1f} ± {best.p95_se_ms:.1f} ms <= "
            f"{as_given(budget.total_ms)} ms, ${best.cost_per_turn:.6f}/turn){_runner_up(front, best)}; "
            f"{len(front)} configurations on the front"
        ),
    )


def _runner_up(front: list[Candidate], best: Candidate) -> str:
    others = [c for c in front if c is not best]
    if not others:
        return ""
    nxt = min(others, key=lambda c: (_finite_objectives(c)[0], c.index))
    return (
        f"; next on user time: {short_config(nxt.config)} at {nxt.expected_user_time_ms:.0f} ± "
        f"{nxt.expected_user_time_se_ms:.0f} ms"
    )


def _ties(front: list[Candidate], label: str) -> tuple[list[Candidate], list[str]]:
    """Lexicographic choice with noise: keep the configurations tied (within the noise) with the best
    on user time, then on the percentile, then the cheapest. Returns the order and the steps taken."""
    keys: list[tuple[str, Callable[[Candidate], float], Callable[[Candidate], float]]] = [
        ("expected user time", lambda c: _finite_objectives(c)[0], lambda c: c.expected_user_time_se_ms),
        (label, lambda c: c.p95_ms, lambda c: c.p95_se_ms),
    ]
    pool = list(front)
    steps: list[str] = []
    for what, value, se in keys:
        lead = min(pool, key=lambda c: (value(c), c.index))
        pool = [
            c
            for c in pool
            if value(c) - value(lead)
            <= float(tie_tolerance(np.array(se(c)), np.array(se(lead)), np.array(value(c)), np.array(value(lead))))
        ]
        if len(pool) == 1:
            steps.append(f"the lowest {what}" if steps else f"lowest {what} on the front, beyond the noise")
            return pool, steps
        steps.append(
            f"the lowest {what}"
            if steps
            else f"{len(pool)} configurations tie on {what} (their ±{NOISE_Z:g} SE intervals overlap the lowest's)"
        )
    pool.sort(key=lambda c: (c.cost_per_turn, c.index))
    steps.append("the lowest cost")
    return pool, steps
