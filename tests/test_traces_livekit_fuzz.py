"""Property-based fuzzing of the LiveKit and OTel readers (issue 11: 153 of ~800 generated OTLP/LiveKit
documents hung before): whatever the document, a reader returns a table or raises ScenarioError, in
bounded time, and keeps the anomaly contract. Fixed seed (``derandomize``), bounded example counts."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from voicebudget import ScenarioError
from voicebudget.traces import check, read_livekit, read_livekit_history, read_otel
from voicebudget.traces._table import TraceTable

FUZZ = settings(max_examples=150, derandomize=True, deadline=2000, suppress_health_check=[HealthCheck.too_slow])

ids = st.one_of(
    st.sampled_from(["a", "b", "c", "", "d"]), st.integers(0, 3), st.none(), st.lists(st.just("a"), max_size=1)
)
leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.text(max_size=8),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["[/x]", "1e999", "-1"]),
)
anyvalue = st.one_of(
    leaf,
    st.fixed_dictionaries({"doubleValue": leaf}),
    st.fixed_dictionaries({"intValue": leaf}),
    st.fixed_dictionaries({"stringValue": leaf}),
    st.fixed_dictionaries(
        {
            "arrayValue": st.one_of(
                leaf,
                st.fixed_dictionaries(
                    {"values": st.lists(st.one_of(leaf, st.just({"doubleValue": "Infinity"})), max_size=2)}
                ),
            )
        }
    ),
)
keys = st.sampled_from(
    [
        "lk.e2e_latency",
        "lk.end_of_turn_delay",
        "lk.transcription_delay",
        "lk.response.ttft",
        "lk.response.ttfb",
        "lk.speech_id",
        "lk.llm_metrics",
        "turn.user_bot_latency_seconds",
        "metrics.ttfb",
        "x",
    ]
)
attributes = st.one_of(
    st.dictionaries(keys, anyvalue, max_size=4),
    st.lists(st.one_of(st.fixed_dictionaries({"key": keys, "value": anyvalue}), leaf), max_size=4),
    leaf,
)
span = st.fixed_dictionaries(
    {
        "name": st.one_of(st.sampled_from(["agent_turn", "user_turn", "llm_node", "tts_node", "turn", "llm"]), leaf),
        "spanId": ids,
        "parentSpanId": ids,
        "traceId": st.sampled_from(["t", "u", ""]),
        "startTimeUnixNano": st.one_of(leaf, st.integers(0, 10**19).map(str)),
        "attributes": attributes,
    }
)
document = st.one_of(
    st.lists(span, max_size=6),
    st.lists(span, max_size=6).map(lambda s: {"resourceSpans": [{"scopeSpans": [{"spans": s}]}]}),
    st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(st.sampled_from(["resourceSpans", "scopeSpans", "spans", "spanId"]), inner, max_size=3),
        ),
        max_leaves=10,
    ),
)


def _dumps(doc: Any) -> str:
    return json.dumps(doc, allow_nan=True, default=str)


def _contract(table: TraceTable) -> None:
    for a in table.anomalies:
        assert isinstance(a.line, int)
        assert a.line >= 0
        assert isinstance(a.field, str)
        assert isinstance(a.reason, str)
        assert a.reason
        json.dumps(a.to_dict(), allow_nan=False)  # a JSON document can always be written
    ids_flagged = {a.turn for a in table.anomalies}
    for t in table.turns:
        assert t.flagged == (t.id in ids_flagged)
        assert t.total_ms is None or math.isfinite(t.total_ms)
    try:
        check([table])
    except ScenarioError:
        pass


def _read(reader: Any, text: str) -> None:
    try:
        table = reader(text, "fuzz")
    except ScenarioError:
        return
    _contract(table)


@FUZZ
@given(document, st.booleans())
def test_otel_reader_never_crashes_or_hangs(doc: Any, lines: bool) -> None:
    text = _dumps(doc)
    if lines and isinstance(doc, list):
        text = "\n".join(_dumps({"resourceSpans": [{"scopeSpans": [{"spans": [s]}]}]}) for s in doc)
    _read(read_otel, text)


metric_line = st.fixed_dictionaries(
    {
        "type": st.one_of(
            st.sampled_from(["eou_metrics", "llm_metrics", "tts_metrics", "realtime_model_metrics", "vad_metrics"]),
            leaf,
            st.lists(leaf, max_size=1),
        ),
        "speech_id": st.one_of(st.sampled_from(["s1", "s2", "[/x]"]), leaf),
        "request_id": st.one_of(st.sampled_from(["r1", "r2"]), leaf),
        "end_of_utterance_delay": leaf,
        "transcription_delay": leaf,
        "ttft": leaf,
        "ttfb": leaf,
        "connection_reused": leaf,
        "acquire_time": leaf,
    }
)


@FUZZ
@given(
    st.lists(metric_line, max_size=8),
    st.lists(st.tuples(st.integers(0, 7), st.integers(0, 200)), max_size=3),
    st.booleans(),
)
def test_livekit_reader_never_crashes(lines: list[dict[str, Any]], cuts: list[tuple[int, int]], printed: bool) -> None:
    raw = [_dumps(x) for x in lines]
    if printed:  # as pydantic prints them
        raw = [" ".join(f"{k}={v!r}" for k, v in x.items()) for x in lines]
    for i, at in cuts:  # lines cut short
        if i < len(raw):
            raw[i] = raw[i][:at]
    _read(read_livekit, "\n".join(raw))


message = st.fixed_dictionaries(
    {
        "id": st.one_of(st.text(max_size=4), leaf),
        "role": st.sampled_from(["user", "assistant", "system", 3]),
        "metrics": st.one_of(
            leaf,
            st.dictionaries(
                st.sampled_from(
                    [
                        "end_of_turn_delay",
                        "transcription_delay",
                        "llm_node_ttft",
                        "tts_node_ttfb",
                        "e2e_latency",
                        "started_speaking_at",
                        "stopped_speaking_at",
                    ]
                ),
                leaf,
                max_size=5,
            ),
        ),
    }
)


@FUZZ
@given(st.lists(message, max_size=6), st.booleans())
def test_livekit_history_reader_never_crashes(items: list[dict[str, Any]], per_line: bool) -> None:
    text = "\n".join(_dumps({"item": i}) for i in items) if per_line else _dumps({"items": items})
    _read(read_livekit_history, text)
