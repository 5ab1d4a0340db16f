"""LiveKit and OTel readers on hostile and broken input (issue 11) and the anomalies that say what is
wrong (issue 10): span-tree cycles, node types, stale values, disagreeing totals, JSON with no usable
turn, rich markup in trace strings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from voicebudget import ScenarioError
from voicebudget.cli import app
from voicebudget.traces import NoUsableTurnsError, check, read_trace

CASES = Path(__file__).parent / "data" / "traces" / "cases"
runner = CliRunner()


def _span(sid: object, parent: object, name: str = "llm_node", **attrs: float) -> dict[str, object]:
    return {
        "name": name,
        "traceId": "t",
        "spanId": sid,
        "parentSpanId": parent,
        "attributes": {k.replace("_", "."): v for k, v in attrs.items()},
    }


def _turn(sid: object, parent: object = "") -> dict[str, object]:
    return {
        "name": "agent_turn",
        "traceId": "t",
        "spanId": sid,
        "parentSpanId": parent,
        "attributes": {"lk.e2e_latency": 1.2, "lk.end_of_turn_delay": 0.5, "lk.speech_id": "s1"},
    }


@pytest.mark.parametrize(
    "spans",
    [
        [_turn("a", "b"), _span("b", "a", **{"lk_response_ttft": 0.3, "lk_response_ttfb": 0.1})],  # a -> b -> a
        [
            _turn("a"),
            _span("b", "c", lk_response_ttft=0.3),
            _span("c", "b", lk_response_ttfb=0.1),
            _span("d", "a"),
            _span("d", "d"),
        ],  # a loop below the turn, a self-parent
        [_turn(""), _span("", "", lk_response_ttft=0.3)],  # empty ids: no span is anyone's child
        [_turn(5, 5), _span([1], 5), _span({"x": 1}, None)],  # ids that are not strings
    ],
    ids=["two-span-loop", "loop-below-the-turn", "empty-ids", "non-string-ids"],
)
def test_span_tree_cycles_and_bad_ids_end(spans: list[dict[str, object]], tmp_path: Path) -> None:
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(spans))
    table = read_trace(path)  # returns: no endless walk
    assert len(table.turns) == 1
    assert table.turns[0].flagged or table.turns[0].stages_ms.get("llm_ttft") == pytest.approx(300.0)
    result = runner.invoke(app, ["check", str(path), "-f", "json"])
    assert result.exit_code in (1, 2), result.output
    assert "Traceback" not in result.output


def test_a_two_span_loop_is_named() -> None:
    path = CASES / "otel-span-is-own-parent" / "spans.json"
    (anomaly,) = [a for a in read_trace(path).anomalies if a.field == "parentSpanId"]
    assert "cycle" in anomaly.reason


def test_otel_node_of_the_wrong_type_exits_2_naming_its_path(tmp_path: Path) -> None:
    for doc, where in (
        ({"resourceSpans": [1]}, "resourceSpans[0]"),
        ({"resourceSpans": [{"scopeSpans": "x"}]}, "resourceSpans[0].scopeSpans"),
        ({"resourceSpans": [{"scopeSpans": [{"spans": [True]}]}]}, "scopeSpans[0].spans[0]"),
    ):
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(doc))
        with pytest.raises(ScenarioError, match=r"not an OTLP JSON span export") as err:
            read_trace(path, "otel")
        assert where in str(err.value)
        result = runner.invoke(app, ["check", str(path)])
        assert result.exit_code == 2
        assert where in result.output


def test_list_typed_and_huge_values_are_flagged_not_crashes(tmp_path: Path) -> None:
    big = "9" * 5000
    lines = [
        '{"type": "eou_metrics", "speech_id": "s", "end_of_utterance_delay": 0.5}',
        '{"type": "llm_metrics", "speech_id": "s", "ttft": [0.4]}',
        '{"type": "tts_metrics", "speech_id": "s", "ttfb": ' + big + "}",
        '{"type": "eou_metrics", "speech_id": ["s2"], "end_of_utterance_delay": 0.5}',
    ]
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(lines) + "\n")
    found = {(a.line, a.field): a.reason for a in read_trace(path).anomalies}
    assert found[(2, "ttft")] == "not a number"
    assert "4,300 digits" in found[(3, "ttfb")]
    assert "without a speech_id" in found[(4, "speech_id")]
    spans = tmp_path / "s.json"
    spans.write_text(
        '[{"name": "agent_turn", "spanId": "a", "startTimeUnixNano": '
        + big
        + ', "attributes": {"lk.e2e_latency": [1], "lk.speech_id": {"stringValue": 3}}}]'
    )
    result = runner.invoke(app, ["check", str(spans), "-f", "json"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_unicode_line_separators_do_not_split_livekit_lines(tmp_path: Path) -> None:
    label = "openai\u2028gpt\u0085x\x0c"
    lines = [
        '{"type": "eou_metrics", "speech_id": "s", "end_of_utterance_delay": 0.5}',
        json.dumps({"type": "llm_metrics", "label": label, "speech_id": "s", "ttft": 0.4}, ensure_ascii=False),
        '{"type": "tts_metrics", "speech_id": "s", "ttfb": 0.1}',
    ]
    path = tmp_path / "m.jsonl"
    path.write_text("\ufeff" + "\r\n".join(lines) + "\r\n", encoding="utf-8")
    table = read_trace(path)
    assert table.anomalies == ()
    assert table.turns[0].total_ms == pytest.approx(1000.0)
    assert table.turns[0].line == 1


def test_a_ttfb_repeated_to_the_last_digit_on_every_turn_is_stale(tmp_path: Path) -> None:
    lines = []
    for i, (eou, ttft) in enumerate([(0.5, 0.41), (0.62, 0.38), (0.55, 0.52)]):
        lines += [
            f'{{"type": "eou_metrics", "speech_id": "s{i}", "end_of_utterance_delay": {eou}}}',
            f'{{"type": "llm_metrics", "speech_id": "s{i}", "ttft": {ttft}}}',
            f'{{"type": "tts_metrics", "speech_id": "s{i}", "ttfb": 0.2134567}}',
        ]
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(lines) + "\n")
    table = read_trace(path)
    assert [(a.line, a.field) for a in table.anomalies] == [(3, "ttfb"), (6, "ttfb"), (9, "ttfb")]
    assert "stale" in table.anomalies[0].reason
    assert "llm" not in {a.field for a in table.anomalies}
    # two decimals repeated on three turns can be chance: not flagged
    path.write_text("\n".join(lines).replace("0.2134567", "0.21") + "\n")
    assert read_trace(path).anomalies == ()


def test_otel_stale_ttfb_and_e2e_below_the_stages(tmp_path: Path) -> None:
    spans = []
    for i in range(3):
        spans += [
            {
                "name": "agent_turn",
                "traceId": "t",
                "spanId": f"a{i}",
                "startTimeUnixNano": str(10**9 * (10 + i)),
                "attributes": {
                    "lk.speech_id": f"s{i}",
                    "lk.e2e_latency": 1.0 if i else 0.5,
                    "lk.end_of_turn_delay": 0.4,
                },
            },
            {
                "name": "tts_node",
                "traceId": "t",
                "spanId": f"b{i}",
                "parentSpanId": f"a{i}",
                "attributes": {"lk.response.ttfb": 0.1876543},
            },
            {
                "name": "llm_node",
                "traceId": "t",
                "spanId": f"c{i}",
                "parentSpanId": f"a{i}",
                "attributes": {"lk.response.ttft": 0.3 + i / 100},
            },
        ]
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(spans, indent=1))
    table = read_trace(path)
    reasons = [(a.turn, a.field, a.reason) for a in table.anomalies]
    assert sum("stale" in r for _, f, r in reasons if f == "lk.response.ttfb") == 3
    (below,) = [r for t, f, r in reasons if f == "lk.e2e_latency"]
    assert below.startswith("total 500.0 ms is less than the sum of its stages 887.7 ms")


def test_history_e2e_latency_disagreeing_with_the_timestamps_takes_the_larger(tmp_path: Path) -> None:
    """Both figures start at the user's stop: the larger one is the turn's total, with a note (issue 20 kind 4),
    not a flag that throws the turn away."""
    items = [
        {
            "id": "u",
            "type": "message",
            "role": "user",
            "content": ["q"],
            "metrics": {"started_speaking_at": 10.0, "stopped_speaking_at": 12.0, "end_of_turn_delay": 0.5},
        },
        {
            "id": "a",
            "type": "message",
            "role": "assistant",
            "content": ["r"],
            "metrics": {"started_speaking_at": 13.4, "llm_node_ttft": 0.4, "tts_node_ttfb": 0.2, "e2e_latency": 1.2},
        },
    ]
    path = tmp_path / "h.json"
    path.write_text(json.dumps({"items": items}))
    table = read_trace(path)
    assert table.anomalies == ()
    (turn,) = table.turns
    assert not turn.flagged
    assert turn.total_ms == pytest.approx(1400.0)  # the timestamps: 13.4 - 12.0
    assert turn.framework_total_ms == pytest.approx(1200.0)
    (note,) = turn.notes
    assert "e2e_latency 1200.0 ms and the speaking timestamps" in note
    assert "= 1400.0 ms) disagree by 200.0 ms" in note
    items[1]["metrics"]["e2e_latency"] = 1.4  # type: ignore[index]
    path.write_text(json.dumps({"items": items}))
    table = read_trace(path)
    assert table.anomalies == ()
    assert table.turns[0].notes == ()
    assert table.turns[0].total_ms == pytest.approx(1400.0)


def test_json_document_with_anomalies_when_no_turn_is_usable() -> None:
    path = CASES / "livekit-missing-tts" / "metrics.jsonl"
    result = runner.invoke(app, ["check", str(path), "--format", "json"])
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert doc["variants"] == []
    assert [t["included"] for t in doc["turns"]] == [False, False, False]
    assert [(a["field"], a["turn"]) for a in doc["anomalies"]] == [
        ("tts_metrics", "speech_00ab12cd"),
        ("tts_metrics", "speech_01ab12cd"),
        ("tts_metrics", "speech_02ab12cd"),
    ]
    assert "no tts_metrics line for speech_id speech_00ab12cd" in result.stderr
    table = runner.invoke(app, ["check", str(path)])
    assert table.exit_code == 2
    assert "speech_01ab12cd" in table.stdout  # the anomaly table is shown before the refusal
    with pytest.raises(NoUsableTurnsError) as err:
        check([read_trace(path)])
    assert err.value.to_dict()["anomalies"][0]["reason"].startswith("no tts_metrics line for speech_id")


def test_rich_markup_in_trace_strings_is_printed_literally(tmp_path: Path) -> None:
    link = "[link=https://example.com]click[/link]"
    lines = [
        '{"type": "eou_metrics", "speech_id": "[/x]", "end_of_utterance_delay": 0.5}',
        '{"type": "llm_metrics", "speech_id": "[/x]", "ttft": 0.4}',
        '{"type": "tts_metrics", "speech_id": "[/x]", "ttfb": 0.1}',
        json.dumps({"type": "eou_metrics", "speech_id": link, "end_of_utterance_delay": 0.3}),
        json.dumps({"type": "llm_metrics", "speech_id": link, "ttft": -1}),
        json.dumps({"type": "tts_metrics", "speech_id": "[bold red]", "error": "[/]boom", "ttfb": 0.1}),
    ]
    path = tmp_path / "[red]calls[bold].jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = runner.invoke(app, ["check", str(path)])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    # each piece is in a table cell or the anomaly reason that names the speech id (cells may be cut)
    for literal in ("[/x]", "[link=", "[/link", "[bold", "[/]boom", "[red]calls"):
        assert literal in result.output, literal


def test_a_flagged_value_holding_infinity_still_gives_a_json_document(tmp_path: Path) -> None:
    spans = [
        {
            "name": "agent_turn",
            "spanId": "a",
            "attributes": [
                {"key": "lk.e2e_latency", "value": {"arrayValue": {"values": [{"doubleValue": "Infinity"}]}}}
            ],
        }
    ]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(spans))
    result = runner.invoke(app, ["check", str(path), "-f", "json"])
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    (anomaly,) = [a for a in doc["anomalies"] if a["field"] == "lk.e2e_latency"]
    assert anomaly == {
        "line": 1,
        "field": "lk.e2e_latency",
        "value": "[inf]",
        "reason": "not a number",
        "file": str(path),
        "turn": "a",
    }


def test_avatar_metrics_in_a_console_log_go_on_the_turn_they_follow(tmp_path: Path) -> None:
    """`python agent.py console` prints whole seconds (no time to place by): log_metrics()' 'Avatar metrics'
    line belongs to the turn it follows; the avatar's join (no playback latency) to none."""
    lines = [
        '16:59:52 INFO livekit.agents Avatar metrics {"model_provider": "tavus", "avatar_join_latency": 2.25}',
        '17:00:00 INFO livekit.agents EOU metrics {"end_of_utterance_delay": 0.5, "transcription_delay": 0.3}',
        '17:00:01 INFO livekit.agents LLM metrics {"ttft": 0.38, "completion_tokens": 32, "tokens_per_second": 33.68}',
        '17:00:01 INFO livekit.agents TTS metrics {"ttfb": 0.17, "audio_duration": 2.6}',
        '17:00:04 INFO livekit.agents Avatar metrics {"model_provider": "tavus", "playback_latency": 0.185}',
        '17:00:20 INFO livekit.agents EOU metrics {"end_of_utterance_delay": 0.62, "transcription_delay": 0.3}',
        '17:00:21 INFO livekit.agents LLM metrics {"ttft": 0.44, "completion_tokens": 32, "tokens_per_second": 33.68}',
        '17:00:21 INFO livekit.agents TTS metrics {"ttfb": 0.21, "audio_duration": 2.6}',
    ]
    path = tmp_path / "console.log"
    path.write_text("\n".join(lines) + "\n")
    turns = read_trace(path).turns
    assert [t.total_ms for t in turns] == pytest.approx([1235.0, 1270.0])
    assert turns[0].stages_ms["output"] == pytest.approx(185.0)
    assert "output" not in turns[1].stages_ms
