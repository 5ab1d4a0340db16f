"""YAML with the input rules: a safe loader, duplicate keys refused, alias expansion counted first."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import yaml

from voicebudget._errors import ScenarioError
from voicebudget._io._limits import MAX_NESTING, MAX_YAML_ALIAS_NODES
from voicebudget._io._parse import finite_int

_MERGE_TAG = "tag:yaml.org,2002:merge"
_T = TypeVar("_T")


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader with the input rules: alias expansion counted before construction, a key
    given twice in one mapping is an error (as in TOML), a key must be hashable, merge keys work."""

    definitions: frozenset[str] = frozenset()

    def compose_document(self) -> yaml.Node | None:
        # PyYAML's, except that the anchored nodes are remembered (top-level definitions, see below)
        self.get_event()  # type: ignore[no-untyped-call]  # DOCUMENT-START
        node = self.compose_node(None, None)  # type: ignore[arg-type]
        self.get_event()  # type: ignore[no-untyped-call]  # DOCUMENT-END
        anchored = {id(n) for n in self.anchors.values()}
        self.anchors = {}
        if isinstance(node, yaml.MappingNode):
            self.definitions = frozenset(
                str(k.value) for k, v in node.value if isinstance(k, yaml.ScalarNode) and id(v) in anchored
            )
        return node

    def construct_document(self, node: yaml.Node) -> Any:
        _check_expansion(node)
        return super().construct_document(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable) or isinstance(key, list | dict):
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"a mapping key must be a string or number, not a {type(key).__name__}",
                    key_node.start_mark,
                )
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {str(key)[:80]!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_REFUSED_TAGS = ("binary", "set", "omap", "pairs")
"""YAML's tags for types a voicebudget file has no use for: ``!!binary`` (bytes, which pydantic would take
as text), ``!!set`` (unordered), ``!!omap`` and ``!!pairs`` (lists of pairs posing as tables)."""


def _refuse_tag(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    raise yaml.constructor.ConstructorError(
        None,
        None,
        f"the tag {node.tag.replace('tag:yaml.org,2002:', '!!')} is not allowed: a voicebudget file holds text, "
        "numbers, booleans, lists and tables",
        node.start_mark,
    )


for _tag in _REFUSED_TAGS:
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse_tag)


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int | float:
    return finite_int(loader.construct_yaml_int(node))


_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def _check_expansion(root: yaml.Node) -> None:
    """Refuse a document whose aliases would expand past :data:`MAX_YAML_ALIAS_NODES` added nodes, refer
    to themselves, or nest deeper than :data:`MAX_NESTING`; counted on the node graph (memoised, so a
    bomb costs as much as its text)."""
    sizes: dict[int, int] = {}
    depths: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            depths[key] = 1 + max((depths[id(c)] for c in children), default=0)
            active.discard(key)
            if depths[key] > MAX_NESTING:
                raise yaml.constructor.ConstructorError(
                    None, None, f"nested deeper than {MAX_NESTING} levels", node.start_mark
                )
            continue
        if key in sizes:
            continue
        active.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in active:
                raise yaml.constructor.ConstructorError(
                    None, None, "an alias refers to its own parent (recursive)", child.start_mark
                )
            if id(child) not in sizes:
                stack.append((child, False))
    _check_added(root, sizes)


def _check_added(root: yaml.Node, sizes: dict[int, int]) -> None:
    """Refuse aliases that add more than :data:`MAX_YAML_ALIAS_NODES` nodes (``sizes``: each node's size
    once expanded, by ``id``)."""
    added = sizes[id(root)] - len(sizes)
    if added > MAX_YAML_ALIAS_NODES:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"aliases expand to {sizes[id(root)]:,} nodes (the document has {len(sizes):,}); "
            f"at most {MAX_YAML_ALIAS_NODES:,} added nodes are allowed",
            root.start_mark,
        )


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def load_yaml(text: str, *, origin: str) -> Any:
    """Parse YAML with the safe loader and the input rules above.

    :raises ScenarioError: a syntax error, a duplicate or non-scalar key, a recursive alias, too many
        alias expansions or too deep nesting; the message names the file and line.
    """
    return _load_yaml(text, origin)[0]


def compose_yaml(text: str, *, origin: str) -> yaml.Node | None:
    """The YAML document's node graph (with each node's position), under the same limits as loading.

    :raises ScenarioError: as :func:`load_yaml`.
    """
    return _parse(text, origin, _compose)


def _compose(loader: _Loader) -> yaml.Node | None:
    node = loader.get_single_node()
    if node is not None:
        _check_expansion(node)
    return node


def _load_yaml(text: str, origin: str) -> tuple[Any, frozenset[str]]:
    """The document and its top-level keys whose value carries an anchor (``base: &b {...}``)."""
    return _parse(text, origin, lambda loader: (loader.get_single_data(), loader.definitions))


def _parse(text: str, origin: str, read: Callable[[_Loader], _T]) -> _T:
    """``read`` on a loader of ``text``, YAML's errors as one-line :class:`ScenarioError` naming the line."""
    loader = None
    try:
        loader = _Loader(text)  # the reader refuses control characters here already
        return read(loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        field = f"line {mark.line + 1}" if mark is not None else ""
        problem = " ".join(p for p in (exc.context, exc.problem) if p)[:300]
        if "'\\t'" in problem:  # PyYAML: "found character '\t' that cannot start any token"
            problem += "; YAML indents with spaces, not tabs: use spaces"
        raise ScenarioError(f"cannot parse YAML: {problem}", origin=origin, field=field) from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"cannot parse YAML: {str(exc)[:300]}", origin=origin) from None
    except RecursionError:
        raise ScenarioError(f"YAML nested deeper than {MAX_NESTING} levels; refused", origin=origin) from None
    finally:
        if loader is not None:
            loader.dispose()
