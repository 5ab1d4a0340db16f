"""The guard every command runs under: an exception is an exit code, never a traceback or a false verdict."""

from __future__ import annotations

import errno
import functools
import gc
import inspect
import os
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import typer

from voicebudget import __version__
from voicebudget._errors import BudgetExceeded, ImplausibleValue, VoiceBudgetError
from voicebudget.cli._output import (
    EXIT_BUG,
    EXIT_OVER_BUDGET,
    OptionFlags,
    cli_message,
    fail,
    held_warnings,
    holding_warnings,
    naming_options,
    option_spelling,
    warn,
)

TRACEBACK_ENV = "VOICEBUDGET_TRACEBACK"
"""Set to 1 to print the traceback of an internal error (exit code 3)."""

Command = Callable[..., Any]

_OWN_PROCESS = False
"""True once :func:`voicebudget.cli.main` runs: the command line is the process (not a test's runner
calling the app), so it may decide how the process collects garbage (:func:`loading_library`)."""


def claim_process() -> None:
    """Record that the command line owns this process (:func:`voicebudget.cli.main` calls it)."""
    global _OWN_PROCESS
    _OWN_PROCESS = True


@contextmanager
def loading_library() -> Iterator[None]:
    """Around a command's import of the library (``# lazy: start-up``). In the command line's own process
    the garbage collector pauses while the library loads, and the ~50,000 objects it makes (pydantic's
    schemas, numpy, the catalogs), which live as long as the process, are then frozen (:func:`gc.freeze`):
    left to it, the collector walked them again and again, ~80 ms of a ~0.5 s ``voicebudget run`` (CPU, the
    bundled scenario). Under a test's runner nothing changes."""
    if not _OWN_PROCESS or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def report_bug(exc: BaseException) -> NoReturn:
    """Exit 3 with a one-line "internal error" message naming the version (the traceback only when
    ``VOICEBUDGET_TRACEBACK=1``): a crash must never look like a verdict (exit 1)."""
    if os.environ.get(TRACEBACK_ENV, "") not in ("", "0"):
        traceback.print_exception(exc, file=sys.stderr)
    detail = " ".join(str(exc).split())[:300]
    fail(
        f"internal error in voicebudget {__version__} (a bug, not a verdict): {type(exc).__name__}: {detail}. "
        f"Set {TRACEBACK_ENV}=1 to see the traceback, and please report it.",
        EXIT_BUG,
    )


def _usage_error_base() -> type[Exception]:
    """typer's ``ClickException``, wherever this typer version keeps it: click itself before typer 0.29,
    a copy inside typer since (which no longer depends on click, so importing click would fail)."""
    for cls in typer.BadParameter.__mro__:
        if cls.__name__ == "ClickException":
            return cls
    return typer.BadParameter


WRITE_ERRNOS = frozenset(
    code
    for code in (errno.ENOSPC, getattr(errno, "EDQUOT", None), errno.EFBIG, errno.EROFS, errno.EIO, errno.EACCES)
    if code is not None
)
"""Errors of the machine, not of voicebudget: a full disk or device (``> /dev/full``), a quota, a file size
limit (``ulimit -f``), a read-only file system, an I/O error, a permission refused. Input files are read
through :mod:`voicebudget._io` (their errors are input errors already), so these come from writing."""


def write_error(exc: BaseException) -> str | None:
    """The one-line message of an :class:`OSError` in :data:`WRITE_ERRNOS` (None for any other exception):
    ``cannot write the output: No space left on device`` (stdout), ``cannot write out.png: ...``."""
    if not isinstance(exc, OSError) or exc.errno not in WRITE_ERRNOS:
        return None
    target = exc.filename if isinstance(exc.filename, str) and exc.filename else "the output"
    return f"cannot write {target}: {exc.strerror or exc}"


def fail_to_write(message: str) -> NoReturn:
    """Exit 2 with ``message``; stdout, if it is what failed, is pointed at ``/dev/null`` first so the text
    still buffered for it cannot fail again at interpreter exit (a second, multi-line error)."""
    try:
        sys.stdout.flush()
    except OSError:
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # pragma: no cover - stdout without a file descriptor
            pass
    fail(message)


@contextmanager
def one_line_warnings() -> Iterator[None]:
    """Python warnings shown while a command runs (numpy's ``RuntimeWarning: overflow encountered in exp``,
    with its source line) are held back: printed once each as one ``warning: MESSAGE`` line when the
    command ends with a result (exit 0 or 1), dropped when it fails (its ``error:`` line is the message).
    The warning filters are left as they are (``-W error`` and pytest's ``filterwarnings`` still raise).
    A JSON document written meanwhile carries them too (:func:`~._output.emit_json`)."""
    ok = False
    with warnings.catch_warnings(record=True) as caught, holding_warnings(caught):
        try:
            yield
            ok = True
        except typer.Exit as exc:
            ok = exc.exit_code in (0, EXIT_OVER_BUDGET)
            raise
        finally:
            if ok:
                for message in held_warnings():
                    warn(message)


def out_of_memory(exc: MemoryError) -> str:
    """The one-line message of a :class:`MemoryError` that got past the memory guard: what failed to be
    allocated and the lowest memory limit of this process (:func:`voicebudget._memory.memory_limit`)."""
    from voicebudget._memory import memory_limit

    lowest = memory_limit()
    detail = " ".join(str(exc).split())[:200] or "an allocation failed"
    where = f" under {lowest.what}" if lowest is not None else ""
    return f"out of memory{where}: {detail}; ask for fewer turns or variants"


def _usage_error() -> type[Exception]:
    """typer's ``UsageError`` (a bad option value, a missing argument, an unknown command)."""
    return next((c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError"), typer.BadParameter)


@contextmanager
def one_line_usage_errors() -> Iterator[None]:
    """A usage error (``-n 0``, a missing argument, an unknown command) as one ``error:`` line, exit 2,
    instead of typer's usage text and boxed message; ``voicebudget`` alone still prints the help."""
    try:
        yield
    except _usage_error() as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            raise
        ctx = getattr(exc, "ctx", None)
        hint = f"; see '{ctx.command_path} --help'" if ctx is not None else ""
        message = " ".join(exc.format_message().split()).rstrip(".")  # type: ignore[attr-defined]  # a ClickException
        message = message.replace("Value error, ", "")  # pydantic's prefix of a validator's own words
        fail(f"{message}{_given(exc, message)}{hint}")


def _given(exc: BaseException, message: str = "") -> str:
    """``", got nan"``: the value a range or type check refused, when typer's message (pydantic's, whose error
    it wraps) does not say it (``'csv' is not one of ...`` does); a range message alone reads wrong for ``nan``
    ("should be <= 1000000")."""
    errors = getattr(exc.__cause__, "errors", None)
    if not callable(errors):
        return ""
    try:
        given = errors()[0].get("input")
    except (IndexError, AttributeError, TypeError):
        return ""
    if isinstance(given, bool) or not isinstance(given, str | int | float) or f"{given!r}" in message:
        return ""
    return f", got {' '.join(str(given).split())[:40]}"


class OneLineUsageGroup(typer.core.TyperGroup):
    """The command groups of the CLI: usage errors are one line (:func:`one_line_usage_errors`), whether
    they arise parsing the group's own options, finding the command or parsing its options."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with one_line_usage_errors():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        with one_line_usage_errors():
            return super().invoke(ctx)


EXITS = (typer.Exit,)
PASS_THROUGH = (*EXITS, typer.Abort, _usage_error_base())


def crash_guard(command: Command, flags: Callable[[], OptionFlags] = dict) -> Command:
    """Wrap a command so that any exception is an exit code: the library's input errors 2, an unexpected
    exception 3 (:func:`report_bug`); exit 1 stays "over budget" only.

    :param flags: the command's parameter -> its flags (typer's declarations); the library's errors name
        parameters, the command's user reads these flags instead (:func:`~._output.cli_message`).
    """

    @functools.wraps(command)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            with naming_options(flags), one_line_warnings():
                _refuse_huge_numbers(kwargs, flags)
                return command(*args, **kwargs)
        except PASS_THROUGH:
            raise
        except BudgetExceeded as exc:
            fail(str(exc), EXIT_OVER_BUDGET)
        except VoiceBudgetError as exc:  # ScenarioError, ModelError not caught by the command itself
            with naming_options(flags):
                fail(cli_message(exc))
        except ImplausibleValue as exc:  # a warning the filters made an error (-W error, PYTHONWARNINGS=error)
            with naming_options(flags):
                fail(exc.naming(option_spelling()))
        except MemoryError as exc:  # a limit of the machine (ulimit -v, a container), not a bug
            fail(out_of_memory(exc))
        except BrokenPipeError:  # the reader of stdout went away (| head): exit as a shell would (SIGPIPE)
            _reader_went_away()
        except SystemExit as exc:
            # rich's Console answers a BrokenPipeError with SystemExit(1) (Console.on_broken_pipe): exit 1 is
            # "over budget" here, so a table piped into `head` would read as a verdict
            if isinstance(exc.__context__, BrokenPipeError):
                _reader_went_away()
            raise
        except Exception as exc:
            if interrupted(exc):
                raise KeyboardInterrupt from None  # Ctrl-C, however a library reported it: not a bug
            message = write_error(exc)
            if message is not None:
                fail_to_write(message)
            report_bug(exc)

    return guarded


def interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is a Ctrl-C (SIGINT) that a library turned into an error of its own: pydantic-core
    reports a ``KeyboardInterrupt`` raised while it builds a model's schema (the models are built when a
    command first loads them) as a ``SchemaError`` whose text ends in ``KeyboardInterrupt:``, and an error
    raised while one was being handled carries it as its context. Found by ``benchmarks/fuzz_kinds.py``
    (SIGINT during ``fit``: exit 3, "internal error ... SchemaError")."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        if isinstance(link, KeyboardInterrupt):
            return True
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return type(exc).__name__ == "SchemaError" and str(exc).rstrip().endswith("KeyboardInterrupt:")


def _reader_went_away() -> NoReturn:
    """Exit 141, as a shell does on SIGPIPE, with stdout pointed at ``/dev/null`` so that the text still
    buffered for it cannot fail again at interpreter exit."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    raise SystemExit(141) from None


def _refuse_huge_numbers(kwargs: dict[str, Any], flags: Callable[[], OptionFlags]) -> None:
    """Exit 2 naming the flag when an integer flag is beyond the float range (``-n 1000...0``, 310 digits):
    files read such a number as ``inf`` (:func:`voicebudget._io.finite_int`); a flag cannot hold ``inf``,
    so it is refused here, once for every command, before any work (compared here, not through ``_io``,
    which would load YAML and pydantic for every command: ``voicebudget models`` needs neither)."""
    for name, value in kwargs.items():
        values = value if isinstance(value, list | tuple) else [value]
        for v in values:
            if isinstance(v, int) and not isinstance(v, bool) and abs(v) > sys.float_info.max:
                from voicebudget._text import shown  # lazy: only for the message

                spelled = "/".join(flags().get(name, ())) or name
                fail(f"{spelled}: {shown(v)} is beyond the largest number read (~1.8e308)")


def one_line_paragraphs(doc: str) -> str:
    """A docstring with each paragraph joined into one line: typer keeps a paragraph's line breaks
    (they would break ``--help`` mid-sentence at any width), rich wraps the lines to the terminal."""
    return "\n\n".join(" ".join(p.split()) for p in inspect.cleandoc(doc).split("\n\n"))
