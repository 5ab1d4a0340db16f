"""Checking imported turns against a budget: the common report, plus turns, anomalies and the
first-turn vs steady-state split."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from voicebudget._budget import Budget
from voicebudget._errors import ScenarioError, param
from voicebudget._measured import TurnSet, turns_document
from voicebudget._report import Report, build_report
from voicebudget._text import as_given, count
from voicebudget.traces._table import OFF_PATH, ON_PATH, Anomaly, Summary, TraceTable, TraceTurn, group_anomalies

__all__ = ["NoUsableTurnsError", "SummaryVerdict", "TraceCheck", "check", "usable_turns"]

_PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "max": 100.0}


@dataclass(frozen=True)
class SummaryVerdict:
    """A call judged from a platform's own statistics, when it gives no turns (Retell's ``latency.e2e``).

    :ivar summary: the ``e2e`` statistics it was judged on.
    :ivar statistic: the statistic used: the budget's percentile when given, else the next one above it
        (``p99``, then ``max``: at least as slow), else the highest below it (then the verdict can only
        say FAIL for sure, and says so).
    :ivar value_ms: that statistic, ms.
    """

    summary: Summary
    budget: Budget
    statistic: str
    value_ms: float

    @property
    def exact(self) -> bool:
        """The budget's own percentile was given."""
        return _PERCENTILES[self.statistic] == self.budget.percentile

    @property
    def passed(self) -> bool:
        return self.value_ms <= self.budget.total_ms

    def message(self) -> str:
        s = self.summary
        cmp = "<=" if self.passed else ">"
        n = f" over {s.stats_ms['num']:.0f} turns" if "num" in s.stats_ms else ""
        how = "" if self.exact else f" (the platform gives no {self.budget.label}: its {self.statistic} instead)"
        return (
            f"call {s.call}: {s.component} {self.statistic} {self.value_ms:.1f} ms {cmp} "
            f"{as_given(self.budget.total_ms)} ms"
            f"{how}; the platform's own statistics{n}: no per-turn data exists, so stages, tail attribution and "
            "the first-turn split cannot be computed"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.summary.to_dict(),
            "statistic": self.statistic,
            "value_ms": self.value_ms,
            "exact": self.exact,
            "within_budget": self.passed,
            "message": self.message(),
        }


def summary_verdicts(tables: Sequence[TraceTable], budget: Budget) -> tuple[SummaryVerdict, ...]:
    """Each call's ``e2e`` statistics judged at the budget's percentile (see :class:`SummaryVerdict`)."""
    out = []
    for tab in tables:
        for summary in tab.summaries:
            if summary.component != "e2e":
                continue
            given = {k: v for k, v in summary.stats_ms.items() if k in _PERCENTILES}
            if not given:
                continue
            above = [k for k in given if _PERCENTILES[k] >= budget.percentile]
            key = min(above, key=lambda k: _PERCENTILES[k]) if above else max(given, key=lambda k: _PERCENTILES[k])
            out.append(SummaryVerdict(summary, budget, key, given[key]))
    return tuple(out)


FloatArray = NDArray[np.float64]


def usable_turns(tables: Sequence[TraceTable], include_anomalies: bool = False) -> list[TraceTurn]:
    """Turns that enter the statistics: a known total, and not flagged unless ``include_anomalies``."""
    return [t for tab in tables for t in tab.turns if t.complete and (include_anomalies or not t.flagged)]


@dataclass(frozen=True)
class TraceCheck:
    """The verdict on imported turns.

    :ivar report: all included turns (``source = "trace"``), the same report type as a simulation; None
        when the sources give no turns, only statistics (:attr:`summaries`).
    :ivar first_turn: the first turn of each file (cold connections, cold caches), None if none.
    :ivar steady_state: every later turn, None if none.
    :ivar turns: every turn read, included or not.
    :ivar included: per turn in ``turns``, whether it entered the statistics.
    """

    name: str
    budget: Budget
    report: Report | None
    first_turn: Report | None
    steady_state: Report | None
    tables: tuple[TraceTable, ...]
    turns: tuple[TraceTurn, ...]
    included: tuple[bool, ...]
    include_anomalies: bool
    summaries: tuple[SummaryVerdict, ...] = ()
    """Calls judged from a platform's own statistics (no turns): see :class:`SummaryVerdict`."""

    @property
    def passed(self) -> bool:
        """The included turns are within budget at the target percentile (without turns: every call's
        statistic is)."""
        if self.report is not None:
            return self.report.passed
        return all(v.passed for v in self.summaries)

    @property
    def lower_bounds(self) -> int:
        """How many included turns have a total that is only a lower bound (:attr:`TraceTurn.lower_bound`):
        when any has, the percentiles are lower bounds too."""
        return sum(1 for t, inc in zip(self.turns, self.included, strict=True) if inc and t.lower_bound)

    @property
    def anomalies(self) -> tuple[Anomaly, ...]:
        """Every anomaly of every file, in file then line order."""
        return tuple(a for tab in self.tables for a in tab.anomalies)

    def to_dict(self) -> dict[str, Any]:
        """JSON document of ``voicebudget check --format json``: the keys of ``run`` plus ``turns``,
        ``anomalies``, ``split``, ``sources`` and ``measured`` (the included turns as a ``voicebudget-turns``
        document, what ``voicebudget baseline pin`` keeps; docs/ci.md)."""
        rows = []
        for turn, inc in zip(self.turns, self.included, strict=True):
            row = turn.to_dict()
            row["included"] = inc
            row["within_budget"] = None if turn.total_ms is None else turn.total_ms <= self.budget.total_ms
            rows.append(row)
        return {
            "scenario": self.name,
            "seed": None,
            "samples": self.report.n_turns if self.report is not None else 0,
            "budget": {"total_ms": self.budget.total_ms, "percentile": self.budget.percentile},
            "variants": [self.report.to_dict()] if self.report is not None else [],
            "summaries": [v.to_dict() for v in self.summaries],
            "source": "trace",
            "include_anomalies": self.include_anomalies,
            "lower_bound_turns": self.lower_bounds,
            "sources": [t.source_dict() for t in self.tables],
            "split": {
                "first_turn": self.first_turn.to_dict() if self.first_turn else None,
                "steady_state": self.steady_state.to_dict() if self.steady_state else None,
            },
            "turns": rows,
            "anomalies": [a.to_dict() for a in self.anomalies],
            "measured": turns_document([self.turn_set()]),
        }

    def turn_set(self) -> TurnSet:
        """The included turns as one set of measured turns: each turn's total and on- and off-path stages, its
        file as its call (one file per conversation, as the first-turn split assumes), the formats read as the
        anchor (two sets compare only when read by the same readers)."""
        used = [t for t, inc in zip(self.turns, self.included, strict=True) if inc]
        names = [s for s in (*ON_PATH, *OFF_PATH) if any(s in t.stages_ms for t in used)]
        formats = sorted({tab.format for tab in self.tables if any(t.origin == tab.origin for t in used)})
        totals = list(dict.fromkeys(tab.total for tab in self.tables))
        return TurnSet(
            name=self.name,
            source="trace",
            anchor="trace: " + "+".join(formats),
            total="; ".join(totals),
            budget=self.budget,
            total_ms=np.array([t.total_ms for t in used], dtype=np.float64),
            stages_ms={s: np.array([t.stages_ms.get(s, np.nan) for t in used], dtype=np.float64) for s in names},
            ids=tuple(t.id for t in used),
            calls=tuple(t.origin for t in used),
        )


class NoUsableTurnsError(ScenarioError):
    """Every turn read is flagged or incomplete: nothing to judge. It carries what was read, so the
    turns and their anomalies can still be shown (``voicebudget check --format json`` prints
    :meth:`to_dict`, then exits 2).

    :ivar tables: the tables read.
    :ivar include_anomalies: whether flagged turns were allowed in.
    """

    def __init__(self, message: str, *, origin: str, tables: Sequence[TraceTable], include_anomalies: bool) -> None:
        super().__init__(message, origin=origin)
        self.tables = tuple(tables)
        self.include_anomalies = include_anomalies

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``check --format json`` without a verdict: ``error``, ``sources``,
        ``turns`` (none included) and ``anomalies``; ``variants`` is empty."""
        rows = []
        for tab in self.tables:
            for turn in tab.turns:
                row = turn.to_dict()
                row["included"] = False
                rows.append(row)
        return {
            "scenario": self.origin,
            "seed": None,
            "samples": 0,
            "variants": [],
            "source": "trace",
            "error": str(self),
            "include_anomalies": self.include_anomalies,
            "sources": [t.source_dict() for t in self.tables],
            "turns": rows,
            "anomalies": [a.to_dict() for tab in self.tables for a in tab.anomalies],
        }


def _why_none(tables: Sequence[TraceTable], include_anomalies: bool, to: str = "check") -> str:
    """Why no turn is usable (to ``check``, to ``fit``), with the first anomalies (each names its field
    and turn)."""
    all_turns = [t for tab in tables for t in tab.turns]
    anomalies = [a for tab in tables for a in tab.anomalies]
    grouped = group_anomalies(anomalies)[:3]  # one anomaly on every turn (a stale value) is named once
    shown = "; ".join(f"{a.place}: {a.reason}" + (f" ({count(n, 'turn')})" if n > 1 else "") for a, n, _ in grouped)
    covered = sum(n for _, n, _ in grouped)
    more = f" (+{len(anomalies) - covered} more)" if len(anomalies) > covered else ""
    hint = (
        ""
        if include_anomalies or not anomalies  # nothing flagged: nothing to include
        else f"; include flagged turns with {param('include_anomalies', 'include_anomalies=True')}"
    )
    detail = f": {shown}{more}" if shown else ""
    read = f"{count(len(all_turns), 'turn')}, {count(len(anomalies), 'anomaly', 'anomalies')}"
    return f"no usable turn to {to}: {read}{detail}{hint}"


def _report(name: str, budget: Budget, turns: list[TraceTurn]) -> Report:
    names = [s for s in (*ON_PATH, *OFF_PATH) if any(s in t.stages_ms for t in turns)]
    total = np.array([t.total_ms for t in turns], dtype=np.float64)
    stages = {s: np.array([t.stages_ms.get(s, np.nan) for t in turns], dtype=np.float64) for s in names}

    def contributions(tail: NDArray[np.intp]) -> dict[str, FloatArray]:
        # On-path stages follow one another: each contributes its own duration; ASR runs inside the
        # endpointing wait and leading silence comes after the total, so they contribute nothing.
        return {s: (np.nan_to_num(v[tail]) if s in ON_PATH else np.zeros(tail.size)) for s, v in stages.items()}

    parts = _parts(turns)

    def part_contributions(tail: NDArray[np.intp]) -> dict[str, dict[str, FloatArray]]:
        return {s: {p: v[tail] for p, v in by_part.items()} for s, by_part in parts.items()}

    server = total.copy()
    return build_report(
        name,
        budget,
        total,
        stages,
        contributions=contributions,
        server_side_ms=server,
        source="trace",
        part_contributions=part_contributions if parts else None,
    )


def _parts(turns: list[TraceTurn]) -> dict[str, dict[str, FloatArray]]:
    """Stage -> part -> ``float64[n_turns]`` ms for stages a source splits (Pipecat's TTFAT: ``ttfb``
    and ``thinking``); a turn without the split puts its whole stage in ``unsplit``."""
    out: dict[str, dict[str, FloatArray]] = {}
    for stage in {s for t in turns for s in t.parts_ms}:
        names = sorted({p for t in turns for p in t.parts_ms.get(stage, {})})
        rows = {p: np.zeros(len(turns)) for p in (*names, "unsplit")}
        for i, t in enumerate(turns):
            split = t.parts_ms.get(stage)
            if split:
                for p, v in split.items():
                    rows[p][i] = v
            else:
                rows["unsplit"][i] = t.stages_ms.get(stage, 0.0)
        out[stage] = {p: v for p, v in rows.items() if p != "unsplit" or v.any()}
    return out


def checked_inputs(tables: object, budget: object) -> None:
    """Refuse what :func:`check` and :func:`~voicebudget.traces.fit` cannot take, naming the parameter (a table
    or a path for the list of tables ended in "'TraceTable' object is not iterable", "'str' object has no attribute
    'origin'").

    :raises ScenarioError: ``tables`` not a list of tables, ``budget`` not a :class:`~voicebudget.Budget`.
    """
    if isinstance(tables, TraceTable):
        raise ScenarioError("give a list of tables: [read_trace(path)], one per file", origin=param("tables"))
    if (
        isinstance(tables, str | bytes)
        or not isinstance(tables, Sequence)
        or not all(isinstance(t, TraceTable) for t in tables)
    ):
        raise ScenarioError(
            f"must be a list of tables read by read_trace(path), got {tables!r}"[:200], origin=param("tables")
        )
    if budget is not None and not isinstance(budget, Budget):
        raise ScenarioError(f"must be a Budget (e.g. Budget(total_ms=800)), got {budget!r}", origin=param("budget"))


def check(
    tables: Sequence[TraceTable],
    budget: Budget | None = None,
    *,
    include_anomalies: bool = False,
    name: str | None = None,
) -> TraceCheck:
    """Judge imported turns against a budget.

    Percentiles come from per-turn totals (never from adding stage percentiles). Tail attribution
    credits each on-path stage its own duration in the turns at or beyond the target percentile.
    Turns with an anomaly are left out unless ``include_anomalies`` (a turn without a total never
    enters).

    :param tables: per-turn tables from :func:`~voicebudget.traces.read_trace` (one per file).
    :param budget: default ``Budget()`` (800 ms at p95).
    :param include_anomalies: also count flagged turns that have a total.
    :param name: the report's name (default: the file names).
    :returns: a :class:`TraceCheck`; ``.passed`` and ``.report.raise_for_budget()`` give the verdict.
    :raises NoUsableTurnsError: no turn is left to judge (every one flagged or incomplete); a
        :class:`~voicebudget.ScenarioError` carrying the tables read.
    :raises ScenarioError: ``tables`` not a list of tables, ``budget`` not a :class:`~voicebudget.Budget`.
    """
    checked_inputs(tables, budget)
    budget = budget or Budget()
    name = name or ", ".join(t.origin for t in tables)
    all_turns = [t for tab in tables for t in tab.turns]
    used = usable_turns(tables, include_anomalies)
    verdicts = summary_verdicts(tables, budget)
    if not used and verdicts:  # statistics only (Retell): judged as they are, no turns to report
        return TraceCheck(
            name=name,
            budget=budget,
            report=None,
            first_turn=None,
            steady_state=None,
            tables=tuple(tables),
            turns=tuple(all_turns),
            included=tuple(False for _ in all_turns),
            include_anomalies=include_anomalies,
            summaries=verdicts,
        )
    if not used:
        raise NoUsableTurnsError(
            _why_none(tables, include_anomalies), origin=name, tables=tables, include_anomalies=include_anomalies
        )
    used_ids = {id(t) for t in used}
    first = [t for t in used if t.index == 0]
    steady = [t for t in used if t.index > 0]
    return TraceCheck(
        name=name,
        budget=budget,
        report=_report(name, budget, used),
        first_turn=_report("first_turn", budget, first) if first else None,
        steady_state=_report("steady_state", budget, steady) if steady else None,
        tables=tuple(tables),
        turns=tuple(all_turns),
        included=tuple(id(t) in used_ids for t in all_turns),
        include_anomalies=include_anomalies,
        summaries=verdicts,
    )
