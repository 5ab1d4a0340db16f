"""Predicted vs measured (``voicebudget compare --predicted``): the simulated change's Monte Carlo interval
(closed forms and coverage), the verdicts, and the whole loop on a real Pipecat pipeline: fit a scenario from the
old agent's log, make a variant, run the changed agent, compare."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.baseline import Prediction, simulate_change
from voicebudget.baseline._bootstrap import DiffInterval
from voicebudget.baseline._compare import DEFAULT_TOLERANCE, Row
from voicebudget.baseline._predict import prediction_row, student_t_quantile
from voicebudget.cli import app

runner = CliRunner()


def test_student_t_quantiles_match_the_table() -> None:
    # Student's t table (e.g. NIST/SEMATECH e-Handbook of Statistical Methods, section 1.3.6.7.2)
    for p, dof, table in [(0.95, 19, 1.729), (0.95, 10, 1.812), (0.975, 30, 2.042), (0.995, 19, 2.861)]:
        assert student_t_quantile(p, dof) == pytest.approx(table, abs=2e-3)
    assert student_t_quantile(0.95, 10_000) == pytest.approx(1.6449, abs=1e-3)


def scenario(llm: dict[str, object], variant: dict[str, object], samples: int = 20_000, seed: int = 1) -> vb.Scenario:
    return vb.parse_scenario(
        {
            "name": "t",
            "samples": samples,
            "seed": seed,
            "pipeline": {"kind": "sequence", "stages": {"asr": {"kind": "fixed", "value_ms": 80}, "llm": llm}},
            "variants": {"v": {"stages": {"llm": variant}}},
        }
    )


def test_a_shift_on_common_random_numbers_is_predicted_exactly() -> None:
    base = {"kind": "lognormal", "p50_ms": 400, "p95_ms": 700}
    s = scenario(base, {"kind": "shifted", "shift_ms": 100, "base": base})
    changes = simulate_change(Prediction(s, "v", s), [50.0, 95.0], level=0.9)
    for measure in ("total", "llm"):
        for c in changes[measure]:
            assert c.estimate_ms == pytest.approx(100.0, abs=1e-9)
            assert c.high_ms - c.low_ms == pytest.approx(0.0, abs=1e-9)
    assert [c.estimate_ms for c in changes["asr"]] == [0.0, 0.0]


def test_the_monte_carlo_interval_covers_the_true_change_at_its_level() -> None:
    # normal 300 +- 40 ms -> normal 250 +- 60 ms: the true change of the p95 is -50 + 1.6449 * 20 = -17.10 ms
    true = -50.0 + 1.6448536 * 20.0
    covered = 0
    seeds = range(1, 101)
    for seed in seeds:
        s = scenario(
            {"kind": "normal", "mean_ms": 300, "std_ms": 40},
            {"kind": "normal", "mean_ms": 250, "std_ms": 60},
            samples=4_000,
            seed=seed,
        )
        (c,) = simulate_change(Prediction(s, "v", s), [95.0], level=0.9)["llm"]
        covered += c.low_ms <= true <= c.high_ms
    # nominal 90%; binomial sd over 100 seeds is 3 points
    assert 82 <= covered <= 97, covered


def row(estimate: float, low: float, high: float, tolerance: float = 20.0) -> Row:
    return Row("llm", 95.0, 500.0, 500.0 + estimate, 300, 300, "noise", DiffInterval(estimate, low, high, 10.0),
               tolerance, DEFAULT_TOLERANCE)  # fmt: skip


def test_the_gap_interval_adds_both_half_widths_in_quadrature() -> None:
    from voicebudget.baseline import SimulatedChange

    sim = SimulatedChange("llm", 95.0, 500.0, 360.0, -140.0, -165.0, -118.0, 14.0)
    r = prediction_row("llm", sim, row(-95.0, -130.0, -60.0))
    assert r.gap_ms == pytest.approx(45.0)
    assert r.gap_low_ms == pytest.approx(45.0 - math.hypot(35.0, 22.0))
    assert r.gap_high_ms == pytest.approx(45.0 + math.hypot(35.0, 25.0))
    assert r.verdict == "agrees"  # 45 - 41.3 = 3.7 ms is not beyond the 20 ms tolerance
    assert r.sentence().startswith(
        "the model predicted -140.0 ms (-165.0 ... -118.0) at p95; measured -95.0 (-130.0 ... -60.0): the "
        "measurement agrees with the prediction (gap +45.0 ms"
    )
    r = prediction_row("llm", sim, row(-60.0, -75.0, -45.0))
    assert r.verdict == "optimistic"  # gap 80, low 80 - hypot(15, 22) = 53.4 > 20
    assert r.sentence().endswith("measured -60.0 (-75.0 ... -45.0): the model was optimistic by about 80 ms on llm")
    r = prediction_row("llm", sim, row(-220.0, -235.0, -205.0))
    assert r.verdict == "pessimistic"


def test_a_spec_without_a_variant_is_refused_naming_the_flag(tmp_path: Path) -> None:
    s = tmp_path / "s.toml"
    s.write_text('name = "s"\n[pipeline]\nkind = "sequence"\n[pipeline.stages.llm]\nkind = "fixed"\nvalue_ms = 1\n')
    report = tmp_path / "r.json"
    rec = vb.TurnRecorder("agent")
    with rec.turn() as turn:
        turn.mark("speech_end")
        turn.mark("first_audio", at_ms=100.0)
    report.write_text(json.dumps(rec.report().to_dict()))
    result = runner.invoke(app, ["compare", str(report), str(report), "--predicted", str(s)], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "--predicted: give SCENARIO:VARIANT (e.g. fitted.toml:faster-llm)" in result.output
    result = runner.invoke(
        app, ["compare", str(report), str(report), "--predicted", f"{s}:nope"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 2
    assert f"--predicted: no variant 'nope' in {s}; variants: baseline" in result.output
    result = runner.invoke(app, ["compare", str(report), str(report), "--stage-map", "a=b"], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "go with --predicted" in result.output


# -- the whole loop on a real Pipecat pipeline ---------------------------------------------------------------------

TURNS = 55
"""Turns per run: the budget's percentile is p90 here, which needs 50 turns to be gated on (5 beyond it)."""
VARIANTS = """
[variants.faster-llm]
description = "The new LLM provider's TTFT: p50 120 ms, p95 200 ms (what the new agent's LLM service waits)."
llm = { kind = "lognormal", p50_ms = 120, p95_ms = 200 }

[variants.vendor-claim]
description = "The provider's marketing figure: p50 40 ms, p95 60 ms."
llm = { kind = "lognormal", p50_ms = 40, p95_ms = 60 }
"""


def _lognormal(rng: np.random.Generator, p50: float, p95: float, n: int) -> np.ndarray:
    return rng.lognormal(math.log(p50), math.log(p95 / p50) / 1.6448536, n)


def _scripts(rng: np.random.Generator, llm_p50: float, llm_p95: float) -> list[Any]:
    from voicebudget.testing import TurnScript

    stt = rng.uniform(30.0, 60.0, TURNS)
    llm = _lognormal(rng, llm_p50, llm_p95, TURNS)
    tts = _lognormal(rng, 70.0, 110.0, TURNS)
    return [
        TurnScript(stt_ms=a, turn_detection_ms=10.0, llm_ms=b, tts_ms=c, output_ms=10.0, speech_ms=300.0)
        for a, b, c in zip(stt, llm, tts, strict=True)
    ]


def _cli(*args: str, code: int | None = 0) -> str:
    """The command's output; ``code`` None: a verdict either way (0 or 1), not an error."""
    result = runner.invoke(app, list(args), env={"COLUMNS": "100", "GITHUB_STEP_SUMMARY": ""})
    assert result.exit_code in ((0, 1) if code is None else (code,)), result.output
    return result.output


def test_predicted_vs_measured_on_a_real_pipecat_pipeline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pipecat", reason="the pipecat extra is not installed: pip install 'voicebudget[pipecat]'")
    from pipecat_scripted import run_logged_conversation

    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(26)
    # the old agent: its LLM's TTFT p50 220 ms, p95 380 ms; Pipecat's own debug log is the trace
    run_logged_conversation(_scripts(rng, 220.0, 380.0), tmp_path / "before.log")
    (tmp_path / "before.json").write_text(_cli("check", "before.log", "--percentile", "90", "-f", "json", code=None))
    _cli("fit", "before.log", "-o", "fitted.toml", "--percentile", "90")
    fitted = tmp_path / "fitted.toml"
    fitted.write_text(fitted.read_text(encoding="utf-8") + VARIANTS, encoding="utf-8")
    # the new agent: the same pipeline, its LLM service now waits p50 120 ms, p95 200 ms
    run_logged_conversation(_scripts(rng, 120.0, 200.0), tmp_path / "after.log")
    (tmp_path / "after.json").write_text(_cli("check", "after.log", "--percentile", "90", "-f", "json", code=None))

    # "other" (the log's rounding, in the turns where it is not 0) is in too few turns for a p90 in some runs
    compare = ["compare", "before.json", "after.json", "--ignore-stage", "other", "--predicted"]
    out = _cli(*compare, "fitted.toml:faster-llm", "-f", "json")
    doc = faster = json.loads(out)
    assert doc["prediction"] == "fitted.toml:faster-llm vs fitted.toml:baseline"
    assert doc["verdict"].startswith("the measured change agrees with the prediction")
    (predicted,) = doc["predicted"]
    rows = {(r["measure"], r["percentile"]): r for r in predicted["rows"]}
    # every stage the trace has is predicted by the fitted scenario's stage of the same or the fitted name
    assert {m for m, _ in rows} == {"total", "endpointing", "llm_ttft", "tts_ttfb", "asr"}
    assert rows["llm_ttft", 50.0]["simulated"] == "llm"
    assert rows["tts_ttfb", 90.0]["simulated"] == "tts"
    for r in rows.values():
        assert r["verdict"] == "agrees", r["sentence"]
    # the LLM got ~100 ms faster at p50 (220 -> 120 ms), and the model says so within a few ms
    llm = rows["llm_ttft", 50.0]
    assert -130.0 < llm["predicted_ms"] < -70.0
    assert abs(llm["gap_ms"]) < 25.0
    total = rows["total", 90.0]
    assert total["measured_low_ms"] < total["predicted_ms"] < total["measured_high_ms"]
    # stages the change did not touch: predicted exactly 0 (common random numbers), measured within the noise
    assert rows["endpointing", 50.0]["predicted_ms"] == 0.0
    assert rows["endpointing", 50.0]["predicted_low_ms"] == rows["endpointing", 50.0]["predicted_high_ms"] == 0.0

    # a variant with the vendor's figures: the model was optimistic, by about the gap it shows
    table = _cli(*compare, "fitted.toml:vendor-claim", code=1)
    assert "the model was optimistic by about" in table
    assert "on llm_ttft" in table
    doc = json.loads(_cli(*compare, "fitted.toml:vendor-claim", "-f", "json", code=1))
    rows = {(r["measure"], r["percentile"]): r for r in doc["predicted"][0]["rows"]}
    llm = rows["llm_ttft", 50.0]
    assert llm["verdict"] == "optimistic"
    assert 50.0 < llm["gap_ms"] < 110.0  # measured ~ -100 ms, the claim predicts ~ -180 ms
    assert doc["verdict"].startswith("prediction missed: ")
    assert "llm_ttft p50 optimistic by about" in doc["verdict"]
    _docs_show_this_run(table, doc, faster)
    # GitHub: the miss is annotated at the variant's llm line of the fitted scenario
    github = _cli(*compare, "fitted.toml:vendor-claim", "-f", "github", code=1)
    lines = fitted.read_text(encoding="utf-8").splitlines()
    claim = lines.index("[variants.vendor-claim]") + 3  # its llm = {...} line, 1-based
    assert lines[claim - 1].startswith("llm = ")
    assert f"::error file=fitted.toml,line={claim},title=voicebudget compare%3A predicted%3A llm_ttft p50::" in github


DOCS_COMMAND = "$ voicebudget compare before.json after.json --ignore-stage other --predicted fitted.toml:vendor-claim"


REAL_PIPELINE = (60.0, 0.40)
"""How far docs/ci.md's figures may lie from this test's run: the measured side is 55 turns of a real pipeline,
whose bootstrap bounds move by tens of ms from run to run (seen: -118.6 then -83.6 ms), and the simulated side
is fitted to them."""
_VERDICT = re.compile(r"\s+(agrees|OPTIMISTIC|PESSIMISTIC)\s*$")


def _docs_show_this_run(table: str, vendor: dict[str, Any], faster: dict[str, Any]) -> None:
    """docs/ci.md shows a run of this test: its table's header and the rows it quotes (verdicts aside: a total's
    can flip between runs; the llm_ttft one is asserted above), the llm_ttft sentence and the faster-llm figures of
    its prose, within :data:`REAL_PIPELINE`."""
    from doc_outputs import DOCS, console_block, same_within_timing

    shown = console_block("ci.md", DOCS_COMMAND)
    header = next(i for i, line in enumerate(shown) if line.startswith("measure "))
    rows = [_VERDICT.sub("", line) for line in shown[header:] if line and not line.startswith(("...", " "))][:4]
    printed = [_VERDICT.sub("", line) for line in table.splitlines()]
    for line in rows:
        assert any(same_within_timing(line, out, REAL_PIPELINE) for out in printed), (
            f"docs/ci.md: {line!r} not in:\n{table}"
        )
    llm = {(r["measure"], r["percentile"]): r for r in vendor["predicted"][0]["rows"]}["llm_ttft", 50.0]
    page = " ".join(" ".join(shown).split())
    quoted = (
        f"llm_ttft p50: the model predicted {llm['predicted_ms']:+.1f} ms ({llm['predicted_low_ms']:+.1f} ... "
        f"{llm['predicted_high_ms']:+.1f}) at p50; measured {llm['measured_ms']:+.1f} ({llm['measured_low_ms']:+.1f} "
        f"... {llm['measured_high_ms']:+.1f}): the model was optimistic by about {llm['gap_ms']:.0f} ms on llm_ttft"
    ).replace("+", "")
    said_there = re.search(r"llm_ttft p50: the model predicted .*? on llm_ttft", page)
    assert said_there is not None
    assert same_within_timing(said_there[0], quoted, REAL_PIPELINE), (said_there[0], quoted)
    assert "FAIL prediction missed: " in page
    fast = {(r["measure"], r["percentile"]): r for r in faster["predicted"][0]["rows"]}
    prose = " ".join((DOCS / "ci.md").read_text(encoding="utf-8").split())
    said = (
        f"predicts {fast['total', 50.0]['predicted_ms']:.1f} ms at p50 and {fast['total', 90.0]['predicted_ms']:.1f} "
        f"ms at p90 where {fast['total', 50.0]['measured_ms']:.1f} and {fast['total', 90.0]['measured_ms']:.1f} ms"
    )
    prose_there = re.search(r"predicts -?[\d.]+ ms at p50 and -?[\d.]+ ms at p90 where -?[\d.]+ and -?[\d.]+ ms", prose)
    assert prose_there is not None
    assert same_within_timing(prose_there[0], said, REAL_PIPELINE), (prose_there[0], said)
