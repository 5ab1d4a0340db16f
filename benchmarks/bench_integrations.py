"""Cost of the Pipecat observer per frame, next to an OpenTelemetry SDK span (the ``bench`` extra).

Run: ``.venv/bin/python benchmarks/bench_integrations.py`` (needs the ``pipecat`` extra too). One run
on this machine, best of several repeats, cases taking turns (see bench_recorder.py for the method).

A "turn" is the 14 frames one turn of a cascade pushes that the observer looks at (VAD start and
stop, transcript, user turn end, LLM start, 4 LLM text chunks, TTS start, 2 audio chunks, bot
started speaking) plus 6 frames it ignores (other audio and control frames), fed to
``BudgetObserver.on_push_frame`` as Pipecat's observer task does; the closing frame builds the
recorder turn. The figure is per frame: the turn's cost / 20.

Target (issue 14): a few microseconds per frame, and cheaper than one OTel SDK span.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from bench_recorder import best_ns_per_op, empty, otel_loop

N_TURNS = 300
FRAMES_PER_TURN = 20


def observer_loop(make: Callable[[], Any] | None = None) -> Any:
    """The observer fed N_TURNS turns of frames (and the same loop with an empty callback).

    :param make: builds the observer (default ``BudgetObserver()``); benchmarks/bench_telemetry.py gives
        one with telemetry attached.
    """
    from loguru import logger
    from pipecat.clocks.system_clock import SystemClock
    from pipecat.frames.frames import (
        BotStartedSpeakingFrame,
        InputAudioRawFrame,
        LLMFullResponseEndFrame,
        LLMFullResponseStartFrame,
        LLMTextFrame,
        TranscriptionFrame,
        TTSAudioRawFrame,
        TTSStartedFrame,
        TTSStoppedFrame,
        UserStoppedSpeakingFrame,
        VADUserStartedSpeakingFrame,
        VADUserStoppedSpeakingFrame,
    )
    from pipecat.observers.base_observer import FramePushed
    from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

    from voicebudget.integrations.pipecat import BudgetObserver

    logger.remove()
    logging.disable(logging.WARNING)
    source = FrameProcessor()
    clock = SystemClock()
    clock.start()
    source._setup = SimpleNamespace(clock=clock)  # what a started pipeline gives its processors
    down = FrameDirection.DOWNSTREAM
    audio_in = b"\x00" * 320

    def turn_frames() -> list[Any]:
        return [
            VADUserStartedSpeakingFrame(), InputAudioRawFrame(audio_in, 16_000, 1),
            InputAudioRawFrame(audio_in, 16_000, 1), VADUserStoppedSpeakingFrame(stop_secs=0.2),
            InputAudioRawFrame(audio_in, 16_000, 1), TranscriptionFrame("hi", "u", "t"),
            UserStoppedSpeakingFrame(), LLMFullResponseStartFrame(), LLMTextFrame("It "), LLMTextFrame("is "),
            LLMTextFrame("noon"), LLMTextFrame("."), LLMFullResponseEndFrame(), TTSStartedFrame(),
            TTSAudioRawFrame(audio_in, 16_000, 1), InputAudioRawFrame(audio_in, 16_000, 1),
            TTSAudioRawFrame(audio_in, 16_000, 1), BotStartedSpeakingFrame(), TTSStoppedFrame(),
            InputAudioRawFrame(audio_in, 16_000, 1),
        ]  # fmt: skip

    turns = [[FramePushed(source, source, f, down, 0) for f in turn_frames()] for _ in range(N_TURNS)]

    async def run(observer: BudgetObserver) -> None:
        for events in turns:
            for event in events:
                await observer.on_push_frame(event)

    async def nothing(event: Any) -> None:
        return None

    async def run_empty() -> None:
        for events in turns:
            for event in events:
                await nothing(event)

    def loop(n: int) -> None:
        observer = BudgetObserver() if make is None else make()
        asyncio.run(run(observer))
        assert len(observer.recorder.turns) == N_TURNS

    def loop_empty(n: int) -> None:
        asyncio.run(run_empty())

    return loop, loop_empty


def main() -> None:
    observe, observe_empty = observer_loop()
    n_frames = N_TURNS * FRAMES_PER_TURN
    b = best_ns_per_op({"empty": (empty, 20_000), "observer": (observe, n_frames),
                        "observer_empty": (observe_empty, n_frames), "otel": (otel_loop(False), 4_000)})  # fmt: skip
    frame_ns = b["observer"] - b["observer_empty"]
    otel_ns = b["otel"] - b["empty"]
    print(f"BudgetObserver.on_push_frame, per frame ({FRAMES_PER_TURN} frames a turn, {N_TURNS} turns):")
    print(f"  per frame (turn built on its closing frame) {frame_ns / 1000:7.3f} us")
    print(f"  per turn                                    {frame_ns * FRAMES_PER_TURN / 1000:7.1f} us")
    print(f"  OpenTelemetry SDK span, no processor        {otel_ns / 1000:7.3f} us")
    print(f"OTel span / observer frame: {otel_ns / frame_ns:5.1f}x   (target: > 1x, a few us per frame)")


if __name__ == "__main__":
    main()
