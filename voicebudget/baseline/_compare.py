"""Compare two sets of measured turns: per stage and total, p50 and the budget's percentile, the difference with a
bootstrap interval, and a verdict against a tolerance (docs/ci.md).

Verdicts, for each measure (the total or a stage) at each percentile, with ``[low, high]`` the interval of
``new - baseline`` at ``level`` and ``t`` the tolerance in ms:

- ``regression``: ``low > t`` (the interval lies wholly above the tolerance: a one-sided test at
  ``(1 - level) / 2``);
- ``improvement``: ``high < -t``;
- ``unchanged``: ``-t <= low`` and ``high <= t`` (no change beyond the tolerance, either way);
- ``noise``: the interval reaches past a tolerance without lying beyond it: the data cannot tell. Every row
  also says the smallest slowdown it would catch 80% of the time, ``t + (z_(1-alpha/2) + z_0.8) * se``;
- ``not comparable``: too few turns for the percentile (a p95 of fewer than 100 turns rests on its few
  slowest), or the stage is on one side only.

Exit codes (:attr:`Comparison.exit_code`): 0 no regression, 1 a regression, 4 not comparable (different
budgets, anchors or totals; a set, a stage or enough turns missing), each with its reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from voicebudget._budget import Budget
from voicebudget._errors import ScenarioError, param
from voicebudget._measured import TurnSet
from voicebudget._tail import rests_on, turns_needed
from voicebudget._text import as_given, count
from voicebudget.baseline._bootstrap import (
    Column,
    DiffInterval,
    column,
    diff_interval,
    draw_percentiles,
)
from voicebudget.baseline._settings import DEFAULT_TOLERANCE, CompareSettings, Tolerance

if TYPE_CHECKING:
    from voicebudget.baseline._predict import PredictedSet, PredictionRow

__all__ = [
    "DEFAULT_TOLERANCE",
    "EXIT_NOT_COMPARABLE",
    "EXIT_OK",
    "EXIT_REGRESSION",
    "TOTAL",
    "CompareSettings",
    "Comparison",
    "Row",
    "SetComparison",
    "Tolerance",
    "compare_sets",
]

EXIT_OK, EXIT_REGRESSION, EXIT_NOT_COMPARABLE = 0, 1, 4
TOTAL = "total"
"""The name of the turn's total among the measures (a stage may not use it)."""
Verdict = Literal["regression", "improvement", "unchanged", "noise", "not comparable"]
MIN_TAIL_TURNS = 5
"""Turns needed beyond a percentile (on its far side) to gate on it: a p95 needs 100 turns, a p50 10. A p95 of
10 turns is the slowest turn's neighbourhood, whatever the bootstrap says."""
MIN_CALLS = 2
"""Calls each side needs for the calls to be resampled as clusters; with fewer the turns are resampled."""
FEW_CALLS = 10
"""Below this many calls on a side, a cluster interval rests on few conversations: the output says so."""
DETECT_POWER = 0.80
"""The smallest detectable difference is the one caught this often (80%, the usual power in planning)."""
_NORMAL = NormalDist()


@dataclass(frozen=True)
class Row:
    """One measure at one percentile.

    :ivar measure: ``"total"`` or a stage.
    :ivar q: the percentile (50, or the budget's).
    :ivar baseline_ms: the baseline's percentile (NaN when the measure is missing there); ``new_ms`` likewise.
    :ivar interval: the bootstrap interval of ``new - baseline``; None when not comparable.
    :ivar tolerance_ms: the tolerance in ms (from :attr:`tolerance`).
    :ivar detectable_ms: the smallest slowdown this comparison catches 80% of the time; None when not comparable.
    :ivar reason: why the row is not comparable, or a warning (few turns, allowed).
    :ivar gated: False for rows that are not gated on (a percentile with too few turns shown for information).
    """

    measure: str
    q: float
    baseline_ms: float
    new_ms: float
    n_baseline: int
    n_new: int
    verdict: Verdict
    interval: DiffInterval | None = None
    tolerance_ms: float = 0.0
    tolerance: Tolerance = DEFAULT_TOLERANCE
    detectable_ms: float | None = None
    reason: str = ""

    @property
    def label(self) -> str:
        return f"p{self.q:g}"

    def sentence(self, level: float) -> str:
        """The row in words: ``total p95: +90.9 ms (+40.1 ... +130.2), over the tolerance of 75.6 ms: regression``."""
        head = f"{self.measure} {self.label}"
        if self.interval is None:
            return f"{head}: not comparable: {self.reason}"
        iv = self.interval
        change = (
            f"{self.baseline_ms:.1f} -> {self.new_ms:.1f} ms, {iv.estimate_ms:+.1f} ms "
            f"({iv.low_ms:+.1f} ... {iv.high_ms:+.1f})"
        )
        tol = f"tolerance {self.tolerance_ms:.1f} ms"
        words = {
            "regression": f"slower beyond the {tol}: regression",
            "improvement": f"faster beyond the {tol}: improvement",
            "unchanged": f"no change beyond the {tol}",
            "noise": f"inside the noise ({tol}); the data would catch a slowdown of about {self.detectable_ms:.0f} ms",
        }
        note = f" [{self.reason}]" if self.reason else ""
        return f"{head}: {change}: {words[self.verdict]}{note}"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "measure": self.measure,
            "percentile": self.q,
            "baseline_ms": _num(self.baseline_ms),
            "new_ms": _num(self.new_ms),
            "n_baseline": self.n_baseline,
            "n_new": self.n_new,
            "verdict": self.verdict,
            "tolerance_ms": self.tolerance_ms,
            "tolerance": self.tolerance.describe(),
        }
        if self.interval is not None:
            iv = self.interval
            d.update(
                difference_ms=iv.estimate_ms, low_ms=iv.low_ms, high_ms=iv.high_ms, se_ms=iv.se_ms,
                detectable_ms=self.detectable_ms,
            )  # fmt: skip
        if self.reason:
            d["reason"] = self.reason
        return d


def _num(x: float) -> float | None:
    return None if math.isnan(x) else x


@dataclass(frozen=True)
class SetComparison:
    """One baseline set against its new set.

    :ivar resampled: ``"calls"`` or ``"turns"``; ``calls`` the number of calls per side when calls are resampled.
    :ivar problems: reasons the set is not comparable as a whole (budgets, anchors); then there are no rows.
    :ivar notes: what the reader should know (few calls, turns resampled because no call ids).
    :ivar turns: the number of turns of the baseline and of the new set.
    """

    name: str
    baseline_name: str
    new_name: str
    budget: Budget
    rows: tuple[Row, ...]
    resampled: str
    calls: tuple[int, int] | None = None
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    turns: tuple[int, int] = (0, 0)

    @property
    def regressions(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.verdict == "regression")

    @property
    def not_comparable(self) -> tuple[str, ...]:
        return self.problems + tuple(
            f"{r.measure} {r.label}: {r.reason}" for r in self.rows if r.verdict == "not comparable"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "baseline": self.baseline_name,
            "new": self.new_name,
            "budget": {"total_ms": self.budget.total_ms, "percentile": self.budget.percentile},
            "resampled": self.resampled,
            "calls": list(self.calls) if self.calls else None,
            "turns": list(self.turns),
            "problems": list(self.problems),
            "notes": list(self.notes),
            "rows": [r.to_dict() for r in self.rows],
        }


@dataclass(frozen=True)
class Comparison:
    """Every set of a baseline against the new report (``voicebudget compare``)."""

    baseline: str
    new: str
    settings: CompareSettings
    sets: tuple[SetComparison, ...]
    problems: tuple[str, ...] = ()
    """Reasons the reports do not compare as a whole (a baseline set missing from the new report)."""
    notes: tuple[str, ...] = ()
    predicted: tuple[PredictedSet, ...] = ()
    """With a prediction (``compare --predicted``): per set, the predicted change against the measured one
    (:func:`voicebudget.baseline.check_prediction`)."""
    prediction: str = ""
    """What was predicted: ``fitted.toml:faster-llm vs fitted.toml:baseline``."""

    @property
    def regressions(self) -> tuple[tuple[str, Row], ...]:
        return tuple((s.name, r) for s in self.sets for r in s.regressions)

    @property
    def missed_predictions(self) -> tuple[tuple[str, PredictionRow], ...]:
        """(set, row) of each measure whose measured change the prediction missed beyond its tolerance."""
        return tuple((s.name, r) for s in self.predicted for r in s.missed)

    @property
    def not_comparable(self) -> tuple[str, ...]:
        return self.problems + tuple(f"{s.name}: {p}" for s in self.sets for p in s.not_comparable)

    @property
    def exit_code(self) -> int:
        """1 when any measure regressed, else 4 when anything was not comparable, else 0. With a prediction, 1 when
        any measured change contradicts it instead (a change predicted to be slower is no failure when it is)."""
        failed = self.missed_predictions if self.prediction else self.regressions
        if failed:
            return EXIT_REGRESSION
        unchecked = self.prediction and not any(s.rows for s in self.predicted)
        return EXIT_NOT_COMPARABLE if self.not_comparable or unchecked else EXIT_OK

    @property
    def verdict(self) -> str:
        """One line: ``regression: total p95 +90.9 ms (+40.1 ... +130.2) > 75.6 ms``, ``not comparable: ...``, or
        ``no regression``; with a prediction ``prediction missed: total p95 optimistic by about 45 ms``, or
        ``the measured change agrees with the prediction``."""
        if self.prediction:
            return self._prediction_verdict()
        if self.regressions:
            shown = "; ".join(
                f"{_prefix(name, len(self.sets))}{r.measure} {r.label} {r.interval.estimate_ms:+.1f} ms "  # type: ignore[union-attr]
                f"({r.interval.low_ms:+.1f} ... {r.interval.high_ms:+.1f}) > {r.tolerance_ms:.1f} ms"  # type: ignore[union-attr]
                for name, r in self.regressions
            )
            return f"regression: {shown}"
        if self.not_comparable:
            reasons = self.not_comparable
            more = f" (+{len(reasons) - 2} more)" if len(reasons) > 2 else ""
            return "not comparable: " + "; ".join(reasons[:2]) + more
        return "no regression"

    def _prediction_verdict(self) -> str:
        missed = self.missed_predictions
        if missed:
            shown = "; ".join(
                f"{_prefix(name, len(self.sets))}{r.measure} {r.label} {r.verdict} by about {abs(r.gap_ms):.0f} ms"
                for name, r in missed
            )
            return f"prediction missed: {shown}"
        checked = sum(len(s.rows) for s in self.predicted)
        if not checked:
            return "not comparable: no measure both predicted and measured"
        tail = ""
        if self.not_comparable:
            tail = "; not comparable: " + "; ".join(self.not_comparable[:2])
        return f"the measured change agrees with the prediction ({checked} checks){tail}"

    def to_dict(self) -> dict[str, Any]:
        s = self.settings
        return {
            "baseline": self.baseline,
            "new": self.new,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "level": s.level,
            "method": s.method,
            "resamples": s.resamples,
            "seed": s.seed,
            "tolerance": s.tolerance.describe(),
            "tolerance_origin": s.tolerance.origin,
            "problems": list(self.problems),
            "notes": list(self.notes),
            "sets": [x.to_dict() for x in self.sets],
            "prediction": self.prediction or None,
            "predicted": [x.to_dict() for x in self.predicted],
        }


def _prefix(name: str, n_sets: int) -> str:
    return f"{name}: " if n_sets > 1 else ""


def needed_turns(q: float) -> int:
    """Turns a percentile needs to be gated on: :data:`MIN_TAIL_TURNS` beyond it on its far side (the rule
    of :func:`voicebudget._tail.turns_needed`, which ``check`` and the pytest plugin warn by)."""
    return turns_needed(q, MIN_TAIL_TURNS)


def compare_sets(
    baseline: Sequence[TurnSet],
    new: Sequence[TurnSet],
    settings: CompareSettings | None = None,
    *,
    baseline_origin: str = "baseline",
    new_origin: str = "new",
) -> Comparison:
    """Compare measured turns with a baseline.

    Sets pair by name; when each side has exactly one set they pair whatever their names (a trace check names
    its set after its files).

    :param baseline: the pinned sets; ``new``: the sets of the run to judge.
    :param settings: default :class:`CompareSettings` (90% percentile intervals, 2,000 resamples, seed 0).
    :returns: a :class:`Comparison`; ``exit_code`` is the verdict.
    """
    if settings is not None and not isinstance(settings, CompareSettings):
        raise ScenarioError(f"must be a CompareSettings or None, got {settings!r}"[:200], origin=param("settings"))
    for name, side in (("baseline", baseline), ("new", new)):
        if isinstance(side, str | bytes) or not all(isinstance(s, TurnSet) for s in side):
            raise ScenarioError(
                f"must be a list of TurnSets (read_turn_sets(path) reads a file's; compare_files takes paths), "
                f"got {side!r}"[:200],
                origin=param(name),
            )
    settings = settings or CompareSettings()
    rng = np.random.default_rng(settings.seed)
    pairs, problems, notes = _pairs(baseline, new)
    sets = tuple(_compare_pair(b, n, settings, rng) for b, n in pairs)
    present = {m for b, n in pairs for m in (*b.stages_ms, *n.stages_ms)}
    notes += [  # a misspelt stage left out nothing: say so rather than pass in silence
        f"ignored stage {x!r} is on neither side ({settings.spell('ignore_stages')})"
        for x in settings.ignore_stages
        if x not in present
    ]
    return Comparison(baseline_origin, new_origin, settings, sets, tuple(problems), tuple(notes))


def _pairs(
    baseline: Sequence[TurnSet], new: Sequence[TurnSet]
) -> tuple[list[tuple[TurnSet, TurnSet]], list[str], list[str]]:
    """The sets paired by name (one on each side: paired whatever their names), the baseline's sets the new
    report lacks (problems), and the new sets without a baseline (notes)."""
    if len(baseline) == 1 and len(new) == 1:
        return [(baseline[0], new[0])], [], []
    by_name = {s.name: s for s in new}
    pairs = [(b, by_name[b.name]) for b in baseline if b.name in by_name]
    return pairs, *_unpaired(baseline, new)


def _unpaired(baseline: Sequence[TurnSet], new: Sequence[TurnSet]) -> tuple[list[str], list[str]]:
    """The baseline's sets the new report lacks, and the new sets without a baseline."""
    names, known = {s.name for s in new}, {b.name for b in baseline}
    problems = [f"{b.name}: in the baseline, not in the new report" for b in baseline if b.name not in names]
    notes = [f"{s.name}: new, no baseline to compare with" for s in new if s.name not in known]
    return problems, notes


def _budgets_differ(a: Budget, b: Budget) -> bool:
    return (a.total_ms, a.percentile, a.allocations_ms()) != (b.total_ms, b.percentile, b.allocations_ms())


def _describe_budget(b: Budget) -> str:
    alloc = b.allocations_ms()
    extra = f", stages {', '.join(f'{k} {v:g} ms' for k, v in alloc.items())}" if alloc else ""
    return f"{as_given(b.total_ms)} ms at {b.label}{extra}"


def _compare_pair(base: TurnSet, new: TurnSet, settings: CompareSettings, rng: np.random.Generator) -> SetComparison:
    name = new.name if base.name == new.name else f"{base.name} -> {new.name}"
    budget = settings.budget or base.budget
    problems = []
    if settings.budget is None and _budgets_differ(base.budget, new.budget):
        problems.append(
            f"different budgets: baseline {_describe_budget(base.budget)}, new {_describe_budget(new.budget)} "
            f"(judge both against one budget: {settings.spell('budget')})"
        )
    if base.anchor != new.anchor:
        problems.append(f"different anchors of t = 0: baseline {base.anchor!r}, new {new.anchor!r}")
    if base.total != new.total:
        problems.append(f"different totals: baseline {base.total!r}, new {new.total!r}")
    resampled, calls, notes = _resampling(base, new)
    turns = (base.n_turns, new.n_turns)
    if problems:  # no rows: the header said "0 -> 0 turns" of sets that had turns
        return SetComparison(name, base.name, new.name, budget, (), resampled, calls, tuple(problems), notes, turns)
    settings = settings.with_budget_tolerances(budget) if budget.tolerance else settings
    qs = sorted({50.0, float(budget.percentile)})
    measures = [TOTAL, *dict.fromkeys([*base.stages_ms, *new.stages_ms])]
    measures = [m for m in measures if m not in settings.ignore_stages]
    base_calls, new_calls = (_call_index(base), _call_index(new)) if resampled == "calls" else (None, None)
    rows = _rows(measures, base, new, qs, settings, rng, base_calls, new_calls)
    return SetComparison(name, base.name, new.name, budget, tuple(rows), resampled, calls, (), notes, turns)


def _resampling(base: TurnSet, new: TurnSet) -> tuple[str, tuple[int, int] | None, tuple[str, ...]]:
    if base.calls is None or new.calls is None:
        side = (
            "either side"
            if base.calls is None and new.calls is None
            else ("the baseline" if base.calls is None else "the new side")
        )
        return "turns", None, (f"turns resampled one by one: the turns of {side} carry no call id",)
    counts = (len(set(base.calls)), len(set(new.calls)))
    if min(counts) < MIN_CALLS:
        return (
            "turns",
            counts,
            (
                f"turns resampled one by one: {count(counts[0], 'call')} in the baseline, {counts[1]} in the new "
                f"report (calls are resampled from {MIN_CALLS} per side); if turns of one call move together the "
                "intervals are too narrow",
            ),
        )
    notes: tuple[str, ...] = ()
    if min(counts) < FEW_CALLS:
        notes = (f"only {counts[0]} and {counts[1]} calls: the intervals rest on few conversations",)
    return "calls", counts, notes


def _call_index(s: TurnSet) -> tuple[np.ndarray[Any, np.dtype[np.intp]], int]:
    _, idx = np.unique(np.asarray(s.calls), return_inverse=True)
    return idx.astype(np.intp), int(idx.max()) + 1


def _values(s: TurnSet, measure: str) -> np.ndarray[Any, np.dtype[np.float64]] | None:
    if measure == TOTAL:
        return s.total_ms
    return s.stages_ms.get(measure)


def _rows(
    measures: list[str],
    base: TurnSet,
    new: TurnSet,
    qs: list[float],
    settings: CompareSettings,
    rng: np.random.Generator,
    base_calls: tuple[Any, int] | None,
    new_calls: tuple[Any, int] | None,
) -> list[Row]:
    """Every measure's rows. The gated columns of a side are resampled together (one draw of calls serves every
    stage), then each row gets its interval."""
    rows: list[Row] = []
    gated: list[tuple[str, Column, Column, list[float]]] = []
    for measure in measures:
        bv, nv = _values(base, measure), _values(new, measure)
        if bv is None or nv is None:
            rows += _one_side_rows(measure, qs, bv, nv, settings)
            continue
        bcol = column(bv, *base_calls) if base_calls else column(bv)
        ncol = column(nv, *new_calls) if new_calls else column(nv)
        ok = _gated_percentiles(measure, qs, bcol, ncol, settings, rows)
        if ok:
            gated.append((measure, bcol, ncol, ok))
    if gated:
        rows += _interval_rows(gated, qs, settings, rng)
    order = {m: i for i, m in enumerate(measures)}
    rows.sort(key=lambda r: (order[r.measure], r.q))
    return rows


def _one_side_rows(
    measure: str,
    qs: list[float],
    bv: np.ndarray[Any, np.dtype[np.float64]] | None,
    nv: np.ndarray[Any, np.dtype[np.float64]] | None,
    settings: CompareSettings,
) -> list[Row]:
    """A measure on one side only: not comparable at every percentile, saying which side lacks it."""
    where = "the new report" if bv is not None else "the baseline"
    reason = f"no stage {measure!r} in {where} (leave it out: {settings.spell('ignore_stages')})"
    nb = 0 if bv is None else int(np.count_nonzero(~np.isnan(bv)))
    nn = 0 if nv is None else int(np.count_nonzero(~np.isnan(nv)))
    tol = settings.tolerance_of(measure)
    return [Row(measure, q, math.nan, math.nan, nb, nn, "not comparable", tolerance=tol, reason=reason) for q in qs]


def _gated_percentiles(
    measure: str, qs: list[float], bcol: Column, ncol: Column, settings: CompareSettings, rows: list[Row]
) -> list[float]:
    """The percentiles with enough turns on both sides to gate on; a row for each of the others (in ``rows``)."""
    ok = []
    for q in qs:
        few = [side for side, c in (("baseline", bcol), ("new", ncol)) if c.n < needed_turns(q)]
        if few and (not settings.allow_few_turns or min(bcol.n, ncol.n) == 0):
            rows.append(_few_row(measure, q, bcol, ncol, settings.tolerance_of(measure), few, settings.spell))
        else:
            ok.append(q)
    return ok


def _interval_rows(
    gated: list[tuple[str, Column, Column, list[float]]],
    qs: list[float],
    settings: CompareSettings,
    rng: np.random.Generator,
) -> list[Row]:
    """The gated measures' rows, each with its bootstrap interval; each side's columns resampled together."""
    bd = draw_percentiles([g[1] for g in gated], qs, settings.resamples, rng)
    nd = draw_percentiles([g[2] for g in gated], qs, settings.resamples, rng)
    rows = []
    for i, (measure, bcol, ncol, ok) in enumerate(gated):
        for q in ok:
            j = qs.index(q)
            rows.append(_row(measure, q, bcol, ncol, bd[i, j], nd[i, j], settings))
    return rows


def _row(measure: str, q: float, bcol: Column, ncol: Column, bd: Any, nd: Any, settings: CompareSettings) -> Row:
    tol = settings.tolerance_of(measure)
    z = _NORMAL.inv_cdf(1 - (1 - settings.level) / 2) + _NORMAL.inv_cdf(DETECT_POWER)
    b_ms = float(np.percentile(bcol.values, q))
    n_ms = float(np.percentile(ncol.values, q))
    iv = diff_interval(bd, nd, n_ms - b_ms, level=settings.level, method=settings.method, baseline=bcol, new=ncol, q=q)
    t = tol.ms_for(b_ms)
    reason = ""
    if min(bcol.n, ncol.n) < needed_turns(q):
        reason = f"gated on few turns as asked: {_few_words(q, min(bcol.n, ncol.n))}"
    return Row(measure, q, b_ms, n_ms, bcol.n, ncol.n, _verdict(iv, t), iv, t, tol, t + z * iv.se_ms, reason)


def _verdict(iv: DiffInterval, t: float) -> Verdict:
    if iv.low_ms > t:
        return "regression"
    if iv.high_ms < -t:
        return "improvement"
    if iv.low_ms >= -t and iv.high_ms <= t:
        return "unchanged"
    return "noise"


def _few_words(q: float, n: int) -> str:
    return f"{rests_on(q, n)}; gating needs {needed_turns(q)} turns ({MIN_TAIL_TURNS} beyond it)"


def _few_row(
    measure: str, q: float, bcol: Column, ncol: Column, tol: Tolerance, few: list[str], spell: Callable[[str], str]
) -> Row:
    n = min(bcol.n, ncol.n)
    sides = " and ".join(few)
    if n == 0:
        reason = f"the stage never ran on the {sides} side"
    else:
        reason = f"{_few_words(q, n)} ({sides}); gate on it anyway: {spell('allow_few_turns')}"
    b = float(np.percentile(bcol.values, q)) if bcol.n else math.nan
    nn = float(np.percentile(ncol.values, q)) if ncol.n else math.nan
    return Row(measure, q, b, nn, bcol.n, ncol.n, "not comparable", tolerance=tol, reason=reason)
