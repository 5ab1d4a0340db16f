"""``topology = "router"``: a router sends each turn to one member.

Latency: the router plus the member it picks (a mixture with the routing probabilities, from each
member's ``share`` of turns and the router's accuracy). Quality: exact
(:func:`~voicebudget.councils.router_accuracy`). Cost: the router call plus the picked member's price,
weighted by the routing probabilities.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from voicebudget._algebra import stage_rng
from voicebudget.councils._latency import CouncilSamples, critical_members, pick_members
from voicebudget.councils._quality import router_accuracy, routing_probabilities
from voicebudget.councils._topologies._base import CouncilTopology, FloatArray, QualityResult

if TYPE_CHECKING:
    from voicebudget.councils._config import Council

__all__ = ["RouterTopology"]


class RouterTopology(CouncilTopology):
    """One member per turn, chosen by a router."""

    name: ClassVar[str] = "router"
    uses_router: ClassVar[bool] = True
    members_note: ClassVar[str | None] = "one of them per turn"

    def latency(self, council: Council, lat: FloatArray, seed: int) -> CouncilSamples:
        return _router(council, lat, seed)

    def quality(self, council: Council, draws: CouncilSamples) -> QualityResult:
        router = council.router
        assert router is not None
        p = council.p
        p_off = [mb.p if mb.p_off is None else mb.p_off for mb in council.members]
        share = [mb.share or 0.0 for mb in council.members]
        return QualityResult(router_accuracy(p, p_off, share, router.accuracy), "exact", 0.0, max(p))

    def cost(self, council: Council, draws: CouncilSamples) -> float:
        assert council.router is not None
        member_cost = np.asarray([mb.cost_usd() for mb in council.members])
        return float(council.router.cost_usd() + draws.stop_probabilities @ member_cost)


def _router(council: Council, lat: FloatArray, seed: int) -> CouncilSamples:
    router = council.router
    assert router is not None  # validated
    share = [mb.share or 0.0 for mb in council.members]
    probs = routing_probabilities(share, router.accuracy)
    n = lat.shape[1]
    which = np.asarray(stage_rng(seed, "router/choice").choice(lat.shape[0], size=n, p=probs / probs.sum()))
    r = router.latency.sample(stage_rng(seed, "router"), n)
    chosen = pick_members(lat, which)
    parts = {"router": r, **{mb.name: np.where(which == i, lat[i], np.nan) for i, mb in enumerate(council.members)}}
    critical = {"router": r, **critical_members(council, lat, which)}
    read = np.zeros_like(lat, dtype=bool)
    read[which, np.arange(n)] = True
    return CouncilSamples(r + chosen, parts, critical, read, stop_probabilities=probs)


ROUTER = RouterTopology()
