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

__all__ = ["BARGE_IN_BUDGET_MS", "BARGE_IN_STAGES", "BargeInTurn"]

BARGE_IN_STAGES = ("detection", "tts_flush", "output_queue", "transport")
"""The stages of a barge-in, in time order (``detection`` required)."""

BARGE_IN_BUDGET_MS = 500.0
"""Default budget of a barge-in, ms: caller onset -> the agent's audio heard to stop, at the voice budget's
percentile (p95). No published bar covers the whole stop (detection + TTS flush + output queue + transport);
500 ms is the overlap that frameworks' own defaults let a caller's speech run before they take it as an
interruption: LiveKit Agents' ``InterruptionOptions.min_duration`` 0.5 s ("minimum speech length to register
as an interruption", ``livekit/agents/voice/turn.py``, livekit-agents 1.8.9, read 2026-12-02) and Tencent
RTC's interruption duration, 500 ms by default, 300-500 ms advised for customer service
(https://trtc.io/document/65319, read 2026-12-02). An agent on those defaults spends it all on detection, so
flush and transport put its stop over: the caller hears more than half a second of both talking. Give your
own with ``check --barge-in-budget-ms`` (``check_calls(barge_in_budget=...)``); ``scenarios/barge-in.toml``
judges its turn kind against the same 500 ms."""


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
