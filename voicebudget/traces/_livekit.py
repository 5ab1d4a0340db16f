"""LiveKit Agents metrics, one per line: the models passed to ``metrics_collected`` as JSON
(``model_dump()``), or as pydantic prints them (``str()``/``repr()``, see :mod:`._pyrepr`).

Shapes from ``livekit-agents/livekit/agents/metrics/base.py`` (rules with versions and sources in
:mod:`._livekit_rules`), all durations in seconds:

- ``eou_metrics``: ``end_of_utterance_delay`` (last speech the VAD saw -> turn committed; it
  contains ``transcription_delay``, last speech -> final transcript), ``speech_id``;
- ``llm_metrics``: ``ttft`` (request -> first token; -1 when no token came), ``speech_id``;
- ``tts_metrics``: ``ttfb`` (first text -> first audio byte), ``connection_reused``,
  ``acquire_time``, ``speech_id``;
- ``realtime_model_metrics`` (speech-to-speech models): ``ttft`` (response created -> first *audio*
  token; -1 when none came), ``request_id``. Each is one turn of its own, its ``ttft`` the LLM stage
  and the total; the model's own turn detection before the response is not in any LiveKit figure.

Lines are joined into turns by ``speech_id`` (``sequence_id`` in the 0.x ``VoicePipelineAgent``
metrics). Within a turn the first ``llm_metrics``/``tts_metrics`` counts (a tool-call follow-up or
a later TTS segment has another ``request_id`` and is not on the speaking path); the same request
twice, or a second ``eou_metrics``, is a duplicate. Other types (``stt_metrics``, which is per request
and has no ``speech_id``; ``vad_metrics``; ...) are skipped. A line may also be wrapped as
``{"metrics": {...}}`` (an event logged whole). The turn total is LiveKit's documented turn latency
``end_of_utterance_delay + ttft + ttfb`` (docs.livekit.io, "Logs, metrics, and telemetry"), which
leaves out the LLM's time to the first sentence and the transport to the listener. A turn missing
one of the three metrics is flagged naming the metric and the ``speech_id``.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable
from typing import Any

from voicebudget.traces._jsonsafe import iter_lines, json_kind, loads
from voicebudget.traces._livekit_rules import RULES, flag_stale_values
from voicebudget.traces._options import ReadOptions
from voicebudget.traces._pyrepr import looks_like_metrics_repr, parse_metrics_repr
from voicebudget.traces._table import Anomaly, TraceTable, TurnBuilder

__all__ = ["ANCHOR", "TOTAL", "looks_like_livekit", "read_livekit"]

ANCHOR = "LiveKit: the last audio frame the VAD classed as speech (EOUMetrics.end_of_utterance_delay starts there)"
TOTAL = "end_of_utterance_delay + llm ttft + tts ttfb (LiveKit's documented turn latency; server side)"
ANCHOR_REALTIME = (
    "LiveKit realtime model: the response's creation (the model's own turn detection before it is not in the figure)"
)
TOTAL_REALTIME = "realtime_model_metrics.ttft (response created -> first audio token; server side)"

_TYPES = ("eou_metrics", "llm_metrics", "tts_metrics")
_REALTIME = "realtime_model_metrics"
_SPEECH_ID = re.compile(r"""["']?(?:speech_id|sequence_id)["']?\s*[:=]\s*["']([^"']{1,200})["']""")
_TYPE = re.compile(r"""["']?type["']?\s*[:=]\s*["'](\w{1,40}_metrics)["']""")
_FIELD = {"eou_metrics": "end_of_utterance_delay", "llm_metrics": "ttft", "tts_metrics": "ttfb", _REALTIME: "ttft"}
_WHAT = {"eou_metrics": "end of utterance delay", "llm_metrics": "LLM TTFT", "tts_metrics": "TTS TTFB"}
_STAGE = {"eou_metrics": "endpointing", "llm_metrics": "llm_ttft", "tts_metrics": "tts_ttfb"}
_DETECT = re.compile(r"""["']type["']\s*:\s*["'](eou|llm|tts|stt|vad|realtime_model)_metrics["']""")


def looks_like_livekit(text: str) -> bool:
    """True when a line carries a LiveKit metrics ``type`` (``..._metrics``) as JSON or as pydantic
    prints it."""
    head = text[:200_000]
    return _DETECT.search(head) is not None or looks_like_metrics_repr(head)


def _snippet(raw: str) -> str:
    return raw if len(raw) <= 120 else raw[:117] + "..."


class _Reader:
    def __init__(self, origin: str, absurd_ms: float) -> None:
        self.origin = origin
        self.absurd_ms = absurd_ms
        self.turns: dict[str, TurnBuilder] = {}
        self.seen: dict[tuple[str, str], tuple[int, str]] = {}
        self.loose: list[Anomaly] = []
        self.unplaced: list[tuple[int, str, str, str]] = []
        self.values: dict[str, list[tuple[TurnBuilder, int, str, Any]]] = {"ttft": [], "ttfb": []}

    def turn(self, turn_id: str, line: int, rules: str) -> TurnBuilder:
        if turn_id not in self.turns:
            self.turns[turn_id] = TurnBuilder(turn_id, line, self.origin, self.absurd_ms)
            self.turns[turn_id].rules = rules
        return self.turns[turn_id]

    def broken(self, lineno: int, raw: str, reason: str) -> None:
        """Flag a broken line on its turn: the one its ``speech_id`` names, else (the id was cut off)
        resolved by position in :meth:`resolve`."""
        snippet = _snippet(raw)
        kind_match = _TYPE.search(raw)
        kind = kind_match.group(1) if kind_match else ""
        match = _SPEECH_ID.search(raw)
        if match and kind != _REALTIME:
            turn = self.turn(match.group(1), lineno, RULES["livekit-metrics-1.x"].name)
            turn.flag(lineno, _FIELD.get(kind, ""), snippet, reason)
            if kind in _TYPES:
                self.seen.setdefault((turn.id, kind), (lineno, ""))
        else:
            self.unplaced.append((lineno, kind, snippet, reason))

    def resolve(self) -> None:
        """Place broken lines without a ``speech_id``: an ``eou_metrics`` line opens a turn, so it
        goes to the next turn still lacking one; an ``llm``/``tts`` line to the previous turn still
        lacking that type. That turn is then not flagged a second time for the missing line.

        Per type, the turns lacking it are kept sorted by line (bisect), so many broken lines in a
        long file cost ``O(n log n)``, not ``O(n^2)``."""
        order = [t for t in self.turns.values() if not t.rules.startswith("livekit-realtime")]
        lacking = {
            kind: sorted((t.line, i) for i, t in enumerate(order) if (t.id, kind) not in self.seen) for kind in _TYPES
        }
        for lineno, kind, snippet, reason in self.unplaced:
            if kind not in _TYPES:
                self.loose.append(Anomaly(lineno, _FIELD.get(kind, ""), snippet, reason, self.origin))
                continue
            keys = lacking[kind]
            if kind == "eou_metrics":
                at = bisect.bisect_right(keys, (lineno, len(order)))
            else:
                at = bisect.bisect_left(keys, (lineno, -1)) - 1
            if not 0 <= at < len(keys):
                self.loose.append(Anomaly(lineno, _FIELD.get(kind, ""), snippet, reason, self.origin))
                continue
            old_line, index = keys.pop(at)
            target = order[index]
            target.flag(lineno, _FIELD[kind], snippet, reason)
            self.seen[(target.id, kind)] = (lineno, "")
            if lineno < old_line:  # the turn starts earlier now: move it in the other types' lists
                target.line = lineno
                for other in _TYPES:
                    keys = lacking[other]
                    j = bisect.bisect_left(keys, (old_line, index))
                    if other != kind and j < len(keys) and keys[j] == (old_line, index):
                        del keys[j]
                        bisect.insort(keys, (lineno, index))

    def parse(self, lineno: int, raw: str) -> tuple[dict[str, Any] | None, str]:
        """The metrics object on a line and how it was written (``json``, ``pydantic``), or None."""
        start = raw.find("{")
        json_type = start >= 0 and ('"type"' in raw or '"metrics"' in raw)
        if not json_type and looks_like_metrics_repr(raw):
            return parse_metrics_repr(raw), "pydantic"
        if start < 0:
            return None, ""  # not JSON: a plain log line around the metrics
        obj, error = loads(raw[start:])  # a log prefix before the JSON object is allowed
        if error is not None:
            if start > 0 and not _SPEECH_ID.search(raw) and "_metrics" not in raw:
                return None, ""  # a plain log line that happens to contain a brace
            self.broken(lineno, raw, error)
            return None, ""
        if isinstance(obj, dict) and isinstance(obj.get("metrics"), dict) and "type" in obj["metrics"]:
            obj = obj["metrics"]
        if not isinstance(obj, dict):
            if "_metrics" in raw:
                self.broken(lineno, raw, f"not a JSON object but {json_kind(obj)}")
            return None, ""
        return obj, "json"

    def line(self, lineno: int, raw: str) -> None:
        obj, how = self.parse(lineno, raw)
        if obj is None:
            return
        kind = obj.get("type")
        if not isinstance(kind, str):
            if "type" in obj:
                self.loose.append(
                    Anomaly(
                        lineno,
                        "type",
                        _snippet(str(kind)),
                        f"type is {json_kind(kind)}, not a metrics type name",
                        self.origin,
                    )
                )
            return
        if kind == _REALTIME:
            self.realtime(lineno, obj, how)
            return
        if kind not in _TYPES:
            return
        speech_id = obj.get("speech_id") or obj.get("sequence_id")  # sequence_id: VoicePipelineAgent (0.x)
        if not isinstance(speech_id, str) or not speech_id:
            shown = speech_id if speech_id is None or isinstance(speech_id, str | int | float) else str(speech_id)
            self.loose.append(
                Anomaly(lineno, "speech_id", shown, f"{kind} without a speech_id (a string)", self.origin)
            )
            return
        rules = "livekit-metrics-1.x" if obj.get("speech_id") else "livekit-metrics-0.x"
        if how == "pydantic":
            rules += " (pydantic str/repr)"
        self.record(self.turn(speech_id, lineno, rules), kind, obj, lineno)

    def realtime(self, lineno: int, obj: dict[str, Any], how: str) -> None:
        request = obj.get("request_id")
        turn_id = request if isinstance(request, str) and request else f"line-{lineno}"
        rules = "livekit-realtime-1.1+" + (" (pydantic str/repr)" if how == "pydantic" else "")
        if turn_id in self.turns:
            self.turns[turn_id].flag(
                lineno,
                "request_id",
                turn_id,
                f"duplicate realtime_model_metrics for this request_id (first on line {self.turns[turn_id].line})",
            )
            return
        turn = self.turn(turn_id, lineno, rules)
        self.first_output(turn, obj.get("ttft"), lineno, "ttft", "no first audio token", "llm_ttft")
        if obj.get("connection_reused") is False and obj.get("acquire_time"):
            turn.cold = True

    def record(self, turn: TurnBuilder, kind: str, obj: dict[str, Any], lineno: int) -> None:
        request = str(obj.get("request_id") or "")
        first = self.seen.setdefault((turn.id, kind), (lineno, request))
        if first[0] != lineno:
            if kind == "eou_metrics" or request == first[1]:
                turn.flag(
                    lineno, "speech_id", turn.id, f"duplicate {kind} for this speech_id (first on line {first[0]})"
                )
            # else: a later request of the same turn (tool-call follow-up, next TTS segment); the
            # first one is on the speaking path
            return
        if obj.get("error"):
            turn.flag(lineno, "error", str(obj["error"])[:80], f"{kind} reports an error")
        if kind == "eou_metrics":
            turn.set_stage(
                "endpointing",
                turn.seconds(obj.get("end_of_utterance_delay"), line=lineno, fld="end_of_utterance_delay"),
            )
            turn.set_stage(
                "asr",
                turn.seconds(obj.get("transcription_delay"), line=lineno, fld="transcription_delay", missing_ok=True),
            )
        elif kind == "llm_metrics":
            self.first_output(turn, obj.get("ttft"), lineno, "ttft", "no first token", "llm_ttft")
        else:
            self.first_output(turn, obj.get("ttfb"), lineno, "ttfb", "no first audio", "tts_ttfb")
            acquire = obj.get("acquire_time")
            # a WebSocket TTS that opened its connection for this turn; an HTTP one reports
            # connection_reused false with acquire_time 0 on every request (metrics/base.py, 1.6+)
            if obj.get("connection_reused") is False and (acquire is None or acquire != 0):
                turn.cold = True

    def first_output(self, turn: TurnBuilder, value: Any, lineno: int, fld: str, what: str, stage: str) -> None:
        if value == -1 and not isinstance(value, bool):
            turn.flag(lineno, fld, value, f"{what} ({fld} = -1)")
            return
        ms = turn.seconds(value, line=lineno, fld=fld)
        turn.set_stage(stage, ms)
        if ms is not None:
            self.values[fld].append((turn, lineno, fld, value))

    def require(self, turn: TurnBuilder) -> None:
        """Flag each metric a pipeline turn lacks, naming the metric and the speech id (a value already
        flagged, or a broken line placed on the turn, is not flagged twice)."""
        for kind in _TYPES:
            if _STAGE[kind] in turn.stages_ms or (turn.id, kind) in self.seen:
                continue
            turn.flag(turn.line, kind, None, f"no {kind} line for speech_id {turn.id} ({_WHAT[kind]} unknown)")

    def table(self) -> TraceTable:
        self.resolve()
        for values in self.values.values():
            flag_stale_values(values)
        turns = []
        anomalies = list(self.loose)
        for index, builder in enumerate(self.turns.values()):
            if builder.rules.startswith("livekit-realtime"):
                builder.close_with_residual(None, builder.line, "", required=("llm_ttft",))
            else:
                self.require(builder)
                builder.close_with_residual(None, builder.line, "", required=tuple(_STAGE.values()))
            turns.append(builder.build(index))
            anomalies.extend(builder.anomalies)
        anomalies.sort(key=lambda a: a.line)
        realtime = [t for t in self.turns.values() if t.rules.startswith("livekit-realtime")]
        if realtime and len(realtime) == len(self.turns):
            anchor, total = ANCHOR_REALTIME, TOTAL_REALTIME
        elif realtime:
            anchor, total = f"{ANCHOR}; realtime turns: {ANCHOR_REALTIME}", f"{TOTAL}; realtime turns: {TOTAL_REALTIME}"
        else:
            anchor, total = ANCHOR, TOTAL
        return TraceTable(self.origin, "livekit", anchor, total, tuple(turns), tuple(anomalies))


def read_livekit(text: str, origin: str = "<trace>", options: ReadOptions | None = None) -> TraceTable:
    """Rebuild per-turn stages from LiveKit metrics lines (JSON, or pydantic ``str()``/``repr()``).

    :param text: the file's content, one metrics object per line (seconds); other lines are skipped.
    :param origin: the file name for anomalies and reports.
    :param options: the readers' options (here ``absurd_ms``: a stage above it is flagged).
    :returns: a :class:`TraceTable` in ms; turns in order of first appearance, each flagged when a
        line of it is broken, a value is negative (``ttft = -1``: no token), absurd, missing or repeated
        to the last digit on every turn (stale), a metrics type is missing (named with the speech id)
        or repeats for its ``speech_id``.
    """
    return _read(enumerate(iter_lines(text), start=1), origin, options)


def read_livekit_lines(
    open_lines: Callable[[], Iterable[tuple[int, str]]],
    origin: str = "<trace>",
    options: ReadOptions | None = None,
) -> TraceTable:
    """:func:`read_livekit` on a trace given as lines, in one pass keeping one line at a time in memory
    (per turn, only its stage values and flags are kept).

    :param open_lines: gives the trace's ``(line number from 1, line)`` pairs as
        :func:`voicebudget._io.iter_lines` reads a file (its byte-order mark dropped).
    """
    return _read(open_lines(), origin, options, bom=True)


def _read(lines: Iterable[tuple[int, str]], origin: str, options: ReadOptions | None, bom: bool = False) -> TraceTable:
    reader = _Reader(origin, (options or ReadOptions()).absurd_ms)
    for lineno, raw in lines:
        if bom and lineno == 1:  # a second mark, as read_text then iter_lines(text) drop two
            raw = raw.removeprefix("\ufeff")
        if raw.strip():
            reader.line(lineno, raw.strip())
    return reader.table()
