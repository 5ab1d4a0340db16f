"""Hardware catalog round 4: each entry pins the figures of the page it was read on (URL and date on the entry)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.cli import app

runner = CliRunner()

# (id, memory bytes, memory bandwidth B/s, dense bf16, dense fp8 (None: the chip has no fp8 figure), dense fp4)
DATASHEETS = [
    # Google Cloud TPU pages: 16 GB / 819 GB/s / 197 TF bf16; 32 GB / 1,638 GB/s / 918 TF bf16; no fp8 on either.
    ("tpu-v5e", 16e9, 819e9, 197e12, None, None),
    ("tpu-v6e", 32e9, 1638e9, 918e12, None, None),
    # AWS Neuron docs: 96 GiB at 2.9 TB/s, 667 BF16 and 1,299 FP8 TFLOPS dense.
    ("trainium2", 96 * 2**30, 2.9e12, 667e12, 1299e12, None),
    # Intel Hot Chips 2024: 128 GB HBM2e at 3.67 TB/s, 1,835 TFLOPS BF16 and FP8 matrix.
    ("gaudi3", 128e9, 3.67e12, 1835e12, 1835e12, None),
    # Reported H20 figures: 96 GB HBM3, 4.0 TB/s, 148 TFLOPS FP16/BF16 dense; no FP8 figure read.
    ("h20", 96e9, 4.0e12, 148e12, None, None),
    # GH200: 96 GB HBM3 at 4 TB/s, the H100's compute.
    ("gh200", 96e9, 4.0e12, 989e12, 1979e12, None),
    # GB300 NVL72 / 72: 1,080 PF FP4, 360 PF FP8, 576 TB/s dense; 2.5 PF BF16 and 279 GB usable per GPU.
    ("gb300", 279e9, 576e12 / 72, 2.5e15, 360e15 / 72, 1080e15 / 72),
    # MI355X: 288 GB, 8 TB/s, 2.52 PF FP16 and 5.03 PF FP8 dense, FP4 20.1 PF with sparsity (dense: half).
    ("mi355x", 288e9, 8.0e12, 2.52e15, 5.03e15, 20.1e15 / 2),
]


def _json(args: list[str]) -> dict[str, object]:
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    doc: dict[str, object] = json.loads(res.stdout)
    return doc


@pytest.mark.parametrize(("hw", "mem", "bw", "bf16", "fp8", "fp4"), DATASHEETS)
def test_entries_pin_their_datasheets(
    hw: str, mem: float, bw: float, bf16: float, fp8: float | None, fp4: float | None
) -> None:
    h = vb.get_hardware(hw)
    assert (h.memory_bytes, h.memory_bandwidth_bytes_per_s) == (pytest.approx(mem), pytest.approx(bw))
    assert h.flops_per_s("bf16") == pytest.approx(bf16)
    # A format the chip lacks runs at the next wider one: fp8 -> bf16, fp4 -> fp8.
    assert h.flops_per_s("fp8") == pytest.approx(fp8 if fp8 is not None else bf16)
    assert h.flops_per_s("fp4") == pytest.approx(fp4 if fp4 is not None else (fp8 if fp8 is not None else bf16))
    assert "read 2026-12-01" in h.source


@pytest.mark.parametrize("hw", [row[0] for row in DATASHEETS])
def test_hardware_lists_each_with_its_sources(hw: str) -> None:
    rows = {r["id"]: r for r in json.loads(runner.invoke(app, ["hardware", "-f", "json"]).stdout)}
    row = rows[hw]
    assert row["source"] == vb.get_hardware(hw).source
    assert row["software_efficiency_source"]
    table = runner.invoke(app, ["hardware"])
    assert table.exit_code == 0
    assert hw in table.stdout


@pytest.mark.parametrize("hw", [row[0] for row in DATASHEETS])
def test_infer_llama_8b_runs_and_streams_weights_at_the_datasheet_bandwidth(hw: str) -> None:
    doc = _json(["infer", "-m", "llama-3.1-8b", "-H", hw, "-f", "json"])
    h100 = _json(["infer", "-m", "llama-3.1-8b", "-H", "h100-sxm", "-f", "json"])
    h = vb.get_hardware(hw)
    chips = doc["chips"]
    assert isinstance(chips, int)
    # Decode reads each chip's share of the weights once per step: weight time ~ 1 / (tp * bandwidth * efficiency).
    ratio = doc["step"]["weights_ms"] / h100["step"]["weights_ms"]  # type: ignore[index]
    assert ratio == pytest.approx(3.35e12 / (chips * h.memory_bandwidth_bytes_per_s * h.software_efficiency))


def test_tpu_v5e_needs_two_chips_for_llama_8b_in_bf16() -> None:
    # 16.06 GB of bf16 weights > one v5e's 16 GB: the fewest that fit is a tensor-parallel pair over ICI.
    doc = _json(["infer", "-m", "llama-3.1-8b", "-H", "tpu-v5e", "-f", "json"])
    assert (doc["chips"], doc["tensor_parallel"]) == (2, 2)
    assert doc["step"]["communication_ms"] > 0  # type: ignore[index]


def test_new_vendors_keep_the_default_efficiency_and_say_so() -> None:
    for hw in ("tpu-v5e", "tpu-v6e", "trainium2", "gaudi3"):
        h = vb.get_hardware(hw)
        assert h.software_efficiency == 1.0
        assert "default" in h.software_efficiency_source
        assert "assumption" in h.software_efficiency_source


def test_mi355x_efficiency_puts_its_fp8_compute_at_b200_parity() -> None:
    # MLPerf Inference v6.0: MI355X matched B200 on Llama-2-70B; the entry's efficiency encodes that at fp8.
    mi, b = vb.get_hardware("mi355x"), vb.get_hardware("b200")
    # The reported rates agree with ISSCC 2026's 8,192 FP8 (4,096 FP16) FLOPs per clock per CU x 256 CUs x 2.4 GHz.
    assert mi.flops_per_s("fp8") == pytest.approx(8192 * 256 * 2.4e9, rel=0.002)
    assert mi.flops_per_s("bf16") == pytest.approx(4096 * 256 * 2.4e9, rel=0.002)
    assert mi.flops_per_s("fp8") * mi.software_efficiency == pytest.approx(
        b.flops_per_s("fp8") * b.software_efficiency, rel=0.01
    )


def test_h20_is_h100_memory_class_with_a_seventh_of_the_compute() -> None:
    # Same 4.0 TB/s class memory as GH200, 148 / 989 TFLOPS bf16: prefill (compute-bound) far slower, decode alike.
    wl = vb.Workload(prompt_tokens=4000, output_tokens=200)
    h20 = vb.estimate_inference("llama-3.1-8b", "h20", workload=wl)
    gh = vb.estimate_inference("llama-3.1-8b", "gh200", workload=wl)
    assert h20.tpot_ms == pytest.approx(gh.tpot_ms, rel=0.05)
    assert h20.ttft_ms > 4 * gh.ttft_ms
