"""The GitHub Actions job of docs/examples/voicebudget-ci.yml, run step by step: each `run:` script in a temporary
folder with bash as a GitHub runner runs it, `if: ${{ !cancelled() }}` honoured, the `uses:` steps and the install
step (the package comes from this checkout) left out. An agent within budget passes; one over budget and slower
than its baseline fails the budget and the comparison steps, and the comparison still runs after `check` said 1."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "docs" / "examples" / "voicebudget-ci.yml"
BASH = shutil.which("bash")

SCENARIO = """\
name = "agent"
samples = 20000
seed = 1

[budget]
total_ms = 800
percentile = 95

[pipeline]
kind = "sequence"

[pipeline.stages.endpointing]
kind = "fixed"
value_ms = 350

[pipeline.stages.llm]
kind = "lognormal"
p50_ms = 200
p95_ms = 300

[pipeline.stages.tts]
kind = "lognormal"
p50_ms = 80
p95_ms = 120
"""


def pipecat_log(path: Path, rng: np.random.Generator, turns: int, llm_p50_ms: float) -> Path:
    """A Pipecat debug log (the lines of tests/data/traces/pipecat.log: VAD stop, STT/LLM/TTS TTFB) of ``turns``
    turns: endpointing 350 ms (VAD stop_secs 0.2 s, the reader's default), LLM TTFT log-normal (p50 given, sigma
    0.25), TTS TTFB log-normal (p50 80 ms, sigma 0.25)."""
    prefix = "| DEBUG    | pipecat.processors"
    vad = f"{prefix}.audio.vad_processor:on_speech_stopped:78 - VADProcessor#0: User stopped speaking"
    ttfb = f"{prefix}.metrics.frame_processor_metrics:stop_ttfb_metrics:175 - {{service}} TTFB: {{s:.3f}}s"
    start = datetime(2026, 12, 1, 12, 0, 0)
    lines = []
    for i in range(turns):
        t0 = start + timedelta(seconds=10 * i)  # the actual end of speech
        llm = round(float(rng.lognormal(np.log(llm_p50_ms), 0.25))) / 1000
        tts = round(float(rng.lognormal(np.log(80.0), 0.25))) / 1000
        events = [
            (0.2, vad),
            (0.25, ttfb.format(service="DeepgramSTTService#0", s=0.25)),
            (0.35 + llm, ttfb.format(service="OpenAILLMService#0", s=llm)),
            (0.35 + llm + tts, ttfb.format(service="CartesiaTTSService#0", s=tts)),
        ]
        for at, message in events:
            lines.append(f"{(t0 + timedelta(seconds=at)).strftime('%Y-%m-%d %H:%M:%S.%f')[:-3]} {message}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@dataclass
class Step:
    name: str
    run: str
    status: int
    output: str


def run_job(folder: Path, env: dict[str, str]) -> tuple[list[Step], list[str]]:
    """Each `run:` step of the job, in order, as a GitHub runner would (bash -e, the default shell on Linux:
    github/docs, workflow syntax, jobs.<job_id>.steps[*].shell); a step without `if: ${{ !cancelled() }}` is
    skipped after a failure. Returns the steps run and the names of those left out."""
    job = yaml.safe_load(JOB.read_text(encoding="utf-8"))
    (steps,) = [j["steps"] for j in job["jobs"].values()]
    done: list[Step] = []
    left_out: list[str] = []
    failed = False
    for step in steps:
        name = step.get("name", step.get("uses", ""))
        if "uses" in step or step["run"].startswith("python -m pip install"):
            left_out.append(name)
            continue
        condition = step.get("if")
        assert condition in (None, "${{ !cancelled() }}"), condition
        if failed and condition is None:
            left_out.append(name)
            continue
        script = folder / "step.sh"
        script.write_text(step["run"], encoding="utf-8")
        proc = subprocess.run(
            [BASH, "-e", str(script)], cwd=folder, env=env, capture_output=True, text=True, timeout=300, check=False
        )
        done.append(Step(name, step["run"], proc.returncode, proc.stdout + proc.stderr))
        failed = failed or proc.returncode != 0
    return done, left_out


@pytest.fixture
def workspace(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A repository with the job's three inputs, ``voicebudget`` on PATH (this checkout), and a job summary
    file; the baseline pinned from a good run of the agent, as the job's header says."""
    repo = tmp_path / "repo"
    (repo / "scenarios").mkdir(parents=True)
    (repo / "ci").mkdir()
    (repo / "scenarios" / "agent.toml").write_text(SCENARIO, encoding="utf-8")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "voicebudget"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m voicebudget "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "COLUMNS": "100",
        "HOME": str(tmp_path),
    }
    good = pipecat_log(tmp_path / "good.log", np.random.default_rng(1), 150, 200.0)
    subprocess.run(
        f"voicebudget check {good} --format json > run.json && voicebudget baseline pin run.json -o ci/baseline.json",
        shell=True, cwd=repo, env=env, check=True, capture_output=True,
    )  # fmt: skip
    return repo, env


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
def test_the_job_passes_an_agent_as_fast_as_its_baseline(workspace: tuple[Path, dict[str, str]]) -> None:
    repo, env = workspace
    pipecat_log(repo / "agent.log", np.random.default_rng(2), 150, 200.0)
    steps, left_out = run_job(repo, env)
    assert left_out == ["actions/checkout@v4", "actions/setup-python@v5", "Install voicebudget",
                        "Upload the JUnit reports"]  # fmt: skip
    assert [(s.name, s.status) for s in steps] == [
        ("Scenario budgets", 0),
        ("This commit's turns against the budget", 0),
        ("Keep this commit's turns", 0),
        ("Against the pinned baseline", 0),
        ("JUnit reports", 0),
    ], [s.output[-2000:] for s in steps]
    assert "PASS no regression" in steps[3].output
    for report in ("run", "check", "compare"):
        assert (repo / "reports" / f"{report}.xml").read_text(encoding="utf-8").startswith("<?xml")
    summary = Path(env["GITHUB_STEP_SUMMARY"]).read_text(encoding="utf-8")
    assert "## agent" in summary  # run
    assert "agent.log: PASS" in summary  # check
    assert "voicebudget compare: ✅ no regression" in summary


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
def test_a_slower_agent_fails_the_budget_and_the_comparison_still_runs(
    workspace: tuple[Path, dict[str, str]],
) -> None:
    repo, env = workspace
    pipecat_log(repo / "agent.log", np.random.default_rng(3), 150, 450.0)  # the LLM 250 ms slower at p50
    steps, _ = run_job(repo, env)
    status = {s.name: s.status for s in steps}
    assert status == {
        "Scenario budgets": 0,
        "This commit's turns against the budget": 1,  # over budget: the job fails here ...
        "Keep this commit's turns": 0,  # ... but the turns are kept (check's exit 1 is a verdict, not an error)
        "Against the pinned baseline": 1,  # ... and compared: a regression
        "JUnit reports": 0,
    }, [s.output[-2000:] for s in steps]
    by_name = {s.name: s.output for s in steps}
    assert "::error file=agent.log,line=" in by_name["This commit's turns against the budget"]
    compared = by_name["Against the pinned baseline"]
    assert "FAIL regression: total p50 +2" in compared
    assert "::error title=voicebudget compare%3A total p50::total p50: " in compared
    xml = (repo / "reports" / "compare.xml").read_text(encoding="utf-8")
    assert 'failures="' in xml
    assert "slower beyond the tolerance" in xml


def test_the_docs_show_the_job_file_as_it_is() -> None:
    docs = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    block = docs.split("```yaml\n", 1)[1].split("```", 1)[0]
    assert block == JOB.read_text(encoding="utf-8")
