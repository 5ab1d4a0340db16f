"""What `voicebudget tune` says about its header, an empty space, an empty front and its errors (a newcomer
review): "and the cost limit" of a file that sets none; "0 configurations in the space", exit 1, without why;
"no row of the front beats it ..., but it is not feasible" of an empty front; a blank line after an error."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from voicebudget.cli import app

runner = CliRunner()
KNOBS = "members = { n = [1, 2, 3, 4], repeat = true }"


def small_space(root: Path, tmp_path: Path, members: str = "members = { n = [1, 2] }", cost: bool = True) -> Path:
    """councils/tune-intent.toml with a small space: 1 or 2 of its 4 members, no cache, one concurrency."""
    text = (root / "councils" / "tune-intent.toml").read_text()
    assert KNOBS in text
    text = text.replace(KNOBS, members).replace("cache = [false, true]", "cache = [false]")
    text = text.replace("concurrency = [1, 16, 64]", "concurrency = [16]").replace("k = [1, 2, 3]", "k = [1]")
    if not cost:
        text = text.replace("max_cost_per_turn = 0.0005", "")
    path = tmp_path / "tune.toml"
    path.write_text(text)
    return path


def _table(path: Path) -> tuple[int, str]:
    res = runner.invoke(app, ["tune", str(path), "-n", "200"], env={"COLUMNS": "400"})
    assert "Traceback" not in res.output
    return res.exit_code, " ".join(res.stdout.split())


def test_the_header_names_the_cost_limit_only_when_the_file_sets_one(root: Path, tmp_path: Path) -> None:
    code, out = _table(small_space(root, tmp_path, cost=False))
    assert code == 0
    assert "configurations in the space, 36 evaluated, 15 within 400 ms at p95, 0 not valid councils" in out
    assert "cost limit" not in out
    doc = json.loads(runner.invoke(app, ["tune", str(tmp_path / "tune.toml"), "-n", "200", "-f", "json"]).stdout)
    assert doc["max_cost_per_turn"] is None
    code, out = _table(small_space(root, tmp_path))
    assert code == 0
    assert "within 400 ms at p95 and the cost limit ($0.0005/turn), 0 not valid councils" in out
    doc = json.loads(runner.invoke(app, ["tune", str(tmp_path / "tune.toml"), "-n", "200", "-f", "json"]).stdout)
    assert doc["max_cost_per_turn"] == 0.0005


def test_an_empty_space_is_invalid_input_naming_the_bound_that_emptied_it(root: Path, tmp_path: Path) -> None:
    # was "0 configurations in the space ... pick: no valid configuration in the space", exit 1 ("over budget"),
    # and no why: bounds that contradict each other are a mistake in the file, exit 2
    path = small_space(root, tmp_path, "members = { n = [9], repeat = true }")
    res = runner.invoke(app, ["tune", str(path), "-n", "200"])
    assert res.exit_code == 2
    said = "every council size of search.members.n is ruled out: 9 is above search.constraints.max_members (4)"
    assert res.stderr == f"error: {path}: search: declares an empty search space: {said}\n"
    path = small_space(root, tmp_path, "members = { n = [5, 9] }")
    path.write_text(path.read_text().replace("max_members = 4", "max_members = 6"))
    res = runner.invoke(app, ["tune", str(path), "-n", "200", "-f", "json"], env={"COLUMNS": "400"})
    assert res.exit_code == 2
    assert (
        "declares an empty search space: every council size of search.members.n is ruled out: 9 is above "
        "search.constraints.max_members (6); 5 is more than the 4 members of the pool (the council's and "
        "search.pool's), and repeat is false"
    ) in " ".join(res.stderr.split())
    assert res.stdout == ""


def test_a_council_as_written_before_an_empty_front_is_plainly_not_feasible(root: Path, tmp_path: Path) -> None:
    # was "no row of the front beats it beyond the noise, but it is not feasible", with no row on the front
    res = runner.invoke(app, ["tune", str(small_space(root, tmp_path)), "-n", "200", "--budget-ms", "60"])
    assert res.exit_code == 1
    out = " ".join(res.stdout.split())
    assert "majority: over budget (p95 " in out
    assert "not feasible, as it is over budget" in out
    assert "the front is empty, so there is nothing to place it against;" in out
    assert "beats it" not in out


def test_an_error_is_one_line_on_stderr_without_a_blank_line_after_it(root: Path, tmp_path: Path) -> None:
    path = small_space(root, tmp_path)
    path.write_text(path.read_text().replace("max_members = 4", "max_members = 0"))
    res = runner.invoke(app, ["tune", str(path), "-n", "200"])
    assert res.exit_code == 2
    assert res.stderr == f"error: {path}: search.constraints.max_members: Input should be greater than or equal to 1\n"
