"""A simulated percentile on a handful of turns warns as a measured one does (``check``'s rule,
voicebudget._tail): ``run -n 5``'s p95 is the slowest of five draws, its tail driver that turn's."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from voicebudget.cli import app

runner = CliRunner()
WARNING = "a p95 of {n} turns rests on the slowest {k} (a p95 wants 60+); simulate more: --samples/-n"


@pytest.mark.parametrize(
    ("argv", "n", "k"),
    [
        (["run", "-n", "5"], 5, "turn"),
        (["council", "councils/intent-wafer-all.toml", "-n", "5"], 5, "turn"),
        (["tune", "councils/tune-intent.toml", "-n", "3"], 30, "2 turns"),  # the front is re-run at 10x
    ],
)
def test_a_thin_simulated_tail_warns_on_the_table(argv: list[str], n: int, k: str) -> None:
    res = runner.invoke(app, argv)
    assert res.exit_code in (0, 1), res.output
    assert WARNING.format(n=n, k=k) in " ".join(res.stderr.split())


def test_enough_turns_or_json_output_give_no_warning() -> None:
    res = runner.invoke(app, ["run", "-n", "60"])  # three turns beyond the p95: informed
    assert "rests on" not in res.stderr
    res = runner.invoke(app, ["run", "-n", "5", "-f", "json"])  # JSON carries n_turns for its reader
    assert "rests on" not in res.stderr
    assert json.loads(res.stdout)["variants"][0]["n_turns"] == 5
