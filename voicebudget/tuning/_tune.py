"""Tune a council: evaluate the configurations of its search space, keep those within budget, and
return the Pareto front of expected user time, latency at the target percentile and cost.

Every configuration is evaluated in process (or on worker processes / Dask, same code) with the
same seed, so a member keeps its samples across configurations (common random numbers) and two
configurations differ by their design, not by noise. The rest of the voice turn (endpointing, ASR,
TTS, transport, from a scenario) is simulated once and added turn by turn.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ValidationError

from voicebudget._algebra import evaluate
from voicebudget._budget import MAX_LATENCY_MS, Budget, with_overrides
from voicebudget._errors import ScenarioError, VoiceBudgetError, param
from voicebudget._io import Roots, read_document, reference_context, refuse_other_document, validation_error
from voicebudget._memory import check_memory, check_work
from voicebudget._plausible import implausible_values, warn_each
from voicebudget._scenario import Scenario, load_scenario
from voicebudget._text import count
from voicebudget._voice_turn import VoiceTurn
from voicebudget.councils._config import Council
from voicebudget.councils._topologies import get_topology
from voicebudget.tuning._evaluator import Evaluator, cache_draws
from voicebudget.tuning._executor import check_scheduler_address, map_evaluations
from voicebudget.tuning._front import shortlist as shortlist_of
from voicebudget.tuning._front import summarise
from voicebudget.tuning._members import MATERIAL_MS, batch_sensitive, prepared_members
from voicebudget.tuning._result import DEFAULT_TUNE_SAMPLES, Candidate, TuneResult, jsonable
from voicebudget.tuning._space import Configuration, SearchSpace

__all__ = ["as_written", "load_search", "rest_of_turn", "tune_council"]


FloatArray = NDArray[np.float64]


REFINE_FACTOR = 10
"""The shortlist (configurations no other beats beyond the noise) is re-evaluated at this many times
the turns before the front is drawn and the pick made."""


MAX_EXHAUSTIVE = 50_000
"""Spaces up to this size are enumerated; larger ones are sampled by Optuna's NSGA-II."""


def load_search(path: str | Path, *, allowed_roots: Roots = ()) -> tuple[dict[str, Any], SearchSpace]:
    """Read a council file and its ``[search]`` table.

    :returns: the council document (without ``search``) and the validated search space.
    :raises ScenarioError: missing/invalid file, or no search space declared.
    :warns ImplausibleValue: one per value outside the plausible range of what it measures, in the council
        or its search pool (:mod:`voicebudget._plausible`).
    """
    path = Path(path)
    doc = read_document(path, fields={*Council.model_fields, "search"})
    refuse_other_document(doc, "council", str(path))
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
        council = Council.model_validate(doc, context=context)
    except ValidationError as exc:
        raise validation_error(exc, str(path), {"search": raw, **doc}, schema=_tune_schema()) from None
    found = [*implausible_values(council), *implausible_values(space, "search")]
    warn_each(f"{path}: {field}: {message}" for field, message in found)
    if space.is_empty():
        raise ScenarioError("declares an empty search space: no knob has values", origin=str(path), field="search")
    return doc, space


class _SearchDoc(BaseModel):
    """Wraps the space so validation errors carry the ``search.`` prefix."""

    search: SearchSpace


def _tune_schema() -> dict[str, Any]:
    """The JSON schema of a tuning file: the council's with its ``search`` table, so an error in a pool member's
    stage lists the kinds allowed there, as one in the council's members does."""
    council, search = Council.model_json_schema(), _SearchDoc.model_json_schema()
    defs = {**search.get("$defs", {}), **council.get("$defs", {})}
    root = defs[council["$ref"].rsplit("/", 1)[-1]] if "$ref" in council else council  # a council nests councils
    return {**root, "properties": {**root["properties"], **search["properties"]}, "$defs": defs}


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
    _refuse_members_beyond_limit(
        [(f"members.{i}.stage", mb) for i, mb in enumerate(council.members)]
        + [(f"search.pool.{i}.stage", mb) for i, mb in enumerate(space.pool)],
        max(samples, refine_samples or 0),
        seed,
        path,
    )
    members = prepared_members(pool, space.concurrency)
    sensitive = batch_sensitive(members, space.concurrency)
    configs = _bounded_space(space.configurations(list(pool), council.topology, sensitive), path)
    if not configs:  # the file's bounds contradict each other: invalid input, not "nothing within budget" (exit 1)
        raise ScenarioError(
            f"declares an empty search space: {space.why_empty(list(pool))}", origin=str(path), field="search"
        )
    notes = _batch_note(space.concurrency, sensitive, list(pool))

    refine = REFINE_FACTOR * samples if refine_samples is None else refine_samples

    def at(k: int) -> Evaluator:  # the evaluator at k turns per configuration
        rest_k = _rest(scenario, k, seed, allowed_roots)
        return Evaluator(base, members, space, budget, k, seed, context, rest_k, *cache_draws(space, k, seed))

    _check_work(configs, min(len(configs), max_exhaustive) if len(configs) <= max_exhaustive else trials, samples)
    _check_memory(at, configs, max(samples, refine), workers if scheduler is None else 1)
    rest = _rest(scenario, samples, seed, allowed_roots)
    hit_ms, hit = cache_draws(space, samples, seed)
    evaluator = Evaluator(base, members, space, budget, samples, seed, context, rest, hit_ms, hit)
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
    shortlist = shortlist_of(candidates, budget)
    finals = shortlist
    if refine > samples and shortlist:
        fine_hit_ms, fine_hit = cache_draws(space, refine, seed)
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
    else:
        fine = evaluator
    try:
        own: Candidate | None = fine.judge(-1, as_written(council), council)
    except (ValueError, VoiceBudgetError) as exc:  # as an evaluation error in the search: said, not raised
        own = None
        notes = (*notes, f"your council as written could not be judged: {exc}")
    return summarise(
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
        own,
        notes,
        space.constraints.max_cost_per_turn,
    )


def _refuse_members_beyond_limit(members: list[tuple[str, Any]], samples: int, seed: int, path: str | Path) -> None:
    """Each member alone at the tune's turns and seed: a member whose own turns are not finite or take longer
    than :data:`~voicebudget._budget.MAX_LATENCY_MS` (a sequence of stages each within it) would fail every
    configuration it is in, after the search; it is refused before, naming its field path.

    :raises ScenarioError: the first such member.
    """
    for field, member in members:
        total = evaluate(member.stage, min(samples, 100_000), seed).total
        if np.isfinite(total.min()) and total.max() <= MAX_LATENCY_MS:
            continue
        bad = int(np.sum(~(np.abs(total) <= MAX_LATENCY_MS)))
        raise ScenarioError(
            f"member {member.name!r}: {bad:,} of {total.size:,} turns take longer than {MAX_LATENCY_MS:,.0f} ms "
            "(1,000 hours) or are not finite, so no configuration with it can be judged; refused before the search",
            origin=str(path),
            field=field,
        )


MAX_SPACE = 200_000
"""Most configurations a search space may have (4x :data:`MAX_EXHAUSTIVE`: Optuna samples a larger one
from the list). A few values in a small file can ask for far more: council sizes up to 100 with
``repeat`` over a pool of 5 are 4.6 million councils of up to 100 members."""

MAX_MEMBER_SLOTS = 5_000_000
"""Most members over all the configurations of a space (their tuples are held: ~40 MB)."""


def _bounded_space(configs: Iterator[Configuration], path: str | Path) -> list[Configuration]:
    """The space's configurations, refused (``search``) as soon as they pass :data:`MAX_SPACE` or their
    members :data:`MAX_MEMBER_SLOTS`: enumerated lazily, so a space of 10^17 councils costs no more than
    the first 200,000."""
    out: list[Configuration] = []
    slots = 0
    for config in configs:
        out.append(config)
        slots += len(config["members"])
        if len(out) > MAX_SPACE or slots > MAX_MEMBER_SLOTS:
            raise ScenarioError(
                f"the search space has at least {count(len(out), 'configuration')} of {slots:,} members in all; "
                "at most "
                f"{MAX_SPACE:,} configurations and {MAX_MEMBER_SLOTS:,} members are searched: narrow it (fewer "
                "council sizes, no repeat, fewer values of a knob)",
                origin=str(path),
                field="search",
            )
    return out


def _check_work(configs: list[Configuration], evaluations: int, samples: int) -> None:
    """The work guard (:func:`~voicebudget._memory.check_work`) on the first pass: ``evaluations``
    configurations of up to the widest one's stages (its members, the council, an aggregator) each.

    :raises ScenarioError: ``samples`` too large for the space.
    """
    widest = max((len(c["members"]) + 1 + bool(c.get("aggregator")) for c in configs), default=0)
    try:
        check_work(
            samples,
            evaluations * widest,
            what=f"{evaluations:,} configurations x up to {widest:,} stages",
            fewer="configurations (a smaller [search] space, or fewer trials)",
        )
    except ScenarioError as exc:
        raise ScenarioError(exc.detail, origin=param("samples")) from None


def as_written(council: Council) -> Configuration:
    """The configuration a council file writes: its members, topology, and ``k``/``m``/``rule`` where the
    topology uses them (its stages at their declared batch policy, no reply cache)."""
    topo = get_topology(council.topology)
    config: Configuration = {"members": tuple(mb.name for mb in council.members), "topology": council.topology}
    if council.k is not None and council.topology == "first_k":
        config["k"] = council.k
    if council.m is not None and council.topology == "vote":
        config["m"] = council.m
    if topo.combines_by_rule and len(council.members) > 1:
        config["rule"] = council.rule
    return config


def _batch_note(concurrency: tuple[int, ...], sensitive: frozenset[str], pool: list[str]) -> tuple[str, ...]:
    """Say what became of a ``concurrency`` knob that changes some or no member."""
    if not concurrency:
        return ()
    values = ", ".join(map(str, concurrency))
    if not sensitive:
        return (
            f"concurrency = [{values}] changes no member (no gpu/wafer member whose call moves by "
            f"{MATERIAL_MS} ms or more, or whose price moves, with it): not searched",
        )
    rest = [name for name in pool if name not in sensitive]
    if not rest:
        return ()
    return (f"concurrency = [{values}] searched only for councils with {', '.join(sorted(sensitive))}",)


def _check_memory(at: Callable[[int], Evaluator], configs: list[Configuration], samples: int, copies: int) -> None:
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
    evaluator: Evaluator,
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

    # the configurations that share a simulation side by side, so they meet in one task, on one worker (a
    # batch boundary between them costs a simulation); the outcomes are put back in the space's order
    order = Evaluator.memo_order([config for _, config in items])
    grouped = [items[i] for i in order]
    outcomes = map_evaluations(evaluator, grouped, workers=workers, scheduler=scheduler, progress=tick)
    outcomes.sort(key=lambda o: order[o.index])
    candidates = [o.value for o in outcomes if o.value is not None]
    errors = [{"config": jsonable(grouped[o.index][1]), "error": o.failure.error} for o in outcomes if o.failure]
    return candidates, errors
