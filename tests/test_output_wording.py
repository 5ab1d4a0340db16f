"""Output that a new user reads (issue 13, item 4): the tail attribution cannot read as a part of the
percentile, a council's parallel members are drawn in parallel, and the README's repr is the real one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import voicebudget as vb
from voicebudget._render import waterfall

ROOT = Path(__file__).parent.parent


def test_tail_driver_is_worded_as_a_mean_over_the_slowest_turns() -> None:
    x = np.arange(1.0, 1001.0)  # 1..1000 ms, one stage: its tail mean exceeds the p95 value
    report = vb.build_report("v", vb.Budget(total_ms=800), x, {"llm": x})
    p95 = float(np.percentile(x, 95))
    tail_mean = float(np.mean(x[x >= p95]))
    assert tail_mean > p95  # why "llm stage 975.5 ms of it" next to "p95 950.1 ms" read as a contradiction
    assert report.summary() == (
        f"p95 {p95:.1f} ms > 800.0 ms; tail driver: llm (mean {tail_mean:.1f} ms of the slowest 5% of turns)"
    )
    strict = vb.build_report("v", vb.Budget(total_ms=800, percentile=99.9), x, {"llm": x})
    assert "of the slowest 0.1% of turns" in strict.summary()


def test_council_waterfall_draws_members_in_parallel() -> None:
    result = vb.run_council(ROOT / "councils" / "intent-wafer-all.toml", samples=20_000, seed=1)
    text = waterfall(result.report, parallel=[m.name for m in result.council.members]).plain
    rows = [line for line in text.splitlines() if "█" in line]
    members = [r for r in rows if "∥" in r]
    assert len(members) == 3
    starts = {r.index("█") for r in members}
    assert len(starts) == 1  # all start together
    stages = result.report.stages
    for r, s in zip(members, stages, strict=True):  # each drawn as its own mean over the tail turns
        assert float(r.split()[-2]) == pytest.approx(s.tail_mean_ms, abs=0.05)
        assert s.tail_mean_ms > s.tail_ms  # off the critical path in some tail turns
    together = float(rows[-1].split()[-2])
    assert together == pytest.approx(sum(s.tail_ms for s in stages), abs=0.1)
    assert together == pytest.approx(
        float(np.mean(result.report.total_samples_ms[result.report.total_samples_ms >= result.report.total.p95_ms])),
        rel=1e-9,
        abs=0.1,
    )


def test_readme_library_example_prints_what_it_says() -> None:
    readme = (ROOT / "README.md").read_text()
    said = re.search(r"print\(report\)\s+# (<Report .*>)", readme)
    assert said is not None
    scenario = vb.load_scenario(ROOT / "scenarios" / "webrtc-cascade.toml")
    report = vb.simulate(scenario, samples=200_000, seed=1).report("warm-connections")
    assert repr(report) == said.group(1)


def test_markdown_and_table_compare_the_variants_side_by_side() -> None:
    from typer.testing import CliRunner

    from voicebudget.cli import app

    scenario = vb.load_scenario(ROOT / "scenarios" / "webrtc-cascade.toml")
    result = vb.simulate(scenario, samples=20_000, seed=1)
    base = result.reports[0].total.p95_ms
    md = (
        CliRunner()
        .invoke(
            app,
            ["run", str(ROOT / "scenarios" / "webrtc-cascade.toml"), "-n", "20000", "--seed", "1", "-f", "markdown"],
        )
        .output
    )
    assert "| variant | p50 ms | p95 ms | Δp95 vs baseline | within budget |" in md
    for r in result.reports:
        d = r.tail_driver
        assert d is not None
        row = (
            f"| {r.name} | {r.total.p50_ms:.1f} | {r.total.p95_ms:.1f} | {r.total.p95_ms - base:+.1f} | "
            f"{r.within_budget_share:.1%} | {d.name} ({d.tail_ms:.1f}) | {'PASS' if r.passed else 'FAIL'} |"
        )
        assert row in md
        assert result.descriptions[r.name] in md  # every variant's description, under its heading
    assert md.index("| variant |") < md.index("### baseline")  # the comparison first, for a PR comment
    table = (
        CliRunner()
        .invoke(
            app,
            ["run", str(ROOT / "scenarios" / "webrtc-cascade.toml"), "-n", "20000", "--seed", "1"],
            env={"COLUMNS": "120"},
        )
        .output
    )
    warm = result.report("warm-connections")
    cells = [
        "warm-connections",
        f"{warm.total.p50_ms:.1f}",
        f"{warm.total.p95_ms:.1f}",
        f"{warm.total.p95_ms - base:+.1f}",
    ]
    assert cells in [line.split()[:4] for line in table.splitlines()]
    assert "Pre-warm the LLM connection pool" in table
    doc = json.loads(
        CliRunner()
        .invoke(app, ["run", str(ROOT / "scenarios" / "webrtc-cascade.toml"), "-n", "2000", "-f", "json"])
        .output
    )
    assert doc["variants"][1]["description"].startswith("Pre-warm the LLM connection pool")


def test_one_turn_is_singular_everywhere_a_count_is_printed() -> None:
    from typer.testing import CliRunner

    from voicebudget._text import count
    from voicebudget.cli import app

    assert [count(1, "turn"), count(2, "turn"), count(200_000, "turn"), count(1, "anomaly", "anomalies")] == [
        "1 turn",
        "2 turns",
        "200,000 turns",
        "1 anomaly",
    ]
    for fmt in ("table", "markdown"):
        out = CliRunner().invoke(app, ["run", "-n", "1", "-f", fmt]).output
        assert "1 turn per variant" in " ".join(out.split())
        assert "1 turns" not in out
    trace = ROOT / "tests" / "data" / "traces" / "pipecat.log"
    first = "\n".join(trace.read_text().splitlines()[:6])  # the first turn only
    report = vb.check_traces([_write(first)], vb.Budget()).report
    assert report.n_turns == 1
    from voicebudget.checker._format import breakdown

    text = breakdown(report)
    assert "1 turn measured" in text
    assert "tail = the turn at or above p95" in text


def _write(text: str) -> Path:
    import tempfile

    path = Path(tempfile.mkdtemp()) / "one.log"
    path.write_text(text + "\n")
    return path


def test_budget_help_shows_the_table_name() -> None:
    from typer.testing import CliRunner

    from voicebudget.cli import app

    out = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"}).output
    assert "(default: the file's [budget] table, else 800)" in out


def test_model_accuracy_lines_print_in_the_summary_not_between_the_dots() -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(ROOT / "tests" / "test_inference_calibration.py"),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, proc.stdout[-2000:]
    dots = [line for line in lines if line.startswith(".")]
    assert dots
    assert all("calibration" not in line for line in dots)
    heading = next(i for i, line in enumerate(lines) if "model accuracy against published measurements" in line)
    assert lines[heading + 1].startswith("inference calibration: MdAPE ")


def test_scenarios_doc_shows_every_stage_kind_with_an_example_that_loads() -> None:
    import tomllib

    from voicebudget._scenario import scenario_json_schema

    doc = (ROOT / "docs" / "scenarios.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| [^|]+ \| `(\{.*\})` \|$", doc, flags=re.M)
    kinds: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            kind = node.get("properties", {}).get("kind", {})
            if isinstance(kind.get("const", kind.get("default")), str):
                kinds.add(kind.get("const", kind.get("default")))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(scenario_json_schema())
    assert {k for k, _ in rows} | {"voice_turn"} == kinds
    for kind, example in rows:
        stage = tomllib.loads(f"x = {example}")["x"]
        assert stage["kind"] == kind
        scenario = vb.parse_scenario(
            {"name": kind, "pipeline": {"kind": "sequence", "stages": {"s": stage}}}, base_dir=ROOT / "scenarios"
        )
        assert vb.simulate(scenario, samples=200, seed=1).reports[0].n_turns == 200


def test_a_scenario_fitted_to_server_side_traces_does_not_call_its_total_voice_to_voice(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from voicebudget.cli import app

    out = tmp_path / "fitted.toml"
    fit = CliRunner().invoke(
        app, ["fit", str(ROOT / "tests" / "data" / "traces" / "livekit-metrics.jsonl"), "-o", str(out)]
    )
    assert fit.exit_code == 0, fit.output
    table = CliRunner().invoke(app, ["run", str(out), "-n", "2000"], env={"COLUMNS": "120"}).output
    assert "server-side total" in table
    assert "voice-to-voice │" not in table  # transport is 0 in the fit: the total stops at the server
    markdown = CliRunner().invoke(app, ["run", str(out), "-n", "2000", "-f", "markdown"]).output
    assert "| **server-side total** |" in markdown
    default = CliRunner().invoke(app, ["run", "-n", "2000"], env={"COLUMNS": "120"}).output
    assert "voice-to-voice │" in default  # a voice turn with a path to the listener
    seq = vb.parse_scenario(
        {"name": "s", "pipeline": {"kind": "sequence", "stages": {"a": {"kind": "fixed", "value_ms": 10}}}}
    )
    from voicebudget._render import total_label

    assert total_label(vb.simulate(seq, samples=10).reports[0]) == "total"


def test_one_bad_ttfb_is_one_anomaly(tmp_path: Path) -> None:
    # an absurd LLM TTFB used to add a second row: the request start derived from it, negative
    lines = (ROOT / "tests" / "data" / "traces" / "pipecat.log").read_text().splitlines()[:12]
    lines[2] = lines[2].replace("TTFB: 0.415s", "TTFB: 99.0s")
    path = tmp_path / "bad.log"
    path.write_text("\n".join(lines) + "\n")
    check = vb.check_traces([path], vb.Budget())
    assert [(a.line, a.field) for a in check.anomalies] == [(3, "LLM TTFB")]
    assert [t.flagged for t in check.turns] == [True, False]


def test_schema_descriptions_describe_the_file_not_the_python_objects() -> None:
    from typer.testing import CliRunner

    from voicebudget.cli import app

    text = CliRunner().invoke(app, ["schema"]).output
    schema = json.loads(text)
    for field in (":param", ":ivar", ":raises", ":returns", "already merged"):
        assert field not in text
    assert "variants that replace or change stages" in schema["description"]
    assert schema["$defs"]["APIStage"]["description"].startswith("A hosted model behind an API")


def test_run_shows_the_cost_per_turn_of_a_priced_api_stage_or_says_what_it_lacks(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from voicebudget.cli import app

    path = ROOT / "scenarios" / "fast-mode.toml"
    out = CliRunner().invoke(app, ["run", str(path), "-n", "2000"], env={"COLUMNS": "80"}).output
    standard = (2650 * 5.0 + 60 * 25.0) / 1e6  # Opus 4.6 list prices per million tokens (row A2), the file's tokens
    assert f"cost: ${standard:.6f} per turn" in out
    assert f"cost: ${standard * 6:.6f} per turn" in out  # fast mode: 6x the price
    text = path.read_text().replace("prompt_tokens = 2650\n", "").replace("output_tokens = 60\n", "")
    (tmp_path / "fast-mode.toml").write_text(text)
    out = CliRunner().invoke(app, ["run", str(tmp_path / "fast-mode.toml"), "-n", "2000"], env={"COLUMNS": "80"}).output
    assert "cost: $" not in out
    assert out.count("cost: unknown: its api stage has a price but no tokens per turn") == 2  # not the gpu variant
