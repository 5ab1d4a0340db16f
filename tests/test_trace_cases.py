"""Every folder in tests/data/traces/cases/ is one sample trace with its expected values: supporting a
new framework version is one rule entry plus one folder here.

A folder holds the trace (any name) and ``expected.json``:

- ``source``: where the right answer comes from (a README row of ../shared/cases/, or how it was built);
- ``format``: the reader expected to detect the file; ``options``: :class:`ReadOptions` fields;
- ``turns``: per turn, in order, ``total_ms`` (null: no total), ``flagged`` and, when given, ``rules``,
  ``stages_ms`` (each listed stage), ``parts_ms``, ``framework_total_ms``, ``notes`` (a piece of each
  note the turn must carry), ``unknown_stages`` and ``lower_bound`` (the total leaves out stages the
  source does not time);
- ``anomalies``: each must be found (``line``, ``field``, a piece of its ``reason`` and, when given, the
  ``turn`` it names); an empty list means none at all;
- ``check``: ``included_totals_ms`` (sorted), ``tail_driver``, ``tail_part`` and ``lower_bound_turns`` of
  ``check``, or
  ``error``: a piece of the refusal when no turn is usable, or ``summary_only`` and ``passed`` for a
  platform that gives statistics, not turns (with ``summaries``: each call's verdict).

Values in ms, within ``tolerance_ms`` (default 1 ms: the logs print milliseconds).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from doc_trace_tables import RULE_NAMES

from voicebudget import ScenarioError
from voicebudget.traces import ReadOptions, check, detect_format, read_trace

CASES = Path(__file__).parent / "data" / "traces" / "cases"
FOLDERS = sorted(p for p in CASES.iterdir() if p.is_dir())


def _trace(folder: Path) -> Path:
    (path,) = [p for p in folder.iterdir() if p.name != "expected.json"]
    return path


def _close(got: float | None, want: float | None, tol: float) -> bool:
    if want is None or got is None:
        return got is want
    return abs(got - want) <= tol


def _check_turn(turn: Any, want: dict[str, Any], tol: float) -> None:
    assert _close(turn.total_ms, want["total_ms"], tol), (turn.id, turn.total_ms)
    assert turn.flagged is want["flagged"], turn.id
    if "rules" in want:
        assert turn.rules == want["rules"]
    assert turn.rules.split(" (")[0] in RULE_NAMES, turn.rules  # every rule a turn records is in a rule table
    for stage, value in want.get("stages_ms", {}).items():
        assert _close(turn.stages_ms.get(stage), value, tol), (turn.id, stage, turn.stages_ms)
    for stage, parts in want.get("parts_ms", {}).items():
        for part, value in parts.items():
            assert _close(turn.parts_ms[stage][part], value, tol), (turn.id, stage, part)
    if "framework_total_ms" in want:
        assert _close(turn.framework_total_ms, want["framework_total_ms"], tol), turn.id
    for note in want.get("notes", []):
        assert any(note in n for n in turn.notes), (turn.id, note, turn.notes)
    if "unknown_stages" in want:
        assert list(turn.unknown_stages) == want["unknown_stages"], turn.id
    assert turn.lower_bound is want.get("lower_bound", False), turn.id


def test_there_are_cases() -> None:
    assert len(FOLDERS) >= 10


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_case(folder: Path) -> None:
    want = json.loads((folder / "expected.json").read_text())
    tol = float(want.get("tolerance_ms", 1.0))
    path = _trace(folder)
    assert want["source"]
    assert detect_format(path.read_text()) == want["format"]
    table = read_trace(path, options=ReadOptions(**want.get("options", {})))
    assert table.format.startswith(want["format"])
    assert len(table.turns) == len(want["turns"])
    assert {t.reader for t in table.turns} == ({want["format"]} if want["turns"] else set())
    for turn, expected in zip(table.turns, want["turns"], strict=True):
        _check_turn(turn, expected, tol)
    if not want["anomalies"]:
        assert table.anomalies == ()
    for a in want["anomalies"]:
        found = [
            x
            for x in table.anomalies
            if (x.line, x.field) == (a["line"], a["field"])
            and a["reason"] in x.reason
            and x.turn == a.get("turn", x.turn)
        ]
        assert found, (a, table.anomalies)
    expected_check = want["check"]
    if "error" in expected_check:
        with pytest.raises(ScenarioError, match=expected_check["error"]):
            check([table])
        return
    result = check([table])
    if expected_check.get("summary_only"):  # a platform's statistics, no turns
        assert result.report is None
        assert result.passed is expected_check["passed"]
        for v, w in zip(result.summaries, want["summaries"], strict=True):
            assert (v.summary.component, v.statistic, v.passed) == (w["component"], w["statistic"], w["within_budget"])
            assert v.value_ms == pytest.approx(w["value_ms"])
        return
    assert result.report is not None
    totals = sorted(t.total_ms for t, inc in zip(result.turns, result.included, strict=True) if inc)
    assert [round(x) for x in totals] == [round(x) for x in expected_check["included_totals_ms"]]
    driver = result.report.tail_driver
    if "tail_driver" in expected_check:
        assert driver is not None
        assert driver.name == expected_check["tail_driver"]
    if "tail_part" in expected_check:
        assert driver is not None
        assert driver.parts[0].name == expected_check["tail_part"]
    assert result.lower_bounds == expected_check.get("lower_bound_turns", 0)


def _cli_options(options: dict[str, Any]) -> list[str]:
    flags = {"stop_secs": "--stop-secs", "absurd_ms": "--absurd-ms", "log_format": "--log-format"}
    return [x for key, value in options.items() for x in (flags[key], str(value))]


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_case_exit_code(folder: Path) -> None:
    """``voicebudget check`` on every case exits as its right answer says (800 ms at p95): 2 when no turn is
    usable, 1 when the included totals' p95 is over 800 ms, else 0; so no case where a failing agent passes."""
    import numpy as np
    from typer.testing import CliRunner

    from voicebudget.cli import app

    want = json.loads((folder / "expected.json").read_text())
    result = CliRunner().invoke(app, ["check", str(_trace(folder)), *_cli_options(want.get("options", {}))])
    expected_check = want["check"]
    if "error" in expected_check:
        assert result.exit_code == 2, result.output
        return
    if expected_check.get("summary_only"):
        assert result.exit_code == (0 if expected_check["passed"] else 1), result.output
        return
    p95 = float(np.percentile(np.asarray(expected_check["included_totals_ms"], dtype=float), 95))
    assert result.exit_code == (1 if p95 > 800.0 else 0), (p95, result.output)
