"""pytest plugin for voicebudget, registered as ``voicebudget`` through the ``pytest11`` entry point.

Provides the ``voice_budget`` fixture (a :class:`~voicebudget.TurnRecorder`), the
``@pytest.mark.voice_budget(total_ms=..., percentile=..., stages=..., stage_shares=...)`` marker,
the options ``--voicebudget-json PATH``, ``--voicebudget-junit PATH``, ``--voicebudget-github``,
``--voicebudget-percentile P``, ``--voicebudget-total-ms MS`` (ini keys ``voicebudget_json``,
``voicebudget_junit``, ``voicebudget_github``, ``voicebudget_percentile``, ``voicebudget_total_ms``), a failure
message with the per-stage breakdown, a terminal summary, a JSON report, JUnit XML and GitHub annotations. See
docs/checker.md and docs/ci.md.
The implementation lives in :mod:`voicebudget.checker._plugin`; this module imports neither typer
nor rich.
"""

from __future__ import annotations

from voicebudget.checker._plugin import (
    pytest_addoption,
    pytest_configure,
    pytest_runtest_call,
    pytest_runtest_setup,
    pytest_sessionfinish,
    pytest_terminal_summary,
    pytest_testnodedown,
    voice_budget,
)

__all__ = [
    "pytest_addoption",
    "pytest_configure",
    "pytest_runtest_call",
    "pytest_runtest_setup",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
    "pytest_testnodedown",
    "voice_budget",
]
