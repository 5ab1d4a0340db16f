"""A live budget guard: during a turn, will the rest of it fit the budget?

A :class:`BudgetGuard` holds joint samples of the stages' critical-path time, one row per turn
(``float64[n_turns, n_stages]``, stages in pipeline order; each row sums to that turn's voice-to-voice
latency): simulated from a scenario (or a scenario fitted to a trace), measured by a
:class:`~voicebudget.TurnRecorder`, or learned online, turn by turn.

During a turn, in stage ``k`` after ``elapsed_ms`` since the end of the user's speech, of which
``in_stage_ms`` in stage ``k``, the rest of the turn is predicted from the rows where stage ``k`` took
at least ``in_stage_ms`` (it has not finished, so it is at least that long):

    rest_i = (x_ik - in_stage_ms) + sum_{j > k} x_ij,   for the rows with x_ik >= in_stage_ms

that is, the residual of the current stage given it has already lasted ``in_stage_ms`` plus the
remaining stages' sum, taken row by row, which keeps any correlation between stages in the samples.
The guard answers the probability that the turn fits (``P(elapsed_ms + rest <= total_ms)``) and the
rest of the turn at the budget's percentile.

Speed (a decision is a few microseconds; see ``benchmarks/bench_guard.py``): the conditioning level is
rounded *up* to a grid of ``levels`` quantiles of each stage (rows with ``x_ik >= g`` for the smallest
grid value ``g >= in_stage_ms``; conditioning on a slightly longer stage errs on the slow side), and
the sorted sums are precomputed per level (thinned to ``resolution`` ranks), so a decision is two
binary searches.

Past the data (fewer than ``min_rows`` rows lasted as long as ``in_stage_ms``), the guard assumes the
stage's excess beyond its longest ``min_rows`` values keeps the shape seen there (the stage's mean
residual life stays that of its tail, a peaks-over-threshold assumption): the rest is those rows'
excess over their threshold plus their remaining stages.
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from voicebudget._budget import Budget
from voicebudget._text import count, shown
from voicebudget.checker._recorder import Turn, TurnRecorder, instant_ns

if TYPE_CHECKING:
    from voicebudget._scenario import Scenario

__all__ = ["BudgetGuard", "GuardDecision", "GuardedTurn", "simulated_rows"]

FloatArray = NDArray[np.float64]
Clock = Callable[[], int]
Policy = Callable[["GuardDecision"], object]
_NS_PER_MS = 1_000_000


class GuardDecision(NamedTuple):
    """The guard's answer at one instant of a turn (all times in ms).

    :ivar stage: the stage the turn is in.
    :ivar elapsed_ms: time since the end of the user's speech.
    :ivar in_stage_ms: time spent so far in ``stage``.
    :ivar budget_left_ms: ``total_ms - elapsed_ms`` (negative once the budget is spent).
    :ivar rest_ms: the rest of the turn (to first audio) at the budget's percentile.
    :ivar slack_ms: ``budget_left_ms - rest_ms``: negative when, at the target percentile, the turn
        will not fit.
    :ivar p_fit: probability that the whole turn fits ``total_ms``, given what was spent.
    :ivar fits: ``p_fit >= threshold`` (the guard's threshold, by default the budget's percentile).
    :ivar rows: how many sample rows the prediction used.
    :ivar extrapolated: True when the stage has lasted longer than all but ``min_rows`` sample rows
        (the tail assumption of the module docstring was used).
    :ivar action: what the policy hook returned, when it was called (see :class:`GuardedTurn`).
    """

    stage: str
    elapsed_ms: float
    in_stage_ms: float
    budget_left_ms: float
    rest_ms: float
    slack_ms: float
    p_fit: float
    fits: bool
    rows: int
    extrapolated: bool = False
    action: object = None


@dataclass(frozen=True)
class _Level:
    """Rows whose current stage lasted at least ``at_ms``: their sorted rest (with ``at_ms`` added back)."""

    at_ms: float
    sums: FloatArray
    """sorted ``x_k + sum_{j>k} x_j`` over those rows (``float64[m]``); minus ``in_stage_ms`` = the rest"""
    counts: NDArray[np.int64]
    """``counts[i]``: how many of the level's rows have a sum <= ``sums[i]`` (``sums`` may be thinned)"""
    at_percentile: float
    """the level's sums at the budget's percentile (the ``ceil(p m)``-th smallest)"""
    size: int
    """the level's rows, m"""


class BudgetGuard:
    """Answers, during a turn, how much of the budget is left and whether the rest will fit.

    ::

        guard = voicebudget.BudgetGuard.from_scenario(
            scenario, samples=20_000, seed=1, phases={"commit": ["endpointing", "asr"]}  # parallel: one phase
        )
        live = guard.turn()                  # at the end of the user's speech
        live.enter("llm")                    # the turn reached the LLM
        decision = live.check()              # p_fit, rest_ms at p95, slack_ms
        if not decision.fits:
            ...                              # speak a filler, use the reply cache, a faster model

    :param budget: the voice-to-voice budget (its ``total_ms`` and ``percentile`` are used).
    :param samples_ms: stage name -> ``float64[n_turns]`` critical-path ms per turn, in pipeline
        order (the order stages are entered); the rows are joint (one turn each). NaN (a stage that
        did not run in a turn) counts as 0.
    :param threshold: ``fits`` means ``p_fit >= threshold``; default the budget's percentile / 100.
    :param policy: called by :meth:`GuardedTurn.check` with the first decision of a turn that does
        not fit; its return value is the decision's ``action``.
    :param levels: conditioning grid size per stage (see the module docstring), >= 2.
    :param resolution: sorted sums kept per grid level, >= 2: a level with more rows keeps this many
        evenly ranked ones, and ``p_fit`` is rounded down to the rank kept (error <= 1/resolution,
        on the slow side). Memory: about ``stages x levels x resolution x 8`` bytes (3.7 MB for
        7 stages at the defaults).
    :param min_rows: fewest rows a prediction uses, >= 1.
    :param window: keep only the last ``window`` turns when learning online (None: all).
    :param phases: phase name -> stages that run in parallel (or that the agent cannot tell apart),
        summed into one stage of that name. Critical-path time splits parallel stages by which one
        gated the answer (endpointing and ASR finalisation: whichever ended last), which a live turn
        cannot know while both run; ``{"commit": ["endpointing", "asr"]}`` makes them one phase.
    :raises ValueError: no stage, arrays of different lengths or not 1-D, no row, negative or
        infinite values, a threshold outside (0, 1), ``levels < 2``, ``resolution < 2`` or ``min_rows < 1``.
    """

    def __init__(
        self,
        budget: Budget,
        samples_ms: Mapping[str, ArrayLike],
        *,
        threshold: float | None = None,
        policy: Policy | None = None,
        levels: int = 64,
        resolution: int = 1024,
        min_rows: int = 50,
        window: int | None = None,
        phases: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        if threshold is None and budget.percentile >= 100:
            raise ValueError("threshold: give one in (0, 1); the default, the budget's percentile / 100, is 1 at p100")
        try:
            threshold = budget.percentile / 100.0 if threshold is None else float(threshold)
        except (OverflowError, TypeError):  # 10**400, text
            raise ValueError(f"threshold must be a number in (0, 1), got {shown(threshold)}") from None
        if not 0.0 < threshold < 1.0:
            raise ValueError(f"threshold must be in (0, 1), got {threshold}")
        if levels < 2 or min_rows < 1 or resolution < 2:
            raise ValueError(
                f"need levels >= 2, resolution >= 2 and min_rows >= 1; got {levels}, {resolution}, {min_rows}"
            )
        if window is not None and window < 1:
            raise ValueError(f"window must be >= 1 or None, got {window}")
        self.budget = budget
        self._total_ms = budget.total_ms
        self.threshold = threshold
        self.policy = policy
        self.levels = levels
        self.resolution = resolution
        self.min_rows = min_rows
        self.window = window
        self.phases = {k: tuple(v) for k, v in (phases or {}).items()}
        self._names: list[str] = []
        self._rows = np.empty((0, 0))
        self._set(samples_ms)

    # -- construction ----------------------------------------------------------------------------

    @classmethod
    def from_scenario(
        cls,
        scenario: Scenario,
        *,
        variant: str = "baseline",
        samples: int = 20_000,
        seed: int | np.random.Generator | None = None,
        budget: Budget | None = None,
        **options: Any,
    ) -> BudgetGuard:
        """Simulate a scenario's variant and keep each stage's critical-path time per turn.

        A scenario fitted to a trace works the same: ``from_scenario(parse_scenario(fit.document))``.

        :param variant: the pipeline variant (default the baseline).
        :param samples: simulated turns, >= 1.
        :param seed: an int, a ``numpy.random.Generator`` or None (fresh entropy).
        :param budget: default the scenario's budget.
        :param options: passed to :class:`BudgetGuard` (``threshold``, ``policy``, ...).
        :raises KeyError: no such variant (the message lists them).
        :raises ValueError: stages that run in parallel (``commit = "vad"``: endpointing and asr; an
            ``all_of``, ``k_of_n`` or ``race``) are not one phase of ``phases``.
        """
        _check_parallel_phases(variant_tree(scenario, variant), options.get("phases") or {})
        rows = simulated_rows(scenario, variant=variant, samples=samples, seed=seed)
        return cls(budget or scenario.budget, rows, **options)

    @classmethod
    def from_recorder(
        cls, recorder: TurnRecorder | Sequence[Turn], budget: Budget | None = None, **options: Any
    ) -> BudgetGuard:
        """The complete turns a :class:`~voicebudget.TurnRecorder` measured (credited time per stage).

        :param budget: default ``Budget()``.
        :raises ScenarioError: no complete turn.
        """
        from voicebudget._errors import ScenarioError
        from voicebudget.checker._analysis import measure

        turns = recorder.turns if isinstance(recorder, TurnRecorder) else tuple(recorder)
        complete = [t for t in turns if t.status == "complete"]
        if not complete:
            raise ScenarioError("no complete turn (with first_audio) to learn from", origin="recorder", field="turns")
        _, stages = measure(complete)
        return cls(budget or Budget(), stages, **options)

    def learn(self, turn: Turn) -> bool:
        """Add one finished turn of a recorder (online learning); stages new to the guard are added
        with 0 ms in the earlier rows.

        :returns: False (nothing learnt) when the turn is not complete.
        """
        if turn.status != "complete":
            return False
        from voicebudget.checker._analysis import measure

        _, stages = measure([turn])
        names = list(self._names) + [k for k in stages if k not in self._names]
        old = {k: self._rows[:, i] for i, k in enumerate(self._names)}
        n = self._rows.shape[0]
        merged = {
            k: np.concatenate([old.get(k, np.zeros(n)), np.nan_to_num(stages.get(k, np.zeros(1)))]) for k in names
        }
        if self.window is not None:
            merged = {k: v[-self.window :] for k, v in merged.items()}
        self._set(merged)
        return True

    def _merge_phases(self, samples_ms: Mapping[str, ArrayLike]) -> dict[str, ArrayLike]:
        """Stages of one phase summed into one column, at the place of the phase's first stage."""
        member = {s: phase for phase, stages in self.phases.items() for s in stages}
        out: dict[str, Any] = {}
        for name, values in samples_ms.items():
            phase = member.get(name)
            if phase is None:
                out[name] = values
            else:
                col = np.nan_to_num(np.asarray(values, dtype=np.float64))
                out[phase] = col if phase not in out else out[phase] + col
        return out

    def _set(self, samples_ms: Mapping[str, ArrayLike]) -> None:
        if self.phases:
            unknown = sorted({s for stages in self.phases.values() for s in stages} - set(samples_ms))
            if unknown and not self._names:
                raise ValueError(f"phases name stages without samples: {unknown}; stages: {list(samples_ms)}")
            samples_ms = self._merge_phases(samples_ms)
        names = list(samples_ms)
        if not names:
            raise ValueError("no stage samples: give stage name -> ms per turn")
        cols = [_column(samples_ms[k], k) for k in names]
        shapes = {c.shape for c in cols}
        if len(shapes) != 1 or cols[0].ndim != 1 or cols[0].size == 0:
            raise ValueError(f"stage samples must be 1-D arrays of one length >= 1; got shapes {sorted(shapes)}")
        rows = np.nan_to_num(np.stack(cols, axis=1), nan=0.0, posinf=np.inf)
        if not np.all(np.isfinite(rows)) or np.any(rows < 0):
            bad = [k for k, c in zip(names, cols, strict=True) if np.any(np.isinf(c)) or np.any(c < 0)]
            raise ValueError(f"stage samples must be finite and >= 0 ms; stages with other values: {bad}")
        self._names, self._rows = names, rows
        self._index = {k: i for i, k in enumerate(names)}
        self._tables = [self._stage_levels(i) for i in range(len(names))]

    def _stage_levels(self, k: int) -> tuple[list[float], list[_Level], _Level]:
        """Grid values, their levels, and the tail level of stage ``k``."""
        x = self._rows[:, k]
        rest = self._rows[:, k:].sum(axis=1)  # x_k + the later stages
        order = np.argsort(x, kind="stable")
        xs, rs = x[order], rest[order]
        n = xs.size
        m = min(self.min_rows, n)
        last = n - m  # rows [last:] are the longest m
        starts = sorted({round(q * last) for q in np.linspace(0.0, 1.0, self.levels)})
        grid: list[float] = []
        levels: list[_Level] = []
        for s in starts:
            g = float(xs[s])
            if grid and g == grid[-1]:
                continue
            first = int(np.searchsorted(xs, g, side="left"))  # every row with x_k >= g
            grid.append(g)
            levels.append(self._level(g, rs[first:]))
        thr = float(xs[last])
        tail = self._level(thr, rs[last:] - thr)  # excess over the threshold + later stages
        return grid, levels, tail

    def _p_fit_many(self, k: int, elapsed_ms: FloatArray, in_stage_ms: FloatArray) -> FloatArray:
        """:meth:`decide`'s ``p_fit`` in stage ``k`` at many instants at once (``float64[m]`` each; the same
        grid level and thinned rank as :meth:`decide`, no checks): what ``voicebudget guard-report`` asks."""
        grid, levels, tail = self._tables[k]
        j = np.searchsorted(np.asarray(grid), in_stage_ms, side="left")  # smallest grid value >= in_stage
        out = np.empty(in_stage_ms.shape)
        for u in np.unique(j):
            at = j == u
            level, shift = (levels[u], in_stage_ms[at]) if u < len(levels) else (tail, 0.0)
            pos = level.sums.searchsorted(self._total_ms - elapsed_ms[at] + shift, "right")
            out[at] = np.where(pos > 0, level.counts[np.maximum(pos - 1, 0)], 0) / level.size
        return out

    def _level(self, at_ms: float, sums: FloatArray) -> _Level:
        sums = np.sort(sums)
        m = sums.size
        q = min(m - 1, max(0, math.ceil(self.budget.percentile / 100.0 * m) - 1))
        keep = np.unique(np.round(np.linspace(0, m - 1, min(m, self.resolution))).astype(np.int64))
        return _Level(at_ms, sums[keep], keep + 1, float(sums[q]), m)

    # -- reading ---------------------------------------------------------------------------------

    @property
    def stages(self) -> tuple[str, ...]:
        """Stage names in pipeline order."""
        return tuple(self._names)

    @property
    def n_turns(self) -> int:
        """Sample rows (turns) the guard predicts from."""
        return int(self._rows.shape[0])

    def decide(self, stage: str, elapsed_ms: float, in_stage_ms: float | None = None) -> GuardDecision:
        """The prediction at one instant of a turn (no policy call; see :meth:`turn` for that).

        :param stage: the stage the turn is in.
        :param elapsed_ms: ms since the end of the user's speech, >= 0.
        :param in_stage_ms: ms spent in ``stage`` so far, 0 <= ``in_stage_ms`` <= ``elapsed_ms``;
            default ``elapsed_ms`` (the first stage).
        :raises KeyError: a stage the guard has no samples for (the message lists them).
        :raises ValueError: negative or non-finite times, or ``in_stage_ms > elapsed_ms``.
        """
        k = self._index.get(stage)
        if k is None:
            raise KeyError(f"no samples for stage {stage!r}; stages: {self._names}")
        in_stage = elapsed_ms if in_stage_ms is None else in_stage_ms
        try:
            ok = math.isfinite(elapsed_ms) and math.isfinite(in_stage) and 0.0 <= in_stage <= elapsed_ms
        except (OverflowError, TypeError):  # an int beyond the float range (10**400), text
            ok = False
        if not ok:
            raise ValueError(
                "need 0 <= in_stage_ms <= elapsed_ms, both finite numbers of ms; got "
                f"in_stage_ms={shown(in_stage)}, elapsed_ms={shown(elapsed_ms)}"
            )
        grid, levels, tail = self._tables[k]
        j = bisect.bisect_left(grid, in_stage)  # smallest grid value >= in_stage
        level, shift = (levels[j], in_stage) if j < len(levels) else (tail, 0.0)
        left = self._total_ms - elapsed_ms
        pos = int(level.sums.searchsorted(left + shift, "right"))
        p_fit = (int(level.counts[pos - 1]) if pos else 0) / level.size
        rest = max(0.0, level.at_percentile - shift)
        return GuardDecision(
            stage, float(elapsed_ms), float(in_stage), left, rest, left - rest, p_fit, p_fit >= self.threshold,
            level.size, level is tail,
        )  # fmt: skip

    def turn(self, *, clock: Clock = time.perf_counter_ns, start_ns: int | None = None) -> GuardedTurn:
        """Follow one live turn from now (or from ``start_ns``, the end of the user's speech).

        :param clock: a monotonic integer-ns clock (the recorder's, to share timestamps).
        :param start_ns: the end of the user's speech on ``clock``; default now.
        """
        return GuardedTurn(self, clock, clock() if start_ns is None else instant_ns(start_ns, "start_ns"))

    def __repr__(self) -> str:
        turns = count(self.n_turns, "turn")
        return f"<BudgetGuard {self.budget.label} <= {self.budget.total_ms:g} ms: {turns}, {self._names}>"


def variant_tree(scenario: Scenario, variant: str) -> Any:
    """The stage tree of a scenario's variant (a voice turn as its tree).

    :raises KeyError: no such variant (the message lists them).
    """
    from voicebudget._voice_turn import VoiceTurn

    pipelines = scenario.pipelines()
    if variant not in pipelines:
        raise KeyError(f"no variant {variant!r}; variants: {list(pipelines)}")
    pipeline = pipelines[variant]
    return pipeline.to_tree() if isinstance(pipeline, VoiceTurn) else pipeline


def parallel_phases(tree: Any) -> dict[str, list[str]]:
    """One phase per outermost parallel node (``all_of``, ``k_of_n``, ``race``) of a stage tree: its stages,
    which a live turn cannot tell apart while they run (what :func:`_check_parallel_phases` asks for). The
    endpointing wait and ASR finalisation are the phase ``commit``, as the LiveKit hook names it; another
    parallel node's phase is named after the node."""
    from voicebudget._algebra import AllOf, KOfN, Race, leaves, walk

    phases: dict[str, list[str]] = {}
    for path, node in walk(tree):
        if not isinstance(node, AllOf | KOfN | Race):
            continue
        names = list(leaves(node, path[-1] if path else "total"))
        if any(n in phase for phase in phases.values() for n in names):
            continue  # inside a parallel node already merged
        phases["commit" if set(names) == {"endpointing", "asr"} else (path[-1] if path else "parallel")] = names
    return phases


def simulated_rows(
    scenario: Scenario, *, variant: str = "baseline", samples: int, seed: int | np.random.Generator | None
) -> dict[str, FloatArray]:
    """Each stage's critical-path time per simulated turn of a scenario's variant (stage -> ``float64[samples]``
    ms, pipeline order; a row sums to the turn's voice-to-voice latency).

    :raises KeyError: no such variant (the message lists them).
    :raises ValueError: ``samples < 1``.
    :raises ScenarioError: (``field = "samples"``) more turns than the work or memory guard of ``run`` allows.
    """
    from voicebudget._algebra import evaluate, walk
    from voicebudget._memory import check_memory, check_work
    from voicebudget._simulate import resolve_seed

    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    tree = variant_tree(scenario, variant)
    seed_int = resolve_seed(seed)

    def contributions(k: int) -> Any:
        return evaluate(tree, k, seed_int).contributions(np.arange(k))

    nodes = sum(1 for _ in walk(tree))
    check_work(samples, nodes, what=f"{nodes:,} stages")
    check_memory(samples, contributions)
    rows: dict[str, FloatArray] = contributions(samples)
    return rows


class GuardedTurn:
    """One live turn followed by a :class:`BudgetGuard`: say which stage it is in, ask for a decision.

    The guard's policy (if any) is called once per turn, with the first decision that does not fit.
    """

    __slots__ = ("_acted", "_clock", "_guard", "_stage", "_stage_ns", "start_ns")

    def __init__(self, guard: BudgetGuard, clock: Clock, start_ns: int) -> None:
        self._guard = guard
        self._clock = clock
        self.start_ns = start_ns
        self._stage = guard.stages[0]
        self._stage_ns = start_ns
        self._acted = False

    @property
    def guard(self) -> BudgetGuard:
        """The guard following the turn."""
        return self._guard

    @property
    def stage(self) -> str:
        """The stage the turn is in (the guard's first stage until :meth:`enter` is called)."""
        return self._stage

    def enter(self, stage: str, at_ns: int | None = None) -> None:
        """The turn reached ``stage`` now (or at ``at_ns`` on the clock).

        :raises KeyError: a stage the guard has no samples for.
        :raises ValueError: ``at_ns`` is a boolean, text, NaN, an infinity or beyond int64.
        """
        if stage not in self._guard._index:
            raise KeyError(f"no samples for stage {stage!r}; stages: {self._guard.stages}")
        self._stage = stage
        self._stage_ns = self._clock() if at_ns is None else instant_ns(at_ns, "at_ns")

    def check(self, at_ns: int | None = None) -> GuardDecision:
        """The decision now (or at ``at_ns``); calls the policy on the turn's first miss.

        :returns: the :class:`GuardDecision`, with ``action`` set when the policy was called.
        """
        now = self._clock() if at_ns is None else instant_ns(at_ns, "at_ns")
        elapsed = max(0, now - self.start_ns) / _NS_PER_MS
        in_stage = min(elapsed, max(0, now - self._stage_ns) / _NS_PER_MS)
        decision = self._guard.decide(self._stage, elapsed, in_stage)
        policy = self._guard.policy
        if not decision.fits and policy is not None and not self._acted:
            self._acted = True
            decision = decision._replace(action=policy(decision))
        return decision

    @property
    def acted(self) -> bool:
        """The policy was called in this turn."""
        return self._acted


def _check_parallel_phases(tree: Any, phases: Mapping[str, Sequence[str]]) -> None:
    """Stages under a parallel node (``all_of``, ``k_of_n``, ``race``) must be one phase: a live turn
    cannot tell which of them gated the answer while they run (the class docstring).

    :raises ValueError: a parallel node's stages are not all in one phase.
    """
    from voicebudget._algebra import AllOf, KOfN, Race, leaves, walk

    member = {stage: phase for phase, stages in phases.items() for stage in stages}
    for path, node in walk(tree):
        if not isinstance(node, AllOf | KOfN | Race):
            continue
        names = list(leaves(node, path[-1] if path else "total"))
        if len({member.get(n) for n in names}) != 1 or member.get(names[0]) is None:
            vad = set(names) == {"endpointing", "asr"}
            why = 'commit = "vad": asr finalises during the endpointing wait' if vad else "/".join(path) or "root"
            raise ValueError(
                f"stages {', '.join(names)} run in parallel ({why}): they must be one phase of phases, e.g. "
                f"phases={{{'commit' if vad else (path[-1] if path else 'parallel')!r}: {names!r}}}"
            )


def _column(values: ArrayLike, stage: str) -> Any:
    """A stage's samples as ``float64[n]``; a value numpy cannot take (``10**400``, text) names the stage."""
    try:
        return np.asarray(values, dtype=np.float64)
    except (OverflowError, TypeError, ValueError) as exc:
        raise ValueError(f"samples_ms[{stage!r}]: expected numbers of ms ({str(exc)[:80]})") from None
