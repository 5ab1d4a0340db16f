"""Large search spaces: Optuna's NSGA-II multi-objective sampler picks which configurations to run.

Each knob of the space becomes a categorical parameter; a suggestion that is not a configuration of
the space (e.g. ``k`` larger than the council) is told to Optuna as pruned. Infeasible
configurations are told with their real objectives plus a constraint violation (NSGA-II's
constrained domination), evaluation errors as failed trials; repeated suggestions are not
re-evaluated. Deterministic for a given seed and space.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from voicebudget.councils._topologies import get_topology
from voicebudget.tuning._executor import map_evaluations
from voicebudget.tuning._space import Configuration

__all__ = ["optuna_search"]

_KNOBS = ("members", "topology", "k", "m", "rule", "aggregator", "cache", "concurrency")


def _key(config: Configuration) -> tuple[tuple[str, Any], ...]:
    return tuple((k, config[k]) for k in _KNOBS if k in config)


def optuna_search(
    evaluator: Callable[[tuple[int, Configuration]], Any],
    configs: list[Configuration],
    trials: int,
    seed: int,
    workers: int,
    scheduler: Any,
    progress: Callable[[int, int], None] | None,
    batch: int = 64,
) -> tuple[list[Any], list[dict[str, Any]]]:
    """Run ``trials`` Optuna trials over ``configs``; returns (candidates, errors) like exhaustive."""
    try:
        import optuna
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise ImportError("sampling it needs Optuna: pip install 'voicebudget[tune]'") from exc
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    index = {_key(c): i for i, c in enumerate(configs)}
    choices = {k: sorted({repr(c[k]) for c in configs if k in c}) for k in _KNOBS}
    values = {k: {repr(c[k]): c[k] for c in configs if k in c} for k in _KNOBS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler = optuna.samplers.NSGAIISampler(seed=seed)
    study = optuna.create_study(directions=["minimize"] * 3, sampler=sampler)
    done: dict[int, Any] = {}
    errors: list[dict[str, Any]] = []
    told = 0
    while told < trials:
        asked = [study.ask() for _ in range(min(batch, trials - told))]
        picks = [_suggest(t, choices, values, index) for t in asked]
        todo = sorted({i for i in picks if i is not None and i not in done})
        for o in map_evaluations(evaluator, [(i, configs[i]) for i in todo], workers=workers, scheduler=scheduler):
            if o.failure is not None:
                errors.append({"config": configs[o.index], "error": o.failure.error})
                done[o.index] = None
            else:
                done[o.index] = o.value
        for trial, i in zip(asked, picks, strict=True):
            _tell(study, trial, None if i is None else done.get(i), optuna)
        told += len(asked)
        if progress:
            progress(told, trials)
    return [c for c in done.values() if c is not None], errors


def _suggest(
    trial: Any,
    choices: dict[str, list[str]],
    values: dict[str, dict[str, Any]],
    index: dict[tuple[tuple[str, Any], ...], int],
) -> int | None:
    picked = {k: values[k][trial.suggest_categorical(k, choices[k])] for k in _KNOBS if choices[k]}
    topology = get_topology(picked["topology"])  # every configuration names its topology
    relevant = {knob: value for knob, value in picked.items() if topology.applies(knob)}
    return index.get(tuple((k, relevant[k]) for k in _KNOBS if k in relevant))


def _tell(study: Any, trial: Any, candidate: Any, optuna: Any) -> None:
    if candidate is None or candidate.skipped is not None:
        study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        return
    # NSGA-II's constrained domination: <= 0 feasible (within budget and cost limit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        trial.set_constraint("within_budget_and_cost", 0.0 if candidate.feasible else 1.0)
    study.tell(trial, list(candidate.objectives()))
