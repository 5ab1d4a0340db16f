"""A council as a scenario's LLM stage: the report names the member that drives the tail."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.cli import app

SCENARIO = """
name = "council as the llm stage"
[budget]
total_ms = 800
[pipeline]
kind = "sequence"
stages.asr = { kind = "lognormal", p50_ms = 247, p95_ms = 298 }
[pipeline.stages.llm]
kind = "council"
topology = "all"
members = [
  { name = "fast", p = 0.8, stage = { kind = "lognormal", p50_ms = 100, p95_ms = 150 } },
  { name = "steady", p = 0.8, stage = { kind = "lognormal", p50_ms = 200, p95_ms = 260 } },
  { name = "heavy-tail", p = 0.8, stage = { kind = "lognormal", p50_ms = 180, p95_ms = 900 } },
]
"""


def test_council_stage_report_breaks_the_tail_down_by_member(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO)
    report = vb.simulate(vb.load_scenario(path), samples=100_000, seed=3).reports[0]
    llm = report.stage("llm")
    names = [p.name for p in llm.parts]
    # the member with the heavy tail sets the council's latency in the slow turns
    assert names[0] == "heavy-tail"
    assert llm.parts[0].tail_share > 0.5
    # parts split the stage's tail contribution exactly
    assert sum(p.tail_ms for p in llm.parts) == pytest.approx(llm.tail_ms, rel=1e-9)
    assert "tail driver: llm (mean" in report.summary()
    assert f"; heavy-tail {llm.parts[0].tail_ms:.1f} ms)" in report.summary()
    doc = json.loads(CliRunner().invoke(app, ["run", str(path), "-n", "20000", "-f", "json"]).stdout)
    stage = next(s for s in doc["variants"][0]["stages"] if s["name"] == "llm")
    assert [p["name"] for p in stage["parts"]][0] == "heavy-tail"
    assert {"name", "tail_ms", "tail_share"} == set(stage["parts"][0])


def test_sample_parts_draws_the_same_latency_as_sample() -> None:
    council = vb.parse_scenario(
        {"name": "x", "pipeline": {"kind": "sequence", "stages": {"llm": _council_doc()}}}
    ).pipeline.stages["llm"]
    a = council.sample(np.random.default_rng(5), 1000)
    b, parts = council.sample_parts(np.random.default_rng(5), 1000)
    assert np.array_equal(a, b)
    assert np.allclose(sum(parts.values()), b)


def _council_doc() -> dict:
    import tomllib

    return tomllib.loads(SCENARIO)["pipeline"]["stages"]["llm"]
