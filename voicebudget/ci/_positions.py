"""Where a field of a scenario file is: the line of each key, in TOML and in YAML, so that a CI annotation can
point at the stage over its allocation (``::error file=scenarios/x.toml,line=42::``).

- **YAML**: PyYAML's composed nodes carry their marks; a key's line is its key node's ``start_mark`` (composed by
  :func:`voicebudget._io.compose_yaml`, with the same limits as loading).
- **TOML**: neither ``tomllib`` nor tomlkit gives positions (tomlkit keeps the text, not its lines). A linear scan
  finds the statements: table headers (``[pipeline.llm]``, ``[[members]]``) and ``key = value`` lines, skipping
  values with a small lexer (strings of the four kinds, arrays and inline tables over several lines, comments); a
  key's dotted or quoted spelling is read by ``tomllib`` itself. Keys inside an inline table are not listed: a
  field there is found at its table's line (:func:`line_of` walks up to the nearest listed ancestor).

Paths are tuples of keys, with list indices as ints (``("members", 0, "stage")``), as pydantic's error locations.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from voicebudget._errors import ScenarioError
from voicebudget._io import compose_yaml, read_text

__all__ = ["FieldPath", "field_lines", "line_of", "stage_path", "toml_lines", "yaml_lines"]

FieldPath = tuple[str | int, ...]


def field_lines(path: str | Path) -> dict[FieldPath, int]:
    """The 1-based line of every key of a TOML or YAML file (by its suffix).

    :raises ScenarioError: unreadable file, unknown suffix, or a syntax error (as :func:`voicebudget.load_scenario`).
    """
    path = Path(path)
    text = read_text(path)
    if path.suffix.lower() == ".toml":
        return toml_lines(text, origin=str(path))
    if path.suffix.lower() in (".yaml", ".yml"):
        return yaml_lines(text, origin=str(path))
    raise ScenarioError(f"unknown file type {path.suffix!r}; allowed: .toml, .yaml, .yml", origin=str(path))


def line_of(lines: Mapping[FieldPath, int], path: FieldPath) -> int | None:
    """The line of ``path``, else of its nearest ancestor that has one (a key inside an inline table), else None."""
    for end in range(len(path), 0, -1):
        line = lines.get(path[:end])
        if line is not None:
            return line
    return None


def yaml_lines(text: str, *, origin: str) -> dict[FieldPath, int]:
    """Every mapping key's line in a YAML document (the first occurrence of a node reached through aliases)."""
    out: dict[FieldPath, int] = {}
    root = compose_yaml(text, origin=origin)
    stack: list[tuple[Any, FieldPath]] = [(root, ())] if root is not None else []
    seen: set[int] = set()
    while stack:
        node, prefix = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.id == "mapping":
            for key, value in node.value:
                if key.id != "scalar":
                    continue
                here = (*prefix, str(key.value))
                out.setdefault(here, key.start_mark.line + 1)
                stack.append((value, here))
        elif node.id == "sequence":
            for i, item in enumerate(node.value):
                out.setdefault((*prefix, i), item.start_mark.line + 1)
                stack.append((item, (*prefix, i)))
    return out


def toml_lines(text: str, *, origin: str) -> dict[FieldPath, int]:
    """Every table header's and top-level ``key = value``'s line in a TOML document (see the module docstring).

    :raises ScenarioError: a header or key that ``tomllib`` cannot read (the document is not TOML).
    """
    out: dict[FieldPath, int] = {}
    aot: dict[FieldPath, int] = {}  # array-of-tables path -> entries so far
    table: FieldPath = ()
    pos, line, n = 0, 1, len(text)
    while pos < n:
        ch = text[pos]
        if ch in " \t\r":
            pos += 1
        elif ch == "\n":
            pos, line = pos + 1, line + 1
        elif ch == "#":
            pos = _line_end(text, pos)
        elif ch == "[":
            double = text.startswith("[[", pos)
            start = pos + (2 if double else 1)
            end = _key_end(text, start, "]")
            keys = _keys(text[start:end], origin, line)
            if double:
                index = aot.get(keys, 0)
                aot[keys] = index + 1
                out.setdefault(keys, line)
                table = (*keys, index)
            else:
                table = keys
            _set(out, (), table, line)
            pos = _line_end(text, end)
        else:
            eq = _key_end(text, pos, "=")
            _set(out, table, _keys(text[pos:eq], origin, line), line)
            pos, line = _skip_value(text, eq + 1, line)
    return out


def _set(out: dict[FieldPath, int], table: FieldPath, keys: FieldPath, line: int) -> None:
    """``table + keys`` is on ``line``, and so are the tables a dotted key or header implies (``llm.use_fast``
    defines ``llm``), unless given earlier."""
    for end in range(1, len(keys) + 1):
        out.setdefault((*table, *keys[:end]), line)


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end < 0 else end


def _key_end(text: str, pos: int, stop: str) -> int:
    """The position of ``stop`` after a key (quoted parts skipped), on the same line."""
    i = pos
    while i < len(text) and text[i] not in (stop, "\n"):
        if text[i] in "\"'":
            close = text.find(text[i], i + 1)
            while close > 0 and text[i] == '"' and _escaped(text, close):
                close = text.find('"', close + 1)
            i = len(text) if close < 0 else close
        i += 1
    return i


def _escaped(text: str, pos: int) -> bool:
    backslashes = 0
    while pos - backslashes - 1 >= 0 and text[pos - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def _keys(spelled: str, origin: str, line: int) -> FieldPath:
    """A key as TOML spells it (``a."b.c"``) -> its path, read by ``tomllib``."""
    try:
        node: Any = tomllib.loads(f"{spelled.strip()} = 0")
    except tomllib.TOMLDecodeError:
        raise ScenarioError(
            f"cannot read the key {spelled.strip()[:80]!r}", origin=origin, field=f"line {line}"
        ) from None
    keys: list[str] = []
    while isinstance(node, dict):
        (key, node), *_ = node.items()
        keys.append(key)
    return tuple(keys)


def _skip_value(text: str, pos: int, line: int) -> tuple[int, int]:
    """Past a value (to the end of its last line) and the line count there: strings of the four kinds, arrays and
    inline tables (nested, over several lines), comments."""
    depth, n = 0, len(text)
    while pos < n:
        ch = text[pos]
        if ch == "\n":
            if depth == 0:
                return pos, line
            line += 1
            pos += 1
        elif ch == "#":
            pos = _line_end(text, pos)
        elif ch in "\"'":
            pos, line = _skip_string(text, pos, line)
        elif ch in "[{":
            depth, pos = depth + 1, pos + 1
        elif ch in "]}":
            depth, pos = depth - 1, pos + 1
        else:
            pos += 1
    return pos, line


def _skip_string(text: str, pos: int, line: int) -> tuple[int, int]:
    quote = text[pos]
    triple = text.startswith(quote * 3, pos)
    delim = quote * 3 if triple else quote
    i = pos + len(delim)
    while True:
        close = text.find(delim, i)
        if close < 0:
            return len(text), line + text.count("\n", pos)
        if quote == '"' and _escaped(text, close):
            i = close + 1
            continue
        end = close + len(delim)
        while triple and end < len(text) and text[end] == quote:  # """a"""" ends with the string's own quote
            end += 1
        return end, line + text.count("\n", pos, end)


def stage_path(doc: Mapping[str, Any], stage: str, variant: str = "baseline") -> FieldPath | None:
    """Where a stage of a scenario document is defined for ``variant``: under ``variants.<variant>`` when the
    variant changes it (or replaces a table holding it), else under ``pipeline``.

    :param doc: the document as read (TOML/YAML), before the variants are merged.
    :param stage: a stage name as the reports give it (a leaf: ``llm_ttft``, ``tts``).
    :returns: the key path of the stage's table or value, or None when the document has no key of that name.
    """
    base = _find(doc.get("pipeline"), stage, ("pipeline",))
    variants = doc.get("variants")
    override = variants.get(variant) if isinstance(variants, Mapping) else None
    if isinstance(override, Mapping):
        own = _find(override, stage, ("variants", variant))
        if own is not None:
            return own
        if base is not None:  # a table with a kind replaces what was there (llm = { kind = "wafer", ... })
            node: Any = override
            for depth, key in enumerate(base[1:], start=1):
                if not isinstance(node, Mapping) or key not in node:
                    break
                node = node[key]
                if not isinstance(node, Mapping) or "kind" in node:
                    return ("variants", variant, *base[1 : depth + 1])
    return base


def _find(node: Any, name: str, prefix: FieldPath) -> FieldPath | None:
    """The shallowest path below ``node`` whose last key is ``name`` (breadth first)."""
    level: list[tuple[Any, FieldPath]] = [(node, prefix)]
    while level:
        nxt: list[tuple[Any, FieldPath]] = []
        for value, path in level:
            items: Any = (
                value.items() if isinstance(value, Mapping) else enumerate(value) if isinstance(value, list) else ()
            )
            for key, child in items:
                if key == name:
                    return (*path, key)
                nxt.append((child, (*path, key)))
        level = nxt
    return None
