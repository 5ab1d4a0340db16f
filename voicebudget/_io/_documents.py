"""Scenario, council and tuning documents: read by suffix, and pydantic errors as user field paths."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from voicebudget._errors import ScenarioError
from voicebudget._io._files import read_text
from voicebudget._io._limits import MAX_DOCUMENT_BYTES
from voicebudget._io._parse import load_toml
from voicebudget._text import meant, unknown

DOCUMENT_SUFFIXES = (".toml", ".yaml", ".yml")
"""File types of scenario, council and tuning files."""


def read_document(
    path: str | Path,
    *,
    fields: Collection[str] | None = None,
    max_bytes: int = MAX_DOCUMENT_BYTES,
    regular_only: bool = False,
) -> dict[str, Any]:
    """Read a TOML or YAML file (by its suffix) into a dict, with the input limits.

    :param fields: the document's known top-level fields. A YAML top-level entry whose value carries
        an anchor and whose key is not one of them (``base: &b {kind: fixed, value_ms: 1}``) is a
        definition for aliases and merge keys elsewhere, and is dropped.
    :raises ScenarioError: missing file, unknown suffix, over the size cap, not UTF-8, syntax error,
        limits exceeded, empty (no field: blank, or comments only), or not a table at the top; with
        ``regular_only`` (a ``file = ...`` reference), anything but a regular file.
    """
    path = Path(path)
    origin = str(path)
    suffix = path.suffix.lower()
    if suffix not in DOCUMENT_SUFFIXES:
        _refuse_suffix(path, suffix, origin)
    text = read_text(path, max_bytes=max_bytes, regular_only=regular_only)
    definitions: frozenset[str] = frozenset()
    if suffix == ".toml":
        data: Any = load_toml(text, origin=origin)
    else:
        from voicebudget._io._yaml import _load_yaml  # lazy: start-up (PyYAML, ~10 ms; a TOML file needs none)

        data, definitions = _load_yaml(text, origin)
    if data is None or data == {}:  # was "2 errors: name: required field missing ..." or "expected a table"
        raise ScenarioError("is empty: no fields in it", origin=origin)
    if not isinstance(data, dict):
        raise ScenarioError("expected a table (mapping) at the top level", origin=origin)
    if fields is not None and definitions:
        data = {k: v for k, v in data.items() if not (k in definitions and k not in fields)}
    return dict(data)


_COUNCIL_KEYS = frozenset({"topology", "members"})
"""Top-level fields only a council file has (a scenario's are ``pipeline`` and ``variants``)."""


def refuse_other_document(doc: Mapping[str, Any], expected: Literal["scenario", "council"], origin: str) -> None:
    """A council file read as a scenario, or a scenario read as a council, is one error saying what the file
    is and what reads it, not one line per field the other kind lacks (which read ``kind: unknown field
    'kind'; allowed for kind 'council': kind, ...`` for a council given to ``voicebudget run``).

    :param doc: the document as read (before a stage's ``kind``/``file`` overrides are merged in).
    :param expected: what the caller reads.
    :raises ScenarioError: the document is plainly the other kind: a council has ``kind = "council"``, a
        ``topology`` or ``members`` and no ``pipeline``; a scenario has a ``pipeline`` and neither of those.
    """
    council_keys = bool(_COUNCIL_KEYS & doc.keys())
    if expected == "scenario" and "pipeline" not in doc and (doc.get("kind") == "council" or council_keys):
        yaml = is_yaml(origin)
        stage = _inline_table({"kind": "council", "file": Path(origin).name}, yaml)
        raise ScenarioError(
            f"a council file ({_pair('kind', 'council', yaml)}, a topology and members), not a scenario: evaluate "
            f"it with `voicebudget council` (load_council), or use it as a scenario's stage: llm{':' if yaml else ' ='}"
            f" {stage}",
            origin=origin,
        )
    if expected == "council" and "pipeline" in doc and not council_keys:
        raise ScenarioError(
            "a scenario file (it has a pipeline), not a council: run it with `voicebudget run` (load_scenario); "
            "a council file has a topology and members (docs/councils.md)",
            origin=origin,
        )


def _refuse_suffix(path: Path, suffix: str, origin: str) -> None:
    """A document that is not TOML or YAML: missing, a folder, or of another type.

    :raises ScenarioError: always.
    """
    if not path.exists():
        raise ScenarioError("file not found", origin=origin)
    if path.is_dir():
        raise ScenarioError(f"is a folder, not a file; give a {', '.join(DOCUMENT_SUFFIXES)} file in it", origin=origin)
    raise ScenarioError(f"unknown file type {suffix!r}; allowed: {', '.join(DOCUMENT_SUFFIXES)}", origin=origin)


def validation_error(
    exc: ValidationError,
    origin: str,
    doc: Mapping[str, Any],
    overrides: Mapping[str, Any] | None = None,
    *,
    schema: Mapping[str, Any] | None = None,
) -> ScenarioError:
    """Turn a pydantic error into a :class:`ScenarioError` with user-facing field paths.

    Pydantic's internal location parts (union tags, validator wrappers) are dropped by walking the
    document along the location; errors inside a merged variant (``overrides``: variant name -> its
    override table) point at the variant's override when the field came from it.

    :param schema: the validated model's JSON schema; an unknown field in a table with a ``kind`` then
        lists the fields that kind allows.
    """
    errors = []
    raw = exc.errors()
    yaml = is_yaml(origin)
    misspelt = _misspelt_fields(raw, doc, schema)
    for err in raw:
        if _only_counts_failed_items(err, raw):
            continue
        path = _user_path(doc, err["loc"])
        if err["type"] == "missing" and tuple(path) in misspelt:
            continue  # given under a near name: its "unknown field ... did you mean" line says it once
        if overrides and len(path) >= 2 and path[0] == "variants":
            path = _variant_path(path, overrides)
        errors.append((".".join(str(p) for p in path), _message(err, path, doc, schema, yaml)))
    return ScenarioError.from_errors(origin, errors)


def _misspelt_fields(raw: list[Any], doc: Any, schema: Mapping[str, Any] | None) -> set[tuple[int | str, ...]]:
    """The required fields given under a near name (``p50 = 300`` for ``p50_ms``): the paths of the fields an
    unknown field was probably meant as (:func:`~voicebudget._text.meant`), whose "required field missing"
    would be a second line for one mistake."""
    out: set[tuple[int | str, ...]] = set()
    for err in raw:
        if err["type"] == "extra_forbidden":
            path = _user_path(doc, err["loc"])
            for guess in meant(str(path[-1]), _table_fields(schema, doc, path[:-1])):
                out.add((*path[:-1], guess))
    return out


def _only_counts_failed_items(err: Any, errors: list[Any]) -> bool:
    """Whether ``err`` is pydantic's length error that counts only the items that passed ("Tuple should
    have at least 1 item after validation, not 0": the one member given failed) while the failed items'
    own errors are listed: a consequence, not a second mistake."""
    if err["type"] != "too_short" or "after validation" not in err["msg"]:
        return False
    loc = tuple(err["loc"])
    return any(len(o["loc"]) > len(loc) and tuple(o["loc"][: len(loc)]) == loc for o in errors)


def _variant_path(path: list[int | str], overrides: Mapping[str, Any]) -> list[int | str]:
    """A merged variant's field: at the variant's override when it came from it, else at the baseline's."""
    rest = path[2:]
    if _from_override(overrides.get(str(path[1]), {}), rest):
        return ["variants", path[1], *rest]
    return ["pipeline", *rest]


def is_yaml(origin: str) -> bool:
    """Whether the document ``origin`` names is YAML (by its suffix): its messages then show fields as YAML
    writes them (``kind: fixed``), not as TOML does (``kind = "fixed"``)."""
    return origin.lower().endswith((".yaml", ".yml"))


def _pair(key: str, value: str | float, yaml: bool) -> str:
    """``key = "value"`` as TOML writes it, or ``key: value`` as YAML does (a number is never quoted)."""
    if yaml:
        return f"{key}: {value}"
    return f"{key} = {value}" if isinstance(value, int | float) else f'{key} = "{value}"'


def _inline_table(pairs: Mapping[str, str | float], yaml: bool) -> str:
    """An inline table: ``{ kind = "fixed", value_ms = 120 }`` (TOML) or ``{kind: fixed, value_ms: 120}``
    (YAML's flow mapping)."""
    body = ", ".join(_pair(k, v, yaml) for k, v in pairs.items())
    return f"{{{body}}}" if yaml else f"{{ {body} }}"


def _message(
    err: Any, path: list[int | str], doc: Mapping[str, Any], schema: Mapping[str, Any] | None, yaml: bool = False
) -> str:
    """A pydantic error's message for users: an unknown field (with the fields its kind allows), a missing
    one, an unknown kind (the closest known one, then all).

    :param yaml: the document is YAML: examples in the message are written as YAML, not TOML."""
    if err["type"] == "extra_forbidden":
        guesses = meant(str(path[-1]), _table_fields(schema, doc, path[:-1]))
        hint = f"; did you mean {' or '.join(repr(g) for g in guesses)}?" if guesses else ""
        allowed = _allowed_fields(doc, path[:-1], schema)
        return f"unknown field {str(path[-1])[:80]!r}" + (f"{hint}{allowed.removeprefix(';')}" if hint else allowed)
    if err["type"] == "missing":
        return "required field missing"
    if err["type"] == "union_tag_invalid":
        ctx = err.get("ctx", {})
        known = [t.strip().strip("'") for t in str(ctx.get("expected_tags", "")).split(",") if t.strip()]
        return unknown(str(ctx.get("discriminator", "kind")).strip("'"), ctx.get("tag", ""), known)
    if err["type"] == "union_tag_not_found":
        return _no_kind(_node_at(doc, path), _kinds_at(schema, doc, path) if schema is not None else {}, yaml)
    if err["type"] == "model_attributes_type" and schema is not None and (kinds := _kinds_at(schema, doc, path)):
        return _no_kind(_node_at(doc, path), kinds, yaml)
    if err["type"] == "less_than_equal" and _percent_for_share(err):
        value = err["input"]
        percent = f" (typed as a percent? {value!r}% is {value / 100:g})" if value >= 5 else ""
        return f"{value!r} is over 1: a share is between 0 and 1{percent}"
    if err["type"] in _NOT_A_TABLE:
        return _not_a_table(_node_at(doc, path), path, _table_fields(schema, doc, path))
    return str(err["msg"]).removeprefix("Value error, ")


def _percent_for_share(err: Any) -> bool:
    """A share (``<= 1``) given as a percent (``p = 80``): a number in (1, 100] where 1 is the most allowed."""
    value = err.get("input")
    limit = err.get("ctx", {}).get("le")
    return limit == 1 and isinstance(value, int | float) and not isinstance(value, bool) and 1 < value <= 100


_NOT_A_TABLE = frozenset({"model_type", "model_attributes_type", "dict_type"})
"""pydantic's errors for a value where a table belongs (its words name the model class: ``Input should be a
valid dictionary or instance of Budget``)."""


def _not_a_table(node: Any, path: list[int | str], fields: list[str]) -> str:
    """A value where a table belongs: what was given, and the table's fields (a list of tables, TOML's
    ``[[a.b]]``, where named entries belong: how to name them)."""
    where = ".".join(map(str, path))
    if isinstance(node, list) and node and all(isinstance(x, dict) for x in node):
        return f"a list of tables where a table of named entries belongs: give each a name ({where}.NAME)"
    shown = "a list" if isinstance(node, list) else _shown(node)
    return f"{shown} is not a table; expected one" + (f" with fields {', '.join(fields)}" if fields else "")


def _shown(node: Any) -> str:
    """A value as the file writes it: ``true``/``false`` (not Python's ``True``), YAML's empty value (``tts:``,
    read as None) as such, anything else as its repr, cut at 40 characters."""
    if isinstance(node, bool):
        return str(node).lower()
    if node is None:
        return "an empty value"
    return repr(node)[:40]


def _table_fields(schema: Mapping[str, Any] | None, doc: Any, path: list[int | str]) -> list[str]:
    """The fields the table at ``path`` takes, from the JSON schema (empty when unknown)."""
    if schema is None:
        return []
    node = _resolve(schema.get("$defs", {}), _schema_at(schema, doc, path), _node_at(doc, path))
    return list(node.get("properties", {})) if isinstance(node, Mapping) else []


def _no_kind(node: Any, kinds: Mapping[str, Mapping[str, Any]], yaml: bool = False) -> str:
    """A table with no ``kind`` where one of several is expected: say so, the kinds whose fields fit the
    ones given (``did you mean kind = "lognormal"?`` for ``{p50_ms, p95_ms}``), and every kind allowed there.

    :param kinds: kind -> its JSON schema, in the union's order (empty when not found: no list then).
    :param yaml: write the examples as YAML (``kind: lognormal``), not TOML.
    """
    if not isinstance(node, dict):
        fixed = (
            f"; a fixed time is {_inline_table({'kind': 'fixed', 'value_ms': node}, yaml)}"
            if isinstance(node, int | float) and not isinstance(node, bool) and "fixed" in kinds
            else ""
        )
        return f"{_shown(node)} is not a table; expected one with a kind{fixed}" + (
            f"; known: {', '.join(kinds)}" if kinds else ""
        )
    for key, value in node.items():  # type = "lognormal", Kind = ...: the tag under another name
        if key != "kind" and isinstance(value, str) and value in kinds and meant(str(key), ["kind", "type"]):
            return f"no kind given: {str(key)[:40]!r} is not a field; did you mean {_pair('kind', value, yaml)}?" + (
                f" known: {', '.join(kinds)}" if kinds else ""
            )
    given = set(node)
    fits = [  # an empty table fits every kind without required fields: no guess then (it was "empirical")
        k
        for k, definition in kinds.items()
        if given
        and given <= set(definition.get("properties", {}))
        and set(definition.get("required", ())) - {"kind"} <= given
    ]
    hint = " or ".join(_pair("kind", k, yaml) for k in fits) if 0 < len(fits) <= 3 else ""
    known = f" known: {', '.join(kinds)}" if kinds else ""
    return f"no kind given ({_pair('kind', '...', yaml)} says what this table is)" + (
        f"; did you mean {hint}?{known}" if hint else f";{known}" if known else ""
    )


def _kinds_at(schema: Mapping[str, Any], doc: Any, path: list[int | str]) -> dict[str, Mapping[str, Any]]:
    """The kinds the document's tagged union at ``path`` allows (kind -> its JSON schema, in the union's
    order), walking the JSON schema along the path and, through each union above it, the kind the document
    gives there; empty when the walk loses its way (a message then lists no kinds, never wrong ones)."""
    defs = schema.get("$defs", {})
    node = _schema_at(schema, doc, path)
    while isinstance(node, Mapping) and ("$ref" in node or "anyOf" in node):
        node = _resolve(defs, node, None)
    if not isinstance(node, Mapping) or "discriminator" not in node:
        return {}
    refs = [str(o.get("$ref", "")).rsplit("/", 1)[-1] for o in node.get("oneOf", ())]
    by_ref = {str(v).rsplit("/", 1)[-1]: k for k, v in node["discriminator"].get("mapping", {}).items()}
    return {by_ref[r]: defs[r] for r in refs if r in by_ref and r in defs}


def _schema_at(schema: Mapping[str, Any], doc: Any, path: list[int | str]) -> Any:
    """The JSON schema of the document's node at ``path``, unresolved (None where the walk loses its way):
    each step through a tagged union follows the kind the document gives there."""
    defs = schema.get("$defs", {})
    node: Any = schema
    at: Any = doc
    for part in path:
        node = _schema_child(_resolve(defs, node, at), part)
        at = _node_at(at, [part])
    return node


def _resolve(defs: Mapping[str, Any], node: Any, at: Any) -> Any:
    """A JSON schema node with its references followed, its tagged union resolved by the document's
    ``kind`` there (``at``), an optional field's ``null`` dropped; None when that cannot be done."""
    while isinstance(node, Mapping):
        if "$ref" in node:
            node = defs.get(str(node["$ref"]).rsplit("/", 1)[-1])
        elif "discriminator" in node and isinstance(at, Mapping) and "kind" in at:
            target = node["discriminator"].get("mapping", {}).get(at["kind"])
            node = defs.get(str(target).rsplit("/", 1)[-1]) if target else None
        elif "anyOf" in node:
            options = [o for o in node["anyOf"] if o.get("type") != "null"]
            node = options[0] if len(options) == 1 else None
        else:
            return node
    return None


def _schema_child(node: Any, part: int | str) -> Any:
    """The JSON schema of a resolved node's field, item or mapping value ``part`` (None when it has none)."""
    if not isinstance(node, Mapping):
        return None
    if isinstance(part, int):
        items = node.get("prefixItems")
        return node.get("items") if items is None else (items[part] if part < len(items) else None)
    return node.get("properties", {}).get(part, node.get("additionalProperties"))


def _user_path(doc: Any, loc: tuple[int | str, ...]) -> list[int | str]:
    path: list[int | str] = []
    node = doc
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
            path.append(part)
        elif _is_index(node, part):
            node = node[part]
            path.append(part)
        elif isinstance(node, dict) and _is_field_name(part):
            if node.get("kind") == part:
                continue  # union tag
            path.append(part)
            node = None
    return path


_WRAPPER_PARTS = frozenset({"function-after", "function-before", "function-wrap"})


def _is_index(node: Any, part: int | str) -> bool:
    """``part`` is an index into the list ``node``."""
    return isinstance(node, list | tuple) and isinstance(part, int) and 0 <= part < len(node)


def _is_field_name(part: int | str) -> bool:
    """``part`` of a pydantic location names a field, not a union member (``Foo[...]``) or a validator wrapper."""
    return isinstance(part, str) and "[" not in part and part not in _WRAPPER_PARTS


def _from_override(override: Any, path: list[int | str]) -> bool:
    """Whether the field at ``path`` of a merged variant came from the variant's override: the override
    has the path, or replaced a table above it (a table with ``kind`` replaces the baseline's)."""
    node = override
    for part in path:
        if isinstance(node, dict) and "kind" in node:
            return True
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return False
    return True


def _allowed_fields(doc: Any, parent: list[int | str], schema: Mapping[str, Any] | None) -> str:
    node = _node_at(doc, parent)
    if schema is None or not isinstance(node, dict) or "kind" not in node:
        return ""
    for definition in schema.get("$defs", {}).values():
        kind = definition.get("properties", {}).get("kind", {})
        if kind.get("const") == node["kind"] or kind.get("default") == node["kind"]:
            return f"; allowed for kind {str(node['kind'])[:40]!r}: {', '.join(definition['properties'])}"
    return ""


def _node_at(doc: Any, path: list[int | str]) -> Any:
    """The document's node at ``path`` (None when it has none there)."""
    node = doc
    for part in path:
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int):
            node = node[part]
        else:
            node = None
    return node
