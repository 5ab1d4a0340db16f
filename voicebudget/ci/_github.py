"""GitHub Actions: workflow commands that annotate a file line, and the job summary.

- An annotation is a line on stdout, ``::error file=F,line=N,title=T::message`` (GitHub docs, "Workflow commands
  for GitHub Actions", docs.github.com/en/actions/reference/workflow-commands-for-github-actions, read 2026-12-02).
  Values are escaped as the Actions toolkit does (``packages/core/src/command.ts``, github.com/actions/toolkit):
  ``%``, CR and LF in the message; also ``:`` and ``,`` in a property.
- The job summary is markdown appended to the file named by ``$GITHUB_STEP_SUMMARY`` (same docs, "Adding a job
  summary").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from voicebudget.ci._cases import Suite

__all__ = ["SUMMARY_ENV", "append_step_summary", "workflow_commands"]

SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
"""The variable GitHub Actions sets to the file a step appends its job summary to."""


def _data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(s: str) -> str:
    return _data(s).replace(":", "%3A").replace(",", "%2C")


def workflow_commands(suites: Sequence[Suite], title: str = "voicebudget") -> list[str]:
    """One ``::error`` line per case that failed or could not be judged, pointing at its file line when it has
    one.

    :param title: the annotation's title prefix (the command).
    """
    lines = []
    for suite in suites:
        for case in suite.cases:
            if case.outcome not in ("failed", "error"):
                continue
            props = {}
            if case.location is not None:
                props["file"] = _relative(case.location.file)
                if case.location.line:
                    props["line"] = str(case.location.line)
            props["title"] = f"{title}: {case.name}"
            spelled = ",".join(f"{k}={_property(v)}" for k, v in props.items())
            lines.append(f"::error {spelled}::{_data(case.message or case.name)}")
    return lines


def _relative(file: str) -> str:
    """An absolute path under the working directory (the repository's root in a job) as a relative one: GitHub
    places an annotation by the file's path in the repository."""
    path = Path(file)
    if path.is_absolute():
        try:
            return path.relative_to(Path.cwd()).as_posix()
        except ValueError:
            return file
    return file


def append_step_summary(markdown: str, environ: Mapping[str, str]) -> Path | None:
    """Append ``markdown`` to the job summary when ``environ`` names one (``$GITHUB_STEP_SUMMARY``).

    :returns: the summary file written to, or None when the variable is unset or empty (not in a GitHub job).
    :raises OSError: the file cannot be written.
    """
    target = environ.get(SUMMARY_ENV, "")
    if not target:
        return None
    with open(target, "a", encoding="utf-8") as out:
        out.write(markdown.rstrip("\n") + "\n\n")
    return Path(target)
