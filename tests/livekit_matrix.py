"""A real LiveKit Agents conversation for the conformance matrix: LiveKit's own ``AgentSession``,
``Agent`` with ``@function_tool`` tools (and a handoff to a second agent), its audio recognition (VAD
end of speech, endpointing delay, end-of-utterance metrics), LLM and TTS nodes, metrics and events,
chat history, session report and OpenTelemetry tracing. Only the providers are scripted: the VAD's
and STT's view of the user's audio, the LLM's stream (a thinking model's hidden reasoning before its
answer too) and the TTS's audio, each with known delays, and an audio output that plays in real time;
or, instead of all four, a realtime (speech-to-speech) model: a ``RealtimeModel`` whose session detects
the user's turn itself and answers with audio (LiveKit's own tests script one the same way).

Every output format LiveKit ships is captured from the same run: the metrics as ``model_dump()`` JSON
lines, their ``str()`` in log lines, ``metrics.log_metrics()`` through LiveKit's production
``JsonFormatter`` and its dev ``ColoredFormatter``, the OpenTelemetry spans (OTLP JSON lines), the chat
history (``session.history.to_dict()``) and the session report (``SessionReport.to_dict()``). The
ground truth is the harness's own hook: the metrics objects and events as LiveKit emitted them (their
own clocks: ``created_at``, ``timestamp``, the durations it measured) and the scripted VAD's end of
speech.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from livekit import rtc
from livekit.agents import Agent, AgentSession, function_tool, llm, stt, tts, utils, vad
from livekit.agents.cli.log import ColoredFormatter, JsonFormatter
from livekit.agents.metrics import RealtimeModelMetrics, log_metrics
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS, APIConnectOptions
from livekit.agents.voice.events import MetricsCollectedEvent
from livekit.agents.voice.io import AudioInput, AudioOutput, AudioOutputCapabilities
from livekit.agents.voice.report import SessionReport

RATE = 24_000
MIN_SILENCE_S = 0.30
"""The scripted VAD's silence before END_OF_SPEECH (Silero's ``min_silence_duration``)."""
MIN_ENDPOINTING_S = 0.20
"""LiveKit's endpointing wait after the VAD's end of speech (``EndpointingOptions.min_delay``)."""


@dataclass(frozen=True)
class Tool:
    name: str
    run_ms: float


@dataclass(frozen=True)
class Turn:
    """One user turn and the scripted providers' reply, ms.

    :ivar tools: tool rounds before the reply (each round: the calls one LLM response asks for).
    :ivar handoff: the first round's tool hands off to the second agent, which replies.
    :ivar barge_in: the user speaks again while the agent speaks.
    :ivar playout_ms: the audio output starts playing this long after the first audio frame.
    :ivar think_ms: the LLM's hidden reasoning before its answer's first token (a thinking model: no
        chunk the caller sees, ``reasoning_tokens`` in its usage).
    :ivar model_vad_ms: a realtime model's own silence before it says the user stopped speaking.
    """

    speech_ms: float = 400.0
    stt_ms: float = 80.0
    ttft_ms: float = 200.0
    tools: tuple[tuple[Tool, ...], ...] = ()
    handoff: bool = False
    tool_ttft_ms: float = 160.0
    ttfb_ms: float = 120.0
    playout_ms: float = 0.0
    barge_in: bool = False
    think_ms: float = 0.0
    model_vad_ms: float = 300.0


@dataclass
class Truth:
    """One turn as the harness's hook saw it (LiveKit's own clocks, s)."""

    speech_end: float = math.nan
    """LiveKit's own "user stopped speaking" (``user_state_changed`` to listening: the VAD's end of
    speech back-dated by its silence, ``agent_activity.on_end_of_speech``), s. The scripted speech end
    until that event comes; on a busy machine LiveKit's anchor is later by the time the VAD event
    waited in the loop."""
    stall_ms: float = 0.0
    """The event loop's longest stall in the turn (a 2 ms sleep overslept by this much): two clocks
    LiveKit reads for one moment can be that far apart on a busy machine."""
    metrics: list[Any] = field(default_factory=list)  # metrics_collected, in order
    tools_executed: list[Any] = field(default_factory=list)  # function_tools_executed events
    requests: list[float] = field(default_factory=list)  # each LLM request (LLM.chat() called), s
    speaking_at: float = math.nan  # agent_state_changed -> speaking
    replies: list[dict[str, Any]] = field(default_factory=list)  # assistant messages' metrics (MetricsReport)


@dataclass
class Run:
    folder: Path
    files: dict[str, Path]
    truth: list[Truth]
    turns: tuple[Turn, ...]


@dataclass
class _Conversation:
    turns: tuple[Turn, ...]
    turn: int = 0
    passes_done: int = 0
    truth: list[Truth] = field(default_factory=list)
    preemptive: bool = True
    realtime: bool = False
    speeches: asyncio.Queue[tuple[float, float]] = field(default_factory=asyncio.Queue)  # (start, end)
    stt_events: asyncio.Queue[float] = field(default_factory=asyncio.Queue)  # speech ends to transcribe
    spoke: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def current(self) -> Turn:
        return self.turns[self.turn]


# --- the scripted providers ----------------------------------------------------------------------


class ScriptedVAD(vad.VAD):
    """END_OF_SPEECH ``MIN_SILENCE_S`` after the scripted speech ends, with that silence (LiveKit's
    anchor: ``time.time() - silence_duration``)."""

    def __init__(self, conv: _Conversation) -> None:
        super().__init__(capabilities=vad.VADCapabilities(update_interval=0.05))
        self.conv = conv

    def stream(self) -> vad.VADStream:
        return _VADStream(self, self.conv)


class _VADStream(vad.VADStream):
    def __init__(self, v: ScriptedVAD, conv: _Conversation) -> None:
        super().__init__(v)
        self.conv = conv

    async def _main_task(self) -> None:
        drain = asyncio.create_task(self._drain())
        try:
            while True:
                start, end = await self.conv.speeches.get()
                await asyncio.sleep(max(0.0, start + 0.05 - time.time()))
                self._send(vad.VADEventType.START_OF_SPEECH, speech=0.05)
                while time.time() < end:
                    await asyncio.sleep(min(0.05, max(end - time.time(), 0.0)) or 0.001)
                    self._send(vad.VADEventType.INFERENCE_DONE, speech=min(time.time(), end) - start, speaking=True)
                await asyncio.sleep(max(0.0, end + MIN_SILENCE_S - time.time()))
                self._send(vad.VADEventType.END_OF_SPEECH, speech=end - start, silence=time.time() - end)
        finally:
            drain.cancel()

    async def _drain(self) -> None:
        async for _ in self._input_ch:
            pass

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


class ScriptedSTT(stt.STT):
    """A streaming STT: the final transcript ``stt_ms`` after the speech ends."""

    def __init__(self, conv: _Conversation) -> None:
        super().__init__(capabilities=stt.STTCapabilities(streaming=True, interim_results=False))
        self.conv = conv

    async def _recognize_impl(self, buffer: Any, *, language: Any, conn_options: APIConnectOptions) -> Any:
        raise NotImplementedError

    def stream(self, *, language: Any = None, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS) -> Any:
        return _STTStream(self, conn_options)


class _STTStream(stt.RecognizeStream):
    def __init__(self, s: ScriptedSTT, conn_options: APIConnectOptions) -> None:
        super().__init__(stt=s, conn_options=conn_options)
        self.conv = s.conv

    async def _run(self) -> None:
        drain = asyncio.create_task(self._drain())
        try:
            while True:
                end = await self.conv.stt_events.get()
                await asyncio.sleep(max(0.0, end + self.conv.current.stt_ms / 1000 - time.time()))
                self._event_ch.send_nowait(
                    stt.SpeechEvent(
                        type=stt.SpeechEventType.FINAL_TRANSCRIPT,
                        alternatives=[stt.SpeechData(text="what is the weather in Paris", language="en")],
                    )
                )
        finally:
            drain.cancel()

    async def _drain(self) -> None:
        async for _ in self._input_ch:
            pass


class ScriptedLLM(llm.LLM):
    """Each ``chat()`` is the turn's next pass: a round of tool calls, or the reply's text."""

    def __init__(self, conv: _Conversation) -> None:
        super().__init__()
        self.conv = conv

    @property
    def model(self) -> str:
        return "gpt-4.1-mini"

    def chat(self, *, chat_ctx: llm.ChatContext, tools: Any = None, conn_options: Any = DEFAULT_API_CONNECT_OPTIONS,
             **kwargs: Any) -> llm.LLMStream:  # fmt: skip
        turn, done = self.conv.current, self.conv.passes_done
        self.conv.passes_done += 1
        if self.conv.truth:
            self.conv.truth[-1].requests.append(time.time())
        return _LLMStream(self, chat_ctx=chat_ctx, tools=tools or [], conn_options=conn_options, turn=turn, n=done)


class _LLMStream(llm.LLMStream):
    def __init__(self, model: ScriptedLLM, *, turn: Turn, n: int, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.turn, self.n = turn, n

    def _chunk(self, **delta: Any) -> llm.ChatChunk:
        return llm.ChatChunk(id=f"chatcmpl-{id(self)}", delta=llm.ChoiceDelta(role="assistant", **delta))

    async def _run(self) -> None:
        turn, n = self.turn, self.n
        if turn.think_ms and n == len(turn.tools):  # the answering pass reasons first, hidden
            await asyncio.sleep(turn.think_ms / 1000)
        await asyncio.sleep((turn.ttft_ms if n == 0 else turn.tool_ttft_ms) / 1000)
        if n < len(turn.tools):
            calls = [
                llm.FunctionToolCall(name=t.name, arguments='{"city": "Paris"}', call_id=f"call_{n}_{i}")
                for i, t in enumerate(turn.tools[n])
            ]
            self._event_ch.send_nowait(self._chunk(tool_calls=calls))
        else:
            for piece in ("It is sunny ", "in Paris today."):
                self._event_ch.send_nowait(self._chunk(content=piece))
                await asyncio.sleep(0.01)
        reasoning = 40 if turn.think_ms and n == len(turn.tools) else 0
        usage = llm.CompletionUsage(
            completion_tokens=12 + reasoning, prompt_tokens=80, total_tokens=92 + reasoning, reasoning_tokens=reasoning
        )
        self._event_ch.send_nowait(llm.ChatChunk(id=f"chatcmpl-{id(self)}", usage=usage))


class ScriptedTTS(tts.TTS):
    """A streaming TTS: audio ``ttfb_ms`` after the first flushed text."""

    def __init__(self, conv: _Conversation) -> None:
        super().__init__(capabilities=tts.TTSCapabilities(streaming=True), sample_rate=RATE, num_channels=1)
        self.conv = conv

    def synthesize(self, text: str, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS) -> Any:
        raise NotImplementedError

    def stream(self, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS) -> tts.SynthesizeStream:
        return _TTSStream(tts=self, conn_options=conn_options)


class _TTSStream(tts.SynthesizeStream):
    async def _run(self, output_emitter: tts.AudioEmitter) -> None:
        conv = self._tts.conv  # type: ignore[attr-defined]
        output_emitter.initialize(
            request_id=utils.shortuuid("tts_"), sample_rate=RATE, num_channels=1, mime_type="audio/pcm", stream=True
        )
        text = ""
        async for data in self._input_ch:
            if isinstance(data, str):
                text += data
                continue
            if not text:
                continue
            self._mark_started()
            await asyncio.sleep(conv.current.ttfb_ms / 1000)
            output_emitter.start_segment(segment_id=utils.shortuuid("seg_"))
            for _ in range(40):  # 0.4 s of audio in 10 ms frames
                output_emitter.push(b"\x00\x00" * (RATE // 100))
            output_emitter.flush()
            text = ""


class ScriptedRealtimeModel(llm.RealtimeModel):
    """A speech-to-speech model with its own turn detection: its session hears the scripted speech,
    says the user stopped ``model_vad_ms`` after it ends, creates a response and sends its first audio
    ``ttft_ms`` later, and reports LiveKit's ``RealtimeModelMetrics`` as a provider plugin does (the
    response's creation as ``timestamp``, first audio token ``ttft``)."""

    def __init__(self, conv: _Conversation) -> None:
        super().__init__(
            capabilities=llm.RealtimeCapabilities(
                message_truncation=True,
                turn_detection=True,
                user_transcription=True,
                auto_tool_reply_generation=True,
                audio_output=True,
                manual_function_calls=False,
                mutable_chat_context=True,
                mutable_instructions=True,
            )
        )
        self.conv = conv

    @property
    def model(self) -> str:
        return "scripted-realtime"

    @property
    def provider(self) -> str:
        return "matrix"

    def session(self, *, turn_detection_disabled: bool = False) -> llm.RealtimeSession:
        return _RealtimeSession(self)

    async def aclose(self) -> None:
        pass


class _RealtimeSession(llm.RealtimeSession):
    def __init__(self, model: ScriptedRealtimeModel) -> None:
        super().__init__(model)
        self.conv = model.conv
        self._ctx = llm.ChatContext.empty()
        self._tool_ctx = llm.ToolContext.empty()
        self._task = asyncio.create_task(self._hear())

    @property
    def chat_ctx(self) -> llm.ChatContext:
        return self._ctx

    @property
    def tools(self) -> llm.ToolContext:
        return self._tool_ctx

    async def update_instructions(self, instructions: str) -> None:
        pass

    async def update_chat_ctx(self, chat_ctx: llm.ChatContext) -> None:
        self._ctx = chat_ctx

    async def update_tools(self, tools: list[Any]) -> None:
        self._tool_ctx = llm.ToolContext(tools)

    def update_options(self, *, tool_choice: Any = None) -> None:
        pass

    def push_audio(self, frame: rtc.AudioFrame) -> None:
        pass

    def push_video(self, frame: rtc.VideoFrame) -> None:
        pass

    def generate_reply(self, *, instructions: Any = None, tool_choice: Any = None, tools: Any = None) -> Any:
        return asyncio.get_running_loop().create_future()  # the harness's turns all come from speech

    def commit_audio(self) -> None:
        pass

    def clear_audio(self) -> None:
        pass

    def interrupt(self) -> None:
        pass

    def truncate(self, *, message_id: str, modalities: Any, audio_end_ms: int, audio_transcript: Any = None) -> None:
        pass

    async def aclose(self) -> None:
        self._task.cancel()

    async def _hear(self) -> None:
        """The model's own speech detection on the scripted speech, then its response."""
        while True:
            start, end = await self.conv.speeches.get()
            turn = self.conv.current
            await asyncio.sleep(max(0.0, start + 0.05 - time.time()))
            self.emit("input_speech_started", llm.InputSpeechStartedEvent())
            await asyncio.sleep(max(0.0, end + turn.model_vad_ms / 1000 - time.time()))
            self.emit("input_speech_stopped", llm.InputSpeechStoppedEvent(user_transcription_enabled=True))
            item = utils.shortuuid("item_")
            self.emit(
                "input_audio_transcription_completed",
                llm.InputTranscriptionCompleted(item_id=item, transcript="what is the weather in Paris", is_final=True),
            )
            await self._respond(turn)

    async def _respond(self, turn: Turn) -> None:
        created = time.time()
        response = utils.shortuuid("resp_")
        messages = utils.aio.Chan[llm.MessageGeneration]()
        functions = utils.aio.Chan[llm.FunctionCall]()
        text, audio = utils.aio.Chan[str](), utils.aio.Chan[rtc.AudioFrame]()
        modalities: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        modalities.set_result(["audio", "text"])
        messages.send_nowait(llm.MessageGeneration(utils.shortuuid("msg_"), text, audio, modalities))
        messages.close()
        functions.close()
        self.emit(
            "generation_created",
            llm.GenerationCreatedEvent(messages, functions, user_initiated=False, response_id=response),
        )
        await asyncio.sleep(turn.ttft_ms / 1000)
        first_audio = time.time()
        text.send_nowait("It is sunny in Paris today.")
        text.close()
        n = RATE // 100
        for _ in range(40):  # 0.4 s of audio in 10 ms frames
            audio.send_nowait(rtc.AudioFrame(b"\x00\x00" * n, sample_rate=RATE, num_channels=1, samples_per_channel=n))
        audio.close()
        done = time.time()
        self.emit(
            "metrics_collected",
            RealtimeModelMetrics(
                label="matrix.ScriptedRealtimeModel",
                request_id=response,
                timestamp=created,
                duration=done - created,
                ttft=first_audio - created,
                cancelled=False,
                input_tokens=120,
                output_tokens=40,
                total_tokens=160,
                tokens_per_second=40 / max(done - created, 1e-3),
                input_token_details=RealtimeModelMetrics.InputTokenDetails(audio_tokens=120),
                output_token_details=RealtimeModelMetrics.OutputTokenDetails(audio_tokens=40),
            ),
        )


class SilenceInput(AudioInput):
    """The room's audio track: 10 ms frames in real time (the scripted VAD and STT decide what is speech)."""

    def __init__(self) -> None:
        super().__init__(label="matrix")

    async def __anext__(self) -> rtc.AudioFrame:
        await asyncio.sleep(0.01)
        n = RATE // 100
        return rtc.AudioFrame(data=b"\x00\x00" * n, sample_rate=RATE, num_channels=1, samples_per_channel=n)


class RealtimeOutput(AudioOutput):
    """An audio sink that plays in real time: playback starts ``playout_ms`` after the first frame."""

    def __init__(self, conv: _Conversation) -> None:
        super().__init__(label="matrix", capabilities=AudioOutputCapabilities(pause=False), sample_rate=RATE)
        self.conv = conv
        self.started: float | None = None
        self.pushed = 0.0
        self.done: asyncio.TimerHandle | None = None
        self.start_handle: asyncio.TimerHandle | None = None

    async def capture_frame(self, frame: rtc.AudioFrame) -> None:
        await super().capture_frame(frame)
        self.pushed += frame.duration
        if self.started is None and self.start_handle is None:
            delay = self.conv.current.playout_ms / 1000
            self.start_handle = asyncio.get_running_loop().call_later(delay, self._start)

    def _start(self) -> None:
        self.started = time.time()
        self.on_playback_started(created_at=self.started)

    def flush(self) -> None:
        super().flush()
        if not self.pushed:
            return
        played = time.time() - self.started if self.started else 0.0
        delay = max(self.pushed - played, 0.0) + (self.conv.current.playout_ms / 1000 if not self.started else 0.0)
        pushed = self.pushed
        self.done = asyncio.get_running_loop().call_later(delay, self._finished, pushed, False)

    def _finished(self, position: float, interrupted: bool) -> None:
        self.started, self.pushed, self.done, self.start_handle = None, 0.0, None, None
        self.on_playback_finished(playback_position=position, interrupted=interrupted)

    def clear_buffer(self) -> None:
        if not self.pushed:
            return
        for handle in (self.done, self.start_handle):
            if handle is not None:
                handle.cancel()
        played = time.time() - self.started if self.started else 0.0
        self._finished(min(played, self.pushed), True)


# --- the agents ----------------------------------------------------------------------------------


def _tool(conv: _Conversation, tool: Tool, handoff: Agent | None) -> Any:
    async def run(city: str) -> Any:
        """Look it up.

        Args:
            city: the city
        """
        await asyncio.sleep(tool.run_ms / 1000)
        if handoff is not None:
            return handoff, "transferring"
        return f"{tool.name}: sunny in {city}"

    return function_tool(run, name=tool.name)


def _agents(conv: _Conversation) -> Agent:
    names = {t.name: t for turn in conv.turns for r in turn.tools for t in r}
    handoffs = {r[0].name for turn in conv.turns if turn.handoff for r in turn.tools[:1]}
    billing = Agent(instructions="You are billing.", tools=[_tool(conv, t, None) for t in names.values()])
    tools = [_tool(conv, t, billing if n in handoffs else None) for n, t in names.items()]
    return Agent(instructions="You are a weather assistant.", tools=tools)


# --- the run -------------------------------------------------------------------------------------


def _log_handlers(folder: Path) -> tuple[logging.Logger, list[logging.Handler]]:
    """LiveKit's own formatters, as ``cli/log.py`` sets them up (production JSON, dev colour)."""
    metrics_logger = logging.getLogger("livekit.agents.matrix")
    metrics_logger.setLevel(logging.INFO)
    metrics_logger.propagate = False
    handlers: list[logging.Handler] = []
    for name, fmt in (
        ("log-json.jsonl", JsonFormatter()),
        (
            "log-console.log",
            ColoredFormatter(
                "\r%(asctime)s %(esc_levelcolor)s%(levelname)-4s%(esc_reset)s %(name)s %(message)s "
                "%(esc_gray)s%(extra)s",
                datefmt="%H:%M:%S",
            ),
        ),
        (
            "log-dev.log",
            ColoredFormatter(
                "%(asctime)s - %(esc_levelcolor)s%(levelname)-4s%(esc_reset)s %(name)s - %(message)s "
                "%(esc_gray)s%(extra)s"
            ),
        ),
    ):
        handler = logging.FileHandler(folder / name)
        handler.setFormatter(fmt)
        metrics_logger.addHandler(handler)
        handlers.append(handler)
    return metrics_logger, handlers


async def _converse(
    conv: _Conversation, folder: Path, attach: Sequence[Callable[[AgentSession], object]] = ()
) -> tuple[AgentSession, list[Any]]:
    if conv.realtime:  # the model hears the user, detects the turn and speaks: no VAD, STT or TTS
        session: AgentSession = AgentSession(
            llm=ScriptedRealtimeModel(conv),
            turn_handling={"turn_detection": "realtime_llm"},
            aec_warmup_duration=None,
            user_away_timeout=None,
        )
    else:
        session = AgentSession(
            vad=ScriptedVAD(conv),
            stt=ScriptedSTT(conv),
            llm=ScriptedLLM(conv),
            tts=ScriptedTTS(conv),
            turn_handling={
                "turn_detection": "vad",
                "endpointing": {"min_delay": MIN_ENDPOINTING_S, "max_delay": 3.0},
                "interruption": {"min_duration": 0.2},
                "preemptive_generation": {"enabled": conv.preemptive},
            },
            aec_warmup_duration=None,
            user_away_timeout=None,
        )
    output = RealtimeOutput(conv)
    session.input.audio = SilenceInput()
    session.output.audio = output
    metrics_logger, handlers = _log_handlers(folder)
    collected: list[Any] = []
    for hook in attach:  # e.g. BudgetHook(...).attach, before LiveKit emits anything
        hook(session)

    @session.on("metrics_collected")
    def _metrics(ev: MetricsCollectedEvent) -> None:
        collected.append(ev.metrics)
        if conv.truth:
            conv.truth[-1].metrics.append(ev.metrics)
        log_metrics(ev.metrics, logger=metrics_logger)

    @session.on("function_tools_executed")
    def _tools(ev: Any) -> None:
        if conv.truth:
            conv.truth[-1].tools_executed.append(ev)

    @session.on("conversation_item_added")
    def _item(ev: Any) -> None:
        item = ev.item
        if conv.truth and getattr(item, "role", None) == "assistant":
            conv.truth[-1].replies.append(dict(item.metrics))

    @session.on("user_state_changed")
    def _user_state(ev: Any) -> None:
        if ev.new_state == "listening" and conv.truth and math.isnan(conv.truth[-1].speaking_at):
            conv.truth[-1].speech_end = ev.created_at

    @session.on("agent_state_changed")
    def _state(ev: Any) -> None:
        if ev.new_state == "speaking" and conv.truth and math.isnan(conv.truth[-1].speaking_at):
            conv.truth[-1].speaking_at = ev.created_at
            conv.spoke.set()

    await session.start(_agents(conv))
    stalls: list[tuple[float, float]] = []
    monitor = asyncio.create_task(_watch_loop(stalls))
    for i, turn in enumerate(conv.turns):
        conv.turn, conv.passes_done, conv.spoke = i, 0, asyncio.Event()
        conv.truth.append(Truth())
        start = time.time() + 0.05
        end = start + turn.speech_ms / 1000
        conv.truth[-1].speech_end = end
        conv.speeches.put_nowait((start, end))
        if not conv.realtime:
            conv.stt_events.put_nowait(end)
        await asyncio.wait_for(conv.spoke.wait(), timeout=15)
        await asyncio.sleep(0.15 if turn.barge_in else 1.2)  # the reply plays out, or the user barges in
    await asyncio.sleep(0.5)
    monitor.cancel()
    for truth, turn in zip(conv.truth, conv.turns, strict=True):
        last = truth.speaking_at + turn.playout_ms / 1000 + 0.05
        truth.stall_ms = max((ms for at, ms in stalls if truth.speech_end - 0.4 <= at <= last), default=0.0)
    for handler in handlers:
        metrics_logger.removeHandler(handler)
        handler.close()
    return session, collected


async def _watch_loop(stalls: list[tuple[float, float]]) -> None:
    """Record how late the event loop wakes a 2 ms sleep: ``(wall time, ms late)``."""
    while True:
        t0 = time.perf_counter()
        await asyncio.sleep(0.002)
        stalls.append((time.time(), max((time.perf_counter() - t0 - 0.002) * 1000.0, 0.0)))


_EXPORTER: Any = None


def _tracing() -> Any:
    """LiveKit's tracer on an SDK provider with an in-memory exporter (set once per process)."""
    global _EXPORTER
    if _EXPORTER is None:
        from livekit.agents.telemetry import set_tracer_provider
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        _EXPORTER = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        set_tracer_provider(provider)
    _EXPORTER.clear()
    return _EXPORTER


def run(
    turns: tuple[Turn, ...],
    folder: Path,
    *,
    preemptive: bool = True,
    attach: Sequence[Callable[[AgentSession], object]] = (),
    realtime: bool = False,
) -> Run:
    """Run the conversation and write every output format into ``folder``.

    :param preemptive: LiveKit's preemptive generation (on by default in 1.8).
    :param attach: called with the session before it starts (``BudgetHook(...).attach``).
    :param realtime: a realtime model (:class:`ScriptedRealtimeModel`) instead of VAD, STT, LLM and TTS.
    """
    from otlp_files import otlp_json_line

    exporter = _tracing()
    conv = _Conversation(turns)
    conv.preemptive = preemptive
    conv.realtime = realtime
    files = {name: folder / name for name in ("log-json.jsonl", "log-console.log", "log-dev.log")}

    async def main() -> tuple[AgentSession, list[Any]]:
        session, collected = await _converse(conv, folder, attach)
        history = session.history.to_dict()
        report = SessionReport(
            job_id="AJ_matrix",
            room_id="RM_matrix",
            room="matrix",
            options=session.options,
            events=list(session._recorded_events),
            chat_history=session.history.copy(),
        ).to_dict()
        await session.aclose()
        files["history.json"].write_text(json.dumps(history, indent=2))
        files["report.json"].write_text(json.dumps(report))
        return session, collected

    files["history.json"] = folder / "history.json"
    files["report.json"] = folder / "report.json"
    _, collected = asyncio.run(main())
    files["metrics.jsonl"] = folder / "metrics.jsonl"
    files["metrics.jsonl"].write_text("".join(json.dumps(m.model_dump()) + "\n" for m in collected))
    files["metrics-str.log"] = folder / "metrics-str.log"
    files["metrics-str.log"].write_text(
        "".join(f"2026-12-01 10:00:00,000 INFO agent - metrics collected: {m}\n" for m in collected)
    )
    files["spans.jsonl"] = folder / "spans.jsonl"
    files["spans.jsonl"].write_text(otlp_json_line(exporter.get_finished_spans()))
    return Run(folder, files, conv.truth, turns)
