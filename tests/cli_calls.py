"""The CLI called in process, as the hostile-input tests call it: a command's exit code and output, never with
a traceback, and the one ``error:`` line of a refused command."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from voicebudget.cli import app

runner = CliRunner()


def cli(*args: str | Path) -> tuple[int, str]:
    """Run ``voicebudget *args``: its exit code and output (which must hold no traceback)."""
    result = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def one_error_line(output: str) -> str:
    """The output of a refused command: exactly one line, ``error: ...``."""
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    assert lines[0].startswith("error: "), output
    return lines[0]
