"""LiveKit Agents metrics as JSON lines: the models passed to ``metrics_collected``, one per line.

Shapes from ``livekit-agents/livekit/agents/metrics/base.py`` (``EOUMetrics``, ``LLMMetrics``,
``TTSMetrics``, dumped with pydantic's ``model_dump()``), all durations in seconds:

- ``eou_metrics``: ``end_of_utterance_delay`` (last speech the VAD saw -> turn committed; it
  contains ``transcription_delay``, last speech -> final transcript), ``speech_id``;
- ``llm_metrics``: ``ttft`` (request -> first token; -1 when no token came), ``speech_id``;
- ``tts_metrics``: ``ttfb`` (first text -> first audio byte), ``connection_reused``,
  ``acquire_time``, ``speech_id``.

Lines are joined into turns by ``speech_id`` (``sequence_id`` in the 0.x ``VoicePipelineAgent``
metrics). Within a turn the first ``llm_metrics``/``tts_metrics`` counts (a tool-call follow-up or
a later TTS segment has another ``request_id`` and is not on the speaking path); the same request
twice, or a second ``eou_metrics``, is a duplicate. Other types (``stt_metrics``, which is per request
and has no ``speech_id``; ``vad_metrics``; ...) are skipped. A line may also be wrapped as
``{"metrics": {...}}`` (an event logged whole). The turn total is LiveKit's documented turn latency
``end_of_utterance_delay + ttft + ttfb`` (docs.livekit.io, "Logs, metrics, and telemetry"), which
leaves out the LLM's time to the first sentence and the transport to the listener.
"""

from __future__ import annotations

import json
import re
from typing import Any

from voicebudget.traces._options import ReadOptions
from voicebudget.traces._table import Anomaly, TraceTable, TurnBuilder

__all__ = ["ANCHOR", "TOTAL", "looks_like_livekit", "read_livekit"]

ANCHOR = "LiveKit: the last audio frame the VAD classed as speech (EOUMetrics.end_of_utterance_delay starts there)"
TOTAL = "end_of_utterance_delay + llm ttft + tts ttfb (LiveKit's documented turn latency; server side)"

_TYPES = {"eou_metrics", "llm_metrics", "tts_metrics"}
_SPEECH_ID = re.compile(r'"(?:speech_id|sequence_id)"\s*:\s*"([^"]+)"')
_TYPE = re.compile(r'"type"\s*:\s*"(\w+_metrics)"')
_FIELD = {"eou_metrics": "end_of_utterance_delay", "llm_metrics": "ttft", "tts_metrics": "ttfb"}
_NEEDED = {
    "endpointing": ("end_of_utterance_delay", "eou_metrics line"),
    "llm_ttft": ("ttft", "llm_metrics line"),
    "tts_ttfb": ("ttfb", "tts_metrics line"),
}


def looks_like_livekit(text: str) -> bool:
    """True when a JSON line carries a LiveKit metrics ``type`` (``..._metrics``)."""
    return re.search(r'"type"\s*:\s*"(eou|llm|tts|stt|vad)_metrics"', text[:200_000]) is not None


class _Reader:
    def __init__(self, origin: str, absurd_ms: float) -> None:
        self.origin = origin
        self.absurd_ms = absurd_ms
        self.turns: dict[str, TurnBuilder] = {}
        self.seen: dict[tuple[str, str], tuple[int, str]] = {}
        self.loose: list[Anomaly] = []
        self.unplaced: list[tuple[int, str, str, str]] = []

    def turn(self, speech_id: str, line: int) -> TurnBuilder:
        if speech_id not in self.turns:
            self.turns[speech_id] = TurnBuilder(speech_id, line, self.origin, self.absurd_ms)
        return self.turns[speech_id]

    def broken(self, lineno: int, raw: str, reason: str) -> None:
        """Flag a broken line on its turn: the one its ``speech_id`` names, else (the id was cut off)
        resolved by position in :meth:`resolve`."""
        snippet = raw if len(raw) <= 120 else raw[:117] + "..."
        kind_match = _TYPE.search(raw)
        kind = kind_match.group(1) if kind_match else ""
        match = _SPEECH_ID.search(raw)
        if match:
            turn = self.turn(match.group(1), lineno)
            turn.flag(lineno, _FIELD.get(kind, ""), snippet, reason)
            if kind in _TYPES:
                self.seen.setdefault((turn.id, kind), (lineno, ""))
        else:
            self.unplaced.append((lineno, kind, snippet, reason))

    def resolve(self) -> None:
        """Place broken lines without a ``speech_id``: an ``eou_metrics`` line opens a turn, so it
        goes to the next turn still lacking one; an ``llm``/``tts`` line to the previous turn still
        lacking that type. That turn is then not flagged a second time for the missing line."""
        order = list(self.turns.values())
        for lineno, kind, snippet, reason in self.unplaced:
            lacking = [t for t in order if kind in _TYPES and (t.id, kind) not in self.seen]
            if kind == "eou_metrics":
                target = next((t for t in lacking if t.line > lineno), None)
            else:
                target = next((t for t in reversed(lacking) if t.line < lineno), None)
            if target is None:
                self.loose.append(Anomaly(lineno, _FIELD.get(kind, ""), snippet, reason, self.origin))
                continue
            target.flag(lineno, _FIELD[kind], snippet, reason)
            self.seen[(target.id, kind)] = (lineno, "")
            target.line = min(target.line, lineno)

    def line(self, lineno: int, raw: str) -> None:
        start = raw.find("{")
        if start < 0:
            return  # not JSON: a plain log line around the metrics
        try:
            obj = json.loads(raw[start:])  # a log prefix before the JSON object is allowed
        except json.JSONDecodeError as exc:
            if start > 0 and not _SPEECH_ID.search(raw) and "_metrics" not in raw:
                return  # a plain log line that happens to contain a brace
            self.broken(lineno, raw, f"unparseable JSON (line cut short?): {exc.msg}")
            return
        if isinstance(obj, dict) and isinstance(obj.get("metrics"), dict) and "type" in obj["metrics"]:
            obj = obj["metrics"]
        if not isinstance(obj, dict):
            self.broken(lineno, raw, "not a JSON object")
            return
        kind = obj.get("type")
        if kind not in _TYPES:
            return
        speech_id = obj.get("speech_id") or obj.get("sequence_id")  # sequence_id: VoicePipelineAgent (0.x)
        if not isinstance(speech_id, str) or not speech_id:
            self.loose.append(Anomaly(lineno, "speech_id", speech_id, f"{kind} without a speech_id", self.origin))
            return
        self.record(self.turn(speech_id, lineno), str(kind), obj, lineno)

    def record(self, turn: TurnBuilder, kind: str, obj: dict[str, Any], lineno: int) -> None:
        request = str(obj.get("request_id") or "")
        first = self.seen.setdefault((turn.id, kind), (lineno, request))
        if first[0] != lineno:
            if kind == "eou_metrics" or request == first[1]:
                turn.flag(lineno, "speech_id", turn.id,
                          f"duplicate {kind} for this speech_id (first on line {first[0]})")
            # else: a later request of the same turn (tool-call follow-up, next TTS segment); the
            # first one is on the speaking path
            return
        if obj.get("error"):
            turn.flag(lineno, "error", str(obj["error"])[:80], f"{kind} reports an error")
        if kind == "eou_metrics":
            turn.set_stage("endpointing", turn.seconds(obj.get("end_of_utterance_delay"), line=lineno,
                                                       fld="end_of_utterance_delay"))
            turn.set_stage("asr", turn.seconds(obj.get("transcription_delay"), line=lineno,
                                               fld="transcription_delay", missing_ok=True))
        elif kind == "llm_metrics":
            turn.set_stage("llm_ttft", self.first_output(turn, obj.get("ttft"), lineno, "ttft", "no first token"))
        else:
            turn.set_stage("tts_ttfb", self.first_output(turn, obj.get("ttfb"), lineno, "ttfb", "no first audio"))
            if obj.get("connection_reused") is False:
                turn.cold = True

    @staticmethod
    def first_output(turn: TurnBuilder, value: Any, lineno: int, fld: str, what: str) -> float | None:
        if value == -1:
            turn.flag(lineno, fld, value, f"{what} ({fld} = -1)")
            return None
        return turn.seconds(value, line=lineno, fld=fld)

    def table(self) -> TraceTable:
        self.resolve()
        turns = []
        anomalies = list(self.loose)
        for index, builder in enumerate(self.turns.values()):
            builder.require(_NEEDED)
            builder.close_with_residual(None, builder.line, "", required=tuple(_NEEDED))
            turns.append(builder.build(index))
            anomalies.extend(builder.anomalies)
        anomalies.sort(key=lambda a: a.line)
        return TraceTable(self.origin, "livekit", ANCHOR, TOTAL, tuple(turns), tuple(anomalies))


def read_livekit(text: str, origin: str = "<trace>", options: ReadOptions | None = None) -> TraceTable:
    """Rebuild per-turn stages from LiveKit metrics JSON lines.

    :param text: the file's content, one JSON object per line (seconds).
    :param origin: the file name for anomalies and reports.
    :param options: the readers' options (here ``absurd_ms``: a stage above it is flagged).
    :returns: a :class:`TraceTable` in ms; turns in order of first appearance, each flagged when a
        line of it is broken, a value is negative (``ttft = -1``: no token), absurd or missing, or a
        metrics type repeats for its ``speech_id``.
    """
    absurd_ms = (options or ReadOptions()).absurd_ms
    reader = _Reader(origin, absurd_ms)
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if raw.strip():
            reader.line(lineno, raw.strip())
    return reader.table()
