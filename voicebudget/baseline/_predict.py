"""Predicted vs measured: did the change do what the model said?

A scenario (often one fitted to the traces of the old agent, ``voicebudget fit``) and a variant of it (the change:
another LLM, a faster TTS) predict how much each measure moves: simulate the variant and the baseline variant on
common random numbers (the stages they share draw the same samples) and take the difference of their percentiles.
Measure the old agent (the baseline) and the new one, and ``compare`` gives the measured difference with its
bootstrap interval. This module checks the two against each other, per measure and percentile.

The simulated difference's interval is its Monte Carlo error by **sectioning** (batch means): the simulated turns
are split into ``k`` sections of consecutive turns, independent under the engine's sampling, the difference is
computed in each, and ``estimate +/- t_(k-1) * sd / sqrt(k)`` is the interval (Asmussen & Glynn 2007, *Stochastic
Simulation: Algorithms and Analysis*, Springer, chapter III, section 5, "sectioning"; a percentile is a smooth
function of the sample, for which batch means are valid). Student's ``t`` quantile comes from the Cornish-Fisher
expansion of Abramowitz & Stegun, *Handbook of Mathematical Functions* (1964), 26.7.5 (within 1e-4 for
``k - 1 >= 10``).

The gap ``measured - predicted`` gets an interval from the two independent ones, each side's half-width added in
quadrature: ``gap - sqrt((m - m_low)^2 + (p_high - p)^2)`` to ``gap + sqrt((m_high - m)^2 + (p - p_low)^2)``.
Verdicts, with ``t`` the comparison's tolerance for that measure (default the larger of 20 ms and 10% of the
baseline's value, as for a regression):

- ``optimistic``: the gap's interval lies wholly above ``t``: the change was slower than the model said (a smaller
  improvement, or a larger slowdown);
- ``pessimistic``: wholly below ``-t``;
- ``agrees``: otherwise: the measurement does not contradict the prediction beyond the tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from voicebudget._algebra import evaluate
from voicebudget._errors import ScenarioError, param
from voicebudget._memory import check_memory, check_work
from voicebudget._scenario import BASELINE, Scenario, load_scenario
from voicebudget._simulate import resolve_seed, stage_nodes
from voicebudget._voice_turn import VoiceTurn
from voicebudget.baseline._compare import Comparison, Row, SetComparison
from voicebudget.traces._fit import SLOT_OF_COLUMN

__all__ = [
    "DEFAULT_SECTIONS",
    "PredictedSet",
    "Prediction",
    "PredictionRow",
    "SimulatedChange",
    "check_prediction",
    "load_prediction",
    "simulate_change",
    "student_t_quantile",
]

FloatArray = NDArray[np.float64]
PredictionVerdict = Literal["agrees", "optimistic", "pessimistic"]
DEFAULT_SECTIONS = 20
"""Sections of the simulated turns for the Monte Carlo interval (10,000 turns each at the default 200,000)."""
_NORMAL = NormalDist()


def student_t_quantile(p: float, dof: int) -> float:
    """Student's ``t`` quantile ``p`` with ``dof`` degrees of freedom: the Cornish-Fisher expansion of the normal
    quantile (Abramowitz & Stegun 1964, 26.7.5), within 1e-4 of the exact value for ``dof >= 10``.

    :raises ValueError: ``dof < 1`` or ``p`` outside (0, 1).
    """
    if dof < 1 or not 0 < p < 1:
        raise ValueError(f"need dof >= 1 and 0 < p < 1, got dof={dof}, p={p}")
    z = _NORMAL.inv_cdf(p)
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / dof + g2 / dof**2 + g3 / dof**3 + g4 / dof**4


@dataclass(frozen=True)
class Prediction:
    """A change as a model predicts it: ``variant`` of ``scenario`` against ``baseline_variant`` of
    ``baseline_scenario`` (often the same file's ``baseline``).

    :ivar samples: simulated turns (default: the scenario's ``samples``).
    :ivar seed: the simulation's seed (default: the scenario's ``seed``); both variants share it, so the stages they
        share draw the same samples (common random numbers).
    :ivar stage_map: a scenario stage -> the measured stage it predicts, where the names differ. A scenario fitted
        by ``voicebudget fit`` needs none: its ``tts`` and ``framework`` stages are mapped to the trace's
        ``tts_ttfb`` and ``other`` (:data:`voicebudget.traces._fit.SLOT_OF_COLUMN`) when the measured turns have
        those and not the scenario's names.
    :ivar sections: sections of the simulated turns for the Monte Carlo interval (>= 2).
    """

    scenario: Scenario
    variant: str
    baseline_scenario: Scenario
    baseline_variant: str = BASELINE
    samples: int | None = None
    seed: int | None = None
    stage_map: Mapping[str, str] = field(default_factory=dict)
    sections: int = DEFAULT_SECTIONS

    def __post_init__(self) -> None:
        for scenario, variant, name in (
            (self.scenario, self.variant, "variant"),
            (self.baseline_scenario, self.baseline_variant, "baseline_variant"),
        ):
            known = list(scenario.pipelines())
            if variant not in known:
                raise ScenarioError(
                    f"no variant {variant!r} in {scenario.origin}; variants: {', '.join(known)}", origin=param(name)
                )
        if self.sections < 2:
            raise ScenarioError(f"must be >= 2, got {self.sections}", origin=param("sections"))
        n = self.samples if self.samples is not None else self.scenario.samples
        if n < 10 * self.sections:
            raise ScenarioError(
                f"must be at least {10 * self.sections} ({self.sections} sections of 10 turns), got {n}",
                origin=param("samples"),
            )

    def describe(self) -> str:
        """``fitted.toml:faster-llm vs fitted.toml:baseline``."""
        return f"{self.scenario.origin}:{self.variant} vs {self.baseline_scenario.origin}:{self.baseline_variant}"


def load_prediction(
    predicted: str,
    baseline: str | None = None,
    *,
    samples: int | None = None,
    stage_map: Mapping[str, str] | None = None,
) -> Prediction:
    """A :class:`Prediction` from ``SCENARIO:VARIANT`` specs (``voicebudget compare --predicted``).

    :param predicted: ``path/to/scenario.toml:variant``.
    :param baseline: ``path:variant`` of what the change is measured against (default: the same file's
        ``baseline``); a spec without ``:variant`` means that file's ``baseline``.
    :raises ScenarioError: a spec without a variant, an unreadable or invalid scenario, an unknown variant.
    """
    path, variant = _spec(predicted, "predicted", need_variant=True)
    scenario = load_scenario(path)
    if baseline is None:
        base_scenario, base_variant = scenario, BASELINE
    else:
        base_path, base_variant = _spec(baseline, "baseline", need_variant=False)
        base_scenario = scenario if Path(base_path) == Path(path) else load_scenario(base_path)
    return Prediction(scenario, variant, base_scenario, base_variant, samples=samples, stage_map=dict(stage_map or {}))


def _spec(spec: str, name: str, *, need_variant: bool) -> tuple[str, str]:
    if not isinstance(spec, str):
        raise ScenarioError(f"give 'SCENARIO:VARIANT' as text, got {spec!r}"[:200], origin=param(name))
    path, sep, variant = spec.rpartition(":")
    if not sep or not path or Path(spec).suffix.lower() in (".toml", ".yaml", ".yml"):
        if need_variant:
            raise ScenarioError(
                f"give SCENARIO:VARIANT (e.g. fitted.toml:faster-llm), got {spec!r}", origin=param(name)
            )
        return spec, BASELINE
    if not variant:
        raise ScenarioError(f"no variant after ':' in {spec!r}", origin=param(name))
    return path, variant


@dataclass(frozen=True)
class SimulatedChange:
    """The simulated change of one measure at one percentile, ms: ``variant - baseline`` and its Monte Carlo
    interval (sectioning, see the module docstring).

    :ivar measure: the scenario's stage (or ``"total"``).
    """

    measure: str
    q: float
    baseline_ms: float
    variant_ms: float
    estimate_ms: float
    low_ms: float
    high_ms: float
    se_ms: float


def _tree(pipeline: Any) -> Any:
    return pipeline.to_tree() if isinstance(pipeline, VoiceTurn) else pipeline


def _columns(pipeline: Any, n: int, seed: int) -> dict[str, FloatArray]:
    ev = evaluate(_tree(pipeline), n, seed)
    return {"total": ev.total, **ev.groups, **ev.stages}


def simulate_change(prediction: Prediction, qs: Sequence[float], level: float) -> dict[str, list[SimulatedChange]]:
    """Simulate both variants on common random numbers and take, for the total and every stage (and group) both
    have, the difference of their percentiles with its Monte Carlo interval.

    :param qs: percentiles in [0, 100].
    :param level: the two-sided level of the intervals, in (0, 1).
    :returns: measure -> one :class:`SimulatedChange` per percentile in ``qs``.
    :raises ScenarioError: a variant the scenario lacks (naming it and the known ones), or more simulated turns
        than the work or memory guard allows (naming ``samples``, or the scenario's file when the turns are its own).
    """
    base_pipeline = prediction.baseline_scenario.pipelines()[prediction.baseline_variant]
    new_pipeline = prediction.scenario.pipelines()[prediction.variant]
    n = prediction.samples if prediction.samples is not None else prediction.scenario.samples
    seed = resolve_seed(prediction.seed if prediction.seed is not None else prediction.scenario.seed)
    nodes = stage_nodes(base_pipeline) + stage_nodes(new_pipeline)
    try:  # the guards of `run`: a prediction simulates two variants of the scenario
        check_work(n, nodes, what=f"{nodes:,} stages (2 variants)")
        check_memory(
            n, lambda k: (_columns(base_pipeline, k, seed), _columns(new_pipeline, k, seed)), what="the prediction"
        )
    except ScenarioError as exc:
        if prediction.samples is not None:
            raise ScenarioError(exc.detail, origin=param("samples")) from None
        raise ScenarioError(exc.detail, origin=prediction.scenario.origin, field=exc.field) from None
    base = _columns(base_pipeline, n, seed)
    new = _columns(new_pipeline, n, seed)
    k = prediction.sections
    t = student_t_quantile(1 - (1 - level) / 2, k - 1)
    out: dict[str, list[SimulatedChange]] = {}
    for measure in [m for m in new if m in base]:
        b, v = base[measure], new[measure]
        if np.all(np.isnan(b)) or np.all(np.isnan(v)):
            continue
        whole_b = np.nanpercentile(b, qs)
        whole_v = np.nanpercentile(v, qs)
        sections = np.array(
            [np.nanpercentile(vs, qs) - np.nanpercentile(bs, qs) for bs, vs in zip(*_split(b, v, k), strict=True)]
        )  # float64[k, len(qs)]
        se = np.std(sections, axis=0, ddof=1) / math.sqrt(k)
        out[measure] = [
            SimulatedChange(
                measure,
                float(q),
                float(wb),
                float(wv),
                float(wv - wb),
                float(wv - wb - t * s),
                float(wv - wb + t * s),
                float(s),
            )  # fmt: skip
            for q, wb, wv, s in zip(qs, whole_b, whole_v, se, strict=True)
        ]
    return out


def _split(b: FloatArray, v: FloatArray, k: int) -> tuple[list[FloatArray], list[FloatArray]]:
    """The paired turns in ``k`` sections of consecutive turns (a section where the stage never ran is left out)."""
    pairs = [
        (bs, vs)
        for bs, vs in zip(np.array_split(b, k), np.array_split(v, k), strict=True)
        if not (np.all(np.isnan(bs)) or np.all(np.isnan(vs)))
    ]
    return [p[0] for p in pairs], [p[1] for p in pairs]


@dataclass(frozen=True)
class PredictionRow:
    """One measure at one percentile: the predicted change against the measured one.

    :ivar measure: the measured stage (or ``"total"``); ``simulated`` the scenario's stage that predicts it.
    :ivar predicted: the simulated change and its Monte Carlo interval.
    :ivar measured_ms: the measured change (new - baseline), with ``measured_low_ms``/``measured_high_ms`` its
        bootstrap interval (from the comparison's row).
    :ivar gap_ms: ``measured - predicted``, with ``gap_low_ms``/``gap_high_ms`` (both intervals, in quadrature).
    :ivar tolerance_ms: the comparison's tolerance for the measure.
    """

    measure: str
    simulated: str
    q: float
    predicted: SimulatedChange
    measured_ms: float
    measured_low_ms: float
    measured_high_ms: float
    gap_ms: float
    gap_low_ms: float
    gap_high_ms: float
    tolerance_ms: float
    verdict: PredictionVerdict

    @property
    def label(self) -> str:
        return f"p{self.q:g}"

    @property
    def missed(self) -> bool:
        return self.verdict != "agrees"

    def sentence(self) -> str:
        """``the model predicted -140.0 ms (-165.0 ... -118.0) at p95; measured -95.0 (-130.0 ... -60.0): the model
        was optimistic by about 45 ms on llm``."""
        p = self.predicted
        head = (
            f"the model predicted {p.estimate_ms:+.1f} ms ({p.low_ms:+.1f} ... {p.high_ms:+.1f}) at {self.label}; "
            f"measured {self.measured_ms:+.1f} ({self.measured_low_ms:+.1f} ... {self.measured_high_ms:+.1f})"
        )
        about = f"about {abs(self.gap_ms):.0f} ms on {'the total' if self.measure == 'total' else self.measure}"
        if self.verdict == "optimistic":
            return f"{head}: the model was optimistic by {about}"
        if self.verdict == "pessimistic":
            return f"{head}: the model was pessimistic by {about}"
        return (
            f"{head}: the measurement agrees with the prediction (gap {self.gap_ms:+.1f} ms, "
            f"{self.gap_low_ms:+.1f} ... {self.gap_high_ms:+.1f}; tolerance {self.tolerance_ms:.1f} ms)"
        )

    def to_dict(self) -> dict[str, Any]:
        p = self.predicted
        return {
            "measure": self.measure,
            "simulated": self.simulated,
            "percentile": self.q,
            "predicted_ms": p.estimate_ms,
            "predicted_low_ms": p.low_ms,
            "predicted_high_ms": p.high_ms,
            "predicted_se_ms": p.se_ms,
            "simulated_baseline_ms": p.baseline_ms,
            "simulated_variant_ms": p.variant_ms,
            "measured_ms": self.measured_ms,
            "measured_low_ms": self.measured_low_ms,
            "measured_high_ms": self.measured_high_ms,
            "gap_ms": self.gap_ms,
            "gap_low_ms": self.gap_low_ms,
            "gap_high_ms": self.gap_high_ms,
            "tolerance_ms": self.tolerance_ms,
            "verdict": self.verdict,
            "sentence": self.sentence(),
        }


def prediction_row(measure: str, simulated: SimulatedChange, row: Row) -> PredictionRow:
    """Check one comparison row (with an interval) against its simulated change (see the module docstring for
    the gap's interval and the verdicts)."""
    iv = row.interval
    assert iv is not None
    m, p = iv.estimate_ms, simulated.estimate_ms
    gap = m - p
    low = gap - math.hypot(m - iv.low_ms, simulated.high_ms - p)
    high = gap + math.hypot(iv.high_ms - m, p - simulated.low_ms)
    t = row.tolerance_ms
    verdict: PredictionVerdict = "optimistic" if low > t else "pessimistic" if high < -t else "agrees"
    return PredictionRow(
        measure, simulated.measure, row.q, simulated, m, iv.low_ms, iv.high_ms, gap, low, high, t, verdict
    )


@dataclass(frozen=True)
class PredictedSet:
    """The prediction checked on one compared set.

    :ivar rows: one per measure the scenario predicts and percentile compared, in the comparison's order.
    :ivar notes: measures without a counterpart on the other side (not checked).
    """

    name: str
    rows: tuple[PredictionRow, ...]
    notes: tuple[str, ...] = ()

    @property
    def missed(self) -> tuple[PredictionRow, ...]:
        return tuple(r for r in self.rows if r.missed)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "rows": [r.to_dict() for r in self.rows], "notes": list(self.notes)}


def check_prediction(comparison: Comparison, prediction: Prediction) -> Comparison:
    """The comparison with the prediction checked on each of its sets (:attr:`Comparison.predicted`): every
    measure with an interval that a scenario stage predicts (same name, :attr:`Prediction.stage_map`, or the
    name a fit gave the trace's column), at each compared percentile.

    :raises ScenarioError: as :func:`simulate_change`; a :attr:`Prediction.stage_map` key that is not a stage both
        variants have (naming ``stage_map`` and the stages).
    """
    qs = sorted({r.q for s in comparison.sets for r in s.rows})
    simulated = simulate_change(prediction, qs, comparison.settings.level) if qs else {}
    hint = comparison.settings.spell("stage_map")
    unknown = [k for k in prediction.stage_map if simulated and k not in simulated]
    if unknown:  # it would take the measured stage's own prediction away, and predict it by nothing
        stages = ", ".join(m for m in simulated if m != "total")
        raise ScenarioError(
            f"no stage {unknown[0]!r} in both {prediction.describe()}; stages: {stages}", origin=param("stage_map")
        )
    sets = tuple(_predicted_set(s, simulated, prediction, hint) for s in comparison.sets)
    return replace(comparison, predicted=sets, prediction=prediction.describe())


def _predicted_set(
    s: SetComparison, simulated: Mapping[str, list[SimulatedChange]], p: Prediction, hint: str
) -> PredictedSet:
    by_measured = {v: k for k, v in p.stage_map.items()}
    rows: list[PredictionRow] = []
    unpredicted: list[str] = []
    used: set[str] = set()
    for row in s.rows:
        if row.interval is None:
            continue
        sim = by_measured.get(row.measure, row.measure)
        if sim not in simulated:
            sim = SLOT_OF_COLUMN.get(row.measure, sim)
        changes = {c.q: c for c in simulated.get(sim, ())}
        if row.q not in changes:
            if row.measure not in unpredicted:
                unpredicted.append(row.measure)
            continue
        used.add(sim)
        rows.append(prediction_row(row.measure, changes[row.q], row))
    notes = [f"no stage of the scenario predicts {m!r} (map one: {hint})" for m in unpredicted]
    measured = {r.measure for r in s.rows}
    notes += [
        f"{hint}: no measured stage {m!r} for {k!r} to predict" for k, m in p.stage_map.items() if m not in measured
    ]
    moved = [m for m, cs in simulated.items() if m not in used and m != "total" and any(c.estimate_ms != 0 for c in cs)]
    if moved:
        notes.append(f"the model predicts a change of {', '.join(moved)}, which the measured turns do not have")
    return PredictedSet(s.name, tuple(rows), tuple(notes))
