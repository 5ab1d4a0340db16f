"""Wafer/LPU vendor software generations: named on every timing, picked with ``infer --software`` or a wafer
stage's ``software`` (default the latest), listed by ``voicebudget hardware`` (issue 12, item 8)."""

from __future__ import annotations

import json
import tomllib

import numpy as np
import pytest
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.cli import app
from voicebudget.inference import WaferStage

runner = CliRunner()
WL = vb.Workload(prompt_tokens=1000, output_tokens=500)


def _tok_s(model: str, hw: str, software: str | None) -> float:
    return vb.estimate_inference(model, hw, vb.Deployment(software=software), WL).tokens_per_s_per_user


def test_every_sram_timing_names_its_generation_latest_first() -> None:
    gens = {h.id: [t.generation for t in h.sram_generations] for h in vb.HARDWARE.values() if h.sram}
    assert gens["wse-3"] == ["2025-05", "2024-11", "2024-08"]
    assert gens["groq-lpu"] == ["2026-05", "2024-02"]
    assert all(g != "user" for ids in gens.values() for g in ids)  # catalog timings are all named


def test_launch_generation_closed_form_and_its_source() -> None:
    # Llama-3.1-70B bf16 needs 4 wafers: T = 80 tau_layer + 3 tau_hop + tau_step.
    launch, latest = _tok_s("llama-3.1-70b", "wse-3", "2024-08"), _tok_s("llama-3.1-70b", "wse-3", "2024-11")
    assert launch == pytest.approx(1e3 / (80 * 0.0041 + 3 * 0.51 + 0.37))
    assert latest == pytest.approx(1e3 / (80 * 0.0041 + 3 * 0.002 + 0.37))
    # The hop was solved from Artificial Analysis' launch-day >446 tok/s (catalog source): within 1%.
    assert launch == pytest.approx(446.0, rel=0.01)
    assert latest / launch == pytest.approx(3.17, rel=0.01)  # the software moved it ~3x (to 2,148 with spec. dec.)
    # One wafer has no hop: Llama-3.1-8B (S1, Aug 2024, 1800 tok/s) is the same under both generations.
    assert _tok_s("llama-3.1-8b", "wse-3", "2024-08") == pytest.approx(_tok_s("llama-3.1-8b", "wse-3", "2024-11"))
    # The default is the newest generation (2025-05): per-layer and per-step times x 0.75 over 2024-11.
    newest = _tok_s("llama-3.1-70b", "wse-3", None)
    assert newest == pytest.approx(1e3 / (0.75 * (80 * 0.0041 + 0.37) + 3 * 0.002))
    assert newest == _tok_s("llama-3.1-70b", "wse-3", "2025-05")


def test_unknown_or_misplaced_generation_is_refused() -> None:
    known = r"known: 2025-05, 2024-11, 2024-08"
    with pytest.raises(vb.ModelError, match=r"unknown software generation '2023' for .*" + known):
        _tok_s("llama-3.1-70b", "wse-3", "2023")
    gpu_known = r"'2024-08': unknown serving-stack generation for a GPU; known: 2025, 2024"
    with pytest.raises(vb.ModelError, match=gpu_known):
        _tok_s("llama-3.1-8b", "h100-sxm", "2024-08")  # a GPU's generations are its serving stacks
    with pytest.raises(vb.ModelError, match="is a GPU"):
        vb.get_hardware("h100-sxm").with_software("2024")
    wse = vb.get_hardware("wse-3")
    twice = {**wse.model_dump(), "sram_history": [wse.model_dump()["sram"]]}
    with pytest.raises(ValueError, match="distinct ids"):
        vb.Hardware.model_validate(twice)


def test_cli_software_option_and_hardware_listing() -> None:
    res = runner.invoke(app, ["infer", "-m", "llama-3.1-70b", "-H", "wse-3", "--software", "2024-08", "-f", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["tokens_per_s_per_user"] == pytest.approx(_tok_s("llama-3.1-70b", "wse-3", "2024-08"))
    assert any(
        n.startswith("wafer/LPU timings of software generation 2024-08: Cerebras Inference at launch")
        for n in doc["notes"]
    )
    bad = runner.invoke(app, ["infer", "-m", "llama-3.1-70b", "-H", "wse-3", "--software", "2023"])
    assert bad.exit_code == 2
    assert "known: 2025-05, 2024-11, 2024-08" in bad.output
    gpu = runner.invoke(app, ["infer", "-m", "llama-3.1-8b", "-H", "h100-sxm", "--software", "2024-08"])
    assert gpu.exit_code == 2
    assert "--software '2024-08': unknown serving-stack generation for a GPU; known: 2025, 2024" in gpu.output
    rate = runner.invoke(
        app, ["infer", "-m", "llama-3.1-8b", "-H", "h100-sxm", "--software", "x", "--request-rate", "1"]
    )
    assert rate.exit_code == 2
    assert "--software" in rate.output
    rows = {r["id"]: r for r in json.loads(runner.invoke(app, ["hardware", "-f", "json"]).stdout)}
    wse = rows["wse-3"]["software_generations"]
    assert [(g["generation"], g["default"], g["tau_hop_ms"]) for g in wse] == [
        ("2025-05", True, 0.002),
        ("2024-11", False, 0.002),
        ("2024-08", False, 0.51),
    ]
    assert rows["h100-sxm"]["software_generations"] == []
    table = runner.invoke(app, ["hardware"]).stdout
    assert "2025-05 *" in table
    assert "2024-08" in table


def test_wafer_stage_software_field() -> None:
    fields = {
        "model": "llama-3.1-70b",
        "hardware": "wse-3",
        "path": "on-prem",
        "jitter_cv": 0.0,
        "prompt_tokens": 1000,
        "output_tokens": 500,
        "first_phrase_tokens": 10,
    }
    launch = WaferStage(**fields, software="2024-08").sample(np.random.default_rng(0), 3)
    latest = WaferStage(**fields).sample(np.random.default_rng(0), 3)
    r = vb.estimate_inference("llama-3.1-70b", "wse-3", vb.Deployment(software="2024-08"), WL)
    np.testing.assert_allclose(launch, r.ttft_ms + 10 * r.tpot_ms)
    assert launch[0] > 2.5 * latest[0]
    text = (
        'name = "x"\n[pipeline]\nkind = "sequence"\n[pipeline.stages.llm]\nkind = "wafer"\n'
        'model = "llama-3.1-70b"\nhardware = "wse-3"\nsoftware = "2099"\n'
    )
    with pytest.raises(vb.ScenarioError, match=r"x.toml: pipeline.stages.llm.*unknown software generation '2099'"):
        vb.parse_scenario(tomllib.loads(text), origin="x.toml")
