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

The same metrics as LiveKit's own ``metrics.log_metrics()`` logs them (its ``basic_agent`` example
does) are read too, in both of LiveKit's formatters (``livekit/agents/cli/log.py``): the production
``JsonFormatter`` (one JSON object per line, ``"message": "EOU metrics"``, the fields flattened
beside it, the record's ``timestamp``) and the dev ``ColoredFormatter`` (``HH:MM:SS INFO
livekit.agents EOU metrics {"end_of_utterance_delay": 0.52, ...}``, colour codes and the console's
``\r`` dropped; a line the dev console prints twice is read once). ``log_metrics`` rounds the EOU
delays and ``ttft`` to 10 ms and logs no ``speech_id``: such lines are joined into turns by position
(each ``EOU metrics`` opens one).

Lines are joined into turns by ``speech_id`` (``sequence_id`` in the 0.x ``VoicePipelineAgent``
metrics). A turn is a sequence of LLM passes: when the first LLM request returns a tool call, the
tool runs and a later request of the same ``speech_id`` produces the speech (livekit agents issue
3824). The pass that speaks is the last one that started before the turn's first TTS request
(start = ``timestamp - duration``: LiveKit stamps a request's metrics when it ends); the passes
before it and the gaps between them are the ``llm_tool_call`` and ``tool`` stages, and its TTFT
``llm_2_ttft``. A later request or TTS segment after the speech began is not on the speaking path;
the same request twice, or a second ``eou_metrics``, is a duplicate. Metrics without a ``speech_id`` that
belong to a turn are placed by their time (:mod:`._livekit_extra`): 1.8's ``eot_inference_metrics``,
``interruption_metrics``, ``decision_metrics``, and ``avatar_metrics`` whose ``playback_latency`` is the
``output`` stage. Other types (``stt_metrics``, which is per request and has no ``speech_id``;
``vad_metrics``; ...) are skipped. A line may also be wrapped as
``{"metrics": {...}}`` (an event logged whole). The turn total is LiveKit's documented turn latency
``end_of_utterance_delay + ttft + ttfb`` (docs.livekit.io, "Logs, metrics, and telemetry"), which
leaves out the LLM's time to the first sentence and the transport to the listener; in a tool turn,
``end_of_utterance_delay`` + the first request's start to the speaking request's start + its
``ttft`` + ``ttfb``. A turn missing
one of the three metrics is flagged naming the metric and the ``speech_id``.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import deque
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from voicebudget.traces._jsonsafe import iter_lines, json_kind, loads
from voicebudget.traces._livekit_extra import AVATAR, BEFORE_COMMIT, Extra, place_extra
from voicebudget.traces._livekit_passes import TurnPaths, _number, _Passes, _Request
from voicebudget.traces._livekit_rules import RULES, StaleValues
from voicebudget.traces._options import ReadOptions
from voicebudget.traces._pyrepr import looks_like_metrics_repr, parse_metrics_repr
from voicebudget.traces._table import Anomaly, TraceTable, TraceTurn, TurnBuilder

__all__ = ["ANCHOR", "TOTAL", "looks_like_livekit", "read_livekit"]

ANCHOR = "LiveKit: the last audio frame the VAD classed as speech (EOUMetrics.end_of_utterance_delay starts there)"
TOTAL = (
    "end_of_utterance_delay + llm ttft + tts ttfb (LiveKit's documented turn latency; server side); a tool turn "
    "adds the first LLM request's start to the speaking request's start"
)
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
_DETECT = re.compile(
    r"""["']type["']\s*:\s*["'](eou|llm|tts|stt|vad|realtime_model)_metrics["']"""
    r'|"message": "(?:EOU|LLM|TTS|STT|RealtimeModel) metrics"'
    r"""|\b(?:EOU|LLM|TTS|RealtimeModel) metrics (?:\x1b\[[0-9;]*m)?\{"""
)
_LOG_MESSAGES = {
    "EOU metrics": "eou_metrics",
    "LLM metrics": "llm_metrics",
    "TTS metrics": "tts_metrics",
    "STT metrics": "stt_metrics",
    "RealtimeModel metrics": "realtime_model_metrics",
    "Interruption metrics": "interruption_metrics",
    "Avatar metrics": "avatar_metrics",
}
"""``log_metrics()``'s message for each metrics type (``livekit/agents/metrics/utils.py``, 1.x - 1.8.9)."""
_CONSOLE = re.compile(r"\b(?P<msg>EOU|LLM|TTS|STT|RealtimeModel|Interruption|Avatar) metrics (?P<extra>\{.*\})\s*$")
_CONSOLE_TIME = re.compile(r"^\s*(?:(\d{4}-\d{2}-\d{2}) )?(\d{2}):(\d{2}):(\d{2})(?:,(\d{3}))?\b")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ECHO_WINDOW = 16
"""A metrics log line identical to one of the last 16 is the dev console's echo, read once."""


def looks_like_livekit(text: str) -> bool:
    """True when a line carries a LiveKit metrics ``type`` (``..._metrics``) as JSON or as pydantic
    prints it."""
    head = text[:200_000]
    return _DETECT.search(head) is not None or looks_like_metrics_repr(head)


def _snippet(raw: str) -> str:
    return raw if len(raw) <= 120 else raw[:117] + "..."


def _span(obj: dict[str, Any], log_time: float | None) -> tuple[float | None, float | None]:
    """(start, end) of a request, s: LiveKit stamps metrics when the request ends (``timestamp``, its
    ``duration`` before); a ``log_metrics()`` line has the record's time and, for an LLM request, its
    ``completion_tokens / tokens_per_second`` (LiveKit computes the speed from the duration)."""
    if log_time is not None:
        tokens, speed = _number(obj.get("completion_tokens")), _number(obj.get("tokens_per_second"))
        duration = tokens / speed if tokens and speed and speed > 0 else None
        return (None if duration is None else log_time - duration), log_time
    end, duration = _number(obj.get("timestamp")), _number(obj.get("duration"))
    if end is None or duration is None or duration < 0:
        return None, end
    return end - duration, end


def _resolution(obj: dict[str, Any]) -> float:
    """The coarsest step among a metrics line's times and durations as printed, s: ``timestamp=1752415066.8``
    is known to 0.1 s (a float's shortest form round-trips, so its digits are the ones written), and a
    whole number (``100.0``) to the second; ``time.time()`` as LiveKit writes it, to the microsecond."""
    step = 0.0
    for key in _TIMED:
        value = obj.get(key)
        if value is None:
            continue
        if isinstance(value, float) and math.isfinite(value) and not value.is_integer():
            text = repr(value)
            if "e" not in text:
                step = max(step, 10.0 ** (text.find(".") + 1 - len(text)))
        elif isinstance(value, int | float) and not isinstance(value, bool) and value:
            step = max(step, 1.0)  # a whole number of seconds (100.0): known to the second at best
    return step


_TIMED = ("timestamp", "duration", "end_of_utterance_delay", "transcription_delay")
"""The keys of a metrics line whose printed digits say how fine its times are."""


def _log_time(obj: dict[str, Any]) -> float | None:
    """The record time of a JsonFormatter line (``timestamp`` in ISO 8601), s."""
    stamp = obj.get("timestamp")
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None


def _console_time(line: str) -> float | None:
    """The record time of a ColoredFormatter line with milliseconds (``YYYY-MM-DD HH:MM:SS,mmm``), s; the
    console's ``HH:MM:SS`` (whole seconds) times nothing: None."""
    m = _CONSOLE_TIME.match(line)
    if m is None or not m.group(5):
        return None
    day = 0.0
    if m.group(1):
        try:
            day = datetime.fromisoformat(m.group(1)).toordinal() * 86_400.0
        except ValueError:
            return None
    ms = int(m.group(5)) / 1000 if m.group(5) else 0.0
    return day + int(m.group(2)) * 3600 + int(m.group(3)) * 60 + int(m.group(4)) + ms


class _Reader:
    def __init__(self, origin: str, absurd_ms: float) -> None:
        self.origin = origin
        self.absurd_ms = absurd_ms
        self.turns: dict[str, TurnBuilder] = {}
        self.passes: dict[str, _Passes] = {}
        self.loose: list[Anomaly] = []
        self.unplaced: list[tuple[int, str, str, str]] = []
        self.values = {"ttft": StaleValues(), "ttfb": StaleValues()}
        self.positional: TurnBuilder | None = None  # the open turn of log_metrics() lines (no speech_id)
        self.extra: list[Extra] = []  # 1.8's eot/interruption/decision, avatar_metrics
        self.recent: deque[str] = deque(maxlen=_ECHO_WINDOW)
        self.paths = TurnPaths(self.passes, self.values)  # builds stages from a turn's requests

    def turn(self, turn_id: str, line: int, rules: str) -> TurnBuilder:
        turn = self.turns.get(turn_id)
        if turn is None:
            self.turns[turn_id] = turn = TurnBuilder(turn_id, line, self.origin, self.absurd_ms, reader="livekit")
            turn.rules = rules
            self.passes[turn_id] = _Passes()
        return turn

    def first_seen(self, turn_id: str, kind: str, lineno: int, request: str) -> tuple[int, str]:
        """The turn's first line of metrics type ``kind`` and its request id (``lineno`` and ``request`` when it
        is the first)."""
        return _first_seen(self.passes[turn_id].seen, kind, lineno, request)

    def has(self, turn_id: str, kind: str) -> bool:
        """Whether the turn has a line of metrics type ``kind`` (a broken one counts)."""
        passes = self.passes.get(turn_id)
        return passes is not None and bool(passes.seen[2 * _TYPES.index(kind)])

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
                self.first_seen(turn.id, kind, lineno, "")
        else:
            self.unplaced.append((lineno, kind, snippet, reason))

    def resolve(self) -> None:
        """Place broken lines without a ``speech_id``: an ``eou_metrics`` line opens a turn, so it
        goes to the next turn still lacking one; an ``llm``/``tts`` line to the previous turn still
        lacking that type. That turn is then not flagged a second time for the missing line.

        Per type, the turns lacking it are kept sorted by line (bisect), so many broken lines in a
        long file cost ``O(n log n)``, not ``O(n^2)``."""
        if not self.unplaced:
            return
        order = [t for t in self.turns.values() if not t.rules.startswith("livekit-realtime")]
        lacking = {
            kind: sorted((t.line, i) for i, t in enumerate(order) if not self.has(t.id, kind)) for kind in _TYPES
        }
        for lineno, kind, snippet, reason in self.unplaced:
            at = _lacking_at(lacking[kind], kind, lineno, len(order)) if kind in _TYPES else None
            if at is None:
                self.loose.append(Anomaly(lineno, _FIELD.get(kind, ""), snippet, reason, self.origin))
                continue
            old_line, index = lacking[kind].pop(at)
            target = order[index]
            target.flag(lineno, _FIELD[kind], snippet, reason)
            seen, k = self.passes[target.id].seen, 2 * _TYPES.index(kind)
            seen[k], seen[k + 1] = lineno, ""
            if lineno < old_line:  # the turn starts earlier now: move it in the other types' lists
                target.line = lineno
                _move_earlier(lacking, kind, (old_line, index), lineno)

    def log_record(self, raw: str) -> tuple[dict[str, Any], float | None] | None:
        """A ``log_metrics()`` line in LiveKit's dev ``ColoredFormatter``: the metrics as an object with
        its ``type``, and the record's time."""
        m = _CONSOLE.search(raw)
        if m is None:
            return None
        extra, error = loads(m.group("extra"))
        if error is not None or not isinstance(extra, dict):
            return None
        return {**extra, "type": _LOG_MESSAGES[m.group("msg") + " metrics"]}, _console_time(raw)

    def parse(self, lineno: int, raw: str) -> tuple[dict[str, Any] | None, str, float | None]:
        """The metrics object on a line, how it was written (``json``, ``pydantic``, ``log``) and, for a
        log record, its time (s); None when the line holds none."""
        if " metrics " in raw and "{" in raw and '"type"' not in raw:
            record = self.log_record(_ANSI.sub("", raw).replace("\r", "").strip())
            if record is not None:
                return record[0], "log", record[1]
        start = raw.find("{")
        if not _json_like(raw, start) and looks_like_metrics_repr(raw):
            return parse_metrics_repr(raw), "pydantic", None
        if start < 0:
            return None, "", None  # not JSON: a plain log line around the metrics
        return self.parse_json(lineno, raw, start)

    def parse_json(self, lineno: int, raw: str, start: int) -> tuple[dict[str, Any] | None, str, float | None]:
        """The JSON object from offset ``start`` on (a log prefix before it is allowed), as :meth:`parse`."""
        obj, error = loads(raw[start:])
        if error is not None:
            if start > 0 and not _SPEECH_ID.search(raw) and "_metrics" not in raw:
                return None, "", None  # a plain log line that happens to contain a brace
            self.broken(lineno, raw, error)
            return None, "", None
        obj = _unwrapped(obj)
        if not isinstance(obj, dict):
            if "_metrics" in raw:
                self.broken(lineno, raw, f"not a JSON object but {json_kind(obj)}")
            return None, "", None
        message = obj.get("message")
        if "type" not in obj and isinstance(message, str) and message in _LOG_MESSAGES:
            # LiveKit's production JsonFormatter: the fields flattened beside the message
            return {**obj, "type": _LOG_MESSAGES[message]}, "log", _log_time(obj)
        return obj, "json", None

    def echoed(self, raw: str) -> bool:
        """The dev console prints a job's log lines twice: the same line again is read once."""
        key = _ANSI.sub("", raw).replace("\r", "").strip()
        if key in self.recent:
            return True
        self.recent.append(key)
        return False

    def line(self, lineno: int, raw: str) -> None:
        if raw[0] == "{" and '"type"' in raw:  # a JSON object with a type (most lines): parse() would parse it so
            obj, how, log_time = self.parse_json(lineno, raw, 0)
        else:
            obj, how, log_time = self.parse(lineno, raw)
        if obj is None or (how == "log" and self.echoed(raw)):
            return
        kind = obj.get("type")
        if not isinstance(kind, str):
            if "type" in obj:
                self.loose.append(_bad_type(lineno, kind, self.origin))
            return
        if kind == _REALTIME:
            self.realtime(lineno, obj, how)
        elif kind in BEFORE_COMMIT or kind == AVATAR:
            self.extra_metrics(lineno, kind, obj, how, log_time)
        elif kind in _TYPES:
            self.pipeline_metrics(lineno, kind, obj, how, log_time)

    def extra_metrics(self, lineno: int, kind: str, obj: dict[str, Any], how: str, log_time: float | None) -> None:
        """Metrics without a ``speech_id`` that belong to a turn, placed at the end by their time (a
        ``log_metrics()`` line: the open turn's)."""
        self.extra.append(Extra(kind, lineno, obj, log_time, self.positional if how == "log" else None))

    def pipeline_metrics(self, lineno: int, kind: str, obj: dict[str, Any], how: str, log_time: float | None) -> None:
        """An ``eou``/``llm``/``tts`` metrics object: to its turn by ``speech_id``, or by position for a
        ``log_metrics()`` line (which has none)."""
        speech_id = obj.get("speech_id") or obj.get("sequence_id")  # sequence_id: VoicePipelineAgent (0.x)
        if how == "log" and not speech_id:
            self.record(self.by_position(kind, lineno), kind, obj, lineno, log_time)
            return
        if not isinstance(speech_id, str) or not speech_id:
            shown = speech_id if speech_id is None or isinstance(speech_id, str | int | float) else str(speech_id)
            self.loose.append(
                Anomaly(lineno, "speech_id", shown, f"{kind} without a speech_id (a string)", self.origin)
            )
            return
        turn = self.turns.get(speech_id)
        if turn is None:
            turn = self.turn(speech_id, lineno, _rules(obj, how))
        self.record(turn, kind, obj, lineno, log_time)

    def by_position(self, kind: str, lineno: int) -> TurnBuilder:
        """The turn of a ``log_metrics()`` line, which carries no ``speech_id``: an ``EOU metrics`` line
        opens a turn; an LLM or TTS line joins the open one (a reply with no EOU before it, a greeting,
        opens its own)."""
        cur = self.positional
        passes = self.passes[cur.id] if cur is not None else None
        if cur is None or passes is None or _opens_turn(kind, cur, passes):
            cur = self.turn(f"turn-{len(self.turns) + 1}", lineno, "livekit-log-metrics")
            self.passes[cur.id].logged = True
            self.positional = cur
        return cur

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
        self.paths.first_output(turn, obj.get("ttft"), lineno, "ttft", "no first audio token", "llm_ttft")
        if obj.get("connection_reused") is False and obj.get("acquire_time"):
            turn.cold = True

    def record(self, turn: TurnBuilder, kind: str, obj: dict[str, Any], lineno: int, log_time: float | None) -> None:
        passes = self.passes[turn.id]
        if self.duplicate(turn, passes, kind, obj, lineno):
            return
        if obj.get("error"):
            turn.flag(lineno, "error", str(obj["error"])[:80], f"{kind} reports an error")
        if log_time is None and passes.resolution < 1.0:  # (1 s: the coarsest a line can print)
            passes.resolution = max(passes.resolution, _resolution(obj))
        if kind == "eou_metrics":
            self.eou(turn, passes, obj, lineno, log_time)
            return
        start, end = _span(obj, log_time)
        if kind == "llm_metrics":
            passes.llm.append(_Request(lineno, obj.get("ttft"), start, end))
            return
        if not passes.tts and _cold(obj):  # the first TTS request is the one on the speaking path
            turn.cold = True
        passes.tts.append(_Request(lineno, obj.get("ttfb"), None if log_time is not None else start, end))

    def duplicate(self, turn: TurnBuilder, passes: _Passes, kind: str, obj: dict[str, Any], lineno: int) -> bool:
        """A second ``eou_metrics`` for the turn, or the same request twice: flagged, not read."""
        request = str(obj.get("request_id") or "")
        first = _first_seen(passes.seen, kind, lineno, request)
        if first[0] != lineno and (kind == "eou_metrics" or (request and request == first[1])):
            turn.flag(lineno, "speech_id", turn.id, f"duplicate {kind} for this speech_id (first on line {first[0]})")
            return True
        return False

    def eou(self, turn: TurnBuilder, passes: _Passes, obj: dict[str, Any], lineno: int, log_time: float | None) -> None:
        """``eou_metrics``: the endpointing and ASR stages, and the turn's commit and final transcript times."""
        # LiveKit stamps EOU metrics right after on_user_turn_completed, at the turn's commit
        at = log_time if log_time is not None else _number(obj.get("timestamp"))
        callback = _number(obj.get("on_user_turn_completed_delay")) or 0.0
        eou, asr = _number(obj.get("end_of_utterance_delay")), _number(obj.get("transcription_delay"))
        passes.commit = None if at is None else at - callback
        if passes.commit is not None and eou is not None and asr is not None:
            passes.transcript = passes.commit - eou + asr
        turn.set_stage(
            "endpointing",
            turn.seconds(obj.get("end_of_utterance_delay"), line=lineno, fld="end_of_utterance_delay"),
        )
        turn.set_stage(
            "asr",
            turn.seconds(obj.get("transcription_delay"), line=lineno, fld="transcription_delay", missing_ok=True),
        )

    def require(self, turn: TurnBuilder) -> None:
        """Flag each metric a pipeline turn lacks, naming the metric and the speech id (a value already
        flagged, or a broken line placed on the turn, is not flagged twice)."""
        for kind in _TYPES:
            if _STAGE[kind] in turn.stages_ms or self.has(turn.id, kind):
                continue
            turn.flag(turn.line, kind, None, f"no {kind} line for speech_id {turn.id} ({_WHAT[kind]} unknown)")

    def place_extra(self, pipeline: list[TurnBuilder]) -> None:
        """Metrics without a ``speech_id`` on their turns (:func:`~voicebudget.traces._livekit_extra.place_extra`)."""
        commits = [(p.commit, t) for t in pipeline if (p := self.passes.get(t.id)) is not None and p.commit is not None]
        place_extra(self.extra, commits)

    def table(self) -> TraceTable:
        self.resolve()
        pipeline = [t for t in self.turns.values() if not t.rules.startswith("livekit-realtime")]
        for builder in pipeline:
            self.paths.path(builder)
        self.place_extra(pipeline)
        for values in self.values.values():
            values.flag()
        realtime = sum(1 for t in self.turns.values() if t.rules.startswith("livekit-realtime"))
        every = len(self.turns)
        del pipeline
        todo = list(self.turns.values())[::-1]
        self.turns.clear()
        turns: list[TraceTurn] = []
        anomalies = list(self.loose)
        while todo:  # each turn's working state is dropped once its row is built (peak memory)
            builder = todo.pop()
            index = len(turns)
            self.close(builder)
            turns.append(builder.build(index))
            anomalies.extend(builder.anomalies)
            self.passes.pop(builder.id, None)
        anomalies.sort(key=lambda a: a.line)
        anchor, total = self.anchor_and_total(realtime, every)
        return TraceTable(self.origin, "livekit", anchor, total, tuple(turns), tuple(anomalies))

    def close(self, builder: TurnBuilder) -> None:
        """A turn's missing metrics flagged and its total closed, with the stages it must have."""
        if builder.rules.startswith("livekit-realtime"):
            builder.close_with_residual(None, builder.line, "", required=("llm_ttft",))
            return
        self.require(builder)
        needed = (*_STAGE.values(), *(("llm_2_ttft", "tool") if self.tool_passes(builder) else ()))
        needed = tuple(s for s in needed if s not in builder.unknown_stages)
        builder.close_with_residual(None, builder.line, "", required=needed)

    @staticmethod
    def anchor_and_total(realtime: int, every: int) -> tuple[str, str]:
        """What ``t = 0`` and the total are: a pipeline's, a realtime model's, or both when the file has both
        (``realtime`` of its ``every`` turns are a realtime model's)."""
        if realtime and realtime == every:
            return ANCHOR_REALTIME, TOTAL_REALTIME
        if realtime:
            return f"{ANCHOR}; realtime turns: {ANCHOR_REALTIME}", f"{TOTAL}; realtime turns: {TOTAL_REALTIME}"
        return ANCHOR, TOTAL

    def tool_passes(self, turn: TurnBuilder) -> bool:
        """The turn's speech came from an LLM pass after a tool call."""
        passes = self.passes.get(turn.id)
        return passes is not None and len(passes.llm) > 1 and self.paths.speaking_pass(passes) > 0


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
        raw = raw.strip()
        if raw:
            reader.line(lineno, raw)
    return reader.table()


def _first_seen(seen: list[Any], kind: str, lineno: int, request: str) -> tuple[int, str]:
    """A turn's first line of metrics type ``kind`` and its request id, from its :attr:`_Passes.seen`
    (``lineno`` and ``request`` when it is the first)."""
    k = 2 * _TYPES.index(kind)
    if not seen[k]:
        seen[k], seen[k + 1] = lineno, request
    return seen[k], seen[k + 1]


def _lacking_at(keys: list[tuple[int, int]], kind: str, lineno: int, n_turns: int) -> int | None:
    """Where in ``keys`` (the turns lacking ``kind``, by line) the broken line ``lineno`` goes: an
    ``eou_metrics`` line to the next turn, another to the previous one; None when there is none."""
    if kind == "eou_metrics":
        at = bisect.bisect_right(keys, (lineno, n_turns))
    else:
        at = bisect.bisect_left(keys, (lineno, -1)) - 1
    return at if 0 <= at < len(keys) else None


def _move_earlier(lacking: dict[str, list[tuple[int, int]]], kind: str, old: tuple[int, int], lineno: int) -> None:
    """Turn ``old = (line, index)`` starts on ``lineno`` now: its place in the other types' lists follows."""
    for other in _TYPES:
        keys = lacking[other]
        j = bisect.bisect_left(keys, old)
        if other != kind and j < len(keys) and keys[j] == old:
            del keys[j]
            bisect.insort(keys, (lineno, old[1]))


def _json_like(raw: str, start: int) -> bool:
    """A line with a JSON object that names a metrics type, or wraps one (``metrics``, ``message``)."""
    return start >= 0 and ('"type"' in raw or '"metrics"' in raw or '"message"' in raw)


def _unwrapped(obj: Any) -> Any:
    """The metrics of an event logged whole (``{"metrics": {...}}``), else ``obj``."""
    if isinstance(obj, dict) and isinstance(obj.get("metrics"), dict) and "type" in obj["metrics"]:
        return obj["metrics"]
    return obj


def _rules(obj: dict[str, Any], how: str) -> str:
    """The rule set of a metrics line: LiveKit 1.x (``speech_id``) or 0.x (``sequence_id``), how it was written."""
    if how == "log":
        return "livekit-log-metrics"
    rules = "livekit-metrics-1.x" if obj.get("speech_id") else "livekit-metrics-0.x"
    return rules + " (pydantic str/repr)" if how == "pydantic" else rules


def _opens_turn(kind: str, cur: TurnBuilder, passes: _Passes) -> bool:
    """A ``log_metrics()`` line opens a new turn: an EOU line (unless the open turn's LLM request came
    before its EOU line: preemptive generation logs it first), or an LLM line after the TTS began."""
    early_llm = bool(passes.llm) and not passes.tts and "endpointing" not in cur.stages_ms
    return (kind == "eou_metrics" and not early_llm) or (kind == "llm_metrics" and bool(passes.tts))


def _cold(obj: dict[str, Any]) -> bool:
    """A WebSocket TTS that opened its connection for this turn; an HTTP one reports ``connection_reused``
    false with ``acquire_time`` 0 on every request (metrics/base.py, 1.6+)."""
    acquire = obj.get("acquire_time")
    return obj.get("connection_reused") is False and (acquire is None or acquire != 0)


def _bad_type(lineno: int, kind: object, origin: str) -> Anomaly:
    """A ``type`` that is not a metrics type's name (not a string)."""
    return Anomaly(lineno, "type", _snippet(str(kind)), f"type is {json_kind(kind)}, not a metrics type name", origin)
