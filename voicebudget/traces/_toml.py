"""Writing scenario documents as TOML with their source comments, through tomlkit.

tomlkit (the TOML library behind Poetry) keeps comments, which carry the fit's sources and method;
floats are rounded to 0.001 ms, far below any latency that matters.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import tomlkit
from tomlkit.items import Array, Table

__all__ = ["dumps"]

_WRAP = 10  # numbers per line in a long array


def _value(value: Any) -> Any:
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
        array: Array = tomlkit.array()
        array.extend(_value(v) for v in value)
        return array.multiline(len(value) > _WRAP)
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _fill(container: Any, path: list[str], table: Mapping[str, Any], comments: Mapping[str, str]) -> None:
    for key, value in table.items():
        if not isinstance(value, Mapping):
            container.add(key, _value(value))
    for key, value in table.items():
        if isinstance(value, Mapping):
            sub: Table = tomlkit.table()
            for line in comments.get(".".join([*path, key]), "").splitlines():
                sub.add(tomlkit.comment(line))
            _fill(sub, [*path, key], value, comments)
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
    _fill(out, [], doc, comments or {})
    text = tomlkit.dumps(out)
    if footer:
        text += "\n" + "\n".join(f"# {line}".rstrip() for line in footer.splitlines()) + "\n"
    return text
