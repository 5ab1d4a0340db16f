"""The barge-in turn: the caller starts speaking over the agent, and the agent's audio must stop.

Time axis: ``t = 0`` is the caller's speech onset over the agent's audio; the turn ends when the
caller hears the agent stop::

    caller onset ─┬─ detection      VAD start_secs, an interruption strategy (words from the STT), a
                  │                 model's own interruption detector
                  ├─ tts_flush      cancelling the TTS stream and the LLM
                  ├─ output_queue   audio already handed to the output transport (its buffer)
                  └─ transport      audio already in flight: network, jitter buffer, playout
    barge-in latency = agent audio stops (as heard) - caller onset

It is a ``sequence`` whose stages are these, by name (the first is ``detection``; the others are
optional, in this order), judged against the scenario's own budget (docs/audio.md).
"""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from voicebudget._algebra import Sequence

__all__ = ["BARGE_IN_STAGES", "BargeInTurn"]

BARGE_IN_STAGES = ("detection", "tts_flush", "output_queue", "transport")
"""The stages of a barge-in, in time order (``detection`` required)."""


class BargeInTurn(Sequence):
    """A barge-in: caller onset -> the agent's audio stops, as the caller hears it (a ``sequence`` of
    :data:`BARGE_IN_STAGES`; its children are its stages, :meth:`children`).

    :param stages: ``detection`` (caller onset -> the interruption is decided), then optionally
        ``tts_flush``, ``output_queue``, ``transport`` (ms each; any stage kind).
    :raises pydantic.ValidationError: ``detection`` missing, a stage not in :data:`BARGE_IN_STAGES`, or
        out of order.
    """

    kind: Literal["barge_in"] = "barge_in"  # type: ignore[assignment]

    @model_validator(mode="after")
    def _named(self) -> BargeInTurn:
        names = list(self.stages)
        unknown = [n for n in names if n not in BARGE_IN_STAGES]
        if unknown:
            raise ValueError(f"unknown barge-in stage(s) {unknown}; allowed, in order: {', '.join(BARGE_IN_STAGES)}")
        if not names or names[0] != "detection":
            raise ValueError("a barge-in starts with its detection stage: stages.detection is required, first")
        if names != sorted(names, key=BARGE_IN_STAGES.index):
            raise ValueError(f"stages out of order {names}; the order is {', '.join(BARGE_IN_STAGES)}")
        return self
