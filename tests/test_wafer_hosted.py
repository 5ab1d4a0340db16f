"""Wafer/LPU stages: the hosted API path is added by default on a hosted chip, ``path = "on-prem"`` is chip
time only, and ``run`` says which (issue 12, item 9)."""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.cli import app
from voicebudget.inference import WaferStage

runner = CliRunner()
Z95 = 1.6448536269514722  # the standard normal's 95th percentile

# Deterministic chip time: no jitter, one prompt length, one first-phrase length.
FIELDS = {
    "model": "llama-3.3-70b",
    "hardware": "wse-3",
    "prompt_tokens": 1000,
    "output_tokens": 200,
    "first_phrase_tokens": 10,
    "jitter_cv": 0.0,
}


def _chip_ms() -> float:
    r = vb.estimate_inference("llama-3.3-70b", "wse-3", workload=vb.Workload(prompt_tokens=1000, output_tokens=200))
    return r.ttft_ms + 10 * r.tpot_ms


def test_catalog_hosted_paths_are_sourced() -> None:
    for hw, p50, p95 in (("wse-3", 239.0, 558.0), ("groq-lpu", 114.0, 274.0)):
        hosted = vb.get_hardware(hw).hosted
        assert hosted is not None
        assert (hosted.overhead_p50_ms, hosted.overhead_p95_ms) == (p50, p95)
        assert "read 2026-12-01" in hosted.source
    # Cerebras: its 0.24 s TTFT for Llama-3.1-405B minus the model's chip-time TTFT (~1 ms).
    chip = vb.estimate_inference("llama-3.1-405b", "wse-3", workload=vb.Workload(prompt_tokens=100)).ttft_ms
    assert 240.0 - chip == pytest.approx(239.0, abs=1.0)
    assert vb.get_hardware("h100-sxm").hosted is None


def test_hosted_is_the_default_and_adds_the_overhead_closed_form() -> None:
    hosted, onprem = WaferStage(**FIELDS), WaferStage(**FIELDS, path="on-prem")
    assert (hosted.resolved_path, onprem.resolved_path) == ("hosted", "on-prem")
    chip = _chip_ms()
    n = 400_000
    x_on = onprem.sample(np.random.default_rng(3), n)
    np.testing.assert_allclose(x_on, chip)  # chip time only: a constant here
    x = hosted.sample(np.random.default_rng(3), n)
    # chip + log-normal(p50 239, p95 558): its quantiles shift by the constant chip time.
    sigma = math.log(558.0 / 239.0) / Z95
    for q, z in ((50, 0.0), (95, Z95), (99, 2.3263478740408408)):
        assert np.percentile(x, q) == pytest.approx(chip + 239.0 * math.exp(sigma * z), rel=0.01)
    assert np.percentile(x, 95) - np.percentile(x_on, 95) == pytest.approx(558.0, rel=0.01)


def test_user_overhead_replaces_the_catalog() -> None:
    st = WaferStage(**FIELDS, hosted_overhead=vb.Fixed(value_ms=100.0))
    assert st.resolved_path == "hosted"
    np.testing.assert_allclose(st.sample(np.random.default_rng(0), 100), _chip_ms() + 100.0)
    assert "your hosted_overhead" in st.path_note()


def test_path_errors_and_chips_without_a_hosted_path() -> None:
    with pytest.raises(ValueError, match='hosted_overhead is the hosted path.*give path = "hosted"'):
        WaferStage(**FIELDS, path="on-prem", hosted_overhead=vb.Fixed(value_ms=100.0))
    inline = vb.get_hardware("wse-3").model_copy(update={"id": "my-wafer", "hosted": None})
    fields = {**FIELDS, "hardware": inline}
    assert WaferStage(**fields).resolved_path == "on-prem"  # nothing measured to add
    with pytest.raises(ValueError, match="has no measured hosted path; give hosted_overhead"):
        WaferStage(**fields, path="hosted")
    assert WaferStage(**fields, hosted_overhead=vb.Fixed(value_ms=50.0)).resolved_path == "hosted"


SCENARIO = """
name = "cerebras"
samples = 200000
seed = 4
[budget]
total_ms = 800
[pipeline]
kind = "sequence"
[pipeline.stages.before]
kind = "fixed"
value_ms = 400
[pipeline.stages.llm]
kind = "wafer"
model = "llama-3.3-70b"
hardware = "wse-3"
prompt_tokens = 1000
output_tokens = 200
first_phrase_tokens = 10
jitter_cv = 0.0
[variants.on-prem]
stages.llm.path = "on-prem"
"""


def test_a_cerebras_scenario_p95_includes_the_hosted_path_and_run_says_so(tmp_path: Path) -> None:
    sc = vb.parse_scenario(tomllib.loads(SCENARIO), origin="c.toml")
    res = vb.simulate(sc)
    chip = _chip_ms()
    hosted, onprem = res.report("baseline"), res.report("on-prem")
    assert onprem.total.p95_ms == pytest.approx(400.0 + chip)
    assert onprem.passed
    assert hosted.total.p95_ms == pytest.approx(400.0 + chip + 558.0, rel=0.01)
    assert not hosted.passed  # the chip-time-only verdict would pass by ~550 ms
    assert res.wafer_paths["baseline"][0]["path"] == "hosted"
    assert res.wafer_paths["on-prem"][0] == {
        "stage": "llm",
        "path": "on-prem",
        "note": 'chip time only (path = "on-prem": no network or provider overhead added)',
    }
    path = tmp_path / "c.toml"
    path.write_text(SCENARIO)
    out = runner.invoke(app, ["run", str(path), "-f", "json"])
    assert out.exit_code == 1, out.output
    doc = json.loads(out.stdout)
    rows = {v["name"]: v["wafer_paths"] for v in doc["variants"]}
    assert rows["baseline"][0]["path"] == "hosted"
    assert "Cerebras Inference API network + overhead" in rows["baseline"][0]["note"]
    assert rows["on-prem"][0]["path"] == "on-prem"
    table = runner.invoke(app, ["run", str(path), "-n", "2000"]).stdout
    assert "llm: hosted path added" in " ".join(table.split())
    assert "llm: chip time only" in table
    md = runner.invoke(app, ["run", str(path), "-n", "2000", "-f", "markdown"]).stdout
    assert '- llm: chip time only (path = "on-prem"' in md


def test_bundled_hardware_scenario_paths(root: Path) -> None:
    res = vb.simulate(vb.load_scenario(root / "scenarios" / "hardware-llm.toml"), samples=20_000, seed=2)
    paths = {k: [r["path"] for r in v] for k, v in res.wafer_paths.items()}
    assert paths == {"cerebras-wse3": ["on-prem"], "cerebras-cloud-api": ["hosted"], "groq-lpu": ["hosted"]}
    # The same wafers behind the API: p95 several hundred ms later than chip time next to the agent.
    gap = res.report("cerebras-cloud-api").total.p95_ms - res.report("cerebras-wse3").total.p95_ms
    assert 300.0 < gap < 600.0


def test_capacity_says_which_path_and_keeps_the_scenarios_choice(root: Path) -> None:
    from voicebudget.capacity import deployments_from_options, plan_capacity

    sc = vb.load_scenario(root / "scenarios" / "support-line.toml")
    (hosted,) = deployments_from_options(sc, hardware="wse-3", model="llama-3.3-70b")
    res = plan_capacity(sc, [hosted], samples=2_000)
    assert any(n.startswith("llama-3.3-70b 4x wse-3: hosted path added: Cerebras Inference API") for n in res.notes)
    # A scenario whose llm stage is an on-prem wafer stage keeps that path when --hardware swaps the chip.
    onprem_llm = WaferStage(**{**FIELDS, "hardware": "groq-lpu"}, path="on-prem")
    sc2 = sc.model_copy(update={"pipeline": sc.pipeline.model_copy(update={"llm": onprem_llm})})
    (dep,) = deployments_from_options(sc2, hardware="wse-3", model="llama-3.3-70b")
    assert dep.stage.resolved_path == "on-prem"  # type: ignore[union-attr]
    assert any("chip time only" in n for n in plan_capacity(sc2, [dep], samples=2_000).notes)
