"""``--hardware-config`` (a chip from a TOML file) and the sourced catalog additions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.cli import app

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "examples" / "l40s.toml"


def _json(args: list[str]) -> dict[str, object]:
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    doc: dict[str, object] = json.loads(res.stdout)
    return doc


def test_example_file_holds_the_l40s_datasheet_figures() -> None:
    hw = vb.hardware_from_toml(EXAMPLE)
    # NVIDIA L40S datasheet: 48 GB GDDR6, 864 GB/s, BF16 362.05 (733* sparse), FP8 733 (1,466* sparse) TFLOPS.
    assert (hw.memory_bytes, hw.memory_bandwidth_bytes_per_s) == (48e9, 864e9)
    assert hw.flops_per_s("bf16") == pytest.approx(362.05e12)
    assert hw.flops_per_s("fp8") == pytest.approx(1466e12 / 2)
    assert hw.flops_per_s("fp4") == hw.flops_per_s("fp8")  # no fp4 on Ada: runs at fp8
    assert (hw.id, hw.scaleup_topology, hw.price) == ("l40s-example", "pcie", None)


def test_cli_runs_on_the_file_and_weights_stream_at_its_bandwidth() -> None:
    base = ["infer", "-m", "llama-3.1-8b", "-f", "json"]
    mine = _json([*base, "--hardware-config", str(EXAMPLE)])
    h100 = _json([*base, "-H", "h100-sxm"])
    assert mine["hardware"] == "l40s-example"
    # Decode reads every weight once per step: the weight time scales with 1 / bandwidth exactly.
    ratio = mine["step"]["weights_ms"] / h100["step"]["weights_ms"]  # type: ignore[index]
    assert ratio == pytest.approx(3.35e12 / 864e9)
    # 16.06 GB of bf16 weights in 48 GB: one chip.
    assert (mine["chips"], mine["tensor_parallel"]) == (1, 1)


def test_defaults_id_from_the_file_name(tmp_path: Path) -> None:
    p = tmp_path / "My-Chip.toml"
    p.write_text(
        "memory_bytes = 24e9\nmemory_bandwidth_bytes_per_s = 300e9\nbf16_flops_per_s = 121e12\n"
        'scaleup_link_bytes_per_s = 32e9\nsource = "a datasheet"\n[price]\nusd_per_chip_hour = 0.8\n'
        'source = "a quote"\n',
        encoding="utf-8",
    )
    hw = vb.hardware_from_toml(p)
    assert (hw.id, hw.name) == ("my-chip", "my-chip")
    assert hw.price is not None
    assert hw.price.usd_per_chip_hour == 0.8
    doc = _json(["infer", "-m", "llama-3.2-1b", "--hardware-config", str(p), "-f", "json"])
    assert doc["hardware"] == "my-chip"
    assert doc["cost_per_million_output_tokens"] is not None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("memory_bytes = 24e9\n", "scaleup_link_bytes_per_s: required field missing"),
        (
            "memory_bytes = -1\nmemory_bandwidth_bytes_per_s = 3e11\nbf16_flops_per_s = 1e14\n"
            'scaleup_link_bytes_per_s = 3e10\nsource = "x"\n',
            "memory_bytes: Input should be greater than 0",
        ),
        (
            "memory_bytes = 24e9\nmemory_bandwidth_bytes_per_s = 3e11\nbf16_flops_per_s = 1e14\n"
            'scaleup_link_bytes_per_s = 3e10\nsource = "x"\nbandwith = 1\n',
            "bandwith: unknown field",
        ),
        (
            "memory_bytes = 24e9\nmemory_bandwidth_bytes_per_s = 3e11\nbf16_flops_per_s = 1e14\n"
            'scaleup_link_bytes_per_s = 3e10\nsource = "x"\nscaleup_topology = "ib"\n',
            "scaleup_topology: Input should be",
        ),
        ("memory_bytes = = 1\n", "cannot parse TOML"),
    ],
)
def test_bad_files_name_the_file_and_field(tmp_path: Path, text: str, message: str) -> None:
    p = tmp_path / "bad.toml"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(vb.ScenarioError, match=r"bad\.toml: ") as err:
        vb.hardware_from_toml(p)
    assert message in str(err.value)
    res = runner.invoke(app, ["infer", "-m", "llama-3.1-8b", "--hardware-config", str(p)])
    assert res.exit_code == 2
    assert message in res.output
    assert "Traceback" not in res.output


def test_cli_needs_exactly_one_hardware_source(tmp_path: Path) -> None:
    r = runner.invoke(app, ["infer", "-m", "llama-3.1-8b"])
    assert r.exit_code == 2
    assert "--hardware-config" in r.output
    r = runner.invoke(app, ["infer", "-m", "llama-3.1-8b", "-H", "h100-sxm", "--hardware-config", str(EXAMPLE)])
    assert r.exit_code == 2
    assert "not both" in r.output
    r = runner.invoke(app, ["infer", "-m", "llama-3.1-8b", "--hardware-config", str(tmp_path / "none.toml")])
    assert r.exit_code == 2
    assert "file not found" in r.output


@pytest.mark.parametrize(
    ("hw", "mem", "bw", "bf16", "fp8"),
    [
        # NVIDIA datasheets (sources on each entry): dense figures; H100 PCIe and L4 publish sparse ones (x2).
        ("h100-pcie", 80e9, 2.0e12, 1513e12 / 2, 3026e12 / 2),
        ("l40s", 48e9, 864e9, 362.05e12, 733e12),
        ("l4", 24e9, 300e9, 242e12 / 2, 485e12 / 2),
    ],
)
def test_sourced_pcie_entries_pin_their_datasheets(hw: str, mem: float, bw: float, bf16: float, fp8: float) -> None:
    h = vb.get_hardware(hw)
    assert (h.memory_bytes, h.memory_bandwidth_bytes_per_s) == (mem, bw)
    assert (h.flops_per_s("bf16"), h.flops_per_s("fp8")) == (pytest.approx(bf16), pytest.approx(fp8))
    assert h.scaleup_topology == "pcie"
    assert "read 2026-12-01" in h.source
    doc = _json(["infer", "-m", "llama-3.1-8b", "-H", hw, "-f", "json"])
    h100 = _json(["infer", "-m", "llama-3.1-8b", "-H", "h100-sxm", "-f", "json"])
    assert doc["step"]["weights_ms"] / h100["step"]["weights_ms"] == pytest.approx(3.35e12 / bw)  # type: ignore[index]


def test_mi325x_is_mi300x_with_more_and_faster_memory() -> None:
    # AMD: 256 GB HBM3E at 6 TB/s (MI300X: 192 GB, 5.3 TB/s), same 1,307.4 / 2,614.9 TFLOPS bf16 / fp8 dense.
    new, old = vb.get_hardware("mi325x"), vb.get_hardware("mi300x")
    assert (new.memory_bytes, new.memory_bandwidth_bytes_per_s) == (256e9, 6.0e12)
    assert new.flops_per_s("fp8") == pytest.approx(old.flops_per_s("fp8"), rel=0.001)
    a = _json(["infer", "-m", "llama-3.1-70b", "-H", "mi325x", "--chips", "1", "-f", "json"])
    b = _json(["infer", "-m", "llama-3.1-70b", "-H", "mi300x", "--chips", "1", "-f", "json"])
    assert b["step"]["weights_ms"] / a["step"]["weights_ms"] == pytest.approx(6.0 / 5.3)  # type: ignore[index]


def test_the_example_file_reproduces_the_catalog_l40s() -> None:
    wl = vb.Workload(prompt_tokens=1000, output_tokens=200)
    mine = vb.estimate_inference("llama-3.1-8b", vb.hardware_from_toml(EXAMPLE), workload=wl)
    cat = vb.estimate_inference("llama-3.1-8b", "l40s", workload=wl)
    assert (mine.ttft_ms, mine.tpot_ms) == (pytest.approx(cat.ttft_ms), pytest.approx(cat.tpot_ms))


def test_llama_70b_needs_tensor_parallel_over_pcie_on_l40s() -> None:
    # 141 GB of bf16 weights > 0.9 x 48 GB x 2: the fewest L40S that hold them with the KV cache is 4.
    doc = _json(["infer", "-m", "llama-3.1-70b", "-H", "l40s", "-f", "json"])
    assert doc["chips"] == 4
    assert doc["step"]["communication_ms"] > 0  # type: ignore[index]
