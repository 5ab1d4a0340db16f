"""Reading a trace file: the table of readers, format detection from a file's head, then the reader.

Adding a format is one :class:`~voicebudget.traces.TraceReader` entry in :data:`READERS` (and its name
in :data:`FORMATS`, kept in ``_formats`` so that the CLI's ``--format-in`` choices load no reader; a
test checks the two agree); detection and the unknown-format message read this table (as anyio looks
up its backends by name).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from voicebudget._errors import ScenarioError, param
from voicebudget._io import MAX_TRACE_BYTES, compressed, iter_blocks, iter_lines, read_head, read_text
from voicebudget.traces._documents import DOCUMENTS, DocumentWrapper, detect_document, document_text
from voicebudget.traces._formats import FORMATS
from voicebudget.traces._livekit import looks_like_livekit, read_livekit, read_livekit_lines
from voicebudget.traces._livekit_history import looks_like_livekit_history, read_livekit_history
from voicebudget.traces._options import DETECT_HEAD_CHARS, ReadOptions, TraceReader
from voicebudget.traces._otel import looks_like_otel, read_otel, read_otel_lines
from voicebudget.traces._pipecat import looks_like_pipecat, read_pipecat, read_pipecat_lines, read_pipecat_runs
from voicebudget.traces._platforms import (
    looks_like_deepgram_agent,
    looks_like_retell,
    looks_like_vapi,
    read_deepgram_agent,
    read_retell,
    read_vapi,
)
from voicebudget.traces._table import TraceTable
from voicebudget.traces._wrappers import WRAPPERS, LineWrapper, detect_wrappers, newest_first, unwrap_lines, unwrap_text

__all__ = [
    "DOCUMENTS",
    "FORMATS",
    "READERS",
    "WRAPPERS",
    "TraceFormat",
    "detect_format",
    "get_reader",
    "read_trace",
]

TraceFormat = str
"""A reader's name, one of :data:`FORMATS`."""

READERS: tuple[TraceReader, ...] = (
    TraceReader(
        "vapi",
        looks_like_vapi,
        read_vapi,
        "Vapi calls (GET /call, end-of-call-report): artifact.performanceMetrics.turnLatencies, ms",
    ),
    TraceReader(
        "deepgram-agent",
        looks_like_deepgram_agent,
        read_deepgram_agent,
        "Deepgram Voice Agent server messages, one per line: LatencyReport (or AgentStartedSpeaking), s",
    ),
    TraceReader(
        "retell",
        looks_like_retell,
        read_retell,
        "Retell calls (GET /v2/get-call, webhooks): the latency statistics (a summary; turns only from e2e.values)",
    ),
    TraceReader(
        "livekit",
        looks_like_livekit,
        read_livekit,
        "LiveKit Agents metrics, one per line: model_dump() JSON or pydantic str()/repr() of livekit.agents.metrics "
        "(eou/llm/tts, realtime_model_metrics, 1.8's eot/interruption/decision, avatar_metrics), or as "
        "metrics.log_metrics() logs them (JsonFormatter, dev and console ColoredFormatter)",
        read_livekit_lines,
    ),
    TraceReader(
        "otel",
        looks_like_otel,
        read_otel,
        "OpenTelemetry spans as OTLP JSON (LiveKit Agents 1.2+ agent_turn/user_turn, or Pipecat tracing)",
        read_otel_lines,
    ),
    TraceReader(
        "livekit-history",
        looks_like_livekit_history,
        read_livekit_history,
        "LiveKit Agents chat history with per-message metrics (ChatContext.to_dict(); realtime models too), or "
        "the session report (ctx.make_session_report().to_dict(): chat_history and events)",
    ),
    TraceReader(
        "pipecat",
        looks_like_pipecat,
        read_pipecat,
        "Pipecat debug log (loguru lines: VAD stop, service TTFB/TTFAT, text aggregation, TTFA)",
        read_pipecat_lines,
        read_pipecat_runs,
    ),
)
"""Every trace reader, in detection order (the first whose ``detect`` accepts a file's head reads it)."""


def _known() -> str:
    return "; ".join(f"{r.name}: {r.description}" for r in READERS)


def get_reader(name: str) -> TraceReader:
    """The reader called ``name``.

    :raises ScenarioError: no reader has that name (the message lists the known ones).
    """
    for reader in READERS:
        if reader.name == name:
            return reader
    raise ScenarioError(f"unknown trace format {name!r} ({param('fmt')}); allowed: {', '.join(FORMATS)}")


def detect_format(text: str) -> TraceFormat | None:
    """The first reader in :data:`READERS` that accepts the text's head, or None.

    Only the first :data:`~voicebudget.traces.DETECT_HEAD_CHARS` characters are looked at, after the
    log shippers' layers on its lines (:data:`WRAPPERS`: journald, Docker, CRI, ...) are stripped; a
    whole-document export (:data:`DOCUMENTS`: ``gcloud logging read``, ``aws logs filter-log-events``, ...)
    is unwrapped first, from the whole text (None when it does not parse).
    """
    head = text[:DETECT_HEAD_CHARS]
    document = detect_document(head)
    if document is not None:
        try:
            head = document_text(text, document, "")[:DETECT_HEAD_CHARS]
        except ScenarioError:
            return None
    head = unwrap_text(head, detect_wrappers(head))
    for reader in READERS:
        if reader.detect(head):
            return reader.name
    return None


def read_trace(
    path: str | Path,
    fmt: TraceFormat | None = None,
    options: ReadOptions | None = None,
) -> TraceTable:
    """Read one trace file into a per-turn table (ms, ``t = 0`` at the actual end of speech).

    Every turn of the result records the reader (:attr:`TraceTurn.reader`) and the rule set
    (:attr:`TraceTurn.rules`) that read it.

    :param path: a file in one of :data:`FORMATS` (Pipecat log, LiveKit metrics JSON lines or chat
        history, OTLP JSON span export).
    :param fmt: the format's name (one of :data:`FORMATS`); None detects it from the file's head.
    :param options: the readers' options (VAD ``stop_secs``, ``absurd_ms``, a custom log format);
        default ``ReadOptions()``.
    :raises ScenarioError: the file is missing or unreadable; the format is unknown (the message
        names ``--format-in`` and lists the formats); or the file has no turn at all.
    """
    if options is not None and not isinstance(options, ReadOptions):  # {} passed as "no options", "x" failed late
        raise ScenarioError(
            f"must be ReadOptions(...) (e.g. ReadOptions(stop_secs=0.2)) or None, got {options!r}"[:200],
            origin=param("options"),
        )
    path = Path(path)
    origin = str(path)
    options = options or ReadOptions()
    reader = None if fmt is None else get_reader(fmt)
    head, text, document = _head(path, origin)
    wrappers = detect_wrappers(head)  # a log shipper's layer on every line: stripped before detection
    reverse = newest_first(head, wrappers)
    if reverse and text is None:
        text = read_text(path, max_bytes=MAX_TRACE_BYTES, errors="replace")
    if reader is None:
        reader = _detected_reader(unwrap_text(head, wrappers), origin)
    table = _read(reader, path, text, wrappers, reverse, origin, options)
    if not table.turns and not table.summaries:
        raise ScenarioError(f"no turns found in this {reader.name} trace", origin=origin)
    return _stamped(table, reader.name, document, wrappers)


def _stamped(
    table: TraceTable, reader: str, document: DocumentWrapper | None, wrappers: tuple[LineWrapper, ...]
) -> TraceTable:
    """The table with its reader on every turn that lacks one, and the layers its lines were unwrapped from."""
    turns = tuple(t if t.reader else replace(t, reader=reader) for t in table.turns)
    names = (*(() if document is None else (document.name,)), *(w.name for w in wrappers))
    return replace(table, turns=turns, wrappers=names)


def _head(path: Path, origin: str) -> tuple[str, str | None, DocumentWrapper | None]:
    """The file's head for detection, its whole text when it had to be read already (a pipe, a cloud
    export that is one JSON document: its entries' lines), and that export."""
    head, regular = read_head(path, DETECT_HEAD_CHARS, max_bytes=MAX_TRACE_BYTES)
    text = None
    if not regular:  # a pipe can be read once: keep its whole text
        text = read_text(path, max_bytes=MAX_TRACE_BYTES, errors="replace")
        head = text[:DETECT_HEAD_CHARS]
    document = detect_document(head)
    if document is not None:
        text = document_text(text or read_text(path, max_bytes=MAX_TRACE_BYTES, errors="replace"), document, origin)
        head = text[:DETECT_HEAD_CHARS]
    return head, text, document


def _detected_reader(head: str, origin: str) -> TraceReader:
    """The reader of the format the (unwrapped) head shows.

    :raises ScenarioError: no format matches; the message lists them.
    """
    detected = detect_format(head)
    if detected is None:
        not_text = _not_text(head)
        if not_text is not None:  # no --format-in would read it: listing the formats is no help
            raise ScenarioError(not_text, origin=origin)
        raise ScenarioError(
            f"unknown trace format; give it with {param('fmt', 'fmt=...')}, one of: {_known()}",
            origin=origin,
        )
    return get_reader(detected)


def _not_text(head: str) -> str | None:
    """Why a head no format detects is not a trace at all (empty, compressed, binary), or None."""
    if not head.strip() and len(head) < DETECT_HEAD_CHARS:
        return "is empty: no trace lines in it" if not head else "holds only blank lines: no trace lines in it"
    note = compressed(head)
    if note is not None:
        return f"{note}; a trace is read as text"
    if "\x00" in head:
        return "holds binary data (a NUL byte), not a trace's text"
    return None


def _read(
    reader: TraceReader,
    path: Path,
    text: str | None,
    wrappers: tuple[LineWrapper, ...],
    reverse: bool,
    origin: str,
    options: ReadOptions,
) -> TraceTable:
    """Run the reader on the file (streamed when it reads lines and the file need not be held whole), on
    ``text`` (a pipe's or an export's), or on the lines in reverse (an export written newest first; each
    line keeps its number in the file)."""
    if text is not None and reverse:
        pairs = list(enumerate(text.split("\n"), start=1))[::-1]
        lines = list(unwrap_lines(pairs, wrappers))
        if reader.read_lines is not None:
            return reader.read_lines(lambda: iter(lines), origin, options)
        return reader.read("\n".join(x for _, x in lines), origin, options)
    if reader.read_runs is not None and text is None and not wrappers:
        # scanned as runs of lines (memory: one run plus the turns), see docs/traces.md
        return reader.read_runs(lambda: iter_blocks(path, max_bytes=MAX_TRACE_BYTES), origin, options)
    if reader.read_lines is not None and text is None:
        # line-based: stream the file (memory: one line plus the turns), see docs/traces.md
        return reader.read_lines(
            lambda: unwrap_lines(iter_lines(path, max_bytes=MAX_TRACE_BYTES), wrappers), origin, options
        )
    if text is None:
        text = read_text(path, max_bytes=MAX_TRACE_BYTES, errors="replace")
    return reader.read(unwrap_text(text, wrappers), origin, options)
