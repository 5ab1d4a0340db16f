"""docs/traces.md lists every format, layer, export, rule and stage the readers have, and every rule name
the readers give a turn comes from a rule table (so the page, written from those tables, cannot drift)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from doc_trace_tables import RULE_NAMES

from voicebudget.traces import DOCUMENTS, FORMATS, OFF_PATH, ON_PATH, WRAPPERS
from voicebudget.traces._pipecat_rules import LINE_RULES, RULE_SETS

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "traces.md").read_text(encoding="utf-8")
TRACES = ROOT / "voicebudget" / "traces"

NAMES = sorted(
    {
        *FORMATS,
        *(w.name for w in WRAPPERS),
        *(d.name for d in DOCUMENTS),
        *RULE_NAMES,
        *ON_PATH,
        *OFF_PATH,
    }
)


@pytest.mark.parametrize("name", NAMES)
def test_the_page_names_it(name: str) -> None:
    assert f"`{name}`" in PAGE, f"docs/traces.md does not name `{name}`: run python tests/doc_outputs.py docs/traces.md"


def test_the_page_names_each_rule_source_file() -> None:
    """Each Pipecat line and rule set, LiveKit rule and platform rule shows the file it was read from."""
    from voicebudget.traces._livekit_rules import RULES
    from voicebudget.traces._platforms import PLATFORM_RULES

    sources = [r.source for r in LINE_RULES] + [r.source for r in RULE_SETS.values()]
    sources += [r.source for r in RULES.values()] + [r.source for r in PLATFORM_RULES.values()]
    for source in sources:
        assert source.replace("<", "\\<") in PAGE, source


def test_line_rules_open_known_rule_sets() -> None:
    assert {r.rule_set for r in LINE_RULES if r.rule_set} <= set(RULE_SETS)


def _assigned_rule_names(tree: ast.AST) -> list[tuple[int, str]]:
    """String constants a reader writes into a turn's rule: assignments to ``.rules``/``.rule_set`` or to a
    local ``rules``, the ``rules`` argument of a turn constructor, and what a ``rules()`` method returns."""
    found: list[tuple[int, str]] = []

    def strings(node: ast.AST | None) -> None:
        """The strings an expression can give: constants, both arms of ``a if c else b``, both sides of
        ``+``, a table's key in ``RULES["x"].name`` (not the strings inside a condition or a call)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append((node.lineno, node.value))
        elif isinstance(node, ast.IfExp):
            strings(node.body)
            strings(node.orelse)
        elif isinstance(node, ast.BinOp):
            strings(node.left)
            strings(node.right)
        elif isinstance(node, ast.Attribute):
            strings(node.value)
        elif isinstance(node, ast.Subscript):
            strings(node.slice)

    def is_rule_target(t: ast.AST) -> bool:
        return (isinstance(t, ast.Attribute) and t.attr in ("rules", "rule_set")) or (
            isinstance(t, ast.Name) and t.id == "rules"
        )

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if is_rule_target(target):
                    strings(node.value)
                elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    for t, v in zip(target.elts, node.value.elts, strict=False):
                        if is_rule_target(t):
                            strings(v)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "turn":
            strings(node.args[2] if len(node.args) > 2 else None)
        elif isinstance(node, ast.FunctionDef) and node.name == "rules":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Return):
                    strings(sub.value)
    return found


def test_every_rule_name_a_reader_writes_is_in_a_rule_table() -> None:
    unknown = []
    for path in sorted(TRACES.glob("*.py")):
        for line, value in _assigned_rule_names(ast.parse(path.read_text(encoding="utf-8"))):
            if value == "" or (value.startswith(" (") and value.endswith(")")):
                continue  # no rule yet; a qualifier on a rule's name: "livekit-metrics-1.x (pydantic str/repr)"
            if value not in RULE_NAMES:
                unknown.append(f"{path.name}:{line}: {value!r}")
    assert not unknown, "rule names outside the rule tables: " + "; ".join(unknown)
