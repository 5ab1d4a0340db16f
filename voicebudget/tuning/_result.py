"""What the tuner reports: one evaluated configuration (:class:`Candidate`), the whole search
(:class:`TuneResult`), and configurations in words."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from voicebudget._budget import Budget
from voicebudget.tuning._space import Configuration

__all__ = [
    "DEFAULT_TUNE_SAMPLES",
    "AsWritten",
    "Candidate",
    "TuneResult",
    "describe",
    "jsonable",
    "same_figures",
    "short_config",
    "tail_label",
    "tail_tie_words",
]


DEFAULT_TUNE_SAMPLES = 2_000
"""Turns per configuration. At 2,000 turns the share within budget near p95 carries a Monte Carlo
standard error of ~0.5 percentage points; common random numbers make comparisons far tighter."""


@dataclass(frozen=True)
class Candidate:
    """One evaluated configuration.

    :ivar p95_ms: latency at the budget's target percentile (p95 by default), ms: voice-to-voice
        when tuned against a scenario, else the council's own.
    :ivar quality: probability the answer is right.
    :ivar cost_per_turn: USD per turn.
    :ivar expected_user_time_ms: ``X * (T_user + L + T_agent)``, ``X = 1 + e/(1-e_r)``.
    :ivar tail_driver: the member with the largest mean contribution over the tail turns.
    :ivar tail_ties: the members whose contribution is within the Monte Carlo noise of the driver's
        (``|a - b| <= 2 (se_a + se_b)``, the driver included), sorted by name, when there are two or
        more; empty otherwise. Which of them leads could flip with the seed.
    :ivar skipped: why the configuration is not a valid council (then no figures), else ``None``.
    :ivar samples: simulated turns behind the figures.
    :ivar p95_se_ms, mean_se_ms, quality_se, expected_user_time_se_ms, cost_se: Monte Carlo standard
        errors (:mod:`voicebudget.tuning._noise`); cost is exact (0) but for an aggregator's prompt.
    """

    index: int
    config: Configuration
    p95_ms: float = math.nan
    mean_ms: float = math.nan
    quality: float = math.nan
    cost_per_turn: float = math.nan
    expected_user_time_ms: float = math.nan
    within_budget: bool = False
    within_cost: bool = True
    tail_driver: str | None = None
    tail_ties: tuple[str, ...] = ()
    skipped: str | None = None
    equivalent: tuple[Configuration, ...] = ()
    """Other configurations with the same objectives (e.g. two combining rules over identical
    members): one row on the front, the first in the space's order, lists them here."""
    samples: int = 0
    p95_se_ms: float = 0.0
    mean_se_ms: float = 0.0
    quality_se: float = 0.0
    expected_user_time_se_ms: float = 0.0
    cost_se: float = 0.0

    @property
    def feasible(self) -> bool:
        """Valid, within the latency budget and within the cost constraint."""
        return self.skipped is None and self.within_budget and self.within_cost

    def objectives(self) -> tuple[float, float, float]:
        """``(expected_user_time_ms, p95_ms, cost_per_turn)``, all minimised."""
        return (self.expected_user_time_ms, self.p95_ms, self.cost_per_turn)

    def objective_errors(self) -> tuple[float, float, float]:
        """Standard errors of :meth:`objectives`, same order."""
        return (self.expected_user_time_se_ms, self.p95_se_ms, self.cost_se)

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": jsonable(self.config),
            "p95_ms": self.p95_ms,
            "mean_ms": self.mean_ms,
            "quality": self.quality,
            "cost_per_turn": self.cost_per_turn,
            "expected_user_time_ms": self.expected_user_time_ms if math.isfinite(self.expected_user_time_ms) else None,
            "tail_driver": self.tail_driver,
            "tail_ties": list(self.tail_ties),
            "equivalent": [jsonable(c) for c in self.equivalent],
            "samples": self.samples,
            "standard_errors": {
                "p95_ms": self.p95_se_ms,
                "mean_ms": self.mean_se_ms,
                "quality": self.quality_se,
                "expected_user_time_ms": _finite_or_none(self.expected_user_time_se_ms),
                "cost_per_turn": self.cost_se,
            },
        }


def tail_label(c: Candidate) -> str:
    """The table's tail cell: the driver, or ``tie of 3`` when members share the lead within the noise
    (named by :func:`tail_tie_words` under the table)."""
    return f"tie of {len(c.tail_ties)}" if c.tail_ties else (c.tail_driver or "")


def tail_tie_words(c: Candidate) -> str:
    """``"; tail: tie of 2x a, b"`` for a tail shared within the noise (copies of one model, ``a`` and
    ``a#2``, counted as in :func:`short_config`); empty when one member leads."""
    if not c.tail_ties:
        return ""
    counts: dict[str, int] = {}
    for name in c.tail_ties:
        base = name.split("#", 1)[0]
        counts[base] = counts.get(base, 0) + 1
    return "; tail: tie of " + ", ".join(f"{n}x {base}" if n > 1 else base for base, n in counts.items())


@dataclass(frozen=True)
class AsWritten:
    """The council as its file writes it (no search knob applied), judged like every configuration
    and placed against the front.

    :ivar candidate: its figures (``index`` -1), at the front's turns and seed.
    :ivar ties: front rows (1-based, as printed) it ties on every objective within the noise.
    :ivar dominated_by: front rows that beat it beyond the noise (worse on none, better on one).
    :ivar verdict: one sentence: the budget verdict and where it sits.
    """

    candidate: Candidate
    ties: tuple[int, ...]
    dominated_by: tuple[int, ...]
    verdict: str

    def to_dict(self) -> dict[str, Any]:
        c = self.candidate
        return {
            **c.to_dict(),
            "within_budget": c.within_budget,
            "within_cost": c.within_cost,
            "ties": list(self.ties),
            "dominated_by": list(self.dominated_by),
            "verdict": self.verdict,
        }


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


def jsonable(config: Configuration) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in config.items()}


@dataclass(frozen=True)
class TuneResult:
    """What ``voicebudget tune`` reports.

    :ivar evaluated: configurations evaluated (valid ones; ``skipped`` are not counted).
    :ivar feasible: of those, within budget and the cost constraint (at ``samples`` turns).
    :ivar shortlisted: configurations no other beat beyond the noise at ``samples`` turns, re-evaluated
        at ``refine_samples`` turns (same seed) before the front is drawn.
    :ivar pareto: the feasible configurations no other dominates beyond the noise (re-evaluated).
    :ivar best: the recommended pick (on the front); ``reason`` is the rule that chose it, ``why`` the
        sentence with its numbers.
    :ivar errors: evaluations that raised: ``{"config", "error"}``; never scored as infeasible.
    :ivar as_written: the council file's own council placed against the front (``None`` when it is
        not a valid council).
    :ivar notes: what the search left out and why (e.g. a ``concurrency`` knob that changes no
        member).
    :ivar cost_limit: ``[search.constraints] max_cost_per_turn``, USD per turn, or ``None`` when the file sets
        none (then every configuration is within cost).
    """

    council: str
    latency_scope: str
    budget: Budget
    strategy: str
    space_size: int
    evaluated: int
    feasible: int
    skipped: int
    pareto: tuple[Candidate, ...]
    best: Candidate | None
    why: str
    errors: tuple[dict[str, Any], ...] = ()
    seed: int = 1
    samples: int = DEFAULT_TUNE_SAMPLES
    skip_reasons: dict[str, int] = field(default_factory=dict)
    shortlisted: int = 0
    refine_samples: int = 0
    reason: str = ""
    as_written: AsWritten | None = None
    notes: tuple[str, ...] = ()
    cost_limit: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``voicebudget tune --format json``."""
        return {
            "council": self.council,
            "latency_scope": self.latency_scope,
            "budget": {"total_ms": self.budget.total_ms, "percentile": self.budget.percentile},
            "strategy": self.strategy,
            "seed": self.seed,
            "samples": self.samples,
            "refine_samples": self.refine_samples,
            "space_size": self.space_size,
            "max_cost_per_turn": self.cost_limit,
            "evaluated": self.evaluated,
            "feasible": self.feasible,
            "shortlisted": self.shortlisted,
            "skipped": self.skipped,
            "skip_reasons": self.skip_reasons,
            "errors": list(self.errors),
            "pareto": [c.to_dict() for c in self.pareto],
            "best": self.best.to_dict() if self.best else None,
            "reason": self.reason,
            "why": self.why,
            "as_written": self.as_written.to_dict() if self.as_written else None,
            "notes": list(self.notes),
        }


def describe(config: Configuration) -> str:
    """A configuration in one line, e.g. ``llama-8b+qwen3-235b first_k k=1 cache=True``."""
    parts = []
    for key, value in config.items():
        shown = "+".join(map(str, value)) if isinstance(value, tuple | list) else str(value)
        parts.append(shown if key in ("members", "topology") else f"{key}={shown}")
    return " ".join(parts)


def short_config(config: Configuration) -> str:
    """A configuration in words that wrap between parts: ``2x gpt-oss-120b + qwen3-235b, vote m=2,
    cache, concurrency 1`` (repeated members counted, knobs after commas)."""
    return ", ".join(_config_parts(config))


def same_figures(c: Candidate) -> str:
    """What the configurations sharing a front row (``equivalent``) change against it, e.g.
    ``" (same figures with: vote m=1; concurrency 16)"``; empty without any."""
    if not c.equivalent:
        return ""
    lead = _config_parts(c.config)
    diffs = [" ".join(p for p in _config_parts(e) if p not in lead) or short_config(e) for e in c.equivalent]
    return f" (same figures with: {'; '.join(diffs)})"


def _config_parts(config: Configuration) -> list[str]:
    counts: dict[str, int] = {}
    for name in config["members"]:
        counts[name] = counts.get(name, 0) + 1
    members = " + ".join(f"{n}x {name}" if n > 1 else name for name, n in counts.items())
    parts = [members, str(config["topology"])]
    for key, value in config.items():
        if key in ("members", "topology"):
            continue
        if key == "cache":
            parts.append("cache" if value else "no cache")
        elif key == "aggregator":
            parts.append("aggregator" if value else "no aggregator")
        elif key in ("k", "m"):
            parts[1] += f" {key}={value}"
        else:
            parts.append(f"{key} {value}")
    return parts
