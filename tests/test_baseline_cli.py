"""`voicebudget baseline pin` and `voicebudget compare` as a user meets them: real reports in, exit codes out."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.baseline import read_turn_sets
from voicebudget.cli import app

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "tests" / "data" / "traces"
runner = CliRunner()


def recorder_report(path: Path, llm_ms: np.ndarray, *, calls: int = 0, budget: vb.Budget | None = None) -> Path:
    """A recorder's report JSON: turns of asr 80 ms, then the LLM, then tts 120 ms (fake clock, exact)."""
    now = [0]
    rec = vb.TurnRecorder("agent", clock=lambda: now[0])
    for i, llm in enumerate(llm_ms):
        with rec.turn(call=f"call-{i % calls}" if calls else None) as turn:
            turn.mark("speech_end")
            turn.add_stage("asr", start_ms=0.0, end_ms=80.0)
            turn.add_stage("llm", start_ms=80.0, end_ms=80.0 + float(llm))
            turn.add_stage("tts", start_ms=80.0 + float(llm), end_ms=200.0 + float(llm))
            turn.mark("first_audio", at_ms=200.0 + float(llm))
    path.write_text(json.dumps(rec.report(budget).to_dict()), encoding="utf-8")
    return path


def test_pin_keeps_the_turns_and_compare_of_a_run_with_itself_passes(tmp_path: Path) -> None:
    llm = np.random.default_rng(1).lognormal(np.log(400), 0.3, 300)
    report = recorder_report(tmp_path / "run.json", llm)
    result = runner.invoke(app, ["baseline", "pin", str(report), "-o", str(tmp_path / "base.json")])
    assert result.exit_code == 0, result.output
    assert "pinned agent: 300 turns, 4 stages" in result.output
    (pinned,) = read_turn_sets(tmp_path / "base.json")
    assert pinned.stages_ms["llm"] == pytest.approx(llm, abs=1e-3)
    assert pinned.total_ms == pytest.approx(llm + 200.0, abs=1e-3)
    assert list(pinned.stages_ms) == ["asr", "llm", "tts", "untracked"]
    result = runner.invoke(app, ["compare", str(tmp_path / "base.json"), str(report), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["verdict"] == "no regression"
    total_p95 = next(r for r in doc["sets"][0]["rows"] if r["measure"] == "total" and r["percentile"] == 95)
    assert total_p95["difference_ms"] == 0.0
    assert total_p95["baseline_ms"] == pytest.approx(np.percentile(llm + 200.0, 95), abs=1e-3)
    assert doc["level"] == 0.9
    assert doc["resamples"] == 2000
    assert doc["seed"] == 0
    assert doc["method"] == "percentile"


def test_a_slower_llm_is_a_regression_with_exit_1(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    base = recorder_report(tmp_path / "base.json", rng.lognormal(np.log(400), 0.3, 400))
    new = recorder_report(tmp_path / "new.json", rng.lognormal(np.log(400), 0.3, 400) + 150.0)
    result = runner.invoke(app, ["compare", str(base), str(new), "--tolerance-ms", "50"], env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    assert "FAIL regression: total p50 +1" in result.output
    assert "llm p95" in result.output
    tts = runner.invoke(app, ["compare", str(base), str(new), "--format", "json"])
    rows = {(r["measure"], r["percentile"]): r for r in json.loads(tts.output)["sets"][0]["rows"]}
    assert rows["tts", 95]["verdict"] == "unchanged"  # 120 ms exactly on both sides
    assert rows["llm", 50]["verdict"] == "regression"
    assert rows["llm", 50]["low_ms"] > rows["llm", 50]["tolerance_ms"]


def test_too_few_turns_for_p95_is_not_comparable_unless_asked(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    base = recorder_report(tmp_path / "base.json", rng.lognormal(np.log(400), 0.3, 12))
    new = recorder_report(tmp_path / "new.json", rng.lognormal(np.log(400), 0.3, 12))
    result = runner.invoke(app, ["compare", str(base), str(new)], env={"COLUMNS": "300"})
    assert result.exit_code == 4
    assert "a p95 of 12 turns rests on the slowest turn; gating needs 100 turns" in result.output
    assert runner.invoke(app, ["compare", str(base), str(new), "--allow-few-turns"]).exit_code == 0


def test_different_budgets_and_anchors_are_not_comparable(tmp_path: Path) -> None:
    llm = np.full(120, 400.0)
    base = recorder_report(tmp_path / "base.json", llm)
    new = recorder_report(tmp_path / "new.json", llm, budget=vb.Budget(total_ms=1000))
    result = runner.invoke(app, ["compare", str(base), str(new), "--format", "json"])
    assert result.exit_code == 4
    assert "different budgets: baseline 800 ms at p95, new 1000 ms at p95" in json.loads(result.output)["verdict"]
    assert runner.invoke(app, ["compare", str(base), str(new), "--budget-ms", "900"]).exit_code == 0
    trace = tmp_path / "trace.json"
    trace.write_text(runner.invoke(app, ["check", str(TRACES / "pipecat.log"), "--format", "json"]).output)
    result = runner.invoke(app, ["compare", str(base), str(trace), "--format", "json"])
    assert result.exit_code == 4
    assert "different anchors of t = 0" in json.loads(result.output)["verdict"]


def test_stage_missing_on_one_side_is_not_comparable(tmp_path: Path) -> None:
    base = recorder_report(tmp_path / "base.json", np.full(120, 400.0))
    doc = json.loads(base.read_text())
    del doc["measured"]["sets"][0]["turns"]["stages_ms"]["tts"]
    doc["measured"]["sets"][0]["stages"].remove("tts")
    new = tmp_path / "new.json"
    new.write_text(json.dumps(doc))
    result = runner.invoke(app, ["compare", str(base), str(new), "--format", "json"])
    assert result.exit_code == 4
    assert "no stage 'tts' in the new report" in json.loads(result.output)["verdict"]
    assert runner.invoke(app, ["compare", str(base), str(new), "--ignore-stage", "tts"]).exit_code == 0


def test_calls_are_resampled_as_clusters(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    base = recorder_report(tmp_path / "base.json", rng.lognormal(np.log(400), 0.3, 200), calls=20)
    new = recorder_report(tmp_path / "new.json", rng.lognormal(np.log(400), 0.3, 200), calls=20)
    doc = json.loads(runner.invoke(app, ["compare", str(base), str(new), "--format", "json"]).output)
    assert doc["sets"][0]["resampled"] == "calls"
    assert doc["sets"][0]["calls"] == [20, 20]


def test_bad_input_exits_2_naming_the_field(tmp_path: Path) -> None:
    base = recorder_report(tmp_path / "base.json", np.full(120, 400.0))
    doc = json.loads(base.read_text())
    doc["measured"]["sets"][0]["turns"]["total_ms"][3] = -1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    result = runner.invoke(app, ["compare", str(base), str(bad)], env={"COLUMNS": "300"})
    assert result.exit_code == 2
    assert "bad.json: sets[0].turns.total_ms[3]: must be a finite number >= 0 ms, got -1" in result.output
    plain = tmp_path / "plain.json"
    plain.write_text("{}")
    result = runner.invoke(app, ["baseline", "pin", str(plain), "-o", str(tmp_path / "b.json")])
    assert result.exit_code == 2
    assert "no measured turns" in result.output
    doc["measured"]["sets"][0]["turns"]["total_ms"][3] = 1.0
    listed = doc["measured"]["sets"][0]["stages"]
    doc["measured"]["sets"][0]["stages"] = [x for x in listed if x != "tts"]  # hand-edited: refused, not ignored
    bad.write_text(json.dumps(doc))
    result = runner.invoke(app, ["compare", str(base), str(bad)], env={"COLUMNS": "300"})
    assert result.exit_code == 2
    assert "sets[0].stages: lists other stages than turns.stages_ms has (not listed: tts)" in result.output
    doc["measured"]["sets"][0]["stages"] = "asr"
    bad.write_text(json.dumps(doc))
    result = runner.invoke(app, ["compare", str(base), str(bad)], env={"COLUMNS": "300"})
    assert 'sets[0].stages: must be a list of stage names, got "asr"' in result.output
    doc["measured"]["sets"][0]["stages"] = listed
    doc["measured"]["version"] = 2
    bad.write_text(json.dumps(doc))
    result = runner.invoke(app, ["compare", str(base), str(bad)], env={"COLUMNS": "300"})
    assert result.exit_code == 2
    assert "schema version 2; this voicebudget reads version 1" in result.output


def test_budget_file_tolerances_per_stage(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    base = recorder_report(tmp_path / "base.json", rng.lognormal(np.log(400), 0.3, 400))
    new = recorder_report(tmp_path / "new.json", rng.lognormal(np.log(400), 0.3, 400) + 60.0)
    budget = tmp_path / "budget.toml"
    budget.write_text('[budget]\ntotal_ms = 800\n\n[budget.tolerance]\ndefault = "50%"\nllm = 20\n')
    doc = json.loads(
        runner.invoke(app, ["compare", str(base), str(new), "--budget-file", str(budget), "-f", "json"]).output
    )
    rows = {(r["measure"], r["percentile"]): r for r in doc["sets"][0]["rows"]}
    assert rows["llm", 50]["tolerance_ms"] == 20.0
    assert rows["llm", 50]["verdict"] == "regression"
    assert rows["total", 50]["tolerance_ms"] == pytest.approx(0.5 * rows["total", 50]["baseline_ms"])
    assert rows["total", 50]["verdict"] != "regression"


def test_check_json_and_pytest_json_are_reports_compare_reads(tmp_path: Path) -> None:
    out = runner.invoke(app, ["check", str(TRACES / "pipecat.log"), "--format", "json"]).output
    (s,) = read_turn_sets(_write(tmp_path, out))
    assert s.n_turns == 20
    assert s.anchor == "trace: pipecat"
    assert s.calls == (str(TRACES / "pipecat.log"),) * 20
    assert list(s.stages_ms)[:4] == ["endpointing", "llm_ttft", "first_phrase", "tts_ttfb"]


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "check.json"
    p.write_text(text)
    return p


def test_compare_reasons_name_the_flags_not_the_library_parameters(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    base = recorder_report(tmp_path / "base.json", rng.lognormal(np.log(400), 0.3, 30))
    doc = json.loads(base.read_text())
    del doc["measured"]["sets"][0]["turns"]["stages_ms"]["tts"]
    doc["measured"]["sets"][0]["stages"].remove("tts")
    new = tmp_path / "new.json"
    new.write_text(json.dumps(doc))
    out = runner.invoke(app, ["compare", str(base), str(new), "-f", "json"]).output
    assert "gate on it anyway: --allow-few-turns" in out
    assert "(leave it out: --ignore-stage)" in out
    assert "allow_few_turns" not in out
    assert "ignore_stages" not in out
    other = recorder_report(tmp_path / "other.json", np.full(30, 400.0), budget=vb.Budget(total_ms=1000))
    out = runner.invoke(app, ["compare", str(base), str(other), "-f", "json"]).output
    assert "(judge both against one budget: --budget-file)" in out
    result = runner.invoke(app, ["compare", str(base), str(new), "--level", "2"], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "--level: must be in (0, 1)" in result.output
    # Python callers read the parameters
    from voicebudget.baseline import CompareSettings, compare_files

    verdict = compare_files(base, new, CompareSettings()).verdict
    assert "gate on it anyway: allow_few_turns=True" in verdict


def test_pin_refuses_an_existing_baseline_unless_force(tmp_path: Path) -> None:
    report = recorder_report(tmp_path / "run.json", np.full(3, 400.0), calls=1)
    target = tmp_path / "base.json"
    assert runner.invoke(app, ["baseline", "pin", str(report), "-o", str(target)]).exit_code == 0
    result = runner.invoke(app, ["baseline", "pin", str(report), "-o", str(target)], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "exists; give --force to replace it" in result.output
    result = runner.invoke(app, ["baseline", "pin", str(report), "-o", str(target), "--force"])
    assert result.exit_code == 0, result.output
    assert "pinned agent: 3 turns, 1 call, 4 stages" in result.output


def test_compare_help_and_table_fit_80_columns(tmp_path: Path) -> None:
    help_text = runner.invoke(app, ["compare", "--help"], env={"COLUMNS": "80"}).output
    assert "[budget] table" in help_text
    assert "[budget.tolerance]" in help_text
    report = tmp_path / "check.json"
    traces = [str(TRACES / "pipecat.log"), str(TRACES / "livekit-metrics.jsonl")]
    report.write_text(runner.invoke(app, ["check", *traces, "-f", "json"]).output)
    result = runner.invoke(app, ["compare", str(report), str(report), "--allow-few-turns"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80
    row = next(line.split() for line in result.output.splitlines() if line.startswith("total ") and "p95" in line)
    assert row[:5] == ["total", "p95", "3004", "3004", "+0.0"]  # whole ms from 1 s up


@pytest.mark.parametrize("value", [1e308, 3.6e9 + 1])
def test_a_turn_beyond_1000_hours_is_bad_input_in_every_format(tmp_path: Path, value: float) -> None:
    # 1e308 ms is finite, so it passed the reader; its bootstrap spread overflowed to inf, which the table printed
    # ("would catch a slowdown of about inf ms") and --format json could not write: exit 3, a bug
    base = recorder_report(tmp_path / "base.json", np.full(120, 400.0))
    doc = json.loads(base.read_text())
    doc["measured"]["sets"][0]["turns"]["total_ms"][3] = value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    pin = ["baseline", "pin", str(bad), "-o", str(tmp_path / "b.json")]
    for args in (["compare", str(bad), str(base), "-f", "json"], pin):
        result = runner.invoke(app, args, env={"COLUMNS": "300"})
        assert result.exit_code == 2, result.output
        assert result.output.strip() == (
            f"error: {bad}: sets[0].turns.total_ms[3]: must be at most 3,600,000,000 ms (1,000 hours), got {value!r}"
        )


@pytest.mark.parametrize(("version", "said"), [("1", 'the text "1"'), (True, "true"), (None, "null")])
def test_a_version_that_is_not_the_number_1_says_what_it_is(tmp_path: Path, version: object, said: str) -> None:
    base = recorder_report(tmp_path / "base.json", np.full(120, 400.0))
    doc = json.loads(base.read_text())
    doc["measured"]["version"] = version
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    result = runner.invoke(app, ["compare", str(base), str(bad)], env={"COLUMNS": "300"})
    assert result.exit_code == 2
    said = f"schema version {said}; this voicebudget reads version 1 (a number)"
    assert result.output.strip() == f"error: {bad}: version: {said}"


@pytest.mark.parametrize(
    ("edit", "said"),
    [  # Python's words were "got None", "got True", "got a NoneType", "got a int", "not listed: ['tts']"
        (("turns", "total_ms", 3, None), "sets[0].turns.total_ms[3]: must be a finite number >= 0 ms, got null"),
        (("turns", "total_ms", 3, True), "sets[0].turns.total_ms[3]: must be a finite number >= 0 ms, got true"),
        (("turns", "stages_ms", "llm", 0, "9"), 'got "9"'),
        (("name", None), "sets[0].name: must be text, got null"),
        (("name", 7), "sets[0].name: must be text, got a number"),
        (("budget", [800]), "sets[0].budget: must be a table, got a list"),
        (("turns", "id", 0, False), "sets[0].turns.id[0]: must be text, got false"),
        (("turns", "call", {"a": 1}), "sets[0].turns.call: must be a list of 120 texts (one per turn), got a table"),
        (("turns", "id", True), "sets[0].turns.id: must be a list, got true"),
        (("turns", "stages_ms", "llm", None), "sets[0].turns.stages_ms.llm: must be a list, got null"),
        (("stages", ["asr", 1]), "sets[0].stages: must be a list of stage names, got a list holding a number"),
        (("stages", ["asr", "llm"]), "sets[0].stages: lists other stages than turns.stages_ms has (not listed: tts, "),
        (("stages", ["asr", "llm", "tts", "untracked", "nlu"]), "stages_ms has (no column for nlu)"),
    ],
)
def test_a_hand_edited_report_is_answered_in_json_words(tmp_path: Path, edit: tuple[object, ...], said: str) -> None:
    base = recorder_report(tmp_path / "base.json", np.full(120, 400.0))
    doc = json.loads(base.read_text())
    *keys, last, value = edit
    node = doc["measured"]["sets"][0]
    for key in keys:
        node = node[key]
    node[last] = value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    result = runner.invoke(app, ["compare", str(base), str(bad)], env={"COLUMNS": "300"})
    assert result.exit_code == 2, result.output
    assert said in result.output
    assert "None" not in result.output
    assert "True" not in result.output
    assert "['" not in result.output  # a Python list's repr


@pytest.mark.parametrize(("suffix", "pack", "said"), [(".gz", "gzip", "gzip): gunzip it (or zcat it into a file)")])
def test_a_compressed_report_says_it_is_compressed_as_check_does(
    tmp_path: Path, suffix: str, pack: str, said: str
) -> None:
    # compare and baseline pin said "line 1: not UTF-8 text (byte 1 cannot be decoded)"; check said "compressed"
    import gzip

    base = recorder_report(tmp_path / "base.json", np.full(120, 400.0))
    packed = tmp_path / f"base.json{suffix}"
    packed.write_bytes(gzip.compress(base.read_bytes(), mtime=0))
    message = f"error: {packed}: is compressed ({said} first; voicebudget reads it as text"
    for args in (["compare", str(packed), str(base)], ["baseline", "pin", str(packed), "-o", str(tmp_path / "b")]):
        result = runner.invoke(app, args, env={"COLUMNS": "300"})
        assert result.exit_code == 2, result.output
        assert result.output.strip() == message
    result = runner.invoke(app, ["check", str(packed)], env={"COLUMNS": "300"})
    assert result.exit_code == 2, result.output
    assert f"error: {packed}: is compressed ({said} first; a trace is read as text" in result.output


def test_sets_that_do_not_compare_still_count_their_turns(tmp_path: Path) -> None:
    # the header said "agent -> pipecat.log: 0 -> 0 turns; resampled: turns" of sets of 120 and 20 turns
    base = recorder_report(tmp_path / "base.json", np.full(120, 400.0))
    trace = tmp_path / "trace.json"
    trace.write_text(runner.invoke(app, ["check", str(TRACES / "pipecat.log"), "--format", "json"]).output)
    result = runner.invoke(app, ["compare", str(base), str(trace)], env={"COLUMNS": "300"})
    assert result.exit_code == 4
    assert f"agent -> {TRACES / 'pipecat.log'}: 120 -> 20 turns\n" in result.output
    doc = json.loads(runner.invoke(app, ["compare", str(base), str(trace), "-f", "json"]).output)
    assert doc["sets"][0]["turns"] == [120, 20]
    assert doc["sets"][0]["rows"] == []
    same = json.loads(runner.invoke(app, ["compare", str(base), str(base), "-f", "json"]).output)
    assert same["sets"][0]["turns"] == [120, 120]
