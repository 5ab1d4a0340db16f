"""The CI formats every judging command shares: ``--format junit`` (JUnit XML on stdout) and ``--format github``
(the command's table, then GitHub Actions annotations, and the markdown appended to the job summary)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from voicebudget.cli._output import fail, warn

if TYPE_CHECKING:
    from voicebudget.ci import Suite


def emit_junit(suites: Sequence[Suite], name: str) -> None:
    """The JUnit XML of ``suites`` on stdout (``voicebudget run -f junit > report.xml``)."""
    # lazy: start-up (the library loads when the command runs)
    from voicebudget.ci import junit_xml

    sys.stdout.write(junit_xml(suites, name))
    sys.stdout.flush()


def emit_github(suites: Sequence[Suite], markdown: str, command: str) -> None:
    """Annotations on stdout (one ``::error`` line per verdict that failed, at its file line), and ``markdown``
    appended to ``$GITHUB_STEP_SUMMARY``; outside a GitHub job (the variable unset) a warning says no summary
    was written."""
    # lazy: start-up (the library loads when the command runs)
    from voicebudget.ci import append_step_summary, workflow_commands
    from voicebudget.ci._github import SUMMARY_ENV

    for line in workflow_commands(suites, f"voicebudget {command}"):
        sys.stdout.write(line + "\n")
    sys.stdout.flush()
    try:
        written = append_step_summary(markdown, os.environ)
    except OSError as exc:
        fail(f"${SUMMARY_ENV} {os.environ.get(SUMMARY_ENV)}: cannot write: {exc.strerror or exc}")
    if written is None:
        warn(f"${SUMMARY_ENV} is not set (not in a GitHub Actions job): no job summary written")
