"""What `run` prints about a scenario a new user wrote (issue 25, items 3 and 9): what a modelled stage's
`concurrency` means, the cost per turn kept apart from the next variant and in the side-by-side table, and
markdown that folds long reports."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from voicebudget.cli import app

ROOT = Path(__file__).resolve().parents[1]
SUPPORT = ROOT / "scenarios" / "support-line.toml"
runner = CliRunner()


def _run(*args: str) -> str:
    res = runner.invoke(app, ["run", str(SUPPORT), "-n", "2000", *args], env={"COLUMNS": "80"})
    assert res.exit_code == 1, res.output  # most variants are over budget
    return res.stdout


def test_run_says_concurrency_is_always_in_flight_and_capacity_says_at_most() -> None:
    # the same field, two meanings: run holds C requests in flight on every turn, capacity at most C
    out = " ".join(_run().split())
    assert (
        "llm: concurrency 64: always 64 requests in flight (closed loop; capacity reads it as a batch cap: at most 64)"
        in out
    )
    assert "llm: concurrency 8: always 8 requests in flight" in out
    doc = json.loads(_run("-f", "json"))
    by = {v["name"]: v for v in doc["variants"]}
    assert [row["concurrency"] for row in by["h100-fast-mode"]["concurrency"]] == [8]
    assert by["wafer-scale-api"]["concurrency"] == []  # an api stage has no concurrency of its own
    cap = runner.invoke(app, ["capacity", str(SUPPORT), "-n", "500"], env={"COLUMNS": "80"})
    assert "batch cap (a gpu/wafer stage's concurrency): at most that many requests in flight" in " ".join(
        cap.stdout.split()
    )


def test_cost_line_is_its_own_paragraph() -> None:
    # "cost: $0.002325 per turn (list prices of its api stages)" ran into the next variant's description
    lines = _run().splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("cost: $0.002325 per turn"))
    assert lines[i + 1] == ""
    assert lines[i + 2].startswith("A hosted flash-lite class API")


def test_side_by_side_table_has_a_cost_column_within_80_columns() -> None:
    out = _run()
    table = out[out.index("variants side by side") :].splitlines()
    assert "$/turn" in table[2]
    row = {line.split()[0]: line.split() for line in table if line.strip()}
    # wafer-scale-api: the call's mean prompt (2,650 tokens) x $0.85 + 60 output tokens x $1.20, per million
    assert row["wafer-scale-api"][-2:] == ["$0.0023", "FAIL"]
    assert row["hosted-flash-lite"][-2:] == ["$0.00029", "FAIL"]
    assert row["baseline"][-2:] == ["-", "FAIL"]  # a gpu stage: priced per chip-hour, see capacity
    assert max(len(line) for line in out.splitlines()) <= 80


def test_markdown_folds_each_variants_stages_under_details() -> None:
    md = _run("-f", "markdown")
    assert md.count("<details><summary>stages of ") == md.count("</details>") == 5
    assert "| $/turn (list prices) |" in md.splitlines()[4]
    row = next(line for line in md.splitlines() if line.startswith("| wafer-scale-api |"))
    assert row.endswith("| $0.0023 | FAIL |")


def test_markdown_of_a_single_pipeline_is_not_folded(tmp_path: Path) -> None:
    path = tmp_path / "one.toml"
    path.write_text(
        'name = "one"\n[pipeline]\nkind = "sequence"\nstages = { llm = { kind = "fixed", value_ms = 300 } }\n'
    )
    md = runner.invoke(app, ["run", str(path), "-n", "500", "-f", "markdown"])
    assert md.exit_code == 0, md.output
    assert "<details>" not in md.stdout
    assert "| **total** |" in md.stdout or "| **voice-to-voice** |" in md.stdout
