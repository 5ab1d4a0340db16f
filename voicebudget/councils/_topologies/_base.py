"""The interface of a council topology: what it needs, its latency, quality and cost.

A topology is one object (a :class:`CouncilTopology` subclass instance in its own module, listed once in
:data:`voicebudget.councils._topologies.TOPOLOGIES`). Validation (:class:`~voicebudget.councils.Council`),
the latency (:func:`~voicebudget.councils.sample_council`), quality and cost
(:func:`~voicebudget.councils.evaluate_council`), the tuner's knobs and the report read what it declares;
nothing compares topology names.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from voicebudget._algebra import stage_rng
from voicebudget.councils._latency import CouncilSamples, critical_members, pick_members
from voicebudget.councils._quality import RHO_TINY, majority_cap

if TYPE_CHECKING:
    from voicebudget.councils._config import Council

__all__ = ["CouncilTopology", "ParallelTopology", "QualityResult"]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class QualityResult:
    """How often the council's answer is right.

    :ivar accuracy: probability the combined answer is right.
    :ivar method: ``exact`` (closed form or quadrature), ``edgeworth`` (a plurality of more than 200
        members over 5 or more answers: within 3e-3 of exact, 2.5e-4 on the tested grid; see
        :mod:`voicebudget.councils._plurality_large`) or ``monte-carlo`` (``vote``: the stopping
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


class CouncilTopology:
    """One way of combining a council's members (docs/design.md section 5).

    :cvar name: the ``topology`` value that chooses it.
    :cvar needs: the field it needs (``"k"``, ``"m"``), validated in ``1..N``; ``needs_doc`` says what it is.
    :cvar uses_router: it needs a ``router`` table and a ``share`` per member (others refuse a router).
    :cvar uses_scorer: it needs a ``scorer`` table (others refuse one).
    :cvar reads_answers: it combines several members' answers, so an aggregator can read them and an
        answer space (``answers``) applies.
    :cvar combines_by_rule: the combining ``rule`` (majority, weighted, gain) applies. It changes the quality
        alone, never the turns' latency (the tuner simulates the councils that differ only in it once).
    :cvar members_note: how the report draws the members: ``"in parallel"``, ``"one of them per turn"``,
        or ``None`` (one after another).
    """

    name: ClassVar[str]
    needs: ClassVar[str | None] = None
    needs_doc: ClassVar[str] = ""
    uses_router: ClassVar[bool] = False
    uses_scorer: ClassVar[bool] = False
    reads_answers: ClassVar[bool] = False
    combines_by_rule: ClassVar[bool] = False
    members_note: ClassVar[str | None] = "in parallel"

    def latency(self, council: Council, lat: FloatArray, seed: int) -> CouncilSamples:
        """Per-turn latency from the members' samples ``lat: float64[N, n]`` ms (stream names under ``seed``)."""
        raise NotImplementedError  # pragma: no cover - every topology defines it

    def quality(self, council: Council, draws: CouncilSamples) -> QualityResult:
        """How often the council's answer is right."""
        raise NotImplementedError  # pragma: no cover

    def cost(self, council: Council, draws: CouncilSamples) -> float:
        """Expected USD per turn: the calls it launches (every launched call billed in full)."""
        raise NotImplementedError  # pragma: no cover

    def applies(self, knob: str) -> bool:
        """Whether a tuner knob (``k``, ``m``, ``rule``, ``aggregator``; any other) means anything here."""
        if knob in ("k", "m"):
            return self.needs == knob
        if knob == "rule":
            return self.combines_by_rule
        if knob == "aggregator":
            return self.reads_answers
        return True

    def knobs(self, n: int, k: Sequence[int], m: Sequence[int], rules: Sequence[Any]) -> Iterator[dict[str, Any]]:
        """The tuner's settings of this topology for ``n`` members (``k``, ``m``, ``rules``: the space's
        values, empty when not a knob): one empty setting by default."""
        yield {}


class ParallelTopology(CouncilTopology):
    """Members run in parallel; the council answers when :meth:`finish` says, and an optional aggregator
    reads the answers that are in (its prefill grows with their output tokens)."""

    reads_answers: ClassVar[bool] = True

    def finish(
        self, council: Council, lat: FloatArray, seed: int
    ) -> tuple[NDArray[np.intp], NDArray[np.bool_], FloatArray]:
        """Per turn: the member whose answer completes the council, which members' answers are in
        (``bool[N, n]``), and whether the answer is right when that depends on the order (else empty)."""
        raise NotImplementedError  # pragma: no cover

    def latency(self, council: Council, lat: FloatArray, seed: int) -> CouncilSamples:
        which, read, correct = self.finish(council, lat, seed)
        total = pick_members(lat, which)
        parts = {mb.name: lat[i] for i, mb in enumerate(council.members)}
        out = CouncilSamples(total, parts, critical_members(council, lat, which), read, correct)
        if council.aggregator is not None:
            _add_aggregator(council, out, seed)
        return out

    def cost(self, council: Council, draws: CouncilSamples) -> float:
        total = float(np.asarray([mb.cost_usd() for mb in council.members]).sum())
        if council.aggregator is not None:
            tokens = np.asarray([mb.output_tokens for mb in council.members], dtype=np.float64) @ draws.read
            total += council.aggregator.cost_usd(float(tokens.mean()))
        return total


def finishing_order(lat: FloatArray) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Members in finishing order per turn (``order[j]``: the ``j``-th to finish) and each member's rank."""
    order = np.argsort(lat, axis=0, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(lat.shape[0])[:, None], axis=0)
    return order, ranks


def majority_cap_of(council: Council) -> float | None:
    """The ``majority`` rule's cap with correlated members (``rho > 0``), else ``None``."""
    if council.rule == "majority" and council.rho >= RHO_TINY:
        return majority_cap(float(np.mean(council.p)), council.rho)
    return None


def subset_mean(values: FloatArray, counts: NDArray[np.intp]) -> tuple[float, float]:
    """The mean of per-subset (or per-order) accuracies weighted by how often each occurred, and its Monte
    Carlo standard error (their spread over the turns, ``/ sqrt(n)``)."""
    n = float(counts.sum())
    acc = float(counts @ values / n)
    se = math.sqrt(max(float(counts @ (values - acc) ** 2) / n, 0.0) / n) if values.size > 1 else 0.0
    return acc, se if se > 1e-12 else 0.0  # float noise of equal accuracies


def _add_aggregator(council: Council, out: CouncilSamples, seed: int) -> None:
    agg = council.aggregator
    assert agg is not None
    n = out.total.size
    rng = stage_rng(seed, "aggregator")
    tokens = np.asarray([mb.output_tokens for mb in council.members], dtype=np.float64) @ out.read
    x = agg.ttft.sample(rng, n) + agg.prefill_ms_per_token * tokens
    if agg.tpot is not None and agg.first_phrase_tokens:
        x += agg.first_phrase_tokens * agg.tpot.sample(rng, n)
    out.parts["aggregator"] = x
    out.critical["aggregator"] = x
    out.total = out.total + x
