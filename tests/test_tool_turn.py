"""The tool_turn stage: a share of turns waits for a tool and a second LLM pass. Closed forms of the
mixture, the tail attribution naming the tool, and `fit` writing it from traces with tool turns."""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.cli import app
from voicebudget.traces import fit_traces

CASES = Path(__file__).parent / "data" / "traces" / "cases"
runner = CliRunner()


def _scenario(share: float, tool: dict[str, object]) -> vb.Scenario:
    return vb.parse_scenario(
        {
            "name": "tool turns",
            "samples": 1_000_000,
            "seed": 7,
            "budget": {"total_ms": 800, "percentile": 95},
            "pipeline": {
                "kind": "sequence",
                "stages": {
                    "llm": {"kind": "fixed", "value_ms": 300},
                    "tool_turn": {
                        "kind": "tool_turn",
                        "share": share,
                        "name": "get_weather",
                        "call": {"kind": "fixed", "value_ms": 50},
                        "tool": tool,
                        "second_pass": {"kind": "fixed", "value_ms": 250},
                    },
                    "tts": {"kind": "fixed", "value_ms": 150},
                },
            },
        }
    )


def test_p95_over_the_mixture_matches_its_closed_form() -> None:
    """total = 450 + B (300 + L), B ~ Bernoulli(0.3), L log-normal(p50 400, p95 1100): the p95 solves
    0.7 + 0.3 F_L(x - 750) = 0.95, so x = 750 + 400 exp(sigma z), z = Phi^-1(0.8333), sigma = ln(2.75)/1.645."""
    report = vb.simulate(_scenario(0.3, {"kind": "lognormal", "p50_ms": 400, "p95_ms": 1100})).reports[0]
    sigma = math.log(1100 / 400) / stats.norm.ppf(0.95)
    want = 750 + 400 * math.exp(sigma * stats.norm.ppf((0.95 - 0.7) / 0.3))  # 1475.2 ms
    assert report.total.p95_ms == pytest.approx(want, rel=0.005)
    assert report.total.p50_ms == pytest.approx(450.0)  # 70% of turns call no tool
    assert report.within_budget_share == pytest.approx(0.7, abs=0.002)


def test_the_tool_is_named_when_it_drives_the_tail() -> None:
    report = vb.simulate(_scenario(0.3, {"kind": "fixed", "value_ms": 900})).reports[0]
    driver = report.tail_driver
    assert driver is not None
    assert driver.name == "tool_turn"
    assert [p.name for p in driver.parts][:1] == ["get_weather"]
    # every turn in the tail (beyond p95, inside the 30% that call it) waits 50 + 900 + 250 ms for it
    assert driver.tail_ms == pytest.approx(1200.0)
    assert driver.parts[0].tail_ms == pytest.approx(900.0)
    assert "tail driver: tool_turn" in report.summary()
    assert "get_weather 900.0 ms" in report.summary()


def test_share_zero_and_one_are_the_two_plain_turns() -> None:
    never = vb.simulate(_scenario(0.0, {"kind": "fixed", "value_ms": 900})).reports[0]
    always = vb.simulate(_scenario(1.0, {"kind": "fixed", "value_ms": 900})).reports[0]
    assert never.total.p95_ms == pytest.approx(450.0)
    assert always.total.p50_ms == pytest.approx(450.0 + 50 + 900 + 250)


def test_observed_columns_without_a_share_carry_the_trace_s_own() -> None:
    rows = {"kind": "observed", "table": "x", "interpolate": False}
    stage = vb.Sequence.model_validate(
        {
            "stages": {
                "t": {
                    "kind": "tool_turn",
                    "tool": rows | {"values_ms": [0, 0, 0, 1000]},
                    "second_pass": rows | {"values_ms": [0, 0, 0, 300]},
                }
            }
        }
    )
    ev = vb.evaluate(stage, 100_000, 5)
    assert set(np.unique(ev.total)) == {0.0, 1300.0}
    assert np.mean(ev.total > 0) == pytest.approx(0.25, abs=0.01)  # one row of four


def test_observed_columns_inside_and_outside_the_tool_turn_draw_the_same_rows() -> None:
    """A joint fit's columns share their table's rows across the whole turn: the tool turn's ``tool`` column
    and the LLM column beside it come from the same observed turn (here: both slow, or both 0)."""
    rows = {"kind": "observed", "table": "x", "interpolate": False}
    stage = vb.Sequence.model_validate(
        {
            "stages": {
                "llm": rows | {"values_ms": [0, 0, 0, 1000]},
                "t": {
                    "kind": "tool_turn",
                    "tool": rows | {"values_ms": [0, 0, 0, 1000]},
                    "second_pass": {"kind": "fixed", "value_ms": 0},
                },
            }
        }
    )
    for seed in (1, 2, 3):
        ev = vb.evaluate(stage, 50_000, seed)
        assert set(np.unique(ev.total)) == {0.0, 2000.0}


def test_two_tool_turns_draw_independent_streams() -> None:
    tool = {"kind": "uniform", "low_ms": 0, "high_ms": 1000}
    stage = vb.Sequence.model_validate(
        {
            "stages": {
                "a": {"kind": "tool_turn", "tool": tool, "second_pass": {"kind": "fixed", "value_ms": 0}},
                "b": {"kind": "tool_turn", "tool": tool, "second_pass": {"kind": "fixed", "value_ms": 0}},
            }
        }
    )
    ev = vb.evaluate(stage, 50_000, 7)
    assert abs(np.corrcoef(ev.stages["a"], ev.stages["b"])[0, 1]) < 0.02


def test_a_name_that_is_another_part_is_refused() -> None:
    with pytest.raises(vb.ScenarioError, match="one of the stage's other parts"):
        vb.parse_scenario(
            {
                "name": "x",
                "pipeline": {
                    "kind": "sequence",
                    "stages": {
                        "t": {
                            "kind": "tool_turn",
                            "share": 0.1,
                            "name": "second_pass",
                            "tool": {"kind": "fixed", "value_ms": 1},
                            "second_pass": {"kind": "fixed", "value_ms": 1},
                        }
                    },
                },
            }
        )


@pytest.mark.parametrize("method", ["joint", "empirical"])
def test_fit_writes_the_tool_turn_from_traces_with_tool_turns(method: str, tmp_path: Path) -> None:
    """The handed LiveKit tool-call case: turn b called a tool (1210 ms), turn a did not."""
    trace = CASES / "livekit-tool-call-turn" / "metrics.jsonl"
    fitted = fit_traces([trace], method=method, verify_samples=200_000)
    stage = fitted.document["pipeline"]["llm"]["stages"]["tool_turn"]
    assert stage["kind"] == "tool_turn"
    if method == "joint":  # the observed rows, sorted by total: turn a (no tool), turn b
        assert "share" not in stage
        assert stage["tool"]["values_ms"] == [0.0, 1210.0]
        assert stage["second_pass"]["values_ms"] == [0.0, 300.0]
        assert fitted.verification is not None
        assert fitted.verification["p95_error"] == pytest.approx(0.0, abs=0.01)
    else:
        assert stage["share"] == 0.5
        assert stage["tool"] == {"kind": "fixed", "value_ms": 1210.0}
    out = tmp_path / "fitted.toml"
    fitted.write(out)
    assert "1 of 2 observed turns (50%) called a tool" in out.read_text()
    assert tomllib.loads(out.read_text())["pipeline"]["llm"]["stages"]["tool_turn"]["kind"] == "tool_turn"
    result = runner.invoke(app, ["run", str(out), "-f", "json"])
    assert result.exit_code == 1, result.output  # p95 2.3 s: over budget
    variant = json.loads(result.stdout)["variants"][0]
    assert variant["tail_driver"] == "tool_turn"
