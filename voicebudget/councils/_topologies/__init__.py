"""Council topologies, one module each, listed once in :data:`TOPOLOGIES` (see :mod:`._base`).

Adding a topology: a :class:`~._base.CouncilTopology` subclass in its own module (what it needs, its
latency, quality, cost and tuner knobs) and its entry here.
"""

from __future__ import annotations

from collections.abc import Callable

from voicebudget._text import unknown
from voicebudget.councils._topologies._all import ALL
from voicebudget.councils._topologies._base import CouncilTopology, QualityResult
from voicebudget.councils._topologies._cascade import CASCADE
from voicebudget.councils._topologies._first_k import FIRST_K
from voicebudget.councils._topologies._router import ROUTER
from voicebudget.councils._topologies._vote import VOTE

__all__ = ["TOPOLOGIES", "CouncilTopology", "QualityResult", "get_topology", "topology_names"]

TOPOLOGIES: dict[str, CouncilTopology] = {t.name: t for t in (ALL, FIRST_K, VOTE, ROUTER, CASCADE)}
"""Topology name -> the topology, in the order docs and messages list them."""


def get_topology(name: str) -> CouncilTopology:
    """The topology called ``name``.

    :raises ValueError: an unknown name (the message lists the known ones).
    """
    try:
        return TOPOLOGIES[name]
    except (KeyError, TypeError):
        raise ValueError(unknown("topology", name, TOPOLOGIES)) from None


def topology_names(which: Callable[[CouncilTopology], bool]) -> str:
    """The topologies ``which`` holds for (``lambda t: t.uses_router``), for messages: ``'a', 'b' or 'c'``."""
    names = [repr(t.name) for t in TOPOLOGIES.values() if which(t)]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
