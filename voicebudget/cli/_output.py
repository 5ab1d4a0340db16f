"""What every command shares on the way out: exit codes, error and warning lines, JSON on stdout,
the mapping of the library's errors to exit codes, and the checks of output paths made before any work."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from voicebudget._errors import BudgetExceeded, ModelError, ScenarioError, VoiceBudgetError

if TYPE_CHECKING:
    from voicebudget._budget import Budget

EXIT_OK, EXIT_OVER_BUDGET, EXIT_INVALID, EXIT_BUG = 0, 1, 2, 3


def fail(message: str, code: int = EXIT_INVALID) -> NoReturn:
    """Print ``message`` to stderr and exit with ``code`` (2: invalid input)."""
    Console(stderr=True, highlight=False, soft_wrap=True).print(f"[red]error:[/] {escape(message)}", markup=True)
    raise typer.Exit(code)


def warn(message: str) -> None:
    """Print a warning to stderr (the exit code is unchanged)."""
    Console(stderr=True, highlight=False, soft_wrap=True).print(f"[yellow]warning:[/] {escape(message)}", markup=True)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the library's input/model errors into exit code 2 with their message, no traceback."""
    try:
        yield
    except (ScenarioError, ModelError) as exc:
        fail(str(exc))
    except BudgetExceeded as exc:  # a verdict, whoever raised it
        fail(str(exc), EXIT_OVER_BUDGET)
    except VoiceBudgetError as exc:  # pragma: no cover - every known subclass is handled above
        fail(str(exc))


def choice_value(choice: StrEnum | None) -> str | None:
    """A choice option's plain string (None stays None)."""
    return None if choice is None else choice.value


def budget_override(base: Budget, budget_ms: float | None, percentile: float | None) -> Budget:
    """``base`` with the CLI's ``--budget-ms``/``--percentile`` applied (exit 2 naming the option)."""
    # lazy: start-up (the library loads when the command runs)
    from voicebudget._budget import with_overrides

    try:
        return with_overrides(base, budget_ms, percentile)
    except ScenarioError as exc:
        fail(str(exc))


PLOT_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg")


def check_plot_path(
    path: Path | None, *, force: bool = False, inputs: list[Path] | tuple[Path, ...] = (), count: int = 1
) -> list[Path]:
    """Check ``--plot`` targets before any work: a known image format, an existing writable folder,
    no input file, and no existing file unless ``--force``. With ``count`` results (several scenarios)
    the targets are ``NAME-1.png`` ... ``NAME-count.png``, checked the same way.

    :returns: the target paths (empty without ``--plot``).
    """
    if path is None:
        return []
    if path.suffix.lower() not in PLOT_SUFFIXES:
        fail(f"--plot {path}: unknown image format {path.suffix!r}; allowed: {', '.join(PLOT_SUFFIXES)}")
    # lazy: start-up (the library loads when the command runs)
    from voicebudget._io import check_target

    targets = plot_targets(path, count)
    with user_errors():
        for target in targets:
            check_target(target, overwrite=force, inputs=inputs, what="--plot")
    return targets


def plot_targets(path: Path, count: int) -> list[Path]:
    """``path`` for one result; ``NAME-1.SUFFIX`` ... for several."""
    return [path] if count == 1 else [path.with_stem(f"{path.stem}-{i + 1}") for i in range(count)]


def emit_json(doc: Any) -> None:
    """Write a JSON document to stdout (flushed here, so a reader that went away is seen: exit 141)."""
    sys.stdout.write(json.dumps(doc, indent=2, allow_nan=False) + "\n")
    sys.stdout.flush()
