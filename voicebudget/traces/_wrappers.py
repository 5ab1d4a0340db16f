"""Log shippers' prefixes and wrappers around a framework's log lines, stripped before format detection.

A Pipecat or LiveKit log read back from where it was shipped carries the shipper's own layer on
every line: systemd-journald's ``Apr 29 11:41:08 host unit[pid]: `` (pipecat issue 1694), Docker's
``{"log": "...", "stream": "stdout", "time": "..."}``, Kubernetes' CRI ``<time> stdout F ``, a cloud
log export's JSON entry. Each such layer is one :class:`LineWrapper` in :data:`WRAPPERS`;
:func:`detect_wrappers` finds the layers on a file's head (outermost first, nested layers too:
Docker around journald), and :func:`unwrap_lines` strips them line by line, so the readers and
their detectors see the framework's own lines. A line a layer does not match passes through as it
is (journalctl's ``-- Boot ... --`` separators). Docker and CRI split a line longer than 16 KiB into
partial chunks: they are joined again, on the first chunk's line (the following chunks' lines stay,
empty, so every line keeps its number in the file).

Sources (read 2026-12-01): systemd ``journalctl(1)`` (``-o short``, ``short-iso``,
``short-precise``, ``short-iso-precise``, ``json``),
https://www.freedesktop.org/software/systemd/man/latest/journalctl.html; RFC 3164 and RFC 5424
(syslog); Docker's json-file driver, https://docs.docker.com/engine/logging/drivers/json-file/;
the Kubernetes CRI log format (``kubelet-cri-logging.md``, kubernetes/design-proposals-archive
``node/``); ``docker logs --timestamps`` / ``kubectl logs --timestamps`` (RFC 3339 with ns);
Google Cloud Logging ``LogEntry`` (``textPayload``, ``jsonPayload``),
https://cloud.google.com/logging/docs/reference/v2/rest/v2/LogEntry; AWS CloudWatch Logs events
(``FilteredLogEvent``: ``timestamp``, ``message``, ``logStreamName``, ``ingestionTime``) and ``aws
logs tail`` (``<time> <log stream> <message>``); Heroku's log format
(``<time> <source>[<dyno>]: <message>``), https://devcenter.heroku.com/articles/logging. Read
2026-12-02: Grafana Loki ``logcli query --output=jsonl`` (``{"labels": ..., "line": ..., "timestamp": ...}``,
grafana/loki ``pkg/logcli/output/jsonl.go``; newest first unless ``--forward``,
https://grafana.com/docs/loki/latest/query/logcli/); Filebeat's file and console outputs (one JSON event per
line: ``@timestamp``, ``message``, ``log``, ``input``, ``ecs``, ``host``, ``agent``; the Elastic Common
Schema's base fields), https://www.elastic.co/guide/en/beats/filebeat/current/console-output.html,
https://www.elastic.co/guide/en/ecs/current/ecs-base.html; Datadog log archives (NDJSON: ``_id``,
``date``, ``message``, ``attributes``, ...), https://docs.datadoghq.com/logs/log_configuration/archives/
("Format of the archives"); Fluent Bit's file output (``out_file``: ``tag: [time, {record}]``; ``plain``:
the record) and ``json_lines`` (the record with its ``date`` key), a tailed line in the record's ``log``
key, https://docs.fluentbit.io/manual/data-pipeline/outputs/file.

A layer whose records carry their time (``time``) is checked for order: a head whose records run newest
first (``logcli``'s default, ``gcloud logging read``'s) is read whole and reversed (:func:`newest_first`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from voicebudget.traces._jsonsafe import loads

__all__ = [
    "WRAPPERS",
    "LineWrapper",
    "detect_wrappers",
    "iso_seconds",
    "newest_first",
    "structured_line",
    "unwrap_lines",
    "unwrap_text",
]

Unwrapped = tuple[str, bool] | None
"""The inner line and whether it continues on the next line (a partial chunk), or None: not this layer."""


@dataclass(frozen=True)
class LineWrapper:
    """One shipper's layer around a log line.

    :ivar name: short name (shown in the sources of a check).
    :ivar unwrap: ``unwrap(line)`` -> ``(inner line, continues)`` or None when the line is not in this
        layer; linear in the line's length.
    :ivar description: what writes it.
    :ivar source: where the layout was read.
    :ivar time: ``time(line)`` -> the record's time in the shipper's own field, s (None: not given), for a
        layer whose exports may run newest first; None when the layer is always in time order.
    """

    name: str
    unwrap: Callable[[str], Unwrapped]
    description: str
    source: str
    time: Callable[[str], float | None] | None = None


_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_ISO = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})"
_IDENT = r"[^\s:\[\]]{1,128}(?:\[\d{1,10}\])?"  # a syslog identifier with its pid: python3.10[1549]
_SYSLOG = re.compile(r"^" + _MONTH + r" [ \d]\d \d{2}:\d{2}:\d{2}(?:\.\d{1,9})? \S{1,255} " + _IDENT + r": (.*)$")
_SYSLOG_ISO = re.compile(r"^" + _ISO + r" \S{1,255} " + _IDENT + r": (.*)$")
_RFC5424 = re.compile(r"^<\d{1,3}>1 " + _ISO + r" \S{1,255} \S{1,48} \S{1,128} \S{1,32} (?:-|\[.*?\]) ?(.*)$")
_CRI = re.compile(r"^" + _ISO + r" (?:stdout|stderr) ([FP]) (.*)$")
_STAMPED = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6,9}(?:Z|[+-]\d{2}:\d{2}) (.*)$")
_STAMPED_INNER = re.compile(r"^(?:\d{4}-\d{2}-\d{2}[ T]\d|\{|" + _MONTH + r" [ \d]\d \d)")
_AWS_TAIL = re.compile(r"^" + _ISO + r" (\S{1,512}) (.*)$")
_HEROKU = re.compile(r"^" + _ISO + r" [a-z]{1,32}\[[\w.\-]{1,64}\]: (.*)$")


_ISO_PARTS = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?\s?(Z|[+-]\d{2}:?\d{2})?$"
)


def iso_seconds(value: object) -> float | None:
    """An RFC 3339 / ISO 8601 time (up to nanoseconds; no zone: UTC) as seconds since the epoch, or
    None when it is not one."""
    if not isinstance(value, str):
        return None
    m = _ISO_PARTS.match(value.strip())
    if m is None:
        return None
    zone = m.group(8)
    tz = UTC
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        tz = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
    try:
        y, mo, d, h, mi, sec = (int(m.group(i)) for i in range(1, 7))
        whole = datetime(y, mo, d, h, mi, sec, tzinfo=tz)
    except ValueError:
        return None
    return whole.timestamp() + int((m.group(7) or "0").ljust(9, "0")) / 1e9


_LINE_START = re.compile(r"^(?:\s*[{\[]|\d{4}-\d{2}-\d{2}[ T]\d|\d{2}:\d{2}:\d{2}|" + _MONTH + r" [ \d]\d \d)")


def structured_line(message: object, fields: object, time: object, *, time_key: str = "timestamp") -> str | None:
    """The framework's own line back from a log service that parsed it into a message and fields (Cloud
    Logging's ``jsonPayload``, Datadog's ``attributes``): the message as it is when it is a whole log line
    (it starts with a time or is JSON) or nothing was parsed out of it, else the record as one JSON line
    (``message`` and the fields; the service's own time under ``time_key`` when the fields lost theirs, as
    Cloud Logging moves a record's ``timestamp`` into the entry)."""
    if isinstance(message, dict):
        fields, message = message, None
    if not isinstance(fields, dict) or not fields:
        return message.removesuffix("\n") if isinstance(message, str) else None
    if isinstance(message, str) and _LINE_START.match(message):
        return message.removesuffix("\n")
    record: dict[str, Any] = {} if message is None else {"message": message}
    record.update(fields)
    if time is not None and not ({"timestamp", "time", "@timestamp"} & record.keys()):
        record[time_key] = time
    return json.dumps(record, ensure_ascii=False)


def _regex(pattern: re.Pattern[str], group: int = 1) -> Callable[[str], Unwrapped]:
    def unwrap(line: str) -> Unwrapped:
        m = pattern.match(line)
        return None if m is None else (m.group(group), False)

    return unwrap


def _stamped(line: str) -> Unwrapped:
    """``docker logs -t`` / ``kubectl logs --timestamps``: only when what follows is itself a log line
    with its own time or a JSON object (a bare timestamp and a message is a framework's own layout)."""
    m = _STAMPED.match(line)
    if m is None or not _STAMPED_INNER.match(m.group(1)):
        return None
    return m.group(1), False


def _aws_tail(line: str) -> Unwrapped:
    m = _AWS_TAIL.match(line)
    if m is None or not _STAMPED_INNER.match(m.group(2)) or _STAMPED_INNER.match(m.group(1)):
        return None
    return m.group(2), False


def _cri(line: str) -> Unwrapped:
    m = _CRI.match(line)
    return None if m is None else (m.group(2), m.group(1) == "P")


def _json_object(line: str, *keys: str) -> dict[str, object] | None:
    """The line as a JSON object when it starts like one and holds every key in ``keys``."""
    if not line.startswith("{") or any(f'"{k}"' not in line for k in keys):
        return None
    obj, error = loads(line)
    return obj if error is None and isinstance(obj, dict) and all(k in obj for k in keys) else None


def _payload(value: object) -> str | None:
    """A wrapped payload as one line: a string as it is, an object as compact JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return None


def _loki(line: str) -> Unwrapped:
    obj = _json_object(line, "line", "timestamp")
    if obj is None or not isinstance(obj["line"], str) or not obj.keys() <= {"line", "timestamp", "labels"}:
        return None
    return obj["line"].removesuffix("\n"), False


def _loki_time(line: str) -> float | None:
    obj = _json_object(line, "line", "timestamp")
    return None if obj is None else iso_seconds(obj["timestamp"])


_ECS_ROOTS = frozenset(
    "@timestamp @metadata message agent cloud container data_stream ecs event fields host input labels log "
    "orchestrator service stream tags kubernetes".split()
)
"""A Filebeat event's own top-level fields (Filebeat's exported fields, ECS base fields); dotted keys count by
their first part (``log.offset``)."""


def _filebeat(line: str) -> Unwrapped:
    if '"@timestamp"' not in line:
        return None
    obj = _json_object(line, "@timestamp", "message")
    if obj is None or not isinstance(obj["message"], str):
        return None
    if any(k.split(".", 1)[0] not in _ECS_ROOTS for k in obj):
        return None  # a decoded record (json.keys_under_root): its fields are the log line itself
    return obj["message"].removesuffix("\n"), False


def _datadog_archive(line: str) -> Unwrapped:
    obj = _json_object(line, "_id", "date", "message")
    if obj is None:
        return None
    text = structured_line(obj["message"], obj.get("attributes"), obj["date"])
    return None if text is None else (text, False)


def _datadog_time(line: str) -> float | None:
    obj = _json_object(line, "_id", "date")
    return None if obj is None else iso_seconds(obj["date"])


_FLUENT_FILE = re.compile(r"^[^\s\[\]:]{1,256}: \[\[?-?\d{1,20}(?:\.\d{1,9})?(?:, ?\{[^{}]*\}\])?, (\{.*\})\]$")


def _fluent_bit(line: str) -> Unwrapped:
    m = _FLUENT_FILE.match(line)
    if m is not None:
        value, error = loads(m.group(1))
        obj = value if error is None and isinstance(value, dict) else None
    else:
        obj = _json_object(line, "log")
    if obj is None or not isinstance(obj.get("log"), str):
        return None
    return obj["log"].removesuffix("\n").removesuffix("\r"), False


def _docker(line: str) -> Unwrapped:
    obj = _json_object(line, "log", "stream")
    if obj is None or not isinstance(obj["log"], str):
        return None
    text = obj["log"]
    continues = not text.endswith("\n")  # json-file splits lines over 16 KiB: the chunks lack the "\n"
    return text.removesuffix("\n").removesuffix("\r"), continues


def _journald_json(line: str) -> Unwrapped:
    obj = _json_object(line, "MESSAGE", "__REALTIME_TIMESTAMP")
    if obj is None:
        return None
    message = obj["MESSAGE"]
    if isinstance(message, list) and all(isinstance(b, int) and 0 <= b < 256 for b in message):
        message = bytes(message).decode("utf-8", errors="replace")  # journald's form of a non-UTF-8 message
    return (message, False) if isinstance(message, str) else None


def gcp_entry(obj: dict[str, Any]) -> str | None:
    """The log line of one Cloud Logging ``LogEntry``: its ``textPayload``, or its ``jsonPayload`` as one
    JSON line (the entry's ``timestamp`` put back when the agent moved it out of the payload); None when
    the entry is not one (no payload, no entry fields)."""
    if not ({"timestamp", "receiveTimestamp", "logName", "insertId", "resource"} & obj.keys()):
        return None
    text = obj.get("textPayload")
    if isinstance(text, str):
        return text.removesuffix("\n")
    payload = obj.get("jsonPayload")
    return structured_line(None, payload, obj.get("timestamp")) if isinstance(payload, dict) else None


def _gcp(line: str) -> Unwrapped:
    if '"textPayload"' not in line and '"jsonPayload"' not in line:
        return None
    obj = _json_object(line)
    text = None if obj is None else gcp_entry(obj)
    return None if text is None else (text, False)


def _gcp_time(line: str) -> float | None:
    obj = _json_object(line)
    return None if obj is None else iso_seconds(obj.get("timestamp"))


def _cloudwatch(line: str) -> Unwrapped:
    obj = _json_object(line, "message", "timestamp")
    if obj is None or not ({"ingestionTime", "logStreamName", "eventId"} & obj.keys()):
        return None
    text = _payload(obj["message"])
    return None if text is None else (text.removesuffix("\n"), False)


WRAPPERS: tuple[LineWrapper, ...] = (
    LineWrapper(
        "docker-json",
        _docker,
        'Docker json-file driver: {"log": "<line>\\n", "stream": "stdout", "time": "..."} (chunks of a line '
        "over 16 KiB joined)",
        "https://docs.docker.com/engine/logging/drivers/json-file/",
    ),
    LineWrapper(
        "journald-json",
        _journald_json,
        'journalctl -o json: {"MESSAGE": "<line>", "__REALTIME_TIMESTAMP": "<us>", ...}',
        "journalctl(1), JSON output mode",
    ),
    LineWrapper(
        "gcp-logging",
        _gcp,
        "Google Cloud Logging entries, one per line (Cloud Run, GKE exports; gcloud's JSON through jq -c): "
        "textPayload, or jsonPayload as JSON",
        "https://cloud.google.com/logging/docs/reference/v2/rest/v2/LogEntry",
        _gcp_time,
    ),
    LineWrapper(
        "cloudwatch-json",
        _cloudwatch,
        'AWS CloudWatch Logs events: {"timestamp": <ms>, "message": "<line>", "ingestionTime": ..., ...}',
        "CloudWatch Logs API FilteredLogEvent / OutputLogEvent",
    ),
    LineWrapper(
        "loki-logcli",
        _loki,
        'Grafana Loki logcli query --output=jsonl: {"labels": {...}, "line": "<line>", "timestamp": "..."} '
        "(newest first by default)",
        "grafana/loki pkg/logcli/output/jsonl.go; grafana.com/docs/loki/latest/query/logcli/",
        _loki_time,
    ),
    LineWrapper(
        "filebeat-ecs",
        _filebeat,
        'Filebeat file/console output (ECS): {"@timestamp": ..., "message": "<line>", "log": {...}, ...}; a '
        "record whose own fields were decoded beside the message is left as it is",
        "elastic.co Filebeat reference, console output and exported fields; ECS base fields",
    ),
    LineWrapper(
        "datadog-archive",
        _datadog_archive,
        'Datadog log archives (NDJSON): {"_id": ..., "date": ..., "message": "<line>", "attributes": {...}}; '
        "a message Datadog parsed from JSON comes back with its attributes as one JSON line",
        "https://docs.datadoghq.com/logs/log_configuration/archives/ (Format of the archives)",
        _datadog_time,
    ),
    LineWrapper(
        "fluent-bit",
        _fluent_bit,
        'Fluent Bit records without a stream key: file output \'tag: [time, {"log": "<line>"}]\', plain or '
        'json_lines {"date": ..., "log": "<line>"} (tail input\'s log key)',
        "https://docs.fluentbit.io/manual/data-pipeline/outputs/file",
    ),
    LineWrapper(
        "cri",
        _cri,
        "Kubernetes container log files (containerd, CRI-O): '<RFC 3339 time> stdout F <line>' (P: partial)",
        "kubernetes/design-proposals-archive node/kubelet-cri-logging.md",
    ),
    LineWrapper(
        "journald",
        _regex(_SYSLOG),
        "systemd-journald (journalctl -o short / short-precise) and classic syslog: 'Mon DD HH:MM:SS host "
        "unit[pid]: <line>'",
        "journalctl(1) -o short, short-precise; RFC 3164",
    ),
    LineWrapper(
        "journald-iso",
        _regex(_SYSLOG_ISO),
        "journalctl -o short-iso / short-iso-precise: '2025-04-29T11:41:08+0000 host unit[pid]: <line>'",
        "journalctl(1) -o short-iso, short-iso-precise",
    ),
    LineWrapper(
        "syslog-5424",
        _regex(_RFC5424),
        "RFC 5424 syslog: '<PRI>1 <time> <host> <app> <procid> <msgid> <structured data> <line>'",
        "RFC 5424 section 6",
    ),
    LineWrapper(
        "heroku",
        _regex(_HEROKU),
        "Heroku logplex: '<time> app[web.1]: <line>'",
        "https://devcenter.heroku.com/articles/logging",
    ),
    LineWrapper(
        "aws-logs-tail",
        _aws_tail,
        "aws logs tail (CloudWatch): '<time> <log stream> <line>'",
        "AWS CLI 'aws logs tail' detailed output",
    ),
    LineWrapper(
        "timestamps",
        _stamped,
        "docker logs --timestamps / kubectl logs --timestamps: '<RFC 3339 time with us or ns> <line>'",
        "docker logs, kubectl logs (--timestamps)",
    ),
)
"""Every known layer, tried in this order on each line of a file's head."""

MAX_DEPTH = 3
"""Layers stripped at most (Docker around journald around a framework's line is two)."""
_SAMPLE_LINES = 200


def _sample(text: str) -> list[str]:
    """The head's complete non-empty lines (its last line may be cut), at most 200."""
    lines = text.split("\n")
    if len(lines) > 1:
        lines = lines[:-1]
    return [x.removesuffix("\r") for x in lines if x.strip()][:_SAMPLE_LINES]


def _one_layer(lines: list[str]) -> LineWrapper | None:
    """The first layer that at least half the lines (and the first line) are wrapped in."""
    if not lines:
        return None
    for wrapper in WRAPPERS:
        if wrapper.unwrap(lines[0]) is None:
            continue
        if sum(wrapper.unwrap(x) is not None for x in lines) * 2 >= len(lines):
            return wrapper
    return None


def newest_first(head: str, wrappers: tuple[LineWrapper, ...]) -> bool:
    """True when the outermost layer's records on the head run newest first (more of its consecutive times
    fall than rise): ``logcli query`` without ``--forward``, ``gcloud logging read`` without
    ``--order=asc``. Such a file is read in reverse."""
    if not wrappers or wrappers[0].time is None:
        return False
    times = [t for t in map(wrappers[0].time, _sample(head)) if t is not None]
    falls = sum(b < a for a, b in zip(times, times[1:], strict=False))
    rises = sum(b > a for a, b in zip(times, times[1:], strict=False))
    return falls > rises


def detect_wrappers(head: str) -> tuple[LineWrapper, ...]:
    """The shipper layers around the lines of a file's head, outermost first (none: ``()``).

    :param head: the first characters of the file (at most
        :data:`~voicebudget.traces.DETECT_HEAD_CHARS`).
    """
    found: list[LineWrapper] = []
    lines = _sample(head)
    while len(found) < MAX_DEPTH:
        wrapper = _one_layer(lines)
        if wrapper is None:
            break
        found.append(wrapper)
        lines = [text for _, text in _strip(enumerate(lines, start=1), wrapper) if text.strip()]
    return tuple(found)


def _strip(lines: Iterable[tuple[int, str]], wrapper: LineWrapper) -> Iterator[tuple[int, str]]:
    """One layer off every line; partial chunks joined onto the first chunk's line (each later chunk's
    line follows it, empty, so every line keeps its number and the order holds)."""
    pending: list[tuple[int, str]] = []

    def flush() -> Iterator[tuple[int, str]]:
        yield pending[0][0], "".join(text for _, text in pending)
        for lineno, _ in pending[1:]:
            yield lineno, ""

    for lineno, raw in lines:
        got = wrapper.unwrap(raw)
        if got is None:
            if pending:  # a partial line with no continuation: give what came
                yield from flush()
                pending = []
            yield lineno, raw
            continue
        inner, continues = got
        pending.append((lineno, inner))
        if not continues:
            yield from flush()
            pending = []
    if pending:
        yield from flush()


def unwrap_lines(lines: Iterable[tuple[int, str]], wrappers: tuple[LineWrapper, ...]) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` pairs with every layer in ``wrappers`` stripped, one line at a time.

    Line numbers are the file's; a line joined from partial chunks is on its first chunk's line, the
    later chunks' lines are empty.
    """
    out: Iterable[tuple[int, str]] = lines
    for wrapper in wrappers:
        out = _strip(out, wrapper)
    return iter(out)


def unwrap_text(text: str, wrappers: tuple[LineWrapper, ...]) -> str:
    """:func:`unwrap_lines` over a whole text, joined again with ``\\n`` (same number of lines)."""
    if not wrappers:
        return text
    lines = enumerate(text.split("\n"), start=1)
    return "\n".join(x for _, x in unwrap_lines(lines, wrappers))
