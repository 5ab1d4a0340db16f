"""The suite's own spreading over pytest-xdist workers (tests/xdist_units.py): the modules it names exist, every
module with a module-scoped fixture keeps it on one worker, and the units and the queue order are as documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

xu = pytest.importorskip("xdist_units", reason="pytest-xdist is not installed")

HERE = Path(__file__).resolve().parent
MODULES = {p.stem for p in HERE.glob("test_*.py")}


def test_every_module_named_exists() -> None:
    named = set(xu.REALTIME) | set(xu.ONE_WORKER) | set(xu.FIRST)
    assert named <= MODULES, sorted(named - MODULES)
    assert len(set(xu.FIRST)) == len(xu.FIRST)


def test_every_module_fixture_stays_on_one_worker() -> None:
    shared = {p.stem for p in HERE.glob("test_*.py") if re.search(r'scope="(module|session)"', p.read_text("utf-8"))}
    assert shared <= set(xu.ONE_WORKER), sorted(shared - set(xu.ONE_WORKER))


def test_units_and_ranks() -> None:
    matrix = "tests/test_conformance_matrix.py::test_pipecat_matrix[plain-otel]"
    assert xu.unit(matrix) == "tests/test_conformance_matrix.py::test_pipecat_matrix"
    assert xu.unit("tests/test_audio.py::test_caller_on_the_right") == "tests/test_audio.py"
    assert xu.unit("tests/test_io.py::test_toml_limits") == "tests/test_io.py::test_toml_limits"
    assert xu.rank(matrix) == 0
    assert xu.rank("tests/test_io.py::test_toml_limits") == len(xu.FIRST)
    assert xu.module("tests/test_io.py::test_toml_limits") == "test_io"
