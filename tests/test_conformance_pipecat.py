"""Conformance: a real Pipecat pipeline (its own PipelineTask, PipelineRunner, VADProcessor, frames and
metrics) with scripted STT-less LLM and TTS processors that wait known times; its loguru output is
captured to a file and ``read_trace`` must recover the injected times within 5 ms.

The processors stand in for services: the VAD is Pipecat's own ``VADAnalyzer`` state machine with a
scripted confidence (speech = non-zero audio), fed 10 ms chunks in real time, so Pipecat itself
decides when the VAD stops (``stop_secs`` after the last speech chunk) and logs its VAD parameters;
the LLM and TTS call Pipecat's metrics (``start_ttfb_metrics``/``stop_ttfb_metrics``,
``stop_ttfat_metrics``, text aggregation), which write the log lines the reader reads.
"""

from __future__ import annotations

import asyncio
import math
import struct
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
from loguru import logger

with warnings.catch_warnings():  # pipecat.audio.utils imports the stdlib's deprecated audioop (3.11, 3.12)
    warnings.simplefilter("ignore", DeprecationWarning)
    from pipecat.audio.vad.vad_analyzer import VADParams
    from pipecat.frames.frames import (
        DataFrame,
        EndFrame,
        Frame,
        InputAudioRawFrame,
        TextFrame,
        TTSAudioRawFrame,
        VADUserStoppedSpeakingFrame,
    )
    from pipecat.pipeline.pipeline import Pipeline

    # Pipecat 1.3 renamed PipelineTask/PipelineRunner to PipelineWorker/WorkerRunner (same roles)
    from pipecat.pipeline.worker import PipelineParams
    from pipecat.pipeline.worker import PipelineWorker as PipelineTask
    from pipecat.processors.audio.vad_processor import VADProcessor
    from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
    from pipecat.workers.runner import WorkerRunner as PipelineRunner

import pipecat_matrix as pm  # noqa: E402

from voicebudget.traces import check, read_trace

RATE = 16_000
CHUNK_S = 0.010
STOP_SECS = 0.3  # not Pipecat's default 0.2: the reader must take it from the log's VAD params
ENDPOINT_S = 0.150  # the turn strategy's wait after the VAD stop
LLM_TTFB_S = 0.250
THINKING_S = 0.300  # the LLM (its thinking part) drives the tail
AGGREGATION_S = 0.060
TTS_TTFB_S = 0.110
TOL_MS = 15.0
"""Between a scripted processor's own clock reading and the frame Pipecat logs or times, a loaded 2-core
machine can preempt the event loop for several ms (5 ms failed about 1 run in 10 at load average 10); a
reader that took the wrong line or unit would be off by tens to hundreds of ms."""
MARKS: dict[str, float] = {}
"""Wall-clock times (s) the scripted processors saw: the injected intervals as they really ran (a busy
machine stretches a sleep; Pipecat measures what ran, and so must the reader)."""


class ScriptedVAD(pm.ScriptedVAD):
    """The matrix's scripted VAD (tests/pipecat_matrix.py), noting the last speech window it analysed:
    the end of speech."""

    def voice_confidence(self, buffer: bytes) -> float:
        if any(buffer):
            MARKS["speech_end"] = time.time()
        return super().voice_confidence(buffer)


@dataclass
class ScriptedRequest(DataFrame):
    """The turn strategy's release: the LLM request."""


class ScriptedTurn(FrameProcessor):
    """Releases the turn ENDPOINT_S after the VAD stop (a speech-timeout strategy)."""

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)
        if isinstance(frame, VADUserStoppedSpeakingFrame):
            await asyncio.sleep(ENDPOINT_S)
            await self.push_frame(ScriptedRequest())


class ScriptedLLMService(FrameProcessor):
    """First (reasoning) token after LLM_TTFB_S, first answer token THINKING_S later."""

    def can_generate_metrics(self) -> bool:
        return True

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if not isinstance(frame, ScriptedRequest):
            await self.push_frame(frame, direction)
            return
        MARKS["llm_request"] = time.time()
        await self.start_ttfb_metrics()
        await asyncio.sleep(LLM_TTFB_S)
        MARKS["llm_first_token"] = time.time()
        await self.stop_ttfb_metrics()
        await asyncio.sleep(THINKING_S)
        MARKS["llm_first_answer_token"] = time.time()
        await self.stop_ttfat_metrics()
        await self.push_frame(TextFrame("Hello there."))


class ScriptedTTSService(FrameProcessor):
    """Aggregates the first sentence for AGGREGATION_S, first audio byte TTS_TTFB_S later."""

    def __init__(self, done: asyncio.Event) -> None:
        super().__init__()
        self.done = done

    def can_generate_metrics(self) -> bool:
        return True

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if not isinstance(frame, TextFrame) or self.done.is_set():
            await self.push_frame(frame, direction)
            return
        MARKS["aggregation_start"] = time.time()
        await self.start_text_aggregation_metrics()
        await asyncio.sleep(AGGREGATION_S)
        MARKS["tts_request"] = time.time()
        await self.stop_text_aggregation_metrics()
        await self.start_ttfb_metrics()
        await asyncio.sleep(TTS_TTFB_S)
        MARKS["tts_first_byte"] = time.time()
        await self.stop_ttfb_metrics()
        await self.push_frame(TTSAudioRawFrame(audio=b"\x00\x10" * 160, sample_rate=RATE, num_channels=1))
        self.done.set()


def _speech_chunk() -> bytes:
    n = int(RATE * CHUNK_S)
    return b"".join(struct.pack("<h", int(20_000 * math.sin(2 * math.pi * 440 * i / RATE))) for i in range(n))


async def _run() -> dict[str, float]:
    """Run one turn through the pipeline; returns the marks (wall-clock s)."""
    MARKS.clear()
    done = asyncio.Event()
    vad = VADProcessor(vad_analyzer=ScriptedVAD(params=VADParams(stop_secs=STOP_SECS, min_volume=0.0)))
    pipeline = Pipeline([vad, ScriptedTurn(), ScriptedLLMService(), ScriptedTTSService(done)])
    task = PipelineTask(pipeline, params=PipelineParams(enable_metrics=True, audio_in_sample_rate=RATE))
    runner = PipelineRunner(handle_sigint=False)
    speech, silence = _speech_chunk(), b"\x00" * int(RATE * CHUNK_S * 2)

    async def feed() -> None:
        await asyncio.sleep(0.3)  # the pipeline starts
        start = time.time()
        for i in range(300):  # 0.5 s of speech, then silence, one chunk each 10 ms in real time
            await asyncio.sleep(max(0.0, start + (i + 1) * CHUNK_S - time.time()))
            audio = speech if i < 50 else silence
            await task.queue_frame(InputAudioRawFrame(audio=audio, sample_rate=RATE, num_channels=1))
            if done.is_set():
                break
        await task.queue_frame(EndFrame())

    await runner.add_workers(task)
    await asyncio.gather(runner.run(), feed())
    return dict(MARKS)


@pytest.fixture(scope="module")
def pipecat_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, float]]:
    log = tmp_path_factory.mktemp("pipecat") / "pipecat.log"
    sink = logger.add(str(log), level="DEBUG")  # loguru's default format, as Pipecat users log
    try:
        marks = asyncio.run(_run())
    finally:
        logger.remove(sink)
    return log, marks


def test_pipecat_own_log_gives_the_injected_times(pipecat_log: tuple[Path, dict[str, float]]) -> None:
    log, marks = pipecat_log
    table = read_trace(log)
    assert "stop_secs = 0.3 s (the log's VAD params)" in table.anchor
    (turn,) = table.turns
    assert not turn.flagged, table.anomalies
    assert turn.rules == "pipecat-vad-processor"
    stages, ms = turn.stages_ms, 1000.0
    # each stage as the scripted processors ran it (the sleeps above, stretched by the machine's load)
    assert stages["endpointing"] == pytest.approx((marks["llm_request"] - marks["speech_end"]) * ms, abs=TOL_MS)
    assert stages["llm_ttft"] == pytest.approx(
        (marks["llm_first_answer_token"] - marks["llm_request"]) * ms, abs=TOL_MS
    )
    parts = turn.parts_ms["llm_ttft"]
    assert parts["ttfb"] == pytest.approx((marks["llm_first_token"] - marks["llm_request"]) * ms, abs=TOL_MS)
    assert parts["thinking"] == pytest.approx(
        (marks["llm_first_answer_token"] - marks["llm_first_token"]) * ms, abs=TOL_MS
    )
    assert stages["first_phrase"] == pytest.approx((marks["tts_request"] - marks["aggregation_start"]) * ms, abs=TOL_MS)
    assert stages["tts_ttfb"] == pytest.approx((marks["tts_first_byte"] - marks["tts_request"]) * ms, abs=TOL_MS)
    assert turn.total_ms == pytest.approx((marks["tts_first_byte"] - marks["speech_end"]) * ms, abs=TOL_MS)
    # and the sleeps themselves are there (a stretched sleep is only ever longer)
    assert stages["endpointing"] >= (STOP_SECS + ENDPOINT_S) * ms - TOL_MS
    assert parts["thinking"] >= THINKING_S * ms - TOL_MS


def test_pipecat_conformance_check(pipecat_log: tuple[Path, dict[str, float]]) -> None:
    """``check`` on Pipecat's own log: one turn over 800 ms, the LLM (its thinking part) drives the tail."""
    log, marks = pipecat_log
    result = check([read_trace(log)])
    assert not result.passed
    driver = result.report.tail_driver
    assert driver is not None
    assert driver.name == "llm_ttft"
    assert {p.name for p in driver.parts} == {"ttfb", "thinking"}
    assert result.report.total.p50_ms == pytest.approx(
        (marks["tts_first_byte"] - marks["speech_end"]) * 1000, abs=TOL_MS
    )
