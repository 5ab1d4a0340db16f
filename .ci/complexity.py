"""The complexity gate (issue 23): under 5% of the package's functions have a cyclomatic complexity over 10.

The count is radon's (``radon cc``): each function, method and closure once, with ``and``/``or``,
comprehensions, conditional expressions and ``assert`` counted as branches, as the issue measured it
(httpx 1.8%, anyio 1.6%, pipecat 4.6%). Ruff's C901 (mccabe) counts fewer branches, so a function can pass
it and still count here. Run by ``.ci/run`` and ``make lint``; radon comes with the ``dev`` extra.

Usage: ``python .ci/complexity.py [--list] [PACKAGE_DIR]``; ``--list`` prints the functions over 10, the
most complex first. Exit 1 when the share is 5% or more.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Class, Function

LIMIT = 10
"""A function over this complexity counts against the share."""
MAX_SHARE = 0.05
"""The share of functions over :data:`LIMIT` must stay under this."""


def _functions(blocks: list[Function | Class]) -> Iterator[Function]:
    """Every function, method and closure once (radon lists methods beside their class)."""
    for block in blocks:
        if isinstance(block, Function):
            yield block
            yield from _functions(block.closures)


def measure(package: Path) -> tuple[int, list[tuple[int, str]]]:
    """The number of functions, and ``(complexity, where)`` of those over :data:`LIMIT`."""
    total = 0
    over: list[tuple[int, str]] = []
    for path in sorted(package.rglob("*.py")):
        for f in _functions(cc_visit(path.read_text(encoding="utf-8"))):
            total += 1
            if f.complexity > LIMIT:
                name = f"{f.classname}.{f.name}" if f.classname else f.name
                over.append((f.complexity, f"{path.relative_to(package.parent)}:{f.lineno} {name}"))
    return total, sorted(over, reverse=True)


def main(argv: list[str]) -> int:
    args = [a for a in argv if a != "--list"]
    package = Path(args[0]) if args else Path(__file__).resolve().parent.parent / "voicebudget"
    total, over = measure(package)
    share = len(over) / total if total else 0.0
    ok = share < MAX_SHARE
    print(  # noqa: T201 - a CI gate reports by printing
        f"complexity: {len(over)} of {total:,} functions over {LIMIT} ({share:.1%}); "
        f"the gate: under {MAX_SHARE:.0%}: {'met' if ok else 'NOT met'}"
    )
    if "--list" in argv or not ok:
        for complexity, where in over:
            print(f"  {complexity:3d}  {where}")  # noqa: T201
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
