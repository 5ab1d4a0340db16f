"""``topology = "cascade"``: members in order; a scorer accepts an answer or escalates to the next member.

Latency: member 1 [+ scorer + member 2 [+ ...]] up to where the scorer accepts (where it stops follows
the exact stopping probabilities of :func:`~voicebudget.councils.cascade_accuracy`). Quality: exact.
Cost: each member by the probability the cascade reaches it, plus a scorer call per member scored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from voicebudget._algebra import stage_rng
from voicebudget.councils._latency import CouncilSamples
from voicebudget.councils._quality import cascade_accuracy
from voicebudget.councils._topologies._base import CouncilTopology, FloatArray, QualityResult

if TYPE_CHECKING:
    from voicebudget.councils._config import Council

__all__ = ["CascadeTopology"]


class CascadeTopology(CouncilTopology):
    """Cheap first; escalate while the scorer rejects."""

    name: ClassVar[str] = "cascade"
    uses_scorer: ClassVar[bool] = True
    members_note: ClassVar[str | None] = None

    def latency(self, council: Council, lat: FloatArray, seed: int) -> CouncilSamples:
        return _cascade(council, lat, seed)

    def quality(self, council: Council, draws: CouncilSamples) -> QualityResult:
        scorer = council.scorer
        assert scorer is not None
        acc, _ = cascade_accuracy(council.p, council.rho, scorer.accept_if_correct, scorer.accept_if_wrong)
        return QualityResult(acc, "exact", 0.0, max(council.p))

    def cost(self, council: Council, draws: CouncilSamples) -> float:
        assert council.scorer is not None
        member_cost = np.asarray([mb.cost_usd() for mb in council.members])
        reach = np.cumsum(draws.stop_probabilities[::-1])[::-1]
        scorer_calls = float(reach[:-1].sum())
        return float(reach @ member_cost + scorer_calls * council.scorer.cost_usd())


def _cascade(council: Council, lat: FloatArray, seed: int) -> CouncilSamples:
    scorer = council.scorer
    assert scorer is not None  # validated
    n_members, n = lat.shape
    _, stop = cascade_accuracy(council.p, council.rho, scorer.accept_if_correct, scorer.accept_if_wrong)
    last = np.asarray(stage_rng(seed, "cascade/choice").choice(n_members, size=n, p=stop / stop.sum()))
    ran = np.arange(n_members)[:, None] <= last[None, :]
    scored = ran & (np.arange(n_members)[:, None] < n_members - 1)
    score = scorer.latency.sample(stage_rng(seed, "scorer"), n_members * n).reshape(n_members, n)
    member_time = np.where(ran, lat, 0.0)
    score_time = np.where(scored, score, 0.0).sum(axis=0)
    total = member_time.sum(axis=0) + score_time
    parts = {mb.name: np.where(ran[i], lat[i], np.nan) for i, mb in enumerate(council.members)}
    parts["scorer"] = np.where(scored.any(axis=0), score_time, np.nan)
    critical = {mb.name: member_time[i] for i, mb in enumerate(council.members)}
    critical["scorer"] = score_time
    return CouncilSamples(total, parts, critical, ran, stop_probabilities=stop)


CASCADE = CascadeTopology()
