"""The import graph of the package: no runtime import cycle, and no module imported both at a module's top
and inside one of its functions without a comment saying why (issue 23; STYLE.md "A function-level import
says why": httpx's ``_exceptions.py`` keeps type-only imports under ``TYPE_CHECKING``, pipecat's
``cli/main.py`` explains its lazy imports).

Imports under ``if TYPE_CHECKING:`` do not run, so they never make a cycle. A function-level import is
how the CLI and the lazy sub-packages keep start-up fast (docs/cli.md); importing the same module at
the top as well is an accident, unless a comment on the line (or the line above) says why.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import voicebudget

PACKAGE = Path(voicebudget.__file__).parent


@dataclass(frozen=True)
class _Import:
    module: str  # the importing module
    target: str  # the voicebudget module imported
    line: int
    in_function: bool
    commented: bool


def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is a package)."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if package else parts)] = (path, package)
    return out


def _targets(node: ast.Import | ast.ImportFrom, module: str, package: bool, known: dict) -> list[str]:  # type: ignore[type-arg]
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = module.split(".")
    if node.level:
        base = base if package else base[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    return [f"{source}.{a.name}" if f"{source}.{a.name}" in known else source for a in node.names]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _visit(
    node: ast.AST, where: tuple[str, bool, list[str]], in_function: bool, found: list[_Import], known: dict
) -> None:
    """Collect the voicebudget imports under ``node`` of module ``where = (name, is a package, its lines)``."""
    name, package, lines = where
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            line = child.lineno
            commented = "#" in lines[line - 1] or (line > 1 and lines[line - 2].strip().startswith("#"))
            for target in _targets(child, name, package, known):
                if target.split(".")[0] == "voicebudget":
                    found.append(_Import(name, target, line, in_function, commented))
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:  # the else branch runs
                _visit(other, where, in_function, found, known)
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            _visit(child, where, True, found, known)
        else:
            _visit(child, where, in_function, found, known)


def _imports() -> tuple[dict[str, tuple[Path, bool]], list[_Import]]:
    modules = _modules()
    found: list[_Import] = []
    for name, (path, package) in modules.items():
        text = path.read_text()
        _visit(ast.parse(text), (name, package, text.splitlines()), False, found, modules)
    return modules, found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def _parents(target: str, modules: dict[str, tuple[Path, bool]]) -> list[str]:
    """Importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first."""
    parts = target.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in modules]


def test_no_runtime_import_cycle() -> None:
    modules, found = _imports()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for imp in found:
        if imp.in_function:
            continue
        for target in (*_parents(imp.target, modules), imp.target):
            if target in modules and target != imp.module and not imp.module.startswith(target + "."):
                graph[imp.module].add(target)
    assert _cycles(graph) == []


def test_a_module_imported_at_the_top_is_not_imported_again_in_a_function_without_a_comment() -> None:
    _, found = _imports()
    top = {(i.module, i.target) for i in found if not i.in_function}
    again = [
        f"{i.module}:{i.line} imports {i.target} in a function, and at the top"
        for i in found
        if i.in_function and not i.commented and (i.module, i.target) in top
    ]
    assert again == []


def test_the_checks_see_the_package() -> None:
    modules, found = _imports()
    assert len(modules) > 50
    assert any(i.in_function for i in found)  # the CLI's lazy imports are seen
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
