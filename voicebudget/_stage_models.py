"""Leaf stage models of the voice turn that are more than one distribution: LLM, TTS, network.

Each is a frozen pydantic model with a ``kind`` and ``sample(rng, n) -> float64[n]`` in ms, like a
distribution, so it can stand wherever a stage can.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import Field, ValidationInfo, field_validator

from voicebudget._algebra import Buffers, Stage
from voicebudget._distributions import CHUNK, Distribution, resample_into
from voicebudget._model import DataModel

__all__ = ["ColdConnection", "LLMStage", "NetworkStage", "TTSStage", "TokenRange"]

FloatArray = NDArray[np.float64]


class _Model(DataModel):
    """The package's input-model base (its configuration is :data:`voicebudget._model.MODEL_CONFIG`)."""


MAX_TOKENS = 10_000_000
"""Largest token count accepted anywhere (ten million: beyond any model's context window); larger
values are input errors, not integer overflows in the sampler."""


class TokenRange(_Model):
    """A token count drawn uniformly from the integers ``low..high`` (inclusive), each in
    ``0..MAX_TOKENS``."""

    low: int = Field(ge=0, le=MAX_TOKENS)
    high: int = Field(ge=0, le=MAX_TOKENS)

    @field_validator("high")
    @classmethod
    def _high_ge_low(cls, v: int, info: ValidationInfo) -> int:
        low = info.data.get("low")
        if low is not None and v < low:
            raise ValueError(f"must be >= low ({low}), got {v}")
        return v


TokenCount = int | TokenRange | tuple[int, ...]
"""A token count: a fixed ``int``, a :class:`TokenRange`, or observed counts to resample."""


def sample_tokens(count: TokenCount, rng: np.random.Generator, n: int) -> FloatArray:
    """Draw ``float64[n]`` token counts from a :data:`TokenCount`."""
    return sample_tokens_into(count, rng, np.empty(n))


def sample_tokens_into(count: TokenCount, rng: np.random.Generator, out: FloatArray) -> FloatArray:
    """:func:`sample_tokens` written into ``out`` (``float64[n]``): the same draws, integers drawn in pieces
    (:func:`~voicebudget._distributions.resample_into`)."""
    if isinstance(count, int):
        out.fill(float(count))
    elif isinstance(count, TokenRange):
        for start in range(0, out.shape[0], CHUNK):
            piece = out[start : start + CHUNK]
            piece[...] = rng.integers(count.low, count.high + 1, piece.shape[0])
    else:
        resample_into(np.asarray(count, dtype=np.float64), rng, out)
    return out


def _check_token_count(v: TokenCount) -> TokenCount:
    if isinstance(v, int) and not 0 <= v <= MAX_TOKENS:
        raise ValueError(f"must be a token count in 0..{MAX_TOKENS:,}, got {v if abs(v) < 10**12 else 'more'}")
    if isinstance(v, tuple) and (not v or min(v) < 0 or max(v) > MAX_TOKENS):
        raise ValueError(f"observed token counts must be a non-empty list of counts in 0..{MAX_TOKENS:,}")
    return v


class LLMStage(Stage):
    """An LLM measured by its streaming figures: time to the first *speakable phrase*.

    Per turn: ``ttft + first_phrase_tokens * tpot``. TTFT (request sent to first token) includes
    queueing and prefill; TPOT (time per output token, a.k.a. inter-token latency) is drawn once per
    turn, because decode speed is a property of the request's batch, not of each token. TTS starts on
    the first complete phrase, so these tokens sit on the critical path (Pipecat reports them as
    "text aggregation time").

    :param ttft: time to first token, ms.
    :param tpot: time per output token, ms/token.
    :param first_phrase_tokens: tokens until the first phrase the TTS can speak (default 10, about
        one short clause; Pipecat's sample log shows 120-510 ms of aggregation at ~20 ms/token).
    """

    kind: Literal["llm"] = "llm"
    plausible_as: ClassVar[Mapping[str, str]] = {"ttft": "llm"}  # not tpot: 0.56 ms/token is real (Cerebras)
    ttft: Distribution
    tpot: Distribution
    first_phrase_tokens: TokenCount = 10

    _tokens = field_validator("first_phrase_tokens")(_check_token_count)

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        return self.sample_into(rng, np.empty(n), Buffers(n))

    def sample_into(self, rng: np.random.Generator, out: FloatArray, buffers: Buffers) -> FloatArray:
        x = self.ttft.sample_into(rng, out, buffers)
        tokens = sample_tokens_into(self.first_phrase_tokens, rng, buffers.take())
        tpot = self.tpot.sample_into(rng, buffers.take(), buffers)
        x += np.multiply(tokens, tpot, out=tokens)
        buffers.give(tokens, tpot)
        return x


class TTSStage(Stage):
    """Text-to-speech: time to first byte, plus optional leading silence before the first audible
    sample (Pipecat's TTFA = TTFB + leading silence).

    :param ttfb: first text sent to first audio byte, ms.
    :param leading_silence: silence at the start of the first audio chunk, ms (default none).
    """

    kind: Literal["tts"] = "tts"
    plausible_as: ClassVar[Mapping[str, str]] = {"ttfb": "tts"}
    ttfb: Distribution
    leading_silence: Distribution | None = None

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        return self.sample_into(rng, np.empty(n), Buffers(n))

    def sample_into(self, rng: np.random.Generator, out: FloatArray, buffers: Buffers) -> FloatArray:
        x = self.ttfb.sample_into(rng, out, buffers)
        if self.leading_silence is not None:
            silence = self.leading_silence.sample_into(rng, buffers.take(), buffers)
            x += silence
            buffers.give(silence)
        return x


class ColdConnection(_Model):
    """Extra set-up time (DNS, TCP, TLS round trips, pool warm-up) on turns that open a new connection.

    :param extra: the extra latency when cold, ms.
    :param probability: the share of turns that are cold; ``1/T`` for the first turn of a
        ``T``-turn conversation with a pooled connection after that.
    """

    plausible_as: ClassVar[Mapping[str, str]] = {"extra": "network"}
    extra: Distribution
    probability: float = Field(ge=0, le=1)


class NetworkStage(Stage):
    """Network to the LLM: a base latency plus, on a share of turns, a cold-connection term."""

    kind: Literal["network"] = "network"
    plausible_as: ClassVar[Mapping[str, str]] = {"base": "network"}
    base: Distribution
    cold: ColdConnection | None = None

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        return self.sample_into(rng, np.empty(n), Buffers(n))

    def sample_into(self, rng: np.random.Generator, out: FloatArray, buffers: Buffers) -> FloatArray:
        x = self.base.sample_into(rng, out, buffers)
        if self.cold is not None and self.cold.probability > 0:
            u = rng.random(out=buffers.take())
            cold = u < self.cold.probability
            buffers.give(u)
            m = int(np.count_nonzero(cold))
            if m:
                x[cold] += self.cold.extra.sample(rng, m)
        return x
