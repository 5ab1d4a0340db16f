"""The trace readers' view of the input boundary (:mod:`voicebudget._io`): the same JSON limits and
line rules, but a bad line gives a *reason* for an anomaly instead of an exception, since a trace
reader flags the line and goes on with the next one.

- lines split on ``\\n`` only (a trailing ``\\r`` and a leading byte-order mark dropped): U+2028,
  U+0085 and form feeds inside a JSON string do not cut a line;
- JSON nested deeper than :data:`~voicebudget._io.MAX_NESTING`, integers over 4,300 digits and
  syntax errors are reasons; ``NaN``/``Infinity`` parse (to floats the readers flag as not finite).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from voicebudget._errors import ScenarioError
from voicebudget._io import MAX_NESTING, parse_json, split_lines
from voicebudget._io._parse import _has_long_int

__all__ = ["MAX_NESTING", "iter_lines", "json_kind", "lines", "loads"]

_SYNTAX = "cannot parse JSON: "


def lines(text: str) -> list[str]:
    """The text's lines as :func:`voicebudget._io.split_lines` splits them, after a leading BOM."""
    return split_lines(text.removeprefix("\ufeff"))


def iter_lines(text: str) -> Iterator[str]:
    """The lines :func:`lines` gives, one at a time (no second copy of a large trace in memory)."""
    start = 1 if text.startswith("\ufeff") else 0
    end = len(text)
    while start < end:
        stop = text.find("\n", start)
        if stop < 0:
            stop = end
        line = text[start:stop]
        yield line[:-1] if line.endswith("\r") else line
        start = stop + 1


_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set in __init__
"""The C scanner ``json.loads`` runs (default options): one JSON value from an offset, and where it ends."""


def loads(text: str) -> tuple[Any, str | None]:
    """Parse one JSON text with the input limits: ``(value, None)``, or ``(None, reason)``.

    A text within the limits at a glance (no more brackets than :data:`MAX_NESTING`, no integer beyond the
    float range) is parsed directly, the rest as :func:`voicebudget._io.parse_json` does (a JSON-lines trace
    is one call a line: ~1 us less each); a text that does not parse goes that way too, for its reason."""
    if text.count("{") + text.count("[") <= MAX_NESTING and not _has_long_int(text):
        try:
            value, end = _SCAN(text, 0)
        except (StopIteration, ValueError):
            pass  # its reason, as parse_json words it (json.loads also names a leading byte-order mark)
        else:
            if end == len(text):  # (blanks around the value: as json.loads reads them, below)
                return value, None
    try:
        return parse_json(text, origin=""), None
    except ScenarioError as exc:
        reason = exc.detail
    if "4,300 digits" in reason:
        return None, "an integer longer than 4,300 digits; line refused"
    if reason.startswith(_SYNTAX):
        return None, f"unparseable JSON (line cut short?): {reason.removeprefix(_SYNTAX)}"
    return None, reason.replace("; refused", "; line refused")


def json_kind(value: Any) -> str:
    """What a JSON value is, for messages: ``an object``, ``a list``, ``a string``, ``a number``,
    ``a boolean``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"
