"""A Pipecat processor that speaks a short filler when the budget guard predicts the first audio
would come too late.

Place it between the LLM and the TTS::

    guard = voicebudget.BudgetGuard.from_recorder(observer.recorder, policy=lambda d: "filler")
    pipeline = Pipeline([transport.input(), stt, user_aggregator, llm,
                         BudgetFiller(guard), tts, transport.output(), assistant_aggregator])

From the VAD stop it follows the turn with a :class:`voicebudget.GuardedTurn` (its origin is the end
of speech: the VAD stop minus ``stop_secs``). While the LLM has not produced its first text it asks
the guard every ``poll_ms``; on the turn's first decision that does not fit, the guard's policy
answers ``"filler"`` and the processor sends ``TTSSpeakFrame(filler)`` to the TTS, so the user hears
something within the budget while the LLM keeps thinking. ``docs/checker.md`` explains the guard;
``tests/test_pipecat.py`` runs this file on a real Pipecat pipeline.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pipecat.frames.frames import (
    Frame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    LLMThoughtStartFrame,
    TTSSpeakFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

import voicebudget


class BudgetFiller(FrameProcessor):  # type: ignore[misc]
    """Sends ``filler`` to the TTS when the guard's policy says so (at most once per turn).

    :param guard: predicts the turn; its stages must include ``llm`` (the LLM's wait for its first
        token, as :class:`~voicebudget.integrations.pipecat.BudgetObserver` names it).
    :param filler: what to say.
    :param poll_ms: how often to ask the guard while the LLM is silent.
    """

    def __init__(
        self, guard: voicebudget.BudgetGuard, filler: str = "One moment.", poll_ms: float = 20.0, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.guard = guard
        self.filler = filler
        self.poll_s = poll_ms / 1000
        self.fillers_sent = 0
        self._live: voicebudget.GuardedTurn | None = None
        self._llm_started = asyncio.Event()
        self._answered = asyncio.Event()

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, VADUserStoppedSpeakingFrame):
            start = time.perf_counter_ns() - round(frame.stop_secs * 1e9)
            self._live = self.guard.turn(start_ns=start)
            self._answered = asyncio.Event()
        elif isinstance(frame, LLMFullResponseStartFrame) and self._live is not None:
            self._live.enter("llm")
            self.create_task(self._watch(self._live, self._answered))
        elif isinstance(frame, LLMTextFrame | LLMThoughtStartFrame):
            self._answered.set()
        await self.push_frame(frame, direction)

    async def _watch(self, live: voicebudget.GuardedTurn, answered: asyncio.Event) -> None:
        while not answered.is_set():
            decision = live.check()
            if decision.action == "filler":
                self.fillers_sent += 1
                await self.push_frame(TTSSpeakFrame(self.filler))
                return
            if live.acted:
                return
            try:
                await asyncio.wait_for(answered.wait(), timeout=self.poll_s)
            except TimeoutError:
                pass
