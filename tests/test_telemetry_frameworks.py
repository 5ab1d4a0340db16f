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
from voicebudget.telemetry import TURN_BUCKETS_S, PrometheusMetrics, Telemetry  # noqa: E402


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


def assert_spans_and_events_equal_turns(otel: Otel, turns: Any, budget: Budget, events: list[Any]) -> None:
    """One span per ended turn, its duration the voice-to-voice latency; an ``exceeded`` event per turn over
    the budget."""
    spans = otel.spans.get_finished_spans()
    assert [s.attributes["voicebudget.turn.name"] for s in spans] == [t.name for t in turns]
    over = []
    for span, turn in zip(spans, turns, strict=True):
        assert span.attributes["voicebudget.turn.status"] == turn.status
        if turn.status == "complete":
            v2v = turn.voice_to_voice_ms
            assert span.attributes["voicebudget.turn.voice_to_voice"] == pytest.approx(v2v / 1000, abs=1e-9)
            assert (span.end_time - span.start_time) / 1e6 == pytest.approx(v2v, abs=1e-3)
            stages = sum(v for k, v in span.attributes.items() if k.endswith(".duration"))
            assert stages == pytest.approx(v2v / 1000, abs=1e-9)
            if v2v > budget.total_ms:
                over.append(turn.name)
    assert [e.speech_id for e in events if e.source == "turn" and e.level == "exceeded"] == over
    logs = [r.log_record for r in otel.logs.get_finished_logs()]
    assert [r.body["speech_id"] for r in logs] == [e.speech_id for e in events]


def test_pipecat_pipeline_exports_the_turns_the_observer_reports() -> None:
    pytest.importorskip("pipecat", reason="the pipecat extra is not installed")
    from pipecat_scripted import THREE_TURNS

    from voicebudget.integrations.pipecat import BudgetObserver
    from voicebudget.testing.pipecat import run_conversation

    otel = Otel()
    events: list[Any] = []
    telemetry = Telemetry(**otel.providers(), on_event=events.append)
    observer = BudgetObserver(Budget(total_ms=800), telemetry=telemetry)
    asyncio.run(run_conversation(THREE_TURNS, [observer]))
    report = observer.report()
    assert report.n_turns == 3
    assert_metrics_equal_report(otel, report)
    names = {p.attributes["gen_ai.agent.name"] for p in otel.points("voicebudget.turn.count")}
    assert names == {"pipecat"}
    assert_spans_and_events_equal_turns(otel, observer.recorder.turns, Budget(total_ms=800), events)
    # turn 0 is 700 ms of injected delays; turn 1 990 ms, turn 2 (a thinking model) 1200 ms
    assert [(e.source, e.speech_id) for e in events] == [("turn", "turn 1"), ("turn", "turn 2")]


def test_livekit_session_exports_the_turns_the_hook_reports(tmp_path: Path) -> None:
    pytest.importorskip("livekit.agents", reason="the livekit extra is not installed")
    import livekit_matrix as lm

    from voicebudget.integrations.livekit import BudgetHook

    otel = Otel()
    events: list[Any] = []
    telemetry = Telemetry(**otel.providers(), on_event=events.append)
    hook = BudgetHook(Budget(total_ms=800), telemetry=telemetry)
    turns = (lm.Turn(ttft_ms=200.0, ttfb_ms=120.0), lm.Turn(ttft_ms=450.0, ttfb_ms=200.0))
    lm.run(turns, tmp_path, attach=[hook.attach])
    report = hook.report()
    assert report.n_turns == 2
    assert_metrics_equal_report(otel, report)
    # the hook's turns are LiveKit's EOU delay + LLM TTFT + TTS TTFB (TTFT partly hidden by LiveKit's
    # preemptive generation, which starts the LLM before the end of the turn)
    stages = otel.by("voicebudget.stage.duration", "voicebudget.stage")
    assert {"endpointing", "llm_ttft", "tts_ttfb"} <= set(stages)
    assert_spans_and_events_equal_turns(otel, hook.recorder.turns, Budget(total_ms=800), events)


def test_livekit_hook_reports_the_guards_first_miss_in_a_turn_as_a_guard_event() -> None:
    pytest.importorskip("livekit.agents", reason="the livekit extra is not installed")
    from fake_clock import FakeClock
    from livekit.agents import AgentSession
    from livekit.agents.voice.events import AgentStateChangedEvent, UserStateChangedEvent

    from voicebudget import BudgetGuard
    from voicebudget.integrations.livekit import BudgetHook

    # commit 600 ms; reply 100 ms in 95% of 1,000 turns, 1000 ms in 5%: 200 ms into the reply, no turn fits
    reply = np.where(np.arange(1000) < 950, 100.0, 1000.0)
    stages = {"endpointing": np.full(1000, 600.0), "asr": np.zeros(1000), "llm_ttft": reply, "tts_ttfb": np.zeros(1000)}
    guard = BudgetGuard(Budget(total_ms=800), stages, min_rows=10, phases=BudgetHook.PHASES)
    otel = Otel()
    events: list[Any] = []
    telemetry = Telemetry(logger_provider=otel.logger_provider, on_event=events.append)
    clock = FakeClock()
    prometheus_client = pytest.importorskip("prometheus_client")
    registry = prometheus_client.CollectorRegistry()
    prometheus = PrometheusMetrics(registry=registry)
    hook = BudgetHook(
        guard=guard, clock=clock, vad_silence_s=0.5, poll_ms=1.0, telemetry=telemetry, prometheus=prometheus
    )

    async def turn() -> None:
        session = AgentSession()
        hook.attach(session)
        clock.at_ms(500.0)  # the VAD reports the end of speech after its 0.5 s of silence
        session.emit("user_state_changed", UserStateChangedEvent(old_state="speaking", new_state="listening"))
        clock.at_ms(600.0)
        session.emit("agent_state_changed", AgentStateChangedEvent(old_state="listening", new_state="thinking"))
        await asyncio.sleep(0.02)
        assert events == []  # fits so far
        clock.at_ms(800.0)
        await asyncio.sleep(0.02)  # many polls: one event
        session.emit("agent_state_changed", AgentStateChangedEvent(old_state="thinking", new_state="speaking"))
        await asyncio.sleep(0.01)

    asyncio.run(turn())
    (event,) = events
    assert (event.source, event.level, event.stage, event.speech_id, event.p_fit) == (
        "guard",
        "warning",
        "reply",
        None,
        0.0,
    )
    # 800 ms spent (back-dated by the VAD's silence; the event's age on the wall clock adds a few ms) + the
    # slow turns' rest at p95, 1000 - 200 ms
    assert event.latency == pytest.approx(1.6, abs=0.05)
    assert len(otel.logs.get_finished_logs()) == 1
    labels = {"agent": "livekit", "source": "guard", "level": "warning"}  # the hook's recorder
    assert registry.get_sample_value("voicebudget_budget_events_total", labels) == 1
