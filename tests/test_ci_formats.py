"""CI formats of run, check, compare and the pytest plugin (docs/ci.md): JUnit XML read by a JUnit parser and
checked against the schema CI tools read, GitHub annotations at the scenario line of the stage over its
allocation (TOML and YAML), and the job summary."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.cli import app

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "tests" / "data" / "traces"
runner = CliRunner()
pytest_plugins = ["pytester"]

# The JUnit schema of Jenkins' xunit plugin, which GitLab's and GitHub's JUnit readers accept too:
# github.com/jenkinsci/xunit-plugin, src/main/resources/org/jenkinsci/plugins/xunit/types/model/xsd/junit-10.xsd
# (commit 031e285e, read 2026-12-02): element -> (required attributes, allowed attributes, allowed children).
SCHEMA: dict[str, tuple[set[str], set[str], set[str]]] = {
    "testsuites": (set(), {"name", "time", "tests", "failures", "errors"}, {"testsuite"}),
    "testsuite": (
        {"name", "tests", "failures", "errors"},
        {
            "name",
            "tests",
            "failures",
            "errors",
            "group",
            "time",
            "skipped",
            "timestamp",
            "hostname",
            "id",
            "package",
            "file",
            "log",
            "url",
        },
        {"testsuite", "properties", "testcase", "system-out", "system-err"},
    ),  # fmt: skip
    "properties": (set(), set(), {"property"}),
    "property": ({"name", "value"}, {"name", "value"}, set()),
    "testcase": (
        {"name"},
        {"name", "time", "classname", "group"},
        {"skipped", "error", "failure", "system-out", "system-err"},
    ),
    "failure": (set(), {"type", "message"}, set()),
    "error": (set(), {"type", "message"}, set()),
    "skipped": (set(), {"type", "message"}, set()),
    "system-out": (set(), set(), set()),
    "system-err": (set(), set(), set()),
}
SUREFIRE_TIME = re.compile(r"(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?")


def assert_valid_junit(text: str) -> Any:
    """The document follows junit-10.xsd (elements, required and allowed attributes, children, times) and a
    JUnit parser reads it; returns what the parser read (a ``junitparser.JUnitXml``)."""
    junitparser = pytest.importorskip("junitparser", reason="the test extra's junitparser is not installed")
    root = ET.fromstring(text.encode("utf-8"))
    assert root.tag == "testsuites"
    for el in root.iter():
        required, allowed, children = SCHEMA[el.tag]
        assert required <= set(el.attrib), (el.tag, el.attrib)
        assert set(el.attrib) <= allowed, (el.tag, set(el.attrib) - allowed)
        assert {c.tag for c in el} <= children, (el.tag, [c.tag for c in el])
        if "time" in el.attrib and el.tag in ("testsuite", "testsuites"):
            assert SUREFIRE_TIME.fullmatch(el.attrib["time"])
    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        assert int(suite.attrib["tests"]) == len(cases)
        assert int(suite.attrib["failures"]) == sum(c.find("failure") is not None for c in cases)
        assert int(suite.attrib["errors"]) == sum(c.find("error") is not None for c in cases)
    return junitparser.JUnitXml.fromstring(text)


def outcomes(xml: Any) -> dict[str, tuple[str, str]]:
    """case name -> (outcome, failure message) as the parser reads them."""
    out = {}
    for suite in xml:
        for case in suite:
            kinds = [type(r).__name__ for r in case.result]
            message = case.result[0].message if case.result else ""
            out[case.name] = (kinds[0].lower() if kinds else "passed", message or "")
    return out


TOML_SCENARIO = """\
name = "ci lines"
samples = 20000
seed = 3

[budget]
total_ms = 800
percentile = 95
stages = { llm = 300 }

[pipeline]
kind = "sequence"

[pipeline.stages.asr]
# a fixed 100 ms
kind = "fixed"
value_ms = 100

[pipeline.stages.llm]
kind = "lognormal"
p50_ms = 250
p95_ms = 400

[variants.faster-llm]
description = "llm within its allocation"
stages.llm = { kind = "lognormal", p50_ms = 150, p95_ms = 250 }

[variants.slow-llm]
description = "llm 900 ms: over its allocation and the budget"
stages.llm = { kind = "fixed", value_ms = 900 }
"""

YAML_SCENARIO = """\
name: ci lines
samples: 20000
seed: 3
budget:
  total_ms: 800
  percentile: 95
  stages: {llm: 300}
pipeline:
  kind: sequence
  stages:
    asr: {kind: fixed, value_ms: 100}
    llm:
      kind: lognormal
      p50_ms: 250
      p95_ms: 400
variants:
  faster-llm:
    description: llm within its allocation
    stages:
      llm: {kind: lognormal, p50_ms: 150, p95_ms: 250}
  slow-llm:
    description: "llm 900 ms: over its allocation and the budget"
    stages:
      llm:
        kind: fixed
        value_ms: 900
"""


def line_of(text: str, needle: str, after: str = "") -> int:
    """The 1-based line of the first line that starts with ``needle`` (stripped), after the line ``after``."""
    lines = [line.strip() for line in text.splitlines()]
    start = lines.index(after) if after else 0
    return next(i + 1 for i in range(start, len(lines)) if lines[i].startswith(needle))


@pytest.mark.parametrize(
    ("suffix", "text", "lines"),
    [
        (
            ".toml",
            TOML_SCENARIO,
            {
                "budget": ("total_ms", ""),
                "baseline": ("[pipeline.stages.llm]", ""),
                "slow-llm": ("stages.llm", "[variants.slow-llm]"),
            },
        ),
        (
            ".yaml",
            YAML_SCENARIO,
            {
                "budget": ("total_ms", ""),
                "baseline": ("llm:", "pipeline:"),
                "slow-llm": ("llm:", "slow-llm:"),
            },
        ),
    ],
    ids=["toml", "yaml"],
)
def test_run_github_annotations_point_at_the_stage_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str, text: str, lines: dict[str, tuple[str, str]]
) -> None:
    scenario = tmp_path / f"ci{suffix}"
    scenario.write_text(text, encoding="utf-8")
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(
        app, ["run", scenario.name, "--format", "github"], env={"GITHUB_STEP_SUMMARY": str(summary), "COLUMNS": "100"}
    )
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("::error ")]
    budget_line, llm_line, slow_line = (line_of(text, *lines[k]) for k in ("budget", "baseline", "slow-llm"))
    assert (budget_line, llm_line, slow_line) == ((6, 18, 29) if suffix == ".toml" else (5, 12, 24))
    # the baseline's llm (p95 ~400 ms) is over its 300 ms allocation: at the pipeline's llm stage
    assert errors[0].startswith(f"::error file=ci{suffix},line={llm_line},title=voicebudget run%3A baseline%3A llm p95")
    assert re.search(r"::baseline: llm p95 (3[5-9]\d|4[0-4]\d)\.\d ms > allocation 300\.0 ms", errors[0])
    # slow-llm: over the budget (at the budget's total_ms) and over the allocation (at the variant's own llm)
    assert errors[1].startswith(f"::error file=ci{suffix},line={budget_line},title=voicebudget run%3A slow-llm%3A p95")
    assert "::slow-llm: p95 1000.0 ms > 800.0 ms; tail driver: llm" in errors[1]
    assert errors[2].startswith(f"::error file=ci{suffix},line={slow_line},")
    assert "::slow-llm: llm p95 900.0 ms > allocation 300.0 ms" in errors[2]
    assert len(errors) == 3  # faster-llm is within both
    written = summary.read_text(encoding="utf-8")
    assert written.startswith("earlier step\n## ci lines")  # appended, not replaced
    assert "### slow-llm: FAIL" in written


def test_run_junit_has_a_case_per_variant_and_stage_budget(tmp_path: Path) -> None:
    scenario = tmp_path / "ci.toml"
    scenario.write_text(TOML_SCENARIO, encoding="utf-8")
    result = runner.invoke(app, ["run", str(scenario), "--format", "junit"])
    assert result.exit_code == 1
    xml = assert_valid_junit(result.output)
    cases = outcomes(xml)
    assert list(cases) == [
        "baseline: p95 <= 800 ms",
        "baseline: llm p95 <= 300 ms",
        "faster-llm: p95 <= 800 ms",
        "faster-llm: llm p95 <= 300 ms",
        "slow-llm: p95 <= 800 ms",
        "slow-llm: llm p95 <= 300 ms",
    ]
    assert [v[0] for v in cases.values()] == ["passed", "failure", "passed", "passed", "failure", "failure"]
    assert cases["slow-llm: p95 <= 800 ms"][1].startswith("slow-llm: p95 1000.0 ms > 800.0 ms")
    (suite,) = list(xml)
    assert suite.name == "ci lines"
    assert (suite.tests, suite.failures, suite.errors) == (6, 3, 0)
    failure = next(c for c in suite if c.name == "slow-llm: llm p95 <= 300 ms").result[0]
    assert "over allocation" in failure.text  # the breakdown
    assert f"(at {scenario}:29)" in failure.text
    props = {p.name: p.value for p in suite.properties()}
    assert props == {"seed": "3", "samples": "20000", "budget_ms": "800", "percentile": "95"}


def test_check_junit_and_github_point_at_the_slowest_turn(tmp_path: Path) -> None:
    trace = TRACES / "pipecat.log"
    result = runner.invoke(app, ["check", str(trace), "--format", "junit"])
    assert result.exit_code == 1
    cases = outcomes(assert_valid_junit(result.output))
    assert cases == {"p95 <= 800 ms": ("failure", cases["p95 <= 800 ms"][1])}
    assert cases["p95 <= 800 ms"][1].startswith("p95 1851.6 ms > 800.0 ms; tail driver: endpointing")
    result = runner.invoke(app, ["check", str(trace), "--format", "github"], env={"GITHUB_STEP_SUMMARY": ""})
    (error,) = [line for line in result.output.splitlines() if line.startswith("::error")]
    # the slowest turn, turn-14 (2014 ms), starts on line 79 of the log
    shown = trace.relative_to(Path.cwd()).as_posix() if trace.is_relative_to(Path.cwd()) else str(trace)
    assert error.startswith(f"::error file={shown},line=79,title=voicebudget check%3A p95 <= 800 ms::p95 1851.6 ms")
    assert "(not in a GitHub Actions job): no job summary written" in result.output


def _report(path: Path, llm: np.ndarray) -> Path:
    now = [0]
    rec = vb.TurnRecorder("agent", clock=lambda: now[0])
    for value in llm:
        with rec.turn() as turn:
            turn.mark("speech_end")
            turn.add_stage("llm", start_ms=0.0, end_ms=float(value))
            turn.mark("first_audio", at_ms=float(value) + 100.0)
    path.write_text(json.dumps(rec.report().to_dict()), encoding="utf-8")
    return path


def test_compare_junit_fails_regressions_and_errs_on_what_is_not_comparable(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    base = _report(tmp_path / "base.json", rng.lognormal(np.log(400), 0.3, 400))
    new = _report(tmp_path / "new.json", rng.lognormal(np.log(400), 0.3, 400) + 200.0)
    result = runner.invoke(app, ["compare", str(base), str(new), "--format", "junit"])
    assert result.exit_code == 1
    cases = outcomes(assert_valid_junit(result.output))
    assert cases["total p95"][0] == "failure"
    assert cases["llm p50"][0] == "failure"
    assert "slower beyond the tolerance" in cases["llm p50"][1]
    few = _report(tmp_path / "few.json", rng.lognormal(np.log(400), 0.3, 30))
    result = runner.invoke(app, ["compare", str(base), str(few), "--format", "junit"])
    assert result.exit_code == 4
    cases = outcomes(assert_valid_junit(result.output))
    assert cases["total p95"][0] == "error"
    assert "gating needs 100 turns" in cases["total p95"][1]
    assert cases["total p50"][0] == "passed"


def test_compare_github_annotates_and_appends_the_markdown(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    base = _report(tmp_path / "base.json", rng.lognormal(np.log(400), 0.3, 400))
    new = _report(tmp_path / "new.json", rng.lognormal(np.log(400), 0.3, 400) + 200.0)
    summary = tmp_path / "summary.md"
    result = runner.invoke(
        app, ["compare", str(base), str(new), "-f", "github"], env={"GITHUB_STEP_SUMMARY": str(summary)}
    )
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if line.startswith("::error")]
    assert errors[0].startswith("::error title=voicebudget compare%3A total p50::total p50: ")
    assert "### voicebudget compare: ❌ regression" in summary.read_text(encoding="utf-8")


def test_annotation_text_is_escaped_as_the_actions_toolkit_does() -> None:
    from voicebudget.ci import Case, Location, Suite, workflow_commands

    case = Case("a, b: c", "x", "failed", "50% slower\nsecond line", location=Location("dir/a,b.toml", 3))
    (line,) = workflow_commands([Suite("s", (case,))], "t")
    assert line == "::error file=dir/a%2Cb.toml,line=3,title=t%3A a%2C b%3A c::50%25 slower%0Asecond line"
    # an absolute path under the working directory (the repository's root in a job) is given relative to it
    inside = Case("x", "x", "failed", "m", location=Location(str(Path.cwd() / "scenarios" / "x.toml"), 7))
    (line,) = workflow_commands([Suite("s", (inside,))], "t")
    assert line.startswith("::error file=scenarios/x.toml,line=7,")


PLUGIN_TEST = """
import pytest

def _turns(rec, llm_ms, n):
    now = [0]
    rec._clock = lambda: now[0]
    for _ in range(n):
        with rec.turn() as turn:
            turn.mark("speech_end")
            turn.add_stage("llm", start_ms=0.0, end_ms=llm_ms)
            turn.mark("first_audio", at_ms=llm_ms + 100.0)

@pytest.mark.voice_budget(total_ms=800, stages={"llm": 400})
def test_slow(voice_budget):
    _turns(voice_budget, 600.0, 5)

@pytest.mark.voice_budget(total_ms=800)
def test_fast(voice_budget):
    _turns(voice_budget, 200.0, 5)
"""


def test_plugin_writes_junit_and_annotates_the_test_line(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_agent=PLUGIN_TEST)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--voicebudget-junit", "budget.xml", "--voicebudget-github"
    )
    result.assert_outcomes(passed=1, failed=1)
    xml = assert_valid_junit((pytester.path / "budget.xml").read_text(encoding="utf-8"))
    cases = {(c.classname, c.name): c for suite in xml for c in suite}
    assert set(cases) == {
        ("test_agent.py::test_slow", "p95 <= 800 ms"),
        ("test_agent.py::test_slow", "llm p95 <= 400 ms"),
        ("test_agent.py::test_fast", "p95 <= 800 ms"),
    }
    slow = cases["test_agent.py::test_slow", "llm p95 <= 400 ms"].result[0]
    assert slow.message == "llm p95 600.0 ms > allocation 400.0 ms (total p95 700.0 ms)"
    assert "over allocation" in slow.text
    assert cases["test_agent.py::test_fast", "p95 <= 800 ms"].is_passed
    # the test's first line, where its budget is: the marker of test_slow, line 12 of the file pytester wrote
    assert (pytester.path / "test_agent.py").read_text().splitlines()[11].startswith("@pytest.mark.voice_budget(")
    result.stdout.fnmatch_lines(
        [
            "voicebudget JUnit XML: *budget.xml",
            "::error file=test_agent.py,line=12,title=voice budget%3A llm p95 <= 400 ms::llm p95 600.0 ms > *",
            "voicebudget job summary: *summary.md",
        ]
    )
    written = summary.read_text(encoding="utf-8")
    assert "| `test_agent.py::test_slow` | p95 700.0 ms | 800 ms | 100.0% | llm | **FAIL** |" in written


def test_the_annotations_docs_ci_shows_are_what_run_prints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # docs/ci.md shows `run scenarios/ci.toml --format github` on this file's TOML scenario
    from doc_outputs import console_block

    command = "$ voicebudget run scenarios/ci.toml --format github     # the scenario of tests/test_ci_formats.py"
    shown = [line for line in console_block("ci.md", command) if line.startswith("::")]
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "ci.toml").write_text(TOML_SCENARIO, encoding="utf-8")
    result = runner.invoke(app, ["run", "scenarios/ci.toml", "--format", "github"])
    assert result.exit_code == 1
    printed = result.stdout.splitlines()
    assert len(shown) == 3
    assert [line for line in shown if line not in printed] == []
