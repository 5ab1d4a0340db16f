"""Options and choices that several commands share (each command group keeps its own in its module).

Choices come from the library (``PrecisionOpt`` from :data:`~voicebudget.inference.PRECISIONS`), not
copied into the CLI.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from voicebudget.inference._precision import PRECISIONS

PrecisionOpt = StrEnum("PrecisionOpt", {name: name for name in PRECISIONS})  # type: ignore[misc]
"""``--precision`` choices: the library's :data:`~voicebudget.inference.PRECISIONS`."""


class Format(StrEnum):
    """Output formats of ``run`` (``junit``, ``github``: docs/ci.md)."""

    table = "table"
    json = "json"
    markdown = "markdown"
    junit = "junit"
    github = "github"


class CheckFormat(StrEnum):
    """Output formats of ``check`` (``junit``, ``github``: docs/ci.md)."""

    table = "table"
    json = "json"
    junit = "junit"
    github = "github"


class TableOrJson(StrEnum):
    """Output formats of commands without a markdown form."""

    table = "table"
    json = "json"


class OnOff(StrEnum):
    """A setting that is on or off (a flag pair ``--x/--no-x`` would not fit ``--help`` at 80 columns)."""

    on = "on"
    off = "off"


SamplesOpt = Annotated[int | None, typer.Option("--samples", "-n", min=1, help="Simulated turns per variant.")]
SeedOpt = Annotated[int | None, typer.Option("--seed", min=0, help="Random seed (recorded in the output).")]
BudgetOpt = Annotated[
    float | None, typer.Option("--budget-ms", help=r"Budget in ms (default: the file's \[budget] table, else 800).")
]
PercentileOpt = Annotated[
    float | None, typer.Option("--percentile", help="Target percentile (default: the file's, else 95).")
]
AllowRootOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--allow-root",
        help="A folder that `file = ...` references may also read from (repeatable). "
        "Default: only the file's own folder and the working directory.",
    ),
]
ForceOpt = Annotated[bool, typer.Option("--force", help="Replace existing output files (never an input file).")]
