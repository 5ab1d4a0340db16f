"""Writing scenario documents as TOML with their source comments, through tomlkit.

tomlkit (the TOML library behind Poetry) keeps comments, which carry the fit's sources and method;
floats are rounded to 0.001 ms, far below any latency that matters.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import tomlkit
from tomlkit.items import Array, Table

__all__ = ["dumps"]

_WRAP = 10  # numbers per line in a long array


class _Arrays:
    """Long arrays of numbers, written as text after tomlkit is done: tomlkit re-indexes an array on
    every append, which made a 100,000-turn fit quadratic (minutes); here they cost one join."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}

    def placeholder(self, numbers: Sequence[Any]) -> str:
        key = f"__voicebudget_array_{len(self.texts)}__"
        if all(isinstance(v, int) for v in numbers):
            items = [str(int(v)) for v in numbers]
        else:
            arr = np.asarray(numbers, dtype=np.float64)
            if not np.all(np.isfinite(arr)):
                raise ValueError("TOML scenario values must be finite")
            items = [repr(v) for v in np.round(arr, 3).tolist()]
        self.texts[key] = "[\n" + "".join(f"    {item},\n" for item in items) + "]"
        return key

    def fill(self, text: str) -> str:
        for key, array in self.texts.items():
            text = text.replace(f'"{key}"', array, 1)
        return text


def _is_numbers(value: Any) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)


def _value(value: Any, arrays: _Arrays | None = None) -> Any:
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"TOML scenario values must be finite, got {value}")
        return round(value, 3)
    if isinstance(value, Mapping):
        inline = tomlkit.inline_table()
        inline.update({k: _value(v) for k, v in value.items()})
        return inline
    if isinstance(value, Sequence):
        return _array(value, arrays)
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _array(value: Sequence[Any], arrays: _Arrays | None) -> Any:
    """A list as a TOML array (one value a line past :data:`_WRAP` values); a long list of numbers, with
    ``arrays``, as a placeholder written compactly after."""
    if arrays is not None and len(value) > _WRAP and _is_numbers(value):
        return arrays.placeholder(value)
    array: Array = tomlkit.array()
    array.extend(_value(v) for v in value)
    return array.multiline(len(value) > _WRAP)


def _fill(
    container: Any, path: list[str], table: Mapping[str, Any], comments: Mapping[str, str], arrays: _Arrays
) -> None:
    for key, value in table.items():
        if not isinstance(value, Mapping):
            container.add(key, _value(value, arrays))
    for key, value in table.items():
        if isinstance(value, Mapping):
            sub: Table = tomlkit.table()
            for line in comments.get(".".join([*path, key]), "").splitlines():
                sub.add(tomlkit.comment(line))
            _fill(sub, [*path, key], value, comments, arrays)
            container.add(key, sub)


def dumps(
    doc: Mapping[str, Any], *, header: str = "", comments: Mapping[str, str] | None = None, footer: str = ""
) -> str:
    """Write ``doc`` as TOML.

    :param header: comment lines for the top of the file.
    :param footer: comment lines for the end of the file.
    :param comments: dotted table path (``"pipeline.llm"``) -> comment lines at the top of that table.
    :raises ValueError: a non-finite number.
    """
    out = tomlkit.document()
    for line in header.splitlines():
        out.add(tomlkit.comment(line))
    arrays = _Arrays()
    _fill(out, [], doc, comments or {}, arrays)
    text = arrays.fill(tomlkit.dumps(out))
    if footer:
        text += "\n" + "\n".join(f"# {line}".rstrip() for line in footer.splitlines()) + "\n"
    return text
