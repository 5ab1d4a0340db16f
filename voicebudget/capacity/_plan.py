"""Capacity of a voice fleet: the most concurrent calls a deployment carries within the budget.

For a deployment and ``calls`` concurrent calls, the scenario's LLM stage is replaced by the
deployment's stage at that load (:mod:`voicebudget.capacity._load`) and the *whole* turn is simulated
(endpointing, ASR, network, LLM, TTS, transport), on the scenario's seed so that every load level
draws the same underlying random numbers (common random numbers: the p95 curve over calls is
smooth, not noisy). The capacity is the largest ``calls`` whose voice-to-voice latency at the
budget's percentile is within the budget, found by doubling then bisection; it assumes that latency
does not fall when load grows (tested: more concurrency never lowers p95).

Cost per call-minute at capacity: the deployment's chip-hours shared by its calls, or the API's
token prices. Chips for a target: whole deployments (replicas) of the same shape.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from voicebudget._algebra import TreePath, evaluate, replace, walk
from voicebudget._budget import Budget, with_overrides
from voicebudget._errors import ScenarioError, VoiceBudgetError, param
from voicebudget._memory import check_memory, check_work
from voicebudget._report import percentiles
from voicebudget._scenario import Scenario, load_scenario
from voicebudget._simulate import resolve_seed
from voicebudget._traffic import CallTraffic
from voicebudget._voice_turn import VoiceTurn
from voicebudget.capacity._load import HostedDeployment, LoadModel, ModelledDeployment, Overloaded
from voicebudget.inference._stage import APIStage, ModelledStage, stage_class_for

__all__ = [
    "DEFAULT_CAPACITY_SAMPLES",
    "CapacityPoint",
    "CapacityResult",
    "DeploymentCapacity",
    "deployments_from_options",
    "deployments_from_scenario",
    "find_capacity",
    "plan_capacity",
    "plan_capacity_file",
]

DEFAULT_CAPACITY_SAMPLES = 20_000
"""Turns simulated per load level: p95's Monte Carlo standard error is then ~0.3% of its value."""

MAX_CALLS = 10_000_000
"""The search stops here (a deployment that carries more is reported at this bound)."""


@dataclass(frozen=True)
class CapacityPoint:
    """One load level: ``calls`` concurrent calls.

    :ivar request_rate_per_s: LLM requests/s they send.
    :ivar concurrency: LLM requests in flight, mean (``None`` for a hosted API or when overloaded).
    :ivar percentile_ms: voice-to-voice latency at the budget's percentile, ms (``inf``: overloaded).
    :ivar limit: what ran out when overloaded (``"batch cap"``, ``"memory"``, ``"rate limit"``), else ``None``.
    """

    calls: int
    request_rate_per_s: float
    concurrency: float | None
    percentile_ms: float
    limit: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (an overloaded level's latency is ``null``)."""
        return {
            "calls": self.calls,
            "request_rate_per_s": self.request_rate_per_s,
            "concurrency": self.concurrency,
            "percentile_ms": self.percentile_ms if math.isfinite(self.percentile_ms) else None,
            "limit": self.limit,
        }


@dataclass(frozen=True)
class DeploymentCapacity:
    """What one deployment carries.

    :ivar max_concurrent_calls: the most calls within budget (0: not even one call, e.g. a hosted API
        whose measured latency misses the budget, whatever its rate limits; ``None``: a hosted API
        within budget and without given rate limits).
    :ivar limited_by: what stops more calls: ``"budget"`` (latency), ``"batch cap"``, ``"throughput"``
        (the scheduler's step budget fills: the queue would grow without bound), ``"memory"``,
        ``"rate limit"``, ``"no limit"`` (a hosted API within budget and without given rate limits) or
        ``"search bound"``.
    :ivar percentile_ms_at_max: latency at the budget's percentile at that load, ms.
    :ivar cost_per_call_minute: US dollars per call-minute at that load (``None`` without a price).
    :ivar chips: chips of one deployment (``None`` for an API).
    :ivar calls_per_chip: ``max_concurrent_calls / chips``.
    :ivar replicas_for_target: deployments needed for the target calls (``None`` without a target).
    :ivar chips_for_target: ``replicas_for_target x chips``.
    :ivar curve: the load levels evaluated, by calls.
    """

    name: str
    description: dict[str, Any]
    max_concurrent_calls: int | None
    limited_by: str
    percentile_ms_at_max: float | None
    cost_per_call_minute: float | None
    chips: int | None
    calls_per_chip: float | None
    replicas_for_target: int | None
    chips_for_target: int | None
    curve: tuple[CapacityPoint, ...]
    on_front: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with stable keys (docs/capacity.md)."""
        return {
            "name": self.name,
            "deployment": self.description,
            "max_concurrent_calls": self.max_concurrent_calls,
            "limited_by": self.limited_by,
            "percentile_ms_at_max": self.percentile_ms_at_max,
            "cost_per_call_minute": self.cost_per_call_minute,
            "chips": self.chips,
            "calls_per_chip": self.calls_per_chip,
            "replicas_for_target": self.replicas_for_target,
            "chips_for_target": self.chips_for_target,
            "on_front": self.on_front,
            "curve": [p.to_dict() for p in self.curve],
        }


@dataclass(frozen=True)
class CapacityResult:
    """Capacity of every deployment for one scenario.

    :ivar front: names of the deployments on the Pareto front of (cost per call-minute, latency at
        the percentile at capacity) among those that carry at least one call.
    """

    scenario: str
    budget: Budget
    traffic: CallTraffic
    stage: str
    seed: int
    samples: int
    target_calls: int | None
    deployments: tuple[DeploymentCapacity, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def front(self) -> tuple[str, ...]:
        """Deployment names on the cost/latency front."""
        return tuple(d.name for d in self.deployments if d.on_front)

    def to_dict(self) -> dict[str, Any]:
        """The ``voicebudget capacity --format json`` document."""
        return {
            "scenario": self.scenario,
            "budget_ms": self.budget.total_ms,
            "percentile": self.budget.percentile,
            "stage": self.stage,
            "seed": self.seed,
            "samples": self.samples,
            "target_calls": self.target_calls,
            "traffic": self.traffic.model_dump()
            | {
                "request_rate_per_s_per_call": self.traffic.request_rate_per_s(1),
                "prompt_tokens_range": list(self.traffic.prompt_tokens_range),
            },
            "deployments": [d.to_dict() for d in self.deployments],
            "front": list(self.front),
            "notes": list(self.notes),
        }


def _stage_path(tree: Any, name: str) -> TreePath | None:
    """Where the stage called ``name`` sits in a tree (the shallowest, then the first in tree order), inside
    councils and reply caches too (``cache_miss``: the LLM behind a cache); ``None`` when there is none."""
    found = [path for path, _ in walk(tree) if path and path[-1] == name]
    return min(found, key=len) if found else None


def _find_stage(pipeline: Any, name: str) -> Any:
    path = _stage_path(pipeline, name)
    return None if path is None else next(node for p, node in walk(pipeline) if p == path)


def deployments_from_scenario(scenario: Scenario, stage: str = "llm") -> list[LoadModel]:
    """One deployment per pipeline (baseline and variants) whose ``stage`` is a modelled (gpu, wafer...) or
    api stage.

    A modelled stage's own ``concurrency`` is read as its batch policy: at most that many requests
    in flight (``max_concurrency``); the load sets how many are in flight below that cap.

    :raises ScenarioError: no pipeline has such a stage (the message says which kinds are allowed).
    """
    out: list[LoadModel] = []
    for name, pipeline in scenario.pipelines().items():
        s = _find_stage(pipeline, stage)
        if isinstance(s, ModelledStage):
            out.append(ModelledDeployment(name, s, max_concurrency=s.concurrency))
        elif isinstance(s, APIStage):
            out.append(HostedDeployment(name, s))
    if not out:
        raise ScenarioError(
            f"no pipeline has a {stage!r} stage of kind gpu, wafer or api; capacity needs a modelled or hosted "
            f"LLM stage (or give {param('hardware')} and {param('model')})",
            origin=scenario.origin,
            field=f"pipeline.{stage}",
        )
    return out


def find_capacity(
    percentile_at: Callable[[int], float], budget_ms: float, max_calls: int = MAX_CALLS
) -> tuple[int, list[tuple[int, float]]]:
    """The largest ``calls`` in ``[0, max_calls]`` with ``percentile_at(calls) <= budget_ms``.

    Doubling from 1, then bisection: ``2 log2(answer)`` evaluations. Assumes ``percentile_at`` does
    not decrease with calls (``inf`` = overloaded).

    :returns: (the capacity, the evaluated ``(calls, latency)`` pairs sorted by calls).
    """
    seen: dict[int, float] = {}

    def ok(c: int) -> bool:
        if c not in seen:
            seen[c] = percentile_at(c)
        return seen[c] <= budget_ms

    if not ok(1):
        return 0, sorted(seen.items())
    lo, hi = 1, 2
    while hi <= max_calls and ok(hi):
        lo, hi = hi, hi * 2
    if hi > max_calls:
        return max_calls if ok(max_calls) else lo, sorted(seen.items())
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo, sorted(seen.items())


@dataclass(frozen=True)
class _Job:
    """One deployment's capacity search (picklable: it runs on worker processes or Dask)."""

    deployment: Any
    pipeline: Any
    stage: str
    budget: Budget
    traffic: CallTraffic
    samples: int
    seed: int
    target_calls: int | None


def _evaluate_job(job: _Job) -> DeploymentCapacity:
    d, traffic = job.deployment, job.traffic
    points: dict[int, CapacityPoint] = {}
    base_tree = job.pipeline.to_tree() if isinstance(job.pipeline, VoiceTurn) else job.pipeline
    stage_path = _stage_path(base_tree, job.stage)
    if stage_path is None:
        raise ScenarioError(f"the pipeline has no stage {job.stage!r} to replace", field=f"pipeline.{job.stage}")

    def at(calls: int) -> float:
        rate = traffic.request_rate_per_s(calls)
        try:
            stage = d.stage_at(calls, traffic)
        except Overloaded as exc:
            points[calls] = CapacityPoint(calls, rate, None, math.inf, exc.limit)
            return math.inf
        tree = replace(base_tree, stage_path, stage)
        total = evaluate(tree, job.samples, job.seed).total
        value = float(percentiles(total, [job.budget.percentile], work=total)[0])  # np.percentile's value, O(n)
        points[calls] = CapacityPoint(
            calls, rate, getattr(stage, "concurrency", None) if not isinstance(stage, APIStage) else None, value
        )
        return value

    bound = d.max_calls_by_rate_limit(traffic) if isinstance(d, HostedDeployment) else None
    if isinstance(d, HostedDeployment) and bound is None:
        # the latency does not depend on the load: within budget at one call, within it at any number
        # (no limit given); over it at one call, over it at any: 0 calls, whatever the limits
        cap, limit = (None, "no limit") if at(1) <= job.budget.total_ms else (0, "budget")
    else:
        cap_found, _ = find_capacity(at, job.budget.total_ms, max_calls=bound if bound is not None else MAX_CALLS)
        cap = cap_found
        nxt = points.get(cap + 1)
        if cap == 0:
            first = points[1]
            limit = first.limit or "budget"
        elif bound is not None and cap >= bound:
            limit = "rate limit"
        elif cap >= MAX_CALLS:
            limit = "search bound"
        else:
            limit = nxt.limit if nxt is not None and nxt.limit else "budget"
    at_max = points.get(cap if cap else 1)
    cost_calls = cap if cap else 1
    chips = d.chips()
    replicas = None
    if job.target_calls is not None and cap:
        replicas = math.ceil(job.target_calls / cap)
    elif job.target_calls is not None and cap is None:
        replicas = 1
    return DeploymentCapacity(
        name=d.name,
        description=d.describe(),
        max_concurrent_calls=cap,
        limited_by=limit,
        percentile_ms_at_max=(at_max.percentile_ms if at_max and math.isfinite(at_max.percentile_ms) else None),
        cost_per_call_minute=(
            d.cost_per_call_minute(cost_calls, traffic) if cap != 0 or isinstance(d, HostedDeployment) else None
        ),
        chips=chips,
        calls_per_chip=(cap / chips) if (cap is not None and chips) else None,
        replicas_for_target=replicas,
        chips_for_target=(replicas * chips) if (replicas is not None and chips) else None,
        curve=tuple(points[c] for c in sorted(points)),
    )


def _check_contexts(deployments: list[LoadModel], traffic: CallTraffic, origin: str) -> None:
    """Refuse, before the search, traffic a self-hosted deployment's model cannot hold at any load."""
    for d in deployments:
        if isinstance(d, ModelledDeployment):
            try:
                d.check_context(traffic)
            except ScenarioError as exc:
                raise ScenarioError(f"deployment {d.name!r}: {exc.detail}", origin=origin, field="traffic") from None


def _mark_front(results: list[DeploymentCapacity]) -> list[DeploymentCapacity]:
    """Mark the deployments that no other beats on both cost per call-minute and latency at capacity."""
    points = {
        id(r): (r.cost_per_call_minute, r.percentile_ms_at_max)
        for r in results
        if r.max_concurrent_calls != 0 and r.cost_per_call_minute is not None and r.percentile_ms_at_max is not None
    }

    def dominated(mine: tuple[Any, Any]) -> bool:
        return any(o[0] <= mine[0] and o[1] <= mine[1] and o != mine for o in points.values())

    front = {key for key, mine in points.items() if not dominated(mine)}
    return [DeploymentCapacity(**{**r.__dict__, "on_front": id(r) in front}) for r in results]


def _left_out(pipelines: dict[str, Any], deployments: list[LoadModel], stage: str) -> list[str]:
    """The note naming the scenario's pipelines that are not deployments (their stage is a council, a
    distribution...): without it a variant disappears from the table without a word."""
    left = [name for name in pipelines if name not in {d.name for d in deployments}]
    if not left:
        return []
    return [f"not deployments (their {stage!r} stage is not a gpu, wafer or api stage): {', '.join(left)}"]


def plan_capacity(
    scenario: Scenario,
    deployments: list[LoadModel] | None = None,
    *,
    traffic: CallTraffic | None = None,
    stage: str = "llm",
    budget: Budget | None = None,
    samples: int = DEFAULT_CAPACITY_SAMPLES,
    seed: int | np.random.Generator | None = None,
    target_calls: int | None = None,
    workers: int = 1,
    scheduler: Any = None,
) -> CapacityResult:
    """How many concurrent calls each deployment carries within the budget, and at what price.

    :param scenario: the voice turn; its baseline pipeline is the turn every deployment is put into.
    :param deployments: default :func:`deployments_from_scenario` (each pipeline's own LLM stage,
        its ``concurrency`` read as the batch cap). A deployment named like a variant is put into
        that variant's pipeline; any other into the baseline's.
    :param traffic: default: the scenario's ``traffic`` table, else :class:`CallTraffic` defaults.
    :param stage: the name of the LLM stage to replace.
    :param budget: default: the scenario's.
    :param samples: turns per load level (>= 100).
    :param seed: default: the scenario's seed; the same for every load level and deployment.
    :param target_calls: also report replicas and chips for this many calls.
    :param workers: local processes for the sweep over deployments; ``scheduler``: a Dask scheduler
        address or client. Results equal the single-process run seed for seed.
    :returns: a :class:`CapacityResult`.
    :raises ScenarioError: no LLM stage to replace, ``samples`` < 100 or too large for memory,
        ``target_calls`` < 1.
    """
    from voicebudget.tuning._executor import map_evaluations

    if samples < 100:
        raise ScenarioError(f"samples must be >= 100 for a percentile, got {samples}", field="samples")
    if target_calls is not None and target_calls < 1:
        raise ScenarioError(f"target calls must be >= 1, got {target_calls}", field="target_calls")
    budget = budget or scenario.budget
    traffic = traffic or scenario.traffic or CallTraffic()
    seed_int = resolve_seed(scenario.seed if seed is None else seed)
    pipelines = scenario.pipelines()
    from_scenario = deployments is None
    deployments = deployments if deployments is not None else deployments_from_scenario(scenario, stage)
    if _find_stage(scenario.pipeline, stage) is None:
        raise ScenarioError(
            f"the pipeline has no stage {stage!r} to replace", origin=scenario.origin, field=f"pipeline.{stage}"
        )
    tree = scenario.pipeline.to_tree() if isinstance(scenario.pipeline, VoiceTurn) else scenario.pipeline
    levels = 2 * MAX_CALLS.bit_length()  # the search's evaluations per deployment, at most (find_capacity)
    nodes = sum(1 for _ in walk(tree))
    check_work(
        samples,
        nodes * levels * len(deployments),
        what=f"{len(deployments):,} deployments x up to {levels} load levels x {nodes:,} stages",
        fewer="deployments",
    )
    check_memory(
        samples, lambda k: evaluate(tree, k, seed_int), what="the pipeline", copies=workers if scheduler is None else 1
    )
    _check_contexts(deployments, traffic, scenario.origin)
    jobs = [
        _Job(d, pipelines.get(d.name, scenario.pipeline), stage, budget, traffic, samples, seed_int, target_calls)
        for d in deployments
    ]
    outcomes = map_evaluations(_evaluate_job, jobs, workers=workers, scheduler=scheduler, batch_size=1)
    results: list[DeploymentCapacity] = []
    for o in outcomes:
        if o.failure is not None:
            raise ScenarioError(
                f"deployment {jobs[o.index].deployment.name!r}: {o.failure.error}", origin=scenario.origin
            )
        assert o.value is not None
        results.append(o.value)
    notes = [
        "latency is the whole voice turn (every stage of the scenario), at the budget's percentile",
        "GPUs: Poisson arrivals through a chunked-prefill scheduler model (TTFT p50/p90/p99, queueing "
        "included); wafer/LPU: Little's law at the request rate; hosted APIs: the measured latency, "
        "independent of your load, bounded by the rate limits given",
    ]
    if any(isinstance(d, ModelledDeployment) for d in deployments):
        notes.append(
            "batch cap (a gpu/wafer stage's concurrency): at most that many requests in flight, the load "
            "deciding how many (run holds a stage's concurrency always in flight)"
        )
    notes += sorted(
        {
            f"{d.name}: {reach[1]}"
            for d in deployments
            if isinstance(d, ModelledDeployment) and (reach := d.stage.hosted_path()) is not None
        }
    )
    if traffic.prefix_caching:
        notes.append(
            "prefix caching: only each turn's new tokens are prefilled; the cached prefix's KV reads "
            "are not charged (an optimistic bound)"
        )
    notes += _left_out(pipelines, deployments, stage) if from_scenario else []
    if scenario.traffic is None and traffic == CallTraffic():
        notes.append("traffic: CallTraffic defaults (assumptions; set a [traffic] table)")
    return CapacityResult(
        scenario.name,
        budget,
        traffic,
        stage,
        seed_int,
        samples,
        target_calls,
        tuple(_mark_front(results)),
        tuple(notes),
    )


def deployments_from_options(
    scenario: Scenario,
    *,
    hardware: str,
    model: str,
    chips: int | None = None,
    precision: str | None = None,
    batch_caps: tuple[int | None, ...] = (None,),
    stage: str = "llm",
    usd_per_chip_hour: float | None = None,
) -> list[LoadModel]:
    """Deployments of ``model`` on ``hardware``, one per batch cap (the fast-mode curve).

    The stage keeps the scenario's first-phrase tokens, output tokens and jitter when its own LLM stage
    is a modelled stage (else the stage defaults), and a wafer stage's ``path`` and ``hosted_overhead``
    when both are wafer stages (default: the hosted path of a hosted chip): the fields both kinds carry
    (:attr:`~voicebudget.inference.ModelledStage.carried_fields`). The kind follows the hardware
    (:func:`~voicebudget.inference._stage.stage_class_for`: gpu for HBM, wafer for SRAM).

    :param batch_caps: requests in flight at most, per deployment (``None``: memory only).
    :raises ScenarioError: unknown model/hardware, or the model does not fit the chips.
    """

    from pydantic import ValidationError

    base = _find_stage(scenario.pipeline, stage)
    try:
        kind = stage_class_for(hardware)
        keep: dict[str, Any] = {}
        if isinstance(base, ModelledStage):  # e.g. a wafer stage's choice of path carries over to a wafer
            keep = {f: getattr(base, f) for f in kind.carried_fields if f in base.carried_fields}
        llm = kind(model=model, hardware=hardware, chips=chips, precision=precision, **keep)
    except ValidationError as exc:  # the stage's own check (e.g. does not fit): its message, not pydantic's frame
        err = exc.errors()[0]
        cause = err.get("ctx", {}).get("error")
        message = str(cause) if cause is not None else err["msg"]
        raise ScenarioError(message, origin=f"{param('hardware')}/{param('model')}") from None
    except (VoiceBudgetError, ValueError) as exc:
        raise ScenarioError(str(exc).splitlines()[-1].strip(), origin=f"{param('hardware')}/{param('model')}") from None
    label = f"{model} {llm.predict().chips}x {hardware}" + (f" {precision}" if precision else "")
    out: list[LoadModel] = [
        ModelledDeployment(
            label if cap is None else f"{label} cap {cap}",
            llm,
            max_concurrency=cap,
            usd_per_chip_hour=usd_per_chip_hour,
        )
        for cap in batch_caps
    ]
    return out


def plan_capacity_file(
    path: str | Any,
    *,
    hardware: str | None = None,
    model: str | None = None,
    chips: int | None = None,
    precision: str | None = None,
    batch_caps: tuple[int | None, ...] = (None,),
    usd_per_chip_hour: float | None = None,
    budget_ms: float | None = None,
    percentile: float | None = None,
    traffic_overrides: dict[str, Any] | None = None,
    **kwargs: Any,
) -> CapacityResult:
    """:func:`plan_capacity` on a scenario file (what ``voicebudget capacity`` runs).

    With ``hardware`` and ``model``, the deployments are that model on that hardware, one per batch cap
    (:func:`deployments_from_options`); without them, the scenario's own pipelines
    (:func:`deployments_from_scenario`).

    :param traffic_overrides: fields of :class:`CallTraffic` to change (e.g. ``turns_per_call_minute``).
    :param kwargs: passed to :func:`plan_capacity` (``samples``, ``seed``, ``target_calls``, ``workers``...).
    :raises ScenarioError: invalid file or options (the message names the file, field or option).
    """
    from pydantic import ValidationError

    scenario = load_scenario(path)
    budget = with_overrides(scenario.budget, budget_ms, percentile)
    traffic = scenario.traffic or CallTraffic()
    if traffic_overrides:
        try:
            traffic = CallTraffic(**(traffic.model_dump() | traffic_overrides))
        except ValidationError as exc:
            err = exc.errors()[0]
            key = ".".join(str(p) for p in err["loc"]) or "traffic_overrides"
            raise ScenarioError(  # named as the override's key: the CLI shows the flag that set it
                f"{err['msg']}, got {err.get('input')!r}", origin=param(key, f"traffic_overrides[{key!r}]")
            ) from None
    if (hardware is None) != (model is None):
        raise ScenarioError(
            f"give both {param('hardware')} and {param('model')} (or neither, to use the scenario's own LLM stages)",
            origin=f"{param('hardware')}/{param('model')}",
        )
    ignored = [
        name
        for name, given in (
            (param("chips"), chips is not None),
            (param("precision"), precision is not None),
            (param("batch_caps"), tuple(batch_caps) != (None,)),
            (param("usd_per_chip_hour"), usd_per_chip_hour is not None),
        )
        if given
    ]
    if hardware is None and ignored:
        raise ScenarioError(
            f"appl{'ies' if len(ignored) == 1 else 'y'} only with {param('hardware')} and {param('model')} (that "
            f"model's deployments, one per {param('batch_caps')} value); without them the scenario's "
            "own LLM stages are used as the file configures them",
            origin=", ".join(ignored),
        )
    stage = kwargs.pop("stage", "llm")
    deployments = None
    if hardware is not None and model is not None:
        deployments = deployments_from_options(
            scenario,
            hardware=hardware,
            model=model,
            chips=chips,
            precision=precision,
            batch_caps=batch_caps,
            stage=stage,
            usd_per_chip_hour=usd_per_chip_hour,
        )
    return plan_capacity(scenario, deployments, traffic=traffic, stage=stage, budget=budget, **kwargs)
