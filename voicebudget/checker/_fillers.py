"""Filler and fast-path policies judged offline: replay turns under a policy that speaks a filler when it
decides the reply will be late, and count what it does.

A turn is the guard's view of it (:mod:`voicebudget.checker._guard`): its stages' critical-path times laid
end to end from the end of the user's speech, stage ``k`` running from ``s_k = x_1 + ... + x_{k-1}`` to
``s_k + x_k``; the reply's first audio comes at ``v = s_K + x_K`` (its voice-to-voice latency). A policy
decides, from what the agent can know during the turn, an instant ``f < v`` to fire a filler (or never).
The filler is heard ``filler_ms`` later, and the reply cuts it off if it comes first, so the caller hears
the agent first at ``h = min(v, f + filler_ms)`` (``h = v`` without a filler).

Policies (one class each, a ``kind`` for the command line's ``--policy``):

- :class:`GuardPolicy` (``p-fit:Q``): the live budget guard asked every ``poll_ms`` from the end of speech,
  as :class:`~voicebudget.integrations.livekit.BudgetHook` polls it; fires at the first poll where the
  probability that the turn fits is below ``Q``. The guard predicts from turns other than the ones replayed
  (its own simulation, or its recorded turns), so the report is not judged on the guard's training data.
- :class:`TimeoutPolicy` (``timeout:MS[@STAGE]``): a fixed timeout on one stage, as huggingface
  speech-to-speech PR 383 does (a filler sentence when the LLM's first chunk has not come
  ``filler_sentence_delay_s`` = 1.0 s after the request; github.com/huggingface/speech-to-speech/pull/383,
  read 2026-12-02): fires at ``s_k + MS`` when ``x_k > MS``; the stage is the first whose name starts with
  ``llm`` unless named.
- :class:`MedianPolicy` (``median:MS[@STAGE]``, ``median:budget``): the expected wait from each stage's
  median, as open-nvr PR 442 does (a filler before a slow tool when "this site's own recent medians" of the
  stages still to come add up to at least ``filler_min_ms`` = 1500 ms; github.com/open-nvr/open-nvr/pull/442,
  read 2026-12-02): at the start of a stage that runs, fires when the medians of it and the later stages add
  up to ``MS`` or more. The medians are the guard's (the turns it learnt from). That sum only shrinks as the
  turn goes on, so without ``@STAGE`` the rule decides at the end of speech; PR 442 asks it at a tool call.
  ``median:budget`` compares the time spent plus that expected wait with the budget's total instead, at the
  start of every stage.

For each policy the report gives how often it fires, how many fillers were wasted (fired on a turn whose
reply came within the budget anyway), the share of turns rescued (over budget without the filler, heard
within it with), the share still over budget (``h > total``), and the latency hidden at the budget's
percentile: ``P(v) - P(h)``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from voicebudget._errors import ScenarioError, param
from voicebudget._report import percentiles
from voicebudget.checker._guard import BudgetGuard, parallel_phases, simulated_rows, variant_tree

if TYPE_CHECKING:
    from voicebudget._budget import Budget
    from voicebudget._scenario import Scenario

__all__ = [
    "DEFAULT_POLICIES",
    "FillerPolicy",
    "FillerReport",
    "FillerResult",
    "GuardPolicy",
    "MedianPolicy",
    "TimeoutPolicy",
    "evaluate_fillers",
    "guard_report",
    "guard_report_file",
    "parse_policy",
]

FloatArray = NDArray[np.float64]
NEVER = math.inf
"""A turn's firing instant when the policy does not fire."""


@dataclass(frozen=True)
class _Turns:
    """The replayed turns as the policies see them (ms, ``float64[n, k]`` / ``float64[n]``)."""

    stages: tuple[str, ...]
    rows: FloatArray
    starts: FloatArray
    ends: FloatArray
    v2v: FloatArray
    guard: BudgetGuard


class FillerPolicy:
    """A policy that decides when to speak a filler (module docstring). Each member has a ``kind``, its
    ``--policy`` spelling (:func:`parse_policy`)."""

    kind: ClassVar[str] = ""

    @property
    def label(self) -> str:
        """How the policy is written on the command line (``timeout:1000@llm``)."""
        raise NotImplementedError

    def fire_ms(self, turns: _Turns) -> FloatArray:
        """Each turn's firing instant, ms after the end of speech (``inf``: never), < the turn's latency."""
        raise NotImplementedError

    def _stage(self, turns: _Turns, stage: str) -> int:
        if stage not in turns.stages:
            raise ScenarioError(f"{self.label}: no stage {stage!r}; stages: {list(turns.stages)}", origin=_POLICIES)
        return turns.stages.index(stage)


_POLICIES = param("policies")


@dataclass(frozen=True)
class GuardPolicy(FillerPolicy):
    """Fire at the first poll where the guard's fits-probability is below ``threshold`` (module docstring).

    :param threshold: in (0, 1); None: the guard's own threshold (by default the budget's percentile / 100).
    :param poll_ms: ms between polls, from the end of speech (BudgetHook's default: 20 ms).
    """

    threshold: float | None = None
    poll_ms: float = 20.0
    kind: ClassVar[str] = "p-fit"

    def __post_init__(self) -> None:
        if self.threshold is not None and not 0.0 < self.threshold < 1.0:
            raise ScenarioError(f"p-fit: the threshold must be in (0, 1), got {self.threshold}", origin=_POLICIES)
        if not 0.0 < self.poll_ms < math.inf:
            raise ScenarioError(f"p-fit: poll_ms must be a finite number > 0, got {self.poll_ms}", origin=_POLICIES)

    @property
    def label(self) -> str:
        return self.kind if self.threshold is None else f"{self.kind}:{self.threshold:g}"

    def fire_ms(self, turns: _Turns) -> FloatArray:
        guard = turns.guard
        q = guard.threshold if self.threshold is None else self.threshold
        fire = np.full(turns.v2v.size, NEVER)
        pending = np.flatnonzero(turns.v2v > 0.0)
        tick = 0
        while pending.size:
            t = tick * self.poll_ms
            pending = pending[turns.v2v[pending] > t]  # answered turns leave
            if not pending.size:
                break
            k = (turns.ends[pending] <= t).sum(axis=1)  # the stage running at t
            for stage in np.unique(k):
                at = pending[k == stage]
                in_stage = t - turns.starts[at, stage]
                p_fit = guard._p_fit_many(int(stage), np.full(at.size, t), in_stage)
                fire[at[p_fit < q]] = t
            pending = pending[fire[pending] == NEVER]
            tick += 1
        return fire


@dataclass(frozen=True)
class TimeoutPolicy(FillerPolicy):
    """Fire ``after_ms`` into ``stage`` if it is still running (module docstring; huggingface
    speech-to-speech PR 383: 1000 ms into the LLM request).

    :param after_ms: ms, > 0.
    :param stage: default the first stage whose name starts with ``llm``.
    """

    after_ms: float = 1000.0
    stage: str | None = None
    kind: ClassVar[str] = "timeout"

    def __post_init__(self) -> None:
        if not 0.0 < self.after_ms < math.inf:
            raise ScenarioError(
                f"timeout: the wait must be a finite number > 0 ms, got {self.after_ms}", origin=_POLICIES
            )

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.after_ms:g}" + (f"@{self.stage}" if self.stage else "")

    def fire_ms(self, turns: _Turns) -> FloatArray:
        stage = self.stage
        if stage is None:
            stage = next((s for s in turns.stages if s.startswith("llm")), None)
            if stage is None:
                raise ScenarioError(
                    f"{self.label}: no stage named llm...; name the stage it watches (timeout:MS@STAGE), one of "
                    f"{list(turns.stages)}",
                    origin=_POLICIES,
                )
        k = self._stage(turns, stage)
        late = turns.rows[:, k] > self.after_ms
        return np.where(late, turns.starts[:, k] + self.after_ms, NEVER)


@dataclass(frozen=True)
class MedianPolicy(FillerPolicy):
    """Fire at the start of a stage when the medians still to come say the wait is long (module docstring;
    open-nvr PR 442: at least 1500 ms).

    :param min_wait_ms: fire when the medians of the stage and the later ones add up to this, ms; None: when
        the time spent plus that sum exceeds the budget's total (``median:budget``).
    :param stage: decide only at the start of this stage (when it runs in the turn); default at every stage.
    """

    min_wait_ms: float | None = 1500.0
    stage: str | None = None
    kind: ClassVar[str] = "median"

    def __post_init__(self) -> None:
        if self.min_wait_ms is not None and not 0.0 <= self.min_wait_ms < math.inf:
            raise ScenarioError(
                f"median: the wait must be a finite number >= 0 ms or 'budget', got {self.min_wait_ms}",
                origin=_POLICIES,
            )

    @property
    def label(self) -> str:
        wait = "budget" if self.min_wait_ms is None else f"{self.min_wait_ms:g}"
        return f"{self.kind}:{wait}" + (f"@{self.stage}" if self.stage else "")

    def fire_ms(self, turns: _Turns) -> FloatArray:
        medians = np.median(turns.guard._rows, axis=0)
        expected = np.cumsum(medians[::-1])[::-1]  # medians of stage k and the later ones
        ks = range(len(turns.stages)) if self.stage is None else [self._stage(turns, self.stage)]
        fire = np.full(turns.v2v.size, NEVER)
        total = turns.guard.budget.total_ms
        for k in ks:
            start = turns.starts[:, k]
            runs = (turns.rows[:, k] > 0.0) & (start < turns.v2v)
            if self.min_wait_ms is None:
                late = start + expected[k] > total
            else:
                late = np.full(start.size, expected[k] >= self.min_wait_ms)
            fire = np.where((fire == NEVER) & runs & late, start, fire)
        return fire


DEFAULT_POLICIES: tuple[FillerPolicy, ...] = (GuardPolicy(), TimeoutPolicy(), MedianPolicy(None))
"""``guard-report``'s policies when none are given: the guard at its own threshold, PR 383's 1 s timeout on
the LLM (left out for turns without a stage named ``llm...``, such as barge-ins), and PR 442's median wait
judged against the budget left."""

_SPEC = re.compile(r"(?P<kind>[a-z-]+)(?::(?P<value>[^@]+))?(?:@(?P<stage>.+))?")


def parse_policy(text: str) -> FillerPolicy:
    """A policy from its ``--policy`` spelling: ``p-fit[:Q]``, ``timeout[:MS][@STAGE]``,
    ``median[:MS|budget][@STAGE]``.

    :raises ScenarioError: an unknown kind (the message lists the known ones) or a bad value.
    """
    m = _SPEC.fullmatch(text.strip())
    kinds = {cls.kind: cls for cls in (GuardPolicy, TimeoutPolicy, MedianPolicy)}
    if m is None or m["kind"] not in kinds:
        raise ScenarioError(
            f"unknown policy {text!r}; known: p-fit[:Q], timeout[:MS][@STAGE], median[:MS|budget][@STAGE]",
            origin=_POLICIES,
        )
    kind, value, stage = m["kind"], m["value"], m["stage"]
    if kind == "p-fit" and stage:
        raise ScenarioError(f"{text!r}: p-fit watches every stage; it takes no @STAGE", origin=_POLICIES)
    if kind == "median" and value == "budget":
        return MedianPolicy(None, stage)
    number = _number(text, value)
    if kind == "p-fit":
        return GuardPolicy(number)
    if kind == "timeout":
        return TimeoutPolicy(1000.0 if number is None else number, stage)
    return MedianPolicy(1500.0 if number is None else number, stage)


def _number(text: str, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        raise ScenarioError(f"{text!r}: {value!r} is not a number", origin=_POLICIES) from None


@dataclass(frozen=True)
class FillerResult:
    """One policy replayed over the turns (shares of all turns, in [0, 1]; ms).

    :ivar fired: turns where it fired before the reply.
    :ivar wasted: turns where it fired although the reply came within the budget.
    :ivar rescued: turns over budget whose filler was heard within it.
    :ivar still_over: turns whose first audio heard (filler or reply) is after the budget's total.
    :ivar heard_ms: the first audio heard at the budget's percentile.
    :ivar hidden_ms: the reply's latency at that percentile minus ``heard_ms``.
    :ivar fire_p50_ms: the median firing instant among the turns it fired in (None: it never fired).
    """

    policy: str
    fired: float
    wasted: float
    rescued: float
    still_over: float
    heard_ms: float
    hidden_ms: float
    fire_p50_ms: float | None

    @property
    def wasted_of_fired(self) -> float | None:
        """The share of its fillers that were wasted (None: it never fired)."""
        return self.wasted / self.fired if self.fired else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "fired": self.fired,
            "wasted": self.wasted,
            "wasted_of_fired": self.wasted_of_fired,
            "rescued": self.rescued,
            "still_over": self.still_over,
            "heard_ms": self.heard_ms,
            "hidden_ms": self.hidden_ms,
            "fire_p50_ms": self.fire_p50_ms,
        }


@dataclass(frozen=True)
class FillerReport:
    """Policies side by side on the same turns (:func:`evaluate_fillers`).

    :ivar reply_ms: the reply's voice-to-voice latency at the budget's percentile, without any filler.
    :ivar over: the share of turns over the budget's total without a filler.
    :ivar seed: the seed the turns were simulated from (None: turns given).
    """

    name: str
    budget: Budget
    n_turns: int
    filler_ms: float
    reply_ms: float
    over: float
    results: tuple[FillerResult, ...]
    seed: int | None = None
    guard_turns: int = 0

    @property
    def passed(self) -> bool:
        """Some policy has the first audio heard within the budget at its percentile."""
        return any(r.heard_ms <= self.budget.total_ms for r in self.results)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "budget": {"total_ms": self.budget.total_ms, "percentile": self.budget.percentile},
            "n_turns": self.n_turns,
            "guard_turns": self.guard_turns,
            "seed": self.seed,
            "filler_ms": self.filler_ms,
            "reply_ms": self.reply_ms,
            "over": self.over,
            "passed": self.passed,
            "policies": [r.to_dict() for r in self.results],
        }


def evaluate_fillers(
    turns_ms: Mapping[str, ArrayLike],
    guard: BudgetGuard,
    policies: Sequence[FillerPolicy] = DEFAULT_POLICIES,
    *,
    filler_ms: float = 0.0,
    name: str = "turns",
) -> FillerReport:
    """Replay turns under each policy (module docstring).

    :param turns_ms: stage -> ``float64[n_turns]`` critical-path ms per turn (a row sums to the turn's
        voice-to-voice latency), the guard's stages (its phases are merged the same way; NaN counts 0).
    :param guard: predicts for the ``p-fit`` policies, gives the ``median`` policies their medians and the
        budget everything is judged against; build it from other turns than ``turns_ms``.
    :param filler_ms: from firing to the filler's first audio heard, ms (0: a clip ready to play; a filler
        synthesised when it fires takes the TTS's first-byte time and the transport).
    :raises ScenarioError: stages that differ from the guard's, no turn, a policy that cannot apply (a stage
        it names is missing), or ``filler_ms`` negative or not finite.
    """
    if not 0.0 <= filler_ms < math.inf:
        raise ScenarioError(f"must be a finite number >= 0 ms, got {filler_ms}", origin=param("filler_ms"))
    turns = _turns(turns_ms, guard)
    if policies is DEFAULT_POLICIES and not any(s.startswith("llm") for s in turns.stages):
        policies = tuple(p for p in policies if not isinstance(p, TimeoutPolicy))  # no LLM to time out on
    budget = guard.budget
    p = budget.percentile
    reply = float(percentiles(turns.v2v, [p])[0])
    over = turns.v2v > budget.total_ms
    results = []
    for policy in policies:
        fire = policy.fire_ms(turns)
        fired = fire < turns.v2v
        heard = np.where(fired, np.minimum(turns.v2v, fire + filler_ms), turns.v2v)
        heard_p = float(percentiles(heard, [p])[0])
        results.append(
            FillerResult(
                policy.label,
                float(np.mean(fired)),
                float(np.mean(fired & ~over)),
                float(np.mean(over & (heard <= budget.total_ms))),
                float(np.mean(heard > budget.total_ms)),
                heard_p,
                reply - heard_p,
                float(np.median(fire[fired])) if fired.any() else None,
            )
        )
    return FillerReport(name, budget, turns.v2v.size, filler_ms, reply, float(np.mean(over)), tuple(results))


def _turns(turns_ms: Mapping[str, ArrayLike], guard: BudgetGuard) -> _Turns:
    merged = guard._merge_phases(turns_ms) if guard.phases else dict(turns_ms)
    if set(merged) != set(guard.stages):
        raise ScenarioError(
            f"the turns' stages {sorted(merged)} are not the guard's {sorted(guard.stages)}", origin=param("turns_ms")
        )
    rows = np.nan_to_num(np.stack([np.asarray(merged[k], dtype=np.float64) for k in guard.stages], axis=1))
    if rows.shape[0] == 0:
        raise ScenarioError("no turn to replay", origin=param("turns_ms"))
    ends = np.cumsum(rows, axis=1)
    return _Turns(guard.stages, rows, ends - rows, ends, ends[:, -1], guard)


def guard_report(
    scenario: Scenario,
    policies: Sequence[FillerPolicy] = DEFAULT_POLICIES,
    *,
    variant: str = "baseline",
    turns: int = 20_000,
    guard_turns: int = 20_000,
    seed: int | None = None,
    budget: Budget | None = None,
    filler_ms: float = 0.0,
    name: str | None = None,
) -> FillerReport:
    """Simulate a scenario's variant twice, one set of turns for the guard to learn from and another to
    replay, and judge the policies on the second (:func:`evaluate_fillers`); what ``voicebudget
    guard-report`` does. A scenario fitted to a trace (``voicebudget fit``) replays turns like the trace's.
    Stages that run in parallel are one phase (a voice turn's endpointing wait and ASR finalisation are
    ``commit``, as the LiveKit hook names it): a live turn cannot tell which of them holds it up while they
    run (:func:`~voicebudget.checker._guard.parallel_phases`).

    :param turns: turns replayed, >= 1. :param guard_turns: turns the guard learns from, >= 1.
    :param seed: default the scenario's ``seed`` (recorded in the report).
    :param budget: default the scenario's.
    :raises ScenarioError: no such variant, turn counts < 1, or as :func:`evaluate_fillers`.
    """
    for what, n in (("turns", turns), ("guard_turns", guard_turns)):
        if n < 1:
            raise ScenarioError(f"must be >= 1, got {n}", origin=param(what))
    pipelines = scenario.pipelines()
    if variant not in pipelines:
        raise ScenarioError(f"no variant {variant!r}; variants: {list(pipelines)}", origin=param("variant"))
    base = scenario.seed if seed is None else seed
    learn, replay = np.random.SeedSequence(base).spawn(2)
    judged = budget or scenario.budget
    if judged.percentile >= 100:  # the guard fits a turn at its percentile: p100 has no finite threshold below 1
        origin, where = (param("budget"), "percentile") if budget else (scenario.origin, "budget.percentile")
        raise ScenarioError(_BELOW_100, origin=origin, field=where)
    learnt = _rows(scenario, variant, guard_turns, _int(learn), "guard_turns")
    guard = BudgetGuard(judged, learnt, phases=parallel_phases(variant_tree(scenario, variant)) or None)
    replayed = _rows(scenario, variant, turns, _int(replay), "turns")
    report = evaluate_fillers(replayed, guard, policies, filler_ms=filler_ms, name=name or variant)
    return replace(report, seed=base, guard_turns=guard_turns)


_BELOW_100 = "the guard needs a percentile below 100 (its threshold is the percentile / 100), e.g. 99"


def _rows(scenario: Scenario, variant: str, samples: int, seed: int, what: str) -> dict[str, FloatArray]:
    """:func:`simulated_rows`, a guard's refusal naming the parameter that asked for the turns (``what``)."""
    try:
        return simulated_rows(scenario, variant=variant, samples=samples, seed=seed)
    except ScenarioError as exc:
        if exc.field != "samples":
            raise
        raise ScenarioError(exc.detail, origin=param(what)) from None


def _int(seq: np.random.SeedSequence) -> int:
    return int(seq.generate_state(1, np.uint64)[0] % (2**63 - 1))


def guard_report_file(
    path: str | Path,
    policies: Sequence[str] = (),
    *,
    variant: str = "baseline",
    turns: int = 20_000,
    guard_turns: int = 20_000,
    seed: int | None = None,
    budget_ms: float | None = None,
    percentile: float | None = None,
    filler_ms: float = 0.0,
    allowed_roots: Sequence[str | Path] = (),
) -> FillerReport:
    """Load a scenario file and run :func:`guard_report` (``voicebudget guard-report``).

    :param policies: ``--policy`` spellings (:func:`parse_policy`); default :data:`DEFAULT_POLICIES`.
    :param budget_ms: replaces the file's budget total, ms; ``percentile`` its target percentile.
    :raises ScenarioError: an invalid file, policy or value (the message names the file or the parameter).
    """
    from voicebudget._budget import with_overrides
    from voicebudget._scenario import load_scenario

    parsed = tuple(parse_policy(p) for p in policies) or DEFAULT_POLICIES
    scenario = load_scenario(path, allowed_roots=allowed_roots)
    budget = with_overrides(scenario.budget, budget_ms, percentile)
    if budget.percentile >= 100:
        origin, where = (param("percentile"), "") if percentile is not None else (str(path), "budget.percentile")
        raise ScenarioError(_BELOW_100, origin=origin, field=where)
    return guard_report(
        scenario, parsed, variant=variant, turns=turns, guard_turns=guard_turns, seed=seed, budget=budget,
        filler_ms=filler_ms, name=f"{Path(path).name} {variant}",
    )  # fmt: skip
