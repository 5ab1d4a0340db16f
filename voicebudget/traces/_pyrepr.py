"""LiveKit metrics as pydantic prints them: ``str(m)`` (``type='eou_metrics' end_of_utterance_delay=0.66
speech_id='s1'``) or ``repr(m)`` (``EOUMetrics(end_of_utterance_delay=0.66, speech_id='s1')``), the way
users paste metrics into issues and logs (livekit agents issue 2885).

pydantic's ``BaseModel.__str__`` writes ``name=repr(value)`` separated by spaces; ``__repr__`` writes
``ClassName(name=repr(value), ...)`` (LiveKit's ``_BaseMetrics.__repr__`` from 1.6 leaves out fields at
their defaults, ``type`` among them, so the type comes from the class name). Nested models
(``metadata=Metadata(...)``) are skipped. One linear scan, no ``eval``.
"""

from __future__ import annotations

import ast
import re
from typing import Any

__all__ = ["looks_like_metrics_repr", "parse_metrics_repr"]

_CLASSES = {
    "EOUMetrics": "eou_metrics",
    "LLMMetrics": "llm_metrics",
    "TTSMetrics": "tts_metrics",
    "STTMetrics": "stt_metrics",
    "VADMetrics": "vad_metrics",
    "RealtimeModelMetrics": "realtime_model_metrics",
    "PipelineEOUMetrics": "eou_metrics",
    "PipelineLLMMetrics": "llm_metrics",
    "PipelineTTSMetrics": "tts_metrics",
}
_STR_START = re.compile(r"\btype=['\"](\w{1,40}_metrics)['\"]")
_REPR_START = re.compile(r"\b(" + "|".join(sorted(_CLASSES, key=len, reverse=True)) + r")\(")
_NAME = re.compile(r"([A-Za-z_]\w{0,60})=")
_BARE = re.compile(r"[^\s,()]{1,100}")
_MAX_LINE = 100_000


def looks_like_metrics_repr(text: str) -> bool:
    """True when the text holds a LiveKit metrics model printed by pydantic (``str()`` or ``repr()``)."""
    return _STR_START.search(text) is not None or _REPR_START.search(text) is not None


def _scalar(token: str) -> Any:
    if token in ("True", "False"):
        return token == "True"
    if token == "None":
        return None
    try:
        return int(token) if re.fullmatch(r"-?\d{1,30}", token) else float(token)
    except ValueError:
        return token


def _quoted(text: str, pos: int) -> tuple[str | None, int]:
    quote = text[pos]
    end = pos + 1
    while end < len(text) and text[end] != quote:
        end += 2 if text[end] == "\\" else 1
    if end >= len(text):
        return None, len(text)
    try:
        value = ast.literal_eval(text[pos : end + 1])
    except (ValueError, SyntaxError):
        return None, end + 1
    return (value if isinstance(value, str) else None), end + 1


def _skip_call(text: str, pos: int) -> int:
    """From ``Name(`` at ``pos``, the position after the matching ``)`` (quotes respected)."""
    depth = 0
    i = pos
    while i < len(text):
        ch = text[i]
        if ch in "'\"":
            _, i = _quoted(text, i)
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def _fields(text: str, pos: int, stop_at_paren: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    n = len(text)
    while pos < n:
        while pos < n and text[pos] in " ,\t":
            pos += 1
        if pos >= n or (stop_at_paren and text[pos] == ")"):
            break
        m = _NAME.match(text, pos)
        if m is None or m.end() >= n:
            break
        pos = _field_value(text, m.end(), m.group(1), out)
        if pos < 0:
            break
    return out


def _field_value(text: str, pos: int, name: str, out: dict[str, Any]) -> int:
    """The value of field ``name`` at ``pos`` into ``out`` (a call or a bracketed value skipped); the
    position after it, or -1 when it cannot be read."""
    if text[pos] in "'\"":
        out[name], pos = _quoted(text, pos)
        return pos
    call = re.match(r"[A-Za-z_][\w.]{0,60}\(", text[pos : pos + 64])
    if call is not None:
        return _skip_call(text, pos)
    if text[pos] in "[{(":
        return _skip_brackets(text, pos)
    bare = _BARE.match(text, pos)
    if bare is None:
        return -1
    out[name] = _scalar(bare.group(0))
    return bare.end()


def _skip_brackets(text: str, pos: int) -> int:
    pairs = {"[": "]", "{": "}", "(": ")"}
    stack = [pairs[text[pos]]]
    i = pos + 1
    while i < len(text) and stack:
        ch = text[i]
        if ch in "'\"":
            _, i = _quoted(text, i)
            continue
        if ch in pairs:
            stack.append(pairs[ch])
        elif ch == stack[-1]:
            stack.pop()
        i += 1
    return i


def parse_metrics_repr(line: str) -> dict[str, Any] | None:
    """The fields of the LiveKit metrics model printed on ``line`` (None when there is none).

    ``type`` is set from the class name for ``repr()`` output; values are ``int``, ``float``,
    ``bool``, ``None`` or ``str``; nested models and containers are left out.
    """
    if len(line) > _MAX_LINE:
        return None
    m = _STR_START.search(line)
    if m is not None:
        fields = _fields(line, m.start(), stop_at_paren=False)
        fields.setdefault("type", m.group(1))
        return fields
    r = _REPR_START.search(line)
    if r is None:
        return None
    fields = _fields(line, r.end(), stop_at_paren=True)
    fields["type"] = _CLASSES[r.group(1)]
    return fields
