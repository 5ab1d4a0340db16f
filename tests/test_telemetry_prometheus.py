"""Prometheus out: the histograms and counters in a registry, and the endpoint scraped over HTTP on
localhost while a real Pipecat pipeline runs, parsed with prometheus_client's own parser."""

from __future__ import annotations

import asyncio
import urllib.request
from typing import Any

import numpy as np
import pytest

prometheus_client = pytest.importorskip("prometheus_client", reason="the prometheus extra is not installed")

from fake_clock import FakeClock  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from voicebudget import Budget, PrometheusMetrics, TurnRecorder  # noqa: E402
from voicebudget.telemetry import TURN_BUCKETS_S, start_http_server, stop_http_server  # noqa: E402


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """(sample name, sorted labels) -> value, from the text exposition."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:  # noqa: S310
        return str(response.read().decode("utf-8"))


def bucket(values: dict[Any, float], agent: str, stage: str, le: str) -> float:
    return values[("voicebudget_turn_seconds_bucket", (("agent", agent), ("le", le), ("stage", stage)))]


def test_turns_and_events_in_the_registry_exactly() -> None:
    registry = prometheus_client.CollectorRegistry()
    clock = FakeClock()
    recorder = TurnRecorder("agent", clock=clock)
    PrometheusMetrics(Budget(total_ms=800, stages={"llm": 500}), registry=registry, warning_ms=350.0).attach(recorder)
    with recorder.turn() as turn:  # 950 ms: llm 700 ms (over its 500 ms), untracked 50 ms
        turn.mark("speech_end")
        turn.add_stage("asr", start_ms=0.0, end_ms=200.0)
        turn.add_stage("llm", start_ms=200.0, end_ms=900.0)
        turn.mark("first_audio", at_ms=950.0)
    with recorder.turn() as turn:  # 400 ms: past the 350 ms warning
        turn.mark("speech_end")
        turn.add_stage("llm", start_ms=0.0, end_ms=400.0)
        turn.mark("first_audio", at_ms=400.0)
    with recorder.turn():  # no audio
        pass
    values = samples(prometheus_client.generate_latest(registry).decode())
    total = "voice_to_voice"
    assert values[("voicebudget_turn_seconds_count", (("agent", "agent"), ("stage", total)))] == 2
    assert values[("voicebudget_turn_seconds_sum", (("agent", "agent"), ("stage", total)))] == pytest.approx(1.35)
    assert bucket(values, "agent", total, "0.4") == 1  # cumulative: le="0.4" holds the 400 ms turn
    assert bucket(values, "agent", total, "0.8") == 1
    assert bucket(values, "agent", total, "1.0") == 2
    assert bucket(values, "agent", total, "+Inf") == 2
    assert bucket(values, "agent", "llm", "0.4") == 1
    assert bucket(values, "agent", "llm", "0.7") == 2
    assert values[("voicebudget_turn_seconds_count", (("agent", "agent"), ("stage", "asr")))] == 1
    turns = {k[1]: v for k, v in values.items() if k[0] == "voicebudget_turns_total"}
    assert turns == {
        (("agent", "agent"), ("status", "complete"), ("tail_driver", "llm"), ("verdict", "over")): 1,
        (("agent", "agent"), ("status", "complete"), ("tail_driver", "llm"), ("verdict", "within")): 1,
        (("agent", "agent"), ("status", "incomplete"), ("tail_driver", ""), ("verdict", "")): 1,
    }
    events = {k[1]: v for k, v in values.items() if k[0] == "voicebudget_budget_events_total"}
    assert events == {
        (("agent", "agent"), ("level", "exceeded"), ("source", "turn")): 1,
        (("agent", "agent"), ("level", "exceeded"), ("source", "stage")): 1,
        (("agent", "agent"), ("level", "warning"), ("source", "turn")): 1,
    }
    le = [float(k[1][1][1]) for k in values if k[0] == "voicebudget_turn_seconds_bucket" and k[1][2][1] == total]
    assert le == [*TURN_BUCKETS_S, float("inf")]


def test_two_metrics_in_one_registry_are_refused_with_the_way_out() -> None:
    registry = prometheus_client.CollectorRegistry()
    PrometheusMetrics(registry=registry)
    with pytest.raises(ValueError, match=r"already holds voicebudget's metrics .*share one PrometheusMetrics"):
        PrometheusMetrics(registry=registry)


def test_stopping_a_server_frees_its_port_and_an_unknown_port_is_named() -> None:
    registry = prometheus_client.CollectorRegistry()
    port = start_http_server(0, registry=registry)
    assert port > 0
    assert scrape(port) == ""  # an empty registry
    stop_http_server(port)
    with pytest.raises(KeyError, match=rf"no metrics server started on port {port}"):
        stop_http_server(port)


def test_endpoint_scraped_over_http_while_a_real_pipecat_pipeline_runs() -> None:
    pytest.importorskip("pipecat", reason="the pipecat extra is not installed")
    from voicebudget.integrations.pipecat import BudgetObserver
    from voicebudget.testing import TurnScript
    from voicebudget.testing.pipecat import run_conversation

    registry = prometheus_client.CollectorRegistry()
    observer = BudgetObserver(Budget(total_ms=800), prometheus=PrometheusMetrics(registry=registry))
    port = start_http_server(0, registry=registry)
    counted: list[float] = []
    key = ("voicebudget_turn_seconds_count", (("agent", "pipecat"), ("stage", "voice_to_voice")))

    async def after_turn(i: int) -> None:
        # the observer closes a turn at BotStartedSpeakingFrame in Pipecat's observer task: scrape until it shows
        for _ in range(200):
            text = await asyncio.to_thread(scrape, port)
            n = samples(text).get(key, 0.0)
            if n == i + 1:
                break
            await asyncio.sleep(0.01)
        assert "voicebudget_turn_seconds_bucket{" in text
        counted.append(n)

    scripts = [
        TurnScript(speech_ms=50.0),
        TurnScript(speech_ms=50.0, llm_ms=400.0, tts_ms=90.0),
        TurnScript(speech_ms=50.0, llm_ms=120.0, reasoning_ms=200.0),
    ]
    try:
        asyncio.run(run_conversation(scripts, [observer], after_turn=after_turn))
        final = samples(scrape(port))
    finally:
        stop_http_server(port)
    assert counted == [1, 2, 3]  # each turn was on the endpoint while the pipeline ran
    report = observer.report()
    assert report.measured is not None
    series = {"voice_to_voice": report.measured.total_ms, **report.measured.stages_ms}
    for stage, values_ms in series.items():
        values_s = values_ms[~np.isnan(values_ms)] / 1000
        if not values_s.size:
            continue
        labels = (("agent", "pipecat"), ("stage", stage))
        assert final[("voicebudget_turn_seconds_count", labels)] == values_s.size
        assert final[("voicebudget_turn_seconds_sum", labels)] == pytest.approx(values_s.sum(), abs=1e-9)
        for le in TURN_BUCKETS_S:
            assert bucket(final, "pipecat", stage, str(le)) == np.sum(values_s <= le), (stage, le)
