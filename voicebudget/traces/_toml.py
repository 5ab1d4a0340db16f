"""A small TOML writer for scenario documents: tables, strings, bools, finite numbers, flat lists.

Enough for what ``fit`` writes (no dates, no arrays of tables); comments go above a table.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["dumps"]

_WRAP = 10  # numbers per line in a long array


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"TOML scenario values must be finite, got {value}")
        text = f"{round(value, 3):.3f}".rstrip("0")
        return text + "0" if text.endswith(".") else text
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_scalar(v)}" for k, v in value.items()) + " }"
    if isinstance(value, Sequence):
        items = [_scalar(v) for v in value]
        if len(items) <= _WRAP:
            return "[" + ", ".join(items) + "]"
        rows = [", ".join(items[i:i + _WRAP]) for i in range(0, len(items), _WRAP)]
        return "[\n    " + ",\n    ".join(rows) + ",\n]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else json.dumps(key)


def _table(path: list[str], table: Mapping[str, Any], comments: Mapping[str, str], out: list[str]) -> None:
    dotted = ".".join(path)
    if path:
        out.append("")
        for line in comments.get(dotted, "").splitlines():
            out.append(f"# {line}".rstrip())
        out.append(f"[{'.'.join(_key(p) for p in path)}]")
    for key, value in table.items():
        if not isinstance(value, Mapping):
            out.append(f"{_key(key)} = {_scalar(value)}")
    for key, value in table.items():
        if isinstance(value, Mapping):
            _table([*path, key], value, comments, out)


def dumps(
    doc: Mapping[str, Any], *, header: str = "", comments: Mapping[str, str] | None = None, footer: str = ""
) -> str:
    """Write ``doc`` as TOML.

    :param header: comment lines for the top of the file.
    :param footer: comment lines for the end of the file.
    :param comments: dotted table path (``"pipeline.llm"``) -> comment lines above that table.
    """
    out = [f"# {line}".rstrip() for line in header.splitlines()]
    _table([], doc, comments or {}, out)
    if footer:
        out.append("")
        out.extend(f"# {line}".rstrip() for line in footer.splitlines())
    return "\n".join(out).strip("\n") + "\n"
