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


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under pytest-xdist (``-n auto``), a worker hands its summary lines to the controller."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["voicebudget_summary"] = session.config.stash.get(_SUMMARY, [])


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """The controller collects each worker's summary lines (pytest-xdist's hook)."""
    lines = getattr(node, "workeroutput", {}).get("voicebudget_summary", [])
    config: pytest.Config = node.config  # type: ignore[attr-defined]
    config.stash.setdefault(_SUMMARY, []).extend(lines)


REALTIME_MODULES = frozenset(
    {
        "test_audio_join",
        "test_checker",
        "test_conformance_matrix",
        "test_conformance_pipecat",
        "test_doc_outputs",
        "test_livekit_hook",
        "test_pipecat",
        "test_pipecat_audio",
        "test_predicted",
        "test_telemetry_frameworks",
        "test_telemetry_prometheus",
        "test_testing",
    }
)
"""Modules that run Pipecat or LiveKit conversations, or time real sleeps, in real time. Under ``-n auto``
they run one after another on one worker (``--dist loadgroup``, pyproject's addopts), so two real-time
conversations never share the cores; their module fixtures (the matrix's conversations) then run once."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = getattr(item, "module", None)
        if item.get_closest_marker("slow") or (module is not None and module.__name__ in REALTIME_MODULES):
            item.add_marker(pytest.mark.xdist_group("realtime"))


# Property tests draw the same examples on every run (a CI failure is reproducible, never a lucky
# draw); set HYPOTHESIS_PROFILE=explore locally to search new examples.
settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


@pytest.fixture
def root() -> Path:
    """The repository root."""
    return ROOT
