"""The library names parameters, the CLI owns flag names: a Python caller reads ``budget_ms``, a CLI user
reads ``--budget-ms`` for the same error, and a rule holds for both (STYLE.md, "Between modules, round 2")."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget._errors import ScenarioError, param
from voicebudget.cli import app, option_flags
from voicebudget.cli._output import cli_message, naming_options

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "voicebudget"
runner = CliRunner()
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]+")


def _error_texts(tree: ast.AST) -> list[tuple[int, str]]:
    """The string pieces of every exception built in a module: ``raise X(...)`` and ``...Error(...)``."""
    calls = {id(n.exc): n.exc for n in ast.walk(tree) if isinstance(n, ast.Raise) and isinstance(n.exc, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name.endswith(("Error", "Exceeded")):
                calls[id(node)] = node
    return sorted(
        (part.lineno, part.value)
        for call in calls.values()
        for part in ast.walk(call)
        if isinstance(part, ast.Constant) and isinstance(part.value, str)
    )


def test_no_library_error_writes_a_command_line_flag() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {text!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if "cli" not in path.relative_to(PACKAGE).parts
        for line, text in _error_texts(ast.parse(path.read_text(encoding="utf-8")))
        if FLAG.search(text)
    ]
    assert offenders == [], "name the parameter with _errors.param(...); the CLI shows its flag"


def test_the_scanner_sees_a_flag_in_an_error() -> None:
    tree = ast.parse('raise ScenarioError(f"x {y}: give --force", origin="--plot")')
    assert sorted(text for _, text in _error_texts(tree) if FLAG.search(text)) == ["--plot", ": give --force"]


def test_a_marked_parameter_reads_as_python_or_as_the_cli_spells_it() -> None:
    err = ScenarioError(f"exists; give {param('overwrite', 'overwrite=True')} to replace it", origin="a.toml")
    assert str(err) == "a.toml: exists; give overwrite=True to replace it"
    assert err.detail == "exists; give overwrite=True to replace it"
    assert err.naming(lambda name: {"overwrite": "--force"}[name]) == "a.toml: exists; give --force to replace it"
    whole = ScenarioError("at most 1,000 turns fit", origin=param("samples"))
    assert (whole.parameter, whole.origin, str(whole)) == ("samples", "samples", "samples: at most 1,000 turns fit")
    assert whole.naming(str.upper, spell_origin=lambda name: "--samples/-n") == "--samples/-n: at most 1,000 turns fit"


def test_the_flags_come_from_typers_declarations() -> None:
    assert option_flags("run")["samples"] == ("--samples", "-n")
    assert option_flags("run")["allowed_roots"] == ("--allow-root",)
    assert option_flags("capacity")["usd_per_chip_hour"] == ("--price-per-chip-hour",)
    assert option_flags("check")["format_in"] == ("--format-in",)
    with naming_options(lambda: option_flags("capacity")):
        err = ScenarioError(f"applies only with {param('hardware')}", origin=param("batch_caps"))
        assert cli_message(err) == "--batch-cap: applies only with --hardware"
    with naming_options(lambda: option_flags("check")):
        err = ScenarioError(f"give it with {param('fmt', 'fmt=...')}", origin="t.log")
        assert cli_message(err, {"fmt": "format_in"}) == "t.log: give it with --format-in"
        unknown = ScenarioError(f"see {param('calibration')}", origin="t.log")
        assert cli_message(unknown) == "t.log: see calibration"  # no option sets it: the parameter stays


def test_a_budget_override_names_budget_ms_in_python_and_the_flag_in_the_cli() -> None:
    scenario = ROOT / "scenarios" / "webrtc-cascade.toml"
    with pytest.raises(ScenarioError, match=r"^budget_ms: must be a finite number > 0 ms, got -1\.0"):
        vb.run_scenarios([scenario], samples=100, budget_ms=-1.0)
    result = runner.invoke(app, ["run", str(scenario), "-n", "100", "--budget-ms", "-1"])
    assert result.exit_code == 2
    assert "error: --budget-ms: must be a finite number > 0 ms, got -1.0" in " ".join(result.output.split())


def test_a_dask_address_names_scheduler_in_python() -> None:
    from voicebudget.tuning._executor import check_scheduler_address

    with pytest.raises(ScenarioError, match=r"^scheduler: scheme tls:// is not supported"):
        check_scheduler_address("tls://10.0.0.1:8786")


def test_capacity_options_name_the_parameters_in_python() -> None:
    from voicebudget.capacity import plan_capacity_file

    support = ROOT / "scenarios" / "support-line.toml"
    with pytest.raises(ScenarioError, match=r"^hardware/model: give both hardware and model \(or neither"):
        plan_capacity_file(support, hardware="h100-sxm", samples=500)
    with pytest.raises(ScenarioError, match=r"^chips, batch_caps: apply only with hardware and model"):
        plan_capacity_file(support, chips=2, batch_caps=(2, 8), samples=500)


def test_memory_utilization_on_an_sram_chip_is_refused_in_python_as_in_the_cli() -> None:
    # The rule lived only in `voicebudget infer`: estimate_inference ignored the share without a word (Llama-3.1-70B
    # kept 4 wafers at 0.1). Python and the CLI now give the same answer.
    dep = vb.Deployment(memory_utilization=0.1)
    with pytest.raises(vb.ModelError, match=r"^Deployment\.memory_utilization applies to HBM chips; .*\(0\.9\)"):
        vb.estimate_inference("llama-3.1-70b", "wse-3", dep)
    assert vb.estimate_inference("llama-3.1-70b", "wse-3").chips == 4  # without it: sized by usable_sram_fraction
    assert vb.estimate_inference("llama-3.1-70b", "h100-sxm", dep).chips > 0  # an HBM chip takes it
    result = runner.invoke(app, ["infer", "-m", "llama-3.1-70b", "-H", "wse-3", "--memory-utilization", "0.1"])
    assert result.exit_code == 2
    assert "error: --memory-utilization applies to HBM chips" in " ".join(result.output.split())


def test_an_unusable_trace_names_include_anomalies_for_python_and_the_flag_in_the_cli_json() -> None:
    import json

    from voicebudget.traces import check_traces

    trace = ROOT / "tests" / "data" / "traces" / "cases" / "livekit-missing-tts" / "metrics.jsonl"
    with pytest.raises(ScenarioError, match=r"no usable turn to check: .*; include flagged turns with include_anoma"):
        check_traces([trace], vb.Budget())
    result = runner.invoke(app, ["check", str(trace), "-f", "json"])
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error.endswith("; include flagged turns with --include-anomalies")
    assert error.startswith(str(trace))
