"""The latency budget a voice turn is judged against."""

from __future__ import annotations

import re
import warnings

from pydantic import Field, ValidationError, field_validator

from voicebudget._errors import ImplausibleValue, ScenarioError, param
from voicebudget._model import DataModel

__all__ = ["MAX_COUNT", "MAX_FACTOR", "MAX_LATENCY_MS", "MAX_TOKENS", "MAX_USD", "Budget", "with_overrides"]

MAX_LATENCY_MS = 3.6e9
"""Longest latency anything may take: 1,000 hours. Beyond it a value is a unit or typing error (1e308 ms),
and its sums and means would overflow to inf: distributions refuse parameters that reach it (at their
mu + 6 sigma for the log-normal and the normal) and reports refuse turns beyond it, naming the stage."""

MAX_USD = 1e6
"""Largest price any field may give, in US dollars (per call, per million tokens, per candidate): a
million, as for a chip-hour (:class:`~voicebudget.inference.Hardware`), far beyond any list price. A price
of 1e308 times a token count overflowed the cost to inf, which JSON cannot hold (exit 3)."""

MAX_TOKENS = 10_000_000
"""Most tokens a call may read or write: ten million, as an ``api`` stage's ``prompt_tokens`` allows."""

MAX_COUNT = 1_000_000
"""Most of anything counted per turn (candidates a reply cache pre-synthesises): a million; with a
price of at most :data:`MAX_USD` their cost stays finite."""

MAX_FACTOR = 1e6
"""Largest price, speed or TTFT multiple a fast tier may give: a million (Anthropic's fast mode, calibration
row A2, is 6x the price)."""

DEFAULT_TOTAL_MS = 800.0
"""Voice-to-voice budget. Human turn gaps cluster around 200 ms (Stivers et al. 2009, PNAS
106(26) 10587); voice-agent practice treats ~800 ms as the point past which users notice the pause
and talk over it (docs/design.md)."""


_SHARE = re.compile(r"\d+(\.\d*)?%")


class Budget(DataModel):
    """A voice-to-voice latency budget.

    :param total_ms: the budget for voice-to-voice latency, ms (> 0). Default 800.
    :param percentile: the percentile that must be within budget, in (0, 100]. Default 95 (p95).
    :param stages: optional per-stage allocations, stage name -> ms at the same percentile.
    :param stage_shares: optional per-stage allocations as shares of ``total_ms`` (0 < share <= 1).
    :param tolerance: how much slower ``voicebudget compare`` lets a measure get before it is a regression
        (docs/ci.md): ``"total"``, a stage name or ``"default"`` -> ms (a number >= 0) or a share of the
        baseline's value as text (``"10%"``). Not part of what two budgets must share to be compared.
    """

    total_ms: float = Field(default=DEFAULT_TOTAL_MS, gt=0, description="Voice-to-voice budget in ms.")
    percentile: float = Field(default=95.0, gt=0, le=100, description="Target percentile, e.g. 95 for p95.")
    stages: dict[str, float] = Field(default_factory=dict, description="Per-stage allocation in ms.")
    stage_shares: dict[str, float] = Field(default_factory=dict, description="Per-stage allocation as a share.")
    tolerance: dict[str, float | str] = Field(
        default_factory=dict,
        description="voicebudget compare: 'total', a stage or 'default' -> ms slower allowed, or a share as '10%'.",
    )

    @field_validator("stages")
    @classmethod
    def _non_negative(cls, v: dict[str, float]) -> dict[str, float]:
        bad = {k: x for k, x in v.items() if x < 0}
        if bad:
            raise ValueError(f"allocations must be >= 0 ms, got {bad}")
        return v

    @field_validator("stage_shares")
    @classmethod
    def _shares(cls, v: dict[str, float]) -> dict[str, float]:
        bad = {k: x for k, x in v.items() if not 0 < x <= 1}
        if bad:
            raise ValueError(f"shares must be in (0, 1], got {bad}")
        return v

    @field_validator("tolerance")
    @classmethod
    def _tolerances(cls, v: dict[str, float | str]) -> dict[str, float | str]:
        for key, x in v.items():
            if isinstance(x, str) and not _SHARE.fullmatch(x.strip()):
                raise ValueError(f"{key}: a share is written like '10%', got {x!r}")
            if not isinstance(x, str) and x < 0:
                raise ValueError(f"{key}: a tolerance must be >= 0 ms, got {x}")
        return v

    def allocations_ms(self) -> dict[str, float]:
        """Every per-stage allocation in ms (shares converted with ``total_ms``)."""
        out = {k: v * self.total_ms for k, v in self.stage_shares.items()}
        out.update(self.stages)
        return out

    @property
    def label(self) -> str:
        """``p95`` for percentile 95, ``p99.9`` for 99.9."""
        return f"p{self.percentile:g}"


def with_overrides(budget: Budget, budget_ms: float | None = None, percentile: float | None = None) -> Budget:
    """``budget`` with a new total and/or percentile (``run_scenarios(budget_ms=..., percentile=...)`` and
    the other entry points that take them; the CLI's ``--budget-ms``/``--percentile``).

    :raises ScenarioError: a value out of range; the error's origin is the parameter at fault
        (``budget_ms: must be a finite number > 0 ms, got -1.0``).
    :warns ImplausibleValue: a ``budget_ms`` under 50 ms or over a minute (``budget_ms: 0.8 ms is under
        50 ms, ...; seconds typed as ms? 0.8 s is 800 ms``), a ``percentile`` under 50 (``percentile: p0.95
        passes when 0.95% of turns are within budget, ...; a share typed for a percentile? 0.95 is p95``;
        :mod:`voicebudget._plausible`).
    """
    update = {k: v for k, v in (("total_ms", budget_ms), ("percentile", percentile)) if v is not None}
    if not update:
        return budget
    try:
        new = Budget.model_validate({**budget.model_dump(), **update})
    except ValidationError as exc:
        err = exc.errors()[0]
        name, allowed = {
            "total_ms": ("budget_ms", "a finite number > 0 ms"),
            "percentile": ("percentile", "a number in (0, 100]"),
        }[str(err["loc"][0])]
        raise ScenarioError(f"must be {allowed}, got {err['input']!r} ({err['msg']})", origin=param(name)) from None
    # lazy: _plausible imports the distributions, which import this module
    from voicebudget._plausible import budget_percentile_warning, budget_total_warning

    if budget_ms is not None and (message := budget_total_warning(new.total_ms)) is not None:
        warnings.warn(ImplausibleValue(f"{param('budget_ms')}: {message}"), stacklevel=2)
    if percentile is not None and (message := budget_percentile_warning(new.percentile)) is not None:
        warnings.warn(ImplausibleValue(f"{param('percentile')}: {message}"), stacklevel=2)
    return new
