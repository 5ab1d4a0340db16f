"""Barge-ins as the agent's trace records them: LiveKit's ``interruption_metrics`` and Pipecat's
interruption lines. The recording measures the whole stop (caller onset -> audio heard to stop,
:class:`~voicebudget.audio.BargeIn`); a trace gives the server's part of it.

- **LiveKit** (``livekit-agents`` 1.x, ``metrics/base.py`` ``InterruptionMetrics``, read in the 1.8.9
  wheel 2026-12-01): ``detection_delay`` (s: the onset of the speech -> the interruption model's
  final prediction), ``total_duration`` (the detector's round trip), ``prediction_duration``; one
  ``metrics_collected`` line per decision, as JSON (``model_dump()``) or in ``log_metrics()``'s
  ``Interruption metrics {...}`` line.
- **Pipecat** (1.x debug log): ``User started speaking`` (the VAD's start, ``start_secs`` after the
  onset; ``start_secs`` from the log's ``Setting VAD params to: ...``), then
  ``<Processor>#N: broadcasting interruption`` (``frame_processor.py``, 1.14: the
  ``InterruptionFrame`` that stops the TTS and the output) and ``Bot stopped speaking`` (the output
  transport, when logged): detection = broadcast - (VAD start - start_secs); server stop = bot
  stopped - onset.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from voicebudget._io import MAX_TRACE_BYTES, iter_lines

__all__ = ["TraceBargeIn", "read_barge_ins"]

DEFAULT_START_SECS = 0.2
"""Pipecat ``VADParams.start_secs`` default, s (``audio/vad/vad_analyzer.py``, 1.14)."""
WINDOW_S = 5.0
"""An interruption more than 5 s after the VAD start is not that start's."""

_TS = re.compile(r"^(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,6})?)")
_START_SECS = re.compile(r"Setting VAD params to:.*\bstart_secs=([0-9.]+)")
_USER_STARTED = re.compile(r"\bUser started speaking\b")
_BROADCAST = re.compile(r"#\d+: broadcasting interruption\b")
_BOT_STOPPED = re.compile(r"\bBot stopped speaking\b")
_INTERRUPTION = re.compile(r"""["']?type["']?\s*[:=]\s*["']interruption_metrics["']|\bInterruption metrics \{""")


@dataclass(frozen=True)
class TraceBargeIn:
    """One barge-in as a trace records it (ms).

    :ivar line: the line it was read from (the decision).
    :ivar detection_ms: speech onset -> the interruption decided.
    :ivar stop_ms: speech onset -> the server's output stopped (Pipecat ``Bot stopped speaking``), if logged.
    :ivar source: ``"livekit"`` or ``"pipecat"``.
    """

    origin: str
    line: int
    detection_ms: float
    stop_ms: float | None
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "detection_ms": self.detection_ms, "stop_ms": self.stop_ms, "source": self.source}


def _ts(line: str) -> float | None:
    m = _TS.match(line)
    if m is None:
        return None
    try:
        return datetime.fromisoformat(m.group(1).replace(",", ".").replace("T", " ")).replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def _livekit(lineno: int, line: str, origin: str) -> TraceBargeIn | None:
    start = line.find("{")
    if start < 0:
        return None
    try:
        obj = json.loads(line[start:])
    except (ValueError, RecursionError):
        return None
    if isinstance(obj, dict) and isinstance(obj.get("metrics"), dict):
        obj = obj["metrics"]
    if not isinstance(obj, dict):
        return None
    delay = obj.get("detection_delay")
    if isinstance(delay, bool) or not isinstance(delay, int | float) or not 0 <= delay < 60:
        return None
    return TraceBargeIn(origin, lineno, float(delay) * 1000.0, None, "livekit")


def read_barge_ins(path: str | Path) -> list[TraceBargeIn]:
    """The barge-ins a LiveKit metrics file or a Pipecat debug log records (see the module docstring).

    Lines that do not parse, and values that are not a duration under a minute, are skipped (a
    trace's turns and anomalies are :func:`~voicebudget.traces.read_trace`'s job).

    :raises ScenarioError: the file is missing, unreadable or over the trace size cap.
    """
    origin = str(path)
    out: list[TraceBargeIn] = []
    start_secs = DEFAULT_START_SECS
    vad_start: float | None = None
    pending: tuple[float, TraceBargeIn] | None = None  # (onset s, the barge-in) until the bot stops
    for lineno, line in iter_lines(path, max_bytes=MAX_TRACE_BYTES):
        if _INTERRUPTION.search(line):
            found = _livekit(lineno, line, origin)
            if found is not None:
                out.append(found)
            continue
        if (m := _START_SECS.search(line)) is not None:
            start_secs = float(m.group(1))
        elif _USER_STARTED.search(line) and "strategy" not in line:
            vad_start = _ts(line)
        elif _BROADCAST.search(line) and vad_start is not None:
            t = _ts(line)
            if t is not None and 0 <= t - vad_start <= WINDOW_S:
                onset = vad_start - start_secs
                if pending is not None:
                    out.append(pending[1])
                pending = (onset, TraceBargeIn(origin, lineno, (t - onset) * 1000.0, None, "pipecat"))
            vad_start = None
        elif _BOT_STOPPED.search(line) and pending is not None:
            t = _ts(line)
            onset, event = pending
            stop = (t - onset) * 1000.0 if t is not None and t >= onset else None
            out.append(TraceBargeIn(origin, event.line, event.detection_ms, stop, "pipecat"))
            pending = None
    if pending is not None:
        out.append(pending[1])
    return out
