"""Scripted Pipecat services for tests: real ``FrameProcessor`` subclasses that wait a :class:`TurnScript`'s
delays and push the frames real services push, in a real pipeline (``PipelineWorker``, ``WorkerRunner``).

::

    from voicebudget.integrations.pipecat import BudgetObserver
    from voicebudget.testing import scripted_turns
    from voicebudget.testing.pipecat import run_conversation

    turns = scripted_turns(20, seed=1, llm=voicebudget.LogNormal(p50_ms=300, p95_ms=600))
    observer = BudgetObserver(voicebudget.Budget(total_ms=800))
    conv = asyncio.run(run_conversation(turns, observers=[observer]))
    observer.report().raise_for_budget()

Per turn (``conv.turn``), what each processor does:

==================  ===========================================================================================
``ScriptedInput``   the user: ``VADUserStartedSpeakingFrame``, ``speech_ms`` later ``VADUserStoppedSpeakingFrame``
                    with ``stop_secs = endpointing_ms`` (or, ``audio=True``, 10 ms ``InputAudioRawFrame`` chunks of
                    speech then silence for a ``VADProcessor`` with :class:`ScriptedVADAnalyzer`); waits for the
                    answer, then the next turn; after the last, ``EndWorkerFrame`` upstream (the worker ends)
``ScriptedSTT``     ``stt_ms`` after the VAD stop a final ``TranscriptionFrame``; ``turn_detection_ms`` later a
                    ``UserStoppedSpeakingFrame`` (a turn strategy's; ``ends_turn=False`` leaves it to yours)
``ScriptedLLM``     on ``UserStoppedSpeakingFrame`` or ``LLMContextFrame`` (once per turn):
                    ``LLMFullResponseStartFrame``, ``llm_ms`` later the first token (a thought first when
                    ``reasoning_ms``: ``LLMThoughtStart/Text/EndFrame``, ``reasoning_ms`` later the text), the
                    ``reply`` as ``LLMTextFrame`` chunks, ``LLMFullResponseEndFrame``
``ScriptedTTS``     on a response's first text (or a ``TTSSpeakFrame``): ``TTSStartedFrame``, ``tts_ms`` later a
                    ``TTSAudioRawFrame``, ``TTSStoppedFrame``
``ScriptedOutput``  the output transport: ``BotStartedSpeakingFrame`` ``output_ms`` after a turn's first audio
==================  ===========================================================================================

Each service measures what it really waited (``conv.injected``, per turn, stage -> ms: a loaded machine
oversleeps) and reports Pipecat's own TTFB metrics when the pipeline enables them. Needs
``pip install "voicebudget[pipecat]"`` (pipecat-ai 1.8 or later).
"""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

try:
    from pipecat.frames.frames import (
        BotStartedSpeakingFrame,
        EndWorkerFrame,
        Frame,
        InputAudioRawFrame,
        LLMContextFrame,
        LLMFullResponseEndFrame,
        LLMFullResponseStartFrame,
        LLMTextFrame,
        LLMThoughtEndFrame,
        LLMThoughtStartFrame,
        LLMThoughtTextFrame,
        StartFrame,
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
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without the extra
    raise ImportError(
        f"voicebudget.testing.pipecat needs Pipecat: pip install 'voicebudget[pipecat]' ({exc})", name=exc.name
    ) from exc

from voicebudget.testing._script import TurnScript, _Conversation

__all__ = [
    "AUDIO_RATE",
    "ScriptedConversation",
    "ScriptedInput",
    "ScriptedLLM",
    "ScriptedOutput",
    "ScriptedSTT",
    "ScriptedTTS",
    "ScriptedVADAnalyzer",
    "run_conversation",
    "scripted_services",
]

AUDIO_RATE = 16_000
"""Sample rate of the scripted audio, Hz (16-bit mono)."""
_CHUNK_S = 0.01
_SPEECH = b"\x00\x10" * int(AUDIO_RATE * _CHUNK_S)
"""10 ms of audio that is not silent (the scripted VAD hears speech in it)."""
_SILENCE = b"\x00" * len(_SPEECH)
ANSWER_TIMEOUT_S = 30.0
"""How long the scripted user waits for the bot to start speaking before the turn fails (a pipeline that
never answers fails the test instead of hanging it)."""


@dataclass
class ScriptedConversation(_Conversation):
    """The turns, the turn being spoken, and what the services really waited.

    :ivar turns: one :class:`TurnScript` per user turn.
    :ivar turn: index of the current turn (set by :class:`ScriptedInput`).
    :ivar injected: per started turn, stage -> the delay its service really waited, ms.
    """

    answered: asyncio.Event = field(default_factory=asyncio.Event)

    def start_turn(self, index: int) -> None:
        """Make ``index`` the current turn (its endpointing is the VAD's ``stop_secs``, waited by the user)."""
        self.turn, self.answered = index, asyncio.Event()
        self.injected.append({"endpointing": self.turns[index].endpointing_ms})


class _Scripted(FrameProcessor):
    def __init__(self, conversation: ScriptedConversation, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.conv = conversation

    def can_generate_metrics(self) -> bool:
        """Pipecat's own TTFB metrics (and their log lines) when the pipeline enables metrics."""
        return True

    async def wait(self, stage: str, ms: float) -> None:
        """Sleep ``ms`` and note how long it really took, in ``conv.injected``."""
        turn = self.conv.turn
        t0 = time.perf_counter_ns()
        await asyncio.sleep(ms / 1000)
        if turn < len(self.conv.injected):
            self.conv.injected[turn][stage] = (time.perf_counter_ns() - t0) / 1e6


class ScriptedInput(_Scripted):
    """The user, at the head of the pipeline: speaks each turn, waits for the bot to start speaking, and
    ends the worker after the last turn.

    :param audio: send 10 ms ``InputAudioRawFrame`` chunks (speech, then ``endpointing_ms`` of silence and a
        little more) for a ``VADProcessor`` downstream, instead of the VAD frames themselves.
    :param pause_s: after the bot starts speaking, how long the rest of the reply streams before the next turn.
    :param after_turn: awaited with each turn's index once it is answered.
    """

    def __init__(
        self,
        conversation: ScriptedConversation,
        *,
        audio: bool = False,
        pause_s: float = 0.05,
        after_turn: Callable[[int], Awaitable[None]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(conversation, **kwargs)
        self.audio, self.pause_s, self.after_turn = audio, pause_s, after_turn

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)
        if isinstance(frame, StartFrame):
            self.create_task(self._user())

    async def _user(self) -> None:
        for i, script in enumerate(self.conv.turns):
            self.conv.start_turn(i)
            if self.audio:
                await self._audio(script)
            else:
                await self.push_frame(VADUserStartedSpeakingFrame())
                await asyncio.sleep(script.speech_ms / 1000)
                await self.push_frame(VADUserStoppedSpeakingFrame(stop_secs=script.endpointing_ms / 1000))
            await asyncio.wait_for(self.conv.answered.wait(), timeout=ANSWER_TIMEOUT_S)
            await asyncio.sleep(self.pause_s)
            if self.after_turn is not None:
                await self.after_turn(i)
        await self.push_frame(EndWorkerFrame(), FrameDirection.UPSTREAM)

    async def _audio(self, script: TurnScript) -> None:
        speech = round(script.speech_ms / 1000 / _CHUNK_S)
        silence = round(script.endpointing_ms / 1000 / _CHUNK_S) + 5
        for chunk in [_SPEECH] * speech + [_SILENCE] * silence:
            await self.push_frame(InputAudioRawFrame(audio=chunk, sample_rate=AUDIO_RATE, num_channels=1))
            await asyncio.sleep(0)  # as fast as the pipeline takes it


class ScriptedVADAnalyzer(VADAnalyzer):
    """Pipecat's own VAD state machine on 10 ms windows of :data:`AUDIO_RATE` audio: confidence 1 for a
    window with sound, 0 for silence. Use with ``VADProcessor(vad_analyzer=ScriptedVADAnalyzer(
    params=VADParams(stop_secs=..., min_volume=0.0)))`` and ``ScriptedInput(audio=True)``."""

    def num_frames_required(self) -> int:
        return int(AUDIO_RATE * _CHUNK_S)

    def voice_confidence(self, buffer: bytes) -> float:
        return 1.0 if any(buffer) else 0.0


class ScriptedSTT(_Scripted):
    """A streaming STT: the final transcript ``stt_ms`` after the VAD stop, and (``ends_turn``) the user turn's
    end ``turn_detection_ms`` later."""

    def __init__(self, conversation: ScriptedConversation, *, ends_turn: bool = True, **kwargs: Any) -> None:
        super().__init__(conversation, **kwargs)
        self.ends_turn = ends_turn

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)
        if isinstance(frame, VADUserStoppedSpeakingFrame):
            self.create_task(self._transcribe(self.conv.script))

    async def _transcribe(self, s: TurnScript) -> None:
        await self.start_ttfb_metrics()
        await self.wait("stt", s.stt_ms)
        await self.stop_ttfb_metrics()
        await self.push_frame(TranscriptionFrame(s.transcript, "user", _iso_now(), finalized=True))
        if self.ends_turn:
            await self.wait("turn_detection", s.turn_detection_ms)
            await self.push_frame(UserStoppedSpeakingFrame())


class ScriptedLLM(_Scripted):
    """An LLM service: asked at the user turn's end (``UserStoppedSpeakingFrame``) or by a context
    aggregator (``LLMContextFrame``), once per turn; first token ``llm_ms`` later."""

    def __init__(self, conversation: ScriptedConversation, **kwargs: Any) -> None:
        super().__init__(conversation, **kwargs)
        self._asked = -1

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMContextFrame):  # consumed, as a real LLM service does
            self._ask()
            return
        await self.push_frame(frame, direction)
        if isinstance(frame, UserStoppedSpeakingFrame):
            self._ask()

    def _ask(self) -> None:
        if self._asked != self.conv.turn:
            self._asked = self.conv.turn
            self.create_task(self._answer(self.conv.script))

    async def _answer(self, s: TurnScript) -> None:
        await self.push_frame(LLMFullResponseStartFrame())
        await self.start_ttfb_metrics()
        await self.wait("llm", s.llm_ms)
        await self.stop_ttfb_metrics()
        if s.reasoning_ms:
            await self.push_frame(LLMThoughtStartFrame())
            await self.push_frame(LLMThoughtTextFrame("thinking about the answer"))
            await self.wait("reasoning", s.reasoning_ms)
            await self.push_frame(LLMThoughtEndFrame())
        for piece in s.reply:
            await self.push_frame(LLMTextFrame(piece))
        await self.push_frame(LLMFullResponseEndFrame())


class ScriptedTTS(_Scripted):
    """A TTS service: synthesises a response's first text (or a ``TTSSpeakFrame``), audio ``tts_ms`` later."""

    def __init__(self, conversation: ScriptedConversation, **kwargs: Any) -> None:
        super().__init__(conversation, **kwargs)
        self._speaking = False

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMFullResponseStartFrame):
            self._speaking = False
        if isinstance(frame, LLMTextFrame | TTSSpeakFrame) and not self._speaking:
            self._speaking = True
            self.create_task(self._speak(self.conv.script))
            if isinstance(frame, TTSSpeakFrame):
                return
        await self.push_frame(frame, direction)

    async def _speak(self, s: TurnScript) -> None:
        await self.push_frame(TTSStartedFrame())
        await self.start_ttfb_metrics()
        await self.wait("tts", s.tts_ms)
        await self.stop_ttfb_metrics()
        await self.push_frame(TTSAudioRawFrame(b"\x00" * 640, AUDIO_RATE, 1))
        await self.push_frame(TTSStoppedFrame())


class ScriptedOutput(_Scripted):
    """The output transport: the bot starts speaking ``output_ms`` after a turn's first audio
    (``BotStartedSpeakingFrame``, upstream and downstream, as Pipecat's output transport sends it)."""

    def __init__(self, conversation: ScriptedConversation, **kwargs: Any) -> None:
        super().__init__(conversation, **kwargs)
        self._started = -1

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)
        if isinstance(frame, TTSAudioRawFrame) and self._started != self.conv.turn:
            self._started = self.conv.turn
            self.create_task(self._start(self.conv.script))

    async def _start(self, s: TurnScript) -> None:
        await self.wait("output", s.output_ms)
        await self.push_frame(BotStartedSpeakingFrame())
        await self.push_frame(BotStartedSpeakingFrame(), FrameDirection.UPSTREAM)
        self.conv.answered.set()


def scripted_services(
    conversation: ScriptedConversation,
) -> tuple[ScriptedSTT, ScriptedLLM, ScriptedTTS, ScriptedOutput]:
    """The STT, LLM, TTS and output transport of one conversation, in pipeline order."""
    return (
        ScriptedSTT(conversation),
        ScriptedLLM(conversation),
        ScriptedTTS(conversation),
        ScriptedOutput(conversation),
    )


async def run_conversation(
    turns: Iterable[TurnScript],
    observers: Sequence[Any] = (),
    *,
    extra: Sequence[FrameProcessor] = (),
    audio: bool = False,
    pause_s: float = 0.05,
    after_turn: Callable[[int], Awaitable[None]] | None = None,
    params: PipelineParams | None = None,
) -> ScriptedConversation:
    """Run a real Pipecat pipeline, ``ScriptedInput -> [VADProcessor] -> STT -> LLM -> extra -> TTS ->
    output``, turn by turn, until the last turn is answered.

    :param turns: the turns' scripts (:func:`~voicebudget.testing.scripted_turns`).
    :param observers: Pipecat observers, e.g. ``BudgetObserver(recorder=voice_budget)``.
    :param extra: your processors, placed between the LLM and the TTS (e.g. a filler or a guard).
    :param audio: feed audio through Pipecat's ``VADProcessor`` with :class:`ScriptedVADAnalyzer` (every turn
        needs the same ``endpointing_ms``: one VAD) instead of the VAD frames.
    :param params: the worker's ``PipelineParams`` (e.g. ``enable_metrics=True``).
    :returns: the conversation, with what each service really waited (``injected``).
    :raises ValueError: no turns, or ``audio`` with turns of different ``endpointing_ms``.
    :raises TimeoutError: a turn not answered within :data:`ANSWER_TIMEOUT_S`.
    """
    conv = ScriptedConversation(tuple(turns))
    head: list[FrameProcessor] = [ScriptedInput(conv, audio=audio, pause_s=pause_s, after_turn=after_turn)]
    if audio:
        stops = {t.endpointing_ms for t in conv.turns}
        if len(stops) != 1:
            raise ValueError(f"audio: one VAD needs one endpointing_ms for every turn, got {sorted(stops)}")
        vad_params = VADParams(stop_secs=stops.pop() / 1000, min_volume=0.0)
        head.append(VADProcessor(vad_analyzer=ScriptedVADAnalyzer(params=vad_params)))
        params = params or PipelineParams(audio_in_sample_rate=AUDIO_RATE, audio_out_sample_rate=AUDIO_RATE)
    stt, llm, tts, out = scripted_services(conv)
    worker = PipelineWorker(
        Pipeline([*head, stt, llm, *extra, tts, out]),
        params=params or PipelineParams(),
        observers=list(observers),
        cancel_on_idle_timeout=False,
        enable_rtvi=False,
    )
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await runner.run()
    return conv


def _iso_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
