"""Evaluating one configuration of a search space: the council it describes, judged on latency at the
budget's percentile (with the scenario's rest of the turn and the reply cache), quality, cost and
expected user time, with Monte Carlo standard errors. Picklable: worker processes and Dask run it."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pydantic import ValidationError

from voicebudget._algebra import evaluate
from voicebudget._budget import Budget
from voicebudget._report import Report, StageReport
from voicebudget.councils._config import Council, Member
from voicebudget.councils._evaluate import CouncilResult, evaluate_checked, simulate_council
from voicebudget.councils._latency import CouncilSamples
from voicebudget.councils._speculation import ReplyCache
from voicebudget.councils._topologies import get_topology
from voicebudget.tuning._members import name_members, normalise_shares
from voicebudget.tuning._noise import NOISE_Z, mean_with_se, quantile_with_se, tie_tolerance
from voicebudget.tuning._result import Candidate, describe
from voicebudget.tuning._space import Configuration, SearchSpace

__all__ = ["TAIL_Z", "Evaluator", "cache_draws", "tail_ties"]

FloatArray = NDArray[np.float64]

MEMO_TURNS = 1 << 20
"""Simulated turns an :class:`Evaluator` keeps in each of its memos: of councils judged, counting each one's
turns (it keeps its total latency per turn: 8 MB in all; 524 councils at 2,000 turns, none past a million);
of councils' turns simulated, counting each member's turns (its latency, critical-path part and answer read
per turn: ~17 MB in all; 104 councils of 5 members at 2,000 turns)."""


@dataclass(frozen=True)
class Evaluator:
    """Evaluates one configuration; picklable, so worker processes and Dask run the same code.

    :ivar members: validated pool members per ``(name, concurrency)`` (``None``: as declared), with
        prices rescaled for the batch policy; councils are built from them without re-validation.
    :ivar cache_hit_ms: ``float64[n]`` hit latency, and ``cache_hit``: ``bool[n]`` which turns hit,
        drawn once (common to every configuration with the cache on).
    """

    base: dict[str, Any]
    members: dict[tuple[str, int | None], Member]
    space: SearchSpace
    budget: Budget
    samples: int
    seed: int
    context: dict[str, Any]
    rest_ms: FloatArray | None
    cache_hit_ms: FloatArray | None = None
    cache_hit: NDArray[np.bool_] | None = None
    _councils: OrderedDict[tuple[Any, ...], tuple[Council, CouncilResult] | str] = field(
        default_factory=OrderedDict, init=False, repr=False, compare=False
    )
    """The councils judged last, by their configuration less its ``cache`` knob (:meth:`council_for`)."""
    _simulations: OrderedDict[tuple[Any, ...], tuple[CouncilSamples, Report]] = field(
        default_factory=OrderedDict, init=False, repr=False, compare=False
    )
    """The councils' turns simulated last, by their configuration less its ``cache`` and ``rule`` knobs
    (:meth:`evaluate`)."""

    def __call__(self, item: tuple[int, Configuration]) -> Candidate:
        index, config = item
        found = self.council_for(config)
        if isinstance(found, str):
            return Candidate(index, config, skipped=found)
        return self.judge(index, config, *found)

    def council_for(self, config: Configuration) -> tuple[Council, CouncilResult] | str:
        """The council a configuration describes and its evaluation, or why it is not a valid council.

        Memoised per evaluator by the configuration less its ``cache`` knob: the reply cache sits in front of
        the council and leaves it as it is, so a configuration with the cache and the one without share one
        validation and one simulation (half the evaluations of a space with ``cache = [false, true]``). At
        most :data:`MEMO_TURNS` simulated turns are held, the oldest entries dropped first.
        """
        key = _knobs_but(config, "cache")
        found = self._councils.get(key)
        if found is None:
            try:
                council = Council.model_validate(self.council_doc(config), context=self.context)
            except ValidationError as exc:
                err = exc.errors()[0]
                found = f"{'.'.join(map(str, err['loc']))}: {err['msg']}"
            else:
                found = council, self.evaluate(council, config)
            _remember(self._councils, key, found, MEMO_TURNS // self.samples)
        return found

    @staticmethod
    def memo_order(configs: Sequence[Configuration]) -> list[int]:
        """Positions of ``configs`` in an order that puts the configurations sharing a simulation (the same but
        for their ``cache`` and ``rule`` knobs) side by side, in the order each group first appears."""
        groups: dict[tuple[tuple[str, Any], ...], list[int]] = {}
        for i, config in enumerate(configs):
            groups.setdefault(_knobs_but(config, "cache", "rule"), []).append(i)
        return [i for group in groups.values() for i in group]

    def council_doc(self, config: Configuration) -> dict[str, Any]:
        doc = {key: v for key, v in self.base.items() if key not in ("k", "m")}
        doc["topology"] = config["topology"]
        topology = get_topology(config["topology"])
        doc.update({key: config[key] for key in ("k", "m", "rule") if key in config})
        if not topology.uses_router:
            doc.pop("router", None)
        if not topology.uses_scorer:
            doc.pop("scorer", None)
        conc = config.get("concurrency")
        members = name_members([self.members[(name, conc)] for name in config["members"]])
        doc["members"] = normalise_shares(members) if topology.uses_router else members
        if "aggregator" in config:
            spec = self.space.aggregator_spec
            agg = spec.model_dump() if spec is not None else self.base.get("aggregator")
            doc["aggregator"] = agg if config["aggregator"] else None
        if not topology.reads_answers:
            doc.pop("aggregator", None)
        return doc

    def evaluate(self, council: Council, config: Configuration | None = None) -> CouncilResult:
        """A council at this evaluator's turns and seed (work and memory were checked once for the whole run,
        by tune_council); its report attributes the tail, without each member's percentiles.

        :param config: the configuration the council is: its turns are then memoised by the configuration less
            its ``cache`` and ``rule`` knobs (the combining rule changes the quality alone: see
            :attr:`~voicebudget.councils._topologies.CouncilTopology.combines_by_rule`), so the councils that
            differ only in their rule share one simulation.
        """
        simulated = None
        if config is not None:
            key = _knobs_but(config, "cache", "rule")
            simulated = self._simulations.get(key)
            if simulated is None:
                simulated = simulate_council(council, council.budget, self.samples, self.seed, stage_stats=False)
                _remember(self._simulations, key, simulated, MEMO_TURNS // (self.samples * len(council.members)))
        return evaluate_checked(
            council, council.budget, self.samples, self.seed, stage_stats=False, simulated=simulated
        )

    def judge(
        self, index: int, config: Configuration, council: Council, result: CouncilResult | None = None
    ) -> Candidate:
        """The candidate of ``config``, whose council is ``council``; ``result``: its evaluation, if made."""
        res = result if result is not None else self.evaluate(council)
        latency = res.report.total_samples_ms
        error, cost, driver = res.quality.error_rate, res.cost_per_turn_usd, res.tail_driver
        if config.get("cache"):
            latency, error, cost = self.behind_cache(latency, error, cost)
        error_se = res.quality.standard_error
        if config.get("cache"):
            assert self.space.cache_spec is not None
            error_se *= 1.0 - self.space.cache_spec.hit_rate
        total = latency + self.rest_ms if self.rest_ms is not None else latency
        at_pct, at_pct_se = quantile_with_se(total, self.budget.percentile)
        mean, mean_se = mean_with_se(total)
        ut = council.user_time
        other = 0.0 if self.rest_ms is not None else ut.other_latency_ms
        span = ut.user_turn_ms + mean + other + ut.agent_turn_ms
        x = ut.exchanges(error)
        eut = x * span
        _refuse_nan(
            config, p95_ms=at_pct, mean_ms=mean, quality=1.0 - error, cost_per_turn=cost, expected_user_time_ms=eut
        )
        eut_se = math.hypot(x * mean_se, span * _slope(ut.exchanges, error) * error_se)
        max_cost = self.space.constraints.max_cost_per_turn
        return Candidate(
            index,
            config,
            at_pct,
            mean,
            1.0 - error,
            cost,
            eut,
            within_budget=at_pct <= self.budget.total_ms,
            within_cost=max_cost is None or cost <= max_cost,
            tail_driver=driver,
            tail_ties=tail_ties(res.report.stages),
            samples=self.samples,
            p95_se_ms=at_pct_se,
            mean_se_ms=mean_se,
            quality_se=error_se,
            expected_user_time_se_ms=eut_se if math.isfinite(eut) else 0.0,
        )

    def behind_cache(self, miss_ms: FloatArray, miss_error: float, miss_usd: float) -> tuple[FloatArray, float, float]:
        """The council behind the reply cache: per turn the hit or the council's latency, and the
        error rate and price of :func:`~voicebudget.councils.evaluate_cache` (``h e_f + (1-h) e_miss``;
        lookup + candidates x TTS + ``(1-h)`` x the council's price)."""
        spec = self.space.cache_spec
        assert spec is not None
        assert self.cache_hit is not None
        assert self.cache_hit_ms is not None
        h = spec.hit_rate
        latency = np.where(self.cache_hit, self.cache_hit_ms, miss_ms)
        error = h * spec.false_hit_rate + (1 - h) * miss_error
        cost = spec.lookup_usd + spec.candidates_per_turn * spec.tts_usd_per_candidate + (1 - h) * miss_usd
        return latency, error, cost


def _knobs_but(config: Configuration, *left_out: str) -> tuple[tuple[str, Any], ...]:
    """A configuration's knobs and values but ``left_out``, in name order: a memo key."""
    return tuple(sorted((k, v) for k, v in config.items() if k not in left_out))


def _remember(memo: OrderedDict[Any, Any], key: Any, value: Any, keep: int) -> None:
    """Store ``value`` under ``key``, keeping at most ``keep`` entries (the oldest dropped first; none at 0).
    An OrderedDict: a plain dict's first key is found past the slots of the keys deleted before it."""
    if keep < 1:
        return
    while len(memo) >= keep:
        memo.popitem(last=False)
    memo[key] = value


TAIL_Z = NOISE_Z * math.sqrt(2.0)
"""Tail contributions tie within ``TAIL_Z (se_a + se_b)``. Members on one critical path share its tail
turns, so their contributions are negatively correlated (the turn one carries, the others carry
less): at the worst case, correlation -1, the difference's standard error is ``se_a + se_b`` and a
true tie leaves this band with probability ``P(|N(0,1)| > 2 sqrt(2))`` = 0.5%, as the front's ties
(:func:`~voicebudget.tuning._noise.tie_tolerance`). With ``NOISE_Z`` alone, copies of one model
split in ~5% of seeds per pair."""


def tail_ties(stages: Sequence[StageReport]) -> tuple[str, ...]:
    """The stages that share the lead of the tail within the noise, sorted by name; empty when one
    leads beyond it.

    From the largest mean contribution over the tail turns down, a stage joins while it is within
    ``TAIL_Z (se_a + se_b)`` of the last one that joined (so three copies of one model at 156, 129
    and 120 ms, each within the noise of the next, tie as a group rather than split at the ends).
    """
    ranked = sorted(stages, key=lambda s: -s.tail_ms)
    if len(ranked) < 2:
        return ()
    tail = np.array([s.tail_ms for s in ranked])
    se = np.array([s.tail_se_ms for s in ranked])
    # a stage joins while within the noise of the one before it (the last that joined): neighbours in rank
    within = ~(tail[:-1] - tail[1:] > tie_tolerance(se[:-1], se[1:], tail[:-1], tail[1:], TAIL_Z))
    joined = 1 + int(np.argmin(within)) if not within.all() else len(ranked)
    return tuple(sorted(s.name for s in ranked[:joined])) if joined > 1 else ()


def _refuse_nan(config: Configuration, **objectives: float) -> None:
    """A NaN objective is a modelling failure, never a value to rank: raise so the tuner reports the
    configuration as an error (``TuneResult.errors``; the CLI exits 2) instead of sorting it."""
    bad = sorted(name for name, value in objectives.items() if math.isnan(value))
    if bad:
        raise ValueError(f"{describe(config)}: NaN {', '.join(bad)} (a model failure; please report it)")


def _slope(f: Callable[[float], float], e: float, h: float = 1e-6) -> float:
    """``f'(e)`` by central difference, one-sided at the edges of [0, 1); ``inf`` where ``f`` is."""
    lo, hi = max(e - h, 0.0), min(e + h, 1.0 - 1e-12)
    if hi <= lo:
        return 0.0
    with np.errstate(invalid="ignore"):
        d = (f(hi) - f(lo)) / (hi - lo)
    return d if math.isfinite(d) else 0.0


def cache_draws(space: SearchSpace, samples: int, seed: int) -> tuple[FloatArray | None, NDArray[np.bool_] | None]:
    """Hit latency and hit/miss per turn, drawn as :class:`~voicebudget.councils.ReplyCache` draws them
    (stream ``cache_hit``, and the ``choice`` stream of ``reply_cache``)."""
    spec = space.cache_spec
    if spec is None or True not in space.cache:
        return None, None
    cache = ReplyCache.model_validate({**spec.model_dump(), "miss": {"kind": "fixed", "value_ms": 0.0}})
    ev = evaluate(cache.tree(), samples, seed, name="reply_cache")
    hit_ms = ev.stages["cache_hit"] if "cache_hit" in ev.stages else ev.groups["cache_hit"]
    return hit_ms, np.asarray(ev.root.which == 0, dtype=bool)  # branch 0 of the choice is the hit
