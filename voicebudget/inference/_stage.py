"""Scenario stages for the LLM: ``kind = "gpu"``, ``"wafer"`` (modelled) and ``"api"`` (measured).

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
from typing import Literal, Self

import numpy as np
from numpy.typing import NDArray
from pydantic import Field, PrivateAttr, field_validator, model_validator

from voicebudget._algebra import Stage
from voicebudget._distributions import Distribution, LogNormal
from voicebudget._errors import VoiceBudgetError
from voicebudget._model import DataModel
from voicebudget._stage_models import TokenCount, _check_token_count, sample_tokens
from voicebudget.inference._catalog import Hardware, ModelArch, Precision, get_hardware, get_model
from voicebudget.inference._predict import estimate_inference
from voicebudget.inference._speculative import SPECULATIVE_PRESETS, SpeculativeDecoding
from voicebudget.inference._types import Deployment, InferenceResult, Workload

__all__ = ["APIStage", "FastTier", "GPUStage", "WaferStage"]

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


class _ModelledStage(Stage):
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
                known = ", ".join(sorted(SPECULATIVE_PRESETS))
                raise ValueError(
                    f"unknown speculative preset {value!r}; known: {known}"
                    " (or a table: acceptance_rate, draft_tokens, draft_cost_ratio, verify_tokens)"
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
        raise NotImplementedError

    def predict(self, prompt_tokens: int | None = None) -> InferenceResult:
        """The model's prediction at ``prompt_tokens`` (default: the mean prompt).

        :raises ModelError: the deployment does not fit.
        """
        p = prompt_tokens if prompt_tokens is not None else _mean_tokens(self.prompt_tokens)
        return estimate_inference(
            self.model,
            self.hardware,
            self.deployment(),
            Workload(prompt_tokens=max(p, 1), output_tokens=self.output_tokens),
            speculative=self.speculative,
        )

    @model_validator(mode="after")
    def _runs(self) -> _ModelledStage:
        try:
            hw = get_hardware(self.hardware)
            get_model(self.model)
            want = "sram" if self.kind_name == "wafer" else "hbm"
            if hw.memory_kind != want:
                other = "wafer" if hw.memory_kind == "sram" else "gpu"
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

    @property
    def kind_name(self) -> str:
        return str(getattr(self, "kind", ""))

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        """Time to the first speakable phrase per turn, ``float64[n]`` ms."""
        prompts = sample_tokens(self.prompt_tokens, rng, n)
        uniq, inverse = np.unique(prompts, return_inverse=True)
        base = self.predict()
        ttft_u = np.array([self._ttft(int(p)) for p in uniq])  # one prediction per distinct prompt
        ttft = ttft_u[inverse.reshape(-1)]
        step = base.tpot_ms
        if self.concurrency > 1 and base.kind == "gpu":
            ttft = ttft - 0.5 * base.step.total_ms + rng.uniform(0.0, base.step.total_ms, n)
        ttft = ttft * _jitter(rng, n, self.jitter_cv)
        tpot = step * _jitter(rng, n, self.jitter_cv)
        out: FloatArray = ttft + sample_tokens(self.first_phrase_tokens, rng, n) * tpot
        return out


class GPUStage(_ModelledStage):
    """An LLM served on GPUs, modelled (see :func:`voicebudget.estimate_inference`).

    :param model: catalog id (``llama-3.1-70b``) or an inline :class:`ModelArch` table.
    :param hardware: catalog id (``h100-sxm``) or an inline :class:`Hardware` table.
    :param chips: chips (default: the fewest that fit); ``tensor_parallel`` defaults to the largest degree
        that divides them and splits the attention heads (see :class:`Deployment`).
    :param concurrency: requests in flight on the deployment (the batch policy).
    :param prompt_tokens: prompt per turn (int, ``{low, high}`` or observed counts).
    :param output_tokens: mean reply length (sets other users' prefill load per step).
    :param first_phrase_tokens: tokens until the first phrase the TTS can speak.
    :param jitter_cv: per-turn log-normal noise on TTFT and TPOT (module docstring).
    """

    kind: Literal["gpu"] = "gpu"
    tensor_parallel: int | None = Field(default=None, ge=1)

    def deployment(self) -> Deployment:
        """The :class:`Deployment` these fields describe."""
        return Deployment(
            chips=self.chips,
            tensor_parallel=self.tensor_parallel,
            precision=self.precision,
            concurrency=self.concurrency,
        )


WaferPath = Literal["hosted", "on-prem"]
"""How a wafer/LPU stage is reached: through the provider's hosted API, or chip time only."""


class WaferStage(_ModelledStage):
    """An LLM on SRAM-resident chips (Cerebras WSE-3 ``wse-3``, Groq ``groq-lpu``), modelled.

    Same fields as :class:`GPUStage` without tensor parallelism; ``chips`` defaults to the fewest
    whose SRAM holds the model.

    The model gives chip time. These chips are mostly reached through their provider's API, so on a chip
    with a measured hosted path (``Hardware.hosted``: ``wse-3``, ``groq-lpu``) the stage adds that path by
    default: a log-normal network + front-end + queueing overhead per turn, drawn independently of the chip
    time and added to it.

    :param path: ``"hosted"`` (the default on a chip with a hosted path, or when ``hosted_overhead`` is
        given) or ``"on-prem"``: chip time only (a dedicated deployment next to the agent, or the API path
        modelled as a stage of its own).
    :param hosted_overhead: your own overhead distribution (any distribution kind, ms), replacing the
        catalog's; it implies ``path = "hosted"``.
    :param software: the vendor software generation of the chip timings (``voicebudget hardware`` lists
        them, e.g. ``"2024-08"`` for Cerebras' launch software); default the latest.
    """

    kind: Literal["wafer"] = "wafer"
    path: WaferPath | None = None
    hosted_overhead: Distribution | None = None
    software: str | None = Field(default=None, min_length=1, max_length=40)

    def deployment(self) -> Deployment:
        """The :class:`Deployment` these fields describe."""
        return Deployment(
            chips=self.chips, precision=self.precision, concurrency=self.concurrency, software=self.software
        )

    @field_validator("hosted_overhead", mode="before")
    @classmethod
    def _overhead_is_a_table(cls, value: object) -> object:
        if isinstance(value, (bool, int, float, str)):  # a bare number was refused as "a valid dictionary"
            raise ValueError(
                f'give a distribution (ms), e.g. {{ kind = "fixed", value_ms = 50 }} or '
                f'{{ kind = "lognormal", p50_ms = 180, p95_ms = 320 }}, got {value!r}'
            )
        return value

    @model_validator(mode="after")
    def _path_known(self) -> WaferStage:
        if self.path == "on-prem" and self.hosted_overhead is not None:
            raise ValueError(
                'hosted_overhead is the hosted path\'s overhead: give path = "hosted" (or leave path '
                "out), or drop hosted_overhead for chip time only"
            )
        if self.path == "hosted" and self.hosted_overhead is None and get_hardware(self.hardware).hosted is None:
            raise ValueError(
                f'path = "hosted": {get_hardware(self.hardware).name} has no measured hosted path; give '
                'hosted_overhead (a distribution, ms) or path = "on-prem" for chip time only'
            )
        return self

    @property
    def resolved_path(self) -> WaferPath:
        """``path`` as given, else ``"hosted"`` when the chip has a hosted path or an overhead is given."""
        if self.path is not None:
            return self.path
        hosted = self.hosted_overhead is not None or get_hardware(self.hardware).hosted is not None
        return "hosted" if hosted else "on-prem"

    def overhead(self) -> Distribution | None:
        """The hosted path's overhead distribution (ms), ``None`` on the on-prem path."""
        if self.resolved_path == "on-prem":
            return None
        if self.hosted_overhead is not None:
            return self.hosted_overhead
        hosted = get_hardware(self.hardware).hosted
        assert hosted is not None  # guarded by _path_known
        return LogNormal(p50_ms=hosted.overhead_p50_ms, p95_ms=hosted.overhead_p95_ms)

    def path_note(self) -> str:
        """One line saying what the stage's samples include (shown by ``voicebudget run``)."""
        if self.resolved_path == "on-prem":
            return 'chip time only (path = "on-prem": no network or provider overhead added)'
        if self.hosted_overhead is not None:
            return "hosted path added: your hosted_overhead distribution on top of chip time"
        hosted = get_hardware(self.hardware).hosted
        assert hosted is not None
        return (
            f"hosted path added: {hosted.provider} network + overhead, log-normal p50 "
            f"{hosted.overhead_p50_ms:g} / p95 {hosted.overhead_p95_ms:g} ms on top of chip time "
            '(path = "on-prem" for chip time only)'
        )

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        """Time to the first speakable phrase per turn, ``float64[n]`` ms: chip time, plus the hosted
        path's overhead on the hosted path (drawn after the chip time, so both paths share those draws)."""
        out = super().sample(rng, n)
        extra = self.overhead()
        if extra is not None:
            out = out + extra.sample(rng, n)
        return out


class FastTier(DataModel):
    """A provider's fast tier: output speed x ``speed_factor`` at ``price_factor`` x the price,
    TTFT x ``ttft_factor`` (1: unchanged, as in Anthropic's fast mode, calibration row A2)."""

    speed_factor: float = Field(gt=0)
    price_factor: float = Field(gt=0)
    ttft_factor: float = Field(default=1.0, gt=0)


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
    ttft: Distribution
    tpot: Distribution
    first_phrase_tokens: TokenCount = 10
    fast: FastTier | None = None
    use_fast: bool = False
    usd_per_million_output_tokens: float | None = Field(default=None, ge=0)
    usd_per_million_input_tokens: float | None = Field(default=None, ge=0)
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
