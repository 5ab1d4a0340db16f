"""A Pipecat agent's latency budget in its own test suite, with voicebudget's scripted services.

Run: ``pytest docs/examples/test_pipecat_agent_budget.py`` (``pip install "voicebudget[pipecat]"``). A real
Pipecat pipeline (``PipelineWorker``, ``WorkerRunner``, frames) runs turn by turn; the STT, LLM, TTS and
transport are ``voicebudget.testing.pipecat``'s scripted processors, waiting delays drawn with a seed (the
figures are made up, not measurements). Put your own processors between the LLM and the TTS with
``extra=[...]``. One test meets 800 ms at p95; the other, whose LLM is congested, fails with the per-stage
breakdown.
"""

from __future__ import annotations

import asyncio

import pytest

from voicebudget import LogNormal, TurnRecorder
from voicebudget.integrations.pipecat import BudgetObserver
from voicebudget.testing import scripted_turns
from voicebudget.testing.pipecat import run_conversation

TURNS = 12


@pytest.mark.voice_budget(total_ms=800, stages={"llm": 400})
def test_agent_within_budget(voice_budget: TurnRecorder) -> None:
    turns = scripted_turns(
        TURNS, seed=1, speech=100, stt=60, turn_detection=20,
        llm=LogNormal(p50_ms=150, p95_ms=220), tts=LogNormal(p50_ms=90, p95_ms=130),
    )  # fmt: skip
    asyncio.run(run_conversation(turns, [BudgetObserver(recorder=voice_budget)]))


@pytest.mark.voice_budget(total_ms=800, stages={"llm": 400})
def test_agent_on_a_congested_llm(voice_budget: TurnRecorder) -> None:
    turns = scripted_turns(
        TURNS, seed=2, speech=100, stt=60, turn_detection=20,
        llm=LogNormal(p50_ms=600, p95_ms=900), tts=LogNormal(p50_ms=90, p95_ms=130),
    )  # fmt: skip
    asyncio.run(run_conversation(turns, [BudgetObserver(recorder=voice_budget)]))
