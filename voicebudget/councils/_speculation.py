"""Speculative replies: a reply cache, and preemptive generation on eager transcripts.

Both are stages (``kind = "reply_cache"``, ``kind = "preemptive"``), so a scenario can add them, and
both have an evaluation that reports hit rates, extra calls, cost and expected user time beside the
latency percentiles.

**Reply cache.** Frequent replies are generated and their audio synthesised ahead of time. Per turn,
with probability ``hit_rate`` a cached reply plays after ``hit`` ms (lookup + audio start); otherwise
the ``miss`` path runs (the LLM and the TTS, or a council). The latency is the mixture
``F(t) = h F_hit(t) + (1 - h) F_miss(t)``, evaluated with the algebra's ``choice``. A share
``false_hit_rate`` of the hits plays a reply that is wrong for the turn. Because a hit skips TTS too,
in a ``voice_turn`` put the cache on ``llm`` with ``miss`` = a ``sequence`` of the LLM and the TTS,
and set ``tts`` to ``{kind = "fixed", value_ms = 0}`` (docs/councils.md shows it).

**Preemptive generation** (LiveKit Agents ``preemptive_generation``, Pipecat eager end-of-turn): the
wrapped ``stage`` starts on the eager transcript, ``lead`` ms before the turn commits, on a share
``trigger_rate`` of turns; when the final transcript matches (``match_rate``) the reply is
``max(0, stage - lead)`` ms away at commit, otherwise it starts over. Each mismatch, and each of the
``retries`` restarts on a revised eager transcript, is an extra LLM call (and TTS call, with
``speculative_tts``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import ConfigDict, Field, model_validator

from voicebudget._algebra import Choice, Stage, check_unique_names, evaluate, stage_rng
from voicebudget._budget import MAX_COUNT, MAX_USD, Budget
from voicebudget._distributions import Distribution
from voicebudget._report import Report, build_report
from voicebudget.councils._config import Council, UserTime
from voicebudget.councils._latency import sample_stage

if TYPE_CHECKING:
    from voicebudget._stages import StageSpec

__all__ = [
    "CacheResult",
    "Preemptive",
    "PreemptiveResult",
    "ReplyCache",
    "break_even_false_hit_rate",
    "evaluate_cache",
    "evaluate_preemptive",
]

FloatArray = NDArray[np.float64]


class ReplyCache(Stage):
    """A cache of pre-generated, pre-synthesised replies in front of a miss path. A stage.

    :param hit_rate: ``h``, share of turns answered from the cache, in [0, 1].
    :param false_hit_rate: share of hits that play a reply wrong for the turn, in [0, 1].
    :param hit: hit latency (lookup + start of the cached audio), ms.
    :param miss: the fallback path on a miss (LLM + TTS, or a council), any stage.
    :param miss_error_rate: the miss path's error rate; default: the council's when ``miss`` is a
        council, else 0.
    :param candidates_per_turn: replies pre-synthesised per turn (TTS calls).
    :param tts_usd_per_candidate: TTS price of one pre-synthesised candidate, USD.
    :param miss_usd: price of one miss-path call, USD (default: the council's cost per turn, else 0).
    :param lookup_usd: price of one lookup (embedding + search), USD.
    :param conversation_turns: ``T``, turns per conversation for the per-conversation rates.
    """

    model_config = ConfigDict(defer_build=True)

    kind: Literal["reply_cache"] = "reply_cache"
    hit_rate: float = Field(ge=0, le=1)
    false_hit_rate: float = Field(default=0.0, ge=0, le=1)
    hit: StageSpec
    miss: StageSpec
    miss_error_rate: float | None = Field(default=None, ge=0, le=1)
    candidates_per_turn: int = Field(default=0, ge=0, le=MAX_COUNT)
    tts_usd_per_candidate: float = Field(default=0.0, ge=0, le=MAX_USD)
    miss_usd: float | None = Field(default=None, ge=0, le=MAX_USD)
    lookup_usd: float = Field(default=0.0, ge=0, le=MAX_USD)
    conversation_turns: int = Field(default=10, ge=1)

    @model_validator(mode="after")
    def _unique_names(self) -> ReplyCache:
        check_unique_names((("cache_hit", "hit", self.hit), ("cache_miss", "miss", self.miss)))
        return self

    def children(self) -> dict[str, Any]:
        """The hit and miss paths, as the cache draws them: ``cache_hit``, ``cache_miss``."""
        return {"cache_hit": self.hit, "cache_miss": self.miss}

    def with_children(self, children: Mapping[str, Any]) -> ReplyCache:
        """A copy with ``cache_hit`` and/or ``cache_miss`` replaced (not validated)."""
        fields = {"cache_hit": "hit", "cache_miss": "miss"}
        unknown = set(children) - set(fields)
        if unknown:
            raise KeyError(f"a reply cache's paths are cache_hit and cache_miss, got {sorted(unknown)}")
        return self.model_copy(update={fields[k]: v for k, v in children.items()})

    def tree(self) -> Choice:
        """The latency as the algebra's ``choice`` between ``cache_hit`` and ``cache_miss`` (built without
        validation: the paths were validated with the cache, or replaced by any sampler)."""
        weights = (self.hit_rate, 1 - self.hit_rate)
        return Choice.model_construct(stages=self.children(), weights=weights)

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        """Latency per turn, ms, ``float64[n]`` (one seed drawn from ``rng``)."""
        return evaluate(self.tree(), n, int(rng.integers(0, 2**63 - 1)), name="reply_cache").total

    def conversation_hit_rate(self) -> float:
        """Share of conversations with at least one hit: ``1 - (1 - h)**T``."""
        return 1.0 - (1.0 - self.hit_rate) ** self.conversation_turns

    def conversation_false_hit_rate(self) -> float:
        """Share of conversations that hear at least one wrong cached reply: ``1 - (1 - h e)**T``."""
        return 1.0 - (1.0 - self.hit_rate * self.false_hit_rate) ** self.conversation_turns


class Preemptive(Stage):
    """Preemptive generation on an eager transcript, wrapping the generation path. A stage.

    :param stage: the path that can start early (the LLM; a ``sequence`` of LLM and TTS with
        speculative TTS).
    :param trigger_rate: share of turns where an eager transcript starts generation early.
    :param match_rate: share of triggered turns where the final transcript matches the eager one.
    :param lead: how long before the turn commit the eager transcript arrives, ms.
    :param retries: mean extra restarts per triggered turn (the eager transcript was revised).
    :param speculative_tts: TTS also runs on the speculative reply (extra TTS calls).
    """

    model_config = ConfigDict(defer_build=True)

    kind: Literal["preemptive"] = "preemptive"
    stage: StageSpec
    trigger_rate: float = Field(ge=0, le=1)
    match_rate: float = Field(ge=0, le=1)
    lead: Distribution
    retries: float = Field(default=0.0, ge=0)
    speculative_tts: bool = False

    def children(self) -> dict[str, Any]:
        """The wrapped path, under the name it is drawn by: ``generation``."""
        return {"generation": self.stage}

    def with_children(self, children: Mapping[str, Any]) -> Preemptive:
        """A copy with ``generation`` replaced (not validated)."""
        if set(children) - {"generation"}:
            raise KeyError(f"preemptive generation's one path is generation, got {sorted(children)}")
        return self.model_copy(update={"stage": children["generation"]}) if children else self

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        """Latency after the turn commit, ms, ``float64[n]``."""
        seed = int(rng.integers(0, 2**63 - 1))
        base = sample_stage(self.stage, "generation", n, seed)
        return self._apply(base, seed)

    def _apply(self, base: FloatArray, seed: int) -> FloatArray:
        n = base.size
        u = stage_rng(seed, "preemptive/trigger").random((2, n))
        used = (u[0] < self.trigger_rate) & (u[1] < self.match_rate)
        lead = self.lead.sample(stage_rng(seed, "preemptive/lead"), n)
        return np.where(used, np.maximum(base - lead, 0.0), base)

    @property
    def extra_llm_calls(self) -> float:
        """Extra LLM calls per turn: ``trigger_rate * (retries + 1 - match_rate)``."""
        return self.trigger_rate * (self.retries + 1.0 - self.match_rate)

    @property
    def extra_tts_calls(self) -> float:
        """Extra TTS calls per turn (as many as extra LLM calls with speculative TTS, else 0)."""
        return self.extra_llm_calls if self.speculative_tts else 0.0


def break_even_false_hit_rate(
    hit_rate: float, miss_error_rate: float, hit_mean_ms: float, miss_mean_ms: float, user_time: UserTime
) -> float:
    """The false-hit rate at which the cache stops saving user time.

    Solves ``X(e_cache) (T_user + L_cache + T_agent) = X(e_miss) (T_user + L_miss + T_agent)`` for the
    false-hit rate, with ``e_cache = h e_f + (1 - h) e_miss`` and ``L_cache = h L_hit + (1 - h) L_miss``.

    :returns: in [0, 1]; 0 when even a perfect cache costs time, 1 when any cache saves it; NaN for
        ``hit_rate == 0``.
    """
    if hit_rate <= 0:
        return float("nan")
    other = user_time.user_turn_ms + user_time.agent_turn_ms + user_time.other_latency_ms
    without = user_time.exchanges(miss_error_rate) * (other + miss_mean_ms)
    x_needed = without / (other + hit_rate * hit_mean_ms + (1 - hit_rate) * miss_mean_ms)
    if user_time.repair_error_rate is None:
        e_total = 1.0 - 1.0 / x_needed  # X = 1 / (1 - e)
    else:
        e_total = (x_needed - 1.0) * (1.0 - user_time.repair_error_rate)
    e_f = (e_total - (1 - hit_rate) * miss_error_rate) / hit_rate
    return float(min(max(e_f, 0.0), 1.0))


@dataclass(frozen=True)
class CacheResult:
    """A reply cache judged: latency mixture, hit rates, break-even false-hit rate, cost, user time.

    :ivar report: the latency report; stages are the hit and miss paths' leaves.
    :ivar error_rate: ``h e_f + (1 - h) e_miss``.
    """

    cache: ReplyCache
    report: Report
    error_rate: float
    cost_per_turn_usd: float
    exchanges: float
    expected_user_time_ms: float
    expected_user_time_without_ms: float
    break_even_false_hit_rate: float

    @property
    def passed(self) -> bool:
        """Within budget at the target percentile."""
        return self.report.passed

    def to_dict(self) -> dict[str, Any]:
        r, c = self.report, self.cache
        return {
            "latency": {**r.total.to_dict(), "at_percentile_ms": r.total.at_percentile_ms},
            "hit_rate": c.hit_rate,
            "false_hit_rate": c.false_hit_rate,
            "conversation_hit_rate": c.conversation_hit_rate(),
            "conversation_false_hit_rate": c.conversation_false_hit_rate(),
            "break_even_false_hit_rate": _json_float(self.break_even_false_hit_rate),
            "error_rate": self.error_rate,
            "cost_per_turn": self.cost_per_turn_usd,
            "expected_user_time_ms": _json_float(self.expected_user_time_ms),
            "expected_user_time_without_cache_ms": _json_float(self.expected_user_time_without_ms),
            "passed": self.passed,
        }


def _json_float(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _miss_figures(cache: ReplyCache, seed: int) -> tuple[float, float]:
    """Error rate and price of the miss path (from the council when it is one)."""
    from voicebudget.councils._evaluate import evaluate_council

    e, usd = cache.miss_error_rate, cache.miss_usd
    if isinstance(cache.miss, Council) and (e is None or usd is None):
        res = evaluate_council(cache.miss, samples=2_000, seed=seed)
        e = res.quality.error_rate if e is None else e
        usd = res.cost_per_turn_usd if usd is None else usd
    return (e or 0.0), (usd or 0.0)


def evaluate_cache(
    cache: ReplyCache,
    budget: Budget | None = None,
    *,
    samples: int = 20_000,
    seed: int = 1,
    user_time: UserTime | None = None,
) -> CacheResult:
    """Simulate a reply cache and score it on latency, error rate, cost and expected user time.

    The mean latency in the user time is the mixture's, ``h L_hit + (1 - h) L_miss``, from the two
    paths' sample means (so it does not carry the noise of the realised hit share).

    :param samples: simulated turns, >= 1.
    :param user_time: ``T_user``, ``T_agent``, ``e_r`` (default :class:`UserTime`).
    """
    budget = budget or Budget()
    user_time = user_time or UserTime()
    ev = evaluate(cache.tree(), samples, seed, name="reply_cache")
    report = build_report("reply_cache", budget, ev.total, ev.stages, contributions=ev.contributions, seed=seed)
    e_miss, miss_usd = _miss_figures(cache, seed)
    h = cache.hit_rate
    error = h * cache.false_hit_rate + (1 - h) * e_miss
    hit_ms, miss_ms = (float(np.mean({**ev.stages, **ev.groups}[key])) for key in ("cache_hit", "cache_miss"))
    cost = cache.lookup_usd + cache.candidates_per_turn * cache.tts_usd_per_candidate + (1 - h) * miss_usd
    return CacheResult(
        cache,
        report,
        error,
        cost,
        user_time.exchanges(error),
        user_time.expected_ms(error, h * hit_ms + (1 - h) * miss_ms),
        user_time.expected_ms(e_miss, miss_ms),
        break_even_false_hit_rate(h, e_miss, hit_ms, miss_ms, user_time),
    )


@dataclass(frozen=True)
class PreemptiveResult:
    """Preemptive generation judged: latency with and without it, extra calls, user time."""

    preemptive: Preemptive
    report: Report
    baseline: Report
    extra_llm_calls: float
    extra_tts_calls: float
    expected_user_time_ms: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "latency": {**self.report.total.to_dict(), "at_percentile_ms": self.report.total.at_percentile_ms},
            "latency_without": self.baseline.total.to_dict(),
            "extra_llm_calls_per_turn": self.extra_llm_calls,
            "extra_tts_calls_per_turn": self.extra_tts_calls,
            "expected_user_time_ms": self.expected_user_time_ms,
            "passed": self.report.passed,
        }


def evaluate_preemptive(
    pre: Preemptive,
    budget: Budget | None = None,
    *,
    samples: int = 20_000,
    seed: int = 1,
    error_rate: float = 0.0,
    user_time: UserTime | None = None,
) -> PreemptiveResult:
    """Latency of the wrapped stage with and without preemptive generation (same samples), the extra
    calls it costs, and the expected user time (``error_rate`` of the replies is unchanged by it)."""
    budget = budget or Budget()
    user_time = user_time or UserTime()
    base = sample_stage(pre.stage, "generation", samples, seed)
    fast = pre._apply(base, seed)
    report = build_report("preemptive", budget, fast, {"generation": fast}, seed=seed)
    baseline = build_report("without", budget, base, {"generation": base}, seed=seed)
    return PreemptiveResult(
        pre,
        report,
        baseline,
        pre.extra_llm_calls,
        pre.extra_tts_calls,
        user_time.expected_ms(error_rate, float(np.mean(fast))),
    )
