"""LiveKit Agents per-message metrics: the chat history (``session.history.to_dict()``, or one
``conversation_item_added`` item per line) with ``metrics`` on each message, in seconds.

- user message: ``end_of_turn_delay`` (last speech the VAD saw -> turn committed),
  ``transcription_delay`` (-> final transcript);
- assistant message: ``llm_node_ttft``, ``tts_node_ttfb``, ``e2e_latency`` (agent started
  speaking - user stopped speaking).

A turn is an assistant message with metrics, joined to the user message before it (its endpointing).
The total is ``e2e_latency``; what it has beyond the three stages is ``other``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from voicebudget.traces._options import ReadOptions
from voicebudget.traces._table import Anomaly, TraceTable, TurnBuilder

__all__ = ["looks_like_livekit_history", "read_livekit_history"]

ANCHOR = "LiveKit: the user's last speech frame as the VAD saw it (per-message metrics)"
TOTAL = "e2e_latency of the assistant message (agent started speaking - user stopped speaking)"
_KEYS = re.compile(r'"(llm_node_ttft|tts_node_ttfb|end_of_turn_delay)"')
_NEEDED = {
    "endpointing": ("end_of_turn_delay", "user message with end_of_turn_delay before it"),
    "llm_ttft": ("llm_node_ttft", "llm_node_ttft"),
    "tts_ttfb": ("tts_node_ttfb", "tts_node_ttfb"),
}


def looks_like_livekit_history(text: str) -> bool:
    """True for chat-history items carrying LiveKit's per-message metrics."""
    return _KEYS.search(text[:200_000]) is not None and '"role"' in text[:200_000]


def _items(text: str, loose: list[Anomaly], origin: str) -> list[tuple[dict[str, Any], int]]:
    """Items with the line each starts on: one document (``{"items": [...]}`` or a list), else one
    item per line."""
    starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line_of(offset: int) -> int:
        return sum(1 for s in starts if s <= offset)

    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        out = []
        for i, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                item = json.loads(raw[raw.find("{"):] if "{" in raw else raw)
            except json.JSONDecodeError as exc:
                loose.append(Anomaly(i, "", raw.strip()[:120], f"unparseable JSON (line cut short?): {exc.msg}",
                                     origin))
                continue
            if isinstance(item, dict):
                out.append((item.get("item", item), i))
        return out
    items = doc.get("items", []) if isinstance(doc, dict) else doc
    out, cursor = [], 0
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        key = f'"{item.get("id")}"' if item.get("id") else '"role"'
        pos = text.find(key, cursor)
        cursor = pos + 1 if pos >= 0 else cursor
        out.append((item, line_of(max(pos, 0))))
    return out


def read_livekit_history(text: str, origin: str = "<trace>", options: ReadOptions | None = None) -> TraceTable:
    """Rebuild per-turn stages from LiveKit chat-history items with per-message metrics.

    :param text: ``session.history.to_dict()`` as JSON, or one item per line (seconds).
    :param origin: the file name for anomalies and reports.
    :param options: the readers' options (here ``absurd_ms``: a stage above it is flagged).
    :returns: one turn per assistant message with metrics; flagged as the other readers do.
    """
    absurd_ms = (options or ReadOptions()).absurd_ms
    loose: list[Anomaly] = []
    builders: list[TurnBuilder] = []
    user: tuple[dict[str, Any], int] | None = None
    for item, line in _items(text, loose, origin):
        metrics = item.get("metrics") if isinstance(item.get("metrics"), dict) else None
        if item.get("role") == "user":
            user = (metrics or {}, line)
            continue
        if item.get("role") != "assistant" or not metrics:
            continue
        b = TurnBuilder(str(item.get("id") or f"line-{line}"), line, origin, absurd_ms)
        if user is not None and "end_of_turn_delay" in user[0]:
            b.set_stage("endpointing", b.seconds(user[0]["end_of_turn_delay"], line=user[1], fld="end_of_turn_delay"))
            b.set_stage("asr", b.seconds(user[0].get("transcription_delay"), line=user[1], fld="transcription_delay",
                                         missing_ok=True))
        user = None
        b.set_stage("llm_ttft", b.seconds(metrics.get("llm_node_ttft"), line=line, fld="llm_node_ttft",
                                          missing_ok=True))
        b.set_stage("tts_ttfb", b.seconds(metrics.get("tts_node_ttfb"), line=line, fld="tts_node_ttfb",
                                          missing_ok=True))
        b.require(_NEEDED)
        total = None
        if "e2e_latency" in metrics:
            total = b.seconds(metrics["e2e_latency"], line=line, fld="e2e_latency")
        b.close_with_residual(total, line, "e2e_latency", required=tuple(_NEEDED))
        builders.append(b)
    turns = tuple(b.build(i) for i, b in enumerate(builders))
    anomalies = sorted([*loose, *(a for b in builders for a in b.anomalies)], key=lambda a: a.line)
    return TraceTable(origin, "livekit-history", ANCHOR, TOTAL, turns, tuple(anomalies))
