"""A real Pipecat conversation for the conformance matrix: Pipecat's own pipeline, VAD state machine,
user turn strategy, OpenAI LLM service (fed by a scripted client), function calling, Pipecat Flows (in
``pipecat.flows`` since 1.x: a node transition is a handoff), TTS service base, output transport and
observers; only the network ends are scripted (the OpenAI client's stream, the TTS
provider's audio, the user's audio).

Every output format Pipecat ships is captured from the same run: loguru's default format at DEBUG, a
custom loguru format (the ISO layout of a cloud log viewer), the production INFO log (the user's
``on_latency_breakdown`` handler logging ``turn_contribution_lines``, FunctionCallObserver events) and
Pipecat's OpenTelemetry spans (``enable_tracing``, an in-memory exporter). The ground truth is the
harness's own observer: the framework's clock at each frame (``VADUserStoppedSpeakingFrame.timestamp``
minus its ``stop_secs``, then ``time.time()`` when each frame is first pushed).
"""

from __future__ import annotations

import asyncio
import math
import struct
import time
import warnings
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from loguru import logger
from otlp_files import otlp_json_line

with warnings.catch_warnings():  # pipecat.audio.utils imports the stdlib's deprecated audioop (3.11, 3.12)
    warnings.simplefilter("ignore", DeprecationWarning)
    from openai.types.chat import ChatCompletionChunk
    from pipecat.audio.vad.vad_analyzer import VADAnalyzer, VADParams
    from pipecat.frames.frames import (
        BotStartedSpeakingFrame,
        EndFrame,
        Frame,
        FunctionCallInProgressFrame,
        FunctionCallResultFrame,
        FunctionCallsStartedFrame,
        InputAudioRawFrame,
        InterruptionFrame,
        LLMContextFrame,
        LLMFullResponseEndFrame,
        LLMFullResponseStartFrame,
        LLMTextFrame,
        StartFrame,
        TranscriptionFrame,
        TTSAudioRawFrame,
        TTSStartedFrame,
        TTSStoppedFrame,
        VADUserStoppedSpeakingFrame,
    )
    from pipecat.observers.base_observer import BaseObserver, FramePushed
    from pipecat.observers.function_call_observer import FunctionCallObserver
    from pipecat.observers.user_bot_latency_observer import UserBotLatencyObserver
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.processors.aggregators.llm_response_universal import (
        LLMContextAggregatorPair,
        LLMUserAggregatorParams,
    )
    from pipecat.processors.audio.vad_processor import VADProcessor
    from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
    from pipecat.services.llm_service import FunctionCallParams
    from pipecat.services.openai.llm import OpenAILLMService
    from pipecat.services.tts_service import TTSService
    from pipecat.transports.base_output import BaseOutputTransport
    from pipecat.transports.base_transport import TransportParams
    from pipecat.turns.user_stop.speech_timeout_user_turn_stop_strategy import SpeechTimeoutUserTurnStopStrategy
    from pipecat.turns.user_turn_strategies import UserTurnStrategies
    from pipecat.utils.tracing.service_decorators import traced_tts
    from pipecat.workers.runner import WorkerRunner

RATE = 16_000
CHUNK_S = 0.010
STOP_SECS = 0.25
"""The VAD's stop_secs (not Pipecat's default 0.2: the reader must take it from the log's VAD params)."""
SPEECH_TIMEOUT_S = 0.12
"""The speech-timeout strategy's wait after the VAD stop (and a transcript)."""
CUSTOM_FORMAT = "{time:YYYY-MM-DDTHH:mm:ss.SSS}Z - {name}:{function}:{line} - {message}"
"""A custom loguru format: the ISO layout of a cloud log viewer's export (pipecat issue 1682)."""


@dataclass(frozen=True)
class Tool:
    """One tool call: its name and how long its handler runs, ms."""

    name: str
    run_ms: float


@dataclass(frozen=True)
class Turn:
    """One user turn and the bot's scripted reply, ms.

    :ivar tools: tool rounds before the reply; each round is the calls one LLM response asks for.
    :ivar think_ms: a thinking model: the first chunk carries no answer, the answer comes this much later.
    :ivar output_ms: the TTS's first audio is a 10 ms chunk; the rest comes this much later (the output
        transport waits for a whole 40 ms chunk before the bot starts speaking).
    :ivar barge_in: the user speaks again while the bot is speaking (an interruption).
    :ivar handoff: the first round's tool is a Pipecat Flows transition: its handler returns the next node
        (another agent's instructions and tools), and the node's own LLM run is the reply.
    """

    stt_ms: float = 60.0
    ttft_ms: float = 180.0
    tools: tuple[tuple[Tool, ...], ...] = ()
    tool_ttft_ms: float = 150.0
    think_ms: float = 0.0
    ttfb_ms: float = 110.0
    output_ms: float = 0.0
    barge_in: bool = False
    handoff: bool = False


@dataclass
class Truth:
    """What the harness's own observer saw in one turn, s on the framework's clock."""

    speech_end: float = math.nan
    requests: list[float] = field(default_factory=list)
    calls: list[float] = field(default_factory=list)
    running: list[float] = field(default_factory=list)  # FunctionCallInProgressFrame: a handler starts
    results: list[float] = field(default_factory=list)
    first_text: float = math.nan
    first_audio: float = math.nan
    bot_audio: float = math.nan
    stall_ms: float = 0.0
    """The event loop's longest stall in the turn (a 2 ms sleep overslept by this much): two clocks
    Pipecat reads for one moment (a log line, a frame's push) can be this far apart on a busy machine."""


@dataclass
class Run:
    """One conversation's outputs and its ground truth: ``truth`` when each frame was pushed (what the
    log lines are stamped with), ``observed`` when the observers saw it (what Pipecat's own observers,
    its latency breakdown and turn spans, measure with: they run in their own task, a few ms later)."""

    debug_log: Path
    custom_log: Path
    info_log: Path
    spans: Path
    truth: list[Truth]
    observed: list[Truth]
    turns: tuple[Turn, ...]


class ScriptedVAD(VADAnalyzer):
    """Pipecat's VAD state machine; confidence 1 for non-silent 10 ms windows, 0 for silence."""

    def num_frames_required(self) -> int:
        return int(RATE * CHUNK_S)

    def voice_confidence(self, buffer: bytes) -> float:
        return 1.0 if any(buffer) else 0.0


class ScriptedSTT(FrameProcessor):
    """The final transcript ``stt_ms`` after the VAD stop (a streaming STT finalising)."""

    def __init__(self, conv: _Conversation) -> None:
        super().__init__()
        self.conv = conv

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)
        if isinstance(frame, VADUserStoppedSpeakingFrame):
            self.create_task(self._transcribe(self.conv.turns[self.conv.turn]))

    async def _transcribe(self, turn: Turn) -> None:
        await asyncio.sleep(turn.stt_ms / 1000)
        await self.push_frame(TranscriptionFrame("what is the weather", "user", "2026-01-01T00:00:00Z", finalized=True))


def _chunk(delta: dict[str, Any], *, usage: dict[str, int] | None = None) -> ChatCompletionChunk:
    return ChatCompletionChunk.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-4.1-mini",
            "choices": [{"index": 0, "delta": delta, "finish_reason": None}] if delta else [],
            "usage": usage,
        }
    )


class _Stream:
    """The scripted provider's stream: chunks after their delays."""

    def __init__(self, chunks: list[tuple[float, ChatCompletionChunk]]) -> None:
        self.chunks = chunks

    def __aiter__(self) -> AsyncIterator[ChatCompletionChunk]:
        return self._gen()

    async def _gen(self) -> AsyncIterator[ChatCompletionChunk]:
        for delay_ms, chunk in self.chunks:
            await asyncio.sleep(delay_ms / 1000)
            yield chunk

    async def close(self) -> None:
        return None


class ScriptedOpenAI:
    """Stands in for ``AsyncOpenAI``: each ``chat.completions.create`` is the next pass of the turn."""

    def __init__(self, conv: _Conversation) -> None:
        self.conv = conv
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    async def create(self, **params: Any) -> _Stream:
        turn = self.conv.turns[self.conv.turn]
        done = self.conv.passes_done
        self.conv.passes_done += 1
        if done < len(turn.tools):  # this pass asks for the round's tools
            first = turn.ttft_ms if done == 0 else turn.tool_ttft_ms
            chunks = []
            for i, tool in enumerate(turn.tools[done]):
                call = {
                    "index": i,
                    "id": f"call_{done}_{i}",
                    "type": "function",
                    "function": {"name": tool.name, "arguments": ""},
                }
                chunks.append((first if i == 0 else 5.0, _chunk({"tool_calls": [call]})))
                args = {"index": i, "function": {"arguments": '{"city": "Paris"}'}}
                chunks.append((20.0, _chunk({"tool_calls": [args]})))
            return _Stream(chunks)
        first = turn.ttft_ms if not turn.tools else turn.tool_ttft_ms
        chunks = []
        if turn.think_ms:  # the model reasons first: a chunk with no answer text, then the answer
            chunks.append((first, _chunk({"role": "assistant", "content": ""})))
            first = turn.think_ms
        chunks += [
            (first, _chunk({"content": "It is sunny "})),
            (10.0, _chunk({"content": "in Paris today."})),
            (5.0, _chunk({}, usage={"prompt_tokens": 50, "completion_tokens": 8, "total_tokens": 58})),
        ]
        return _Stream(chunks)


class ScriptedRealtimeLLMService(FrameProcessor):
    """A speech-to-speech model as Pipecat's realtime services run one (``OpenAIRealtimeLLMService``):
    asked for a response, it times its TTFB with Pipecat's metrics and pushes the model's audio itself,
    no TTS service after it."""

    def __init__(self, conv: _Conversation) -> None:
        super().__init__()
        self.conv = conv

    def can_generate_metrics(self) -> bool:
        return True

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if not isinstance(frame, LLMContextFrame):
            await self.push_frame(frame, direction)
            return
        turn = self.conv.turns[self.conv.turn]
        await self.push_frame(LLMFullResponseStartFrame())
        await self.start_ttfb_metrics()
        await asyncio.sleep(turn.ttft_ms / 1000)
        await self.stop_ttfb_metrics()
        await self.push_frame(TTSStartedFrame())
        await self.push_frame(TTSAudioRawFrame(b"\x10\x00" * int(RATE * 0.3), RATE, 1))
        await self.push_frame(TTSStoppedFrame())
        await self.push_frame(LLMFullResponseEndFrame())


class ScriptedTTS(TTSService):
    """Pipecat's TTS service base around a scripted provider: first audio ``ttfb_ms`` after the request
    (10 ms of it), the rest ``output_ms`` later."""

    def __init__(self, conv: _Conversation) -> None:
        super().__init__(sample_rate=RATE, push_start_frame=True, push_stop_frames=True)
        self.conv = conv

    def can_generate_metrics(self) -> bool:
        return True

    @traced_tts
    async def run_tts(self, text: str, context_id: str) -> AsyncIterator[Frame | None]:
        turn = self.conv.turns[self.conv.turn]
        await asyncio.sleep(turn.ttfb_ms / 1000)
        yield TTSAudioRawFrame(b"\x10\x00" * int(RATE * 0.01), RATE, 1, context_id=context_id)
        await asyncio.sleep(turn.output_ms / 1000)
        yield TTSAudioRawFrame(b"\x10\x00" * int(RATE * 0.3), RATE, 1, context_id=context_id)


class NullOutput(BaseOutputTransport):
    """Pipecat's output transport, writing to nowhere (its MediaSender logs 'Bot started speaking')."""

    def __init__(self) -> None:
        super().__init__(TransportParams(audio_out_enabled=True, audio_out_sample_rate=RATE))

    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        await self.set_transport_ready(frame)

    async def write_audio_frame(self, frame: Any) -> bool:
        await asyncio.sleep(0.002)
        return True


class TruthObserver(BaseObserver):
    """The harness's own hook: the framework's clock at each frame the turn is made of."""

    def __init__(self, conv: _Conversation) -> None:
        super().__init__()
        self.conv = conv
        self.seen: set[int] = set()

    @staticmethod
    def pushed_at(data: FramePushed) -> float:
        """When the frame was pushed, wall clock s: Pipecat's own ``FramePushed.timestamp`` (the pipeline's
        monotonic clock, ns since its start) moved onto ``time.time()`` (observers run after the push, in
        their own task, so the time they run at is late)."""
        clock = data.source.get_clock()
        start_ns = getattr(clock, "_time", 0)
        return time.time() - (time.monotonic_ns() - (start_ns + data.timestamp)) / 1e9

    async def on_push_frame(self, data: FramePushed) -> None:
        frame = data.frame
        if frame.id in self.seen or data.direction != FrameDirection.DOWNSTREAM:
            return
        self.seen.add(frame.id)
        if self.conv.truth:
            self.note(self.conv.truth[-1], frame, self.pushed_at(data))
            self.note(self.conv.observed[-1], frame, time.time())

    def note(self, truth: Truth, frame: Frame, now: float) -> None:
        if isinstance(frame, VADUserStoppedSpeakingFrame):
            truth.speech_end = frame.timestamp - frame.stop_secs
        elif isinstance(frame, LLMFullResponseStartFrame):
            truth.requests.append(now)
        elif isinstance(frame, FunctionCallsStartedFrame):
            truth.calls.append(now)
        elif isinstance(frame, FunctionCallInProgressFrame):
            truth.running.append(now)
        elif isinstance(frame, FunctionCallResultFrame):
            truth.results.append(now)
        elif isinstance(frame, LLMTextFrame) and math.isnan(truth.first_text):
            truth.first_text = now
        elif isinstance(frame, TTSAudioRawFrame) and math.isnan(truth.first_audio):
            truth.first_audio = now
        elif isinstance(frame, BotStartedSpeakingFrame) and math.isnan(truth.bot_audio):
            truth.bot_audio = now
            self.conv.answered.set()
        elif isinstance(frame, InterruptionFrame):
            pass


@dataclass
class _Conversation:
    turns: tuple[Turn, ...]
    turn: int = 0
    passes_done: int = 0
    truth: list[Truth] = field(default_factory=list)
    observed: list[Truth] = field(default_factory=list)
    answered: asyncio.Event = field(default_factory=asyncio.Event)


def _speech_chunk() -> bytes:
    n = int(RATE * CHUNK_S)
    return b"".join(struct.pack("<h", int(20_000 * math.sin(2 * math.pi * 440 * i / RATE))) for i in range(n))


async def _weather(params: FunctionCallParams) -> None:
    await params.result_callback({"conditions": "sunny"})


def _tool_handler(conv: _Conversation, tool: Tool) -> Any:
    async def handler(params: FunctionCallParams) -> None:
        await asyncio.sleep(tool.run_ms / 1000)
        await params.result_callback({"tool": tool.name, "ok": True})

    return handler


def _flows_nodes(handoffs: dict[str, Tool]) -> dict[str, Any]:
    """Pipecat Flows nodes: the first agent, whose transition tools hand off to the second (billing), which
    answers at once (its ``respond_immediately`` LLM run is the reply)."""
    from pipecat.flows import FlowsFunctionSchema, NodeConfig

    def billing() -> NodeConfig:
        return {"name": "billing", "task_messages": [{"role": "developer", "content": "You are billing."}]}

    def transition(tool: Tool) -> Any:
        async def handler(args: Any, flow_manager: Any) -> tuple[dict[str, Any], NodeConfig]:
            await asyncio.sleep(tool.run_ms / 1000)
            return {"status": "transferred"}, billing()

        return handler

    functions = [
        FlowsFunctionSchema(
            name=t.name,
            description="hand off to billing",
            properties={"city": {"type": "string"}},
            required=[],
            handler=transition(t),
        )
        for t in handoffs.values()
    ]
    first: NodeConfig = {
        "name": "weather",
        "role_message": "You are a weather assistant.",
        "task_messages": [{"role": "developer", "content": "Answer the weather, hand billing questions over."}],
        "functions": functions,  # type: ignore[typeddict-item]
        "respond_immediately": False,  # the user speaks first
    }
    return {"initial": first}


async def _converse(turns: tuple[Turn, ...], exporter: Any | None, realtime: bool) -> tuple[list[Truth], list[Truth]]:
    conv = _Conversation(turns)
    handoffs = {r[0].name: r[0] for x in turns if x.handoff for r in x.tools[:1]}
    names = {t.name: t for round_ in (x.tools for x in turns) for r in round_ for t in r if t.name not in handoffs}
    context = LLMContext(**_tools(names))
    strategies = UserTurnStrategies(stop=[SpeechTimeoutUserTurnStopStrategy(user_speech_timeout=SPEECH_TIMEOUT_S)])
    pair = LLMContextAggregatorPair(context, user_params=LLMUserAggregatorParams(user_turn_strategies=strategies))
    user_agg, assistant_agg = pair
    llm = OpenAILLMService(
        api_key="scripted",
        settings=OpenAILLMService.Settings(model="gpt-4.1-mini", system_instruction="You are a weather assistant."),
    )
    llm._client = ScriptedOpenAI(conv)
    for name, tool in names.items():
        llm.register_function(name, _tool_handler(conv, tool))
    vad = VADProcessor(vad_analyzer=ScriptedVAD(params=VADParams(stop_secs=STOP_SECS, min_volume=0.0)))
    tts = ScriptedTTS(conv)
    latency = UserBotLatencyObserver()

    @latency.event_handler("on_latency_breakdown")  # type: ignore[untyped-decorator]
    async def _breakdown(observer: Any, breakdown: Any) -> None:
        for line in breakdown.turn_contribution_lines():
            logger.info(line)

    calls = FunctionCallObserver()

    @calls.event_handler("on_function_call_event")  # type: ignore[untyped-decorator]
    async def _call_event(observer: Any, event: Any) -> None:
        logger.info(event.model_dump_json())

    services: list[FrameProcessor] = [ScriptedRealtimeLLMService(conv)] if realtime else [llm, tts]
    worker = PipelineWorker(
        Pipeline([vad, ScriptedSTT(conv), user_agg, *services, NullOutput(), assistant_agg]),
        params=PipelineParams(enable_metrics=True, audio_in_sample_rate=RATE, audio_out_sample_rate=RATE),
        observers=[TruthObserver(conv), latency, calls],
        enable_tracing=exporter is not None,
        cancel_on_idle_timeout=False,
        enable_rtvi=False,
    )
    speech, silence = _speech_chunk(), b"\x00" * int(RATE * CHUNK_S)
    flows = None
    if handoffs:  # Pipecat Flows registers the transition tools on the LLM and sets each node's tools
        from pipecat.flows import FlowManager

        flows = FlowManager(llm=llm, context_aggregator=pair, worker=worker)

    async def user() -> None:
        await asyncio.sleep(0.3)  # the pipeline starts
        if flows is not None:
            await flows.initialize(_flows_nodes(handoffs)["initial"])
        for i, turn in enumerate(turns):
            conv.turn, conv.passes_done, conv.answered = i, 0, asyncio.Event()
            conv.truth.append(Truth())
            conv.observed.append(Truth())
            await _feed(worker, speech, 30)  # 0.3 s of speech
            deadline = time.time() + 10
            while not conv.answered.is_set() and time.time() < deadline:
                await _feed(worker, silence, 1)
            # the reply plays out and the user stays quiet; or barges in while the bot speaks
            await _feed(worker, silence, 10 if turn.barge_in else 80)
        await worker.queue_frame(EndFrame())

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    stalls: list[tuple[float, float]] = []
    monitor = asyncio.create_task(_watch_loop(stalls))
    await asyncio.gather(runner.run(), user())
    monitor.cancel()
    for truth in (*conv.truth, *conv.observed):
        window = [ms for at, ms in stalls if truth.speech_end - 0.3 <= at <= truth.bot_audio + 0.05]
        truth.stall_ms = max(window, default=0.0)
    return conv.truth, conv.observed


async def _watch_loop(stalls: list[tuple[float, float]]) -> None:
    """Record how late the event loop wakes a 2 ms sleep: ``(wall time, ms late)``."""
    while True:
        t0 = time.perf_counter()
        await asyncio.sleep(0.002)
        stalls.append((time.time(), max((time.perf_counter() - t0 - 0.002) * 1000.0, 0.0)))


def _tools(names: dict[str, Tool]) -> dict[str, Any]:
    """The LLM context's tools (none: no ``tools`` argument)."""
    from pipecat.adapters.llm.schemas.function_schema import FunctionSchema
    from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema

    if not names:
        return {}
    schemas = [
        FunctionSchema(name=n, description="look it up", properties={"city": {"type": "string"}}, required=[])
        for n in sorted(names)
    ]
    return {"tools": ToolsSchema(standard_tools=schemas)}


async def _feed(worker: PipelineWorker, audio: bytes, chunks: int) -> None:
    """``chunks`` 10 ms chunks of ``audio`` in real time."""
    start = time.time()
    for i in range(chunks):
        await worker.queue_frame(InputAudioRawFrame(audio=audio, sample_rate=RATE, num_channels=1))
        await asyncio.sleep(max(0.0, start + (i + 1) * CHUNK_S - time.time()))


_EXPORTER: Any = None


def run(turns: tuple[Turn, ...], folder: Path, *, realtime: bool = False) -> Run:
    """Run the conversation and capture every output format into ``folder``.

    :param realtime: a speech-to-speech model in place of the LLM and the TTS.
    """
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from pipecat.utils.tracing.setup import setup_tracing

    global _EXPORTER
    if _EXPORTER is None:  # OpenTelemetry's global provider can be set once per process
        _EXPORTER = InMemorySpanExporter()
        setup_tracing(service_name="voicebudget-matrix", exporter=_EXPORTER)
    exporter = _EXPORTER
    provider: Any = trace.get_tracer_provider()
    provider.force_flush()  # Pipecat's setup exports in batches: the last run's spans first
    exporter.clear()
    debug, custom, info = folder / "debug.log", folder / "custom.log", folder / "info.log"
    sinks = [
        logger.add(str(debug), level="DEBUG"),
        logger.add(str(custom), level="DEBUG", format=CUSTOM_FORMAT),
        logger.add(str(info), level="INFO"),
    ]
    try:
        truth, observed = asyncio.run(_converse(turns, exporter, realtime))
    finally:
        for sink in sinks:
            logger.remove(sink)
    provider.force_flush()
    spans = folder / "spans.jsonl"
    spans.write_text(otlp_json_line(exporter.get_finished_spans()))
    return Run(debug, custom, info, spans, truth, observed, turns)
