"""Numbers and booleans written as text in a scenario or council file are refused (issue: pydantic's lax
mode read ``samples = "20000"`` as 20000 and ``prefix_caching = "false"`` as False).

The contract, through the CLI: exit 2, the file and the field path in the message, what was expected,
no traceback. The rest of lax mode stays: ``samples = 2e4`` (a float with no fraction) is 20000 turns.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.cli import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent
STAGE = '[pipeline]\nkind = "sequence"\nstages.a = { kind = "fixed", value_ms = 100 }\n'


def refused(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return " ".join(result.stderr.split())


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (
            "s.toml",
            f'name = "x"\nsamples = "20000"\n{STAGE}',
            "samples: '20000' is text; expected a number (write it without quotes)",
        ),
        (
            "s.toml",
            'name = "x"\n[pipeline]\nkind = "sequence"\nstages.a = { kind = "lognormal", p50_ms = 200, '
            'p95_ms = "300" }\n',
            "pipeline.stages.a.p95_ms: '300' is text; expected a number",
        ),
        (
            "s.toml",
            'name = "x"\n[pipeline]\nkind = "sequence"\nstages.a = { kind = "empirical", '
            'samples_ms = [100, 200, "300"] }\n',
            "pipeline.stages.a.samples_ms: item [2]: '300' is text; expected a number",
        ),
        (
            "s.yaml",
            "name: x\nbudget: {total_ms: '800'}\npipeline: {kind: sequence, stages: {a: {kind: fixed, value_ms: 1}}}\n",
            "budget.total_ms: '800' is text; expected a number",
        ),
        (
            "s.yaml",
            "name: x\ntraffic: {prefix_caching: 'true'}\npipeline: {kind: sequence, stages: {a: {kind: fixed, "
            "value_ms: 1}}}\n",
            "traffic.prefix_caching: 'true' is text; expected true or false (without quotes)",
        ),
        (
            "s.yaml",
            "name: x\ntraffic: {prefix_caching: 1}\npipeline: {kind: sequence, stages: {a: {kind: fixed, "
            "value_ms: 1}}}\n",
            "traffic.prefix_caching: 1 is a number; expected true or false",
        ),
    ],
)
def test_scenario_numbers_as_text_exit_2_naming_the_field(tmp_path: Path, name: str, text: str, expected: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert f"{path}: {expected}" in refused("run", str(path))
    with pytest.raises(vb.ScenarioError, match="is text|is a number"):
        vb.load_scenario(path)


def test_council_numbers_as_text_exit_2(tmp_path: Path) -> None:
    text = (ROOT / "councils" / "cascade-8b-70b.toml").read_text()
    assert "\nrho = 0.4 " in text
    path = tmp_path / "c.toml"
    path.write_text(text.replace("\nrho = 0.4 ", '\nrho = "0.4" '))
    assert f"{path}: rho: '0.4' is text; expected a number (write it without quotes)" in refused("council", str(path))


def test_a_whole_float_still_counts_as_an_integer(tmp_path: Path) -> None:
    """Only text and booleans are refused: TOML ``2e4`` (a float, no fraction) is 20,000 turns."""
    path = tmp_path / "s.toml"
    path.write_text(f'name = "x"\nsamples = 2e4\n{STAGE}')
    result = runner.invoke(app, ["run", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["samples"] == 20_000


def test_python_api_refuses_text_too() -> None:
    with pytest.raises(ValidationError, match=r"'5' is text; expected a number"):
        vb.Fixed(value_ms="5")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=r"true is a boolean; expected a number"):
        vb.Fixed(value_ms=True)
    assert vb.Fixed(value_ms=5).value_ms == 5.0
