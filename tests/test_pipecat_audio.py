"""Real audio: espeak-ng speaks a known sentence, Pipecat's Silero VAD (its model ships inside
pipecat-ai) finds the end of speech, and the observer's time axis is checked against the end of
speech in the audio itself (the last 10 ms window above -40 dB of the peak RMS)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pipecat", reason="the pipecat extra is not installed: pip install 'voicebudget[pipecat]'")
pytest.importorskip("onnxruntime", reason="Silero VAD needs onnxruntime (installed with pipecat-ai)")
if shutil.which("espeak-ng") is None:
    pytest.skip("espeak-ng is not installed (Debian: apt-get install espeak-ng)", allow_module_level=True)

from voicebudget.integrations.pipecat import BudgetObserver  # noqa: E402
from voicebudget.testing import TurnScript  # noqa: E402
from voicebudget.testing.pipecat import ScriptedConversation, scripted_services  # noqa: E402

RATE = 16_000
STOP_SECS = 0.2


def speak(text: str, folder: Path) -> tuple[np.ndarray[Any, np.dtype[np.int16]], int]:
    """16 kHz mono PCM of ``text`` cut after its last loud 10 ms window, and that end, in samples."""
    import soxr

    wav = folder / "utterance.wav"
    subprocess.run(["espeak-ng", "-w", str(wav), text], check=True, capture_output=True)
    with wave.open(str(wav)) as w:
        rate, raw = w.getframerate(), w.readframes(w.getnframes())
    pcm = soxr.resample(np.frombuffer(raw, dtype=np.int16).astype(np.float32), rate, RATE).astype(np.int16)
    win = RATE // 100
    rms = np.sqrt(np.mean(pcm[: pcm.size // win * win].reshape(-1, win).astype(np.float64) ** 2, axis=1))
    end = int((np.flatnonzero(rms > 0.01 * rms.max())[-1] + 1) * win)
    return pcm[:end], end


async def play(pcm: np.ndarray[Any, np.dtype[np.int16]], observer: BudgetObserver) -> int:
    """Feed ``pcm`` in real time (20 ms chunks) into a pipeline with Silero VAD; returns when the audio
    started, ns on the recorder's clock."""
    from pipecat.audio.vad.silero import SileroVADAnalyzer
    from pipecat.audio.vad.vad_analyzer import VADParams
    from pipecat.frames.frames import EndFrame, InputAudioRawFrame
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.processors.audio.vad_processor import VADProcessor
    from pipecat.workers.runner import WorkerRunner

    conv = ScriptedConversation([TurnScript(endpointing_ms=STOP_SECS * 1000)])
    conv.start_turn(0)
    vad = VADProcessor(vad_analyzer=SileroVADAnalyzer(params=VADParams(stop_secs=STOP_SECS)))
    worker = PipelineWorker(Pipeline([vad, *scripted_services(conv)]), observers=[observer],
                            cancel_on_idle_timeout=False, enable_rtvi=False,
                            params=PipelineParams(audio_in_sample_rate=RATE))  # fmt: skip
    started = asyncio.Event()
    t0 = 0

    @worker.event_handler("on_pipeline_started")  # type: ignore[untyped-decorator]
    async def _started(worker: Any, frame: Any) -> None:
        started.set()

    async def user() -> None:
        nonlocal t0
        await asyncio.wait_for(started.wait(), timeout=10)
        chunk = RATE // 50
        t0 = time.perf_counter_ns()
        for i in range(0, pcm.size, chunk):
            due = t0 + i * 1_000_000_000 // RATE
            wait_ns = due - time.perf_counter_ns()
            if wait_ns > 0:
                await asyncio.sleep(wait_ns / 1e9)
            await worker.queue_frame(InputAudioRawFrame(pcm[i : i + chunk].tobytes(), RATE, 1))
        await asyncio.wait_for(conv.answered.wait(), timeout=10)
        await worker.queue_frame(EndFrame())

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await asyncio.gather(runner.run(), user())
    return t0


def test_silero_vad_end_of_speech_on_spoken_audio(tmp_path: Path) -> None:
    speech, end = speak("What time is it in Tokyo right now?", tmp_path)
    lead = int(0.3 * RATE)
    pcm = np.concatenate([np.zeros(lead, np.int16), speech, np.zeros(2 * RATE, np.int16)])
    observer = BudgetObserver()
    t0 = asyncio.run(play(pcm, observer))
    (turn,) = observer.recorder.turns
    assert turn.status == "complete"
    true_end_ns = t0 + (lead + end) * 1_000_000_000 // RATE
    late_ms = (turn.origin_ns - true_end_ns) / 1e6
    # the VAD stop minus stop_secs lands within ~36-44 ms after the audio's end of speech here (Silero
    # classifies 32 ms windows); the observer's axis is the VAD's, not a scripted event
    assert -50.0 < late_ms < 120.0, late_ms
    spans = {sp.name: sp.duration_ms for sp in turn.spans}
    assert spans["endpointing"] == pytest.approx(STOP_SECS * 1000, abs=1e-6)
    assert turn.voice_to_voice_ms is not None
    assert turn.voice_to_voice_ms > 200.0 + 250.0 + 120.0
