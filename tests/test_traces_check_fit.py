"""Checking traces against a budget, fitting a scenario to them, and the CLI commands."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import voicebudget
from voicebudget import Budget, Observed, Sequence, evaluate, load_scenario, simulate
from voicebudget.cli import app
from voicebudget.traces import check, fit, read_trace

DATA = Path(__file__).parent / "data" / "traces"
SAMPLES = ["pipecat.log", "livekit-metrics.jsonl", "otel-spans.json"]
TRUTH_TOTAL = {
    "pipecat.log": ("pipecat.truth.json", "voice_to_voice_server_s"),
    "livekit-metrics.jsonl": ("livekit-metrics.truth.json", "total_s"),
    "otel-spans.json": ("otel-spans.truth.json", "e2e_s"),
}
runner = CliRunner()


def truth_totals_ms(sample: str) -> np.ndarray:
    name, key = TRUTH_TOTAL[sample]
    return np.array([t[key] * 1000 for t in json.loads((DATA / name).read_text())["turns"]])


@pytest.mark.parametrize("sample", SAMPLES)
def test_check_percentiles_match_the_truth(sample: str) -> None:
    result = check([read_trace(DATA / sample)], Budget(total_ms=1500))
    p50, p95 = np.percentile(truth_totals_ms(sample), [50, 95])
    assert result.report.total.p50_ms == pytest.approx(p50, abs=1.6)
    assert result.report.total.p95_ms == pytest.approx(p95, abs=1.6)
    share = float(np.mean(truth_totals_ms(sample) <= 1500))
    assert result.report.within_budget_share == pytest.approx(share)
    # tail shares of on-path stages add up to the whole tail (stages follow one another)
    assert sum(s.tail_share for s in result.report.stages) == pytest.approx(1.0)


def test_first_turn_vs_steady_state_livekit() -> None:
    result = check([read_trace(DATA / "livekit-metrics.jsonl")])
    totals = truth_totals_ms("livekit-metrics.jsonl")
    assert result.first_turn is not None
    assert result.steady_state is not None
    assert result.first_turn.n_turns == 1
    assert result.first_turn.total.p50_ms == pytest.approx(totals[0], abs=0.2)  # the cold turn: 2417 ms
    assert result.steady_state.total.p50_ms == pytest.approx(np.median(totals[1:]), abs=0.2)


def test_anomalies_excluded_by_default_and_included_on_request() -> None:
    table = read_trace(DATA / "livekit-broken.jsonl")
    default = check([table])
    assert default.report.n_turns == 4
    assert default.report.total.p50_ms == pytest.approx(990.0)  # median of 860, 890, 1090, 1870
    included = check([table], include_anomalies=True)
    # + c (201000 ms, stale anchor), e (860, duplicate line), i (550, negative TTS TTFB)
    assert included.report.n_turns == 7
    assert included.report.total.p50_ms == pytest.approx(890.0)


def test_check_json_has_the_run_keys_plus_turns_and_anomalies() -> None:
    doc = check([read_trace(DATA / "livekit-broken.jsonl")]).to_dict()
    assert {"scenario", "seed", "samples", "budget", "variants"} <= doc.keys()
    assert {"turns", "anomalies", "split", "sources"} <= doc.keys()
    variant = doc["variants"][0]
    assert variant["total"]["p50_ms"] == pytest.approx(990.0)
    assert variant["n_turns"] == 4
    assert doc["anomalies"][0] == {
        "line": 6,
        "field": "ttft",
        "value": -1,
        "reason": "no first token (ttft = -1)",
        "file": str(DATA / "livekit-broken.jsonl"),
        "turn": "b",
    }
    assert {a["line"] for a in doc["anomalies"]} == {6, 8, 12, 17, 21, 24, 29}
    rows = {r["turn"]: r for r in doc["turns"]}
    assert rows["a"]["included"]
    assert rows["a"]["first"]
    assert rows["a"]["cold"]
    assert not rows["c"]["included"]
    assert rows["c"]["endpointing_ms"] == pytest.approx(200500.0)
    json.dumps(doc, allow_nan=False)


@pytest.mark.parametrize("sample", SAMPLES)
def test_fitted_scenario_reproduces_p50_and_p95_within_5_percent(sample: str, tmp_path: Path) -> None:
    fitted = fit([read_trace(DATA / sample)])
    path = fitted.write(tmp_path / "from-traces.toml")
    assert "fit method: joint" in path.read_text()
    run = simulate(load_scenario(path), samples=100_000, seed=7)
    p50, p95 = np.percentile(truth_totals_ms(sample), [50, 95])
    total = run.reports[0].total
    assert total.p50_ms == pytest.approx(p50, rel=0.05)
    assert total.p95_ms == pytest.approx(p95, rel=0.05)
    # in fact much closer: the joint table reproduces the linear-interpolated percentiles
    assert total.p95_ms == pytest.approx(p95, rel=0.01)


@pytest.mark.parametrize("method", ["empirical", "lognormal"])
def test_independent_fits_are_valid_scenarios_in_voice_turn_shape(method: str, tmp_path: Path) -> None:
    fitted = fit([read_trace(DATA / "pipecat.log")], method=method)
    scenario = load_scenario(fitted.write(tmp_path / "s.toml"))
    assert scenario.pipeline.kind == "voice_turn"
    assert f"method {method}" in scenario.description
    check_ = fitted.verify(samples=50_000)
    assert abs(check_["p50_error"]) < 0.05  # pipecat's stages are nearly independent


def test_fit_variant_can_swap_the_llm_stage(tmp_path: Path) -> None:
    text = fit([read_trace(DATA / "livekit-metrics.jsonl")]).toml
    text += '\n[variants.fast-llm]\nllm = { kind = "lognormal", p50_ms = 150, p95_ms = 250 }\n'
    path = tmp_path / "v.toml"
    path.write_text(text)
    run = simulate(load_scenario(path), samples=50_000, seed=3)
    base, fast = run.reports
    assert fast.total.p50_ms < base.total.p50_ms
    # common random numbers: the endpointing draws are the same turns in both variants
    assert fast.stage("endpointing").stats.p50_ms == pytest.approx(base.stage("endpointing").stats.p50_ms)


def test_observed_columns_draw_the_same_turns() -> None:
    a = Observed(table="t", values_ms=(100.0, 200.0, 300.0))
    b = Observed(table="t", values_ms=(10.0, 20.0, 30.0))
    ev = evaluate(Sequence(stages={"a": a, "b": b}), 10_000, seed=5)
    np.testing.assert_allclose(ev.stages["b"], ev.stages["a"] / 10)
    # interpolation: the sum's percentiles are numpy's linear percentiles of the row totals
    assert np.percentile(ev.total, 50) == pytest.approx(220.0, rel=0.02)
    rows = Observed(table="t", values_ms=(1.0, 5.0), interpolate=False).sample(np.random.default_rng(1), 1000)
    assert set(np.unique(rows)) == {1.0, 5.0}
    with pytest.raises(voicebudget.ScenarioError):
        voicebudget.parse_scenario({"name": "x", "pipeline": {"kind": "observed", "table": "t", "values_ms": [-1]}})


def test_cli_check_exit_codes_and_json() -> None:
    over = runner.invoke(app, ["check", str(DATA / "livekit-metrics.jsonl"), "--format", "json"])
    assert over.exit_code == 1, over.output
    doc = json.loads(over.stdout)
    assert doc["variants"][0]["total"]["p95_ms"] == pytest.approx(3032.9, abs=0.2)
    ok = runner.invoke(app, ["check", str(DATA / "livekit-metrics.jsonl"), "--budget-ms", "3100"])
    assert ok.exit_code == 0, ok.output
    assert "3033" in ok.stdout
    p50 = runner.invoke(app, ["check", str(DATA / "otel-spans.json"), "--budget-ms", "1400", "--percentile", "50"])
    assert p50.exit_code == 0, p50.output
    forced = runner.invoke(app, ["check", str(DATA / "pipecat.log"), "--format-in", "livekit"])
    assert forced.exit_code == 2
    assert "no turns" in forced.output


def test_cli_check_include_anomalies_changes_the_numbers() -> None:
    args = ["check", str(DATA / "livekit-broken.jsonl"), "--format", "json"]
    default = json.loads(runner.invoke(app, args).stdout)
    included = json.loads(runner.invoke(app, [*args, "--include-anomalies"]).stdout)
    assert default["variants"][0]["n_turns"] == 4
    assert included["variants"][0]["n_turns"] == 7


def test_cli_unreadable_trace_exits_2_without_traceback(tmp_path: Path) -> None:
    junk = tmp_path / "x.bin"
    junk.write_bytes(b"\x00\x01 nothing here")
    result = runner.invoke(app, ["check", str(junk)])
    assert result.exit_code == 2
    assert "holds binary data (a NUL byte), not a trace's text" in result.output
    assert "Traceback" not in result.output
    missing = runner.invoke(app, ["check", str(tmp_path / "nope.log")])
    assert missing.exit_code == 2
    assert "nope.log: file not found" in missing.output


def test_cli_fit_then_run_reproduces_the_trace(tmp_path: Path) -> None:
    out = tmp_path / "scenarios" / "from-traces.toml"
    out.parent.mkdir()
    result = runner.invoke(app, ["fit", str(DATA / "otel-spans.json"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "observed total: p50 1361.7 ms, p95 1819.0 ms" in result.stdout
    run = runner.invoke(app, ["run", str(out), "--format", "json", "--samples", "100000", "--budget-ms", "5000"])
    assert run.exit_code == 0, run.output
    total = json.loads(run.stdout)["variants"][0]["total"]
    p50, p95 = np.percentile(truth_totals_ms("otel-spans.json"), [50, 95])
    assert total["p50_ms"] == pytest.approx(p50, rel=0.05)
    assert total["p95_ms"] == pytest.approx(p95, rel=0.05)


@pytest.mark.parametrize("command", ["check", "fit"])
def test_cli_commands_have_help(command: str) -> None:
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0
    assert "--format-in" in result.stdout
    assert "--include-anomalies" in result.stdout


def test_fitted_file_carries_a_what_if_variant_that_runs(tmp_path: Path) -> None:
    text = fit([read_trace(DATA / "pipecat.log")]).toml
    head, example = text.split("# [variants.cerebras-wse3]")
    variant = "[variants.cerebras-wse3]" + "".join(
        line.removeprefix("# ") + "\n" for line in example.splitlines(keepends=False)
    )
    path = tmp_path / "what-if.toml"
    path.write_text(head + variant)
    base, wafer = simulate(load_scenario(path), samples=20_000, seed=2).reports
    assert wafer.name == "cerebras-wse3"
    # the observed stages are drawn identically; only the LLM changed
    assert wafer.stage("endpointing").stats.p50_ms == pytest.approx(base.stage("endpointing").stats.p50_ms)
    assert wafer.stage("llm").stats.p50_ms != pytest.approx(base.stage("llm_ttft").stats.p50_ms, rel=0.01)


@settings(max_examples=25, deadline=None)
@given(rows=st.lists(st.tuples(st.floats(0, 3000), st.floats(0, 2000), st.floats(0, 500)), min_size=2, max_size=40))
def test_joint_observed_table_reproduces_linear_percentiles_of_the_totals(
    rows: list[tuple[float, float, float]],
) -> None:
    rows = sorted(rows, key=sum)
    cols = {name: Observed(table="p", values_ms=tuple(r[i] for r in rows)) for i, name in enumerate("abc")}
    total = evaluate(Sequence(stages=cols), 60_000, seed=11).total
    expected = np.percentile([sum(r) for r in rows], [50, 95])
    spread = max(sum(rows[-1]) - sum(rows[0]), 1.0)
    np.testing.assert_allclose(np.percentile(total, [50, 95]), expected, atol=0.02 * spread)


def test_fit_writes_yaml_for_yaml_and_refuses_other_targets(tmp_path) -> None:
    from pathlib import Path

    from typer.testing import CliRunner

    import voicebudget as vb
    from voicebudget.cli import app

    runner = CliRunner()
    sample = Path(__file__).parent / "data" / "traces" / "pipecat.log"
    out = tmp_path / "fitted.yaml"
    assert runner.invoke(app, ["fit", str(sample), "-o", str(out)]).exit_code == 0
    toml_out = tmp_path / "fitted.toml"
    assert runner.invoke(app, ["fit", str(sample), "-o", str(toml_out)]).exit_code == 0
    from_yaml = vb.simulate(vb.load_scenario(out), samples=20_000).reports[0].total
    from_toml = vb.simulate(vb.load_scenario(toml_out), samples=20_000).reports[0].total
    assert from_yaml == from_toml  # the same document, two syntaxes
    for target, message in (
        (tmp_path / "x.json", "allowed: .toml, .yaml, .yml"),
        (tmp_path / "missing" / "x.toml", "does not exist"),
    ):
        result = runner.invoke(app, ["fit", str(sample), "-o", str(target)])
        assert result.exit_code == 2
        assert message in result.stderr
    assert not (tmp_path / "missing").exists()


def test_the_same_trace_twice_is_refused() -> None:
    from pathlib import Path

    from typer.testing import CliRunner

    from voicebudget.cli import app

    sample = Path(__file__).parent / "data" / "traces" / "pipecat.log"
    result = CliRunner().invoke(app, ["check", str(sample), str(sample.parent / ".." / "traces" / "pipecat.log")])
    assert result.exit_code == 2
    assert "given twice" in result.stderr


CASES = DATA / "cases"


def test_fit_on_one_turn_warns_on_stderr_and_in_the_file(tmp_path: Path) -> None:
    out = tmp_path / "one.toml"
    result = runner.invoke(app, ["fit", str(CASES / "livekit-realtime-history" / "history.json"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    warning = (
        "fitted on only 1 turn (fewer than 20): its p95 and other tail percentiles rest on the one or two "
        "largest turns and are unreliable; fit on more turns"
    )
    assert f"warning: {out}: {warning}" in " ".join(result.stderr.split())
    assert "observed total: p50 900.0 ms, p95 900.0 ms" in result.stdout
    text = out.read_text()
    assert f"# WARNING: {warning}\n" in text.split("\nname = ")[0]  # in the header comment
    assert load_scenario(out).description.endswith("; 1 turn (fewer than 20: tails unreliable).")


def test_fit_warns_below_20_turns_only() -> None:
    table = read_trace(DATA / "otel-spans.json")
    assert len(table.turns) == 20
    assert fit([table]).warnings == ()
    assert "# WARNING" not in fit([table]).toml
    few = fit([replace(table, turns=table.turns[:19])])
    assert few.n_turns == 19
    assert few.warnings == (
        "fitted on only 19 turns (fewer than 20): its p95 and other tail percentiles rest on "
        "the one or two largest turns and are unreliable; fit on more turns",
    )


def test_a_server_side_fit_says_its_transport_is_zero_where_run_shows_it(tmp_path: Path) -> None:
    # What a user saw (round 4): a LiveKit agent's metrics fitted and run: "PASS p95 718.2 ms <= 800.0 ms",
    # with the Twilio legs (200-400 ms) nowhere; only a comment inside the file said transport is 0.
    out = tmp_path / "fitted.toml"
    result = runner.invoke(app, ["fit", str(DATA / "livekit-metrics.jsonl"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert (
        "note: the trace is server side: its transport is 0 ms in the file; add the path to the listener "
        "([pipeline.transport]) before judging voice-to-voice"
    ) in " ".join(result.stdout.split())
    description = load_scenario(out).description
    assert description.endswith("; server side: transport 0 ms until you add the path to the listener.")
    shown = runner.invoke(app, ["run", str(out), "-n", "2000"])
    assert "server side: transport 0 ms until you add the path to the listener" in " ".join(shown.stdout.split())


def test_a_lower_bound_alone_does_not_call_the_tails_unreliable() -> None:
    # the description said "(fewer than 20: tails unreliable)" for any warning, a tool turn's lower bound too
    table = read_trace(CASES / "livekit-console-tool-turn" / "agent-console.log")
    many = fit([replace(table, turns=table.turns * 7)])  # 21 turns, 7 of them lower bounds
    assert many.n_turns == 21
    assert [w.split(" ")[:5] for w in many.warnings] == [["7", "of", "21", "turns", "give"]]
    assert "fewer than" not in many.document["description"]


def test_fit_on_zero_usable_turns_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "zero.toml"
    result = runner.invoke(app, ["fit", str(CASES / "livekit-missing-tts" / "metrics.jsonl"), "-o", str(out)])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert (
        "metrics.jsonl: no usable turn to fit: 3 turns, 3 anomalies: line 3: no tts_metrics line for "
        "speech_id speech_00ab12cd"
    ) in " ".join(result.stderr.split())
    assert not out.exists()


def test_fit_on_lower_bound_turns_says_it_is_optimistic() -> None:
    """A turn whose total is only a lower bound (LiveKit's console log of a tool turn) enters the fit, with a
    warning naming the stages the trace does not time."""
    from voicebudget.traces import fit

    table = read_trace(DATA / "cases" / "livekit-console-tool-turn" / "agent-console.log")
    result = fit([table])
    assert any("1 of 3 turns gives only a lower bound" in w and "llm_tool_call, tool" in w for w in result.warnings)


def test_check_warns_when_the_turns_are_too_few_for_the_percentile() -> None:
    # issue 25 item 7: 20 LiveKit turns; a p95 needs about 60 for the slowest 3 to inform it, a p50 6
    from typer.testing import CliRunner

    from voicebudget.cli import app

    trace = Path(__file__).parent / "data" / "traces" / "livekit-metrics.jsonl"
    res = CliRunner().invoke(app, ["check", str(trace)])
    assert "of 20 turns within" in res.stdout
    assert res.stderr.strip() == "warning: a p95 of 20 turns rests on the slowest turn (a p95 wants 60+)"
    median = CliRunner().invoke(app, ["check", str(trace), "--percentile", "50"])
    assert "warning" not in median.stderr


@pytest.mark.parametrize("case", ["pipecat-tts-to-bot-audio-gap/pipecat.log", "livekit-avatar-metrics/metrics.jsonl"])
def test_the_output_stage_stays_in_the_fitted_voice_turn(case: str, tmp_path: Path) -> None:
    """Turns that end at the bot's first audio: the 'output' stage after the TTS byte is in the fitted turn
    (it was dropped: the Pipecat gap case simulated 757 ms for its observed 1498 ms)."""
    table = read_trace(DATA / "cases" / case)
    path = fit([table]).write(tmp_path / "from-traces.toml")
    assert "[pipeline.tts.stages.output]" in path.read_text()
    total = simulate(load_scenario(path), samples=20_000, seed=7).reports[0].total
    observed = [t.total_ms for t in table.turns]
    assert total.p50_ms == pytest.approx(float(np.percentile(observed, 50)), rel=0.01)
    assert total.p95_ms == pytest.approx(float(np.percentile(observed, 95)), rel=0.01)
