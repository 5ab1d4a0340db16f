"""``topology = "vote"``: members answer in parallel; the council stops when ``m`` answers agree.

Latency: the time the ``m``-th agreeing answer arrives (that member); all members when no side reaches
``m`` (the slowest), plus the aggregator. Right/wrong answers per turn (the stopping time depends on them)
follow the correlated competence model of :mod:`voicebudget.councils._quality`. Quality: exact per
finishing order, averaged over the simulated orders (Monte Carlo standard error); over an answer space or
beyond :data:`MAX_EXACT_VOTE_MEMBERS` members, the simulated answers. Cost: every member is launched.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from voicebudget.councils._latency import CouncilSamples, answer_labels, answers
from voicebudget.councils._quality import competence_nodes
from voicebudget.councils._topologies._base import (
    FloatArray,
    ParallelTopology,
    QualityResult,
    finishing_order,
    subset_mean,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from voicebudget.councils._config import Council

__all__ = ["MAX_EXACT_VOTE_MEMBERS", "VoteTopology"]


class VoteTopology(ParallelTopology):
    """Stop at ``m`` agreeing answers."""

    name: ClassVar[str] = "vote"
    needs: ClassVar[str | None] = "m"
    needs_doc: ClassVar[str] = "m, the agreeing answers to stop at"

    def finish(
        self, council: Council, lat: FloatArray, seed: int
    ) -> tuple[NDArray[np.intp], NDArray[np.bool_], FloatArray]:
        order, ranks = finishing_order(lat)
        which, correct, pos = _vote(council, lat, order, seed)
        return which, ranks <= pos[None, :], correct

    def quality(self, council: Council, draws: CouncilSamples) -> QualityResult:
        acc, se = _vote_accuracy(council, draws)
        return QualityResult(acc, "monte-carlo", se, max(council.p))

    def knobs(self, n: int, k: Sequence[int], m: Sequence[int], rules: Sequence[Any]) -> Iterator[dict[str, Any]]:
        for mm in [mm for mm in (m or ((n // 2) + 1,)) if mm <= n]:
            yield {"m": mm}


def _vote_plurality(
    council: Council, lat: FloatArray, order: NDArray[np.intp], seed: int
) -> tuple[NDArray[np.intp], FloatArray, NDArray[np.intp]]:
    """:func:`_vote` over an answer space: stop when ``m`` answers agree on any one answer; when
    none does, the plurality of all (a tie for first is a fair draw: the share of it that is right)."""
    m = council.m or 1
    n_members, n = lat.shape
    labels = np.take_along_axis(answer_labels(council, n, seed), order, axis=0)
    same = labels[:, None, :] == labels[None, :, :]  # [j, i, turn]
    upto = np.tril(np.ones((n_members, n_members), dtype=bool))[:, :, None]
    count_at = (same & upto).sum(axis=1)  # votes for position j's answer among positions <= j
    reached = count_at >= m
    decided = reached.any(axis=0)
    pos = np.where(decided, np.argmax(reached, axis=0), n_members - 1)
    which = np.take_along_axis(order, pos[None, :], axis=0)[0]
    agreed = np.take_along_axis(labels, pos[None, :], axis=0)[0]
    totals = same.sum(axis=1)  # votes for each member's answer among all
    top = totals.max(axis=0)
    right_votes = (labels == 0).sum(axis=0)
    tied_answers = (totals == top[None, :]).sum(axis=0) / np.maximum(top, 1)
    fallback = np.where((right_votes == top) & (right_votes > 0), 1.0 / tied_answers, 0.0)
    correct = np.where(decided, (agreed == 0).astype(np.float64), fallback)
    return which, correct, pos


def _vote(
    council: Council, lat: FloatArray, order: NDArray[np.intp], seed: int
) -> tuple[NDArray[np.intp], FloatArray, NDArray[np.intp]]:
    """Who completes the vote, whether the agreed answer is right (1, 0, or 0.5 on a tie), and the
    stopping position in finishing order."""
    if council.answers is not None:
        return _vote_plurality(council, lat, order, seed)
    m = council.m or 1
    n_members, n = lat.shape
    right = answers(council, n, seed)
    right_sorted = np.take_along_axis(right, order, axis=0)
    cum_right = np.cumsum(right_sorted, axis=0)
    cum_wrong = np.arange(1, n_members + 1)[:, None] - cum_right
    reached = (cum_right >= m) | (cum_wrong >= m)
    decided = reached.any(axis=0)
    pos = np.where(decided, np.argmax(reached, axis=0), n_members - 1)
    which = np.take_along_axis(order, pos[None, :], axis=0)[0]
    right_at = np.take_along_axis(cum_right, pos[None, :], axis=0)[0]
    fallback = np.where(2 * right_at > n_members, 1.0, np.where(2 * right_at == n_members, 0.5, 0.0))
    correct = np.where(decided, (right_at >= m).astype(np.float64), fallback)
    return which, correct, pos


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
    uniq, counts = np.unique(codes, return_counts=True)
    p, m = tuple(council.p), council.m or 1
    accs = np.array([_order_accuracy(p, council.rho, m, code) for code in uniq.tolist()])
    return subset_mean(accs, counts)


@lru_cache(maxsize=8192)
def _order_accuracy(p: tuple[float, ...], rho: float, m: int, code: int) -> float:
    """``vote`` accuracy given the finishing order ``code`` (``sum_j order[j] N^j``, ``order[j]`` the
    ``j``-th member to finish), exact over every pattern of right/wrong answers. Memoised (8,192 orders):
    the tuner meets the same members' orders (at most ``N!``) in every batch policy and cache setting, and
    each is a pass over ``2^N`` patterns."""
    n_members = len(p)
    order = np.array([code // n_members**j % n_members for j in range(n_members)])
    patterns, prob = _pattern_probabilities(p, rho)
    right = np.cumsum(patterns[:, order], axis=1)  # [P, N] in finishing order
    wrong = np.arange(1, n_members + 1)[None, :] - right
    reached = (right >= m) | (wrong >= m)
    decided = reached.any(axis=1)
    pos = np.where(decided, np.argmax(reached, axis=1), n_members - 1)
    right_at = right[np.arange(right.shape[0]), pos]
    fallback = np.where(2 * right_at > n_members, 1.0, np.where(2 * right_at == n_members, 0.5, 0.0))
    return float(prob @ np.where(decided, (right_at >= m).astype(np.float64), fallback))


@lru_cache(maxsize=256)
def _pattern_probabilities(p: tuple[float, ...], rho: float) -> tuple[NDArray[np.int64], FloatArray]:
    """Every pattern of right (1) / wrong answers of the members, ``int64[2^N, N]``, and its probability
    under the correlated competence model, ``float64[2^N]``. Memoised (256 member sets): a quadrature over
    192 nodes x ``2^N`` patterns, the same for every finishing order of one council; read-only."""
    n_members = len(p)
    patterns = (np.arange(2**n_members)[:, None] >> np.arange(n_members)[None, :]) & 1  # [P, N] right?
    node_w, q = competence_nodes(p, rho)
    like = np.where(patterns[None, :, :] == 1, q[:, None, :], 1.0 - q[:, None, :]).prod(axis=2)  # [J, P]
    prob = node_w @ like  # [P]
    patterns.setflags(write=False)
    prob.setflags(write=False)
    return patterns, prob


VOTE = VoteTopology()
