"""Log exports that are one whole JSON document, unwrapped into the framework's own lines before anything
else: a cloud log service's query result holds the log lines as fields of its entries.

Each shape is one :class:`DocumentWrapper` in :data:`DOCUMENTS`. :func:`detect_document` looks at a file's
head only (cheap markers of the shape); :func:`document_text` parses the whole document (within the trace
size cap, as an OTLP JSON export is read) and gives its entries' lines in time order, one line each (a
multi-line entry keeps its lines), joined by ``\\n``. Line numbers in anomalies then count those lines, not
the export's. The line layers of :data:`~voicebudget.traces.WRAPPERS` are looked for on the result
afterwards (a Docker line inside a Cloud Logging entry, say).

Sources (read 2026-12-02):

- ``gcloud logging read --format=json``: a JSON array of ``LogEntry`` objects (``textPayload`` or
  ``jsonPayload``, ``timestamp``, ``logName``, ``insertId``, ...), "returned in order of decreasing
  timestamps, most-recent entries first" unless ``--order=asc``,
  https://cloud.google.com/sdk/gcloud/reference/logging/read and
  https://cloud.google.com/logging/docs/reference/v2/rest/v2/LogEntry; a structured line's ``timestamp``
  field becomes the entry's and leaves ``jsonPayload`` (Cloud Logging's special JSON fields,
  https://cloud.google.com/logging/docs/structured-logging).
- ``aws logs filter-log-events`` / ``get-log-events`` (JSON output): ``{"events": [{"timestamp": <ms>,
  "message": ..., "ingestionTime": ..., "logStreamName": ..., "eventId": ...}], "searchedLogStreams": ...,
  "nextToken": ...}``, events "sorted by event timestamp",
  https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_FilterLogEvents.html,
  https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_FilteredLogEvent.html.
- Datadog's log search API (``GET /api/v2/logs/events``, ``POST /api/v2/logs/events/search``): ``{"data":
  [{"id": ..., "type": "log", "attributes": {"timestamp": ..., "message": ..., "attributes": {...},
  "host": ..., "service": ..., "status": ..., "tags": [...]}}], "links": ..., "meta": ...}``,
  https://docs.datadoghq.com/api/latest/logs/ ("Search logs"); ``sort`` may put the newest first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from voicebudget._errors import ScenarioError
from voicebudget.traces._jsonsafe import json_kind, loads
from voicebudget.traces._wrappers import gcp_entry, iso_seconds, structured_line

__all__ = ["DOCUMENTS", "DocumentWrapper", "detect_document", "document_text"]

Entry = tuple[float | None, str]
"""One entry of an export: its time on the service's clock (s; None when it gives none) and its line."""


@dataclass(frozen=True)
class DocumentWrapper:
    """One log service's whole-document export around a framework's log lines.

    :ivar name: short name (shown in the sources of a check, first among the layers).
    :ivar detect: ``detect(head)`` -> True when a file's head (at most
        :data:`~voicebudget.traces.DETECT_HEAD_CHARS` characters) looks like this export; linear time.
    :ivar entries: ``entries(document)`` -> the parsed document's entries, or None when it is not this
        export after all.
    :ivar description: what writes it.
    :ivar source: where the shape was read.
    """

    name: str
    detect: Callable[[str], bool]
    entries: Callable[[Any], list[Entry] | None]
    description: str
    source: str


def _gcloud_detect(head: str) -> bool:
    h = head.lstrip()
    return (
        h.startswith("[")
        and ('"textPayload"' in h or '"jsonPayload"' in h)
        and any(k in h for k in ('"logName"', '"insertId"', '"receiveTimestamp"'))
    )


def _gcloud_entries(doc: Any) -> list[Entry] | None:
    if not isinstance(doc, list):
        return None
    out: list[Entry] = []
    for item in doc:
        text = gcp_entry(item) if isinstance(item, dict) else None
        if text is not None:
            out.append((iso_seconds(item.get("timestamp")), text))
    return out


_AWS_KEYS = {"events", "searchedLogStreams", "nextToken", "nextForwardToken", "nextBackwardToken"}


def _aws_detect(head: str) -> bool:
    h = head.lstrip()
    return (
        h.startswith("{")
        and '"events"' in h
        and '"message"' in h
        and any(k in h for k in ('"ingestionTime"', '"logStreamName"', '"eventId"'))
    )


def _ms(value: Any) -> float | None:
    return value / 1000.0 if isinstance(value, int | float) and not isinstance(value, bool) else None


def _aws_entries(doc: Any) -> list[Entry] | None:
    if not isinstance(doc, dict) or not isinstance(doc.get("events"), list) or not doc.keys() <= _AWS_KEYS:
        return None
    out: list[Entry] = []
    for event in doc["events"]:
        if isinstance(event, dict) and isinstance(event.get("message"), str):
            out.append((_ms(event.get("timestamp")), event["message"].removesuffix("\n")))
    return out


def _datadog_detect(head: str) -> bool:
    h = head.lstrip()
    return h.startswith("{") and '"data"' in h and '"attributes"' in h and ('"type": "log"' in h or '"type":"log"' in h)


def _datadog_entries(doc: Any) -> list[Entry] | None:
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        return None
    out: list[Entry] = []
    for item in doc["data"]:
        attrs = item.get("attributes") if isinstance(item, dict) and item.get("type") == "log" else None
        if not isinstance(attrs, dict):
            continue
        text = structured_line(attrs.get("message"), attrs.get("attributes"), attrs.get("timestamp"))
        if text is not None:
            out.append((iso_seconds(attrs.get("timestamp")), text))
    return out


DOCUMENTS: tuple[DocumentWrapper, ...] = (
    DocumentWrapper(
        "gcloud-json",
        _gcloud_detect,
        _gcloud_entries,
        "gcloud logging read --format=json: a JSON array of LogEntry objects, newest first; textPayload, or "
        "jsonPayload as one JSON line",
        "https://cloud.google.com/sdk/gcloud/reference/logging/read; LogEntry reference",
    ),
    DocumentWrapper(
        "aws-log-events",
        _aws_detect,
        _aws_entries,
        'aws logs filter-log-events / get-log-events (JSON output): {"events": [{"timestamp": <ms>, "message": '
        '"<line>", ...}], ...}',
        "CloudWatch Logs API FilterLogEvents, FilteredLogEvent",
    ),
    DocumentWrapper(
        "datadog-logs-api",
        _datadog_detect,
        _datadog_entries,
        'Datadog log search API: {"data": [{"type": "log", "attributes": {"timestamp": ..., "message": "<line>", '
        '"attributes": {...}}}], ...}',
        "https://docs.datadoghq.com/api/latest/logs/ (Search logs)",
    ),
)
"""Every known whole-document export, tried in this order on a file's head."""


def detect_document(head: str) -> DocumentWrapper | None:
    """The export whose markers the file's head has, or None."""
    return next((d for d in DOCUMENTS if d.detect(head)), None)


def _in_time_order(entries: list[Entry]) -> list[Entry]:
    """Oldest first: an export given newest first is reversed, then entries are stably sorted by time (an
    entry without a time keeps its place only when no entry has one)."""
    times = [t for t, _ in entries]
    if len(times) > 1 and times[0] is not None and times[-1] is not None and times[0] > times[-1]:
        entries = entries[::-1]
    if all(t is not None for t, _ in entries):
        entries = sorted(entries, key=lambda e: e[0] or 0.0)
    return entries


def document_text(text: str, wrapper: DocumentWrapper, origin: str) -> str:
    """The framework's own lines inside a whole-document export, oldest first, joined by ``\\n``.

    :raises ScenarioError: the document does not parse as JSON, is not of this shape, or holds no log line
        (the message names the export).
    """
    doc, error = loads(text)
    what = f"this looks like a {wrapper.name} export ({wrapper.description.split(':')[0]})"
    if error is not None:
        raise ScenarioError(f"{what} but is not valid JSON: {error}", origin=origin)
    entries = wrapper.entries(doc)
    if entries is None:
        raise ScenarioError(f"{what} but its top level is {json_kind(doc)} of another shape", origin=origin)
    if not entries:
        raise ScenarioError(f"{what} but none of its entries holds a log line", origin=origin)
    return "\n".join(line for _, line in _in_time_order(entries))
