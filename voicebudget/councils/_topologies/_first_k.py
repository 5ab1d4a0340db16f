"""``topology = "first_k"``: the first ``k`` members to finish answer; the rest are not waited for.

Latency: the ``k``-th order statistic of the members (the ``k``-th to finish), plus the aggregator.
Quality: exact for each subset of first finishers (members' answers do not depend on their latencies),
averaged over the subsets the simulated turns produced (a Monte Carlo standard error from their spread);
over an answer space, the exact plurality of each subset. Cost: every member is launched.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from voicebudget.councils._latency import CouncilSamples
from voicebudget.councils._plurality import (
    check_answer_space,
    plurality_from_nodes,
    plurality_log_odds_weights,
    plurality_method,
    weighted_plurality_from_nodes,
)
from voicebudget.councils._quality import RHO_TINY, competence_nodes, conditional_accuracy, vote_accuracy
from voicebudget.councils._topologies._all import plurality_cap_of
from voicebudget.councils._topologies._base import (
    FloatArray,
    ParallelTopology,
    QualityResult,
    finishing_order,
    majority_cap_of,
    subset_mean,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from voicebudget.councils._config import Council

__all__ = ["FirstKTopology"]


class FirstKTopology(ParallelTopology):
    """The first ``k`` answers in are combined."""

    name: ClassVar[str] = "first_k"
    needs: ClassVar[str | None] = "k"
    needs_doc: ClassVar[str] = "k"
    combines_by_rule: ClassVar[bool] = True

    def finish(
        self, council: Council, lat: FloatArray, seed: int
    ) -> tuple[NDArray[np.intp], NDArray[np.bool_], FloatArray]:
        order, ranks = finishing_order(lat)
        k = council.k or 1
        return order[k - 1], ranks < k, np.empty(0)

    def quality(self, council: Council, draws: CouncilSamples) -> QualityResult:
        best = max(council.p)
        subsets, counts = _subsets(draws)
        if council.answers is not None:
            method = plurality_method(council.k or 1, council.answers, council.concentration)
            return QualityResult(_plurality(council, subsets, counts), method, 0.0, best, plurality_cap_of(council))
        p, rho, rule, gain = tuple(council.p), council.rho, council.rule, council.gain
        accs = np.array([_subset_accuracy(p, rho, rule, gain, tuple(np.flatnonzero(r).tolist())) for r in subsets])
        acc, se = subset_mean(accs, counts)
        return QualityResult(acc, "exact", se, best, majority_cap_of(council))

    def knobs(self, n: int, k: Sequence[int], m: Sequence[int], rules: Sequence[Any]) -> Iterator[dict[str, Any]]:
        for kk in [kk for kk in (k or (1,)) if kk <= n]:
            for rule in rules if kk > 1 else (None,):  # one answer: nothing to combine
                yield {"k": kk} | ({"rule": rule} if rule else {})


def _subsets(draws: CouncilSamples) -> tuple[NDArray[np.bool_], NDArray[np.intp]]:
    """The subsets of members whose answers were in (``bool[S, members]``, one row per subset, in
    lexicographic order) and how many turns each occurred in.

    Up to 62 members a turn's subset is one integer (member 0 the highest bit, so the order of the codes
    is that of the rows): counting those is ~10x faster than ``np.unique(axis=0)``, which sorts the rows
    as byte strings; up to 16 members ``np.bincount`` counts them without sorting. Past 62 members the
    codes would overflow, and the rows are sorted as they are."""
    read = draws.read  # bool[members, turns]
    n = read.shape[0]
    if n > 62:
        subsets, counts = np.unique(read.T, axis=0, return_counts=True)
        return subsets, counts
    bits = np.left_shift(np.int64(1), np.arange(n - 1, -1, -1, dtype=np.int64))
    turn_codes = bits @ read.astype(np.int64)
    if n <= 16:  # count the 2^n codes directly: no sort
        tally = np.bincount(turn_codes, minlength=1 << n)
        codes = np.flatnonzero(tally)
        counts = tally[codes]
    else:
        codes, counts = np.unique(turn_codes, return_counts=True)
    subsets = (codes[:, None] & bits[None, :]) != 0
    return subsets, counts


@lru_cache(maxsize=4096)
def _subset_accuracy(
    p: tuple[float, ...], rho: float, rule: str, gain: tuple[float, ...] | None, idx: tuple[int, ...]
) -> float:
    """Accuracy of the members ``idx`` of a council whose members' correctness is ``p`` (the competence
    nodes are the whole council's). Memoised (4,096 subsets): the tuner meets the same members' subsets in
    every batch policy, cache setting and ``k``, ~5 per configuration, each a quadrature over 192 nodes."""
    if rule == "gain":
        return float((gain or ())[len(idx) - 1])
    if rho < RHO_TINY or np.ptp(p) == 0:
        return vote_accuracy([p[i] for i in idx], rho, rule)
    node_w, q = competence_nodes(p, rho)
    return conditional_accuracy(node_w, q[:, list(idx)], rule)


def _plurality(council: Council, subsets: NDArray[np.bool_], counts: NDArray[np.intp]) -> float:
    """Exact plurality (weighted: log-odds weights floored at 0) of each subset of first finishers,
    weighted by its frequency."""
    assert council.answers is not None
    p, u, c = council.p, council.unsolved, council.concentration
    solvable = np.asarray(p) / (1.0 - u)
    node_w, q = competence_nodes(solvable, council.rho)
    spread = check_answer_space(council.answers, c, u)
    acc = 0.0
    for row, count in zip(subsets, counts, strict=True):
        idx = np.flatnonzero(row).tolist()
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
    return float(acc / counts.sum())


FIRST_K = FirstKTopology()
