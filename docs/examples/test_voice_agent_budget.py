"""A voice agent's latency budget, checked in its own test suite with the voicebudget pytest plugin.

Run: ``pytest docs/examples/test_voice_agent_budget.py`` (with voicebudget installed the plugin is
active). One test meets the budget; the other, whose LLM endpoint is congested, fails with the
per-stage breakdown.

The pipeline is a fake cascade with the shape of a real one: streaming ASR finalises the transcript
after the user stops speaking, the LLM streams tokens, and TTS starts on the first sentence while the
LLM keeps streaming. Stage times are anyio sleeps with jitter drawn from a seeded ``random.Random``
(the randomness is passed in). The figures are made up to keep the test quick, not measurements: a
real streaming STT returns its final transcript some 250 ms after the end of speech at p50, for
example (Pipecat stt-benchmark, in docs/reference/component-latencies.csv).
"""

from __future__ import annotations

import random

import anyio
import pytest

from voicebudget import TurnRecorder

CALLERS = 12
"""Concurrent simulated callers, one turn each."""
TOKENS_TO_FIRST_SENTENCE = 8
TPOT_S = 0.015
"""Time per output token (inter-token latency) of the fake LLM, s."""


async def agent_turn(recorder: TurnRecorder, rng: random.Random, *, ttft_s: float) -> None:
    """One conversational turn of the fake agent, timed stage by stage."""
    async with recorder.turn() as turn:
        turn.mark("speech_end")  # in a real test: when the test's audio stops
        async with turn.stage("asr"):  # final transcript after the end of speech
            await anyio.sleep(rng.uniform(0.04, 0.09))
        first_sentence = anyio.Event()

        async def llm() -> None:
            async with turn.stage("llm"):
                await anyio.sleep(ttft_s * rng.uniform(0.8, 1.3))  # TTFT
                await anyio.sleep(TOKENS_TO_FIRST_SENTENCE * TPOT_S)
                first_sentence.set()
                await anyio.sleep(12 * TPOT_S)  # the rest of the reply streams while the agent speaks

        async def tts() -> None:
            await first_sentence.wait()
            async with turn.stage("tts"):
                await anyio.sleep(rng.uniform(0.07, 0.13))  # TTFB of the first sentence
                turn.mark("first_audio")  # in a real test: the first audio frame the test receives
                await anyio.sleep(0.05)

        async with anyio.create_task_group() as tg:
            tg.start_soon(llm)
            tg.start_soon(tts)


async def run_callers(recorder: TurnRecorder, seed: int, *, ttft_s: float) -> None:
    rng = random.Random(seed)
    async with anyio.create_task_group() as tg:
        for _ in range(CALLERS):
            tg.start_soon(lambda: agent_turn(recorder, rng, ttft_s=ttft_s))


@pytest.mark.anyio
@pytest.mark.voice_budget(total_ms=800, percentile=95, stages={"llm": 450})
async def test_agent_within_budget(voice_budget: TurnRecorder) -> None:
    await run_callers(voice_budget, seed=1, ttft_s=0.2)  # LLM p95 ~380 ms: 70 ms under its allocation


@pytest.mark.anyio
@pytest.mark.voice_budget(total_ms=800, percentile=95, stages={"llm": 450})
async def test_agent_on_congested_llm_endpoint(voice_budget: TurnRecorder) -> None:
    await run_callers(voice_budget, seed=2, ttft_s=0.65)
