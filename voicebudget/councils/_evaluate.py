"""Evaluate a council: latency against the budget, quality, cost per turn, expected user time.

:func:`evaluate_council` is pure (no disk, clock or global RNG) and vectorised, so the tuner can call
it on thousands of configurations in process, on common random numbers (same seed -> a member keeps
its samples across configurations).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from voicebudget._budget import Budget, with_overrides
from voicebudget._errors import ScenarioError, param
from voicebudget._io import Roots
from voicebudget._memory import check_memory
from voicebudget._report import Report, build_report
from voicebudget.councils._config import Council, load_council
from voicebudget.councils._latency import CouncilSamples, sample_council
from voicebudget.councils._plurality import (
    check_answer_space,
    plurality_accuracy,
    plurality_cap,
    plurality_from_nodes,
    plurality_log_odds_weights,
    weighted_plurality_accuracy,
    weighted_plurality_from_nodes,
)
from voicebudget.councils._quality import (
    RHO_TINY,
    cascade_accuracy,
    competence_nodes,
    conditional_accuracy,
    majority_cap,
    router_accuracy,
    vote_accuracy,
)

__all__ = ["CouncilResult", "QualityResult", "evaluate_council", "run_council"]


@dataclass(frozen=True)
class QualityResult:
    """How often the council's answer is right.

    :ivar accuracy: probability the combined answer is right.
    :ivar method: ``exact`` (closed form or quadrature) or ``monte-carlo`` (``vote``: the stopping
        time and the answer depend on each other; exact per finishing order, averaged over the
        simulated orders; ``standard_error`` says how close).
    :ivar standard_error: Monte Carlo standard error of ``accuracy``: ``vote``, and ``first_k``
        (exact per subset of first finishers, averaged over the simulated turns); else 0.
    :ivar best_member: the best single member's ``p``, for comparison.
    :ivar cap: for ``majority`` with ``rho > 0``: the accuracy a council of infinitely many members
        like the average one reaches, ``P(theta > 1/2)``.
    """

    accuracy: float
    method: str
    standard_error: float = 0.0
    best_member: float = float("nan")
    cap: float | None = None

    @property
    def error_rate(self) -> float:
        """``e = 1 - accuracy``."""
        return 1.0 - self.accuracy

    def to_dict(self) -> dict[str, Any]:
        return {
            "accuracy": self.accuracy,
            "error_rate": self.error_rate,
            "method": self.method,
            "standard_error": self.standard_error,
            "best_member": self.best_member,
            "cap": self.cap,
        }


@dataclass(frozen=True)
class CouncilResult:
    """One council judged: latency (a :class:`~voicebudget.Report` whose stages are the members,
    router, scorer and aggregator), quality, cost and expected user time.

    :ivar cost_per_turn_usd: expected price of one turn (every launched call billed in full).
    :ivar exchanges: ``X = 1 + e / (1 - e_r)``.
    :ivar expected_user_time_ms: ``X * (T_user + L + T_agent)``, ``L`` the mean latency plus
        ``user_time.other_latency_ms``.
    """

    council: Council
    report: Report
    quality: QualityResult
    cost_per_turn_usd: float
    exchanges: float
    expected_user_time_ms: float

    @property
    def passed(self) -> bool:
        """Within budget at the target percentile."""
        return self.report.passed

    @property
    def tail_driver(self) -> str | None:
        """The component (usually a member) that contributes most to the tail turns."""
        driver = self.report.tail_driver
        return driver.name if driver else None

    def summary(self) -> str:
        """One line: latency verdict, tail driver, accuracy, cost, expected user time."""
        return (
            f"{self.report.summary()}; accuracy {self.quality.accuracy:.3f}; "
            f"${self.cost_per_turn_usd:.6f}/turn; expected user time {self.expected_user_time_ms:.0f} ms"
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``voicebudget council --format json``."""
        r = self.report
        return {
            "name": self.council.name,
            "topology": self.council.topology,
            "budget": {"total_ms": r.budget.total_ms, "percentile": r.budget.percentile},
            "latency": {**r.total.to_dict(), "at_percentile_ms": r.total.at_percentile_ms},
            "slack_ms": r.slack_ms,
            "within_budget_share": r.within_budget_share,
            "components": [s.to_dict() for s in r.stages],
            "tail_driver": self.tail_driver,
            "quality": self.quality.to_dict(),
            "answer_space": None
            if self.council.answers is None
            else {
                "answers": self.council.answers,
                "wrong_concentration": self.council.concentration,
                "unsolved": self.council.unsolved,
            },
            "cost_per_turn": self.cost_per_turn_usd,
            "exchanges": _finite(self.exchanges),
            "expected_user_time_ms": _finite(self.expected_user_time_ms),
            "passed": self.passed,
            "samples": r.n_turns,
            "seed": r.seed,
        }

    def __repr__(self) -> str:
        return f"<CouncilResult {self.council.name!r} {'passed' if self.passed else 'FAILED'}: {self.summary()}>"


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def evaluate_council(
    council: Council,
    budget: Budget | None = None,
    *,
    samples: int | None = None,
    seed: int | None = None,
) -> CouncilResult:
    """Simulate a council's latency and compute its quality, cost and expected user time.

    :param council: the configuration.
    :param budget: default: the council's own ``budget`` (800 ms at p95 unless set).
    :param samples: simulated turns (default the council's ``samples``), >= 1.
    :param seed: default the council's ``seed``.
    :returns: a :class:`CouncilResult`; ``.report.tail_driver`` names the member driving the tail.
    :raises ValueError: ``samples < 1``.
    """
    n = council.samples if samples is None else samples
    if n < 1:
        raise ValueError(f"samples must be >= 1, got {n}")
    seed_int = council.seed if seed is None else seed
    budget = budget or council.budget
    check_memory(n, lambda k: _evaluate(council, budget, k, seed_int), what=f"council {council.name!r}")
    return _evaluate(council, budget, n, seed_int)


def _evaluate(council: Council, budget: Budget, n: int, seed_int: int) -> CouncilResult:
    draws = sample_council(council, n, seed_int)
    report = build_report(
        council.name,
        budget,
        draws.total,
        draws.parts,
        contributions=draws.contributions,
        seed=seed_int,
        origin=council.origin or f"council {council.name!r}",
        stage_fields=council_fields(council),
    )
    quality = council_quality(council, draws)
    cost = council_cost(council, draws)
    mean_ms = float(np.mean(draws.total))
    x = council.user_time.exchanges(quality.error_rate)
    return CouncilResult(council, report, quality, cost, x, council.user_time.expected_ms(quality.error_rate, mean_ms))


def council_fields(council: Council) -> dict[str, str]:
    """A council's latency parts -> their field paths in its file (``members.0.stage``, ``router.latency``)."""
    fields = {mb.name: f"members.{i}.stage" for i, mb in enumerate(council.members)}
    return {**fields, "router": "router.latency", "scorer": "scorer.latency", "aggregator": "aggregator"}


def run_council(
    path: str | Path,
    *,
    budget_ms: float | None = None,
    percentile: float | None = None,
    samples: int | None = None,
    seed: int | None = None,
    allowed_roots: Roots = (),
) -> CouncilResult:
    """Load a council file and evaluate it (what ``voicebudget council FILE`` does).

    :param allowed_roots: further folders that ``file`` references may read from (see
        :func:`~voicebudget.load_council`).

    :raises ScenarioError: invalid file, ``budget_ms``/``percentile`` out of range, or more turns
        than fit in memory (:func:`~voicebudget._memory.check_memory`).
    """
    council = load_council(path, allowed_roots=allowed_roots)
    budget = with_overrides(council.budget, budget_ms, percentile)
    try:
        return evaluate_council(council, budget, samples=samples, seed=seed)
    except ScenarioError as exc:  # too many turns: name the option, or the file's field
        if exc.field != "samples":
            raise
        raise ScenarioError(
            exc.detail,
            origin=param("samples") if samples is not None else str(path),
            field="" if samples is not None else "samples",
        ) from None


def council_quality(council: Council, draws: CouncilSamples) -> QualityResult:
    """Quality of the council's answer (exact except for ``vote``)."""
    p = council.p
    best = max(p)
    topo = council.topology
    if topo == "vote":
        acc, se = _vote_accuracy(council, draws)
        return QualityResult(acc, "monte-carlo", se, best)
    if topo == "router":
        router = council.router
        assert router is not None
        p_off = [mb.p if mb.p_off is None else mb.p_off for mb in council.members]
        share = [mb.share or 0.0 for mb in council.members]
        return QualityResult(router_accuracy(p, p_off, share, router.accuracy), "exact", 0.0, best)
    if topo == "cascade":
        scorer = council.scorer
        assert scorer is not None
        acc, _ = cascade_accuracy(p, council.rho, scorer.accept_if_correct, scorer.accept_if_wrong)
        return QualityResult(acc, "exact", 0.0, best)
    if council.answers is not None:
        return _plurality_quality(council, draws)
    cap = None
    if council.rule == "majority" and council.rho >= RHO_TINY:
        cap = majority_cap(float(np.mean(p)), council.rho)
    if topo == "all":
        return QualityResult(vote_accuracy(p, council.rho, council.rule, council.gain), "exact", 0.0, best, cap)
    acc, se = _first_k_accuracy(council, draws)
    return QualityResult(acc, "exact", se, best, cap)


def _first_k_accuracy(council: Council, draws: CouncilSamples) -> tuple[float, float]:
    """Average over which ``k`` members finished first (from the latency samples) of the exact
    accuracy of that subset (members' answers are independent of their latencies); and its Monte
    Carlo standard error (the spread of the subsets' accuracies over the turns, ``/ sqrt(n)``)."""
    bits = (draws.read.astype(np.int64) << np.arange(draws.read.shape[0])[:, None]).sum(axis=0)
    subsets, counts = np.unique(bits, return_counts=True)
    node_w, q = competence_nodes(council.p, council.rho)
    accs = np.array(
        [
            _subset_accuracy(council, [i for i in range(len(council.members)) if mask >> i & 1], node_w, q)
            for mask in subsets
        ]
    )
    n = float(counts.sum())
    acc = float(counts @ accs / n)
    se = math.sqrt(max(float(counts @ (accs - acc) ** 2) / n, 0.0) / n) if len(accs) > 1 else 0.0
    return acc, se if se > 1e-12 else 0.0  # float noise of equal accuracies


MAX_EXACT_VOTE_MEMBERS = 8
"""Up to this many voters, ``vote`` accuracy is exact per finishing order (``2^N`` answer patterns per
order); beyond, the simulated answers are averaged."""


def _vote_accuracy(council: Council, draws: CouncilSamples) -> tuple[float, float]:
    """``vote`` accuracy and its Monte Carlo standard error.

    The finishing order of the members does not depend on their answers, so the accuracy given the
    order is computed exactly (every pattern of right/wrong answers, weighted by the correlated
    competence model's quadrature, stopped as the simulation stops: the first ``m`` agreeing answers,
    else the majority, a tie counting 1/2) and averaged over the simulated orders (Rao-Blackwell: the
    same mean as averaging the simulated answers, a far smaller error; zero for identical members).
    """
    n_members = len(council.members)
    if n_members > MAX_EXACT_VOTE_MEMBERS or council.answers is not None:  # plurality: simulated answers
        c = draws.correct
        return float(c.mean()), float(c.std() / math.sqrt(c.size))
    lat = np.stack([draws.parts[mb.name] for mb in council.members])
    order = np.argsort(lat, axis=0, kind="stable")
    codes = (order * (n_members ** np.arange(n_members))[:, None]).sum(axis=0)
    uniq, first, counts = np.unique(codes, return_index=True, return_counts=True)
    patterns = (np.arange(2**n_members)[:, None] >> np.arange(n_members)[None, :]) & 1  # [P, N] right?
    node_w, q = competence_nodes(council.p, council.rho)
    like = np.where(patterns[None, :, :] == 1, q[:, None, :], 1.0 - q[:, None, :]).prod(axis=2)  # [J, P]
    prob = node_w @ like  # [P]
    m = council.m or 1
    accs = np.empty(uniq.size)
    for j, col in enumerate(first):
        right = np.cumsum(patterns[:, order[:, col]], axis=1)  # [P, N] in finishing order
        wrong = np.arange(1, n_members + 1)[None, :] - right
        reached = (right >= m) | (wrong >= m)
        decided = reached.any(axis=1)
        pos = np.where(decided, np.argmax(reached, axis=1), n_members - 1)
        right_at = right[np.arange(right.shape[0]), pos]
        fallback = np.where(2 * right_at > n_members, 1.0, np.where(2 * right_at == n_members, 0.5, 0.0))
        accs[j] = prob @ np.where(decided, (right_at >= m).astype(np.float64), fallback)
    n = float(counts.sum())
    acc = float(counts @ accs / n)
    se = math.sqrt(max(float(counts @ (accs - acc) ** 2) / n, 0.0) / n) if accs.size > 1 else 0.0
    return acc, se if se > 1e-12 else 0.0  # float noise of equal accuracies


def _subset_accuracy(council: Council, idx: list[int], node_w: np.ndarray, q: np.ndarray) -> float:
    if council.rule == "gain":
        gain = council.gain or ()
        return float(gain[len(idx) - 1])
    sub_p = [council.p[i] for i in idx]
    if council.rho < RHO_TINY or np.ptp(council.p) == 0:
        return vote_accuracy(sub_p, council.rho, council.rule)
    return conditional_accuracy(node_w, q[:, idx], council.rule)


def _plurality_quality(council: Council, draws: CouncilSamples) -> QualityResult:
    """``all``/``first_k`` over an answer space: exact plurality (weighted: log-odds weights floored
    at 0) of the members, or of each subset of ``k`` first finishers weighted by its frequency."""
    assert council.answers is not None
    p, u, c = council.p, council.unsolved, council.concentration
    best = max(p)
    cap = None
    if council.rule == "majority" and council.rho >= RHO_TINY:
        cap = plurality_cap(float(np.mean(p)), council.rho, c, u)
    if council.topology == "all":
        if council.rule == "gain":
            acc = float((council.gain or ())[len(p) - 1])
        else:
            score = plurality_accuracy if council.rule == "majority" else weighted_plurality_accuracy
            acc = score(p, rho=council.rho, answers=council.answers, wrong_concentration=c, unsolved=u)
        return QualityResult(acc, "exact", 0.0, best, cap)
    bits = (draws.read.astype(np.int64) << np.arange(draws.read.shape[0])[:, None]).sum(axis=0)
    subsets, counts = np.unique(bits, return_counts=True)
    solvable = np.asarray(p) / (1.0 - u)
    node_w, q = competence_nodes(solvable, council.rho)
    spread = check_answer_space(council.answers, c, u)
    acc = 0.0
    for mask, count in zip(subsets, counts, strict=True):
        idx = [i for i in range(len(p)) if mask >> i & 1]
        if council.rule == "gain":
            sub = float((council.gain or ())[len(idx) - 1])
        elif council.rule == "majority":
            sub = (1.0 - u) * plurality_from_nodes(node_w, q[:, idx], spread, c)
        elif c >= 1.0:  # wrong answers agree: the binary weighted vote
            sub = (1.0 - u) * conditional_accuracy(node_w, q[:, idx], "weighted")
        else:
            weights = plurality_log_odds_weights(solvable[idx], council.answers, c)
            sub = (1.0 - u) * weighted_plurality_from_nodes(node_w, q[:, idx], weights, spread, c)
        acc += count * sub
    return QualityResult(float(acc / counts.sum()), "exact", 0.0, best, cap)


def council_cost(council: Council, draws: CouncilSamples) -> float:
    """Expected USD per turn: launched members, router/scorer calls, the aggregator's prompt."""
    member_cost = np.asarray([mb.cost_usd() for mb in council.members])
    topo = council.topology
    if topo == "router":
        assert council.router is not None
        return float(council.router.cost_usd() + draws.stop_probabilities @ member_cost)
    if topo == "cascade":
        assert council.scorer is not None
        reach = np.cumsum(draws.stop_probabilities[::-1])[::-1]
        scorer_calls = float(reach[:-1].sum())
        return float(reach @ member_cost + scorer_calls * council.scorer.cost_usd())
    total = float(member_cost.sum())
    if council.aggregator is not None:
        tokens = np.asarray([mb.output_tokens for mb in council.members], dtype=np.float64) @ draws.read
        total += council.aggregator.cost_usd(float(tokens.mean()))
    return total
