"""A new hardware kind is its own ``inference/`` module plus one entry in the stage union (issue 23, item 2).

The test copies the package, adds a made-up kind (``pim``, a processing-in-memory card with a closed-form
latency model) as ``voicebudget/inference/_pim.py`` and its entry in ``voicebudget/_stages.py``, checks
that nothing else of the copy differs, and runs that copy in a fresh interpreter through ``run`` (the
simulator, its path note and the CLI), capacity planning (Little's law on the kind's own model), the
tuner (its concurrency knob and chip-time price) and the memory guard.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import voicebudget

PIM_MODULE = '''
"""A made-up hardware kind for tests: a processing-in-memory card (closed-form latency)."""

from __future__ import annotations

from typing import ClassVar, Literal

from voicebudget._errors import ModelError
from voicebudget.inference._catalog import get_hardware
from voicebudget.inference._speculative import SpeculativeDecoding
from voicebudget.inference._stage import ModelledStage, WaferPath
from voicebudget.inference._types import Deployment, InferenceResult, MemoryUse, StepBreakdown, Workload

PREFILL_MS_PER_TOKEN = 0.05
TPOT_MS = 4.0
MAX_IN_FLIGHT = 64


class PIMStage(ModelledStage):
    """TTFT = 0.05 ms x prompt; TPOT = 4 ms x (1 + (concurrency - 1) / 8); at most 64 requests in flight."""

    kind: Literal["pim"] = "pim"
    memory_kind: ClassVar[str] = "hbm"

    def deployment(self) -> Deployment:
        return Deployment(chips=self.chips, precision=self.precision, concurrency=self.concurrency)

    def estimate(
        self, deployment: Deployment, workload: Workload, speculative: SpeculativeDecoding | None = None
    ) -> InferenceResult:
        c = deployment.concurrency
        if c > MAX_IN_FLIGHT:
            raise ModelError(f"{c} requests in flight exceed the card's {MAX_IN_FLIGHT}")
        hw, chips = get_hardware(self.hardware), deployment.chips or 1
        ttft, tpot = PREFILL_MS_PER_TOKEN * workload.prompt_tokens, TPOT_MS * (1 + (c - 1) / 8)
        throughput = c * 1e3 / tpot
        cost = hw.price.usd_per_chip_hour * chips / 3600 / throughput * 1e6 if hw.price else None
        step = StepBreakdown(
            weights_ms=0, compute_ms=tpot, kv_cache_ms=0, attention_ms=0, overhead_ms=0, communication_ms=0,
            total_ms=tpot, bound="compute",
        )
        return InferenceResult(
            kind="pim", model=str(self.model), hardware=hw.id, precision="bf16", kv_precision="bf16",
            chips=chips, tensor_parallel=1, pipeline_parallel=1, replicas=1, chips_chosen=False,
            concurrency=c, prompt_tokens=workload.prompt_tokens, output_tokens=workload.output_tokens,
            ttft_ms=ttft, tpot_ms=tpot, tokens_per_s_per_user=1e3 / tpot, throughput_tokens_per_s=throughput,
            cost_per_million_output_tokens=cost, price=hw.price, bound="compute", step=step,
            memory=MemoryUse(weights_bytes=0, kv_cache_bytes=0, capacity_bytes=1),
        )

    def hosted_path(self) -> tuple[WaferPath, str]:
        return "on-prem", "chip time only (a PIM card next to the agent)"
'''

SCENARIO = """
name = "pim"
samples = 4000
seed = 3
[budget]
total_ms = 800
[traffic]
turns_per_call_minute = 6
[pipeline]
kind = "voice_turn"
endpointing = { kind = "fixed", value_ms = 200 }
asr = { kind = "fixed", value_ms = 100 }
network = { kind = "fixed", value_ms = 20 }
tts = { kind = "fixed", value_ms = 100 }
transport = { kind = "fixed", value_ms = 50 }
[pipeline.llm]
kind = "pim"
model = "llama-3.1-8b"
hardware = "h100-sxm"
concurrency = 8
prompt_tokens = 1000
first_phrase_tokens = 10
jitter_cv = 0.0
"""

COUNCIL = """
kind = "council"
topology = "all"
[budget]
total_ms = 2000
[[members]]
name = "pim-8b"
p = 0.8
output_tokens = 4
output_usd_per_mtok = 1.0
stage = { kind = "pim", model = "llama-3.1-8b", hardware = "h100-sxm", concurrency = 8, jitter_cv = 0.0 }
[search]
concurrency = [1, 8, 64]
"""

SCRIPT = """
import json, sys, tomllib
from pathlib import Path
import voicebudget as vb
import voicebudget._memory as memory
from voicebudget.capacity import plan_capacity
from voicebudget.tuning import tune_council
from voicebudget.inference._stage import modelled_kinds, stage_class_for

out = {"package": vb.__file__, "kinds": sorted(modelled_kinds()), "hbm_default": stage_class_for("h100-sxm").__name__}
sc = vb.load_scenario("pim.toml")
res = vb.simulate(sc)
llm = res.report("baseline").stage("llm").stats
out["llm_p50_ms"] = llm.p50_ms
out["llm_p99_ms"] = llm.p99_ms
out["paths"] = [dict(r) for r in res.wafer_paths["baseline"]]
cap = plan_capacity(sc, samples=2000)
d = cap.deployments[0]
out["capacity"] = {"calls": d.max_concurrent_calls, "limited_by": d.limited_by, "kind": d.description["kind"],
                   "notes": [n for n in cap.notes if "PIM" in n]}
tuned = tune_council("council.toml", samples=500, refine_samples=500)
out["tune"] = {c.config.get("concurrency"): c.cost_per_turn for c in tuned.pareto}
out["tune_evaluated"] = tuned.evaluated
memory.available_bytes = lambda: 20_000_000  # a small machine
try:
    vb.simulate(sc, samples=5_000_000)
except vb.ScenarioError as exc:
    out["guard"] = str(exc)
json.dump(out, sys.stdout)
"""


def _copy_with_new_kind(dest: Path) -> Path:
    src = Path(voicebudget.__file__).parent
    pkg = dest / "voicebudget"
    shutil.copytree(src, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "inference" / "_pim.py").write_text(textwrap.dedent(PIM_MODULE).lstrip())
    union = pkg / "_stages.py"
    text = union.read_text()
    anchor = "from voicebudget.inference._stage import APIStage\n"
    assert anchor in text
    assert "        WaferStage,\n" in text
    text = text.replace(anchor, anchor + "from voicebudget.inference._pim import PIMStage\n")
    union.write_text(text.replace("        WaferStage,\n", "        WaferStage,\n        PIMStage,\n"))
    return src


def _differences(a: Path, b: Path, prefix: str = "") -> list[str]:
    cmp = filecmp.dircmp(a, b, ignore=["__pycache__"])
    out = [f"only in copy: {prefix}{n}" for n in cmp.right_only] + [
        f"only in package: {prefix}{n}" for n in cmp.left_only
    ]
    out += [f"changed: {prefix}{n}" for n in cmp.diff_files]
    for sub in cmp.common_dirs:
        out += _differences(a / sub, b / sub, f"{prefix}{sub}/")
    return out


def test_a_made_up_hardware_kind_is_one_module_and_one_union_entry(tmp_path: Path) -> None:
    src = _copy_with_new_kind(tmp_path / "pkg")
    assert sorted(_differences(src, tmp_path / "pkg" / "voicebudget")) == [
        "changed: _stages.py",
        "only in copy: inference/_pim.py",
    ]
    (tmp_path / "pim.toml").write_text(SCENARIO)
    (tmp_path / "council.toml").write_text(COUNCIL)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "pkg")}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert out["package"].startswith(str(tmp_path))  # the copy ran, not the installed package
    assert out["kinds"] == ["gpu", "pim", "wafer"]
    assert out["hbm_default"] == "GPUStage"  # the first kind in the union for HBM hardware stays the default
    # run: the kind's closed form, TTFT 0.05 x 1000 + 10 x 4 x (1 + 7/8) = 50 + 75 = 125 ms, a constant
    assert out["llm_p50_ms"] == 125.0
    assert out["llm_p99_ms"] == 125.0
    assert out["paths"] == [
        {"stage": "llm", "path": "on-prem", "note": "chip time only (a PIM card next to the agent)"}
    ]
    # capacity: the stage's concurrency (8) is the batch cap; Little's law on the kind's own model gives
    # c = the smallest integer >= lambda (0.05 P + 200 x 4 (1 + (c - 1) / 8)) / 1000 at lambda = 0.1/s per call
    # (P the call's mean prefill); the most calls with c <= 8 (the budget does not bind: 370 + at most
    # 0.05 x 3300 + 75 = 610 ms).
    traffic = voicebudget.CallTraffic(turns_per_call_minute=6)
    prefill = traffic.prefill_tokens_by_turn
    mean_prompt = round(sum(prefill) / len(prefill))

    def in_flight(calls: int) -> int:
        rate = traffic.request_rate_per_s(calls)
        return next(
            (c for c in range(1, 65) if c >= rate * (0.05 * mean_prompt + 200 * 4 * (1 + (c - 1) / 8)) / 1000), 65
        )

    cap = out["capacity"]
    assert cap["calls"] == max(n for n in range(1, 99) if in_flight(n) <= 8) == 49
    assert cap["limited_by"] == "batch cap"
    assert cap["kind"] == "pim"
    assert cap["notes"] == ["baseline: chip time only (a PIM card next to the agent)"]
    # tune: the concurrency knob applies (the kind's TPOT moves with it) and the price follows chip time per
    # token, tpot(c) / c against the declared concurrency 8: 4 output tokens x $1/Mtok x the ratio.
    assert out["tune_evaluated"] == 3
    tpot = {c: 4.0 * (1 + (c - 1) / 8) for c in (1, 8, 64)}
    expected = {str(c): 4e-6 * (tpot[c] / c) / (tpot[8] / 8) for c in (1, 8, 64)}
    assert out["tune"].keys() <= expected.keys()
    assert out["tune"]
    for conc, cost in out["tune"].items():
        assert abs(cost - expected[conc]) <= 1e-15
    # the memory guard measures the new kind like any other stage
    assert "5,000,000 turns: simulating 1 variant needs" in out["guard"]


def test_the_cli_runs_the_made_up_kind(tmp_path: Path) -> None:
    _copy_with_new_kind(tmp_path / "pkg")
    (tmp_path / "pim.toml").write_text(SCENARIO)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "pkg")}
    done = subprocess.run(
        [sys.executable, "-m", "voicebudget", "run", "pim.toml", "-f", "json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]  # max(200, 100) + 20 + 125 + 100 + 50 ms: within 800 ms
    (variant,) = json.loads(done.stdout)["variants"]
    assert variant["total"]["p95_ms"] == 495.0
    assert variant["wafer_paths"] == [
        {"stage": "llm", "path": "on-prem", "note": "chip time only (a PIM card next to the agent)"}
    ]
