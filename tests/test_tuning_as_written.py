"""Issue 25, item 5: what the tuner's output told a user about their own council.

- "concurrency 1 (and 2 tied)" on a council with no self-hosted GPU member: a batch-policy knob that
  changes no member must not be searched or labelled, and the output says why it was left out;
- the tail member flipped between seeds inside the noise: members that share the lead within it are
  a tie (stable across seeds in tests/test_tuning_noise.py);
- the council as the file writes it was never placed against the front (it failed its budget and
  only `voicebudget council` said so): "your council as written" is a row, in the table and in JSON.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from voicebudget._report import LatencyStats, StageReport
from voicebudget.cli import app
from voicebudget.councils import Council, evaluate_council
from voicebudget.tuning import tune_council
from voicebudget.tuning._evaluator import TAIL_Z, tail_ties
from voicebudget.tuning._tune import load_search

runner = CliRunner()
DATA = Path(__file__).parent / "data"


def without_gpu_pool(root: Path, tmp_path: Path) -> Path:
    """councils/tune-intent.toml without its self-hosted H100 pool member: three WSE-3 members."""
    text = (root / "councils" / "tune-intent.toml").read_text()
    start, end = text.index("[[search.pool]]"), text.index("[[members]]")
    path = tmp_path / "tune-wafer.toml"
    path.write_text(text[:start] + text[end:])
    return path


def test_a_batch_knob_that_changes_no_member_is_not_searched_nor_labelled(root: Path, tmp_path: Path) -> None:
    path = without_gpu_pool(root, tmp_path)
    result = tune_council(path, samples=500)
    # 1-4 members of 3 with repetition (34 sets) x topologies, k, rules, cache: 490, not 490 x 3
    assert result.space_size == 490
    assert all("concurrency" not in c.config for c in result.pareto)
    assert result.notes == (
        "concurrency = [1, 16, 64] changes no member (no gpu/wafer member whose call moves by 0.05 ms "
        "or more, or whose price moves, with it): not searched",
    )
    out = runner.invoke(app, ["tune", str(path), "--samples", "500"], env={"COLUMNS": "100"})
    assert out.exit_code == 0, out.stderr
    flat = " ".join(out.stdout.split())
    assert "concurrency 1" not in flat  # what the user saw: "qwen3-235b, all, cache, concurrency 1 (and 2 tied"
    assert "note: concurrency = [1, 16, 64] changes no member" in flat


def test_with_a_gpu_member_the_knob_stays_and_the_note_names_it(root: Path) -> None:
    result = tune_council(root / "councils" / "tune-intent.toml", samples=500)
    assert result.notes == ("concurrency = [1, 16, 64] searched only for councils with llama-8b-h100",)
    assert {c.config.get("concurrency") for c in result.pareto if "llama-8b-h100" in c.config["members"]} >= {1}
    assert all("concurrency" not in c.config for c in result.pareto if "llama-8b-h100" not in c.config["members"])


def stage(name: str, tail_ms: float, se: float) -> StageReport:
    stats = LatencyStats(*(math.nan,) * 6)
    return StageReport(name, stats, tail_ms, 0.0, tail_se_ms=se)


def test_tail_members_within_the_noise_tie_as_a_group() -> None:
    assert TAIL_Z == pytest.approx(2 * math.sqrt(2))
    # 156 vs 120 is 36 ms apart, beyond 2 sqrt(2) x (6 + 6) = 33.9; 129 sits within the noise of both
    copies = [stage("m", 129.0, 6.0), stage("m#2", 156.0, 6.0), stage("m#3", 120.0, 6.0)]
    assert tail_ties(copies) == ("m", "m#2", "m#3")
    assert tail_ties([stage("a", 156.0, 6.0), stage("b", 120.0, 6.0)]) == ()
    assert tail_ties([stage("a", 156.0, 6.0), stage("b", 125.0, 6.0)]) == ("a", "b")
    assert tail_ties([stage("only", 80.0, 1.0)]) == ()


def test_tail_standard_error_matches_the_spread_over_seeds(root: Path) -> None:
    # three copies of one model waiting for all: each carries about a third of the tail turns. Over 30
    # seeds the spread of one copy's tail contribution matches its reported standard error, and the
    # difference of two copies spreads as se_a + se_b (correlation -1), the case TAIL_Z is sized for
    doc, _ = load_search(root / "councils" / "tune-intent.toml")
    member = next(m for m in doc["members"] if m["name"] == "llama-8b")
    copies = [member, {**member, "name": "llama-8b#2"}, {**member, "name": "llama-8b#3"}]
    council = Council.model_validate({**doc, "members": copies}, context={"base_dir": str(root / "councils")})
    values, errors, diffs = [], [], []
    for seed in range(1, 31):
        stages = {s.name: s for s in evaluate_council(council, samples=20_000, seed=seed).report.stages}
        values.append(stages["llama-8b"].tail_ms)
        errors.append(stages["llama-8b"].tail_se_ms)
        diffs.append(stages["llama-8b"].tail_ms - stages["llama-8b#2"].tail_ms)
    mean_se = sum(errors) / len(errors)
    spread = float(np.std(values, ddof=1))
    diff_spread = float(np.std(diffs, ddof=1))
    assert spread == pytest.approx(mean_se, rel=0.35)  # 30 seeds: the spread itself is known to ~13%
    assert diff_spread == pytest.approx(2 * mean_se, rel=0.35)


def test_your_council_as_written_is_placed_against_the_front(root: Path) -> None:
    path = root / "councils" / "tune-intent.toml"
    out = runner.invoke(app, ["tune", str(path), "-f", "json"])
    assert out.exit_code == 0, out.stderr
    doc = json.loads(out.stdout)
    # the figures docs/tuning.md and councils/README.md give for this run
    assert (doc["space_size"], doc["feasible"], doc["shortlisted"], len(doc["pareto"])) == (2092, 710, 44, 15)
    own = doc["as_written"]
    assert own["config"] == {
        "members": ["llama-8b", "gpt-oss-120b", "qwen3-235b"],
        "topology": "all",
        "rule": "majority",
    }
    # the same council `voicebudget council` judges, at the front's 20,000 turns and seed
    council = Council.model_validate(load_search(path)[0], context={"base_dir": str(path.parent)})
    direct = evaluate_council(council, samples=20_000, seed=1)
    assert own["p95_ms"] == pytest.approx(direct.report.total.p95_ms, rel=1e-12)
    assert own["quality"] == pytest.approx(direct.quality.accuracy, rel=1e-12)
    assert own["cost_per_turn"] == pytest.approx(direct.cost_per_turn_usd, rel=1e-12)
    assert own["p95_ms"] == pytest.approx(429.0, abs=0.1)  # over the 400 ms budget, as `council` says
    assert own["within_budget"] is False
    assert own["within_cost"] is False  # $0.000578 > the $0.0005 limit
    assert own["ties"] == []
    assert 1 in own["dominated_by"]  # the pick beats it beyond the noise
    assert len(own["dominated_by"]) == 15
    assert own["verdict"].startswith("over budget (p95 429.0 ms > 400 ms), over the cost limit; beaten beyond")
    assert own["verdict"].endswith("the pick: user time -511 ms, p95 -91.1 ms, -0.000107 $/turn")
    table = runner.invoke(app, ["tune", str(path)], env={"COLUMNS": "80"})
    flat = " ".join(table.stdout.split())
    assert "you 8257±1 429.0±1.4 0.869 0.000578 tie of 3" in flat.replace("│", "").replace("  ", " ")
    assert "your council as written: llama-8b + gpt-oss-120b + qwen3-235b, all, rule majority: over budget" in flat


SINGLE = """
kind = "council"
name = "one member"
topology = "all"
rho = 0.2
[budget]
total_ms = 800
[[members]]
name = "a"
p = 0.8
output_tokens = 10
output_usd_per_mtok = 1.0
stage = { kind = "lognormal", p50_ms = 200, p95_ms = 300 }
[search]
members = { n = [1, 2] }
topology = ["all", "first_k"]
k = [1]
[[search.pool]]
name = "b"
p = 0.85
output_tokens = 10
output_usd_per_mtok = 5.0
stage = { kind = "lognormal", p50_ms = 300, p95_ms = 500 }
"""


def test_a_council_as_written_on_the_front_says_which_row_it_ties(tmp_path: Path) -> None:
    # member a alone is the cheapest and fastest configuration: on the front, and the council as written
    path = tmp_path / "single.toml"
    path.write_text(SINGLE)
    result = tune_council(path, refine_samples=4000)
    own = result.as_written
    assert own is not None
    assert own.candidate.config == {"members": ("a",), "topology": "all"}
    assert own.candidate.within_budget
    row = next(i for i, c in enumerate(result.pareto, 1) if c.config == {"members": ("a",), "topology": "all"})
    assert own.ties == (row,)
    assert own.dominated_by == ()
    assert own.verdict.startswith("within budget (p95 ")
    assert f"ties row #{row} of the front on every objective" in own.verdict
    assert own.candidate.p95_ms == pytest.approx(result.pareto[row - 1].p95_ms, rel=1e-12)  # same draws
