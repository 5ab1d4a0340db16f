"""Telemetry from a running agent: a real Pipecat pipeline and a real LiveKit AgentSession, read back through
the OpenTelemetry SDK's in-memory metric reader; what it exports equals the turns the observer (hook)
reports."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("opentelemetry.sdk", reason="the OpenTelemetry SDK is not installed")

from otel_memory import Otel  # noqa: E402

from voicebudget import Budget  # noqa: E402
from voicebudget.checker import RecorderReport  # noqa: E402
from voicebudget.telemetry import TURN_BUCKETS_S, Telemetry  # noqa: E402


def assert_metrics_equal_report(otel: Otel, report: RecorderReport) -> None:
    """Histogram count, sum and buckets per stage and for the total equal the report's measured turns."""
    measured = report.measured
    assert measured is not None
    bounds = np.array(TURN_BUCKETS_S)

    def check(point: Any, values_ms: np.ndarray) -> None:
        values_s = values_ms[~np.isnan(values_ms)] / 1000
        assert point.count == values_s.size
        assert point.sum == pytest.approx(values_s.sum(), abs=1e-9)
        # an OpenTelemetry bucket is (previous bound, bound]
        expected = np.bincount(np.searchsorted(bounds, values_s, side="left"), minlength=bounds.size + 1)
        assert list(point.bucket_counts) == expected.tolist()

    (total,) = otel.points("voicebudget.turn.duration")
    check(total, measured.total_ms)
    stages = otel.by("voicebudget.stage.duration", "voicebudget.stage")
    assert set(stages) == {k for k, v in measured.stages_ms.items() if not np.all(np.isnan(v))}
    for stage, point in stages.items():
        check(point, measured.stages_ms[stage])
    verdicts: dict[str, int] = {}
    for p in otel.points("voicebudget.turn.count"):
        key = p.attributes.get("voicebudget.turn.verdict", p.attributes["voicebudget.turn.status"])
        verdicts[key] = verdicts.get(key, 0) + p.value
    within = int(np.sum(measured.total_ms <= report.budget.total_ms))
    assert verdicts.pop("within", 0) == within
    assert verdicts.pop("over", 0) == measured.n_turns - within
    assert sum(verdicts.values()) == len(report.excluded)


def test_pipecat_pipeline_exports_the_turns_the_observer_reports() -> None:
    pytest.importorskip("pipecat", reason="the pipecat extra is not installed")
    from pipecat_scripted import Script, run_conversation

    from voicebudget.integrations.pipecat import BudgetObserver

    otel = Otel()
    observer = BudgetObserver(Budget(total_ms=800), telemetry=Telemetry(meter_provider=otel.meter_provider))
    scripts = [
        Script(),
        Script(stop_secs=0.3, stt_ms=150.0, turn_ms=10.0, ttft_ms=400.0, ttfb_ms=90.0, output_ms=40.0),
        Script(stt_ms=40.0, turn_ms=60.0, ttft_ms=120.0, think_ms=200.0, ttfb_ms=200.0, output_ms=10.0),
    ]
    asyncio.run(run_conversation(scripts, [observer]))
    report = observer.report()
    assert report.n_turns == 3
    assert_metrics_equal_report(otel, report)
    names = {p.attributes["gen_ai.agent.name"] for p in otel.points("voicebudget.turn.count")}
    assert names == {"pipecat"}


def test_livekit_session_exports_the_turns_the_hook_reports(tmp_path: Path) -> None:
    pytest.importorskip("livekit.agents", reason="the livekit extra is not installed")
    import livekit_matrix as lm

    from voicebudget.integrations.livekit import BudgetHook

    otel = Otel()
    hook = BudgetHook(Budget(total_ms=800), telemetry=Telemetry(meter_provider=otel.meter_provider))
    turns = (lm.Turn(ttft_ms=200.0, ttfb_ms=120.0), lm.Turn(ttft_ms=450.0, ttfb_ms=200.0))
    lm.run(turns, tmp_path, attach=[hook.attach])
    report = hook.report()
    assert report.n_turns == 2
    assert_metrics_equal_report(otel, report)
    # the hook's turns are LiveKit's EOU delay + LLM TTFT + TTS TTFB (TTFT partly hidden by LiveKit's
    # preemptive generation, which starts the LLM before the end of the turn)
    stages = otel.by("voicebudget.stage.duration", "voicebudget.stage")
    assert {"endpointing", "llm_ttft", "tts_ttfb"} <= set(stages)
