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

from voicebudget._algebra import walk
from voicebudget._budget import Budget, with_overrides
from voicebudget._errors import ScenarioError, param
from voicebudget._io import Roots
from voicebudget._memory import check_memory, check_work
from voicebudget._report import Report, build_report
from voicebudget.councils._config import Council, load_council
from voicebudget.councils._latency import CouncilSamples, sample_council
from voicebudget.councils._topologies import QualityResult

__all__ = ["CouncilResult", "QualityResult", "evaluate_council", "run_council"]


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
    nodes = sum(1 for _ in walk(council))
    check_work(n, nodes, what=f"{nodes:,} stages ({len(council.members):,} members)", fewer="members")
    check_memory(n, lambda k: evaluate_checked(council, budget, k, seed_int), what=f"council {council.name!r}")
    return evaluate_checked(council, budget, n, seed_int)


def evaluate_checked(
    council: Council,
    budget: Budget,
    n: int,
    seed_int: int,
    *,
    stage_stats: bool = True,
    simulated: tuple[CouncilSamples, Report] | None = None,
) -> CouncilResult:
    """:func:`evaluate_council` without its work and memory checks, for a caller that made them once for a
    whole run (the tuner, over thousands of councils: each check reads ``/proc`` and the cgroup files).

    :param stage_stats: False: the report's stages carry only their tail attribution, not their
        percentiles (:func:`~voicebudget._report.build_report`); the tuner reads the total and the tail
        driver only.
    :param simulated: the council's turns and report (:func:`simulate_council`), if made: a council that
        differs from another only in its combining ``rule`` has the same turns (the rule changes its quality
        alone), so the tuner simulates them once for both.
    """
    draws, report = simulated or simulate_council(council, budget, n, seed_int, stage_stats=stage_stats)
    topology = council.topology_model
    quality = topology.quality(council, draws)
    cost = topology.cost(council, draws)
    mean_ms = float(np.mean(draws.total))
    x = council.user_time.exchanges(quality.error_rate)
    return CouncilResult(council, report, quality, cost, x, council.user_time.expected_ms(quality.error_rate, mean_ms))


def simulate_council(
    council: Council, budget: Budget, n: int, seed_int: int, *, stage_stats: bool = True
) -> tuple[CouncilSamples, Report]:
    """A council's ``n`` turns (:func:`~voicebudget.councils.sample_council`) and their latency report
    against ``budget`` (``stage_stats`` as in :func:`evaluate_checked`)."""
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
        stage_stats=stage_stats,
    )
    return draws, report


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
