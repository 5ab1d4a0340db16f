"""Deployments under load: the LLM stage a deployment gives when it serves ``calls`` concurrent calls.

A deployment is anything with the :class:`LoadModel` shape. Two ship:

* :class:`ModelledDeployment` (a ``gpu`` or ``wafer`` stage): the calls' request rate goes through
  :func:`voicebudget.estimate_at_arrival_rate` (Little's law: the concurrency in flight is the fixed
  point ``C = rate x R(C)``); the stage is then the scenario's own stage at that concurrency, with
  the call's growing prompt. Past the batch cap (``max_concurrency``) or the chips' memory, the
  queue grows without bound: the deployment is overloaded.
* :class:`HostedDeployment` (an ``api`` stage): a provider's fleet, so the latency does not depend
  on your number of calls (the measured distribution stands); the limit is the account's rate limits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

from voicebudget._errors import ModelError
from voicebudget._traffic import CallTraffic
from voicebudget.inference._load import estimate_at_arrival_rate
from voicebudget.inference._stage import APIStage, GPUStage, WaferStage
from voicebudget.inference._types import Workload

__all__ = ["HostedDeployment", "LoadModel", "ModelledDeployment", "Overloaded"]


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
class ModelledDeployment:
    """A self-hosted deployment modelled by the inference model.

    :param name: the deployment's name in reports.
    :param stage: the scenario's ``gpu``/``wafer`` stage (model, hardware, chips, precision,
        first-phrase tokens, jitter); its ``concurrency`` is replaced by the load's.
    :param max_concurrency: the batch policy: at most this many requests in flight (``None``: only
        memory limits it). A smaller cap is "fast mode": faster per user, fewer calls per chip.
    :param usd_per_chip_hour: price override (default: the hardware catalog's, with its source).
    """

    name: str
    stage: GPUStage | WaferStage
    max_concurrency: int | None = None
    usd_per_chip_hour: float | None = None

    def _workload(self, traffic: CallTraffic) -> Workload:
        out = traffic.output_tokens or self.stage.output_tokens
        return Workload(prompt_tokens=max(1, round(traffic.mean_prompt_tokens)), output_tokens=out)

    def concurrency_at(self, calls: int, traffic: CallTraffic) -> int:
        """Requests in flight at ``calls`` calls (Little's law fixed point).

        :raises Overloaded: beyond the batch cap or the memory.
        """
        rate = traffic.request_rate_per_s(calls)
        dep = self.stage.deployment()
        try:
            r = estimate_at_arrival_rate(self.stage.model, self.stage.hardware, dep, self._workload(traffic), rate)
        except ModelError as exc:
            raise Overloaded("memory", str(exc)) from None
        if self.max_concurrency is not None and r.concurrency > self.max_concurrency:
            raise Overloaded("batch cap", f"{r.concurrency} requests in flight > batch cap {self.max_concurrency}")
        return r.concurrency

    def stage_at(self, calls: int, traffic: CallTraffic) -> GPUStage | WaferStage:
        """The stage at the concurrency ``calls`` calls put in flight, with the call's prompt range."""
        c = self.concurrency_at(calls, traffic)
        prompts = traffic.prompt_tokens_by_turn
        update: dict[str, Any] = {"concurrency": c, "prompt_tokens": prompts if len(prompts) > 1 else prompts[0]}
        if traffic.output_tokens is not None:
            update["output_tokens"] = traffic.output_tokens
        stage = self.stage.model_copy(update=update)
        try:
            stage.predict(max(prompts))  # the longest prompt must fit at this load too
        except ModelError as exc:
            raise Overloaded("memory", str(exc)) from None
        return stage

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
            "price_source": ("given" if self.usd_per_chip_hour is not None
                             else (r.price.source if r.price else None)),
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
        """Token prices per call-minute: requests/min x (prompt x input price + output x output price).

        ``None`` when the stage gives no output price; a missing input price counts as 0 (and the
        report says so).
        """
        out_price = self.stage.price_per_million_output_tokens
        if out_price is None:
            return None
        in_price = self.stage.usd_per_million_input_tokens or 0.0
        per_request = (traffic.mean_prompt_tokens * in_price + self._output_tokens(traffic) * out_price) / 1e6
        return traffic.request_rate_per_s(1) * 60.0 * per_request

    def describe(self) -> dict[str, Any]:
        """Kind, prices and rate limits."""
        return {
            "kind": "api",
            "usd_per_million_input_tokens": self.stage.usd_per_million_input_tokens,
            "usd_per_million_output_tokens": self.stage.price_per_million_output_tokens,
            "requests_per_minute_limit": self.stage.requests_per_minute_limit,
            "tokens_per_minute_limit": self.stage.tokens_per_minute_limit,
        }
