"""``topology = "all"``: wait for every member; the answer combines them all.

Latency: the slowest member (``max_i M[i]``), plus the aggregator. Quality: the combining rule over all
members (majority or log-odds weighted vote under correlated errors, or the ``gain`` curve), exact; over
an answer space, the exact plurality. Cost: every member, plus the aggregator's prompt.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from voicebudget.councils._latency import CouncilSamples
from voicebudget.councils._plurality import (
    plurality_accuracy,
    plurality_cap,
    plurality_method,
    weighted_plurality_accuracy,
)
from voicebudget.councils._quality import RHO_TINY, vote_accuracy
from voicebudget.councils._topologies._base import FloatArray, ParallelTopology, QualityResult, majority_cap_of

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from voicebudget.councils._config import Council

__all__ = ["AllTopology", "plurality_cap_of"]


class AllTopology(ParallelTopology):
    """Every member answers; the council waits for the slowest."""

    name: ClassVar[str] = "all"
    combines_by_rule: ClassVar[bool] = True

    def finish(
        self, council: Council, lat: FloatArray, seed: int
    ) -> tuple[NDArray[np.intp], NDArray[np.bool_], FloatArray]:
        return np.argmax(lat, axis=0), np.ones_like(lat, dtype=bool), np.empty(0)

    def quality(self, council: Council, draws: CouncilSamples) -> QualityResult:
        p = council.p
        best = max(p)
        if council.answers is None:
            accuracy = _accuracy(tuple(p), council.rho, council.rule, council.gain)
            return QualityResult(accuracy, "exact", 0.0, best, majority_cap_of(council))
        u, c = council.unsolved, council.concentration
        method = "exact"
        if council.rule == "gain":
            acc = float((council.gain or ())[len(p) - 1])
        else:
            score = plurality_accuracy if council.rule == "majority" else weighted_plurality_accuracy
            acc = score(p, rho=council.rho, answers=council.answers, wrong_concentration=c, unsolved=u)
            method = plurality_method(len(p), council.answers, c)
        return QualityResult(acc, method, 0.0, best, plurality_cap_of(council))

    def knobs(self, n: int, k: Sequence[int], m: Sequence[int], rules: Sequence[Any]) -> Iterator[dict[str, Any]]:
        for rule in rules if n > 1 else (None,):  # the rule matters only when several answers are combined
            yield {"rule": rule} if rule else {}


@lru_cache(maxsize=1024)
def _accuracy(p: tuple[float, ...], rho: float, rule: str, gain: tuple[float, ...] | None) -> float:
    """:func:`~voicebudget.councils.vote_accuracy`, memoised (1,024 member sets): the tuner meets each member
    set in every batch policy and cache setting, and a weighted vote is a pass over ``2^N`` outcomes."""
    return vote_accuracy(p, rho, rule, gain)


def plurality_cap_of(council: Council) -> float | None:
    """The ``majority`` rule's cap over an answer space with correlated members, else ``None``."""
    if council.rule == "majority" and council.rho >= RHO_TINY:
        return plurality_cap(float(np.mean(council.p)), council.rho, council.concentration, council.unsolved)
    return None


ALL = AllTopology()
