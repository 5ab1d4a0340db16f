"""What every command shares on the way out: exit codes, error and warning lines, JSON on stdout,
the mapping of the library's errors to exit codes, and the checks of output paths made before any work."""

from __future__ import annotations

import json
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console

from voicebudget._errors import BudgetExceeded, ModelError, ScenarioError, VoiceBudgetError
from voicebudget._tail import few_turns_warning
from voicebudget._text import literal

if TYPE_CHECKING:
    from voicebudget._budget import Budget

EXIT_OK, EXIT_OVER_BUDGET, EXIT_INVALID, EXIT_BUG = 0, 1, 2, 3


def fail(message: str, code: int = EXIT_INVALID) -> NoReturn:
    """Print ``message`` to stderr and exit with ``code`` (2: invalid input)."""
    _stderr().print(f"[red]error:[/] {literal(message)}", markup=True)
    raise typer.Exit(code)


def warn(message: str) -> None:
    """Print a warning to stderr (the exit code is unchanged)."""
    _stderr().print(f"[yellow]warning:[/] {literal(message)}", markup=True)


def warn_few_simulated(percentile: float, turns: int) -> None:
    """Warn when a simulated percentile rests on a handful of turns, by the rule ``check`` applies to measured
    ones (:func:`voicebudget._tail.few_turns_warning`): ``run -n 5`` gives a p95 that is the slowest of five
    draws, and a tail driver that is that turn's. The table's reader gets it; JSON carries ``n_turns``."""
    few = few_turns_warning(percentile, turns)
    if few is not None:
        warn(f"{few}; simulate more: --samples/-n")


def _stderr() -> Console:
    """Messages on stderr, one line each; emoji codes off: ``timeout:100:`` in a message is not "timeout💯"."""
    return Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)


_HELD: ContextVar[list[warnings.WarningMessage] | None] = ContextVar("voicebudget_cli_warnings", default=None)


@contextmanager
def holding_warnings(caught: list[warnings.WarningMessage]) -> Iterator[None]:
    """While a command runs, the Python warnings it has caught so far are ``caught`` (what
    :func:`held_warnings` reads: the JSON a command writes carries them)."""
    token = _HELD.set(caught)
    try:
        yield
    finally:
        _HELD.reset(token)


def held_warnings() -> list[str]:
    """The Python warnings the running command has caught so far, one line each, once each, as the command
    line says them (an :class:`~voicebudget.ImplausibleValue` names ``--budget-ms``, not ``budget_ms``)."""
    # lazy: start-up (the library loads when the command runs)
    from voicebudget._errors import ImplausibleValue

    lines = []
    for w in _HELD.get() or ():
        text = w.message.naming(option_spelling()) if isinstance(w.message, ImplausibleValue) else str(w.message)
        lines.append(" ".join(text.split())[:300])
    return list(dict.fromkeys(lines))


OptionFlags = Mapping[str, tuple[str, ...]]
"""A command's parameter -> the flags typer declared for it (``{"samples": ("--samples", "-n")}``)."""

_FLAGS: ContextVar[Callable[[], OptionFlags]] = ContextVar("voicebudget_cli_flags", default=dict)


@contextmanager
def naming_options(flags: Callable[[], OptionFlags]) -> Iterator[None]:
    """While a command runs, the library's errors name its options: ``flags()`` gives them (read only
    when an error is shown)."""
    token = _FLAGS.set(flags)
    try:
        yield
    finally:
        _FLAGS.reset(token)


def cli_message(exc: VoiceBudgetError, aliases: Mapping[str, str] | None = None) -> str:
    """``exc``'s message as the command line says it: each parameter the library names (``budget_ms``)
    is spelled as the running command's option (``--budget-ms``); a parameter that is the error's whole
    origin with all its names (``--samples/-n: ...``).

    :param aliases: library parameter -> the command's parameter that sets it, where they differ
        (``{"fmt": "format_in"}``: ``check_traces(fmt=...)`` is set by ``--format-in``).
    """
    flags = _FLAGS.get()()
    aliases = aliases or {}
    spell = option_spelling(aliases)

    def spell_all(name: str) -> str:
        opts = flags.get(aliases.get(name, name), ())
        return "/".join(opts) if opts else name

    if isinstance(exc, ScenarioError):
        return exc.naming(spell, spell_origin=spell_all)
    return exc.naming(spell)


def option_spelling(aliases: Mapping[str, str] | None = None) -> Callable[[str], str]:
    """Library parameter -> the running command's long flag (``"allow_few_turns"`` -> ``"--allow-few-turns"``),
    for the library's errors and for results that name a setting (``CompareSettings.spell``); a parameter no
    option sets keeps its name. The flags are read when a name is spelled.

    :param aliases: library parameter -> the command's parameter that sets it, where they differ.
    """
    aliases = aliases or {}

    def spell(name: str) -> str:
        opts = _FLAGS.get()().get(aliases.get(name, name), ())
        return next((o for o in opts if o.startswith("--")), opts[0]) if opts else name

    return spell


def spell_fields(text: str, fields: Mapping[str, str], prefix: str) -> str:
    """``text`` (a library note naming input fields as Python spells them, ``Deployment.pipeline_parallel``) with
    each ``<prefix>.<field>`` in ``fields`` spelled as the running command's option (``--pp``); a field no option
    sets keeps its Python name.

    :param fields: the input field -> the command's parameter that sets it (``{"pipeline_parallel": "pp"}``).
    """
    spell = option_spelling(fields)

    def one(m: re.Match[str]) -> str:
        flag = spell(m[1])
        return flag if flag.startswith("-") else m[0]

    return re.sub(re.escape(prefix) + r"\.(" + "|".join(map(re.escape, fields)) + r")\b", one, text)


@contextmanager
def user_errors(**aliases: str) -> Iterator[None]:
    """Turn the library's input/model errors into exit code 2 with their message, no traceback; the
    parameters the message names are spelled as this command's options (:func:`cli_message`).

    :param aliases: library parameter -> the command's parameter that sets it, where the names differ.
    """
    try:
        yield
    except (ScenarioError, ModelError) as exc:
        fail(cli_message(exc, aliases))
    except BudgetExceeded as exc:  # a verdict, whoever raised it
        fail(str(exc), EXIT_OVER_BUDGET)
    except VoiceBudgetError as exc:  # pragma: no cover - every known subclass is handled above
        fail(cli_message(exc, aliases))


def choice_value(choice: StrEnum | None) -> str | None:
    """A choice option's plain string (None stays None)."""
    return None if choice is None else choice.value


def budget_override(base: Budget, budget_ms: float | None, percentile: float | None) -> Budget:
    """``base`` with the CLI's ``--budget-ms``/``--percentile`` applied (exit 2 naming the option)."""
    # lazy: start-up (the library loads when the command runs)
    from voicebudget._budget import with_overrides

    with user_errors():
        return with_overrides(base, budget_ms, percentile)


PLOT_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg")


def check_plot_path(
    path: Path | None, *, overwrite: bool = False, inputs: list[Path] | tuple[Path, ...] = (), count: int = 1
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
            check_target(target, overwrite=overwrite, inputs=inputs, what="--plot")
    return targets


def plot_targets(path: Path, count: int) -> list[Path]:
    """``path`` for one result; ``NAME-1.SUFFIX`` ... for several."""
    return [path] if count == 1 else [path.with_stem(f"{path.stem}-{i + 1}") for i in range(count)]


def emit_json(doc: Any) -> None:
    """Write a JSON document to stdout (flushed here, so a reader that went away is seen: exit 141).

    The warnings the command has given so far (:func:`held_warnings`; the lines stderr shows) are the
    document's ``"warnings"`` list, in each document of a list; there is no such key when there are none.
    """
    held = held_warnings()
    if held and isinstance(doc, dict):
        doc = {**doc, "warnings": held}
    elif held and isinstance(doc, list):
        doc = [{**d, "warnings": held} if isinstance(d, dict) else d for d in doc]
    sys.stdout.write(json.dumps(doc, indent=2, allow_nan=False) + "\n")
    sys.stdout.flush()
