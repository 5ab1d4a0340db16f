"""Speculative decoding: a draft proposes tokens, the target verifies them in one step.

Acceptance follows Leviathan, Kalman & Matias (ICML 2023, eqs. 1 and 3): the target accepts each of
the ``g`` drafted tokens with probability ``a`` (their i.i.d. assumption), so one target step emits on
average ``tau = (1 - a^(g+1)) / (1 - a)`` tokens (the accepted ones plus the target's own). With a draft
step costing ``c`` target decode steps, the paper's wall-clock speed-up is::

    S = tau / (g c + 1)                       (verification costs one decode step)

That holds while decoding is memory-bound. Here the verification step is costed by the hardware model
instead: the target runs ``V`` query tokens per sequence (``g + 1`` for a chain, the node count of a
Medusa/EAGLE tree), so the speed-up at ``B`` sequences of one replica is::

    S(B) = tau * T_step(B) / (T_verify(B, V) + g c T_step(B))

``T_verify`` reads the weights once but computes ``B V`` tokens: at low concurrency it is about one
step (``S -> tau / (g c + 1)``); once the ``B V`` tokens make the step compute-bound it grows like
``V``, and the speed-up falls toward ``tau / (V + g c)``, below 1 (the slowdowns published at high
batch). On SRAM-resident chips (wafer, LPU) a token's time is pipeline latency, so verification of
``V`` tokens costs one traversal until the compute floor binds (``voicebudget.inference._predict``).

Named presets (:data:`SPECULATIVE_PRESETS`) carry the acceptance measured for each method (Spec-Bench,
Vicuna-7B at batch 1) and the draft cost from the method's own architecture.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field, model_validator

from voicebudget._errors import ScenarioError, param
from voicebudget._model import DataModel
from voicebudget._text import unknown

__all__ = ["SPECULATIVE_PRESETS", "SpeculativeDecoding", "SpeculativePreset", "get_speculative_preset"]


class SpeculativeDecoding(DataModel):
    """Speculative decoding settings.

    :param acceptance_rate: probability ``a`` that the target accepts one drafted token, ``[0, 1)``.
    :param draft_tokens: draft length ``g`` (tokens proposed per target step; a tree's depth), ``>= 1``.
    :param draft_cost_ratio: ``c``, time of one draft step / one target decode step, ``>= 0``
        (Medusa/EAGLE heads: their weight bytes over the target's, ~0.03-0.06; a draft model: its
        step-time ratio).
    :param verify_tokens: ``V``, query tokens the target verifies per sequence and step: ``g + 1`` for a
        chain (the default), the node count (root included) of a Medusa/EAGLE tree. ``>= g + 1``.
    """

    acceptance_rate: float = Field(ge=0, lt=1)
    draft_tokens: int = Field(ge=1)
    draft_cost_ratio: float = Field(ge=0)
    verify_tokens: int | None = Field(default=None, ge=2)

    @model_validator(mode="after")
    def _tree_holds_chain(self) -> SpeculativeDecoding:
        if self.verify_tokens is not None and self.verify_tokens < self.draft_tokens + 1:
            raise ValueError(
                f"verify_tokens ({self.verify_tokens}) must be >= draft_tokens + 1 "
                f"({self.draft_tokens + 1}): the target verifies at least the drafted chain and its "
                "own token"
            )
        return self

    @classmethod
    def from_accepted_tokens(
        cls, accepted_tokens: float, draft_tokens: int, draft_cost_ratio: float, verify_tokens: int | None = None
    ) -> SpeculativeDecoding:
        """The settings whose tokens per target step equal a measured mean accepted length.

        Papers report ``tau`` (mean accepted tokens per target step, the target's own token included);
        this solves ``(1 - a^(g+1)) / (1 - a) = tau`` for ``a`` by bisection (monotone in ``a``).

        :param accepted_tokens: ``tau``, in ``[1, g + 1)``.
        :raises ScenarioError: ``tau`` outside ``[1, g + 1)``.
        """
        g = draft_tokens
        if not 1.0 <= accepted_tokens < g + 1:
            raise ScenarioError(
                f"mean accepted tokens must be in [1, {g + 1}) for draft_tokens {g}, got {accepted_tokens}",
                origin="speculative",
            )
        lo, hi = 0.0, 1.0
        for _ in range(80):
            mid = (lo + hi) / 2.0
            if _tau(mid, g) < accepted_tokens:
                lo = mid
            else:
                hi = mid
        return cls(acceptance_rate=lo, draft_tokens=g, draft_cost_ratio=draft_cost_ratio, verify_tokens=verify_tokens)

    @property
    def verified_tokens(self) -> int:
        """``V``: query tokens verified per sequence and target step."""
        return self.verify_tokens if self.verify_tokens is not None else self.draft_tokens + 1

    @property
    def tokens_per_step(self) -> float:
        """Expected tokens emitted per target step, ``(1 - a^(g+1)) / (1 - a)``."""
        return _tau(self.acceptance_rate, self.draft_tokens)

    @property
    def speedup(self) -> float:
        """Memory-bound (low-concurrency) decode speed-up, ``(1 - a^(g+1)) / ((1 - a) (g c + 1))``."""
        return self.tokens_per_step / (self.draft_tokens * self.draft_cost_ratio + 1.0)

    def speedup_given(self, step_ms: float, verify_step_ms: float) -> float:
        """Speed-up when the plain decode step takes ``step_ms`` and verifying ``V`` tokens per sequence
        takes ``verify_step_ms``: ``tau T_step / (T_verify + g c T_step)``."""
        return self.tokens_per_step * step_ms / (verify_step_ms + self.draft_tokens * self.draft_cost_ratio * step_ms)


def _tau(a: float, g: int) -> float:
    return float(g + 1) if a >= 1.0 else (1.0 - a ** (g + 1)) / (1.0 - a)


@dataclass(frozen=True)
class SpeculativePreset:
    """A named speculative-decoding method with its published acceptance and its source."""

    name: str
    speculative: SpeculativeDecoding
    accepted_tokens: float
    source: str


# Vicuna-7B (Llama-2-7B architecture): d_model 4096, 32,000-token vocabulary, MLP width 11,008,
# 6.74e9 parameters. A draft pass's cost is its weight bytes over the target's (both memory-bound at
# batch 1); per-pass fixed costs (kernel launches) are not counted, so presets are optimistic on
# eager (non-graph) implementations.
_LM_HEAD = 4096 * 32_000  # 131.1M: one vocabulary projection
_LAYER = 4 * 4096**2 + 3 * 4096 * 11_008  # 202.4M: attention + SwiGLU MLP of one decoder layer
_VICUNA_7B = 6.74e9

SPECULATIVE_PRESETS: dict[str, SpeculativePreset] = {
    p.name: p
    for p in (
        SpeculativePreset(
            name="eagle",
            speculative=SpeculativeDecoding.from_accepted_tokens(
                3.61,
                draft_tokens=5,
                verify_tokens=26,
                draft_cost_ratio=(_LAYER + 2 * 4096 * 4096 + _LM_HEAD) / _VICUNA_7B,
            ),
            accepted_tokens=3.61,
            source="EAGLE-1 (Li et al., ICML 2024) on Vicuna-7B: mean accepted tokens 3.61 (Spec-Bench leaderboard, "
            "A100, greedy, fp16, batch 1: github.com/hemingkx/Spec-Bench Leaderboard.md, read 2026-12-01); "
            "tree of 25 drafted nodes, depth 5 (SafeAILab/EAGLE eagle/model/choices.py mc_sim_7b_63), so "
            "V = 26, g = 5; one draft pass = one decoder layer + a 2d->d projection + the target's LM head = "
            "367M parameters, c = 0.054 of Vicuna-7B",
        ),
        SpeculativePreset(
            name="medusa",
            speculative=SpeculativeDecoding.from_accepted_tokens(
                2.32, draft_tokens=4, verify_tokens=64, draft_cost_ratio=(4096 * 4096 + _LM_HEAD) / _VICUNA_7B
            ),
            accepted_tokens=2.32,
            source="Medusa-1 (Cai et al., 2024) on Vicuna-7B: mean accepted tokens 2.32 (Spec-Bench leaderboard, "
            "A100, greedy, fp16, batch 1: github.com/hemingkx/Spec-Bench Leaderboard.md, read 2026-12-01); "
            "tree mc_sim_7b_63: 63 candidates of depth 4 (FasterDecoding/Medusa "
            "medusa/model/medusa_choices.py), so V = 64, g = 4 heads; one head = a d x d residual block + its "
            "own LM head = 148M parameters, "
            "c = 0.022 of Vicuna-7B per head",
        ),
    )
}
"""Named speculative-decoding methods (``--speculative eagle``), acceptance measured at batch 1."""


def get_speculative_preset(name: str) -> SpeculativePreset:
    """The preset called ``name`` (case-insensitive).

    :raises ScenarioError: unknown name (the message lists the known ones).
    """
    key = name.strip().lower()
    if key not in SPECULATIVE_PRESETS:
        raise ScenarioError(
            unknown("speculative preset", name, sorted(SPECULATIVE_PRESETS)) + " (or give A,G,C[,V])",
            origin=param("speculative"),
        )
    return SPECULATIVE_PRESETS[key]
