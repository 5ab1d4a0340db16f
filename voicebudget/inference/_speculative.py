"""Speculative decoding as an explicit factor (Leviathan, Kalman & Matias, ICML 2023, eqs. 1 and 3).

A draft model proposes ``g`` tokens; the target verifies them in one step and accepts each with
probability ``a`` (i.i.d. assumption of the paper). Expected tokens per target step:
``(1 - a^(g+1)) / (1 - a)``; with a draft step costing ``c`` target steps, the wall-clock speed-up is
``(1 - a^(g+1)) / ((1 - a) * (g*c + 1))``.

The verification step is assumed to cost one decode step: true while decoding is memory-bound (low
concurrency); at high concurrency the extra verified tokens cost compute, and the gain shrinks.
"""

from __future__ import annotations

from pydantic import Field

from voicebudget._model import DataModel

__all__ = ["SpeculativeDecoding"]


class SpeculativeDecoding(DataModel):
    """Speculative decoding settings.

    :param acceptance_rate: probability ``a`` that the target accepts one drafted token, ``[0, 1)``.
    :param draft_tokens: draft length ``g`` (tokens proposed per target step), ``>= 1``.
    :param draft_cost_ratio: ``c``, time of one draft step / one target step, ``>= 0``.
    """


    acceptance_rate: float = Field(ge=0, lt=1)
    draft_tokens: int = Field(ge=1)
    draft_cost_ratio: float = Field(ge=0)

    @property
    def tokens_per_step(self) -> float:
        """Expected tokens emitted per target step, ``(1 - a^(g+1)) / (1 - a)``."""
        a, g = self.acceptance_rate, self.draft_tokens
        return (1.0 - a ** (g + 1)) / (1.0 - a)

    @property
    def speedup(self) -> float:
        """Wall-clock decode speed-up, ``(1 - a^(g+1)) / ((1 - a) (g c + 1))``."""
        return self.tokens_per_step / (self.draft_tokens * self.draft_cost_ratio + 1.0)
