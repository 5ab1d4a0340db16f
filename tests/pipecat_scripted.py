"""Pipecat's own debug log from a scripted conversation, for the tests of ``voicebudget check`` and ``fit``
(tests/test_predicted.py), and turns more than one test runs. The scripted services themselves are the package's:
:mod:`voicebudget.testing.pipecat`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loguru import logger
from pipecat.pipeline.worker import PipelineParams

from voicebudget.testing import TurnScript
from voicebudget.testing.pipecat import AUDIO_RATE, ScriptedConversation, run_conversation

THREE_TURNS = (
    TurnScript(speech_ms=50.0),
    TurnScript(
        speech_ms=50.0,
        endpointing_ms=300.0,
        stt_ms=150.0,
        turn_detection_ms=10.0,
        llm_ms=400.0,
        tts_ms=90.0,
        output_ms=40.0,
    ),
    TurnScript(
        speech_ms=50.0,
        stt_ms=40.0,
        turn_detection_ms=60.0,
        llm_ms=120.0,
        reasoning_ms=200.0,
        tts_ms=200.0,
        output_ms=10.0,
    ),
)
"""Three turns (tests/test_pipecat.py, tests/test_telemetry_frameworks.py): the defaults (700 ms of delays),
every delay changed (990 ms), and a thinking model (1200 ms)."""


def run_logged_conversation(
    scripts: Sequence[TurnScript], log: Path, observers: Sequence[Any] = ()
) -> ScriptedConversation:
    """Run a real Pipecat pipeline turn by turn with Pipecat's own VAD processor (fed audio, not frames) and its
    metrics on, writing Pipecat's debug log to ``log``: the VAD stop, VAD params and each service's TTFB lines,
    as a Pipecat agent's log has them (what ``voicebudget check`` and ``fit`` read). Every script must have the
    same ``endpointing_ms`` (one VAD)."""
    params = PipelineParams(enable_metrics=True, audio_in_sample_rate=AUDIO_RATE, audio_out_sample_rate=AUDIO_RATE)
    sink = logger.add(str(log), level="DEBUG")
    try:
        return asyncio.run(run_conversation(scripts, list(observers), audio=True, params=params))
    finally:
        logger.remove(sink)
