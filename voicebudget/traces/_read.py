"""Reading a trace file: format detection from content, then the format's reader."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from voicebudget._errors import ScenarioError
from voicebudget.traces._livekit import looks_like_livekit, read_livekit
from voicebudget.traces._livekit_history import looks_like_livekit_history, read_livekit_history
from voicebudget.traces._otel import looks_like_otel, read_otel
from voicebudget.traces._pipecat import DEFAULT_STOP_SECS, looks_like_pipecat, read_pipecat
from voicebudget.traces._table import ABSURD_MS, TraceTable

__all__ = ["FORMATS", "TraceFormat", "detect_format", "read_trace"]

TraceFormat = Literal["pipecat", "livekit", "otel"]
FORMATS: tuple[str, ...] = ("pipecat", "livekit", "otel")
"""The trace formats :func:`read_trace` knows."""


def detect_format(text: str) -> TraceFormat | None:
    """Guess a trace's format from its content (None when it is none of :data:`FORMATS`).

    LiveKit metrics lines carry ``"type": "..._metrics"`` (per-message metrics: ``llm_node_ttft``
    and friends on chat items); an OTLP export has ``resourceSpans`` (or spans with ``spanId``); a
    Pipecat log has service TTFB lines or VAD stop events.
    """
    if looks_like_livekit(text):
        return "livekit"
    if looks_like_otel(text):
        return "otel"
    if looks_like_livekit_history(text):
        return "livekit"
    if looks_like_pipecat(text):
        return "pipecat"
    return None


def read_trace(
    path: str | Path,
    fmt: TraceFormat | None = None,
    *,
    stop_secs: float = DEFAULT_STOP_SECS,
    absurd_ms: float = ABSURD_MS,
) -> TraceTable:
    """Read one trace file into a per-turn table (ms, ``t = 0`` at the actual end of speech).

    :param path: a Pipecat log, LiveKit metrics JSON lines (or a chat history with per-message
        metrics) or an OTLP JSON span export.
    :param fmt: ``"pipecat"``, ``"livekit"`` or ``"otel"``; None detects it from the content.
    :param stop_secs: Pipecat's VAD ``stop_secs`` in seconds (default 0.2), subtracted from VAD stop events.
    :param absurd_ms: a stage above this is flagged as absurd (default :data:`ABSURD_MS`, 20 s).
    :raises ScenarioError: the file is missing, unreadable, in no known format, or has no turn at all.
    """
    path = Path(path)
    origin = str(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ScenarioError(f"cannot read trace: {exc.strerror or exc}", origin=origin) from None
    fmt = fmt or detect_format(text)
    if fmt is None:
        raise ScenarioError(
            "unknown trace format; expected a Pipecat log, LiveKit metrics JSON lines or an OTLP JSON span "
            "export (or give the format explicitly: pipecat, livekit, otel)",
            origin=origin,
        )
    if fmt == "pipecat":
        table = read_pipecat(text, origin, stop_secs=stop_secs, absurd_ms=absurd_ms)
    elif fmt == "livekit" and looks_like_livekit_history(text) and not looks_like_livekit(text):
        table = read_livekit_history(text, origin, absurd_ms=absurd_ms)
    elif fmt == "livekit":
        table = read_livekit(text, origin, absurd_ms=absurd_ms)
    elif fmt == "otel":
        table = read_otel(text, origin, absurd_ms=absurd_ms)
    else:
        raise ScenarioError(f"unknown trace format {fmt!r}; allowed: {', '.join(FORMATS)}", origin=origin)
    if not table.turns:
        raise ScenarioError(f"no turns found in this {fmt} trace", origin=origin)
    return table
