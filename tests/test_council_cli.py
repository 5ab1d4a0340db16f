"""Council files: validation errors with file and field path, scenario embedding, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.cli import app
from voicebudget.councils import Council, evaluate_council, load_council

runner = CliRunner()

COUNCIL = """
name = "three lognormals"
topology = "all"
[budget]
total_ms = 360
[[members]]
name = "a"
p = 0.7
stage = { kind = "lognormal", p50_ms = 200, p95_ms = 320 }
[[members]]
name = "b"
p = 0.7
stage = { kind = "lognormal", p50_ms = 200, p95_ms = 320 }
[[members]]
name = "c"
p = 0.7
stage = { kind = "lognormal", p50_ms = 200, p95_ms = 350 }
"""


def write(tmp_path: Path, text: str, name: str = "c.toml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


@pytest.mark.parametrize(
    ("edit", "field", "words"),
    [
        (('topology = "all"', 'topology = "first_k"\nk = 5'), "k", "allowed 1..3"),
        (('topology = "all"', 'topology = "vote"\nm = 0'), "m", "allowed 1..3"),
        (
            (
                'p = 0.7\nstage = { kind = "lognormal", p50_ms = 200, p95_ms = 350 }',
                'p = 1.3\nstage = { kind = "lognormal", p50_ms = 200, p95_ms = 350 }',
            ),
            "members.2.p",
            "1.3 is over 1: a share is between 0 and 1",
        ),
        (
            (
                'stage = { kind = "lognormal", p50_ms = 200, p95_ms = 320 }\n[[members]]\nname = "b"',
                'stage = { kind = "quantum", p50_ms = 200 }\n[[members]]\nname = "b"',
            ),
            "members.0.stage",
            "unknown kind 'quantum'; known: fixed,",
        ),
        (('topology = "all"', 'topology = "router"'), "router", "needs a router"),
        (('topology = "all"', 'topology = "cascade"'), "scorer", "needs a scorer"),
        (('name = "b"', 'name = "a"'), "members", "unique"),
    ],
)
def test_invalid_council_files_name_file_and_field(
    tmp_path: Path, edit: tuple[str, str], field: str, words: str
) -> None:
    path = write(tmp_path, COUNCIL.replace(*edit, 1))
    with pytest.raises(vb.ScenarioError) as info:
        load_council(path)
    assert info.value.field == field
    assert words in str(info.value)
    assert str(info.value).startswith(f"{path}: ")
    result = runner.invoke(app, ["council", str(path)])
    assert result.exit_code == 2
    assert f"{field}:" in result.output
    assert "Traceback" not in result.output


def test_cli_json_numbers_and_exit_codes(tmp_path: Path) -> None:
    path = write(tmp_path, COUNCIL)
    result = runner.invoke(app, ["council", str(path), "--format", "json", "--samples", "20000", "--seed", "3"])
    assert result.exit_code == 1, result.output  # members within 360 ms, the max of three is not
    doc = json.loads(result.output)
    assert {"latency", "quality", "cost_per_turn", "expected_user_time_ms", "passed"} <= set(doc)
    direct = evaluate_council(load_council(path), samples=20000, seed=3)
    assert doc["latency"]["p95_ms"] == pytest.approx(direct.report.total.p95_ms)
    assert doc["quality"]["accuracy"] == pytest.approx(0.784)
    assert doc["tail_driver"] == "c"
    assert doc["passed"] is False
    assert set(doc["latency"]) >= {"mean_ms", "p50_ms", "p90_ms", "p95_ms", "p99_ms"}
    ok = runner.invoke(app, ["council", str(path), "--budget-ms", "1000", "-f", "json"])
    assert ok.exit_code == 0
    assert json.loads(ok.output)["budget"]["total_ms"] == 1000.0
    bad = runner.invoke(app, ["council", str(path), "--percentile", "120"])
    assert bad.exit_code == 2


def test_cli_table_names_the_tail_driver(tmp_path: Path) -> None:
    result = runner.invoke(app, ["council", str(write(tmp_path, COUNCIL)), "--samples", "20000"])
    assert result.exit_code == 1
    assert "tail driver: c (mean" in " ".join(result.output.split())
    assert "accuracy 0.7840" in result.output
    assert "expected user time" in result.output


def test_council_help_text() -> None:
    result = runner.invoke(app, ["council", "--help"])
    assert result.exit_code == 0
    assert "Evaluate a council" in result.output


def test_plot_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "c.png"
    result = runner.invoke(app, ["council", str(write(tmp_path, COUNCIL)), "--samples", "2000", "--plot", str(out)])
    assert result.exit_code == 1
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("path", sorted(Path(__file__).resolve().parent.parent.glob("councils/*.toml")))
def test_shipped_councils_load_and_evaluate(path: Path) -> None:
    res = evaluate_council(load_council(path), samples=2000)
    assert 0 < res.quality.accuracy <= 1
    assert res.cost_per_turn_usd > 0
    assert res.tail_driver in {mb.name for mb in res.council.members}


def test_shipped_intent_council_members_within_budget_council_over() -> None:
    root = Path(__file__).resolve().parent.parent
    res = evaluate_council(load_council(root / "councils/intent-wafer-all.toml"), samples=20_000)
    assert all(s.stats.p95_ms < res.report.budget.total_ms for s in res.report.stages)
    assert not res.passed


def test_scenario_council_from_file_and_its_errors(tmp_path: Path) -> None:
    (tmp_path / "councils").mkdir()
    write(tmp_path / "councils", COUNCIL, "x.toml")
    scen = tmp_path / "scenarios"
    scen.mkdir()
    text = """
name = "council from a file"
[pipeline]
kind = "sequence"
[pipeline.stages.asr]
kind = "fixed"
value_ms = 100
[pipeline.stages.llm]
kind = "council"
file = "../councils/x.toml"
"""
    path = write(scen, text, "s.toml")
    # ../councils is outside the scenario's folder and the working directory: refused unless allowed
    outside = r"s\.toml: pipeline\.stages\.llm: file '\.\./councils/x\.toml' is outside"
    with pytest.raises(vb.ScenarioError, match=outside):
        vb.load_scenario(path)
    scenario = vb.load_scenario(path, allowed_roots=[tmp_path])
    llm = scenario.pipeline.stages["llm"]
    assert isinstance(llm, Council)
    assert llm.name == "three lognormals"
    run = vb.simulate(scenario, samples=20_000, seed=1)
    assert run.report("baseline").stage("llm").stats.p50_ms > 200  # the max of three
    write(tmp_path / "councils", COUNCIL.replace('topology = "all"', 'topology = "first_k"\nk = 4'), "x.toml")
    with pytest.raises(vb.ScenarioError) as info:
        vb.load_scenario(scen / "s.toml", allowed_roots=[tmp_path])
    msg = str(info.value)
    assert "pipeline.stages.llm" in msg
    assert "x.toml: k: k = 4 but the council has 3 members" in msg


def test_side_by_side_scenario_single_council_cache(root: Path) -> None:
    run = vb.simulate(vb.load_scenario(root / "scenarios/council-vs-cache.toml"), samples=40_000, seed=1)
    base, router, cache = run.report("baseline"), run.report("router-council"), run.report("reply-cache")
    # common random numbers: stages the variants share draw the same samples
    np.testing.assert_array_equal(base.stage("asr").stats.p95_ms, cache.stage("asr").stats.p95_ms)
    # 30% hits at ~40 ms instead of ~650 ms of LLM + TTS: the mean drops by ~0.3 * 610 ms, the p95
    # barely (it is the miss path's 93rd percentile: (0.95 - 0.3) / 0.7)
    assert cache.total.mean_ms == pytest.approx(base.total.mean_ms - 180, abs=25)
    assert cache.within_budget_share > 0.3
    assert cache.total.p95_ms > base.total.p95_ms - 60
    # routing 26% of turns to the slow model puts the slow model in the p95
    assert router.total.p95_ms > 2 * base.total.p95_ms


def test_plot_without_matplotlib_exits_2_with_the_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    monkeypatch.delitem(sys.modules, "voicebudget._plot", raising=False)
    out = tmp_path / "c.png"
    result = runner.invoke(app, ["council", str(write(tmp_path, COUNCIL)), "--samples", "500", "--plot", str(out)])
    assert result.exit_code == 2
    assert "pip install 'voicebudget[plot]'" in result.output
    assert not out.exists()


def test_yaml_council_files(tmp_path: Path) -> None:
    text = """
topology: first_k
k: 2
members:
  - {name: a, p: 0.7, stage: {kind: fixed, value_ms: 100}}
  - {name: b, p: 0.7, stage: {kind: fixed, value_ms: 200}}
  - {name: c, p: 0.7, stage: {kind: fixed, value_ms: 300}}
"""
    res = evaluate_council(load_council(write(tmp_path, text, "c.yaml")), samples=100)
    assert res.report.total.p95_ms == pytest.approx(200.0)
    assert res.quality.accuracy == pytest.approx(0.7 * 0.7 + 0.5 * 2 * 0.7 * 0.3)  # two voters, tie = coin
