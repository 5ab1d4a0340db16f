"""The ``voicebudget`` command line: a thin typer layer over the library.

Each command parses its arguments, calls one library function and renders the result.
Exit codes: 0 within budget, 1 over budget, 2 invalid input (message on stderr, no traceback),
3 an internal error (a bug: a one-line message with the version; ``VOICEBUDGET_TRACEBACK=1`` shows the
traceback). A crash never exits 1, which means only "over budget".

One module per command group (``_run``, ``_inference``, ``_traces``, ``_councils``, ``_capacity``);
options several groups share are in ``_options``, the way out (exit codes, errors, JSON) in ``_output``,
the guard every command runs under in ``_guard``. The app is assembled here, in the order ``--help``
lists the commands.

Start-up: typer builds every command's options whatever the command line asks for, so a command module
imports at its top only typer, rich and the light library modules its options read (the precisions, the
trace formats); the library a command runs is imported inside it (``# lazy: start-up``; ``run`` does so under
``_guard.loading_library``, which freezes what the library leaves for the garbage collector). ``voicebudget
--help`` loads neither numpy nor a stage model (tests/test_cli_startup.py; times in
benchmarks/bench_startup.py). The command line loads no pydantic plugin (:data:`PLUGINS_ENV`).
"""

from __future__ import annotations

import functools
import os
import sys
import typing

import typer

from voicebudget.cli import _audio, _baseline, _capacity, _councils, _fillers, _inference, _run, _traces
from voicebudget.cli._guard import (
    EXITS,
    TRACEBACK_ENV,
    Command,
    OneLineUsageGroup,
    claim_process,
    crash_guard,
    fail_to_write,
    interrupted,
    one_line_paragraphs,
    report_bug,
    write_error,
)
from voicebudget.cli._options import PrecisionOpt
from voicebudget.cli._output import EXIT_BUG, EXIT_INVALID, EXIT_OK, EXIT_OVER_BUDGET
from voicebudget.cli._traces import DEFAULT_FIT_METHOD, FitMethodOpt, TraceFormatIn

__all__ = [
    "DEFAULT_FIT_METHOD",
    "EXIT_BUG",
    "EXIT_INVALID",
    "EXIT_OK",
    "EXIT_OVER_BUDGET",
    "TRACEBACK_ENV",
    "FitMethodOpt",
    "PrecisionOpt",
    "TraceFormatIn",
    "app",
    "crash_guard",
    "main",
]

app = typer.Typer(
    name="voicebudget",
    help="Does your voice agent answer within budget? Model the pipeline, the hardware, councils; check traces.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=OneLineUsageGroup,
    # typer 0.29 coerces every parameter's value through a pydantic TypeAdapter unless it is already a bool;
    # the group's own --help is None when a subcommand is named, so `run --help` would load pydantic (~60 ms)
    # for it. False is what an absent flag means.
    context_settings={"default_map": {"help": False}},
)

COMMANDS: dict[str, Command] = {
    "run": _run.run,
    "schema": _run.schema,
    "infer": _inference.infer,
    "hardware": _inference.hardware_cmd,
    "models": _inference.models_cmd,
    "check": _traces.check_cmd,
    "fit": _traces.fit_cmd,
    "endpointing": _audio.endpointing_cmd,
    "guard-report": _fillers.guard_report_cmd,
    "council": _councils.council_cmd,
    "council-fit": _councils.council_fit_cmd,
    "tune": _councils.tune_cmd,
    "capacity": _capacity.capacity_cmd,
    "compare": _baseline.compare_cmd,
}
"""Command name -> its function, in the order ``--help`` lists them."""


@functools.cache
def option_flags(*names: str) -> dict[str, tuple[str, ...]]:
    """Command ``names``'s parameter -> the flags typer declared for it (``("compare",)``, or a group's
    subcommand ``("baseline", "pin")``), read from the click command typer builds (so the library's errors,
    which name parameters, show the flags: written once, in the command's signature). Built on the first
    error a command shows."""
    command = typer.main.get_command(app)
    for name in names:
        command = command.commands[name]  # type: ignore[attr-defined]  # a group: typer built several commands
    return {p.name: (*p.opts, *p.secondary_opts) for p in command.params if p.param_type_name == "option"}


for _name, _command in COMMANDS.items():
    # typer reads a command's annotations each time it builds the click command (twice per command, and
    # once per CliRunner.invoke in the tests); resolving the strings once here leaves it objects to read
    _command.__annotations__ = typing.get_type_hints(_command, include_extras=True)
    _help = one_line_paragraphs(_command.__doc__) if _command.__doc__ else None
    app.command(_name, help=_help)(crash_guard(_command, functools.partial(option_flags, _name)))

GROUPS: dict[str, tuple[str, dict[str, Command]]] = {
    "baseline": ("Pin a baseline of measured turns for `voicebudget compare`.", {"pin": _baseline.pin_cmd}),
}
"""Command groups (``voicebudget baseline pin``): name -> (help, subcommand name -> function)."""

for _group, (_group_help, _subcommands) in GROUPS.items():
    _sub = typer.Typer(name=_group, help=_group_help, no_args_is_help=True, add_completion=False, cls=OneLineUsageGroup)
    for _name, _command in _subcommands.items():
        _command.__annotations__ = typing.get_type_hints(_command, include_extras=True)
        _help = one_line_paragraphs(_command.__doc__) if _command.__doc__ else None
        _sub.command(_name, help=_help)(crash_guard(_command, functools.partial(option_flags, _group, _name)))
    app.add_typer(_sub, name=_group)


PLUGINS_ENV = "PYDANTIC_DISABLE_PLUGINS"
"""pydantic's switch for its plugins (https://docs.pydantic.dev/latest/concepts/plugins/, read 2026-12-02),
set to ``__all__`` by :func:`main` unless the environment sets it (to ``""`` to keep them). Finding plugins
reads every installed distribution's entry points when the first model is built: ~15 ms of a ~0.5 s
``voicebudget run`` in an environment with the framework extras (benchmarks/bench_startup.py), for
plugins (observability, such as Logfire's) that would trace the command's own file validation."""


def main() -> None:
    """Console-script entry point (every command runs under :func:`crash_guard`)."""
    claim_process()
    os.environ.setdefault(PLUGINS_ENV, "__all__")
    try:
        try:
            app()
        finally:  # flush here, not at interpreter exit, so a reader that went away is seen (exit 141)
            sys.stdout.flush()
    except EXITS as exc:
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)
    except Exception as exc:  # outside a command (argument parsing, completion): still not exit 1
        if interrupted(exc):  # Ctrl-C that a library reported as its own error: as a shell ends on SIGINT
            sys.exit(130)
        message = write_error(exc)  # the last flush of stdout on a full device
        try:
            if message is not None:
                fail_to_write(message)
            report_bug(exc)
        except EXITS as done:
            sys.exit(done.exit_code)


if __name__ == "__main__":  # pragma: no cover
    main()
