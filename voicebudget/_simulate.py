"""Monte Carlo simulation of a scenario: every variant on common random numbers."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from voicebudget._algebra import Buffers, evaluate_into, leaves, walk
from voicebudget._budget import Budget, with_overrides
from voicebudget._errors import ModelError, ScenarioError, param
from voicebudget._io import Roots
from voicebudget._memory import check_memory, check_work
from voicebudget._report import LatencyStats, Report, build_report
from voicebudget._scenario import Scenario, load_scenario
from voicebudget._voice_turn import VoiceTurn

__all__ = ["RunResult", "resolve_seed", "run_scenarios", "simulate", "simulate_pipeline"]


@dataclass(frozen=True)
class RunResult:
    """All variants of one scenario run.

    :ivar reports: one :class:`Report` per variant, baseline first.
    :ivar descriptions: variant name -> its ``description`` (the baseline's is the scenario's).
    :ivar costs: variant name -> US dollars per turn at list price, for variants whose ``api`` stages
        give prices and tokens per turn (the stage's ``prompt_tokens``/``output_tokens``, else the
        scenario's ``[traffic]``); variants without are absent.
    :ivar wafer_paths: variant name -> one row per ``wafer`` stage: ``{"stage", "path", "note"}``, where
        ``path`` is ``"hosted"`` (the provider's network + overhead added to chip time) or ``"on-prem"``
        (chip time only); variants without wafer stages are absent.
    :ivar unpriced: variants whose ``api`` stages give a price but no tokens per turn (so no cost).
    :ivar concurrency: variant name -> one row per modelled stage (``gpu``, ``wafer``):
        ``{"stage", "concurrency", "note"}``; ``run`` holds a stage's ``concurrency`` requests always in
        flight (a closed loop), where ``capacity`` reads the same field as a batch cap (at most that many);
        the note says so. Variants without modelled stages are absent.
    """

    scenario: str
    seed: int
    samples: int
    budget: Budget
    reports: tuple[Report, ...]
    descriptions: dict[str, str] = field(default_factory=dict)
    costs: dict[str, float] = field(default_factory=dict)
    wafer_paths: dict[str, tuple[dict[str, str], ...]] = field(default_factory=dict)
    unpriced: tuple[str, ...] = ()
    concurrency: dict[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """Every variant within budget."""
        return all(r.passed for r in self.reports)

    def report(self, name: str) -> Report:
        """The report of variant ``name``.

        :raises KeyError: no such variant (the message lists them).
        """
        for r in self.reports:
            if r.name == name:
                return r
        raise KeyError(f"no variant {name!r}; variants: {[r.name for r in self.reports]}")

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON document of ``voicebudget run --format json`` (see docs/cli.md)."""
        return {
            "scenario": self.scenario,
            "seed": self.seed,
            "samples": self.samples,
            "budget": {"total_ms": self.budget.total_ms, "percentile": self.budget.percentile},
            "variants": [
                {
                    **r.to_dict(),
                    "description": self.descriptions.get(r.name, ""),
                    "cost_per_turn_usd": self.costs.get(r.name),
                    "wafer_paths": list(self.wafer_paths.get(r.name, ())),
                    "concurrency": list(self.concurrency.get(r.name, ())),
                }
                for r in self.reports
            ],
        }


def resolve_seed(seed: int | np.random.Generator | None) -> int:
    """A recordable integer seed: ``seed`` itself, one drawn from a Generator, or fresh OS entropy."""
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(0, 2**63 - 1))
    if seed is None:
        return int(np.random.SeedSequence().entropy % (2**63 - 1))  # type: ignore[operator]
    return int(seed)


def simulate_pipeline(
    pipeline: Any,
    budget: Budget | None = None,
    *,
    samples: int = 200_000,
    seed: int | np.random.Generator | None = None,
    name: str = "baseline",
) -> Report:
    """Simulate one pipeline and judge it.

    :param pipeline: a :class:`VoiceTurn`, a combinator tree or a single stage.
    :param budget: default ``Budget()`` (800 ms at p95).
    :param samples: number of simulated turns, >= 1.
    :param seed: an int, a ``numpy.random.Generator`` (one int is drawn from it) or None (fresh
        entropy); the int used is recorded in the report.
    :returns: a :class:`Report` with tail attribution along the critical path.
    :raises ValueError: ``samples < 1`` or duplicate stage names.
    """
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    budget = budget or Budget()
    seed_int = resolve_seed(seed)
    nodes = stage_nodes(pipeline)
    check_work(samples, nodes, what=f"{nodes:,} stages")
    check_memory(samples, lambda k: _judge(pipeline, budget, k, seed_int, name))
    return _judge(pipeline, budget, samples, seed_int, name)


def stage_nodes(pipeline: Any) -> int:
    """Stage nodes a turn of ``pipeline`` evaluates: every node of its tree (combinators, leaves, council
    members, cache paths), for the work guard (:func:`~voicebudget._memory.check_work`)."""
    tree = pipeline.to_tree() if isinstance(pipeline, VoiceTurn) else pipeline
    return sum(1 for _ in walk(tree))


def _judge(pipeline: Any, budget: Budget, samples: int, seed: int, name: str, run: _Run | None = None) -> Report:
    run = run or _Run(samples)
    tree = pipeline.to_tree() if isinstance(pipeline, VoiceTurn) else pipeline
    buffers = run.buffers
    ev = evaluate_into(tree, samples, seed, buffers)
    specs = leaves(tree)
    prints = {key: _fingerprint(ev.stages[key]) for key in specs}  # before the report reorders them
    report = build_report(
        name,
        budget,
        ev.total,
        ev.stages,
        contributions=ev.contributions,
        seed=seed,
        server_side_less="transport" if isinstance(pipeline, VoiceTurn) else None,
        part_contributions=ev.part_contributions if ev.parts else None,
        known_stats=run.known(specs, prints),
        reorder={key for key, arr in ev.stages.items() if buffers.lent(arr) and arr is not ev.total},
    )
    run.remember(specs, prints, report)
    buffers.keep(ev.total)  # the report's total_samples_ms
    buffers.give(*ev.stages.values())
    return report


class _Run:
    """What the variants of one run share: the stats of their common stages, and the buffers.

    Under common random numbers a leaf stage with the same name and an equal spec draws the same
    samples in every variant of a run (same seed, same number of turns), so its percentiles are the
    same: a later variant takes them from the first. A strided fingerprint of the samples (1/1000 of
    them) is compared too, so a stage whose samples differ after all is summarised again.

    Every variant draws its stages into the same :class:`~voicebudget._algebra.Buffers` (``float64[n]``
    each; a variant gives them back once its report is built, but its total, which the report keeps):
    on a loaded machine a fresh 16 MB array (2M turns) costs up to ~30 ms of page faults (transparent
    huge pages compacted on first touch), more than its use.
    """

    def __init__(self, samples: int) -> None:
        self._seen: dict[str, list[tuple[Any, Any, LatencyStats]]] = {}
        self.buffers = Buffers(samples)

    def known(self, leaves: dict[str, Any], prints: dict[str, Any]) -> dict[str, LatencyStats]:
        """Stage name -> stats already summarised from the same samples in an earlier variant.

        :param prints: stage name -> the fingerprint of its samples in this variant.
        """
        out = {}
        for name, spec in leaves.items():
            for seen_spec, fingerprint, stats in self._seen.get(name, ()):
                if _same_spec(spec, seen_spec) and np.array_equal(prints[name], fingerprint, equal_nan=True):
                    out[name] = stats
                    break
        return out

    def remember(self, leaves: dict[str, Any], prints: dict[str, Any], report: Report) -> None:
        """Keep the report's stats of each leaf stage (and its samples' fingerprint) for the variants after it."""
        for name, spec in leaves.items():
            self._seen.setdefault(name, []).append((spec, prints[name], report.stage(name).stats))


def _fingerprint(samples: Any) -> Any:
    return np.array(samples[:: max(1, len(samples) // 1000)])


def _same_spec(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):  # a spec holding arrays: not comparable this way, summarise again
        return False


def simulate(
    scenario: Scenario,
    *,
    samples: int | None = None,
    seed: int | np.random.Generator | None = None,
    budget: Budget | None = None,
) -> RunResult:
    """Simulate every variant of a scenario on common random numbers.

    Stages that two variants share (same name, same spec) draw identical samples, so differences
    between variants are the change, not noise.

    :param samples: turns per variant (default: the scenario's ``samples``).
    :param seed: default: the scenario's ``seed``.
    :param budget: overrides the scenario's budget.
    """
    n = scenario.samples if samples is None else samples
    seed_int = resolve_seed(scenario.seed if seed is None else seed)
    budget = budget or scenario.budget
    if n < 1:
        raise ValueError(f"samples must be >= 1, got {n}")
    pipelines = scenario.pipelines()

    def run(k: int) -> tuple[Report, ...]:  # every variant; the earlier ones' totals stay in their reports
        shared = _Run(k)  # per run: the stats of a stage depend on the number of turns
        return tuple(_judge(p, budget, k, seed_int, name, shared) for name, p in pipelines.items())

    nodes = sum(stage_nodes(p) for p in pipelines.values())
    try:
        variants = f"{len(pipelines):,} variant{'' if len(pipelines) == 1 else 's'}"
        check_work(n, nodes, what=f"{nodes:,} stages ({variants})", fewer="variants")
        check_memory(n, run, what=f"simulating {len(pipelines)} variant{'' if len(pipelines) == 1 else 's'}")
        reports = run(n)
    except ScenarioError as exc:  # raised while simulating: name the scenario's file (or the argument)
        if exc.field == "samples" and samples is not None:
            raise ScenarioError(exc.detail, origin=param("samples")) from None
        raise ScenarioError(exc.detail, origin=scenario.origin, field=exc.field) from None
    except ModelError as exc:
        raise ModelError(f"{scenario.origin}: {exc}") from None
    descriptions = {"baseline": scenario.description, **scenario.variant_descriptions}
    costs = {
        name: c for name, p in scenario.pipelines().items() if (c := pipeline_cost_per_turn(p, scenario)) is not None
    }
    paths = {name: rows for name, p in pipelines.items() if (rows := wafer_paths(p))}
    unpriced = tuple(name for name, p in pipelines.items() if name not in costs and _priced_api_stages(p))
    loads = {name: rows for name, p in pipelines.items() if (rows := closed_loop_concurrency(p))}
    return RunResult(
        scenario.name,
        seed_int,
        n,
        budget,
        reports,
        {k: v for k, v in descriptions.items() if v},
        costs,
        paths,
        unpriced,
        loads,
    )


def closed_loop_concurrency(pipeline: Any) -> tuple[dict[str, Any], ...]:
    """What each modelled stage's ``concurrency`` means in a simulation: ``{"stage", "concurrency", "note"}``
    per stage, in tree order (``stage`` as in :func:`wafer_paths`). ``run`` keeps that many requests in
    flight on every turn (a closed loop); ``capacity`` reads the same field as a batch cap (at most that
    many, the load deciding how many), and the note says both."""
    from voicebudget.inference._stage import ModelledStage

    return tuple(
        {
            "stage": "/".join((name, *inner)),
            "concurrency": stage.concurrency,
            "note": f"concurrency {stage.concurrency}: always {stage.concurrency} request"
            f"{'' if stage.concurrency == 1 else 's'} in flight (closed loop; capacity reads it as a batch cap: "
            f"at most {stage.concurrency})",
        }
        for name, leaf in leaves(pipeline).items()
        for inner, stage in walk(leaf)
        if isinstance(stage, ModelledStage)
    )


def _priced_api_stages(pipeline: Any) -> bool:
    """A pipeline has an ``api`` stage with a list price (its cost is known once tokens per turn are)."""
    from voicebudget.inference._stage import APIStage

    return any(
        isinstance(s, APIStage) and s.price_per_million_output_tokens is not None for s in leaves(pipeline).values()
    )


def wafer_paths(pipeline: Any) -> tuple[dict[str, str], ...]:
    """How each modelled stage with a hosted path (``wafer``) is reached: ``{"stage", "path", "note"}`` per
    stage, in tree order, inside councils and reply caches too (``stage``: the pipeline stage's name, then
    the path within it, ``llm/cache_miss``; ``path``: ``"hosted"`` or ``"on-prem"``; ``note``: the sentence
    ``run`` prints; :meth:`~voicebudget.inference.ModelledStage.hosted_path`)."""
    from voicebudget.inference._stage import ModelledStage

    return tuple(
        {"stage": "/".join((name, *inner)), "path": reach[0], "note": reach[1]}
        for name, leaf in leaves(pipeline).items()
        for inner, stage in walk(leaf)
        if isinstance(stage, ModelledStage) and (reach := stage.hosted_path()) is not None
    )


def pipeline_cost_per_turn(pipeline: Any, scenario: Scenario | None = None) -> float | None:
    """US dollars per turn at list price of a pipeline's priced ``api`` stages (None when none is priced).

    Tokens per turn come from each stage's ``prompt_tokens``/``output_tokens``, else from the scenario's
    ``[traffic]`` (mean prompt over a call, ``output_tokens``).
    """
    from voicebudget.inference._stage import APIStage

    traffic = scenario.traffic if scenario is not None else None
    total, priced = 0.0, False
    for stage in leaves(pipeline).values():  # a council or cache prices its own paths (its members, miss_usd)
        if not isinstance(stage, APIStage):
            continue
        cost = stage.cost_per_turn_usd(
            None if stage.prompt_tokens is not None or traffic is None else traffic.mean_prompt_tokens,
            None if stage.output_tokens is not None or traffic is None else traffic.output_tokens,
        )
        if cost is not None:
            total, priced = total + cost, True
    return total if priced else None


def run_scenarios(
    paths: Iterable[str | Path],
    *,
    samples: int | None = None,
    seed: int | None = None,
    budget_ms: float | None = None,
    percentile: float | None = None,
    allowed_roots: Roots = (),
) -> list[RunResult]:
    """Load scenario files and simulate each (what ``voicebudget run FILE...`` does).

    :param samples: turns per variant (default: each file's ``samples``).
    :param seed: default: each file's ``seed``.
    :param budget_ms: replaces each file's budget total, ms; ``percentile`` its target percentile.
    :param allowed_roots: further folders that ``file`` references may read from.
    :returns: one :class:`RunResult` per file, in order.
    :raises ScenarioError: an invalid file or override (the message names the file or the option).
    :raises ModelError: a stage model cannot run as configured (the message names the file).
    """
    results = []
    for path in paths:
        scenario = load_scenario(path, allowed_roots=allowed_roots)
        budget = with_overrides(scenario.budget, budget_ms, percentile)
        results.append(simulate(scenario, samples=samples, seed=seed, budget=budget))
    return results
