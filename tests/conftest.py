from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

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


@pytest.fixture(autouse=True, scope="session")
def _one_click_command_per_app() -> Iterator[None]:
    """typer's ``CliRunner.invoke`` builds the click command from the app's signatures on every call (~75 ms,
    most of what an in-process CLI test costs, and ~35x the command itself on ``infer``); the installed
    ``voicebudget`` builds it once per process, and so does the suite here, once per app."""
    import typer.main
    import typer.testing

    built: dict[int, tuple[object, Any]] = {}

    def command(app: typer.Typer) -> Any:
        if id(app) not in built or built[id(app)][0] is not app:
            built[id(app)] = (app, typer.main.get_command(app))  # the app held: its id is not reused
        return built[id(app)][1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(typer.testing, "_get_command", command)
        yield


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: a worker per core and two real-time lanes (tests/xdist_units.py)."""
    from xdist_units import auto_num_workers  # pytest-xdist is imported only when it runs the suite

    return auto_num_workers(config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Under ``-n`` (pyproject's ``--dist=loadgroup``): the real-time tests on their lanes, the modules that
    share a module fixture whole, the longest tests first (tests/xdist_units.py)."""
    if config.getvalue("dist") != "loadgroup":
        return None  # another --dist asked for on the command line: pytest-xdist's own
    from xdist_units import UnitScheduling

    return UnitScheduling(config, log)


# Property tests draw the same examples on every run (a CI failure is reproducible, never a lucky
# draw); set HYPOTHESIS_PROFILE=explore locally to search new examples.
settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


@pytest.fixture
def root() -> Path:
    """The repository root."""
    return ROOT
