"""Deployments under load: the LLM stage a deployment gives when it serves ``calls`` concurrent calls.

A deployment is anything with the :class:`LoadModel` shape. Two ship:

* :class:`ModelledDeployment` (a modelled stage: ``gpu``, ``wafer``, any hardware kind). For a kind
  whose :attr:`~voicebudget.inference.ModelledStage.queue_model` is ``"open_loop"`` (GPUs) the calls'
  requests are Poisson arrivals served by continuous batching with chunked prefill
  (:func:`voicebudget.inference.estimate_open_loop`): TTFT p50/p90/p99 (the wait for a prefill
  slot included), TPOT, the mean concurrency; the stage is :class:`OpenLoopLLM`. For the others
  (SRAM-resident chips: no such scheduler model) the concurrency is the fixed point of Little's law
  (:meth:`~voicebudget.inference.ModelledStage.at_arrival_rate`) and the stage is the scenario's own
  stage at that concurrency. Either way with the call's growing prompt. Past the batch cap (``max_concurrency``),
  the step budget or the chips' memory, the queue grows without bound: the deployment is overloaded.
* :class:`HostedDeployment` (an ``api`` stage): a provider's fleet, so the latency does not depend
  on your number of calls (the measured distribution stands); the limit is the account's rate limits.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from voicebudget._errors import ModelError, ScenarioError
from voicebudget._stage_models import TokenCount, sample_tokens
from voicebudget._traffic import CallTraffic
from voicebudget.inference._catalog import get_model
from voicebudget.inference._queue import open_loop_at
from voicebudget.inference._stage import APIStage, ModelledStage, _jitter
from voicebudget.inference._types import Deployment, Workload

__all__ = ["HostedDeployment", "LoadModel", "ModelledDeployment", "OpenLoopLLM", "Overloaded"]

FloatArray = NDArray[np.float64]

_Z_KNOTS = (0.0, 1.2815515655446004, 2.3263478740408408)
"""Standard normal quantiles of 0.50, 0.90 and 0.99: where the open-loop TTFT quantiles are pinned."""


DEFAULT_API_OUTPUT_TOKENS = 200
"""Output tokens per hosted-API request when the traffic does not say (assumption, as the modelled stages)."""


class Overloaded(Exception):  # noqa: N818 - a condition of the search, not an error to the user
    """The deployment cannot serve this many calls at all (the queue would grow without bound).

    :ivar limit: what runs out: ``"batch cap"``, ``"memory"`` or ``"rate limit"``.
    """

    def __init__(self, limit: str, detail: str) -> None:
        super().__init__(detail)
        self.limit = limit


class LoadModel(Protocol):
    """What the capacity planner needs of a deployment."""

    @property
    def name(self) -> str:
        """The deployment's name in reports."""
        ...

    def stage_at(self, calls: int, traffic: CallTraffic) -> Any:
        """The LLM stage (anything with ``sample(rng, n) -> float64[n]`` ms) at ``calls`` calls.

        :raises Overloaded: the deployment cannot carry ``calls`` calls.
        """
        ...

    def chips(self) -> int | None:
        """Chips of one deployment (one replica set), ``None`` for a hosted API."""
        ...

    def cost_per_call_minute(self, calls: int, traffic: CallTraffic) -> float | None:
        """US dollars per call-minute when carrying ``calls`` calls, ``None`` without a price."""
        ...

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description (kind, hardware, model, chips, precision, batch cap...)."""
        ...


@dataclass(frozen=True)
class OpenLoopLLM:
    """The LLM stage of a GPU deployment under Poisson arrivals: ``sample(rng, n) -> float64[n]`` ms.

    Time to the first speakable phrase = TTFT + first-phrase tokens x TPOT, where

    * TTFT at the mean prompt follows the scheduler model's p50/p90/p99
      (:func:`~voicebudget.inference.estimate_open_loop`): its logarithm is piecewise linear in a
      standard normal variate through those three quantiles (a log-normal shape between them,
      extended by the end segments' slopes beyond), floored at ``ttft_floor_ms``;
    * a turn's own prompt (one of the call's turns, each equally likely) shifts it by the closed-loop
      model's difference between that prompt's prefill and the mean prompt's (``prompt_offsets_ms``);
    * TPOT is the mean step time times a mean-one log-normal factor of CV ``jitter_cv`` (the
      stage's; TTFT gets none: its spread is the queue's).

    :ivar concurrency: requests in flight on average (Little's law), reported, not sampled.
    """

    ttft_quantiles_ms: tuple[float, float, float]
    ttft_floor_ms: float
    prompts: tuple[int, ...]
    prompt_offsets_ms: tuple[float, ...]
    tpot_ms: float
    first_phrase_tokens: TokenCount
    jitter_cv: float
    concurrency: float

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        """Time to the first speakable phrase per turn, ``float64[n]`` ms."""
        z = rng.standard_normal(n)
        logq = np.log(np.asarray(self.ttft_quantiles_ms))
        lo_slope = (logq[1] - logq[0]) / (_Z_KNOTS[1] - _Z_KNOTS[0])
        hi_slope = (logq[2] - logq[1]) / (_Z_KNOTS[2] - _Z_KNOTS[1])
        log_ttft = np.interp(z, _Z_KNOTS, logq)
        log_ttft = np.where(z < _Z_KNOTS[0], logq[0] + lo_slope * z, log_ttft)
        log_ttft = np.where(z > _Z_KNOTS[2], logq[2] + hi_slope * (z - _Z_KNOTS[2]), log_ttft)
        which = rng.integers(0, len(self.prompts), n)
        ttft = np.maximum(np.exp(log_ttft) + np.asarray(self.prompt_offsets_ms)[which], self.ttft_floor_ms)
        tpot = self.tpot_ms * _jitter(rng, n, self.jitter_cv)
        out: FloatArray = ttft + sample_tokens(self.first_phrase_tokens, rng, n) * tpot
        return out


@functools.lru_cache(maxsize=4096)
def _open_loop(
    model: Any, hardware: Any, deployment: Deployment, workload: Workload, rate: float
) -> tuple[tuple[float, float, float], float, float]:
    """What the stage reads of :func:`estimate_open_loop` (its scheduler model, without the closed-loop estimate
    at the mean concurrency it also reports: a tenth of a call): TTFT p50/p90/p99 and TPOT, ms, and the mean
    concurrency. Memoised: deployments that differ only in their batch cap (a fast-mode sweep) share every load
    level's scheduler result."""
    served, at = open_loop_at(model, hardware, deployment, workload, rate)
    p50, p90, p99 = at[0]
    return (p50, p90, p99), at[3], served.concurrency(rate, at)


@functools.lru_cache(maxsize=4096)
def _prompt_offsets(
    stage: ModelledStage, concurrency: int, prompts: tuple[int, ...], mean_prompt: int
) -> tuple[tuple[float, ...], float]:
    """Each turn's TTFT minus the mean prompt's at ``concurrency`` (closed-loop model), and the TTFT
    floor (the shortest prompt alone), ms; memoised like :func:`_open_loop`."""
    loaded = stage.model_copy(update={"concurrency": concurrency})
    mean_ttft = loaded.predict(mean_prompt).ttft_ms
    offsets = tuple(loaded.predict(p).ttft_ms - mean_ttft for p in prompts)
    return offsets, _ttft_floor(stage, min(prompts))


@functools.lru_cache(maxsize=256)
def _ttft_floor(stage: ModelledStage, prompt_tokens: int) -> float:
    """The TTFT of ``prompt_tokens`` alone on the deployment (concurrency 1), ms: the same at every load level."""
    return stage.model_copy(update={"concurrency": 1}).predict(prompt_tokens).ttft_ms


@dataclass(frozen=True)
class ModelledDeployment:
    """A self-hosted deployment modelled by the inference model.

    :param name: the deployment's name in reports.
    :param stage: the scenario's modelled stage (``gpu``, ``wafer``...) (model, hardware, chips, precision,
        first-phrase tokens, jitter); its ``concurrency`` is replaced by the load's.
    :param max_concurrency: the batch policy: at most this many requests in flight (``None``: only
        memory limits it). A smaller cap is "fast mode": faster per user, fewer calls per chip.
    :param usd_per_chip_hour: price override (default: the hardware catalog's, with its source).
    """

    name: str
    stage: ModelledStage
    max_concurrency: int | None = None
    usd_per_chip_hour: float | None = None

    def _workload(self, traffic: CallTraffic) -> Workload:
        out = traffic.output_tokens or self.stage.output_tokens
        prefill = traffic.prefill_tokens_by_turn
        return Workload(prompt_tokens=max(1, round(sum(prefill) / len(prefill))), output_tokens=out)

    def concurrency_at(self, calls: int, traffic: CallTraffic) -> int:
        """Requests in flight at ``calls`` calls (Little's law fixed point, closed-loop model).

        :raises Overloaded: beyond the batch cap or the memory.
        """
        rate = traffic.request_rate_per_s(calls)
        try:
            r = self.stage.at_arrival_rate(self._workload(traffic), rate)
        except ModelError as exc:
            raise Overloaded("memory", str(exc)) from None
        self._check_cap(r.concurrency)
        return r.concurrency

    def _check_cap(self, concurrency: float) -> None:
        if self.max_concurrency is not None and concurrency > self.max_concurrency:
            raise Overloaded("batch cap", f"{concurrency:.1f} requests in flight > batch cap {self.max_concurrency}")

    def stage_at(self, calls: int, traffic: CallTraffic) -> OpenLoopLLM | ModelledStage:
        """The LLM stage at the load of ``calls`` calls, with the call's prompts (module docstring).

        :raises Overloaded: beyond the batch cap, the step budget (``"throughput"``) or the memory.
        """
        if self.stage.queue_model == "open_loop":
            return self._open_loop(calls, traffic)
        c = self.concurrency_at(calls, traffic)
        prompts = traffic.prefill_tokens_by_turn
        update: dict[str, Any] = {"concurrency": c, "prompt_tokens": prompts if len(prompts) > 1 else prompts[0]}
        if traffic.output_tokens is not None:
            update["output_tokens"] = traffic.output_tokens
        stage = self.stage.model_copy(update=update)
        try:
            stage.predict(max(prompts))  # the longest prompt must fit at this load too
        except ModelError as exc:
            raise Overloaded("memory", str(exc)) from None
        return stage

    def check_context(self, traffic: CallTraffic) -> None:
        """Refuse traffic whose longest prompt and reply the model cannot hold: no load level's limit but a
        refusal at every load (the search read it as ``"throughput"`` at one call).

        :raises ScenarioError: prompt + output tokens beyond the model's ``max_context_tokens``.
        """
        model = get_model(self.stage.model)
        limit = model.max_context_tokens
        longest = max(traffic.prompt_tokens_by_turn)  # held in the context with or without prefix caching
        out = traffic.output_tokens or self.stage.output_tokens
        if limit is not None and longest + out > limit:
            raise ScenarioError(
                f"the call's longest prompt ({longest:,} tokens: traffic.prompt_tokens_start + "
                f"prompt_tokens_per_turn x its turns) + {out:,} output tokens exceeds {model.name}'s maximum "
                f"context of {limit:,} tokens at any load"
            )

    def _open_loop(self, calls: int, traffic: CallTraffic) -> OpenLoopLLM:
        rate = traffic.request_rate_per_s(calls)
        workload = self._workload(traffic)
        try:
            ttft, tpot, concurrency = _open_loop(
                self.stage.model, self.stage.hardware, self.stage.deployment(), workload, rate
            )
        except ModelError as exc:
            raise Overloaded("throughput", str(exc)) from None
        self._check_cap(concurrency)
        prompts = traffic.prefill_tokens_by_turn
        try:
            offsets, floor = _prompt_offsets(
                self.stage, max(1, math.ceil(concurrency)), prompts, workload.prompt_tokens
            )
        except ModelError as exc:
            raise Overloaded("memory", str(exc)) from None
        return OpenLoopLLM(
            ttft_quantiles_ms=ttft,
            ttft_floor_ms=floor,
            prompts=prompts,
            prompt_offsets_ms=offsets,
            tpot_ms=tpot / self._speculative_gain(workload, concurrency),
            first_phrase_tokens=self.stage.first_phrase_tokens,
            jitter_cv=self.stage.jitter_cv,
            concurrency=concurrency,
        )

    def _speculative_gain(self, workload: Workload, concurrency: float) -> float:
        """The stage's speculative-decoding speed-up at the open loop's mean concurrency (1 without it):
        the verification step costed at that batch, so it shrinks, or turns into a slowdown, under load."""
        spec = self.stage.speculative
        if spec is None:
            return 1.0
        dep = self.stage.deployment().model_copy(update={"concurrency": max(1, math.ceil(concurrency))})
        try:
            gain = self.stage.estimate(dep, workload, spec).speculative_speedup
        except ModelError as exc:
            raise Overloaded("memory", str(exc)) from None
        return gain if gain is not None else 1.0

    def chips(self) -> int:
        """Chips of the deployment (the stage's, or the fewest the model fits on)."""
        return self.stage.predict().chips

    def _usd_per_chip_hour(self) -> float | None:
        if self.usd_per_chip_hour is not None:
            return self.usd_per_chip_hour
        price = self.stage.predict().price
        return price.usd_per_chip_hour if price else None

    def cost_per_call_minute(self, calls: int, traffic: CallTraffic) -> float | None:
        """Chip-hours of the deployment shared by ``calls`` calls: ``chips x $/chip-hour / 60 / calls``."""
        price = self._usd_per_chip_hour()
        if price is None or calls < 1:
            return None
        return self.chips() * price / 60.0 / calls

    def describe(self) -> dict[str, Any]:
        """Kind, model, hardware, chips, precision, batch cap and price used."""
        r = self.stage.predict()
        return {
            "kind": self.stage.kind,
            "model": r.model,
            "hardware": r.hardware,
            "chips": r.chips,
            "precision": r.precision,
            "max_concurrency": self.max_concurrency,
            "usd_per_chip_hour": self._usd_per_chip_hour(),
            "price_source": ("given" if self.usd_per_chip_hour is not None else (r.price.source if r.price else None)),
        }


@dataclass(frozen=True)
class HostedDeployment:
    """A hosted API: measured latency, rate limits and token prices.

    :param name: the deployment's name in reports.
    :param stage: the scenario's ``api`` stage (TTFT and TPOT distributions, output price, rate
        limits ``requests_per_minute_limit`` / ``tokens_per_minute_limit``, input price).
    """

    name: str
    stage: APIStage

    def stage_at(self, calls: int, traffic: CallTraffic) -> APIStage:
        """The measured stage, unchanged by load, while within the account's rate limits."""
        rate_per_min = traffic.request_rate_per_s(calls) * 60.0
        rpm = self.stage.requests_per_minute_limit
        if rpm is not None and rate_per_min > rpm:
            raise Overloaded("rate limit", f"{rate_per_min:.0f} requests/min > limit {rpm:g}")
        tpm = self.stage.tokens_per_minute_limit
        tokens_per_min = rate_per_min * (traffic.mean_prompt_tokens + self._output_tokens(traffic))
        if tpm is not None and tokens_per_min > tpm:
            raise Overloaded("rate limit", f"{tokens_per_min:.0f} tokens/min > limit {tpm:g}")
        return self.stage

    def max_calls_by_rate_limit(self, traffic: CallTraffic) -> int | None:
        """The most calls the rate limits allow (``None``: no limit given)."""
        per_call_rpm = traffic.request_rate_per_s(1) * 60.0
        bounds = []
        if self.stage.requests_per_minute_limit is not None:
            bounds.append(self.stage.requests_per_minute_limit / per_call_rpm)
        if self.stage.tokens_per_minute_limit is not None:
            per_call_tpm = per_call_rpm * (traffic.mean_prompt_tokens + self._output_tokens(traffic))
            bounds.append(self.stage.tokens_per_minute_limit / per_call_tpm)
        return math.floor(min(bounds) * (1 + 1e-12)) if bounds else None

    @staticmethod
    def _output_tokens(traffic: CallTraffic) -> int:
        return traffic.output_tokens or DEFAULT_API_OUTPUT_TOKENS

    def chips(self) -> None:
        """A hosted API has no chips of yours."""
        return None

    def cost_per_call_minute(self, calls: int, traffic: CallTraffic) -> float | None:
        """Token prices per call-minute: requests/min x the stage's cost per request
        (:meth:`APIStage.cost_per_turn_usd` at the call's mean prompt and output tokens).

        ``None`` when the stage gives no output price; a missing input price counts as 0.
        """
        per_request = self.stage.cost_per_turn_usd(traffic.mean_prompt_tokens, self._output_tokens(traffic))
        return None if per_request is None else traffic.request_rate_per_s(1) * 60.0 * per_request

    def describe(self) -> dict[str, Any]:
        """Kind, prices and rate limits."""
        return {
            "kind": "api",
            "usd_per_million_input_tokens": self.stage.usd_per_million_input_tokens,
            "usd_per_million_output_tokens": self.stage.price_per_million_output_tokens,
            "requests_per_minute_limit": self.stage.requests_per_minute_limit,
            "tokens_per_minute_limit": self.stage.tokens_per_minute_limit,
        }
