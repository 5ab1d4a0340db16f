"""Telemetry out: the recorder's listeners, and OpenTelemetry metrics read back from the SDK's in-memory
reader with exact figures (a settable clock)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the OpenTelemetry SDK is not installed")

from fake_clock import FakeClock  # noqa: E402
from otel_memory import Otel  # noqa: E402

from voicebudget import Budget, Turn, TurnRecorder  # noqa: E402
from voicebudget.telemetry import TURN_BUCKETS_S, Telemetry  # noqa: E402


def recorded(clock: FakeClock, recorder: TurnRecorder) -> None:
    """Three turns: a complete one over 800 ms (950 ms), a complete one within it (400 ms), one without audio.

    Turn 0: endpointing 0-250 ms and asr 0-200 ms in parallel (endpointing ends last: it is credited 0-200 ms,
    asr 0 ms), llm 200-900 ms (ends after endpointing: credited 200-900 ms), first audio at 950 ms (50 ms
    untracked).
    """
    with recorder.turn() as turn:
        turn.mark("speech_end")
        turn.add_stage("endpointing", start_ms=0.0, end_ms=250.0)
        turn.add_stage("asr", start_ms=0.0, end_ms=200.0)
        turn.add_stage("llm", start_ms=200.0, end_ms=900.0)
        turn.mark("first_audio", at_ms=950.0)
    clock.at_ms(10_000.0)
    with recorder.turn() as turn:
        turn.mark("speech_end")
        turn.add_stage("llm", start_ms=0.0, end_ms=300.0)
        turn.mark("first_audio", at_ms=400.0)
    clock.at_ms(20_000.0)
    with recorder.turn() as turn:
        turn.mark("speech_end")
        turn.add_stage("llm", start_ms=0.0, end_ms=120.0)


def test_listeners_see_each_turn_once_as_it_ends_with_its_status_and_reason() -> None:
    clock = FakeClock()
    recorder = TurnRecorder("agent", clock=clock)
    seen: list[tuple[int, str, str]] = []
    remove = recorder.add_listener(lambda t: seen.append((t.index, t.status, t.reason)))
    turn = recorder.turn()
    turn.mark("speech_end")
    assert seen == []  # still open
    turn.end(reason="interrupted by the user before the first audio")
    turn.end()  # a second end changes nothing and tells nobody
    done = recorder.turn()
    done.mark("speech_end")
    done.mark("first_audio", at_ms=500.0)
    done.end(reason="ignored: the turn is complete")
    assert seen == [(0, "incomplete", "interrupted by the user before the first audio"), (1, "complete", "")]
    remove()
    remove()  # removing twice is harmless
    with recorder.turn():
        pass
    assert len(seen) == 2
    assert isinstance(recorder.turns[0], Turn)
    assert recorder.turns[0].clock is clock


def test_a_listener_that_raises_propagates_from_end_after_the_turn_is_ended() -> None:
    recorder = TurnRecorder(clock=FakeClock())

    def broken(turn: Turn) -> None:
        raise RuntimeError("sink down")

    recorder.add_listener(broken)
    turn = recorder.turn()
    with pytest.raises(RuntimeError, match="sink down"):
        turn.end()
    assert turn.status == "incomplete"


def test_metrics_per_turn_equal_the_recorders_turns() -> None:
    otel = Otel()
    clock = FakeClock()
    recorder = TurnRecorder("support-agent", clock=clock)
    Telemetry(Budget(total_ms=800), meter_provider=otel.meter_provider).attach(recorder)
    recorded(clock, recorder)

    (total,) = otel.points("voicebudget.turn.duration")
    assert total.count == 2
    assert total.sum == pytest.approx(0.95 + 0.40)
    assert total.explicit_bounds == TURN_BUCKETS_S
    assert dict(total.attributes) == {"gen_ai.agent.name": "support-agent"}
    # 0.4 s in (0.3, 0.4], 0.95 s in (0.9, 1.0]
    assert [i for i, n in enumerate(total.bucket_counts) for _ in range(n)] == [
        TURN_BUCKETS_S.index(0.4),
        TURN_BUCKETS_S.index(1.0),
    ]
    assert otel.metric("voicebudget.turn.duration").unit == "s"

    stages = otel.by("voicebudget.stage.duration", "voicebudget.stage")
    assert {k: (p.count, round(p.sum, 9)) for k, p in stages.items()} == {
        "endpointing": (1, 0.2),
        "asr": (1, 0.0),  # ran, never held the turn up: 0 ms, as the report counts it
        "llm": (2, 1.0),  # 700 + 300 ms
        "untracked": (2, 0.15),  # 50 + 100 ms
    }
    # what the report says about the same turns
    report = recorder.report(Budget(total_ms=800))
    assert report.measured is not None
    for stage, point in stages.items():
        values = report.measured.stages_ms[stage]
        values = values[values == values]  # not NaN
        assert point.count == values.size
        assert point.sum == pytest.approx(values.sum() / 1000)

    counts = {
        tuple(sorted((k, v) for k, v in p.attributes.items() if k != "gen_ai.agent.name")): p.value
        for p in otel.points("voicebudget.turn.count")
    }
    assert counts == {
        (
            ("voicebudget.turn.status", "complete"),
            ("voicebudget.turn.tail_driver", "llm"),
            ("voicebudget.turn.verdict", "over"),
        ): 1,
        (
            ("voicebudget.turn.status", "complete"),
            ("voicebudget.turn.tail_driver", "llm"),
            ("voicebudget.turn.verdict", "within"),
        ): 1,
        (("voicebudget.turn.status", "incomplete"),): 1,
    }


def test_the_integrations_budget_judges_unless_the_telemetry_has_its_own() -> None:
    otel = Otel()
    clock = FakeClock()
    recorder = TurnRecorder(clock=clock)
    Telemetry(meter_provider=otel.meter_provider, agent_name="a").attach(recorder, budget=Budget(total_ms=1000))
    Telemetry(Budget(total_ms=300), meter_provider=otel.meter_provider, agent_name="b").attach(
        recorder, budget=Budget(total_ms=1000)
    )
    recorded(clock, recorder)
    verdicts = {
        (p.attributes["gen_ai.agent.name"], p.attributes.get("voicebudget.turn.verdict")): p.value
        for p in otel.points("voicebudget.turn.count")
    }
    # budget 1000 ms: 950 and 400 ms within; the telemetry's own 300 ms: both over
    assert verdicts == {("a", "within"): 2, ("a", None): 1, ("b", "over"): 2, ("b", None): 1}


def test_importing_voicebudget_imports_no_otel_sdk_nor_prometheus_client() -> None:
    code = (
        "import sys, voicebudget, voicebudget.telemetry, voicebudget.integrations\n"
        "voicebudget.TurnRecorder, voicebudget.BudgetGuard\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('opentelemetry', 'prometheus_client'))\n"
        "assert not bad, bad\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_base_install_leaves_otel_and_prometheus_to_extras_the_tests_install() -> None:
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    base = " ".join(project["dependencies"])
    assert "opentelemetry" not in base
    assert "prometheus" not in base
    extras = project["optional-dependencies"]
    assert [d.split(">")[0] for d in extras["otel"]] == ["opentelemetry-api"]
    assert [d.split(">")[0] for d in extras["prometheus"]] == ["prometheus-client"]
    test = {d.split(">")[0].split("[")[0] for d in extras["test"]}
    assert {"opentelemetry-sdk", "prometheus-client"} <= test


def test_one_span_per_turn_with_its_stages_verdict_and_budget_on_the_recorders_clock() -> None:
    otel = Otel()
    clock = FakeClock()
    recorder = TurnRecorder("support-agent", clock=clock)
    telemetry = Telemetry(
        Budget(total_ms=800, stages={"llm": 500}),
        **otel.providers(),
    )
    telemetry.attach(recorder)
    recorded(clock, recorder)
    with recorder.turn(call="call-7") as turn:
        turn.mark("speech_end")
        turn.mark("first_audio", at_ms=250.0)
    turn = recorder.turn()
    turn.end(ValueError("bad frame"))

    spans = otel.spans.get_finished_spans()
    assert [s.name for s in spans] == ["invoke_agent support-agent"] * 5
    assert all(s.parent is None for s in spans)  # root spans
    first = spans[0]
    assert first.end_time - first.start_time == 950_000_000  # speech_end -> first_audio, ns
    assert dict(first.attributes) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "support-agent",
        "gen_ai.agent.invocation.end_reason": "completed",
        "voicebudget.turn.index": 0,
        "voicebudget.turn.name": "turn 0",
        "voicebudget.turn.status": "complete",
        "voicebudget.turn.voice_to_voice": 0.95,
        "voicebudget.turn.verdict": "over",
        "voicebudget.turn.tail_driver": "llm",
        "voicebudget.budget.total": 0.8,
        "voicebudget.budget.percentile": 95.0,
        "voicebudget.budget.slack": pytest.approx(-0.15),
        "voicebudget.stage.endpointing.duration": 0.2,
        "voicebudget.stage.asr.duration": 0.0,
        "voicebudget.stage.llm.duration": 0.7,
        "voicebudget.stage.untracked.duration": 0.05,
        "voicebudget.stage.llm.allocation": 0.5,
    }
    assert [e.name for e in first.events] == ["voicebudget.latency_budget"] * 2  # the turn, and llm over 500 ms
    no_audio = spans[2]
    assert no_audio.attributes["voicebudget.turn.reason"] == "no first_audio mark"
    assert no_audio.end_time - no_audio.start_time == 120_000_000  # to the last instant recorded
    assert "gen_ai.agent.invocation.end_reason" not in no_audio.attributes
    assert spans[3].attributes["gen_ai.conversation.id"] == "call-7"
    errored = spans[4]
    assert errored.status.status_code.name == "ERROR"
    assert errored.attributes["error.type"] == "ValueError"


def test_budget_events_are_livekits_latency_budget_shape_as_callback_log_record_and_counter() -> None:
    otel = Otel()
    clock = FakeClock()
    recorder = TurnRecorder("agent", clock=clock)
    events: list[object] = []
    Telemetry(
        Budget(total_ms=800, stages={"llm": 500}),
        **otel.providers(),
        warning_ms=350.0,
        on_event=events.append,
    ).attach(recorder)
    recorded(clock, recorder)
    # turn 0: 950 ms > 800 ms, llm 700 ms > 500 ms; turn 1: 400 ms >= the 350 ms warning; turn 2 has no latency
    got = [(e.source, e.level, e.latency, e.threshold, e.budget, e.speech_id, e.stage) for e in events]  # type: ignore[attr-defined]
    assert got == [
        ("turn", "exceeded", 0.95, 0.8, 0.8, "turn 0", None),
        ("stage", "exceeded", 0.7, 0.5, 0.5, "turn 0", "llm"),
        ("turn", "warning", 0.4, 0.35, 0.8, "turn 1", None),
    ]
    assert set(events[0].to_dict()) >= {"type", "level", "latency", "threshold", "budget", "speech_id"}  # type: ignore[attr-defined]
    assert events[0].type == "latency_budget"  # type: ignore[attr-defined]
    logs = [r.log_record for r in otel.logs.get_finished_logs()]
    assert [(r.event_name, r.severity_text, r.body["level"]) for r in logs] == [
        ("voicebudget.latency_budget", "WARN", "exceeded"),
        ("voicebudget.latency_budget", "WARN", "exceeded"),
        ("voicebudget.latency_budget", "INFO", "warning"),
    ]
    spans = otel.spans.get_finished_spans()
    assert logs[0].trace_id == spans[0].context.trace_id  # in the turn span's context
    assert logs[2].trace_id == spans[1].context.trace_id
    counted = {
        (p.attributes["voicebudget.event.source"], p.attributes["voicebudget.event.level"]): p.value
        for p in otel.points("voicebudget.budget_event.count")
    }
    assert counted == {("turn", "exceeded"): 1, ("stage", "exceeded"): 1, ("turn", "warning"): 1}


def test_a_guard_policy_wrapped_by_telemetry_reports_the_decision_it_acted_on() -> None:
    import numpy as np

    from voicebudget import BudgetGuard

    otel = Otel()
    events: list[object] = []
    telemetry = Telemetry(
        meter_provider=otel.meter_provider,
        logger_provider=otel.logger_provider,
        on_event=events.append,
        agent_name="guarded",
    )
    # 600 ms of commit, then a reply of 100 ms (95 turns in 100) or 1000 ms: 200 ms into the reply only the
    # slow turns are left, and none of them fits 800 ms
    reply = np.where(np.arange(1000) < 950, 100.0, 1000.0)
    guard = BudgetGuard(
        Budget(total_ms=800),
        {"commit": np.full(1000, 600.0), "reply": reply},
        min_rows=10,
        policy=telemetry.policy(lambda d: "filler", speech_id="speech_9"),
    )
    clock = FakeClock()
    live = guard.turn(clock=clock, start_ns=0)
    live.enter("reply", at_ns=600 * 1_000_000)
    clock.at_ms(700.0)
    assert live.check().fits
    clock.at_ms(800.0)
    decision = live.check()
    assert (decision.fits, decision.action) == (False, "filler")
    clock.at_ms(850.0)
    live.check()  # the policy acts once per turn: no second event
    (event,) = events
    # predicted: 800 ms spent + the rest at p95 (the slow turns' 1000 - 200 ms) = 1600 ms
    assert (event.source, event.level, event.stage, event.speech_id) == ("guard", "warning", "reply", "speech_9")  # type: ignore[attr-defined]
    assert event.latency == pytest.approx(1.6)  # type: ignore[attr-defined]
    assert (event.threshold, event.budget, event.p_fit) == (0.8, 0.8, 0.0)  # type: ignore[attr-defined]
    (record,) = [r.log_record for r in otel.logs.get_finished_logs()]
    assert record.attributes["voicebudget.event.source"] == "guard"
    assert record.attributes["voicebudget.event.p_fit"] == 0.0


def test_warning_ms_must_be_a_finite_positive_number() -> None:
    with pytest.raises(ValueError, match=r"warning_ms must be a finite number > 0 ms, got -1"):
        Telemetry(warning_ms=-1.0)


def test_docs_list_every_name_and_attribute_the_sinks_send() -> None:
    import re
    from pathlib import Path

    prometheus_client = pytest.importorskip("prometheus_client")
    from voicebudget import PrometheusMetrics

    doc = (Path(__file__).parent.parent / "docs" / "telemetry.md").read_text(encoding="utf-8")
    otel = Otel()
    registry = prometheus_client.CollectorRegistry()
    clock = FakeClock()
    recorder = TurnRecorder("agent", clock=clock)
    budget = Budget(total_ms=800, stages={"llm": 500})
    telemetry = Telemetry(
        budget,
        **otel.providers(),
        warning_ms=350.0,
    )
    telemetry.attach(recorder)
    PrometheusMetrics(budget, registry=registry).attach(recorder)
    recorded(clock, recorder)
    with recorder.turn(call="c") as turn:
        turn.mark("speech_end")
        turn.mark("first_audio", at_ms=100.0)
    recorder.turn().end(ValueError("x"))
    from voicebudget import GuardDecision

    telemetry.record_decision(GuardDecision("llm", 700.0, 200.0, 100.0, 500.0, -400.0, 0.1, False, 80))

    names: set[str] = set()
    data = otel.reader.get_metrics_data()
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                names.add(m.name)
                names.add(m.unit)
                names.update(k for p in m.data.data_points for k in p.attributes)
    for span in otel.spans.get_finished_spans():
        names.update(re.sub(r"^voicebudget\.stage\.[^.]+\.", "voicebudget.stage.<stage>.", k) for k in span.attributes)
        names.update(e.name for e in span.events)
    for record in otel.logs.get_finished_logs():
        names.add(record.log_record.event_name)
        names.update(record.log_record.attributes)
    for family in registry.collect():
        names.add(family.name if family.type != "counter" else family.name + "_total")
        names.update(k for s in family.samples for k in s.labels if k != "le")
    missing = sorted(n for n in names if f"`{n}`" not in doc)
    assert not missing, f"docs/telemetry.md does not list {missing}"
    assert "voicebudget.stage.<stage>.duration" in names
    assert "voicebudget.event.p_fit" in names
