"""Tuning councils: search spaces, Pareto fronts, parallel evaluation (local processes, Dask)."""

from __future__ import annotations

from voicebudget.tuning._pareto import pareto_front
from voicebudget.tuning._space import CacheSpec, Constraints, MemberChoice, SearchSpace
from voicebudget.tuning._tune import Candidate, TuneResult, load_search, rest_of_turn, tune_council

__all__ = [
    "CacheSpec",
    "Candidate",
    "Constraints",
    "MemberChoice",
    "SearchSpace",
    "TuneResult",
    "load_search",
    "pareto_front",
    "rest_of_turn",
    "tune_council",
]
