"""Parsing text with the input limits: numbers beyond the float range, CSV rows, JSON, TOML."""

from __future__ import annotations

import csv
import io
import math
import re
import tomllib
from collections.abc import Iterator
from typing import Any

from voicebudget._errors import ScenarioError
from voicebudget._io._limits import MAX_NESTING

_FLOAT_MAX = 1.7976931348623157e308
_LONG_INT = re.compile(r"\d{309}")  # the shortest integer beyond the float range has 309 digits
_LONG_TOML_INT = re.compile(r"[0-9A-Fa-f_]{256}")  # ... and 257 in hexadecimal (TOML: 0x, 0o, 0b, 1_000)


def finite_int(value: int) -> int | float:
    """``value``, or ``inf``/``-inf`` when it is beyond the float range (what ``float(value)`` would
    round it to, had it not raised ``OverflowError``)."""
    if -_FLOAT_MAX <= value <= _FLOAT_MAX:
        return value
    return math.inf if value > 0 else -math.inf


def _json_int(text: str) -> int | float:
    return finite_int(int(text))


def _finite_ints(doc: Any) -> Any:
    """``doc`` (a parsed TOML document) with every integer beyond the float range as ``inf``/``-inf``."""
    if isinstance(doc, bool):
        return doc
    if isinstance(doc, int):
        return finite_int(doc)
    if isinstance(doc, dict):
        return {k: _finite_ints(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_finite_ints(v) for v in doc]
    return doc


def csv_rows(text: str, *, origin: str) -> Iterator[tuple[int, list[str]]]:
    """The rows of a CSV text as ``(line number of the row's first line, cells)``.

    ``\r\n``, ``\n`` and a lone ``\r`` each end a line (old Mac files, a stray ``\r`` from an editor), as
    :mod:`csv` reads a file opened with ``newline=""``; a quoted cell may hold line ends. Lines are
    numbered as a text editor does, from 1.

    :raises ScenarioError: a row :mod:`csv` cannot read (a cell longer than its field limit of
        131,072 characters), naming the line; never the content.
    """
    reader = csv.reader(io.StringIO(text, newline=""))
    start = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise ScenarioError(
                f"cannot read the CSV row: {_short(exc)}", origin=origin, field=f"line {start}"
            ) from None
        yield start, row
        start = reader.line_num + 1


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def json_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` in a JSON text (brackets inside strings are not counted).

    Linear time; cheap when the text has few brackets.
    """
    opened = text.count("[") + text.count("{")
    if opened <= MAX_NESTING:
        return opened
    import numpy as np

    bare = _JSON_STRING.sub("", text).encode("utf-8", errors="replace")
    codes = np.frombuffer(bare, dtype=np.uint8)
    step = ((codes == ord("[")) | (codes == ord("{"))).astype(np.int32)
    step -= ((codes == ord("]")) | (codes == ord("}"))).astype(np.int32)
    return int(np.cumsum(step).max(initial=0))


_DIGITS = re.compile(r"\d+")
_STRIDE = 155
"""Every run of 309 digits holds a position that is a multiple of this (plus 154): the only ones looked at."""


def _has_long_int(text: str) -> bool:
    """Whether ``text`` has 309 digits in a row (:data:`_LONG_INT`), looking only at every 155th character
    and the run of digits through it, if any: ``_LONG_INT.search`` tried every digit of a JSON line of
    timestamps and ids, 2-3 times the cost of parsing the line."""
    for i in range(_STRIDE - 1, len(text), _STRIDE):
        if text[i].isdecimal():
            end = _DIGITS.match(text, i).end()  # type: ignore[union-attr]  # text[i] is a digit
            start = i
            while start > 0 and end - start < 309 and text[start - 1].isdecimal():
                start -= 1
            if end - start >= 309:
                return True
    return False


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows here")


def parse_json(text: str, *, origin: str, line: int | None = None, allow_nan: bool = True) -> Any:
    """Parse a JSON text with the input limits.

    :param origin: the file, for messages.
    :param line: the line number when ``text`` is one line of a JSON-lines file (messages give it);
        otherwise messages give the line of the syntax error.
    :param allow_nan: whether ``NaN``/``Infinity`` literals are accepted (a reader may flag them).
    :raises ScenarioError: a syntax error, nesting deeper than :data:`MAX_NESTING`, or an integer of
        more than 4,300 digits; the message names the file and line.
    """
    where = f"line {line}" if line is not None else ""
    if line is None and not text.strip():  # json's own "Expecting value (column 1)" says nothing of the file
        raise ScenarioError("is empty: no JSON document in it", origin=origin)
    if json_depth(text) > MAX_NESTING:
        raise ScenarioError(f"JSON nested deeper than {MAX_NESTING} levels; refused", origin=origin, field=where)
    import json

    parse_int = _json_int if _has_long_int(text) else None
    try:
        if allow_nan:
            return json.loads(text, parse_int=parse_int)
        return json.loads(text, parse_constant=_refuse_constant, parse_int=parse_int)
    except json.JSONDecodeError as exc:
        field = where or f"line {exc.lineno}"
        raise ScenarioError(f"cannot parse JSON: {exc.msg} (column {exc.colno})", origin=origin, field=field) from None
    except RecursionError:
        raise ScenarioError(
            f"JSON nested deeper than {MAX_NESTING} levels; refused", origin=origin, field=where
        ) from None
    except ValueError as exc:  # int digit limit, refused constants
        raise ScenarioError(f"cannot parse JSON: {_short(exc)}", origin=origin, field=where) from None


def _short(exc: BaseException) -> str:
    message = str(exc).split(";")[0]
    if "integer string conversion" in message:
        return "an integer longer than 4,300 digits"
    return message[:200]


def load_toml(text: str, *, origin: str) -> dict[str, Any]:
    """Parse TOML with the nesting limit.

    :raises ScenarioError: a syntax error (naming the line), nesting deeper than :data:`MAX_NESTING`,
        or an integer longer than 4,300 digits.
    """
    if text.count("[") + text.count("{") > MAX_NESTING and _toml_depth(text) > MAX_NESTING:
        raise ScenarioError(f"TOML nested deeper than {MAX_NESTING} levels; refused", origin=origin)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"cannot parse TOML: {exc}", origin=origin) from None
    except RecursionError:
        raise ScenarioError(f"TOML nested deeper than {MAX_NESTING} levels; refused", origin=origin) from None
    except ValueError as exc:
        raise ScenarioError(f"cannot parse TOML: {_short(exc)}", origin=origin) from None
    return _finite_ints(data) if _LONG_TOML_INT.search(text) else data


def _toml_depth(text: str) -> int:
    """Upper bound of inline nesting (brackets and braces outside basic/literal strings and comments)."""
    bare = re.sub(r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*', "", text)
    depth = best = 0
    for ch in bare:
        if ch in "[{":
            depth += 1
            best = max(best, depth)
        elif ch in "]}":
            depth = max(depth - 1, 0)
    return best
