"""The endpointing trade-off as a frontier: the latency a turn detector setting adds at p95 against
the share of turns it cuts off early (the caller had only paused).

Model (all ms). A caller's turn has ``K`` mid-turn pauses ``P_1..P_K`` (silences before they speak
again); at the true end of the turn the endpointing waits ``W`` before the agent commits, and at each
pause it applies the same rule. A pause longer than the wait applied at it ends the turn early:
``cut = P(any P_k > W_k)``; the latency added at the true end is ``W``, judged at p95.

- **Fixed silence timeout** ``s`` (a VAD's ``stop_secs``, LiveKit's ``min_endpointing_delay`` without a
  turn detector): ``W = s`` at the end and at every pause, so the added p95 is ``s`` and
  ``cut(s) = 1 - E[(1 - S(s))^K]`` with ``S`` the survival function of the pauses. With Poisson
  pause counts of mean ``lambda``: ``cut(s) = 1 - exp(-lambda S(s))``; exponential pauses of mean
  ``mu`` then give ``1 - exp(-lambda exp(-s / mu))`` (the closed form the tests pin).
- **The scenario's own setting**: its ``endpointing`` stage (any distribution: a semantic detector's
  bimodal wait, a mixture) is drawn for the end and, independently, for every pause. By default that
  assumes the detector waits at a pause as it waits at an end (an upper bound on its cut-off share:
  a detector that tells them apart cuts off fewer); ``false_end_rate`` says how often a turn
  detector's mixture takes its short "complete" wait at a pause instead.

The frontier is the fixed-timeout curve over ``s``; every setting sits on or off it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pydantic import Field, ValidationError, model_validator

from voicebudget._errors import ScenarioError
from voicebudget._model import DataModel
from voicebudget._stages import StageSpec

__all__ = [
    "PAUSE_FILE_SUFFIXES",
    "EndpointingFrontier",
    "FrontierPoint",
    "PauseModel",
    "PauseSpec",
    "endpointing_frontier",
    "few_pauses_warning",
    "load_pauses",
]

FloatArray = NDArray[np.float64]

LN20 = math.log(20.0)
"""An exponential's p95 is ``mu ln 20``: a pause distribution given only by its p95 (as livekit/agents
PR 3640 gives them) is the exponential through it."""

DEFAULT_GRID_MS = tuple(float(x) for x in range(0, 4001, 25))
"""Fixed timeouts the frontier is drawn at, ms (0 to 4 s every 25 ms)."""

PAUSE_FILE_SUFFIXES = (".toml", ".yaml", ".yml", ".csv", ".json")

MIN_PAUSES = 20
"""Measured pauses below which the frontier is flagged: from ``n`` pauses the cut-off share of a timeout
moves in steps of ``1/n`` per pause, so a share near 5% (a usual target) wants 20 or more."""


def few_pauses_warning(pauses: PauseModel) -> str | None:
    """``"the frontier rests on 1 measured pause: ..."`` when fewer than :data:`MIN_PAUSES` pauses were
    given (a file's samples or a recording's); None otherwise (a given distribution is drawn 200,000 times)."""
    n = int(pauses.pauses_ms.size)
    if n >= MIN_PAUSES:
        return None
    return (f"the frontier rests on {n} measured pause{'s' if n != 1 else ''}: its cut-off shares move in steps "
            f"of {1 / n:.0%} (a share near 5% wants {MIN_PAUSES}+)")  # fmt: skip


@dataclass(frozen=True)
class PauseModel:
    """Mid-turn pauses: their durations and how many a turn has.

    :ivar pauses_ms: ``float64[n]`` pause durations, ms (observed, or drawn from a given distribution).
    :ivar pauses_per_turn: Poisson mean of the number of pauses in a turn, when ``counts`` is empty.
    :ivar counts: ``int64[n_turns]`` observed pauses per turn (recordings); drawn from instead of Poisson.
    :ivar source: where the pauses come from (file, recording, publication).
    """

    pauses_ms: FloatArray
    pauses_per_turn: float = 1.0
    counts: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    source: str = ""

    def survival(self, s_ms: FloatArray) -> FloatArray:
        """``S(s) = P(pause > s)`` from the pause samples, ``float64[len(s_ms)]``."""
        srt = np.sort(self.pauses_ms)
        return 1.0 - np.searchsorted(srt, s_ms, side="right") / srt.size

    def cut_share(self, survival: FloatArray) -> FloatArray:
        """``1 - E[(1 - S)^K]`` for each survival value (the share of turns with a pause beyond the wait)."""
        if self.counts.size:
            k, n = np.unique(self.counts, return_counts=True)
            keep = (1.0 - survival)[:, None] ** k[None, :]
            out: FloatArray = 1.0 - (keep * (n / n.sum())[None, :]).sum(axis=1)
            return out
        poisson: FloatArray = 1.0 - np.exp(-self.pauses_per_turn * survival)
        return poisson

    def draw_counts(self, rng: np.random.Generator, n: int) -> NDArray[np.int64]:
        if self.counts.size:
            return self.counts[rng.integers(0, self.counts.size, n)]
        return rng.poisson(self.pauses_per_turn, n).astype(np.int64)


class PauseSpec(DataModel):
    """A pauses file (``--pauses x.toml``): one of ``samples_ms``, ``p95_ms`` (an exponential through
    that p95) or ``pauses`` (any distribution a scenario stage may be), and the pauses per turn.

    :ivar pauses_per_turn: Poisson mean of pauses per caller turn (default 1: an assumption; measure it
        from recordings).
    :ivar source: where the figures come from.
    """

    source: str = ""
    samples_ms: tuple[float, ...] | None = None
    p95_ms: float | None = Field(default=None, gt=0)
    pauses: StageSpec | None = None
    pauses_per_turn: float = Field(default=1.0, gt=0, le=100)

    @model_validator(mode="after")
    def _one(self) -> PauseSpec:
        given = [n for n in ("samples_ms", "p95_ms", "pauses") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of samples_ms, p95_ms, pauses (got {', '.join(given) or 'none'})")
        if self.samples_ms is not None and (not self.samples_ms or min(self.samples_ms) < 0):
            raise ValueError("samples_ms: at least one pause, every one >= 0 ms")
        return self

    def model(self, rng: np.random.Generator, n: int = 200_000, origin: str = "") -> PauseModel:
        """The pause model (a given distribution drawn ``n`` times with ``rng``)."""
        if self.samples_ms is not None:
            arr = np.asarray(self.samples_ms, dtype=np.float64)
        elif self.p95_ms is not None:
            arr = rng.exponential(self.p95_ms / LN20, n)
        else:
            assert self.pauses is not None
            arr = np.asarray(self.pauses.sample(rng, n), dtype=np.float64)
        return PauseModel(arr, self.pauses_per_turn, source=self.source or origin)


def load_pauses(path: str | Path, *, rng: np.random.Generator | None = None, n: int = 200_000) -> PauseModel:
    """Read mid-turn pauses: a CSV/JSON of pause samples (ms, as an ``empirical`` stage's file), a
    TOML/YAML :class:`PauseSpec`, or a call recording (its caller's pauses and pauses per turn).

    :param rng: draws a given distribution (default seed 1).
    :raises ScenarioError: unreadable file, bad values (named by field), a recording with no pause.
    """
    from voicebudget._io import read_document, validation_error
    from voicebudget.audio._load import is_audio

    path = Path(path)
    origin = str(path)
    rng = rng or np.random.default_rng(1)
    suffix = path.suffix.lower()
    if is_audio(path):
        from voicebudget.audio._check import analyse_recording

        call = analyse_recording(path).call
        if not call.pauses_ms:
            raise ScenarioError("the caller never paused mid-turn in this recording (no pause to fit)", origin=origin)
        counts = np.asarray(call.pauses_per_turn or (0,), dtype=np.int64)
        return PauseModel(np.asarray(call.pauses_ms, dtype=np.float64), counts=counts, source=origin)
    if suffix in (".csv", ".json"):
        from voicebudget._distributions import _read_samples

        try:
            samples = _read_samples(path, None)
        except ValueError as exc:
            raise ScenarioError(str(exc).removeprefix(f"{origin}: "), origin=origin) from None
        if not len(samples):  # `[]` reads as no samples, which the frontier cannot draw from
            raise ScenarioError("no pause samples: at least one is needed", origin=origin)
        return PauseModel(np.asarray(samples, dtype=np.float64), source=origin)
    if suffix not in (".toml", ".yaml", ".yml"):
        raise ScenarioError(f"unknown pauses file type {suffix!r}; allowed: {', '.join(PAUSE_FILE_SUFFIXES)}, "
                            "or a recording", origin=origin)  # fmt: skip
    doc = read_document(path)
    try:
        spec = PauseSpec.model_validate(doc)
    except ValidationError as exc:
        raise validation_error(exc, origin, doc) from None
    return spec.model(rng, n, origin)


@dataclass(frozen=True)
class FrontierPoint:
    """One endpointing setting on the trade-off.

    :ivar label: what the setting is (``"timeout 500 ms"``, a scenario's variant).
    :ivar added_p95_ms: the latency it adds at the end of a turn, at the target percentile, ms.
    :ivar cut_share: the share of turns it ends early at a mid-turn pause (0-1).
    """

    label: str
    added_p95_ms: float
    cut_share: float

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "added_ms": self.added_p95_ms, "cut_share": self.cut_share}


@dataclass(frozen=True)
class EndpointingFrontier:
    """The fixed-timeout curve and the scenario's settings marked on it.

    :ivar timeouts_ms: ``float64[n]`` the fixed timeouts; :ivar cut_share: ``float64[n]`` their cut-off shares.
    :ivar settings: the scenario's baseline and variants as points.
    :ivar percentile: the percentile the added latency is judged at.
    """

    scenario: str
    pauses: PauseModel
    timeouts_ms: FloatArray
    cut_share: FloatArray
    settings: tuple[FrontierPoint, ...]
    percentile: float = 95.0

    def timeout_for(self, max_cut_share: float) -> float | None:
        """The shortest fixed timeout that cuts off at most ``max_cut_share`` of turns, ms (None: none on the grid)."""
        ok = np.flatnonzero(self.cut_share <= max_cut_share)
        return float(self.timeouts_ms[ok[0]]) if ok.size else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "percentile": self.percentile,
            "pauses": {
                "source": self.pauses.source,
                "n": int(self.pauses.pauses_ms.size),
                "p50_ms": float(np.percentile(self.pauses.pauses_ms, 50)),
                "p95_ms": float(np.percentile(self.pauses.pauses_ms, 95)),
                "pauses_per_turn": float(self.pauses.counts.mean()) if self.pauses.counts.size
                else self.pauses.pauses_per_turn,
                "warning": few_pauses_warning(self.pauses),
            },
            "frontier": [{"timeout_ms": float(s), "added_ms": float(s), "cut_share": float(c)}
                         for s, c in zip(self.timeouts_ms, self.cut_share, strict=True)],
            "settings": [p.to_dict() for p in self.settings],
        }  # fmt: skip


def at_pauses(endpointing: Any, false_end_rate: float | None) -> Any:
    """The wait a setting applies at a mid-turn pause. A turn detector's mixture (its first component:
    the wait when it judges the turn complete, e.g. ``min_endpointing_delay``; the others: unsure) takes
    its first component at a pause with probability ``false_end_rate`` (how often it judges a pause an
    end), the rest in their own proportions. Anything else (or ``false_end_rate`` None): the same wait
    as at an end."""
    from voicebudget._distributions import Mixture

    if false_end_rate is None or not isinstance(endpointing, Mixture) or len(endpointing.components) < 2:
        return endpointing
    rest = sum(endpointing.weights[1:])
    tail = [w / rest * (1.0 - false_end_rate) if rest > 0 else (1.0 - false_end_rate) / (len(endpointing.weights) - 1)
            for w in endpointing.weights[1:]]  # fmt: skip
    return endpointing.model_copy(update={"weights": (false_end_rate, *tail)})


def setting_point(
    label: str,
    endpointing: Any,
    pauses: PauseModel,
    rng: np.random.Generator,
    n: int,
    percentile: float,
    false_end_rate: float | None = None,
) -> FrontierPoint:
    """A stage's point: its wait's percentile, and by Monte Carlo over ``n`` turns the share with a
    pause longer than the wait drawn for it (:func:`at_pauses`, drawn independently per pause)."""
    wait_end = np.asarray(endpointing.sample(rng, n), dtype=np.float64)
    counts = pauses.draw_counts(rng, n)
    total = int(counts.sum())
    cut = np.zeros(n, dtype=bool)
    if total:
        p = pauses.pauses_ms[rng.integers(0, pauses.pauses_ms.size, total)]
        w = np.asarray(at_pauses(endpointing, false_end_rate).sample(rng, total), dtype=np.float64)
        owner = np.repeat(np.arange(n), counts)
        np.logical_or.at(cut, owner, p > w)
    return FrontierPoint(label, float(np.percentile(wait_end, percentile)), float(cut.mean()))


def endpointing_frontier(
    endpointing: Mapping[str, Any],
    pauses: PauseModel,
    *,
    scenario: str = "",
    percentile: float = 95.0,
    timeouts_ms: Sequence[float] = DEFAULT_GRID_MS,
    samples: int = 200_000,
    seed: int = 1,
    false_end_rate: float | None = None,
) -> EndpointingFrontier:
    """The fixed-timeout frontier (exact from the pause samples) and each given setting's point.

    :param endpointing: label -> an endpointing stage (anything with ``sample(rng, n)``: a scenario's
        ``pipeline.endpointing`` and its variants').
    :param pauses: the mid-turn pauses (:func:`load_pauses`).
    :param percentile: the added latency's percentile (the scenario budget's).
    :param timeouts_ms: the fixed timeouts to draw the curve at, ms.
    :param samples: Monte Carlo turns per setting; :param seed: their seed.
    :param false_end_rate: for a turn detector's mixture, how often it judges a pause an end (0-1);
        None: it waits at a pause as at an end (:func:`at_pauses`).
    :raises ScenarioError: ``false_end_rate`` outside 0-1.
    :returns: the frontier; see the module docstring for the model and its assumption.
    """
    if false_end_rate is not None and not 0.0 <= false_end_rate <= 1.0:
        raise ScenarioError(f"must be within 0-1, got {false_end_rate!r}", field="false_end_rate")
    grid = np.asarray(timeouts_ms, dtype=np.float64)
    cut = pauses.cut_share(pauses.survival(grid))
    rng = np.random.default_rng(seed)
    points = tuple(
        setting_point(k, v, pauses, rng, samples, percentile, false_end_rate) for k, v in endpointing.items()
    )
    return EndpointingFrontier(scenario, pauses, grid, cut, points, percentile)


def scenario_endpointing(path: str | Path) -> tuple[str, dict[str, Any], float]:
    """A scenario file's endpointing stage per variant (baseline first), its name and percentile.

    :raises ScenarioError: the file is invalid, or a pipeline is not a ``voice_turn`` (no endpointing stage).
    """
    from voicebudget._scenario import load_scenario

    sc = load_scenario(path)
    out: dict[str, Any] = {}
    for name, pipe in sc.pipelines().items():
        stage = getattr(pipe, "endpointing", None)
        if stage is None:
            raise ScenarioError(f"variant {name!r} is not a voice_turn: it has no endpointing stage", origin=str(path))
        out[name] = stage
    return sc.name, out, sc.budget.percentile


def frontier_for_scenario(
    scenario: str | Path, pauses: str | Path, *, false_end_rate: float | None = None, samples: int = 200_000
) -> EndpointingFrontier:
    """``voicebudget endpointing SCENARIO --pauses FILE``: the frontier with the scenario's endpointing
    (baseline and variants) marked; the added latency at the scenario budget's percentile.

    :raises ScenarioError: an invalid scenario or pauses file (see :func:`load_pauses`).
    """
    name, stages, percentile = scenario_endpointing(scenario)
    model = load_pauses(pauses)
    return endpointing_frontier(
        stages, model, scenario=name, percentile=percentile, samples=samples, false_end_rate=false_end_rate
    )
