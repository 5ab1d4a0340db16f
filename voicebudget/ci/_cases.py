"""Verdicts as test cases: what the JUnit XML and the GitHub annotations of ``run``, ``check``, ``compare`` and the
pytest plugin are built from (one case per variant or test, one per stage budget, one per compared measure)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from voicebudget._report import Report
from voicebudget._text import as_given

__all__ = ["Case", "Location", "Outcome", "Suite", "report_cases"]

Outcome = Literal["passed", "failed", "error", "skipped"]
"""``failed``: over budget, a regression, a prediction missed; ``error``: could not be judged (not comparable)."""


@dataclass(frozen=True)
class Location:
    """Where a verdict points: a file and a 1-based line (None: the file as a whole)."""

    file: str
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line}


@dataclass(frozen=True)
class Case:
    """One verdict.

    :ivar name: what was judged, e.g. ``baseline: p95 <= 800 ms`` or ``baseline: llm p95 <= 450 ms``.
    :ivar classname: the group it belongs to (the scenario, the trace check, the compared set).
    :ivar message: one line with the numbers (the failure's message, the annotation's text); empty when passed.
    :ivar details: the breakdown (the failure's text; the output of a passed case).
    :ivar location: the file line a CI annotation points at (the stage's line in the scenario file, the slowest
        turn's line in its trace, the test's line).
    """

    name: str
    classname: str
    outcome: Outcome
    message: str = ""
    details: str = ""
    location: Location | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the pytest plugin sends it from xdist workers)."""
        return {
            "name": self.name,
            "classname": self.classname,
            "outcome": self.outcome,
            "message": self.message,
            "details": self.details,
            "location": self.location.to_dict() if self.location else None,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Case:
        loc = d.get("location")
        return cls(
            d["name"], d["classname"], d["outcome"], d["message"], d["details"], Location(**loc) if loc else None
        )


@dataclass(frozen=True)
class Suite:
    """The cases of one scenario file, trace check, comparison set or pytest session.

    :ivar properties: figures for the record (seed, turns, budget), as ``(name, value)`` pairs.
    :ivar file: the file the suite is about, if one.
    """

    name: str
    cases: tuple[Case, ...]
    properties: tuple[tuple[str, str], ...] = ()
    file: str = ""

    def count(self, outcome: Outcome) -> int:
        return sum(c.outcome == outcome for c in self.cases)


StageLocator = Callable[[str], Location | None]


def report_cases(
    report: Report,
    classname: str,
    *,
    details: str,
    total_at: Location | None = None,
    stage_at: StageLocator | None = None,
    prefix: str = "",
) -> list[Case]:
    """A report's cases: its total against the budget, then each stage with an allocation against it.

    :param details: the breakdown every case of the report carries (:func:`voicebudget.checker._format.breakdown`).
    :param total_at: where the total's verdict points (the budget's ``total_ms`` line, the slowest turn).
    :param stage_at: stage name -> where its verdict points (its line in the scenario file).
    :param prefix: put before each case's name and message (the variant's name and a colon).
    """
    label = report.budget.label
    total = report.total.at_percentile_ms
    over = report.slack_ms < 0
    cases = [
        Case(
            f"{prefix}{label} <= {report.budget.total_ms:g} ms",
            classname,
            "failed" if over else "passed",
            f"{prefix}{report.summary()}" if over else "",
            details,
            total_at,
        )
    ]
    for s in report.stages:
        if s.allocation_ms is None:
            continue
        value = s.stats.at_percentile_ms
        cases.append(
            Case(
                f"{prefix}{s.name} {label} <= {s.allocation_ms:g} ms",
                classname,
                "failed" if s.over_allocation else "passed",
                f"{prefix}{s.name} {label} {value:.1f} ms > allocation {as_given(s.allocation_ms, 1)} ms "
                f"(total {label} {total:.1f} ms)"
                if s.over_allocation
                else "",
                details,
                stage_at(s.name) if stage_at else None,
            )
        )
    return cases
