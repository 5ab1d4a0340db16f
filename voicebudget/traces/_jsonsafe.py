"""JSON from trace files, read defensively: what a reader gets is a value or a reason, never an
exception (deep nesting, 4,300-digit integers, cut lines), and lines split on ``\\n`` only.

Trace readers flag a bad line and go on with the next one, so the errors here are reasons for an
anomaly (``str``), not exceptions.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_NESTING", "json_depth_over", "json_kind", "lines", "loads"]

MAX_NESTING = 100
"""Deepest nesting of ``[``/``{`` accepted in one JSON value (LiveKit and OTLP documents stay under 12)."""


def lines(text: str) -> list[str]:
    """The text's lines, split on ``\\n`` only (a trailing ``\\r`` dropped; a leading BOM dropped).

    :meth:`str.splitlines` also splits on U+2028, U+0085 and form feeds, which JSON strings may hold:
    a line number would then point at the wrong line and an object would be cut in two.
    """
    out = text.removeprefix("\ufeff").split("\n")
    if out and out[-1] == "":
        out.pop()
    return [line[:-1] if line.endswith("\r") else line for line in out]


def json_depth_over(text: str, limit: int = MAX_NESTING) -> bool:
    """True when the brackets of ``text`` nest deeper than ``limit`` (linear; brackets inside strings
    are skipped, so a transcript with brackets does not count)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return True
        elif ch in "]}":
            depth -= 1
    return False


def loads(text: str) -> tuple[Any, str | None]:
    """Parse one JSON text: ``(value, None)``, or ``(None, reason)`` when it cannot be read.

    Reasons: a syntax error (``line cut short?``), nesting deeper than :data:`MAX_NESTING`, an integer
    beyond Python's 4,300-digit conversion limit. ``NaN``/``Infinity`` parse (to floats the readers
    flag as not finite).
    """
    if json_depth_over(text):
        return None, f"JSON nested deeper than {MAX_NESTING} levels; line refused"
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"unparseable JSON (line cut short?): {exc.msg}"
    except RecursionError:
        return None, f"JSON nested deeper than {MAX_NESTING} levels; line refused"
    except ValueError as exc:  # the int max-str-digits limit
        if "digits" in str(exc):
            return None, "an integer longer than 4,300 digits; line refused"
        return None, f"unparseable JSON: {str(exc)[:80]}"


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
