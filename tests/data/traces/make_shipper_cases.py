"""Writes the shipper-export case folders: logs the frameworks' own code wrote (other case folders' inputs)
wrapped the way each log service exports them, with the source folder's right answer (the export changes
how the lines are held, never what they say). Run from the project's root; the files are reproducible.

Shapes (sources in voicebudget/traces/_documents.py and _wrappers.py, read 2026-12-02):
gcloud logging read --format=json (a JSON array, newest first, keys sorted, indent 2; a structured line's
``timestamp`` moved into the entry), aws logs filter-log-events (indent 4, as the AWS CLI prints JSON),
Filebeat's file output, logcli --output=jsonl (newest first: no --forward), Datadog log archives
(NDJSON) and its log search API (sort=-timestamp), Fluent Bit's file output (out_file format).
"""

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

C = Path("tests/data/traces/cases")


def _loguru_time(line):
    return datetime.fromisoformat(line[:23]).replace(tzinfo=UTC).timestamp()


def _dev_time(line):
    return datetime.fromisoformat(line[:23].replace(",", ".")).replace(tzinfo=UTC).timestamp()


def _iso(seconds, digits=6):
    text = datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
    return text[: len(text) - 6 + digits].rstrip(".") + "Z"


def _rfc3339nano(seconds):
    text = datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f").rstrip("0").rstrip(".")
    return text + "Z"


def _case(name, source_folder, file_name, text, source):
    out = C / name
    out.mkdir(exist_ok=True)
    for old in out.iterdir():
        if old.name != "expected.json":
            old.unlink()
    (out / file_name).write_text(text)
    want = json.loads((C / source_folder / "expected.json").read_text())
    want["source"] = source + f" The right answer is {source_folder}'s (its source: {want['source']})"
    (out / "expected.json").write_text(json.dumps(want, indent=2) + "\n")


def _lines(folder, name):
    return (C / folder / name).read_text().splitlines()


def gcloud():
    lines = [json.loads(x)["log"].rstrip("\n") for x in _lines("livekit-docker-json-wrapped", "container.log")]
    entries = []
    for i, line in enumerate(lines):
        record = json.loads(line)
        at = datetime.fromisoformat(record.pop("timestamp")).timestamp()  # a special field: the entry's time
        entries.append(
            {
                "insertId": f"6745c1a0000{i:05x}c3b7e4f2",
                "jsonPayload": record,
                "labels": {"instanceId": "00f46b9285a1c2d3e4"},
                "logName": "projects/voice-prod/logs/run.googleapis.com%2Fstderr",
                "receiveTimestamp": _iso(at + 0.212, 9),
                "resource": {
                    "labels": {
                        "configuration_name": "agent",
                        "location": "europe-west1",
                        "project_id": "voice-prod",
                        "revision_name": "agent-00042-xuz",
                        "service_name": "agent",
                    },
                    "type": "cloud_run_revision",
                },
                "timestamp": _iso(at),
            }
        )
    text = json.dumps(entries[::-1], indent=2, sort_keys=True) + "\n"
    _case(
        "gcloud-json-livekit-tool-turn",
        "livekit-docker-json-wrapped",
        "gcloud-read.json",
        text,
        "Item 1 of issue 20's audit: `gcloud logging read --format=json` (a JSON array of LogEntry objects, newest "
        "first, cloud.google.com/sdk/gcloud/reference/logging/read) of a Cloud Run service whose stderr carried "
        "livekit-agents 1.8.9's JsonFormatter lines (written by its own log_metrics(), make_round3_cases.py): each "
        "line parsed into jsonPayload, its 'timestamp' moved into the entry's (a special field, "
        "cloud.google.com/logging/docs/structured-logging).",
    )


def aws():
    lines = _lines("livekit-log-metrics-json", "agent.jsonl")
    events = []
    for i, line in enumerate(lines):
        ms = round(datetime.fromisoformat(json.loads(line)["timestamp"]).timestamp() * 1000)
        events.append(
            {
                "logStreamName": "agent/agent/3f2a9c1e7b5d4e0f8a6b",
                "timestamp": ms,
                "message": line,
                "ingestionTime": ms + 731,
                "eventId": f"3789{ms:020d}{i:04d}",
            }
        )
    doc = {
        "events": events,
        "searchedLogStreams": [{"logStreamName": "agent/agent/3f2a9c1e7b5d4e0f8a6b", "searchedCompletely": True}],
    }
    _case(
        "aws-log-events-livekit",
        "livekit-log-metrics-json",
        "filter-log-events.json",
        json.dumps(doc, indent=4, ensure_ascii=False) + "\n",
        'Item 1 of issue 20\'s audit: `aws logs filter-log-events --output json` ({"events": [FilteredLogEvent], '
        '"searchedLogStreams": ...}, docs.aws.amazon.com CloudWatch Logs API FilterLogEvents) of an ECS task '
        "whose stdout carried livekit-agents 1.8.9's JsonFormatter lines (each line one event's message).",
    )


def filebeat():
    lines = _lines("pipecat-1.14-latency-breakdown", "bot.log")
    out, offset = [], 0
    for line in lines:
        event = {
            "@timestamp": _iso(_loguru_time(line) + 0.412, 3),
            "@metadata": {"beat": "filebeat", "type": "_doc", "version": "8.17.0"},
            "log": {
                "offset": offset,
                "file": {"path": "/var/log/bot/bot.log", "device_id": "66306", "inode": "2097187"},
            },
            "message": line,
            "input": {"type": "filestream"},
            "ecs": {"version": "8.0.0"},
            "host": {"name": "bot-1"},
            "agent": {
                "ephemeral_id": "6c1e0f2a-9b7d-4c3e-8a5f-2d4b6e8f0a1c",
                "id": "0b9e7c5a-3d1f-4e2b-9c8a-7f6e5d4c3b2a",
                "name": "bot-1",
                "type": "filebeat",
                "version": "8.17.0",
            },
        }
        offset += len(line.encode()) + 1
        out.append(json.dumps(event, separators=(",", ":")))
    _case(
        "filebeat-ecs-pipecat-breakdown",
        "pipecat-1.14-latency-breakdown",
        "filebeat.ndjson",
        "\n".join(out) + "\n",
        "Item 1 of issue 20's audit: Filebeat's file output (one JSON event per line with @timestamp, message, log, "
        "input, ecs, host, agent; elastic.co Filebeat reference) reading the loguru log pipecat-ai 1.14's own "
        "LatencyBreakdown.turn_contribution_lines() wrote.",
    )


def loki():
    lines = _lines("livekit-preemptive-generation", "metrics.jsonl")
    rows = [
        json.dumps(
            {
                "labels": {"app": "agent", "container": "agent", "namespace": "voice"},
                "line": line,
                "timestamp": _rfc3339nano(json.loads(line)["timestamp"]),
            },
            separators=(",", ":"),
        )
        for line in lines
    ]
    _case(
        "loki-logcli-livekit-preemptive",
        "livekit-preemptive-generation",
        "logcli.jsonl",
        "\n".join(rows[::-1]) + "\n",
        "Item 1 of issue 20's audit: `logcli query --output=jsonl` without --forward (newest first; "
        "grafana/loki pkg/logcli/output/jsonl.go: labels, line, timestamp) over the model_dump() metrics lines "
        "livekit-agents 1.8.9 wrote in a real AgentSession (tests/livekit_matrix.py).",
    )


def datadog_archive():
    lines = _lines("pipecat-1.14-tool-call-turn", "bot.log")
    rows = [
        json.dumps(
            {
                "_id": f"AZN{i:012d}xQ",
                "date": _iso(_loguru_time(line), 3),
                "host": "bot-1",
                "source": "python",
                "service": "bot",
                "status": "info",
                "message": line,
                "attributes": {},
                "tags": ["env:prod", "source:python"],
            }
        )
        for i, line in enumerate(lines)
    ]
    _case(
        "datadog-archive-pipecat-tool-turn",
        "pipecat-1.14-tool-call-turn",
        "archive_233201.json",
        "\n".join(rows) + "\n",
        "Item 1 of issue 20's audit: a Datadog log archive (NDJSON, one event per line: _id, date, host, source, "
        "service, status, message, attributes, tags; docs.datadoghq.com/logs/log_configuration/archives) of the "
        "DEBUG log pipecat-ai 1.14 wrote running a real pipeline (tests/pipecat_matrix.py).",
    )


def datadog_api():
    lines = _lines("livekit-log-metrics-console", "agent-dev.log")
    data = [
        {
            "attributes": {
                "attributes": {},
                "host": "agent-dev",
                "message": line,
                "service": "agent",
                "status": "info",
                "tags": ["env:dev", "source:python"],
                "timestamp": _iso(_dev_time(line), 3),
            },
            "id": f"AQAAAZN{i:010d}",
            "type": "log",
        }
        for i, line in enumerate(lines)
    ]
    doc = {
        "data": data[::-1],
        "links": {},
        "meta": {"elapsed": 132, "request_id": "pddv1ChZ", "status": "done"},
    }
    _case(
        "datadog-logs-api-livekit-dev",
        "livekit-log-metrics-console",
        "logs-events.json",
        json.dumps(doc, indent=2) + "\n",
        "Item 1 of issue 20's audit: Datadog's log search API response (GET /api/v2/logs/events?sort=-timestamp: "
        "data[].attributes.message; docs.datadoghq.com/api/latest/logs) over the dev console log livekit-agents "
        "1.8.9's ColoredFormatter wrote through its own log_metrics() (each record printed twice, colour codes kept).",
    )


def fluent_bit():
    lines = _lines("livekit-1.8-metrics-types", "metrics.jsonl")
    rows = [f"tail.0: [{json.loads(x)['timestamp']:.9f}, {json.dumps({'log': x})}]" for x in lines]
    _case(
        "fluent-bit-file-livekit-1.8",
        "livekit-1.8-metrics-types",
        "tail.0",
        "\n".join(rows) + "\n",
        "Item 1 of issue 20's audit: Fluent Bit's file output in its default out_file format ('tag: [time, "
        "{record}]', docs.fluentbit.io outputs/file; no stream key: the tail input's 'log') over the model_dump() "
        "lines of livekit-agents 1.8.9's own metrics models.",
    )


if __name__ == "__main__":
    for make in (gcloud, aws, filebeat, loki, datadog_archive, datadog_api, fluent_bit):
        make()
    shutil.rmtree(C / "__pycache__", ignore_errors=True)
