"""Turns that call a tool before they answer: a share of turns waits for a tool and an LLM pass more.

A turn is a sequence of LLM passes and tool executions (DESIGN section 10): the first pass answers
with a tool call instead of text, the tool runs, a second pass produces the reply. On the critical
path that adds, to a turn that calls a tool, the LLM writing the call (its first token to the call
dispatched), the tool (dispatched to the next LLM request) and the second pass (request to its first
token). A :class:`ToolTurn` stage adds them to a share of the turns, so ``run`` reports the p95 over
the mixture of turns with and without a tool, and its tail attribution names the tool when it is
what the slow turns wait for::

    [pipeline.llm.stages.tool_turn]
    kind = "tool_turn"
    share = 0.3
    name = "get_weather"
    tool = { kind = "lognormal", p50_ms = 400, p95_ms = 1100 }
    second_pass = { kind = "lognormal", p50_ms = 300, p95_ms = 600 }

``voicebudget fit`` writes one from traces with tool turns (docs/traces.md, "The fit").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import ConfigDict, Field, field_validator

from voicebudget._algebra import Sequence, Stage, evaluate, stage_rng
from voicebudget._distributions import Fixed

if TYPE_CHECKING:
    from voicebudget._stages import StageSpec

__all__ = ["ToolTurn"]

FloatArray = NDArray[np.float64]
_FIELDS = {"tool_call": "call", "tool": "tool", "second_pass": "second_pass"}


class ToolTurn(Stage):
    """A share of turns that call a tool: each such turn adds the LLM writing the call, the tool and the
    LLM pass after it; the other turns add 0. A stage (a leaf to the engine, which draws its three
    sub-stages itself, so the report's tail breaks it down by part: the tool's ``name``, ``tool_call``,
    ``second_pass``).

    :param share: the probability that a turn calls the tool, in [0, 1]. None: every draw adds the
        sub-stages' values, which then carry 0 in turns that called no tool (observed columns of a joint
        fit, whose rows are the trace's turns: the trace's own share).
    :param name: the tool's name (or names), the part the tail attribution shows.
    :param call: the first pass's time from its first token to the dispatched call, ms (default 0).
    :param tool: the tool running: the call dispatched -> the next LLM request, ms.
    :param second_pass: the LLM pass after the tool: request -> first token, ms.
    """

    model_config = ConfigDict(defer_build=True)

    kind: Literal["tool_turn"] = "tool_turn"
    share: float | None = Field(default=None, ge=0, le=1)
    name: str = Field(default="tool", min_length=1, max_length=200)
    call: StageSpec = Field(default_factory=lambda: Fixed(value_ms=0.0))
    tool: StageSpec
    second_pass: StageSpec

    @field_validator("name")
    @classmethod
    def _not_a_part(cls, v: str) -> str:
        if v in ("tool_call", "second_pass"):
            raise ValueError(f"name {v!r} is one of the stage's other parts (tool_call, second_pass)")
        return v

    def children(self) -> dict[str, Any]:
        """The sub-stages, under the names they are drawn by: ``tool_call``, ``tool``, ``second_pass``."""
        return {"tool_call": self.call, "tool": self.tool, "second_pass": self.second_pass}

    def with_children(self, children: Mapping[str, Any]) -> ToolTurn:
        """A copy with ``tool_call``, ``tool`` and/or ``second_pass`` replaced (not validated)."""
        unknown = set(children) - set(_FIELDS)
        if unknown:
            raise KeyError(f"a tool turn's sub-stages are tool_call, tool and second_pass, got {sorted(unknown)}")
        return self.model_copy(update={_FIELDS[k]: v for k, v in children.items()})

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        """Per turn, the time the tool call adds, ms, ``float64[n]`` (0 in a turn that calls none)."""
        return self.sample_parts(rng, n)[0]

    def sample_parts(self, rng: np.random.Generator, n: int) -> tuple[FloatArray, dict[str, FloatArray]]:
        """The same draws as :meth:`sample`, with each part's per-turn contribution: the tool (under its
        ``name``), ``tool_call`` and ``second_pass`` (``float64[n]`` ms each, summing to the samples).

        The three sub-stages draw each from a stream of its own under this stage's stream (the run's seed
        and this stage's place in the tree), so observed columns inside (a joint fit's ``tool``) draw the
        same rows of their table as the run's other columns; whether a turn calls the tool comes from a
        stream of its own. A generator not built by the engine gives a seed of its own instead.
        """
        seed_seq = getattr(rng.bit_generator, "seed_seq", None)
        if isinstance(seed_seq, np.random.SeedSequence) and isinstance(seed_seq.entropy, int):
            seed, prefix = seed_seq.entropy, "tool_turn#" + ".".join(str(k) for k in seed_seq.spawn_key)
        else:
            seed, prefix = int(rng.integers(0, 2**63 - 1)), "tool_turn"
        named = {f"{prefix}/{key}": stage for key, stage in self.children().items()}
        evaluation = evaluate(Sequence.model_construct(stages=named), n, seed, name=prefix)
        drawn = {node.name.rsplit("/", 1)[1]: node.samples for node in evaluation.root.children}
        called = np.ones(n) if self.share is None else (stage_rng(seed, prefix + "/share").random(n) < self.share)
        parts = {
            self.name: drawn["tool"] * called,
            "tool_call": drawn["tool_call"] * called,
            "second_pass": drawn["second_pass"] * called,
        }
        total = parts[self.name] + parts["tool_call"] + parts["second_pass"]
        return np.asarray(total, dtype=np.float64), {k: np.asarray(v, dtype=np.float64) for k, v in parts.items()}
