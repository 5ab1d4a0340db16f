"""Scripted LiveKit Agents providers for tests: a VAD, STT, LLM and TTS (LiveKit's own ``vad.VAD``,
``stt.STT``, ``llm.LLM``, ``tts.TTS`` subclasses) that wait a :class:`TurnScript`'s delays, and an audio input
and output, for a real ``AgentSession`` with its own turn handling, metrics and events.

::

    from voicebudget.integrations.livekit import BudgetHook
    from voicebudget.testing import scripted_turns
    from voicebudget.testing.livekit import run_session

    hook = BudgetHook(voicebudget.Budget(total_ms=1500))
    asyncio.run(run_session(scripted_turns(3, seed=1, llm=400.0), attach=[hook.attach]))
    hook.report().raise_for_budget()

Per turn (``conv.turn``): the user speaks ``speech_ms`` (the scripted VAD's START_OF_SPEECH, INFERENCE_DONE
while speaking); :class:`ScriptedVAD` sends END_OF_SPEECH ``endpointing_ms`` after the speech ends, with that
silence (LiveKit back-dates the user's stop by it); :class:`ScriptedSTT` sends the final transcript ``stt_ms``
after the speech ends; LiveKit waits its own endpointing delay (``min_endpointing_delay_s``) and asks
:class:`ScriptedLLM`, whose first chunk comes ``reasoning_ms + llm_ms`` later (a thinking model's reasoning
is hidden, as LiveKit's LLM plugins stream it) and its usage last; :class:`ScriptedTTS` sends audio ``tts_ms``
after its first flushed text (0.4 s of it); :class:`PlayoutOutput` plays in real time and starts ``output_ms``
after its first frame. LiveKit measures all of it itself (``EOUMetrics``, ``LLMMetrics``, ``TTSMetrics``),
which is what ``BudgetHook`` reads. Needs ``pip install "voicebudget[livekit]"`` (livekit-agents 1.8 or later).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

try:
    from livekit import rtc
    from livekit.agents import Agent, AgentSession, llm, stt, tts, utils, vad
    from livekit.agents.language import LanguageCode
    from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS, APIConnectOptions
    from livekit.agents.voice.io import AudioInput, AudioOutput, AudioOutputCapabilities
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without the extra
    raise ImportError(
        f"voicebudget.testing.livekit needs LiveKit Agents: pip install 'voicebudget[livekit]' ({exc})",
        name=exc.name,
    ) from exc

from voicebudget.testing._script import TurnScript, _Conversation

__all__ = [
    "AUDIO_RATE",
    "PlayoutOutput",
    "ScriptedConversation",
    "ScriptedLLM",
    "ScriptedSTT",
    "ScriptedTTS",
    "ScriptedVAD",
    "SilenceInput",
    "run_session",
    "scripted_session",
]

AUDIO_RATE = 24_000
"""Sample rate of the scripted audio, Hz (16-bit mono)."""
REPLY_AUDIO_S = 0.4
"""Audio the scripted TTS sends per reply, s."""
WARM_UP_S = 0.5
"""After the session starts, the scripted user waits this long before the first turn: LiveKit starts its audio
recognition and the providers' streams (a first turn spoken at once had its transcript 600 ms late)."""
ANSWER_TIMEOUT_S = 30.0
"""How long the scripted user waits for the agent to start speaking before the turn fails."""


@dataclass
class ScriptedConversation(_Conversation):
    """The turns, the turn being spoken, and what the scripted providers waited.

    :ivar turns: one :class:`TurnScript` per user turn.
    :ivar turn: index of the current turn.
    :ivar injected: per started turn, stage -> the delay its provider was scripted to wait, ms (LiveKit's
        own metrics say what happened).
    :ivar speech_ends: per started turn, the end of the user's speech (``time.time()``, s).
    """

    speech_ends: list[float] = field(default_factory=list)
    speeches: asyncio.Queue[tuple[float, float]] = field(default_factory=asyncio.Queue)
    transcripts: asyncio.Queue[float] = field(default_factory=asyncio.Queue)
    spoke: asyncio.Event = field(default_factory=asyncio.Event)

    def speak(self, index: int) -> None:
        """Start turn ``index``: the user speaks from 50 ms from now for its ``speech_ms``."""
        self.turn, self.spoke = index, asyncio.Event()
        script = self.turns[index]
        start = time.time() + 0.05
        end = start + script.speech_ms / 1000
        self.speech_ends.append(end)
        self.injected.append({k: v for k, v in script.delays().items() if k not in ("turn_detection",)})
        self.speeches.put_nowait((start, end))
        self.transcripts.put_nowait(end)


class ScriptedVAD(vad.VAD):
    """A VAD: START_OF_SPEECH as the user starts, END_OF_SPEECH ``endpointing_ms`` after the speech ends, with
    that silence (LiveKit's "user stopped speaking" is ``time.time() - silence_duration``)."""

    def __init__(self, conversation: ScriptedConversation) -> None:
        super().__init__(capabilities=vad.VADCapabilities(update_interval=0.05))
        self.conv = conversation

    @property
    def model(self) -> str:
        return "scripted-vad"

    @property
    def provider(self) -> str:
        return "voicebudget"

    def stream(self) -> vad.VADStream:
        return _VADStream(self, self.conv)


class _VADStream(vad.VADStream):
    def __init__(self, v: ScriptedVAD, conv: ScriptedConversation) -> None:
        super().__init__(v)
        self.conv = conv

    async def _main_task(self) -> None:
        drain = asyncio.create_task(_drain(self._input_ch))
        try:
            while True:
                start, end = await self.conv.speeches.get()
                silence_s = self.conv.script.endpointing_ms / 1000
                await asyncio.sleep(max(0.0, start + 0.05 - time.time()))
                self._send(vad.VADEventType.START_OF_SPEECH, speech=0.05)
                while time.time() < end:
                    await asyncio.sleep(min(0.05, max(end - time.time(), 0.0)) or 0.001)
                    self._send(vad.VADEventType.INFERENCE_DONE, speech=min(time.time(), end) - start, speaking=True)
                await asyncio.sleep(max(0.0, end + silence_s - time.time()))
                self._send(vad.VADEventType.END_OF_SPEECH, speech=end - start, silence=time.time() - end)
        finally:
            drain.cancel()

    def _send(self, kind: vad.VADEventType, *, speech: float, silence: float = 0.0, speaking: bool = False) -> None:
        self._event_ch.send_nowait(
            vad.VADEvent(
                type=kind,
                samples_index=0,
                timestamp=time.time(),
                speech_duration=speech,
                silence_duration=silence,
                raw_accumulated_speech=speech if speaking else 0.0,
                raw_accumulated_silence=silence,
                speaking=speaking,
            )
        )


class ScriptedSTT(stt.STT[Any]):
    """A streaming STT: the final transcript ``stt_ms`` after the speech ends."""

    def __init__(self, conversation: ScriptedConversation) -> None:
        super().__init__(capabilities=stt.STTCapabilities(streaming=True, interim_results=False))
        self.conv = conversation

    @property
    def model(self) -> str:
        return "scripted-stt"

    @property
    def provider(self) -> str:
        return "voicebudget"

    async def _recognize_impl(
        self, buffer: Any, *, language: Any = None, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS
    ) -> stt.SpeechEvent:
        raise NotImplementedError("the scripted STT streams only")

    def stream(
        self, *, language: Any = None, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS
    ) -> stt.RecognizeStream:
        return _STTStream(self, conn_options)


class _STTStream(stt.RecognizeStream):
    def __init__(self, s: ScriptedSTT, conn_options: APIConnectOptions) -> None:
        super().__init__(stt=s, conn_options=conn_options)
        self.conv = s.conv

    async def _run(self) -> None:
        drain = asyncio.create_task(_drain(self._input_ch))
        try:
            while True:
                end = await self.conv.transcripts.get()
                script = self.conv.script
                await asyncio.sleep(max(0.0, end + script.stt_ms / 1000 - time.time()))
                self._event_ch.send_nowait(
                    stt.SpeechEvent(
                        type=stt.SpeechEventType.FINAL_TRANSCRIPT,
                        alternatives=[stt.SpeechData(text=script.transcript, language=LanguageCode("en"))],
                    )
                )
        finally:
            drain.cancel()


class ScriptedLLM(llm.LLM[Any]):
    """An LLM: each ``chat()`` streams the turn's ``reply`` after ``reasoning_ms + llm_ms``, then its usage."""

    def __init__(self, conversation: ScriptedConversation) -> None:
        super().__init__()
        self.conv = conversation

    @property
    def model(self) -> str:
        return "scripted-llm"

    @property
    def provider(self) -> str:
        return "voicebudget"

    def chat(
        self,
        *,
        chat_ctx: llm.ChatContext,
        tools: list[Any] | None = None,
        conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS,
        **kwargs: Any,
    ) -> llm.LLMStream:
        return self.reply_stream(self.conv.script, chat_ctx=chat_ctx, tools=tools, conn_options=conn_options)

    def reply_stream(
        self,
        script: TurnScript,
        *,
        chat_ctx: llm.ChatContext,
        tools: list[Any] | None = None,
        conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS,
    ) -> llm.LLMStream:
        """The stream ``chat()`` returns, for any script: ``script.reply`` after ``reasoning_ms + llm_ms``, then
        its usage. For a subclass whose ``chat()`` picks the script per request (e.g. a tool round's own TTFT).

        :param script: the delays and the reply to stream.
        :returns: LiveKit's ``LLMStream`` for the request.
        """
        return _LLMStream(self, script, chat_ctx=chat_ctx, tools=tools or [], conn_options=conn_options)


class _LLMStream(llm.LLMStream):
    def __init__(self, model: ScriptedLLM, script: TurnScript, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.script = script

    async def _run(self) -> None:
        s = self.script
        await asyncio.sleep((s.reasoning_ms + s.llm_ms) / 1000)
        request = f"chatcmpl-{id(self)}"
        for piece in s.reply:
            self._event_ch.send_nowait(
                llm.ChatChunk(id=request, delta=llm.ChoiceDelta(role="assistant", content=piece))
            )
            await asyncio.sleep(0.01)
        reasoning = 40 if s.reasoning_ms else 0
        usage = llm.CompletionUsage(
            completion_tokens=12 + reasoning, prompt_tokens=80, total_tokens=92 + reasoning, reasoning_tokens=reasoning
        )
        self._event_ch.send_nowait(llm.ChatChunk(id=request, usage=usage))


class ScriptedTTS(tts.TTS[Any]):
    """A streaming TTS: :data:`REPLY_AUDIO_S` of audio ``tts_ms`` after the first flushed text."""

    def __init__(self, conversation: ScriptedConversation) -> None:
        super().__init__(capabilities=tts.TTSCapabilities(streaming=True), sample_rate=AUDIO_RATE, num_channels=1)
        self.conv = conversation

    @property
    def model(self) -> str:
        return "scripted-tts"

    @property
    def provider(self) -> str:
        return "voicebudget"

    def synthesize(
        self, text: str, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS
    ) -> tts.ChunkedStream:
        raise NotImplementedError("the scripted TTS streams only")

    def stream(self, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS) -> tts.SynthesizeStream:
        return _TTSStream(tts=self, conn_options=conn_options)


class _TTSStream(tts.SynthesizeStream):
    async def _run(self, output_emitter: tts.AudioEmitter) -> None:
        conv: ScriptedConversation = self._tts.conv  # type: ignore[attr-defined]
        output_emitter.initialize(
            request_id=utils.shortuuid("tts_"),
            sample_rate=AUDIO_RATE,
            num_channels=1,
            mime_type="audio/pcm",
            stream=True,
        )
        text = ""
        async for data in self._input_ch:
            if isinstance(data, str):
                text += data
                continue
            if not text:
                continue
            self._mark_started()
            await asyncio.sleep(conv.script.tts_ms / 1000)
            output_emitter.start_segment(segment_id=utils.shortuuid("seg_"))
            for _ in range(round(REPLY_AUDIO_S / 0.01)):
                output_emitter.push(b"\x00\x00" * (AUDIO_RATE // 100))
            output_emitter.flush()
            text = ""


class SilenceInput(AudioInput):
    """The room's audio track: 10 ms frames of silence in real time (the scripted VAD and STT decide what is
    speech)."""

    def __init__(self) -> None:
        super().__init__(label="voicebudget-scripted")

    async def __anext__(self) -> rtc.AudioFrame:
        await asyncio.sleep(0.01)
        n = AUDIO_RATE // 100
        return rtc.AudioFrame(data=b"\x00\x00" * n, sample_rate=AUDIO_RATE, num_channels=1, samples_per_channel=n)


class PlayoutOutput(AudioOutput):
    """An audio sink that plays in real time: playback starts ``output_ms`` after the first frame of a reply
    and finishes when its audio has played (or is cleared by an interruption)."""

    def __init__(self, conversation: ScriptedConversation) -> None:
        super().__init__(
            label="voicebudget-scripted", capabilities=AudioOutputCapabilities(pause=False), sample_rate=AUDIO_RATE
        )
        self.conv = conversation
        self.started: float | None = None
        self.pushed = 0.0
        self._done: asyncio.TimerHandle | None = None
        self._start_handle: asyncio.TimerHandle | None = None

    async def capture_frame(self, frame: rtc.AudioFrame) -> None:
        await super().capture_frame(frame)
        self.pushed += frame.duration
        if self.started is None and self._start_handle is None:
            delay = self.conv.script.output_ms / 1000
            self._start_handle = asyncio.get_running_loop().call_later(delay, self._start)

    def _start(self) -> None:
        self.started = time.time()
        self.on_playback_started(created_at=self.started)

    def flush(self) -> None:
        super().flush()
        if not self.pushed:
            return
        played = time.time() - self.started if self.started else 0.0
        delay = max(self.pushed - played, 0.0) + (0.0 if self.started else self.conv.script.output_ms / 1000)
        self._done = asyncio.get_running_loop().call_later(delay, self._finished, self.pushed, False)

    def _finished(self, position: float, interrupted: bool) -> None:
        self.started, self.pushed, self._done, self._start_handle = None, 0.0, None, None
        self.on_playback_finished(playback_position=position, interrupted=interrupted)

    def clear_buffer(self) -> None:
        if not self.pushed:
            return
        for handle in (self._done, self._start_handle):
            if handle is not None:
                handle.cancel()
        played = time.time() - self.started if self.started else 0.0
        self._finished(min(played, self.pushed), True)


def scripted_session(
    conversation: ScriptedConversation,
    *,
    min_endpointing_delay_s: float = 0.2,
    preemptive: bool | None = False,
    **session_kwargs: Any,
) -> AgentSession[Any]:
    """An ``AgentSession`` on the scripted VAD, STT, LLM and TTS, with :class:`SilenceInput` and
    :class:`PlayoutOutput` as its audio (start it with your ``Agent``; speak with ``conversation.speak(i)``).

    :param min_endpointing_delay_s: LiveKit's endpointing wait after the VAD's end of speech.
    :param preemptive: LiveKit's preemptive generation. ``False`` (default): the LLM is asked at the turn's
        end, so LiveKit's ``llm_ttft`` is the script's ``reasoning_ms + llm_ms``; ``True`` (LiveKit 1.8's own
        default): asked at the final transcript, and LiveKit counts its TTFT from the turn's end (shorter by
        the overlap); ``None``: whatever your LiveKit version defaults to.
    :param session_kwargs: more ``AgentSession`` arguments; ``llm``, ``turn_handling``, ``aec_warmup_duration``
        and ``user_away_timeout`` replace the scripted session's own (e.g. an LLM of yours that scripts tool calls).
    """
    turn_handling: dict[str, Any] = {
        "turn_detection": "vad",
        "endpointing": {"min_delay": min_endpointing_delay_s, "max_delay": max(3.0, min_endpointing_delay_s)},
    }
    if preemptive is not None:
        turn_handling["preemptive_generation"] = {"enabled": preemptive}
    session: AgentSession[Any] = AgentSession(
        vad=ScriptedVAD(conversation),
        stt=ScriptedSTT(conversation),
        llm=session_kwargs.pop("llm") if "llm" in session_kwargs else ScriptedLLM(conversation),
        tts=ScriptedTTS(conversation),
        turn_handling=session_kwargs.pop("turn_handling", turn_handling),
        aec_warmup_duration=session_kwargs.pop("aec_warmup_duration", None),
        user_away_timeout=session_kwargs.pop("user_away_timeout", None),
        **session_kwargs,
    )
    session.input.audio = SilenceInput()
    session.output.audio = PlayoutOutput(conversation)
    return session


async def run_session(
    turns: Iterable[TurnScript],
    *,
    attach: Sequence[Callable[[AgentSession[Any]], object]] = (),
    agent: Agent | None = None,
    min_endpointing_delay_s: float = 0.2,
    preemptive: bool | None = False,
    pause_s: float = REPLY_AUDIO_S + 0.4,
) -> ScriptedConversation:
    """Run a real ``AgentSession`` on the scripted providers, turn by turn, and close it.

    :param turns: the turns' scripts (:func:`~voicebudget.testing.scripted_turns`).
    :param attach: called with the session before it starts, e.g. ``BudgetHook(...).attach``.
    :param agent: the agent to start (default: one with a short instruction and no tools).
    :param min_endpointing_delay_s: LiveKit's endpointing wait after the VAD's end of speech.
    :param preemptive: LiveKit's preemptive generation (see :func:`scripted_session`).
    :param pause_s: after the agent starts speaking, how long before the next turn (the reply plays out;
        shorter is a barge-in).
    :returns: the conversation (``injected``: what each provider was scripted to wait).
    :raises TimeoutError: a turn not answered within :data:`ANSWER_TIMEOUT_S`.
    """
    conv = ScriptedConversation(tuple(turns))
    session = scripted_session(conv, min_endpointing_delay_s=min_endpointing_delay_s, preemptive=preemptive)
    for hook in attach:
        hook(session)

    @session.on("agent_state_changed")
    def _state(ev: Any) -> None:
        if ev.new_state == "speaking":
            conv.spoke.set()

    await session.start(agent or Agent(instructions="You are a scripted test agent."))
    await asyncio.sleep(WARM_UP_S)
    try:
        for i in range(len(conv.turns)):
            conv.speak(i)
            await asyncio.wait_for(conv.spoke.wait(), timeout=ANSWER_TIMEOUT_S)
            await asyncio.sleep(pause_s)
        await asyncio.sleep(0.2)  # the last metrics arrive
    finally:
        await session.aclose()
    return conv


async def _drain(channel: Any) -> None:
    async for _ in channel:
        pass
