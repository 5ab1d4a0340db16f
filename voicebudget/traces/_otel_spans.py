"""OTLP JSON into spans for :mod:`._otel`: the documents of an export (whole, one per line, or what
still parses in a damaged one), each span with its position and only the attributes a turn is built
from, and every node that is not what OTLP allows as a problem naming its path."""

from __future__ import annotations

import bisect
import math
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from voicebudget.traces._jsonsafe import iter_lines, json_kind, loads
from voicebudget.traces._table import Anomaly

_LK: dict[str, tuple[str, ...]] = {
    "endpointing": ("lk.end_of_turn_delay", "lk.end_of_utterance_delay"),
    "asr": ("lk.transcription_delay",),
    "llm_ttft": ("lk.response.ttft", "lk.llm_metrics.ttft", "lk.realtime_model_metrics.ttft"),
    "tts_ttfb": ("lk.response.ttfb", "lk.tts_metrics.ttfb"),
}
_PC: dict[str, tuple[str, ...]] = {
    "endpointing": ("turn.user_turn_seconds",),
    "first_phrase": ("turn.text_aggregation_seconds",),
    "asr": ("stt:metrics.ttfb",),
    "llm_ttft": ("llm:metrics.ttfb",),
    "tts_ttfb": ("tts:metrics.ttfb",),
}
_JSON_METRICS = ("lk.llm_metrics", "lk.tts_metrics", "lk.realtime_model_metrics")
_KEEP = frozenset(
    {
        *(key for keys in _LK.values() for key in keys),
        *(key.split(":")[-1] for keys in _PC.values() for key in keys),
        *_JSON_METRICS,  # (read into their ".ttft"/".ttfb" keys, then dropped)
        "lk.e2e_latency",
        "turn.user_bot_latency_seconds",
        "lk.speech_id",
        "lk.function_tool.name",
    }
)
"""The span attributes a turn is built from: the others are not kept."""


class _Bad:
    """An attribute value that is not a valid OTLP AnyValue (kept so the turn flags it)."""

    def __init__(self, path: str, what: str) -> None:
        self.path, self.what = path, what

    def __str__(self) -> str:
        return self.what


@dataclass(slots=True)
class _Span:
    """What a turn needs of a span: its attributes are only those in :data:`_KEEP` (``livekit`` says
    whether it had any ``lk.*`` one), so memory follows the turns, not the size of the export."""

    name: str
    trace: str
    id: str
    parent: str
    start_ns: int
    attrs: dict[str, Any]
    line: int
    offset: int
    bad: tuple[tuple[str, str], ...] = ()
    end_ns: int = 0
    livekit: bool = False


_SCALARS = (
    "doubleValue",
    "intValue",
    "boolValue",
    "stringValue",
    "double_value",
    "int_value",
    "bool_value",
    "string_value",
)


def _value(v: Any, path: str) -> Any:
    """An OTLP AnyValue (or a plain JSON value) as a Python value; numeric strings become floats.
    A malformed AnyValue gives a :class:`_Bad`."""
    if isinstance(v, dict):
        return _any_value(v, path)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return v
    return v


def _any_value(v: dict[str, Any], path: str) -> Any:
    for key in _SCALARS:
        if key in v:
            return _scalar(key, v[key], f"{path}.{key}")
    for key in ("arrayValue", "array_value"):
        if key in v:
            return _array(v[key], f"{path}.{key}")
    return _Bad(path, "an AnyValue with no known value key")


def _scalar(key: str, inner: Any, path: str) -> Any:
    """The value under a scalar AnyValue ``key`` (a number as a string too), or a :class:`_Bad`."""
    if key.startswith(("int", "double")):
        return (
            _value(inner, path)
            if isinstance(inner, str | int | float)
            else _Bad(path, f"{json_kind(inner)}, not a number")
        )
    return inner if isinstance(inner, str | bool) else _Bad(path, json_kind(inner))


def _array(arr: Any, path: str) -> Any:
    values = arr.get("values", []) if isinstance(arr, dict) else None
    if not isinstance(values, list):
        return _Bad(path, "an arrayValue that is not an object with a values list")
    return [_value(x, f"{path}.values[{i}]") for i, x in enumerate(values)]


def _attrs(raw: Any, path: str) -> tuple[dict[str, Any], list[tuple[str, str]], bool]:
    """The attributes in :data:`_KEEP` as a dict, ``(path, what is wrong)`` for each malformed entry, and
    whether any attribute is LiveKit's (``lk.*``)."""
    if raw is None:
        return {}, [], False
    if isinstance(raw, dict):
        keys = [str(k) for k in raw]
        out = {k: _value(v, f"{path}.{k}") for k, v in zip(keys, raw.values(), strict=True) if k in _KEEP}
        bad: list[tuple[str, str]] = []
    elif not isinstance(raw, list):
        return {}, [(path, f"attributes is {json_kind(raw)}, not a list or object")], False
    else:
        keys, out, bad = _attr_list(raw, path)
    _read_json_metrics(out)
    return out, bad, any(k.startswith("lk.") for k in keys)


def _attr_list(raw: list[Any], path: str) -> tuple[list[str], dict[str, Any], list[tuple[str, str]]]:
    """OTLP's attribute list (``[{"key": ..., "value": {...}}]``): its keys, the kept ones' values, and
    the malformed entries."""
    keys: list[str] = []
    out: dict[str, Any] = {}
    bad: list[tuple[str, str]] = []
    for i, a in enumerate(raw):
        if isinstance(a, dict) and isinstance(a.get("key"), str) and isinstance(a.get("value"), dict):
            keys.append(a["key"])
            if a["key"] in _KEEP:
                out[sys.intern(a["key"])] = _value(a["value"], f"{path}[{i}].value")
        else:
            bad.append((f"{path}[{i}]", "malformed attribute (no key or no value)"))
    return keys, out, bad


def _read_json_metrics(out: dict[str, Any]) -> None:
    """LiveKit 1.2-1.4's metrics model as a JSON string: its ``ttft``/``ttfb`` kept as ``<key>.ttft``."""
    for key in _JSON_METRICS:
        text = out.pop(key, None)
        if not isinstance(text, str):
            continue
        obj, _err = loads(text)
        if isinstance(obj, dict):
            for name in ("ttft", "ttfb"):
                if name in obj:
                    out[f"{key}.{name}"] = obj[name]


def _list(node: Any, path: str, problems: list[tuple[str, str]]) -> list[Any]:
    if node is None:
        return []
    if not isinstance(node, list):
        problems.append((path, f"{json_kind(node)}, not a list"))
        return []
    return node


def _spans_of(doc: Any, path: str, problems: list[tuple[str, str]]) -> Iterator[tuple[dict[str, Any], str]]:
    """The span objects in a document with their paths; every node's type checked (``problems``)."""
    if isinstance(doc, list):
        for i, item in enumerate(doc):
            yield from _spans_of(item, f"{path}[{i}]", problems)
        return
    if not isinstance(doc, dict):
        problems.append((path or "(document)", f"{json_kind(doc)}, not an object"))
        return
    yield from _spans_of_object(doc, path, problems)


def _spans_of_object(
    doc: dict[str, Any], path: str, problems: list[tuple[str, str]]
) -> Iterator[tuple[dict[str, Any], str]]:
    """An export (``resourceSpans``), an object holding a list of spans, or a span."""
    key = next((k for k in ("resourceSpans", "resource_spans") if k in doc), None)
    if key is not None:
        yield from _resource_spans(doc[key], f"{path}{key}", problems)
    elif "spans" in doc:
        yield from _spans_of(doc["spans"], f"{path}spans", problems)
    elif _is_span(doc):
        yield doc, path or "(document)"


def _is_span(doc: dict[str, Any]) -> bool:
    """A span object on its own (a plain list of spans): a name and an id or a context."""
    return "name" in doc and ("spanId" in doc or "span_id" in doc or "context" in doc)


def _resource_spans(node: Any, path: str, problems: list[tuple[str, str]]) -> Iterator[tuple[dict[str, Any], str]]:
    for i, rs in enumerate(_list(node, path, problems)):
        rs_path = f"{path}[{i}]"
        if not isinstance(rs, dict):
            problems.append((rs_path, f"{json_kind(rs)}, not an object"))
            continue
        skey = next((k for k in ("scopeSpans", "scope_spans", "instrumentationLibrarySpans") if k in rs), None)
        yield from _scope_spans(rs.get(skey) if skey else None, f"{rs_path}.{skey}", problems)


def _scope_spans(node: Any, path: str, problems: list[tuple[str, str]]) -> Iterator[tuple[dict[str, Any], str]]:
    for j, ss in enumerate(_list(node, path, problems)):
        ss_path = f"{path}[{j}]"
        if not isinstance(ss, dict):
            problems.append((ss_path, f"{json_kind(ss)}, not an object"))
            continue
        for k, s in enumerate(_list(ss.get("spans"), f"{ss_path}.spans", problems)):
            if isinstance(s, dict):
                yield s, f"{ss_path}.spans[{k}]"
            else:
                problems.append((f"{ss_path}.spans[{k}]", f"{json_kind(s)}, not an object"))


_SPAN_ID_KEY = re.compile(r'"(?:spanId|span_id)"\s*:\s*"([^"\\]{0,200})"')


class _Locator:
    """Line numbers of spans and attributes in the source text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.cursor = 0

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def find_span(self, span_id: str, base: int) -> int:
        """Offset of the span's ``"spanId": "<id>"``: spans are met in document order, so it is the
        next such key after the previous span's (a search for this id beyond it otherwise)."""
        start = max(self.cursor, base)
        m = _SPAN_ID_KEY.search(self.text, start)
        if m is None or m.group(1) != span_id:
            m = re.compile(r'"(?:spanId|span_id)"\s*:\s*"' + re.escape(span_id) + '"').search(self.text, start)
        if m is None:
            return base
        self.cursor = m.end()
        return m.start()

    def attr_line(self, span: _Span, key: str) -> int:
        name = key.split(":")[-1]
        for prefix in _JSON_METRICS:
            if name.startswith(prefix + "."):
                name = prefix
        idx = self.text.find(f'"{name}"', span.offset)
        return self.line_of(idx) if idx >= 0 else span.line


def _ident(raw: Any, what: str, bad: list[tuple[str, str]]) -> str:
    if raw is None or raw == "":
        return ""
    if not isinstance(raw, str):
        bad.append((what, f"{what} is {json_kind(raw)}, not a string"))
        return ""
    return raw


def _start(raw: Any, bad: list[tuple[str, str]]) -> int:
    if raw is None:
        return 0
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        bad.append(("startTimeUnixNano", f"{json_kind(raw)}, not a time in ns"))
        return 0
    try:
        value = float(raw) if not isinstance(raw, int) else raw
    except ValueError:
        bad.append(("startTimeUnixNano", "not a number"))
        return 0
    if isinstance(value, float):
        if not math.isfinite(value):
            bad.append(("startTimeUnixNano", f"{value} is not a finite time"))
            return 0
        return int(value)
    return value


def _span(raw: dict[str, Any], path: str, loc: _Locator | None, base: int, lineno: int = 0) -> _Span:
    """One span; where it is: found in ``loc``'s text from offset ``base`` on, or (no ``loc``) on line
    ``lineno`` of the file (OTLP JSON lines: an attribute is then on its span's line)."""
    bad: list[tuple[str, str]] = []
    context = raw.get("context")
    ctx: dict[str, Any] = context if isinstance(context, dict) else {}
    sid = _ident(raw.get("spanId", raw.get("span_id", ctx.get("span_id"))), "spanId", bad)
    offset = loc.find_span(sid, base) if sid and loc is not None else base
    name = raw.get("name", "")
    if not isinstance(name, str):
        bad.append(("name", f"name is {json_kind(name)}, not a string"))
        name = ""
    attrs, attr_bad, livekit = _attrs(raw.get("attributes"), f"{path}.attributes")
    return _Span(  # names, keys and trace ids repeat on every turn: interned, one copy each
        name=sys.intern(name),
        trace=sys.intern(_ident(raw.get("traceId", raw.get("trace_id", ctx.get("trace_id"))), "traceId", bad)),
        id=sid,
        parent=_ident(raw.get("parentSpanId", raw.get("parent_span_id", raw.get("parent_id"))), "parentSpanId", bad),
        start_ns=_start(raw.get("startTimeUnixNano", raw.get("start_time_unix_nano")), bad),
        end_ns=_start(raw.get("endTimeUnixNano", raw.get("end_time_unix_nano")), bad),
        attrs=attrs,
        line=loc.line_of(offset) if loc is not None else lineno,
        offset=offset,
        bad=(*bad, *attr_bad),
        livekit=livekit,
    )


def _documents(text: str, loc: _Locator, anomalies: list[Anomaly], origin: str) -> list[tuple[Any, int]]:
    """The JSON documents in ``text`` with their offsets: the whole text, else one per line (OTLP
    JSON lines), else the span objects that still parse in a damaged document."""
    doc, whole = loads(text)
    if whole is None:
        return [(doc, 0)]
    docs: list[tuple[Any, int]] = []
    bad: list[Anomaly] = []
    for i, raw in enumerate(iter_lines(text)):
        if not raw.strip():
            continue
        item, err = loads(raw)
        if err is None:
            docs.append((item, loc.starts[i]))
        else:
            bad.append(Anomaly(i + 1, "", raw.strip()[:120], err, origin))
    if any(True for item, _ in docs for _s in _spans_of(item, "", [])):
        anomalies.extend(bad)
        return docs
    n_before = len(anomalies)
    salvaged = _salvage(text, loc, anomalies, origin)
    if not salvaged or len(anomalies) == n_before:
        anomalies.append(Anomaly(1, "", "", whole.replace("line", "file"), origin))
    return salvaged


_SPAN_START = re.compile(r'\{[^{}\[\]]*?"(?:spanId|span_id)"\s*:')


def _salvage(text: str, loc: _Locator, anomalies: list[Anomaly], origin: str) -> list[tuple[Any, int]]:
    """Span objects that still decode in a damaged document; each one that does not is an anomaly
    on the line it starts (the turn it carried is lost)."""
    import json

    decoder = json.JSONDecoder()
    found: list[tuple[Any, int]] = []
    pos = 0
    while (m := _SPAN_START.search(text, pos)) is not None:
        try:
            obj, end = decoder.raw_decode(text, m.start())
        except (json.JSONDecodeError, RecursionError, ValueError) as exc:
            at = exc.pos if isinstance(exc, json.JSONDecodeError) else m.start()
            line = loc.line_of(at)
            msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "too deep or too long a number"
            anomalies.append(
                Anomaly(
                    line,
                    "",
                    text[m.start() : m.start() + 80].replace("\n", " "),
                    f"span cut short or broken ({msg} on line {line}); span skipped",
                    origin,
                )
            )
            pos = m.end()
            continue
        if isinstance(obj, dict):
            found.append((obj, m.start()))
        pos = end
    return found


def _collect(
    doc: Any,
    loc: _Locator | None,
    base: int,
    spans: list[_Span],
    loose: list[Anomaly],
    origin: str,
    lineno: int = 0,
) -> None:
    """The spans of one JSON document at offset ``base`` of ``loc``'s text, and its nodes of the wrong
    type as anomalies. No ``loc``: the document is line ``lineno`` of the file."""
    problems: list[tuple[str, str]] = []
    for raw, path in _spans_of(doc, "", problems):
        spans.append(_span(raw, path, loc, base, lineno))
    line = loc.line_of(base) if loc is not None else lineno
    for path, what in problems:
        loose.append(Anomaly(line, path, None, f"not OTLP: {what}", origin))
