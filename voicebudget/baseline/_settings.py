"""How to compare two sets of measured turns: the tolerance of a measure and the comparison's settings."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from voicebudget._budget import Budget
from voicebudget._errors import ScenarioError, param
from voicebudget.baseline._bootstrap import METHODS, Method

__all__ = ["DEFAULT_TOLERANCE", "MAX_RESAMPLES", "PYTHON_SPELLING", "CompareSettings", "Tolerance", "python_spelling"]


@dataclass(frozen=True)
class Tolerance:
    """How much slower a measure may get before it is a regression: ``ms``, a ``share`` of the baseline's value,
    or the larger of both.

    :ivar origin: where it came from (``default``, ``--tolerance-ms``, ``budget file``), for the output.
    """

    ms: float | None = None
    share: float | None = None
    origin: str = "default"

    def __post_init__(self) -> None:
        for name, value, unit in (("ms", self.ms, " ms"), ("share", self.share, " (0.1 for 10%)")):
            if value is not None and (not _is_number(value) or not math.isfinite(value) or value < 0):
                raise ScenarioError(f"must be a finite number >= 0{unit} or None, got {value!r}", origin=param(name))

    def ms_for(self, baseline_ms: float) -> float:
        """The tolerance in ms for a baseline value (ms)."""
        parts = [self.ms or 0.0, (self.share or 0.0) * abs(baseline_ms)]
        return max(parts)

    def describe(self) -> str:
        if self.ms is not None and self.share is not None:
            return f"the larger of {self.ms:g} ms and {100 * self.share:g}% of the baseline"
        if self.share is not None:
            return f"{100 * self.share:g}% of the baseline"
        return f"{self.ms or 0.0:g} ms"

    @classmethod
    def parse(cls, value: float | str, origin: str) -> Tolerance:
        """A number (ms) or a share written ``"10%"``.

        :raises ScenarioError: anything else (naming ``origin``).
        """
        if isinstance(value, str):
            m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*%\s*", value)
            if not m:
                raise ScenarioError(f"a tolerance is ms (a number) or a share like '10%', got {value!r}", origin=origin)
            return cls(share=float(m.group(1)) / 100.0, origin=origin)
        if isinstance(value, bool) or not math.isfinite(value) or value < 0:
            raise ScenarioError(f"a tolerance must be a finite number >= 0 ms, got {value!r}", origin=origin)
        return cls(ms=float(value), origin=origin)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


MAX_RESAMPLES = 100_000
"""Most bootstrap resamples a comparison draws (50x the default): the draws are kept per measure and percentile,
``float64[measures, percentiles, resamples]`` per side: 10^8 resamples of 120 turns held 2 GB and were still running
after 10 minutes; 100,000 took 16 s (2-core machine at load 7), where 2,000 serve a 90% interval."""

DEFAULT_TOLERANCE = Tolerance(ms=20.0, share=0.10, origin="default")
"""The larger of 20 ms and 10% of the baseline's value. With it two samples of one agent (300 turns each) gated
in 1 of 2,000 pairs at most (tests/test_baseline_stats.py; 5% gated 9 in 2,000 at p95), while a voice agent
that got 300 ms slower is still caught."""


PYTHON_SPELLING = {
    "allow_few_turns": "allow_few_turns=True",
    "ignore_stages": "ignore_stages=(...)",
    "budget": "budget=Budget(...)",
    "stage_map": "Prediction(stage_map=...)",
}
"""How a reason names a setting for Python callers (:attr:`CompareSettings.spell`'s default)."""


def python_spelling(name: str) -> str:
    """A setting as a Python caller writes it in a reason (:data:`PYTHON_SPELLING`, else its name)."""
    return PYTHON_SPELLING.get(name, name)


@dataclass(frozen=True)
class CompareSettings:
    """How to compare.

    :ivar level: two-sided level of the intervals (default 0.90: each verdict is a one-sided test at 5%).
    :ivar method: ``"percentile"`` (default) or ``"bca"``. On same-distribution samples (tests/test_baseline_stats.py)
        the percentile interval gates falsely at or below its nominal 5% and catches a 2-standard-error shift
        more often than BCa, whose false rate sits at the nominal level.
    :ivar resamples: bootstrap resamples per side (default 2,000; 100 to :data:`MAX_RESAMPLES`).
    :ivar seed: seed of the resamples (recorded in the output; default 0, so a rerun gives the same interval).
    :ivar tolerance: the tolerance of measures without one of their own.
    :ivar tolerances: measure (``"total"`` or a stage) -> its own tolerance (the budget file's ``tolerance``).
    :ivar budget: judge both sides against this budget (its percentile); None: the sides' own, which must match.
    :ivar allow_few_turns: gate on percentiles with fewer than :data:`MIN_TAIL_TURNS` turns beyond them.
    :ivar ignore_stages: stages left out of the comparison.
    :ivar spell: how the reasons in the result name one of these settings (``"allow_few_turns"`` ->
        ``"allow_few_turns=True"`` by default; the CLI passes its flags: ``--allow-few-turns``).
    """

    level: float = 0.90
    method: Method = "percentile"
    resamples: int = 2000
    seed: int = 0
    tolerance: Tolerance = DEFAULT_TOLERANCE
    tolerances: Mapping[str, Tolerance] = field(default_factory=dict)
    budget: Budget | None = None
    allow_few_turns: bool = False
    ignore_stages: tuple[str, ...] = ()
    spell: Callable[[str], str] = field(default=python_spelling, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not _is_number(self.level) or not 0 < self.level < 1:
            raise ScenarioError(f"must be in (0, 1), e.g. 0.90, got {self.level}", origin=param("level"))
        if self.method not in METHODS:
            raise ScenarioError(f"must be one of {', '.join(METHODS)}, got {self.method!r}", origin=param("method"))
        if not _is_number(self.resamples) or not 100 <= self.resamples <= MAX_RESAMPLES:
            got = f"{self.resamples:,}" if _is_number(self.resamples) else repr(self.resamples)
            raise ScenarioError(f"must be between 100 and {MAX_RESAMPLES:,}, got {got}", origin=param("resamples"))
        if not isinstance(self.resamples, int):
            raise ScenarioError(f"must be a whole number, got {self.resamples!r}", origin=param("resamples"))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ScenarioError(f"must be a whole number >= 0, got {self.seed!r}", origin=param("seed"))
        if not isinstance(self.tolerance, Tolerance):
            raise ScenarioError(
                f"must be a Tolerance (e.g. Tolerance(ms=50) or Tolerance(share=0.1)), got {self.tolerance!r}",
                origin=param("tolerance"),
            )
        if not isinstance(self.tolerances, Mapping) or not all(
            isinstance(k, str) and isinstance(v, Tolerance) for k, v in self.tolerances.items()
        ):
            raise ScenarioError(
                f"must map measures to Tolerances (e.g. {{'llm': Tolerance(ms=30)}}), got {self.tolerances!r}"[:200],
                origin=param("tolerances"),
            )
        if self.budget is not None and not isinstance(self.budget, Budget):
            raise ScenarioError(
                f"must be a Budget (e.g. Budget(total_ms=800)) or None, got {self.budget!r}", origin=param("budget")
            )
        if isinstance(self.ignore_stages, str) or not all(isinstance(x, str) for x in self.ignore_stages):
            raise ScenarioError(
                f"must be stage names, e.g. ('tts',), got {self.ignore_stages!r}"[:200], origin=param("ignore_stages")
            )
        object.__setattr__(self, "ignore_stages", tuple(self.ignore_stages))  # a list given: kept as its type says

    def tolerance_of(self, measure: str) -> Tolerance:
        return self.tolerances.get(measure, self.tolerance)

    def with_budget_tolerances(self, budget: Budget) -> CompareSettings:
        """These settings with the budget's ``tolerance`` table applied (``default`` replaces the default)."""
        own = {k: Tolerance.parse(v, f"budget.tolerance.{k}") for k, v in budget.tolerance.items()}
        base = own.pop("default", self.tolerance)
        return replace(self, tolerance=base, tolerances={**own, **self.tolerances})

    def describe(self) -> str:
        return (
            f"{100 * self.level:g}% bootstrap intervals ({'BCa' if self.method == 'bca' else 'percentile'}, "
            f"{self.resamples:,} resamples, seed {self.seed}); a regression is an interval wholly above the "
            f"tolerance; tolerance: {self.tolerance.describe()} ({self.tolerance.origin})"
        )
