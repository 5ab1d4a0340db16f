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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from livekit import rtc
from livekit.agents import Agent, AgentSession, function_tool, llm, utils
from livekit.agents.cli.log import ColoredFormatter, JsonFormatter
from livekit.agents.metrics import RealtimeModelMetrics, log_metrics
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS
from livekit.agents.voice.events import MetricsCollectedEvent
from livekit.agents.voice.report import SessionReport

import voicebudget.testing.livekit as lk
from voicebudget.testing import TurnScript

QUESTION = "what is the weather in Paris"
REPLY = ("It is sunny ", "in Paris today.")
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

    def script(self) -> TurnScript:
        """What the public scripted providers wait: the VAD's silence, the STT, the first pass's TTFT and
        reasoning, the TTS's first byte, the audio output's start."""
        return TurnScript(
            endpointing_ms=MIN_SILENCE_S * 1000,
            stt_ms=self.stt_ms,
            llm_ms=self.ttft_ms,
            reasoning_ms=self.think_ms,
            tts_ms=self.ttfb_ms,
            output_ms=self.playout_ms,
            speech_ms=self.speech_ms,
            transcript=QUESTION,
            reply=REPLY,
        )


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
class _Conversation(lk.ScriptedConversation):
    """The public scripted conversation (``voicebudget.testing.livekit``: its VAD, STT, TTS, audio input and
    output read ``script``), with the matrix's own turns (tool rounds, handoffs, barge-ins) and truth."""

    plan: tuple[Turn, ...] = ()
    passes_done: int = 0
    truth: list[Truth] = field(default_factory=list)
    preemptive: bool = True
    realtime: bool = False

    @property
    def current(self) -> Turn:
        return self.plan[self.turn]


# --- the scripted providers (the VAD, STT, TTS, audio input and output are voicebudget.testing's) ------


class ScriptedLLM(lk.ScriptedLLM):
    """Each ``chat()`` is the turn's next pass: a round of tool calls, or the reply (the public scripted
    LLM's stream, with the pass's TTFT and, on the answering pass, the hidden reasoning)."""

    conv: _Conversation

    @property
    def model(self) -> str:
        return "gpt-4.1-mini"

    def chat(self, *, chat_ctx: llm.ChatContext, tools: Any = None, conn_options: Any = DEFAULT_API_CONNECT_OPTIONS,
             **kwargs: Any) -> llm.LLMStream:  # fmt: skip
        turn, n = self.conv.current, self.conv.passes_done
        self.conv.passes_done += 1
        if self.conv.truth:
            self.conv.truth[-1].requests.append(time.time())
        if n < len(turn.tools):
            return _ToolStream(self, chat_ctx=chat_ctx, tools=tools or [], conn_options=conn_options, turn=turn, n=n)
        script = replace(
            self.conv.script,
            llm_ms=turn.ttft_ms if n == 0 else turn.tool_ttft_ms,
            reasoning_ms=turn.think_ms if n == len(turn.tools) else 0.0,  # the answering pass reasons first, hidden
        )
        return self.reply_stream(script, chat_ctx=chat_ctx, tools=tools, conn_options=conn_options)


class _ToolStream(llm.LLMStream):
    """A pass that asks for round ``n``'s tool calls ``ttft_ms`` (the first pass) or ``tool_ttft_ms`` later."""

    def __init__(self, model: ScriptedLLM, *, turn: Turn, n: int, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.turn, self.n = turn, n

    async def _run(self) -> None:
        turn, n = self.turn, self.n
        await asyncio.sleep((turn.ttft_ms if n == 0 else turn.tool_ttft_ms) / 1000)
        calls = [
            llm.FunctionToolCall(name=t.name, arguments='{"city": "Paris"}', call_id=f"call_{n}_{i}")
            for i, t in enumerate(turn.tools[n])
        ]
        request = f"chatcmpl-{id(self)}"
        self._event_ch.send_nowait(llm.ChatChunk(id=request, delta=llm.ChoiceDelta(role="assistant", tool_calls=calls)))
        usage = llm.CompletionUsage(completion_tokens=12, prompt_tokens=80, total_tokens=92, reasoning_tokens=0)
        self._event_ch.send_nowait(llm.ChatChunk(id=request, usage=usage))


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
                llm.InputTranscriptionCompleted(item_id=item, transcript=QUESTION, is_final=True),
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
        text.send_nowait("".join(REPLY))
        text.close()
        n, rate = lk.AUDIO_RATE // 100, lk.AUDIO_RATE
        for _ in range(round(lk.REPLY_AUDIO_S / 0.01)):  # in 10 ms frames
            audio.send_nowait(rtc.AudioFrame(b"\x00\x00" * n, sample_rate=rate, num_channels=1, samples_per_channel=n))
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
    names = {t.name: t for turn in conv.plan for r in turn.tools for t in r}
    handoffs = {r[0].name for turn in conv.plan if turn.handoff for r in turn.tools[:1]}
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
        session.input.audio = lk.SilenceInput()
        session.output.audio = lk.PlayoutOutput(conv)
    else:
        session = lk.scripted_session(
            conv,
            llm=ScriptedLLM(conv),
            turn_handling={
                "turn_detection": "vad",
                "endpointing": {"min_delay": MIN_ENDPOINTING_S, "max_delay": 3.0},
                "interruption": {"min_duration": 0.2},
                "preemptive_generation": {"enabled": conv.preemptive},
            },
        )
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
    for i, turn in enumerate(conv.plan):
        conv.speak(i)  # the scripted speech from 50 ms on (a realtime model leaves the transcripts unread)
        conv.passes_done = 0
        conv.truth.append(Truth(speech_end=conv.speech_ends[-1]))
        await asyncio.wait_for(conv.spoke.wait(), timeout=15)
        await asyncio.sleep(0.15 if turn.barge_in else 1.2)  # the reply plays out, or the user barges in
    await asyncio.sleep(0.5)
    monitor.cancel()
    for truth, turn in zip(conv.truth, conv.plan, strict=True):
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
    conv = _Conversation(tuple(t.script() for t in turns), plan=turns)
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
