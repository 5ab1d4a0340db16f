"""Scenario files, their errors, and the CLI's numbers and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.cli import app

runner = CliRunner()

SIMPLE = """
name = "two normals"
[budget]
total_ms = 800
percentile = 95
[pipeline]
kind = "sequence"
[pipeline.stages.asr]
kind = "normal"
mean_ms = 300
std_ms = 30
[pipeline.stages.llm]
kind = "normal"
mean_ms = 400
std_ms = 40
[variants.slow-llm]
description = "a slower model"
stages.llm = { kind = "normal", mean_ms = 600, std_ms = 40 }
"""


def write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def run_json(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["run", *args, "--format", "json"])
    return result.exit_code, json.loads(result.stdout)


def test_run_json_has_the_documented_keys_and_right_numbers(tmp_path: Path) -> None:
    code, doc = run_json(str(write(tmp_path, SIMPLE)), "--samples", "200000", "--seed", "3")
    assert set(doc) == {"scenario", "seed", "samples", "budget", "variants"}
    assert doc["seed"] == 3
    assert doc["samples"] == 200_000
    assert doc["budget"] == {"total_ms": 800.0, "percentile": 95.0}
    base, slow = doc["variants"]
    assert {"name", "passed", "within_budget_share", "slack_ms", "total", "stages"} <= set(base)
    assert set(base["total"]) == {"mean_ms", "p50_ms", "p90_ms", "p95_ms", "p99_ms"}
    assert {"name", "mean_ms", "p50_ms", "p95_ms", "p99_ms", "tail_share"} <= set(base["stages"][0])
    # independent computation: N(700, 50) -> p95 782.2 ms; slow variant N(900, 50) -> p95 982.2 ms
    sd = np.hypot(30, 40)
    assert base["total"]["p95_ms"] == pytest.approx(700 + stats.norm.ppf(0.95) * sd, abs=1.5)
    assert base["within_budget_share"] == pytest.approx(stats.norm.cdf(800, 700, sd), abs=0.005)
    assert slow["total"]["p50_ms"] == pytest.approx(900, abs=1.5)
    assert base["passed"] is True
    assert slow["passed"] is False
    assert base["slack_ms"] == pytest.approx(800 - base["total"]["p95_ms"])
    assert code == 1  # one variant over budget
    # common random numbers: the shared asr stage is identical in both variants
    assert base["stages"][0] == {
        **slow["stages"][0],
        "tail_ms": base["stages"][0]["tail_ms"],
        "tail_share": base["stages"][0]["tail_share"],
    }
    assert sum(s["tail_share"] for s in base["stages"]) == pytest.approx(1.0)


def test_exit_codes_follow_the_verdict(tmp_path: Path) -> None:
    path = str(write(tmp_path, SIMPLE))
    assert runner.invoke(app, ["run", path, "-n", "20000", "--budget-ms", "2000"]).exit_code == 0
    assert runner.invoke(app, ["run", path, "-n", "20000", "--budget-ms", "500"]).exit_code == 1
    assert runner.invoke(app, ["run", path, "-n", "20000", "--percentile", "150"]).exit_code == 2


def test_budget_override_and_percentile_change_the_target(tmp_path: Path) -> None:
    _, doc = run_json(str(write(tmp_path, SIMPLE)), "-n", "100000", "--percentile", "50", "--budget-ms", "705")
    assert doc["budget"] == {"total_ms": 705.0, "percentile": 50.0}
    assert doc["variants"][0]["passed"] is True
    assert doc["variants"][0]["slack_ms"] == pytest.approx(5, abs=1.5)


def test_default_scenario_runs_and_is_reproducible() -> None:
    code, doc = run_json("-n", "20000", "--seed", "5")
    code2, doc2 = run_json("-n", "20000", "--seed", "5")
    assert doc == doc2
    assert code == code2
    names = [v["name"] for v in doc["variants"]]
    assert names[0] == "baseline"
    assert "warm-connections" in names
    base = doc["variants"][0]
    assert [s["name"] for s in base["stages"]] == list(vb.STAGE_ORDER)
    # the cold first-turn connection (+1300 ms on 10% of turns) drives the p95 tail
    assert base["tail_driver"] == "network"
    assert base["total"]["p95_ms"] > 2000
    warm = doc["variants"][1]
    assert warm["total"]["p95_ms"] < base["total"]["p95_ms"] - 1000
    assert all(f"{fmt}" for fmt in ("table", "markdown"))


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_text_formats_carry_the_verdict(fmt: str) -> None:
    result = runner.invoke(app, ["run", "-n", "5000", "--format", fmt])
    assert result.exit_code == 1
    assert "FAIL" in result.stdout
    assert "p95" in result.stdout
    assert "network" in result.stdout


def test_every_bundled_scenario_loads_and_runs(root: Path) -> None:
    paths = sorted((root / "scenarios").glob("*.toml")) + sorted((root / "scenarios").glob("*.yaml"))
    assert len(paths) >= 3
    for path in paths:
        result = vb.simulate(vb.load_scenario(path), samples=2000)
        assert result.reports[0].n_turns == 2000


INVALID = {
    "unknown field": (
        'name="x"\n[pipeline]\nkind="sequence"\n[pipeline.stages.a]\nkind="fixed"\nvalue_ms=1\nfoo=2\n',
        "pipeline.stages.a.foo",
        "unknown field 'foo'",
    ),
    "wrong type": (
        'name="x"\n[pipeline]\nkind="sequence"\n[pipeline.stages.a]\nkind="fixed"\nvalue_ms="fast"\n',
        "pipeline.stages.a.value_ms",
        "'fast' is text; expected a number (write it without quotes)",
    ),
    "p95 < p50": (
        'name="x"\n[pipeline]\nkind="sequence"\n[pipeline.stages.asr]\nkind="lognormal"\np50_ms=247\np95_ms=200\n',
        "pipeline.stages.asr.p95_ms",
        "must be >= p50_ms",
    ),
    "negative ms": (
        'name="x"\n[pipeline]\nkind="sequence"\n[pipeline.stages.a]\nkind="fixed"\nvalue_ms=-5\n',
        "pipeline.stages.a.value_ms",
        "greater than or equal to 0",
    ),
    "unknown kind": (
        'name="x"\n[pipeline]\nkind="sequence"\n[pipeline.stages.a]\nkind="gamma"\n',
        "pipeline.stages.a",
        "unknown kind 'gamma'; known: fixed, uniform",
    ),
    "missing file": (
        'name="x"\n[pipeline]\nkind="sequence"\n[pipeline.stages.a]\nkind="empirical"\nfile="nope.csv"\n',
        "pipeline.stages.a",
        "file not found",
    ),
    "bad variant": (
        SIMPLE + '[variants.bad]\nstages.llm = { kind = "normal", mean_ms = -1, std_ms = 1 }\n',
        "variants.bad.stages.llm.mean_ms",
        "greater than or equal to 0",
    ),
    "bad budget": (
        'name="x"\n[budget]\npercentile=120\n[pipeline]\nkind="sequence"\nstages.a={kind="fixed",value_ms=1}\n',
        "budget.percentile",
        "less than or equal to 100",
    ),
    "missing stage": (
        'name="x"\n[pipeline]\nkind="voice_turn"\nendpointing={kind="fixed",value_ms=1}\n',
        "pipeline.asr",
        "required field missing",
    ),
    "k > n": (
        'name="x"\n[pipeline]\nkind="k_of_n"\nk=3\nstages.a={kind="fixed",value_ms=1}\n',
        "pipeline",
        "k = 3 but only 1 stages",
    ),
    "toml syntax": ('name = "x\n', "", "cannot parse"),
    "infinite ms": (
        'name="x"\n[pipeline]\nkind="sequence"\n[pipeline.stages.a]\nkind="fixed"\nvalue_ms=inf\n',
        "pipeline.stages.a.value_ms",
        "finite number",
    ),
    "variant adds a stage": (
        SIMPLE + '[variants.v]\nstages.lmm = { kind = "fixed", value_ms = 1 }\n',
        "variants.v.stages.lmm",
        "no stage 'lmm' in the baseline; stages: ['asr', 'llm']",
    ),
    "variant switches kind": (
        SIMPLE + '[variants.v]\nkind = "all_of"\n',
        "variants.v.stages",
        "required field missing",
    ),
    "unknown variant stage": (
        SIMPLE + '[variants.v]\nnosuch = { kind = "fixed", value_ms = 1 }\n',
        "variants.v.nosuch",
        "allowed for kind 'sequence': stages, kind",
    ),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_scenarios_exit_2_naming_file_and_field(tmp_path: Path, case: str) -> None:
    text, field, message = INVALID[case]
    path = write(tmp_path, text)
    with pytest.raises(vb.ScenarioError) as info:
        vb.load_scenario(path)
    assert info.value.origin == str(path)
    assert message in str(info.value)
    if field:
        assert f"{path}: {field}: " in str(info.value)
    result = runner.invoke(app, ["run", str(path)])
    assert result.exit_code == 2
    assert str(path) in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_missing_scenario_file_and_unknown_extension(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", str(tmp_path / "nope.toml")])
    assert result.exit_code == 2
    assert "file not found" in result.stderr
    path = write(tmp_path, "x", "s.ini")
    assert "allowed: .toml, .yaml, .yml" in runner.invoke(app, ["run", str(path)]).stderr


def test_yaml_scenarios_work(tmp_path: Path) -> None:
    text = (
        "name: y\npipeline:\n  kind: all_of\n  stages:\n"
        "    a: {kind: fixed, value_ms: 10}\n    b: {kind: fixed, value_ms: 30}\n"
    )
    result = vb.simulate(vb.load_scenario(write(tmp_path, text, "s.yaml")), samples=10)
    assert result.reports[0].total.p50_ms == 30


def test_schema_is_json_schema_with_the_stage_kinds() -> None:
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert schema["title"] == "Scenario"
    assert "pipeline" in schema["properties"]
    assert "lognormal" in result.stdout
    assert "voice_turn" in result.stdout


def test_every_command_has_help_text() -> None:
    import typer.main

    group = typer.main.get_command(app)
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        assert command.help, f"command {name} has no help"
        result = runner.invoke(app, [name, "--help"])
        assert result.exit_code == 0
        assert "Usage" in result.stdout


def test_raise_for_budget_carries_the_numbers() -> None:
    report = vb.simulate(
        vb.parse_scenario(
            {"name": "x", "pipeline": {"kind": "sequence", "stages": {"llm": {"kind": "fixed", "value_ms": 900}}}}
        ),
        samples=100,
    ).reports[0]
    with pytest.raises(
        vb.BudgetExceeded,
        match=r"p95 900\.0 ms > 800\.0 ms; "
        r"tail driver: llm \(mean 900\.0 ms of the slowest 5%",
    ) as info:
        report.raise_for_budget()
    assert info.value.report is report


def test_per_stage_allocations_fail_a_report_within_total() -> None:
    scenario = vb.parse_scenario(
        {
            "name": "x",
            "budget": {"stages": {"llm": 300}},
            "pipeline": {"kind": "sequence", "stages": {"llm": {"kind": "fixed", "value_ms": 400}}},
        }
    )
    report = vb.simulate(scenario, samples=100).reports[0]
    assert report.slack_ms == 400
    assert not report.passed
    assert "llm p95 400.0 ms > allocation 300.0 ms" in report.summary()


def test_import_voicebudget_does_not_import_typer() -> None:
    import subprocess
    import sys

    code = "import sys, voicebudget; sys.exit('typer' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_run_plot_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "run.png"
    result = runner.invoke(app, ["run", "-n", "5000", "--plot", str(out)])
    assert result.exit_code == 1  # the default scenario is over budget; the plot is drawn anyway
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 10_000


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--percentile", "150"], "--percentile: must be a number in (0, 100], got 150.0"),
        (["--percentile", "0"], "--percentile: must be a number in (0, 100], got 0.0"),
        (["--budget-ms", "inf"], "--budget-ms: must be a finite number > 0 ms, got inf"),
        (["--budget-ms", "-1"], "--budget-ms: must be a finite number > 0 ms, got -1.0"),
        (["--plot", "/nonexistent-folder/x.png"], "folder /nonexistent-folder does not exist"),
        (["--plot", "out.txt"], "unknown image format '.txt'"),
        (["--samples", "1000000000000"], "--samples/-n: 1,000,000,000,000 turns x 27 stages (3 variants) = 27,000,"),
    ],
)
def test_bad_options_exit_2_naming_the_option(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["run", *args])
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_allocation_for_a_stage_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, SIMPLE.replace("percentile = 95", "percentile = 95\nstages = { lmm = 300 }"))
    result = runner.invoke(app, ["run", str(path), "-n", "100"])
    assert result.exit_code == 2
    assert f"{path}: budget.stages: allocates ['lmm'] but there is no such stage; stages: ['asr', 'llm']" in (
        result.stderr
    )


def test_overflowing_values_are_reported_not_averaged(tmp_path: Path) -> None:
    text = (
        'name="x"\n[pipeline]\nkind="sequence"\n'
        'stages.a={kind="fixed",value_ms=3e9}\nstages.b={kind="fixed",value_ms=3e9}\n'
    )  # each stage within 1,000 hours, their sum beyond
    result = runner.invoke(app, ["run", str(write(tmp_path, text)), "-n", "10"])
    assert result.exit_code == 2
    assert (
        "10 turns take longer than 3,600,000,000 ms (1,000 hours) or are not finite; "
        "stages with such values: none" in result.stderr
    )


def test_absurd_values_that_overflow_only_in_means_are_refused(tmp_path: Path) -> None:
    text = (
        'name="x"\n[pipeline]\nkind="choice"\nweights=[0.9, 0.1]\n'
        'stages.a={kind="fixed",value_ms=100}\nstages.cold={kind="fixed",value_ms=1e308}\n'
    )
    result = runner.invoke(app, ["run", str(write(tmp_path, text)), "-n", "1000", "-f", "json"])
    assert result.exit_code == 2  # refused when the file is read, before any sample is drawn
    assert "pipeline.stages.cold.value_ms: must be at most 3,600,000,000 ms (1,000 hours), got 1e+308" in result.stderr


def test_yaml_duplicate_keys_bom_and_header_only_csv(tmp_path: Path) -> None:
    dup = write(tmp_path, "name: x\nbudget: {total_ms: 800}\nbudget: {total_ms: 100}\n", "d.yaml")
    with pytest.raises(vb.ScenarioError, match=r"d\.yaml: line 3: cannot parse YAML: duplicate key 'budget'"):
        vb.load_scenario(dup)
    bom = tmp_path / "bom.toml"
    bom.write_bytes(b'\xef\xbb\xbfname="x"\n[pipeline]\nkind="sequence"\nstages.a={kind="fixed",value_ms=1}\n')
    assert vb.load_scenario(bom).name == "x"
    (tmp_path / "hdr.csv").write_text("latency_ms\n")
    emp = write(tmp_path, 'name="x"\n[pipeline]\nkind="sequence"\nstages.a={kind="empirical",file="hdr.csv"}\n')
    with pytest.raises(vb.ScenarioError, match=r"hdr.csv: no samples \(header only\)"):
        vb.load_scenario(emp)


@pytest.mark.parametrize(
    "args",
    [
        ["council", "councils/intent-wafer-all.toml", "--percentile", "150"],
        ["tune", "tests/data/tune-small.toml", "--percentile", "150"],
        ["check", "tests/data/traces/pipecat.log", "--percentile", "150"],
    ],
)
def test_every_budgeted_command_names_the_bad_option(args: list[str], root: Path, monkeypatch) -> None:
    monkeypatch.chdir(root)
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --percentile: must be a number in (0, 100], got 150.0")


def test_yaml_booleans_are_not_milliseconds(tmp_path: Path) -> None:
    # YAML 1.1 reads `yes`/`on` as true; pydantic would read true as 1 ms
    text = "name: x\npipeline:\n  kind: sequence\n  stages:\n    a: {kind: fixed, value_ms: yes}\n"
    path = write(tmp_path, text, "s.yaml")
    result = runner.invoke(app, ["run", str(path)])
    assert result.exit_code == 2
    assert f"{path}: pipeline.stages.a.value_ms: true is a boolean; expected a number" in result.stderr
