"""Mistakes a new user made on a first afternoon (issue 25, item 9), each answered in one line that says
what to do: an unknown kind names the closest known one, a tab in YAML says "use spaces", a folder is
called a folder, and a guard over parallel stages asks for one phase."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget._text import closest
from voicebudget._text import meant as meant_names
from voicebudget.cli import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def _run(path: Path) -> str:
    res = runner.invoke(app, ["run", str(path), "-n", "200"])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    return " ".join(res.stderr.split())


def test_an_unknown_kind_suggests_the_closest_known_one(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        'name = "x"\n[pipeline]\nkind = "sequence"\n'
        'stages = { llm = { kind = "log-normal", p50_ms = 300, p95_ms = 400 } }\n'
    )
    err = _run(path)
    assert "pipeline.stages.llm: unknown kind 'log-normal'; did you mean 'lognormal'? known: fixed, uniform," in err
    path.write_text('name = "x"\n[pipeline]\nkind = "sequence"\nstages = { a = { kind = "zzz", value_ms = 1 } }\n')
    assert "unknown kind 'zzz'; known: fixed" in _run(path)  # nothing close: no guess


@pytest.mark.parametrize(
    ("given", "meant"),
    [("log-normal", "lognormal"), ("Log_Normal", "lognormal"), ("all-of", "all_of"), ("kofn", "k_of_n")],
)
def test_closest_reads_through_separators_and_case(given: str, meant: str) -> None:
    known = ["fixed", "lognormal", "all_of", "k_of_n", "race"]
    assert closest(given, known) == meant
    assert closest("transformer", known) is None


def test_unknown_catalog_names_suggest_too() -> None:
    for args, meant in (
        (["-m", "llama3.3-70b", "-H", "h100-sxm"], "unknown model 'llama3.3-70b'; did you mean 'llama-3.3-70b'?"),
        (["-m", "llama-3.3-70b", "-H", "h100_sxm"], "unknown hardware 'h100_sxm'; did you mean 'h100-sxm'?"),
    ):
        res = runner.invoke(app, ["infer", *args])
        assert res.exit_code == 2
        assert meant in res.stderr


def test_a_tab_in_yaml_says_use_spaces(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: x\npipeline:\n\tkind: sequence\n")
    err = _run(path)
    assert f"{path}: line 3: cannot parse YAML:" in err
    assert err.endswith("YAML indents with spaces, not tabs: use spaces")


def test_a_folder_given_as_a_scenario_is_called_a_folder(tmp_path: Path) -> None:
    # it said "unknown file type ''"
    err = _run(tmp_path)
    assert err == f"error: {tmp_path}: is a folder, not a file; give a .toml, .yaml, .yml file in it"


def test_guard_from_a_vad_scenario_needs_the_commit_phase() -> None:
    # docs/checker.md: stages that run in parallel must be one phase; commit = "vad" makes endpointing and
    # asr parallel, and from_scenario accepted them as two stages one after the other
    scenario = vb.load_scenario(ROOT / "scenarios" / "support-line.toml")
    with pytest.raises(ValueError, match=r"stages endpointing, asr run in parallel \(commit = \"vad\"") as info:
        vb.BudgetGuard.from_scenario(scenario, samples=500, seed=1)
    assert "phases={'commit': ['endpointing', 'asr']}" in str(info.value)
    with pytest.raises(ValueError, match="must be one phase"):  # one of them in a phase is not enough
        vb.BudgetGuard.from_scenario(scenario, samples=500, seed=1, phases={"wait": ["endpointing"]})
    guard = vb.BudgetGuard.from_scenario(scenario, samples=500, seed=1, phases={"commit": ["endpointing", "asr"]})
    assert guard.turn().check().rest_ms > 0


def test_a_council_file_given_to_run_says_what_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What a user saw (round 4): `voicebudget run councils/x.toml` printed six errors, among them
    # "kind: unknown field 'kind'; allowed for kind 'council': kind, name, ...": 'kind' refused and listed.
    monkeypatch.chdir(ROOT)
    err = _run(ROOT / "councils" / "router-flash-lite-sonnet.toml")
    assert err == (
        f'error: {ROOT / "councils" / "router-flash-lite-sonnet.toml"}: a council file (kind = "council", a '
        "topology and members), not a scenario: evaluate it with `voicebudget council` (load_council), or use it "
        'as a scenario\'s stage: llm = { kind = "council", file = "router-flash-lite-sonnet.toml" }'
    )


@pytest.mark.parametrize("command", ["council", "tune"])
def test_a_scenario_given_where_a_council_is_read_says_what_it_is(command: str) -> None:
    # `voicebudget council scenario.toml` listed five missing/unknown fields; `tune` asked for a [search] table
    res = runner.invoke(app, [command, str(ROOT / "scenarios" / "webrtc-cascade.toml")])
    assert res.exit_code == 2, res.output
    assert " ".join(res.stderr.split()) == (
        f"error: {ROOT / 'scenarios' / 'webrtc-cascade.toml'}: a scenario file (it has a pipeline), not a council: "
        "run it with `voicebudget run` (load_scenario); a council file has a topology and members (docs/councils.md)"
    )


def test_a_scenario_named_as_a_council_stage_says_so_at_the_stage(tmp_path: Path) -> None:
    (tmp_path / "other.toml").write_text((ROOT / "scenarios" / "webrtc-cascade.toml").read_text(encoding="utf-8"))
    path = tmp_path / "s.toml"
    path.write_text(
        'name = "x"\n[pipeline]\nkind = "sequence"\nstages = { llm = { kind = "council", file = "other.toml" } }\n'
    )
    assert _run(path).startswith(
        f"error: {path}: pipeline.stages.llm: {tmp_path / 'other.toml'}: a scenario file (it has a pipeline), not a "
        "council"
    )


def test_a_name_that_begins_known_ones_offers_them_not_a_near_miss() -> None:
    # What a user saw (round 4): `hardware = "h100"` got "did you mean 'h200'?" (difflib's nearest), a different chip
    res = runner.invoke(app, ["infer", "-m", "llama-3.3-70b", "-H", "h100"])
    assert res.exit_code == 2
    assert "unknown hardware 'h100'; did you mean 'h100-pcie' or 'h100-sxm'? known:" in " ".join(res.stderr.split())
    assert closest("h100", ["h200", "h100-sxm"]) == "h100-sxm"
    assert meant_names("llama-3.1", ["llama-3.1-8b", "llama-3.1-70b", "h200"]) == ["llama-3.1-8b", "llama-3.1-70b"]
    assert len(meant_names("llama", [f"llama-{i}" for i in range(5)])) == 1  # begins too many: difflib's nearest


def test_a_vad_stop_typed_in_ms_says_the_flag_is_in_seconds() -> None:
    # What a user saw (round 4): `--stop-secs 200` (Pipecat's 200 ms) got only "less than or equal to 60"
    res = runner.invoke(app, ["check", str(ROOT / "tests" / "data" / "traces" / "pipecat.log"), "--stop-secs", "200"])
    assert res.exit_code == 2
    assert " ".join(res.stderr.split()) == (
        "error: --stop-secs: Input should be less than or equal to 60, got 200.0; stop_secs is in seconds: ms "
        "typed as s? 200 ms is 0.2 s"
    )


def test_a_table_without_a_kind_says_so_and_guesses_it_from_its_fields(tmp_path: Path) -> None:
    # pydantic's own words were "Unable to extract tag using discriminator 'kind'"
    path = tmp_path / "s.toml"
    path.write_text(
        'name = "x"\n[pipeline]\nkind = "sequence"\n'
        'stages = { asr = { kind = "shifted", shift_ms = 3, base = { p50_ms = 300, p95_ms = 450 } },'
        " llm = { value_ms = 300 }, tts = 120 }\n"
    )
    err = _run(path)
    assert (
        'pipeline.stages.asr.base: no kind given (kind = "..." says what this table is); '
        'did you mean kind = "lognormal"? known: fixed, uniform, normal, lognormal, empirical, mixture, shifted '
    ) in err + " "
    no_kind = 'no kind given (kind = "..." says what this table is)'
    assert f'pipeline.stages.llm: {no_kind}; did you mean kind = "fixed"?' in err
    assert "known: fixed, uniform, normal, lognormal, empirical, mixture, shifted, observed, llm, tts," in err
    fixed = 'a fixed time is { kind = "fixed", value_ms = 120 }'
    assert f"pipeline.stages.tts: 120 is not a table; expected one with a kind; {fixed}" in err
    assert "Unable to extract" not in err
    assert "valid dictionary" not in err
    path.write_text('name = "x"\n[pipeline]\nkind = "sequence"\nstages = { asr = {} }\n')
    err = _run(path)  # an empty table fits every kind without required fields: no guess (it was "empirical")
    assert f"pipeline.stages.asr: {no_kind}; known: fixed, uniform," in err
    assert "did you mean" not in err
    path.write_text('name = "x"\n[pipeline]\nkind = "sequence"\nstages = { asr = true }\n')
    assert "pipeline.stages.asr: true is not a table; expected one with a kind; known:" in _run(path)  # was True
    yaml = tmp_path / "s.yaml"
    yaml.write_text("name: x\npipeline:\n  kind: sequence\n  stages:\n    asr:\n")
    assert "pipeline.stages.asr: an empty value is not a table; expected one with a kind; known:" in _run(yaml)
    path.write_text('name = "x"\n[pipeline]\nendpointing = 200\n')
    assert (
        'pipeline: no kind given (kind = "..." says what this table is); '
        "known: voice_turn, barge_in, sequence, all_of, k_of_n, race, choice"
    ) in _run(path)


def test_a_table_without_a_kind_in_a_council_lists_the_kinds_there(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    text = (ROOT / "councils" / "cascade-8b-70b.toml").read_text()
    assert 'latency = { kind = "lognormal", p50_ms = 20, p95_ms = 35 }' in text
    path.write_text(text.replace('latency = { kind = "lognormal", ', "latency = { ", 1))
    res = runner.invoke(app, ["council", str(path), "-n", "200"])
    assert res.exit_code == 2, res.output
    err = " ".join(res.stderr.split())
    assert 'no kind given (kind = "..." says what this table is); did you mean kind = "lognormal"?' in err, err
    assert "known: fixed, uniform, normal, lognormal" in err


def test_a_table_without_a_kind_in_a_tuning_pool_lists_the_kinds_there(tmp_path: Path) -> None:
    # the [search] pool's stages were not in the schema the message walked: "no kind given" and nothing else
    path = tmp_path / "t.toml"
    text = (ROOT / "councils" / "tune-intent.toml").read_text()
    net = 'stages.net = { kind = "lognormal", p50_ms = 15, p95_ms = 40 }'
    assert net in text
    path.write_text(text.replace(net, "stages.net = { p50_ms = 15, p95_ms = 40 }"))
    res = runner.invoke(app, ["tune", str(path)])
    assert res.exit_code == 2, res.output
    assert " ".join(res.stderr.split()) == (
        f'error: {path}: search.pool.0.stage.stages.net: no kind given (kind = "..." says what this table is); '
        'did you mean kind = "lognormal"? known: fixed, uniform, normal, lognormal, empirical, mixture, shifted, '
        "observed, llm, tts, network, gpu, wafer, api, council, reply_cache, preemptive, tool_turn, sequence, all_of, "
        "k_of_n, race, choice, barge_in"
    )
    path.write_text(text.replace(net, "stages.net = 15"))
    res = runner.invoke(app, ["tune", str(path)])
    assert res.exit_code == 2, res.output
    assert (
        'search.pool.0.stage.stages.net: 15 is not a table; expected one with a kind; a fixed time is { kind = "fixed"'
        in (" ".join(res.stderr.split()))
    )


def test_a_value_where_a_table_belongs_lists_the_tables_fields(tmp_path: Path) -> None:
    # pydantic's own words named the model class: "Input should be a valid dictionary or instance of Budget"
    path = tmp_path / "s.toml"
    stages = 'stages = { a = { kind = "fixed", value_ms = 1 } }'
    path.write_text(f'name = "x"\nbudget = 800\n[pipeline]\nkind = "sequence"\n{stages}\n')
    assert "budget: 800 is not a table; expected one with fields total_ms, percentile, stages," in _run(path)
    path.write_text('name = "x"\n[pipeline]\nkind = "sequence"\n[[pipeline.stages]]\nkind = "fixed"\nvalue_ms = 1\n')
    err = _run(path)
    assert "pipeline.stages: a list of tables where a table of named entries belongs: give each a name" in err
    assert "instance of" not in err


def test_a_yaml_file_is_answered_in_yaml_not_toml(tmp_path: Path) -> None:
    # a YAML file was told to write `kind = "..."` and `{ kind = "fixed", value_ms = 120 }`: TOML, not its format
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: x\npipeline:\n  kind: sequence\n  stages:\n"
        "    asr: {kind: shifted, shift_ms: 3, base: {p50_ms: 300, p95_ms: 450}}\n"
        "    llm: {value_ms: 300}\n    tts: 120\n"
    )
    err = _run(path)
    no_kind = "no kind given (kind: ... says what this table is)"
    assert f"pipeline.stages.asr.base: {no_kind}; did you mean kind: lognormal? known: fixed, uniform," in err
    assert f"pipeline.stages.llm: {no_kind}; did you mean kind: fixed? known:" in err
    fixed = "a fixed time is {kind: fixed, value_ms: 120}"
    assert f"pipeline.stages.tts: 120 is not a table; expected one with a kind; {fixed}; known:" in err
    assert " = " not in err
    council = tmp_path / "c.yml"
    council.write_text("kind: council\ntopology: {kind: single}\nmembers: []\n")
    assert _run(council) == (
        f"error: {council}: a council file (kind: council, a topology and members), not a scenario: evaluate it "
        "with `voicebudget council` (load_council), or use it as a scenario's stage: llm: {kind: council, file: c.yml}"
    )


def test_a_compressed_scenario_says_it_is_compressed(tmp_path: Path) -> None:
    # was "line 1: not UTF-8 text (byte 1 cannot be decoded)"
    import gzip

    path = tmp_path / "s.toml"
    path.write_bytes(gzip.compress((ROOT / "scenarios" / "barge-in.toml").read_bytes(), mtime=0))
    assert _run(path) == (
        f"error: {path}: is compressed (gzip): gunzip it (or zcat it into a file) first; voicebudget reads it as text"
    )


def test_a_field_under_a_near_name_is_one_line_with_the_name_meant(tmp_path: Path) -> None:
    # p50 = 300 gave two lines: "p50_ms: required field missing" and "unknown field 'p50'"
    path = tmp_path / "s.toml"
    stages = (
        'a = { kind = "lognormal", p50 = 300, p95_ms = 450 }, b = { kind = "fixed", zzz = 3 }, '
        'c = { type = "fixed", value_ms = 3 }'
    )
    path.write_text(f'name = "x"\n[pipeline]\nkind = "sequence"\nstages = {{ {stages} }}\n')
    err = _run(path)
    assert "pipeline.stages.a.p50: unknown field 'p50'; did you mean 'p50_ms'? allowed for kind 'lognormal':" in err
    assert "pipeline.stages.a.p50_ms" not in err  # the same mistake, said once
    assert "pipeline.stages.b.value_ms: required field missing" in err  # nothing near: both lines stay
    assert "pipeline.stages.b.zzz: unknown field 'zzz'; allowed for kind 'fixed': kind, value_ms" in err
    assert "pipeline.stages.c: no kind given: 'type' is not a field; did you mean kind = \"fixed\"? known:" in err
    assert "4 errors:" in err


def test_a_share_typed_as_a_percent_says_what_it_is(tmp_path: Path) -> None:
    # was pydantic's "Input should be less than or equal to 1"
    path = tmp_path / "c.toml"
    text = (ROOT / "councils" / "cascade-8b-70b.toml").read_text()
    assert "\np = 0.78 " in text
    path.write_text(text.replace("\np = 0.78 ", "\np = 78 ", 1))
    res = runner.invoke(app, ["council", str(path), "-n", "200"])
    assert res.exit_code == 2
    said = "78 is over 1: a share is between 0 and 1 (typed as a percent? 78% is 0.78)"
    assert f"error: {path}: members.0.p: {said}" in " ".join(res.stderr.split())
    path.write_text(text.replace("\np = 0.78 ", "\np = 180 ", 1))  # not a percent either: pydantic's words stay
    assert "Input should be less than or equal to 1" in runner.invoke(app, ["council", str(path), "-n", "200"]).stderr
