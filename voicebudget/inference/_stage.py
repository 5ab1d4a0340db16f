"""Scenario stages for the LLM: the modelled stages' interface (:class:`ModelledStage`: ``kind = "gpu"``
in ``_gpu_stage``, ``"wafer"`` in ``_wafer_stage``) and ``"api"`` (measured).

A hardware kind is one module: its stage class (a :class:`ModelledStage` with a ``kind`` literal and
what the tuner, capacity planning and ``run`` ask of it, declared on the class), its inference model
behind :meth:`ModelledStage.estimate`, and one entry in the stage union (``voicebudget/_stages.py``).
Nothing else tests kinds: the tuner sets :meth:`~ModelledStage.with_concurrency`, capacity asks for
:attr:`~ModelledStage.queue_model` and :meth:`~ModelledStage.at_arrival_rate`, ``run`` and capacity
print :meth:`~ModelledStage.hosted_path`.

Each is a frozen pydantic model with ``sample(rng, n) -> float64[n]`` in ms: time from request to the
first *speakable phrase*, ``TTFT + first_phrase_tokens x TPOT`` (as :class:`voicebudget.LLMStage`).

Per-turn variability of the modelled stages comes from three stated sources, nothing hidden:

* the prompt length, when ``prompt_tokens`` is a range or a list of observed counts (TTFT is
  recomputed for each distinct prompt length);
* the wait for the running batch step to end (continuous batching admits a request at a step
  boundary): uniform on ``[0, T_step]`` when other users are in flight (concurrency > 1), none at
  concurrency 1;
* ``jitter_cv``: a mean-one log-normal factor on TTFT and on TPOT per turn, for kernel/scheduling
  noise the roofline does not see. Default 0.05 (assumption: no per-turn figure is published for a
  fixed load; fit yours from traces), ``0`` for a deterministic model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, Literal, Self

import numpy as np
from numpy.typing import NDArray
from pydantic import Field, PrivateAttr, field_validator, model_validator

from voicebudget._algebra import Stage
from voicebudget._budget import MAX_FACTOR, MAX_USD
from voicebudget._distributions import Distribution
from voicebudget._errors import ModelError, VoiceBudgetError
from voicebudget._model import DataModel
from voicebudget._stage_models import TokenCount, _check_token_count, sample_tokens
from voicebudget._text import unknown
from voicebudget.inference._catalog import Hardware, ModelArch, Precision, get_hardware, get_model
from voicebudget.inference._load import littles_law_fixed_point
from voicebudget.inference._predict import estimate_inference
from voicebudget.inference._speculative import SPECULATIVE_PRESETS, SpeculativeDecoding
from voicebudget.inference._types import Deployment, InferenceResult, Workload

__all__ = ["APIStage", "FastTier", "ModelledStage", "WaferPath", "modelled_kinds", "stage_class_for"]

FloatArray = NDArray[np.float64]


def _mean_tokens(count: TokenCount) -> int:
    if isinstance(count, int):
        return max(count, 1)
    if isinstance(count, tuple):
        return max(round(sum(count) / len(count)), 1)
    return max(round((count.low + count.high) / 2), 1)


def _max_tokens(count: TokenCount) -> int:
    if isinstance(count, int):
        return max(count, 1)
    if isinstance(count, tuple):
        return max(max(count), 1)
    return max(count.high, 1)


def _jitter(rng: np.random.Generator, n: int, cv: float) -> FloatArray:
    if cv <= 0:
        return np.ones(n)
    sigma = math.sqrt(math.log1p(cv * cv))
    z = rng.standard_normal(n)
    return np.exp(sigma * z - 0.5 * sigma * sigma)


WaferPath = Literal["hosted", "on-prem"]
"""How a stage is reached: through the provider's hosted API, or chip time only."""

QueueModel = Literal["open_loop", "littles_law"]
"""How capacity planning loads a deployment: Poisson arrivals through a scheduler model
(``estimate_open_loop``, GPUs), or the stage at the concurrency Little's law gives."""


class ModelledStage(Stage):
    """An LLM on given hardware whose latency comes from an inference model: the interface of a hardware
    kind (module docstring). Subclasses give a ``kind`` literal and :meth:`deployment`; a kind with its own
    inference model overrides :meth:`estimate`.

    :cvar memory_kind: where the kind's hardware keeps the weights (``Hardware.memory_kind``: ``"hbm"``,
        ``"sram"``); a stage on other hardware is refused, naming the kind to use.
    :cvar queue_model: how capacity planning loads it (:data:`QueueModel`).
    :cvar waits_for_batch_step: a request waits for the running batch step to end (continuous batching
        admits at step boundaries): uniform on ``[0, T_step]`` per turn when others are in flight.
    :cvar carried_fields: fields a capacity sweep over other hardware (``capacity --hardware``) keeps
        from the scenario's own stage when the new stage's kind has them too.
    """

    if TYPE_CHECKING:  # each kind declares its literal (a field there, not here)
        kind: str

    memory_kind: ClassVar[str] = "hbm"
    queue_model: ClassVar[QueueModel] = "littles_law"
    waits_for_batch_step: ClassVar[bool] = False
    carried_fields: ClassVar[tuple[str, ...]] = ("first_phrase_tokens", "output_tokens", "jitter_cv")

    model: str | ModelArch = Field(description="Catalog model id, or an inline architecture table.")
    hardware: str | Hardware = Field(description="Catalog hardware id, or an inline hardware table.")
    chips: int | None = Field(default=None, ge=1)
    precision: Precision | None = None
    concurrency: int = Field(default=1, ge=1)
    prompt_tokens: TokenCount = 1000
    output_tokens: int = Field(default=200, ge=1)
    first_phrase_tokens: TokenCount = 10
    jitter_cv: float = Field(default=0.05, ge=0)
    speculative: SpeculativeDecoding | None = Field(
        default=None,
        description="Speculative decoding: a table (acceptance_rate, draft_tokens, draft_cost_ratio, "
        "verify_tokens) or a preset name ('eagle', 'medusa').",
    )

    _tokens = field_validator("prompt_tokens", "first_phrase_tokens")(_check_token_count)

    @field_validator("speculative", mode="before")
    @classmethod
    def _preset(cls, value: object) -> object:
        if isinstance(value, str):
            if value.strip().lower() not in SPECULATIVE_PRESETS:
                raise ValueError(
                    unknown("speculative preset", value, sorted(SPECULATIVE_PRESETS))
                    + " (or a table: acceptance_rate, draft_tokens, draft_cost_ratio, verify_tokens)"
                )
            return SPECULATIVE_PRESETS[value.strip().lower()].speculative
        if value is not None and not isinstance(value, (dict, SpeculativeDecoding)):
            known = ", ".join(sorted(SPECULATIVE_PRESETS))
            raise ValueError(
                f"give a preset name ({known}) or a table (acceptance_rate, draft_tokens, "
                f"draft_cost_ratio, verify_tokens), got {value!r}"
            )
        return value

    _ttft_ms: dict[int, float] = PrivateAttr(default_factory=dict)
    """TTFT per prompt length already predicted (the model is frozen, so is each prediction)."""

    def deployment(self) -> Deployment:  # pragma: no cover - overridden
        """The :class:`Deployment` these fields describe."""
        raise NotImplementedError

    def estimate(
        self, deployment: Deployment, workload: Workload, speculative: SpeculativeDecoding | None = None
    ) -> InferenceResult:
        """The kind's inference model: this stage's model on its hardware at ``deployment`` and ``workload``
        (default :func:`~voicebudget.estimate_inference`, which picks the GPU or SRAM model by the hardware).

        :raises ModelError: the deployment does not fit.
        """
        return estimate_inference(self.model, self.hardware, deployment, workload, speculative=speculative)

    def predict(self, prompt_tokens: int | None = None) -> InferenceResult:
        """The model's prediction at ``prompt_tokens`` (default: the mean prompt).

        :raises ModelError: the deployment does not fit.
        """
        p = prompt_tokens if prompt_tokens is not None else _mean_tokens(self.prompt_tokens)
        workload = Workload(prompt_tokens=max(p, 1), output_tokens=self.output_tokens)
        return self.estimate(self.deployment(), workload, self.speculative)

    def at_arrival_rate(self, workload: Workload, arrival_rate_per_s: float) -> InferenceResult:
        """The prediction at the concurrency an open-loop arrival rate implies (Little's law's fixed
        point, :func:`~voicebudget.estimate_at_arrival_rate`), without speculative decoding.

        :raises ModelError: the rate exceeds what the deployment serves before its memory is full.
        """

        def at(concurrency: int) -> InferenceResult:
            return self.estimate(self.deployment().model_copy(update={"concurrency": concurrency}), workload)

        return littles_law_fixed_point(at, arrival_rate_per_s)

    def hosted_path(self) -> tuple[WaferPath, str] | None:
        """How the stage is reached, for the notes of ``run`` and capacity: ``(path, one-line note)``;
        ``None`` for a kind without a hosted path (a GPU deployment is what you run)."""
        return None

    @model_validator(mode="after")
    def _runs(self) -> ModelledStage:
        try:
            hw = get_hardware(self.hardware)
            get_model(self.model)
            if hw.memory_kind != self.memory_kind:
                other = stage_class_for(hw).model_fields["kind"].default
                raise ValueError(f"{hw.name} keeps weights in {hw.memory_kind.upper()}; use kind = {other!r}")
            self.predict()
            longest = _max_tokens(self.prompt_tokens)
            if longest != _mean_tokens(self.prompt_tokens):
                self.predict(longest)  # the longest prompt sampled must fit the context and the memory too
        except VoiceBudgetError as exc:
            raise ValueError(str(exc)) from None
        return self

    def with_concurrency(self, concurrency: int) -> Self:
        """The same stage at another batch policy (requests in flight), validated: the deployment must fit.

        :raises pydantic.ValidationError: it does not fit at that concurrency (the message says why).
        """
        return type(self).model_validate({**dict(self), "concurrency": concurrency})

    def _ttft(self, prompt_tokens: int) -> float:
        if prompt_tokens not in self._ttft_ms:
            self._ttft_ms[prompt_tokens] = self.predict(prompt_tokens).ttft_ms
        return self._ttft_ms[prompt_tokens]

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        """Time to the first speakable phrase per turn, ``float64[n]`` ms."""
        prompts = sample_tokens(self.prompt_tokens, rng, n)
        uniq, inverse = np.unique(prompts, return_inverse=True)
        base = self.predict()
        ttft_u = np.array([self._ttft(int(p)) for p in uniq])  # one prediction per distinct prompt
        ttft = ttft_u[inverse.reshape(-1)]
        step = base.tpot_ms
        if self.concurrency > 1 and self.waits_for_batch_step:
            ttft = ttft - 0.5 * base.step.total_ms + rng.uniform(0.0, base.step.total_ms, n)
        ttft = ttft * _jitter(rng, n, self.jitter_cv)
        tpot = step * _jitter(rng, n, self.jitter_cv)
        out: FloatArray = ttft + sample_tokens(self.first_phrase_tokens, rng, n) * tpot
        return out


def modelled_kinds() -> dict[str, type[ModelledStage]]:
    """Every modelled stage kind of the stage union, in its order: ``kind`` -> its class."""
    import typing

    from voicebudget._stages import StageSpec  # the union imports this module: read it when asked

    members = typing.get_args(typing.get_args(StageSpec)[0])
    kinds = [cls for cls in members if isinstance(cls, type) and issubclass(cls, ModelledStage)]
    return {cls.model_fields["kind"].default: cls for cls in kinds}


def stage_class_for(hardware: str | Hardware) -> type[ModelledStage]:
    """The stage kind that models ``hardware`` by default: the first in the stage union for its
    ``memory_kind`` (``hbm``: ``gpu``, ``sram``: ``wafer``).

    :raises ModelError: no kind models that memory (the message lists the kinds and their memories).
    """
    hw = get_hardware(hardware)
    for cls in modelled_kinds().values():
        if cls.memory_kind == hw.memory_kind:
            return cls
    known = ", ".join(f"{k} ({c.memory_kind})" for k, c in modelled_kinds().items())
    raise ModelError(f"no stage kind models {hw.memory_kind!r} hardware ({hw.name}); known: {known}")


class FastTier(DataModel):
    """A provider's fast tier: output speed x ``speed_factor`` at ``price_factor`` x the price,
    TTFT x ``ttft_factor`` (1: unchanged, as in Anthropic's fast mode, calibration row A2)."""

    speed_factor: float = Field(gt=0, le=MAX_FACTOR)
    price_factor: float = Field(gt=0, le=MAX_FACTOR)
    ttft_factor: float = Field(default=1.0, gt=0, le=MAX_FACTOR)


class APIStage(Stage):
    """A hosted model behind an API, from measured TTFT and inter-token latency distributions.

    :param ttft: time to first token as measured from your server (includes the network), ms.
    :param tpot: time per output token, ms (``1000 / output tokens per s``).
    :param first_phrase_tokens: tokens until the first speakable phrase.
    :param fast: an optional fast tier; used when ``use_fast`` is true.
    :param usd_per_million_output_tokens: list price (for cost reports), optional.
    :param usd_per_million_input_tokens: list price of prompt tokens (for ``voicebudget capacity``), optional.
    :param requests_per_minute_limit: the account's rate limit, requests/min (capacity planning), optional.
    :param tokens_per_minute_limit: the account's rate limit, input + output tokens/min, optional.
    :param prompt_tokens: mean prompt tokens per turn (for the cost per turn), optional.
    :param output_tokens: mean output tokens per turn (for the cost per turn), optional.
    """

    kind: Literal["api"] = "api"
    plausible_as: ClassVar[Mapping[str, str]] = {"ttft": "llm"}  # not tpot: 0.48 ms/token is real (Cerebras)
    ttft: Distribution
    tpot: Distribution
    first_phrase_tokens: TokenCount = 10
    fast: FastTier | None = None
    use_fast: bool = False
    usd_per_million_output_tokens: float | None = Field(default=None, ge=0, le=MAX_USD)
    usd_per_million_input_tokens: float | None = Field(default=None, ge=0, le=MAX_USD)
    requests_per_minute_limit: float | None = Field(default=None, gt=0)
    tokens_per_minute_limit: float | None = Field(default=None, gt=0)
    prompt_tokens: int | None = Field(default=None, ge=0, le=10_000_000)
    output_tokens: int | None = Field(default=None, ge=1, le=10_000_000)

    _tokens = field_validator("first_phrase_tokens")(_check_token_count)

    @model_validator(mode="after")
    def _fast_given(self) -> APIStage:
        if self.use_fast and self.fast is None:
            raise ValueError("use_fast = true needs a 'fast' table (speed_factor, price_factor)")
        return self

    @property
    def price_per_million_output_tokens(self) -> float | None:
        """The list price in use (x ``price_factor`` on the fast tier), US dollars."""
        if self.usd_per_million_output_tokens is None:
            return None
        factor = self.fast.price_factor if (self.use_fast and self.fast) else 1.0
        return self.usd_per_million_output_tokens * factor

    def cost_per_turn_usd(self, prompt_tokens: float | None = None, output_tokens: float | None = None) -> float | None:
        """List-price US dollars of one turn's request: ``(prompt x input price + output x output price) / 1e6``.

        :param prompt_tokens: default the stage's ``prompt_tokens``; ``output_tokens`` likewise.
        :returns: ``None`` when the output price or either token count is unknown (a missing input price
            counts as 0).
        """
        out_price = self.price_per_million_output_tokens
        p = self.prompt_tokens if prompt_tokens is None else prompt_tokens
        o = self.output_tokens if output_tokens is None else output_tokens
        if out_price is None or p is None or o is None:
            return None
        in_price = (self.usd_per_million_input_tokens or 0.0) * (
            self.fast.price_factor if (self.use_fast and self.fast) else 1.0
        )
        return (p * in_price + o * out_price) / 1e6

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        """Time to the first speakable phrase per turn, ``float64[n]`` ms."""
        ttft = self.ttft.sample(rng, n)
        tpot = self.tpot.sample(rng, n)
        if self.use_fast and self.fast is not None:
            ttft *= self.fast.ttft_factor
            tpot /= self.fast.speed_factor
        out: FloatArray = ttft + sample_tokens(self.first_phrase_tokens, rng, n) * tpot
        return out
