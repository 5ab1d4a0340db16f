"""Scripted Pipecat services with known delays, for tests: real Pipecat frames, processors, worker
and runner; only the services are scripted (each waits its delay, then pushes the frames a real one
pushes). Shared by tests/test_pipecat.py, its pytester test and the docs example's test.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loguru import logger
from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    EndFrame,
    Frame,
    InputAudioRawFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    LLMThoughtEndFrame,
    LLMThoughtStartFrame,
    LLMThoughtTextFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    TTSSpeakFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.workers.runner import WorkerRunner

with warnings.catch_warnings():  # pipecat.audio.utils imports the stdlib's deprecated audioop (3.11, 3.12)
    warnings.simplefilter("ignore", DeprecationWarning)
    from pipecat.audio.vad.vad_analyzer import VADAnalyzer, VADParams
    from pipecat.processors.audio.vad_processor import VADProcessor


@dataclass
class Script:
    """One turn's injected delays, ms (``think_ms`` > 0: a thinking model)."""

    stop_secs: float = 0.2
    stt_ms: float = 80.0
    turn_ms: float = 30.0
    ttft_ms: float = 250.0
    think_ms: float = 0.0
    ttfb_ms: float = 120.0
    output_ms: float = 20.0

    def stages(self) -> set[str]:
        """The stages a turn with this script has (besides framework hops)."""
        names = {"endpointing", "stt", "turn_detection", "llm", "tts", "output"}
        return names | {"reasoning"} if self.think_ms else names


@dataclass
class Conversation:
    """The scripts, turn by turn, and what the services saw."""

    scripts: Sequence[Script]
    turn: int = 0
    answered: asyncio.Event = field(default_factory=asyncio.Event)
    injected: list[dict[str, float]] = field(default_factory=list)
    """per turn, stage -> the delay each service actually waited, ms (a loaded machine oversleeps)"""


class _Scripted(FrameProcessor):  # type: ignore[misc]
    def __init__(self, conversation: Conversation, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.conv = conversation

    def can_generate_metrics(self) -> bool:
        """Pipecat's own TTFB metrics (and their log lines) when the pipeline enables metrics."""
        return True

    @property
    def script(self) -> Script:
        return self.conv.scripts[self.conv.turn]

    def later(self, coro: Any) -> None:
        self.create_task(coro)

    async def wait(self, stage: str, ms: float) -> None:
        """Sleep ``ms`` and note how long it really took."""
        turn = self.conv.turn
        t0 = time.perf_counter_ns()
        await asyncio.sleep(ms / 1000)
        self.conv.injected[turn][stage] = (time.perf_counter_ns() - t0) / 1e6


class ScriptedSTT(_Scripted):
    """Final transcript ``stt_ms`` after the VAD stop, then the user turn ends ``turn_ms`` later."""

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)
        if isinstance(frame, VADUserStoppedSpeakingFrame):
            self.later(self._transcribe(self.script))

    async def _transcribe(self, s: Script) -> None:
        await self.start_ttfb_metrics()
        await self.wait("stt", s.stt_ms)
        await self.stop_ttfb_metrics()
        await self.push_frame(TranscriptionFrame("what time is it", "user", "2026-01-01T00:00:00Z", finalized=True))
        await self.wait("turn_detection", s.turn_ms)
        await self.push_frame(UserStoppedSpeakingFrame())


class ScriptedLLM(_Scripted):
    """Asked at the user turn end; first token after ``ttft_ms`` (a thought first when ``think_ms``)."""

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)
        if isinstance(frame, UserStoppedSpeakingFrame):
            self.later(self._answer(self.script))

    async def _answer(self, s: Script) -> None:
        await self.push_frame(LLMFullResponseStartFrame())
        await self.start_ttfb_metrics()
        await self.wait("llm", s.ttft_ms)
        await self.stop_ttfb_metrics()
        if s.think_ms:
            await self.push_frame(LLMThoughtStartFrame())
            await self.push_frame(LLMThoughtTextFrame("the user wants the time"))
            await self.wait("reasoning", s.think_ms)
            await self.push_frame(LLMThoughtEndFrame())
        await self.push_frame(LLMTextFrame("It is "))
        await self.push_frame(LLMTextFrame("noon."))
        await self.push_frame(LLMFullResponseEndFrame())


class ScriptedTTS(_Scripted):
    """Synthesises the first text of a response (or a TTSSpeakFrame): audio after ``ttfb_ms``."""

    def __init__(self, conversation: Conversation, **kwargs: Any) -> None:
        super().__init__(conversation, **kwargs)
        self._speaking = False

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMFullResponseStartFrame):
            self._speaking = False
        if isinstance(frame, LLMTextFrame | TTSSpeakFrame) and not self._speaking:
            self._speaking = True
            self.later(self._speak(self.script))
            if isinstance(frame, TTSSpeakFrame):
                return
        await self.push_frame(frame, direction)

    async def _speak(self, s: Script) -> None:
        await self.push_frame(TTSStartedFrame())
        await self.start_ttfb_metrics()
        await self.wait("tts", s.ttfb_ms)
        await self.stop_ttfb_metrics()
        await self.push_frame(TTSAudioRawFrame(b"\x00" * 640, 16_000, 1))
        await self.push_frame(TTSStoppedFrame())


class ScriptedOutput(_Scripted):
    """The output transport: the bot starts speaking ``output_ms`` after the first audio of a turn."""

    def __init__(self, conversation: Conversation, **kwargs: Any) -> None:
        super().__init__(conversation, **kwargs)
        self._started = -1

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)
        if isinstance(frame, TTSAudioRawFrame) and self._started != self.conv.turn:
            self._started = self.conv.turn
            self.later(self._start(self.script))

    async def _start(self, s: Script) -> None:
        await self.wait("output", s.output_ms)
        await self.push_frame(BotStartedSpeakingFrame())
        self.conv.answered.set()


def services(conv: Conversation) -> list[FrameProcessor]:
    return [ScriptedSTT(conv), ScriptedLLM(conv), ScriptedTTS(conv), ScriptedOutput(conv)]


async def run_conversation(
    scripts: Sequence[Script],
    observers: list[Any],
    *,
    extra: Sequence[FrameProcessor] = (),
    speech_s: float = 0.05,
    after_turn: Callable[[int], Awaitable[None]] | None = None,
) -> Conversation:
    """Run a real Pipecat pipeline (PipelineWorker + WorkerRunner) turn by turn.

    :param extra: processors placed between the LLM and the TTS (e.g. a guard).
    :param after_turn: awaited with each turn's index once it is answered, while the pipeline runs.
    """
    conv = Conversation(scripts)
    stt, llm, tts, out = services(conv)
    worker = PipelineWorker(
        Pipeline([stt, llm, *extra, tts, out]),
        observers=observers,
        cancel_on_idle_timeout=False,
        enable_rtvi=False,
    )
    started = asyncio.Event()

    @worker.event_handler("on_pipeline_started")  # type: ignore[untyped-decorator]
    async def _started(worker: Any, frame: Any) -> None:
        started.set()

    async def user() -> None:
        await asyncio.wait_for(started.wait(), timeout=10)
        for i, s in enumerate(scripts):
            conv.turn, conv.answered = i, asyncio.Event()
            conv.injected.append({"endpointing": s.stop_secs * 1000})
            await worker.queue_frame(VADUserStartedSpeakingFrame())
            await asyncio.sleep(speech_s)
            await worker.queue_frame(VADUserStoppedSpeakingFrame(stop_secs=s.stop_secs))
            await asyncio.wait_for(conv.answered.wait(), timeout=10)
            await asyncio.sleep(0.05)  # the rest of the reply streams out
            if after_turn is not None:
                await after_turn(i)
        await worker.queue_frame(EndFrame())

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await asyncio.gather(runner.run(), user())
    return conv


RATE = 16_000
CHUNK = b"\x00\x10" * int(RATE * 0.01)
"""10 ms of 16-bit mono audio at 16 kHz, not silent (the scripted VAD hears speech in it)."""
SILENCE = b"\x00" * len(CHUNK)


class ScriptedVAD(VADAnalyzer):  # type: ignore[misc]
    """Pipecat's VAD state machine on 10 ms windows: confidence 1 for a window with sound, 0 for silence."""

    def num_frames_required(self) -> int:
        return int(RATE * 0.01)

    def voice_confidence(self, buffer: bytes) -> float:
        return 1.0 if any(buffer) else 0.0


async def _speak(worker: PipelineWorker, speech_s: float, stop_secs: float) -> None:
    """The user's audio as fast as the pipeline takes it: ``speech_s`` of speech, then silence until Pipecat's
    VAD has heard ``stop_secs`` of it (and a little more)."""
    for chunk in [CHUNK] * round(speech_s / 0.01) + [SILENCE] * (round(stop_secs / 0.01) + 5):
        await worker.queue_frame(InputAudioRawFrame(audio=chunk, sample_rate=RATE, num_channels=1))


async def _logged_conversation(scripts: Sequence[Script], observers: list[Any]) -> Conversation:
    conv = Conversation(scripts)
    stop_secs = scripts[0].stop_secs
    vad = VADProcessor(vad_analyzer=ScriptedVAD(params=VADParams(stop_secs=stop_secs, min_volume=0.0)))
    worker = PipelineWorker(
        Pipeline([vad, *services(conv)]),
        params=PipelineParams(enable_metrics=True, audio_in_sample_rate=RATE, audio_out_sample_rate=RATE),
        observers=observers,
        cancel_on_idle_timeout=False,
        enable_rtvi=False,
    )
    started = asyncio.Event()

    @worker.event_handler("on_pipeline_started")  # type: ignore[untyped-decorator]
    async def _started(worker: Any, frame: Any) -> None:
        started.set()

    async def user() -> None:
        await asyncio.wait_for(started.wait(), timeout=10)
        for i, s in enumerate(scripts):
            conv.turn, conv.answered = i, asyncio.Event()
            conv.injected.append({"endpointing": s.stop_secs * 1000})
            await _speak(worker, 0.3, s.stop_secs)
            await asyncio.wait_for(conv.answered.wait(), timeout=10)
            await asyncio.sleep(0.05)  # the rest of the reply streams out
        await worker.queue_frame(EndFrame())

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await asyncio.gather(runner.run(), user())
    return conv


def run_logged_conversation(scripts: Sequence[Script], log: Path, observers: Sequence[Any] = ()) -> Conversation:
    """Run a real Pipecat pipeline turn by turn with Pipecat's own VAD processor (fed audio, not frames) and its
    metrics on, writing Pipecat's debug log to ``log``: the VAD stop, VAD params and each service's TTFB lines,
    as a Pipecat agent's log has them (what ``voicebudget check`` and ``fit`` read). Every script must have the same
    ``stop_secs`` (one VAD)."""
    if len({s.stop_secs for s in scripts}) != 1:
        raise ValueError("one VAD: every script needs the same stop_secs")
    sink = logger.add(str(log), level="DEBUG")
    try:
        return asyncio.run(_logged_conversation(scripts, list(observers)))
    finally:
        logger.remove(sink)
