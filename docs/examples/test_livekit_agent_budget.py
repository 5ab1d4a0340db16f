"""A LiveKit agent's latency budget in its own test suite, with voicebudget's scripted providers.

Run: ``pytest docs/examples/test_livekit_agent_budget.py`` (``pip install "voicebudget[livekit]"``). A real
``AgentSession`` (its turn handling, metrics and events) runs turn by turn; the VAD, STT, LLM and TTS are
``voicebudget.testing.livekit``'s scripted providers, waiting delays drawn with a seed (made-up figures), and
``BudgetHook`` reads LiveKit's own metrics. Pass your ``Agent`` with ``agent=...``. One test meets 800 ms at
p95; the other, whose LLM is congested, fails with the per-stage breakdown.
"""

from __future__ import annotations

import asyncio

import pytest

from voicebudget import LogNormal, TurnRecorder
from voicebudget.integrations.livekit import BudgetHook
from voicebudget.testing import scripted_turns
from voicebudget.testing.livekit import run_session

TURNS = 4


@pytest.mark.voice_budget(total_ms=800, stages={"llm_ttft": 400})
def test_agent_within_budget(voice_budget: TurnRecorder) -> None:
    turns = scripted_turns(
        TURNS, seed=1, speech=300, stt=60, llm=LogNormal(p50_ms=180, p95_ms=260), tts=LogNormal(p50_ms=90, p95_ms=130)
    )
    asyncio.run(run_session(turns, attach=[BudgetHook(recorder=voice_budget).attach]))


@pytest.mark.voice_budget(total_ms=800, stages={"llm_ttft": 400})
def test_agent_on_a_congested_llm(voice_budget: TurnRecorder) -> None:
    turns = scripted_turns(
        TURNS, seed=2, speech=300, stt=60, llm=LogNormal(p50_ms=600, p95_ms=900), tts=LogNormal(p50_ms=90, p95_ms=130)
    )
    asyncio.run(run_session(turns, attach=[BudgetHook(recorder=voice_budget).attach]))
