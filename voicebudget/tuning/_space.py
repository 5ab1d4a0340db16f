"""The search space of a council: knobs with their values, constraints, and its enumeration.

Declared in a council file under ``[search]``::

    [search]
    members = { n = [1, 2, 3], repeat = false }   # councils of n members drawn from the pool
    topology = ["all", "first_k", "vote"]
    k = [1, 2]                                    # first_k only; skipped where k > n
    m = [2]                                       # vote only; skipped where m > n
    rule = ["majority", "weighted"]
    aggregator = [false, true]                    # with the council's (or [search.aggregator]) aggregator
    cache = [false, true]                         # behind the reply cache in [search.cache]
    concurrency = [1, 8, 32]                      # batch policy of every gpu/wafer member stage
    [[search.pool]]                               # candidates beyond the council's own members
    name = "..."; p = 0.8; stage = { ... }
    [search.constraints]
    max_members = 4
    max_cost_per_turn = 0.002                     # USD

A knob left out keeps the council's own value. The pool is the council's members plus
``search.pool``. Knobs that do not apply to a topology (``k`` outside ``first_k``, ``m`` outside
``vote``, ``rule`` for ``router``/``cascade``) are not multiplied in, so no configuration is
evaluated twice.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from voicebudget._budget import MAX_COUNT, MAX_USD
from voicebudget._model import DataModel
from voicebudget.councils._config import Aggregator, Member, Topology
from voicebudget.councils._speculation import ReplyCache
from voicebudget.councils._topologies import get_topology

__all__ = ["CacheSpec", "Configuration", "Constraints", "MemberChoice", "SearchSpace"]

Configuration = dict[str, Any]
"""One point of the space: knob name -> value (``members`` is a tuple of pool names)."""


class _Model(DataModel):
    """The package's input-model base (its configuration is :data:`voicebudget._model.MODEL_CONFIG`)."""


MAX_COUNCIL_SIZE = 1_000_000
"""Largest council size a search may try (the tuner's own bounds on the space come first:
:data:`voicebudget.tuning._tune.MAX_MEMBER_SLOTS`)."""


class MemberChoice(_Model):
    """Which members a configuration has: every size-``n`` selection from the pool.

    :param n: council sizes to try (each >= 1).
    :param repeat: allow the same pool member more than once (independent samples of one model,
        e.g. self-consistency voting); combinations with repetition when true.
    """

    n: tuple[int, ...] = Field(min_length=1)
    repeat: bool = False

    @model_validator(mode="after")
    def _positive(self) -> MemberChoice:
        if any(x < 1 or x > MAX_COUNCIL_SIZE for x in self.n):  # itertools refuses n past 2^63 (OverflowError)
            raise ValueError(f"council sizes must be between 1 and {MAX_COUNCIL_SIZE:,}, got {list(self.n)}")
        return self


class Constraints(_Model):
    """Hard limits: configurations beyond them are not evaluated (members) or not feasible (cost)."""

    max_members: int | None = Field(default=None, ge=1)
    max_cost_per_turn: float | None = Field(default=None, ge=0, description="USD per turn.")


class CacheSpec(_Model):
    """The reply cache the ``cache`` knob puts in front of the council (see :class:`ReplyCache`;
    ``miss`` is the council itself, its error rate and price come from the council's evaluation)."""

    hit_rate: float = Field(ge=0, le=1)
    false_hit_rate: float = Field(default=0.0, ge=0, le=1)
    hit: Any
    candidates_per_turn: int = Field(default=0, ge=0, le=MAX_COUNT)
    tts_usd_per_candidate: float = Field(default=0.0, ge=0, le=MAX_USD)
    lookup_usd: float = Field(default=0.0, ge=0, le=MAX_USD)

    @model_validator(mode="after")
    def _hit_is_a_stage(self) -> CacheSpec:
        ReplyCache.model_validate(
            {"hit_rate": self.hit_rate, "hit": self.hit, "miss": {"kind": "fixed", "value_ms": 0}}
        )
        return self


class SearchSpace(_Model):
    """The ``[search]`` table of a council file (all knobs optional)."""

    members: MemberChoice | None = None
    pool: tuple[Member, ...] = ()
    topology: tuple[Topology, ...] = ()
    k: tuple[int, ...] = ()
    m: tuple[int, ...] = ()
    rule: tuple[Literal["majority", "weighted", "gain"], ...] = ()
    aggregator: tuple[bool, ...] = ()
    cache: tuple[bool, ...] = ()
    concurrency: tuple[int, ...] = ()
    constraints: Constraints = Field(default_factory=Constraints)
    aggregator_spec: Aggregator | None = Field(default=None, alias="aggregator_config")
    cache_spec: CacheSpec | None = Field(default=None, alias="cache_config")

    model_config = ConfigDict(populate_by_name=True)  # merged with DataModel's

    @field_validator("topology")
    @classmethod
    def _known_topologies(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for name in v:
            get_topology(name)
        return v

    @model_validator(mode="after")
    def _needs(self) -> SearchSpace:
        if True in self.cache and self.cache_spec is None:
            raise ValueError("cache = [.., true] needs a [search.cache_config] table (hit_rate, hit, ...)")
        if any(c < 1 for c in self.concurrency):
            raise ValueError(f"concurrency values must be >= 1, got {list(self.concurrency)}")
        if any(x < 1 for x in (*self.k, *self.m)):
            raise ValueError("k and m values must be >= 1")
        return self

    def is_empty(self) -> bool:
        """No knob declared."""
        knobs = (self.topology, self.k, self.m, self.rule, self.aggregator, self.cache, self.concurrency)
        return self.members is None and not any(knobs)

    def configurations(
        self, pool: list[str], base_topology: str, batch_sensitive: frozenset[str] | None = None
    ) -> Iterator[Configuration]:
        """Every configuration, in a fixed order (the same space gives the same sequence).

        :param pool: member names available (the council's members, then ``search.pool``).
        :param base_topology: the council's topology, used when ``topology`` is not a knob.
        :param batch_sensitive: members whose latency or price depends on the batch policy; a member
            set without any gets no ``concurrency`` knob (it would only repeat the same council).
            ``None``: every member is.
        """
        max_members = self.constraints.max_members
        for members in self._member_sets(pool):
            if max_members is not None and len(members) > max_members:
                continue
            sensitive = batch_sensitive is None or not batch_sensitive.isdisjoint(members)
            concurrency = self.concurrency if sensitive and self.concurrency else (None,)
            for topology in self.topology or (base_topology,):
                topo = get_topology(topology)
                rules: tuple[Any, ...] = self.rule if topo.combines_by_rule and self.rule else (None,)
                for extra in topo.knobs(len(members), self.k, self.m, rules):
                    for agg, cache, conc in itertools.product(
                        self.aggregator or (None,), self.cache or (None,), concurrency
                    ):
                        if agg and not topo.reads_answers:
                            continue  # an aggregator reads several answers only
                        config: Configuration = {"members": members, "topology": topology, **extra}
                        for key, value in (("aggregator", agg), ("cache", cache), ("concurrency", conc)):
                            if value is not None:
                                config[key] = value
                        yield config

    def why_empty(self, pool: list[str]) -> str:
        """Why :meth:`configurations` yields none, naming the bound that emptied the space (a council size
        above ``max_members``, or more members than the pool without ``repeat``; else ``k``/``m`` values above
        every council size)."""
        sizes = self.members.n if self.members is not None else (len(pool),)
        repeat = self.members is not None and self.members.repeat
        cap = self.constraints.max_members
        over_cap = [n for n in sizes if cap is not None and n > cap]
        over_pool = [n for n in sizes if not repeat and n > len(pool) and n not in over_cap]
        if len(over_cap) + len(over_pool) < len(sizes):
            return (
                "no topology takes the k or m values given at the council sizes searched "
                f"({_listed(sorted(set(sizes)))}): each needs k or m <= the council's size"
            )
        parts = []
        if over_cap:
            parts.append(f"{_listed(over_cap)} {_is(over_cap)} above search.constraints.max_members ({cap})")
        if over_pool:
            parts.append(
                f"{_listed(over_pool)} {_is(over_pool)} more than the {len(pool)} members of the pool (the council's "
                "and search.pool's), and repeat is false"
            )
        return f"every council size of search.members.n is ruled out: {'; '.join(parts)}"

    def _member_sets(self, pool: list[str]) -> Iterator[tuple[str, ...]]:
        if self.members is None:
            yield tuple(pool)
            return
        pick = itertools.combinations_with_replacement if self.members.repeat else itertools.combinations
        for n in self.members.n:
            yield from pick(pool, n)


def _listed(values: list[int]) -> str:
    return ", ".join(map(str, values))


def _is(values: list[int]) -> str:
    return "is" if len(values) == 1 else "are"
