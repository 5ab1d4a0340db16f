"""Tune a council: evaluate the configurations of its search space, keep those within budget, and
return the Pareto front of expected user time, latency at the target percentile and cost.

Every configuration is evaluated in process (or on worker processes / Dask, same code) with the
same seed, so a member keeps its samples across configurations (common random numbers) and two
configurations differ by their design, not by noise. The rest of the voice turn (endpointing, ASR,
TTS, transport, from a scenario) is simulated once and added turn by turn.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ValidationError

from voicebudget._algebra import evaluate, walk
from voicebudget._algebra import replace as replace_node
from voicebudget._budget import Budget, with_overrides
from voicebudget._errors import ScenarioError, param
from voicebudget._io import Roots, read_document, reference_context, validation_error
from voicebudget._memory import check_memory
from voicebudget._scenario import Scenario, load_scenario
from voicebudget._voice_turn import VoiceTurn
from voicebudget.councils._config import Council, Member
from voicebudget.councils._evaluate import evaluate_council
from voicebudget.councils._speculation import ReplyCache
from voicebudget.councils._topologies import get_topology
from voicebudget.inference._stage import ModelledStage
from voicebudget.tuning._executor import check_scheduler_address, map_evaluations
from voicebudget.tuning._noise import NOISE_Z, SCREEN_Z, mean_with_se, quantile_with_se, tie_tolerance
from voicebudget.tuning._pareto import noisy_front, pareto_front
from voicebudget.tuning._space import Configuration, SearchSpace

__all__ = ["Candidate", "TuneResult", "load_search", "tune_council"]

FloatArray = NDArray[np.float64]
DEFAULT_TUNE_SAMPLES = 2_000
"""Turns per configuration. At 2,000 turns the share within budget near p95 carries a Monte Carlo
standard error of ~0.5 percentage points; common random numbers make comparisons far tighter."""
REFINE_FACTOR = 10
"""The shortlist (configurations no other beats beyond the noise) is re-evaluated at this many times
the turns before the front is drawn and the pick made."""
MAX_EXHAUSTIVE = 50_000
"""Spaces up to this size are enumerated; larger ones are sampled by Optuna's NSGA-II."""


@dataclass(frozen=True)
class Candidate:
    """One evaluated configuration.

    :ivar p95_ms: latency at the budget's target percentile (p95 by default), ms: voice-to-voice
        when tuned against a scenario, else the council's own.
    :ivar quality: probability the answer is right.
    :ivar cost_per_turn: USD per turn.
    :ivar expected_user_time_ms: ``X * (T_user + L + T_agent)``, ``X = 1 + e/(1-e_r)``.
    :ivar skipped: why the configuration is not a valid council (then no figures), else ``None``.
    :ivar samples: simulated turns behind the figures.
    :ivar p95_se_ms, mean_se_ms, quality_se, expected_user_time_se_ms, cost_se: Monte Carlo standard
        errors (:mod:`voicebudget.tuning._noise`); cost is exact (0) but for an aggregator's prompt.
    """

    index: int
    config: Configuration
    p95_ms: float = math.nan
    mean_ms: float = math.nan
    quality: float = math.nan
    cost_per_turn: float = math.nan
    expected_user_time_ms: float = math.nan
    within_budget: bool = False
    within_cost: bool = True
    tail_driver: str | None = None
    skipped: str | None = None
    equivalent: tuple[Configuration, ...] = ()
    """Other configurations with the same objectives (e.g. two combining rules over identical
    members): one row on the front, the first in the space's order, lists them here."""
    samples: int = 0
    p95_se_ms: float = 0.0
    mean_se_ms: float = 0.0
    quality_se: float = 0.0
    expected_user_time_se_ms: float = 0.0
    cost_se: float = 0.0

    @property
    def feasible(self) -> bool:
        """Valid, within the latency budget and within the cost constraint."""
        return self.skipped is None and self.within_budget and self.within_cost

    def objectives(self) -> tuple[float, float, float]:
        """``(expected_user_time_ms, p95_ms, cost_per_turn)``, all minimised."""
        return (self.expected_user_time_ms, self.p95_ms, self.cost_per_turn)

    def objective_errors(self) -> tuple[float, float, float]:
        """Standard errors of :meth:`objectives`, same order."""
        return (self.expected_user_time_se_ms, self.p95_se_ms, self.cost_se)

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": _jsonable(self.config),
            "p95_ms": self.p95_ms,
            "mean_ms": self.mean_ms,
            "quality": self.quality,
            "cost_per_turn": self.cost_per_turn,
            "expected_user_time_ms": self.expected_user_time_ms if math.isfinite(self.expected_user_time_ms) else None,
            "tail_driver": self.tail_driver,
            "equivalent": [_jsonable(c) for c in self.equivalent],
            "samples": self.samples,
            "standard_errors": {
                "p95_ms": self.p95_se_ms,
                "mean_ms": self.mean_se_ms,
                "quality": self.quality_se,
                "expected_user_time_ms": _finite_or_none(self.expected_user_time_se_ms),
                "cost_per_turn": self.cost_se,
            },
        }


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _jsonable(config: Configuration) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in config.items()}


@dataclass(frozen=True)
class TuneResult:
    """What ``voicebudget tune`` reports.

    :ivar evaluated: configurations evaluated (valid ones; ``skipped`` are not counted).
    :ivar feasible: of those, within budget and the cost constraint (at ``samples`` turns).
    :ivar shortlisted: configurations no other beat beyond the noise at ``samples`` turns, re-evaluated
        at ``refine_samples`` turns (same seed) before the front is drawn.
    :ivar pareto: the feasible configurations no other dominates beyond the noise (re-evaluated).
    :ivar best: the recommended pick (on the front); ``reason`` is the rule that chose it, ``why`` the
        sentence with its numbers.
    :ivar errors: evaluations that raised: ``{"config", "error"}``; never scored as infeasible.
    """

    council: str
    latency_scope: str
    budget: Budget
    strategy: str
    space_size: int
    evaluated: int
    feasible: int
    skipped: int
    pareto: tuple[Candidate, ...]
    best: Candidate | None
    why: str
    errors: tuple[dict[str, Any], ...] = ()
    seed: int = 1
    samples: int = DEFAULT_TUNE_SAMPLES
    skip_reasons: dict[str, int] = field(default_factory=dict)
    shortlisted: int = 0
    refine_samples: int = 0
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``voicebudget tune --format json``."""
        return {
            "council": self.council,
            "latency_scope": self.latency_scope,
            "budget": {"total_ms": self.budget.total_ms, "percentile": self.budget.percentile},
            "strategy": self.strategy,
            "seed": self.seed,
            "samples": self.samples,
            "refine_samples": self.refine_samples,
            "space_size": self.space_size,
            "evaluated": self.evaluated,
            "feasible": self.feasible,
            "shortlisted": self.shortlisted,
            "skipped": self.skipped,
            "skip_reasons": self.skip_reasons,
            "errors": list(self.errors),
            "pareto": [c.to_dict() for c in self.pareto],
            "best": self.best.to_dict() if self.best else None,
            "reason": self.reason,
            "why": self.why,
        }


def load_search(path: str | Path, *, allowed_roots: Roots = ()) -> tuple[dict[str, Any], SearchSpace]:
    """Read a council file and its ``[search]`` table.

    :returns: the council document (without ``search``) and the validated search space.
    :raises ScenarioError: missing/invalid file, or no search space declared.
    """
    path = Path(path)
    doc = read_document(path, fields={*Council.model_fields, "search"})
    raw = doc.pop("search", None)
    if not raw:
        raise ScenarioError(
            'declares no search space: add a [search] table (e.g. topology = ["all", "first_k"], '
            "members = { n = [1, 2, 3] }); see docs/tuning.md",
            origin=str(path),
            field="search",
        )
    context = reference_context(path, allowed_roots=allowed_roots)
    try:
        space = _SearchDoc.model_validate({"search": raw}, context=context).search
        Council.model_validate(doc, context=context)
    except ValidationError as exc:
        raise validation_error(exc, str(path), {"search": raw, **doc}, schema=Council.model_json_schema()) from None
    if space.is_empty():
        raise ScenarioError("declares an empty search space: no knob has values", origin=str(path), field="search")
    return doc, space


class _SearchDoc(BaseModel):
    """Wraps the space so validation errors carry the ``search.`` prefix."""

    search: SearchSpace


@dataclass(frozen=True)
class _Evaluator:
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

    def __call__(self, item: tuple[int, Configuration]) -> Candidate:
        index, config = item
        try:
            council = Council.model_validate(self.council_doc(config), context=self.context)
        except ValidationError as exc:
            err = exc.errors()[0]
            return Candidate(index, config, skipped=f"{'.'.join(map(str, err['loc']))}: {err['msg']}")
        return self.judge(index, config, council)

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
        members = _name_members([self.members[(name, conc)] for name in config["members"]])
        doc["members"] = _normalise_shares(members) if topology.uses_router else members
        if "aggregator" in config:
            spec = self.space.aggregator_spec
            agg = spec.model_dump() if spec is not None else self.base.get("aggregator")
            doc["aggregator"] = agg if config["aggregator"] else None
        if not topology.reads_answers:
            doc.pop("aggregator", None)
        return doc

    def judge(self, index: int, config: Configuration, council: Council) -> Candidate:
        res = evaluate_council(council, samples=self.samples, seed=self.seed)
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


def _cache_draws(space: SearchSpace, samples: int, seed: int) -> tuple[FloatArray | None, NDArray[np.bool_] | None]:
    """Hit latency and hit/miss per turn, drawn as :class:`~voicebudget.councils.ReplyCache` draws them
    (stream ``cache_hit``, and the ``choice`` stream of ``reply_cache``)."""
    spec = space.cache_spec
    if spec is None or True not in space.cache:
        return None, None
    cache = ReplyCache.model_validate({**spec.model_dump(), "miss": {"kind": "fixed", "value_ms": 0.0}})
    ev = evaluate(cache.tree(), samples, seed, name="reply_cache")
    hit_ms = ev.stages["cache_hit"] if "cache_hit" in ev.stages else ev.groups["cache_hit"]
    return hit_ms, np.asarray(ev.root.which == 0, dtype=bool)  # branch 0 of the choice is the hit


def _prepared_members(pool: dict[str, Member], concurrencies: tuple[int, ...]) -> dict[tuple[str, int | None], Member]:
    """Every pool member once per batch policy: its modelled stages at that concurrency (validated, so a
    deployment that does not fit fails here), its prices rescaled by :func:`price_factors`."""
    factors = price_factors(pool, concurrencies) if concurrencies else {}
    out: dict[tuple[str, int | None], Member] = {}
    for name, member in pool.items():
        out[(name, None)] = member
        for conc in concurrencies:
            stage = _set_concurrency(member.stage, conc)
            out[(name, conc)] = _scale_prices(
                member.model_copy(update={"stage": stage}), factors.get((name, conc), 1.0)
            )
    return out


def _name_members(members: list[Member]) -> list[Member]:
    """Repeated pool members get distinct names (``name#2``), hence independent samples."""
    seen: dict[str, int] = {}
    out = []
    for mb in members:
        count = seen.get(mb.name, 0) + 1
        seen[mb.name] = count
        out.append(mb if count == 1 else mb.model_copy(update={"name": f"{mb.name}#{count}"}))
    return out


def _normalise_shares(members: list[Member]) -> list[Member]:
    """A router over a subset of the pool: renormalise the subset's shares to sum to 1."""
    shares = [mb.share for mb in members]
    if any(s is None for s in shares):
        return members
    total = float(sum(s for s in shares if s is not None))
    if total <= 0:
        return members
    return [mb.model_copy(update={"share": (mb.share or 0.0) / total}) for mb in members]


def _batch_sensitive(members: dict[tuple[str, int | None], Member], concurrencies: tuple[int, ...]) -> frozenset[str]:
    """Pool members whose price or modelled TTFT/TPOT differs between the batch policies tried."""
    out = set()
    for name in {name for name, _ in members}:
        looks = set()
        for conc in concurrencies:
            mb = members[(name, conc)]
            figures = tuple(
                (round(r.ttft_ms, 6), round(r.tpot_ms, 6))
                for r in (stage.predict() for stage in _modelled_objects(mb.stage))
            )
            looks.add((mb.input_usd_per_mtok, mb.output_usd_per_mtok, mb.usd_per_call, figures))
        if len(looks) > 1:
            out.add(name)
    return frozenset(out)


def _modelled_objects(stage: Any) -> list[ModelledStage]:
    """The modelled stages (an LLM on given hardware) anywhere in a stage tree, councils and caches included."""
    return [node for _, node in walk(stage) if isinstance(node, ModelledStage)]


def _scale_prices(member: Member, factor: float) -> Member:
    if factor == 1.0:
        return member
    keys = ("input_usd_per_mtok", "output_usd_per_mtok", "usd_per_call")
    return member.model_copy(update={k: getattr(member, k) * factor for k in keys})


def price_factors(pool: dict[str, Member], concurrencies: tuple[int, ...]) -> dict[tuple[str, int], float]:
    """How a self-hosted member's price moves with the batch policy.

    Cost per token is chip time per token: ``chips * T_step(B) / B`` (docs/design.md section 4), so
    a member on ``gpu``/``wafer`` hardware declared at concurrency ``B0`` costs
    ``cost(B) / cost(B0)`` times its declared prices at concurrency ``B`` (the fast-mode trade).
    Members without a modelled stage keep their prices (factor 1).

    :returns: ``(member name, concurrency) -> price factor``.
    """
    out: dict[tuple[str, int], float] = {}
    for name, member in pool.items():
        stages = _modelled_objects(member.stage)
        if not stages:
            continue
        base = stages[0].predict().cost_per_million_output_tokens
        if not base:
            continue  # no chip price for this hardware: keep the declared prices
        for conc in concurrencies:
            cost = stages[0].with_concurrency(conc).predict().cost_per_million_output_tokens
            out[(name, conc)] = (cost or base) / base
    return out


def _set_concurrency(stage: Any, concurrency: int) -> Any:
    """The stage tree with the batch policy (``concurrency``) of every modelled stage in it set."""
    for path, node in list(walk(stage)):
        if isinstance(node, ModelledStage):
            stage = replace_node(stage, path, node.with_concurrency(concurrency))
    return stage


def rest_of_turn(scenario: Scenario, samples: int, seed: int) -> FloatArray:
    """Per-turn latency of everything but the LLM stage of a scenario's ``voice_turn``, ms.

    The voice turn is a sequence after the turn commit, so voice-to-voice = rest + LLM exactly.

    :returns: ``float64[samples]``.
    :raises ScenarioError: the scenario's pipeline is not a ``voice_turn``.
    """
    if not isinstance(scenario.pipeline, VoiceTurn):
        raise ScenarioError("tuning against a scenario needs a voice_turn pipeline", field="pipeline")
    ev = evaluate(scenario.pipeline.to_tree(), samples, seed)
    return ev.total - ev.stages["llm"]


def tune_council(
    path: str | Path,
    *,
    scenario: str | Path | None = None,
    budget_ms: float | None = None,
    percentile: float | None = None,
    samples: int = DEFAULT_TUNE_SAMPLES,
    seed: int = 1,
    workers: int = 1,
    scheduler: Any = None,
    trials: int = 2_000,
    max_exhaustive: int = MAX_EXHAUSTIVE,
    refine_samples: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    allowed_roots: Roots = (),
) -> TuneResult:
    """Search a council file's space and return the Pareto front of feasible configurations.

    :param path: a council file with a ``[search]`` table.
    :param scenario: judge voice-to-voice latency: the scenario's ``voice_turn`` with its LLM stage
        replaced by each configuration (and the scenario's budget). Without it, the council's own
        latency is judged against the council's budget (as ``voicebudget council`` does).
    :param samples: turns per configuration (default 2,000).
    :param seed: one seed for every configuration (common random numbers).
    :param refine_samples: turns at which the shortlist (configurations no other beats beyond the
        noise) is re-evaluated before the front is drawn; default ``REFINE_FACTOR * samples``; at or
        below ``samples``, no re-evaluation.
    :param workers: local processes (1: in this process).
    :param scheduler: a Dask scheduler address or ``distributed.Client``.
    :param trials: configurations Optuna evaluates when the space exceeds ``max_exhaustive``.
    :param progress: ``progress(done, total)`` after each batch.
    :param allowed_roots: further folders that ``file`` references may read from (see
        :func:`voicebudget.load_scenario`).
    :raises ScenarioError: invalid file, no search space, or bad budget override.
    """
    doc, space = load_search(path, allowed_roots=allowed_roots)
    context = reference_context(path, allowed_roots=allowed_roots)
    council = Council.model_validate(doc, context=context)
    budget, scope = _scope(council, scenario, budget_ms, percentile, allowed_roots)
    base = council.model_dump(mode="json", exclude={"members"}, exclude_none=True)
    pool = {mb.name: mb for mb in (*council.members, *space.pool)}
    if len(pool) < len(council.members) + len(space.pool):
        raise ScenarioError(
            "pool member names must differ from the council's members", origin=str(path), field="search.pool"
        )
    members = _prepared_members(pool, space.concurrency)
    sensitive = _batch_sensitive(members, space.concurrency)
    configs = list(space.configurations(list(pool), council.topology, sensitive))

    refine = REFINE_FACTOR * samples if refine_samples is None else refine_samples

    def at(k: int) -> _Evaluator:  # the evaluator at k turns per configuration
        rest_k = _rest(scenario, k, seed, allowed_roots)
        return _Evaluator(base, members, space, budget, k, seed, context, rest_k, *_cache_draws(space, k, seed))

    _check_memory(at, configs, max(samples, refine), workers if scheduler is None else 1)
    rest = _rest(scenario, samples, seed, allowed_roots)
    hit_ms, hit = _cache_draws(space, samples, seed)
    evaluator = _Evaluator(base, members, space, budget, samples, seed, context, rest, hit_ms, hit)
    if isinstance(scheduler, str):
        scheduler = check_scheduler_address(scheduler)
    if scheduler is not None and importlib.util.find_spec("distributed") is None:
        raise ScenarioError("a Dask scheduler needs: pip install 'voicebudget[tune]'", origin=str(path))
    if len(configs) <= max_exhaustive:
        candidates, errors = _evaluate_all(evaluator, list(enumerate(configs)), workers, scheduler, progress)
        strategy = "exhaustive"
    else:
        from voicebudget.tuning._optuna import optuna_search

        try:
            candidates, errors = optuna_search(evaluator, configs, trials, seed, workers, scheduler, progress)
        except ImportError as exc:
            raise ScenarioError(
                f"the space has {len(configs):,} configurations, more than the exhaustive limit "
                f"({max_exhaustive:,}): {exc}",
                origin=str(path),
                field="search",
            ) from None
        strategy = f"optuna NSGA-II ({trials} trials)"
    shortlist = _shortlist(candidates, budget)
    finals = shortlist
    if refine > samples and shortlist:
        fine_hit_ms, fine_hit = _cache_draws(space, refine, seed)
        fine = replace(
            evaluator,
            samples=refine,
            rest_ms=_rest(scenario, refine, seed, allowed_roots),
            cache_hit_ms=fine_hit_ms,
            cache_hit=fine_hit,
        )
        items = [(c.index, c.config) for c in shortlist]
        finals, more = _evaluate_all(fine, items, workers, scheduler, progress)
        errors.extend(more)
    return _summarise(
        council.name,
        scope,
        budget,
        strategy,
        len(configs),
        candidates,
        errors,
        seed,
        samples,
        finals,
        len(shortlist),
        max(refine, samples),
    )


def _check_memory(at: Callable[[int], _Evaluator], configs: list[Configuration], samples: int, copies: int) -> None:
    """The memory guard (:func:`~voicebudget._memory.check_memory`) on the configuration with the most
    members (and the aggregator), with the scenario's rest of the turn and the cache draws, once per
    worker process, at ``samples`` (the larger of the ``samples`` argument and the refinement's turns).

    :raises ScenarioError: ``samples`` (or ``refine_samples``) too large.
    """
    widest = max(configs, key=lambda c: (len(c["members"]), bool(c.get("aggregator"))), default=None)
    if widest is None:
        return
    try:
        check_memory(
            samples,
            lambda k: at(k)((0, widest)),
            copies=copies,
            what=f"each of {copies} evaluation(s) of up to {len(widest['members'])} members",
        )
    except ScenarioError as exc:
        raise ScenarioError(exc.detail, origin=param("samples")) from None


def _scope(
    council: Council,
    scenario: str | Path | None,
    budget_ms: float | None,
    percentile: float | None,
    allowed_roots: Roots = (),
) -> tuple[Budget, str]:
    base_budget = council.budget
    scope = "council latency (no scenario)"
    if scenario is not None:
        sc = load_scenario(scenario, allowed_roots=allowed_roots)
        base_budget = sc.budget
        scope = f"voice-to-voice in scenario {sc.name!r} (LLM stage = the council)"
    return with_overrides(base_budget, budget_ms, percentile), scope


def _rest(scenario: str | Path | None, samples: int, seed: int, allowed_roots: Roots = ()) -> FloatArray | None:
    if scenario is None:
        return None
    return rest_of_turn(load_scenario(scenario, allowed_roots=allowed_roots), samples, seed)


def _evaluate_all(
    evaluator: _Evaluator,
    items: list[tuple[int, Configuration]],
    workers: int,
    scheduler: Any,
    progress: Callable[[int, int], None] | None,
) -> tuple[list[Candidate], list[dict[str, Any]]]:
    """Evaluate ``(index, configuration)`` items; returns the candidates and the errors."""
    done = [0]

    def tick(k: int) -> None:
        done[0] += k
        if progress:
            progress(done[0], len(items))

    outcomes = map_evaluations(evaluator, items, workers=workers, scheduler=scheduler, progress=tick)
    candidates = [o.value for o in outcomes if o.value is not None]
    errors = [{"config": _jsonable(items[o.index][1]), "error": o.failure.error} for o in outcomes if o.failure]
    return candidates, errors


def _arrays(cands: list[Candidate]) -> tuple[FloatArray, FloatArray]:
    obj = _comparable(np.array([c.objectives() for c in cands], dtype=np.float64).reshape(-1, 3))
    se = np.array([c.objective_errors() for c in cands], dtype=np.float64).reshape(-1, 3)
    return obj, se


def _shortlist(candidates: list[Candidate], budget: Budget) -> list[Candidate]:
    """Configurations worth re-evaluating: within the cost limit, plausibly within budget (latency at
    the percentile minus ``SCREEN_Z`` standard errors at or under it), and surely beaten (by
    ``SCREEN_Z`` standard errors on every objective) by no configuration within budget."""
    plausible = [
        c
        for c in candidates
        if c.skipped is None and c.within_cost and c.p95_ms - SCREEN_Z * c.p95_se_ms <= budget.total_ms
    ]
    if not plausible:
        return []
    obj, se = _arrays(plausible)
    keep = noisy_front(obj, se, np.array([c.within_budget for c in plausible]), z=SCREEN_Z, sure=True)
    return [plausible[i] for i in keep]


def _summarise(
    name: str,
    scope: str,
    budget: Budget,
    strategy: str,
    size: int,
    candidates: list[Candidate],
    errors: list[dict[str, Any]],
    seed: int,
    samples: int,
    finals: list[Candidate] | None = None,
    shortlisted: int = 0,
    refine_samples: int = 0,
) -> TuneResult:
    valid = [c for c in candidates if c.skipped is None]
    reasons: dict[str, int] = {}
    for c in candidates:
        if c.skipped is not None:
            reasons[c.skipped] = reasons.get(c.skipped, 0) + 1
    feasible = [c for c in valid if c.feasible]
    front = _front([c for c in (valid if finals is None else finals) if c.feasible])
    best, reason, why = _pick(front, valid, budget)
    return TuneResult(
        name,
        scope,
        budget,
        strategy,
        size,
        len(valid),
        len(feasible),
        len(candidates) - len(valid),
        tuple(front),
        best,
        why,
        tuple(errors),
        seed,
        samples,
        reasons,
        shortlisted,
        refine_samples or samples,
        reason,
    )


def _front(feasible: list[Candidate]) -> list[Candidate]:
    """The feasible configurations no other beats beyond the noise, best expected user time first.

    Configurations that tie with an earlier one (in the space's order) on every objective within the
    noise share its row (``equivalent``): e.g. one member under ``all`` and under ``vote`` with
    ``m = 1``, or a batch policy that changes nothing measurable.
    """
    if not feasible:
        return []
    obj, se = _arrays(feasible)
    keep = noisy_front(obj, se)
    if keep.size == 0:  # a cycle of within-noise trades (the relation is not transitive)
        keep = pareto_front(obj)
    groups: list[list[int]] = []
    for i in sorted(keep, key=lambda i: feasible[i].index):
        for g in groups:
            lead = g[0]
            if np.all(np.abs(obj[i] - obj[lead]) <= tie_tolerance(se[i], se[lead], obj[i], obj[lead])):
                g.append(int(i))
                break
        else:
            groups.append([int(i)])
    return sorted(
        (replace(feasible[g[0]], equivalent=tuple(feasible[j].config for j in g[1:])) for g in groups),
        key=lambda c: (*_finite_objectives(c), c.index),
    )


def _finite_objectives(c: Candidate) -> tuple[float, float, float]:
    big = float(np.finfo(np.float64).max)
    eut, p95, cost = c.objectives()
    return (eut if math.isfinite(eut) else big, p95, cost)


def describe(config: Configuration) -> str:
    """A configuration in one line, e.g. ``llama-8b+qwen3-235b first_k k=1 cache=True``."""
    parts = []
    for key, value in config.items():
        shown = "+".join(map(str, value)) if isinstance(value, tuple | list) else str(value)
        parts.append(shown if key in ("members", "topology") else f"{key}={shown}")
    return " ".join(parts)


def short_config(config: Configuration) -> str:
    """A configuration in words that wrap between parts: ``2x gpt-oss-120b + qwen3-235b, vote m=2,
    cache, concurrency 1`` (repeated members counted, knobs after commas)."""
    counts: dict[str, int] = {}
    for name in config["members"]:
        counts[name] = counts.get(name, 0) + 1
    members = " + ".join(f"{n}x {name}" if n > 1 else name for name, n in counts.items())
    parts = [members, str(config["topology"])]
    for key, value in config.items():
        if key in ("members", "topology"):
            continue
        if key == "cache":
            parts.append("cache" if value else "no cache")
        elif key == "aggregator":
            parts.append("aggregator" if value else "no aggregator")
        elif key in ("k", "m"):
            parts[1] += f" {key}={value}"
        else:
            parts.append(f"{key} {value}")
    return ", ".join(parts)


def _comparable(obj: FloatArray) -> FloatArray:
    """Objectives rounded to 10 significant digits (quadrature and float noise must not split ties);
    infinite expected user time (every repair fails) sorts last.

    :raises ValueError: a NaN objective (never ranked; :func:`_refuse_nan` stops it earlier).
    """
    if np.isnan(obj).any():
        raise ValueError("objectives contain NaN: a NaN is an error, never a ranking")
    obj = np.where(np.isfinite(obj), obj, np.finfo(np.float64).max)
    digits = 9 - np.floor(np.log10(np.abs(np.where(obj == 0, 1.0, obj))))
    scale = 10.0 ** np.clip(digits, -300, 300)  # a subnormal objective (5e-324 ms) would need 10^333: inf, NaN
    with np.errstate(over="ignore"):  # the largest float may round up to inf: it sorts last either way
        return np.asarray(np.round(obj * scale) / scale, dtype=np.float64)


PICK_RULE = (
    "among the configurations within budget on the front: the lowest expected user time; those whose "
    f"±{NOISE_Z:g} standard-error intervals overlap its interval tie, and the tie goes to the lowest "
    "{label} (ties within the noise again), then the lowest cost"
)
"""The recommended pick's rule (docs/tuning.md), ``{label}`` the budget's percentile."""


def _pick(front: list[Candidate], valid: list[Candidate], budget: Budget) -> tuple[Candidate | None, str, str]:
    """The recommended pick by :data:`PICK_RULE`: ``(pick, reason, sentence)``."""
    label = budget.label
    if not front:
        if not valid:
            return None, "no valid configuration", "no valid configuration in the space"
        fastest = min(valid, key=lambda c: c.p95_ms)
        return (
            None,
            "nothing within budget",
            (
                f"no configuration is within {budget.total_ms:.0f} ms at {label} (and the cost limit); "
                f"the fastest reaches {fastest.p95_ms:.1f} ms"
            ),
        )
    tied, steps = _ties(front, label)
    best = tied[0]
    if len(steps) == 1:
        reason = "lowest expected user time on the front, beyond the noise"
    else:
        reason = f"{steps[0]}; of them {', then '.join(steps[1:])}"
    return (
        best,
        reason,
        (
            f"{short_config(best.config)}: {reason} "
            f"(user time {best.expected_user_time_ms:.0f} ± {best.expected_user_time_se_ms:.0f} ms per completed "
            f"request, accuracy {best.quality:.3f}, {label} {best.p95_ms:.1f} ± {best.p95_se_ms:.1f} ms <= "
            f"{budget.total_ms:.0f} ms, ${best.cost_per_turn:.6f}/turn){_runner_up(front, best)}; "
            f"{len(front)} configurations on the front"
        ),
    )


def _runner_up(front: list[Candidate], best: Candidate) -> str:
    others = [c for c in front if c is not best]
    if not others:
        return ""
    nxt = min(others, key=lambda c: (_finite_objectives(c)[0], c.index))
    return (
        f"; next on user time: {short_config(nxt.config)} at {nxt.expected_user_time_ms:.0f} ± "
        f"{nxt.expected_user_time_se_ms:.0f} ms"
    )


def _ties(front: list[Candidate], label: str) -> tuple[list[Candidate], list[str]]:
    """Lexicographic choice with noise: keep the configurations tied (within the noise) with the best
    on user time, then on the percentile, then the cheapest. Returns the order and the steps taken."""
    keys: list[tuple[str, Callable[[Candidate], float], Callable[[Candidate], float]]] = [
        ("expected user time", lambda c: _finite_objectives(c)[0], lambda c: c.expected_user_time_se_ms),
        (label, lambda c: c.p95_ms, lambda c: c.p95_se_ms),
    ]
    pool = list(front)
    steps: list[str] = []
    for what, value, se in keys:
        lead = min(pool, key=lambda c: (value(c), c.index))
        pool = [
            c
            for c in pool
            if value(c) - value(lead)
            <= float(tie_tolerance(np.array(se(c)), np.array(se(lead)), np.array(value(c)), np.array(value(lead))))
        ]
        if len(pool) == 1:
            steps.append(f"the lowest {what}" if steps else f"lowest {what} on the front, beyond the noise")
            return pool, steps
        steps.append(
            f"the lowest {what}"
            if steps
            else f"{len(pool)} configurations tie on {what} (their ±{NOISE_Z:g} SE intervals overlap the lowest's)"
        )
    pool.sort(key=lambda c: (c.cost_per_turn, c.index))
    steps.append("the lowest cost")
    return pool, steps
