"""Log shippers' layers (journald, Docker, CRI, cloud exports, ...) are stripped before format detection:
the same Pipecat log and LiveKit log_metrics() lines read the same turns under every layer, one entry each
in WRAPPERS, nested layers too; files without a layer are left alone."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from voicebudget import ScenarioError
from voicebudget.traces import DOCUMENTS, WRAPPERS, detect_format, read_trace
from voicebudget.traces._wrappers import detect_wrappers, unwrap_lines

CASES = Path(__file__).parent / "data" / "traces" / "cases"
PIPECAT = (CASES / "pipecat-tts-to-bot-audio-gap" / "pipecat.log").read_text().splitlines()
LIVEKIT = (CASES / "livekit-log-metrics-json" / "agent.jsonl").read_text().splitlines()


def _docker(line: str) -> str:
    return json.dumps({"log": line + "\n", "stream": "stderr", "time": "2025-06-10T03:42:25.476123456Z"})


LAYERS: dict[str, Callable[[str], str]] = {
    "docker-json": _docker,
    "journald-json": lambda x: json.dumps(
        {"__REALTIME_TIMESTAMP": "1749526945476123", "MESSAGE": x, "_SYSTEMD_UNIT": "bot.service"}
    ),
    "gcp-logging": lambda x: json.dumps(
        {"textPayload": x, "timestamp": "2025-06-10T03:42:25.476Z", "logName": "projects/p/logs/run", "insertId": "1"}
    ),
    "cloudwatch-json": lambda x: json.dumps(
        {"timestamp": 1749526945476, "message": x, "ingestionTime": 1749526945500, "logStreamName": "bot/1"}
    ),
    "loki-logcli": lambda x: json.dumps(
        {"labels": {"app": "bot"}, "line": x, "timestamp": "2025-06-10T03:42:25.476123456Z"}
    ),
    "filebeat-ecs": lambda x: json.dumps(
        {
            "@timestamp": "2025-06-10T03:42:25.476Z",
            "log": {"offset": 120, "file": {"path": "/var/log/bot/bot.log"}},
            "message": x,
            "input": {"type": "filestream"},
            "ecs": {"version": "8.0.0"},
            "host": {"name": "ip-172-31-28-34"},
            "agent": {"type": "filebeat", "version": "8.17.0"},
        }
    ),
    "datadog-archive": lambda x: json.dumps(
        {
            "_id": "AZ3kx",
            "date": "2025-06-10T03:42:25.476Z",
            "host": "bot-1",
            "service": "bot",
            "status": "info",
            "message": x,
            "attributes": {},
            "tags": ["env:prod"],
        }
    ),
    "fluent-bit": lambda x: f"tail.0: [1749526945.476123000, {json.dumps({'log': x})}]",
    "cri": lambda x: f"2025-06-10T03:42:25.476123456Z stdout F {x}",
    "journald": lambda x: f"Jun 10 03:42:25 ip-172-31-28-34 python3.10[1549]: {x}",
    "journald-iso": lambda x: f"2025-06-10T03:42:25+0000 ip-172-31-28-34 bot[1549]: {x}",
    "syslog-5424": lambda x: f"<134>1 2025-06-10T03:42:25.476Z host bot 1549 - - {x}",
    "heroku": lambda x: f"2025-06-10T03:42:25.476123+00:00 app[web.1]: {x}",
    "aws-logs-tail": lambda x: f"2025-06-10T03:42:25.476000+00:00 bot/prod/abc123 {x}",
    "timestamps": lambda x: f"2025-06-10T03:42:25.476123456Z {x}",
}


def test_every_wrapper_has_a_test() -> None:
    assert {w.name for w in WRAPPERS} == set(LAYERS)
    assert all(w.description and w.source for w in WRAPPERS)


@pytest.mark.parametrize("name", list(LAYERS))
def test_pipecat_log_under_each_layer_reads_the_same_turn(name: str, tmp_path: Path) -> None:
    path = tmp_path / "shipped.log"
    path.write_text("\n".join(LAYERS[name](x) for x in PIPECAT) + "\n")
    table = read_trace(path)
    assert table.wrappers == (name,)
    assert [t.total_ms for t in table.turns] == pytest.approx([1498.0])  # the handed case's right answer
    assert table.anomalies == ()


@pytest.mark.parametrize(
    "name", ["docker-json", "gcp-logging", "cri", "journald", "timestamps", "loki-logcli", "filebeat-ecs", "fluent-bit"]
)
def test_livekit_log_metrics_under_a_layer(name: str, tmp_path: Path) -> None:
    path = tmp_path / "shipped.log"
    path.write_text("\n".join(LAYERS[name](x) for x in LIVEKIT) + "\n")
    table = read_trace(path)
    assert table.format == "livekit"
    assert [t.total_ms for t in table.turns] == pytest.approx([1410.0, 1220.0, 2260.0])


def test_gcp_json_payload_is_the_livekit_record(tmp_path: Path) -> None:
    """Cloud Run parses a JSON log line into jsonPayload: the record's fields come back as one JSON line."""
    path = tmp_path / "export.jsonl"
    rows = [{"jsonPayload": json.loads(x), "timestamp": "2026-12-01T15:48:20Z", "logName": "l"} for x in LIVEKIT]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [t.total_ms for t in read_trace(path).turns] == pytest.approx([1410.0, 1220.0, 2260.0])


def test_datadog_attributes_are_the_livekit_record(tmp_path: Path) -> None:
    """Datadog parses a JSON line into its message and attributes (the record's time becomes the log's
    date): the record comes back as one JSON line."""
    rows = []
    for i, x in enumerate(LIVEKIT):
        record = json.loads(x)
        date, message = record.pop("timestamp"), record.pop("message")
        rows.append({"_id": f"id{i}", "date": date, "message": message, "attributes": record, "status": "info"})
    path = tmp_path / "archive.json"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = read_trace(path)
    assert table.wrappers == ("datadog-archive",)
    assert [t.total_ms for t in table.turns] == pytest.approx([1410.0, 1220.0, 2260.0])


def test_logcli_newest_first_is_read_in_reverse(tmp_path: Path) -> None:
    """logcli scans backwards unless --forward: the lines come newest first; each keeps its file line."""
    rows = [
        json.dumps({"labels": {"app": "bot"}, "line": x, "timestamp": f"2025-06-10T03:42:{i // 10:02d}.{i % 10}Z"})
        for i, x in enumerate(PIPECAT)
    ][::-1]
    path = tmp_path / "logcli.jsonl"
    path.write_text("\n".join(rows) + "\n")
    table = read_trace(path)
    assert table.wrappers == ("loki-logcli",)
    assert [t.total_ms for t in table.turns] == pytest.approx([1498.0])
    assert table.turns[0].line == len(PIPECAT) - next(i for i, x in enumerate(PIPECAT) if "stopped speaking" in x)


def _gcloud(lines: list[str]) -> str:
    entries = [
        {
            "insertId": f"i{i}",
            "logName": "projects/p/logs/run.googleapis.com%2Fstdout",
            "receiveTimestamp": f"2025-06-10T03:42:{i:02d}.9Z",
            "resource": {"type": "cloud_run_revision", "labels": {"service_name": "bot"}},
            "textPayload": x,
            "timestamp": f"2025-06-10T03:42:{i:02d}.5Z",
        }
        for i, x in enumerate(lines)
    ]
    return json.dumps(entries[::-1], indent=2)  # gcloud logging read: newest first, pretty-printed


def _aws(lines: list[str]) -> str:
    events = [
        {"logStreamName": "bot/1", "timestamp": 1749526945000 + i, "message": x, "ingestionTime": 1749526946000 + i}
        for i, x in enumerate(lines)
    ]
    return json.dumps({"events": events, "searchedLogStreams": [{"logStreamName": "bot/1"}]}, indent=4)


def _datadog_api(lines: list[str]) -> str:
    data = [
        {
            "id": f"A{i}",
            "type": "log",
            "attributes": {
                "timestamp": f"2025-06-10T03:42:{i:02d}.000Z",
                "message": x,
                "attributes": {},
                "host": "bot-1",
                "service": "bot",
                "status": "info",
                "tags": ["env:prod"],
            },
        }
        for i, x in enumerate(lines)
    ]
    return json.dumps({"data": data[::-1], "links": {}, "meta": {"status": "done"}})


DOCUMENT_SHAPES: dict[str, Callable[[list[str]], str]] = {
    "gcloud-json": _gcloud,
    "aws-log-events": _aws,
    "datadog-logs-api": _datadog_api,
}


def test_every_document_has_a_test() -> None:
    assert {d.name for d in DOCUMENTS} == set(DOCUMENT_SHAPES)
    assert all(d.description and d.source for d in DOCUMENTS)


@pytest.mark.parametrize("name", list(DOCUMENT_SHAPES))
def test_whole_document_exports_read_the_same_turns(name: str, tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text(DOCUMENT_SHAPES[name](PIPECAT))
    assert detect_format(path.read_text()) == "pipecat"
    table = read_trace(path)
    assert table.wrappers == (name,)
    assert [t.total_ms for t in table.turns] == pytest.approx([1498.0])
    path.write_text(DOCUMENT_SHAPES[name](LIVEKIT))
    assert [t.total_ms for t in read_trace(path).turns] == pytest.approx([1410.0, 1220.0, 2260.0])


def test_a_cut_document_export_is_named(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text(_gcloud(PIPECAT)[:-40])
    with pytest.raises(ScenarioError, match="gcloud-json export .* is not valid JSON"):
        read_trace(path)


def test_nested_layers_docker_around_journald(tmp_path: Path) -> None:
    path = tmp_path / "nested.log"
    path.write_text("\n".join(_docker(LAYERS["journald"](x)) for x in PIPECAT) + "\n")
    table = read_trace(path)
    assert table.wrappers == ("docker-json", "journald")
    assert [t.total_ms for t in table.turns] == pytest.approx([1498.0])


def test_partial_chunks_are_joined_on_the_first_chunk_line() -> None:
    """Docker splits a line over 16 KiB into chunks without the "\\n"; CRI marks them P."""
    line = "2025-06-10 03:42:25.476 | DEBUG    | pipecat.transports.base_input:x:1 - User stopped speaking"
    docker = [
        json.dumps({"log": line[:30], "stream": "stdout", "time": "t"}),
        json.dumps({"log": line[30:] + "\n", "stream": "stdout", "time": "t"}),
        "-- not wrapped --",
    ]
    wrappers = detect_wrappers("\n".join(docker[:2]) + "\n")
    assert [w.name for w in wrappers] == ["docker-json"]
    assert list(unwrap_lines(enumerate(docker, start=1), wrappers)) == [(1, line), (2, ""), (3, "-- not wrapped --")]
    cri = [f"2025-06-10T03:42:25.1Z stdout P {line[:30]}", f"2025-06-10T03:42:25.2Z stdout F {line[30:]}"]
    wrappers = detect_wrappers("\n".join(cri) + "\n")
    assert [w.name for w in wrappers] == ["cri"]
    assert list(unwrap_lines(enumerate(cri, start=1), wrappers)) == [(1, line), (2, "")]


@pytest.mark.parametrize(
    "sample",
    [
        "pipecat.log",
        "livekit-metrics.jsonl",
        "otel-spans.json",
        "livekit-history.json",
        "cases/pipecat-iso-format/pipecat-iso-format.log",
        "cases/livekit-log-metrics-json/agent.jsonl",
        "cases/livekit-otel-user-turn-sibling/spans.jsonl",
    ],
)
def test_framework_files_have_no_layer(sample: str) -> None:
    text = (Path(__file__).parent / "data" / "traces" / sample).read_text()
    assert detect_wrappers(text) == ()
    assert detect_format(text) is not None
