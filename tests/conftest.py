from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent
_SUMMARY = pytest.StashKey[list[str]]()


@pytest.fixture
def summary_line(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Record a line for the end of the run (a model's accuracy against published figures): printed in
    pytest's terminal summary, not between the progress dots."""
    lines = request.config.stash.setdefault(_SUMMARY, [])
    return lines.append


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    lines = config.stash.get(_SUMMARY, [])
    if lines:
        terminalreporter.section("model accuracy against published measurements")
        for line in lines:
            terminalreporter.write_line(line)


# Property tests draw the same examples on every run (a CI failure is reproducible, never a lucky
# draw); set HYPOTHESIS_PROFILE=explore locally to search new examples.
settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


@pytest.fixture
def root() -> Path:
    """The repository root."""
    return ROOT
