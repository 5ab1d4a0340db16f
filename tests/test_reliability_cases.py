"""The handed reliability cases for scenario and council files (issue 11), through the CLI.

Inputs are copies of ``shared/cases/reliability`` in ``tests/data/reliability``. The contract: bad input
exits 2 with a message naming the file (and the field or line), never a traceback, never exit 1, fast,
and never echoes a referenced file's content.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.cli import app

DATA = Path(__file__).parent / "data" / "reliability"
runner = CliRunner()


@pytest.fixture
def cases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the cases, as the working directory (the cases' README runs them from their folder)."""
    target = tmp_path / "cases"
    shutil.copytree(DATA, target)
    monkeypatch.chdir(target)
    return target


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return result.exit_code, " ".join(result.output.split())  # rich may wrap long messages


@pytest.mark.parametrize(
    ("command", "name", "expected"),
    [
        (
            "run",
            "20_yaml_billion_laughs_variant_description.yaml",
            "20_yaml_billion_laughs_variant_description.yaml: line 1: cannot parse YAML: aliases expand to "
            "435,848,070 nodes (the document has 38); at most 100,000 added nodes are allowed",
        ),
        ("run", "23_toml_deep_array.toml", "23_toml_deep_array.toml: TOML nested deeper than 100 levels; refused"),
        (
            "run",
            "25_yaml_list_as_key.yaml",
            "25_yaml_list_as_key.yaml: line 1: cannot parse YAML: a mapping key must be a string or number, not a list",
        ),
        (
            "run",
            "27_empirical_json_null/scenario.toml",
            "27_empirical_json_null/scenario.toml: pipeline.stages.a: 27_empirical_json_null/nulls.json: "
            "samples_ms[0] (item 1): expected a number of ms, got null",
        ),
        (
            "run",
            "28_empirical_reads_proc_environ_leaks_env.toml",
            "28_empirical_reads_proc_environ_leaks_env.toml: pipeline.stages.a: file '/proc/self/environ' is outside "
            "the folders a file may reference",
        ),
        (
            "run",
            "31_token_range_high_int64_max.toml",
            "31_token_range_high_int64_max.toml: pipeline.stages.llm.first_phrase_tokens.TokenRange: Input should be "
            "less than or equal to 10000000",
        ),
        (
            "run",
            "32_toml_4301_digit_int.toml",
            "32_toml_4301_digit_int.toml: cannot parse TOML: an integer longer than 4,300 digits",
        ),
        (
            "council",
            "22_council_file_references_itself.toml",
            "22_council_file_references_itself.toml: members.0.stage: 22_council_file_references_itself.toml: files "
            "reference each other in a cycle:",
        ),
    ],
)
def test_bad_files_exit_2_at_once_naming_file_and_field(
    cases: Path, monkeypatch: pytest.MonkeyPatch, command: str, name: str, expected: str
) -> None:
    monkeypatch.setenv("VB_TEST_SECRET", "not-for-output")
    t0 = time.perf_counter()
    code, output = invoke(command, name, "-f", "json")
    assert time.perf_counter() - t0 < 10  # the YAML bomb used to take 105 s and 3 GB
    assert code == 2, output
    assert expected in output
    assert "not-for-output" not in output


def test_council_cycle_names_the_files_in_order(cases: Path) -> None:
    member = '[[members]]\nname = "m"\np = 0.8\nstage = {{ kind = "council", file = "{}" }}\n'
    (cases / "a.toml").write_text('name = "a"\ntopology = "all"\n' + member.format("b.toml"))
    (cases / "b.toml").write_text('name = "b"\ntopology = "all"\n' + member.format("a.toml"))
    code, output = invoke("council", "a.toml")
    assert code == 2
    a, b = cases / "a.toml", cases / "b.toml"
    assert f"files reference each other in a cycle: {a} -> {b} -> {a}" in output


def test_yaml_merge_keys_work_and_anchor_definitions_are_not_fields(cases: Path) -> None:
    code, output = invoke("run", "26_yaml_merge_key_rejected.yaml", "-f", "json")
    assert code == 0, output
    doc = json.loads(runner.invoke(app, ["run", "26_yaml_merge_key_rejected.yaml", "-f", "json"]).output)
    stage = doc["variants"][0]["stages"][0]
    assert stage["name"] == "a"
    assert stage["p50_ms"] == pytest.approx(5.0)  # value_ms: 5 overrides the merged value_ms: 1
    # a misspelt field stays an error: only anchored entries (definitions for aliases) are dropped
    (cases / "typo.yaml").write_text("name: x\nsampels: 10\npipeline: {kind: fixed, value_ms: 1}\n")
    code, output = invoke("run", "typo.yaml")
    assert code == 2
    assert "typo.yaml: sampels: unknown field 'sampels'" in output


def test_file_references_stay_under_the_allowed_roots(cases: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "s.csv").write_text("ms\n100\n200\n")
    (cases / "ref.toml").write_text(
        f'name = "x"\nsamples = 100\n[pipeline]\nkind = "sequence"\n'
        f'stages.a = {{ kind = "empirical", file = "{outside / "s.csv"}" }}\n'
    )
    code, output = invoke("run", "ref.toml")
    assert code == 2
    assert "is outside the folders a file may reference" in output
    assert "--allow-root" in output
    code, output = invoke("run", "ref.toml", "--allow-root", str(outside), "-f", "json")
    assert code in (0, 1), output
    # a symbolic link inside the folder does not lead outside it
    (cases / "link.csv").symlink_to(outside / "s.csv")
    (cases / "viasym.toml").write_text(
        'name = "x"\nsamples = 100\n[pipeline]\nkind = "sequence"\n'
        'stages.a = { kind = "empirical", file = "link.csv" }\n'
    )
    code, output = invoke("run", "viasym.toml")
    assert code == 2
    assert "'link.csv' is outside" in output


def test_sample_files_never_echo_their_content(cases: Path) -> None:
    (cases / "secret.csv").write_text("TOKEN=hunter2,b\nx,y\n")
    (cases / "bools.json").write_text("[1, true]")
    for stage, message in [
        (
            '{ kind = "empirical", file = "secret.csv", column = "nope" }',
            "secret.csv: no column 'nope' in the header row (2 columns)",
        ),
        (
            '{ kind = "empirical", file = "secret.csv", column = "b" }',
            "secret.csv: line 2, column 2 ('b'): not a number",
        ),
        (
            '{ kind = "empirical", file = "bools.json" }',
            "bools.json: samples_ms[1] (item 2): expected a number of ms, got a boolean",
        ),
    ]:
        (cases / "s.toml").write_text(f'name = "x"\n[pipeline]\nkind = "sequence"\nstages.a = {stage}\n')
        code, output = invoke("run", "s.toml")
        assert code == 2
        assert message in output
        assert "hunter2" not in output


@pytest.mark.parametrize(
    ("name", "content", "column", "expected"),
    [
        ("nan.csv", "latency_ms\n100\n\n200\nnan\n", None, "nan.csv: line 5, column 1: NaN"),
        ("inf.csv", "a,b\n1,2\n3,inf\n", "b", "inf.csv: line 3, column 2 ('b'): infinite (or too large for a float)"),
        ("big.csv", "1e400\n", None, "big.csv: line 1, column 1: infinite (or too large for a float)"),
        ("empty.csv", "a,b\r\n1,2\r\n3,\r\n", "b", "empty.csv: line 3, column 2 ('b'): empty"),
        ("short.csv", "a,b\n1,2\n3\n", "b", "short.csv: line 3, column 2 ('b'): missing (the line has fewer columns)"),
        ("neg.csv", "100\n-5\n", None, "neg.csv: line 2, column 1: negative (-5 ms)"),
        ("neg.json", "[1, 2, -0.5]", None, "neg.json: samples_ms[2] (item 3): negative (-0.5 ms)"),
    ],
)
def test_bad_sample_values_name_file_line_and_column(
    cases: Path, name: str, content: str, column: str | None, expected: str
) -> None:
    """NaN, infinity, empty, short and negative samples: the message names the file, the line (counted as
    an editor does, blank lines included) or JSON item, the column, and what is allowed; exit 2."""
    (cases / name).write_bytes(content.encode())
    col = f', column = "{column}"' if column else ""
    (cases / "s.toml").write_text(
        f'name = "x"\n[pipeline]\nkind = "sequence"\nstages.a = {{ kind = "empirical", file = "{name}"{col} }}\n'
    )
    code, output = invoke("run", "s.toml")
    assert code == 2
    assert (
        f"s.toml: pipeline.stages.a: {expected}; a sample must be a finite number of ms, >= 0 and at most 1,000 hours"
        in output
    )


def test_inline_negative_sample_names_its_item() -> None:
    with pytest.raises(ValueError, match=r"samples_ms\[1\] \(item 2\): negative \(-3 ms\); a sample must be"):
        vb.Empirical(samples_ms=(1.0, -3.0))


def test_variant_description_must_be_text(cases: Path) -> None:
    (cases / "d.yaml").write_text("name: x\npipeline: {kind: fixed, value_ms: 1}\nvariants: {v: {description: [1]}}\n")
    with pytest.raises(vb.ScenarioError, match=r"d\.yaml: variants\.v\.description: must be text, got a list"):
        vb.load_scenario(cases / "d.yaml")


def test_one_model_config_refuses_infinity_everywhere(cases: Path) -> None:
    # the inference stages used to lack allow_inf_nan=False: jitter_cv = inf loaded, then failed later
    (cases / "inf.toml").write_text(
        'name = "x"\n[pipeline]\nkind = "sequence"\n[pipeline.stages.llm]\nkind = "gpu"\nmodel = "llama-3.1-8b"\n'
        'hardware = "h100-sxm"\nprompt_tokens = 500\noutput_tokens = 100\nfirst_phrase_tokens = 8\njitter_cv = inf\n'
    )
    code, output = invoke("run", "inf.toml")
    assert code == 2
    assert "inf.toml: pipeline.stages.llm.jitter_cv: Input should be a finite number" in output


def test_every_data_model_shares_the_one_config() -> None:
    from voicebudget._model import MODEL_CONFIG, DataModel

    vb.Scenario  # noqa: B018 - load the package's models
    import voicebudget.councils
    import voicebudget.inference
    import voicebudget.traces
    import voicebudget.tuning  # noqa: F401

    seen = []
    todo = list(DataModel.__subclasses__())
    while todo:
        cls = todo.pop()
        seen.append(cls)
        todo.extend(cls.__subclasses__())
        for key, value in MODEL_CONFIG.items():
            assert cls.model_config.get(key) == value, (cls.__name__, key)
    assert len(seen) > 30
