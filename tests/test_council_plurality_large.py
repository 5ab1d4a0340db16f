"""Plurality past 200 members: the 256-sample councils of published self-consistency results.

Issue 25, item 8: a council of 256 samples was refused (``plurality is enumerated exactly up to
200``). The 200 limit was where the exact counting's polynomial coefficients (``~ 1/s!``) started to
underflow, and it already failed at 200 members over 40 uniform answers. Now: the counting is scaled
(exact at any size for yes/no, open answers and ``K <= 4``), and ``K >= 5`` past 200 members uses
Levin's representation with an Edgeworth expansion, pinned here against the exact counting.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from voicebudget import plurality_accuracy
from voicebudget.cli import app
from voicebudget.councils import Council, evaluate_council
from voicebudget.councils._plurality import EXACT_MEMBERS, MAX_MEMBERS, _exact_win_table, win_given_right
from voicebudget.councils._plurality_large import win_given_right_large
from voicebudget.councils._quality import correct_count_pmf

runner = CliRunner()


def open_never_agree(p: float, n: int) -> float:
    """Independent members, wrong answers all distinct: right with 2+ votes, 1/n with exactly one."""
    return 1.0 - (1 - p) ** n - n * p * (1 - p) ** (n - 1) * (1 - 1 / n)


def test_a_256_sample_council_is_scored_not_refused() -> None:
    # what the user saw: ValueError "plurality is enumerated exactly up to 200 members, got 256"
    got = plurality_accuracy([0.01] * 256, answers="open", wrong_concentration=0.0)
    assert got == pytest.approx(open_never_agree(0.01, 256), abs=1e-12)  # 0.7271
    assert got == pytest.approx(0.7271, abs=5e-5)
    with pytest.raises(ValueError, match="up to 1000 members, got 1001"):
        plurality_accuracy([0.5] * (MAX_MEMBERS + 1), answers="open", wrong_concentration=0.1)


@pytest.mark.parametrize(("n", "answers"), [(200, 40), (256, 5), (256, 40), (400, 10), (600, 4)])
def test_members_at_chance_over_uniform_answers_are_right_one_time_in_k(n: int, answers: int) -> None:
    # the right answer is one option like any other: exactly 1/K whatever N. At 200 members over
    # 40 answers the unscaled counting gave V[14] = 0.057 for 0.991, and this total was off.
    acc = plurality_accuracy([1 / answers] * n, answers=answers, wrong_concentration=1 / (answers - 1))
    exact = n <= EXACT_MEMBERS or answers <= 4
    assert acc == pytest.approx(1 / answers, abs=1e-9 if exact else 3e-4)


def test_the_exact_counting_no_longer_underflows_at_200_members() -> None:
    # V[14] at 200 members over 40 uniform answers, by Monte Carlo over the 186 wrong votes
    rng = np.random.default_rng(5)
    n, r, m = 200, 14, 38
    cells = rng.multinomial(n - r, np.full(m + 1, 1 / (m + 1)), size=200_000)
    top = cells.max(axis=1)
    win = np.where(top <= r, 1.0 / (1 + (cells == r).sum(axis=1)), 0.0)
    v = win_given_right(n, m, 1 / (m + 1))[r]
    assert v == pytest.approx(win.mean(), abs=4 * win.std() / math.sqrt(win.size) + 1e-6)
    assert v == pytest.approx(0.991, abs=1e-3)


GRID = [(m, c) for m in (3, 5, 8, 38, 98) for c in sorted({1 / (m + 1), 0.3, 0.6, 0.9})]


@pytest.mark.parametrize("n", [150, 175, 200, 256, 400])
def test_the_large_council_approximation_against_the_exact_counting(n: int) -> None:
    """The error stated in voicebudget/councils/_plurality_large.py and docs/councils.md."""
    worst_v = worst_acc = 0.0
    pmfs = [correct_count_pmf([p] * n, rho) for p in (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.8) for rho in (0.0, 0.1, 0.5)]
    for m, c in GRID:
        exact, approx = _exact_win_table(n, m, c), win_given_right_large(n, m, c)
        worst_v = max(worst_v, float(np.abs(exact - approx).max()))
        worst_acc = max(worst_acc, max(abs(float(pmf @ (exact - approx))) for pmf in pmfs))
    assert worst_v < 3e-3
    assert worst_acc < 2.5e-4


def test_accuracy_is_continuous_across_the_switch() -> None:
    kw = {"rho": 0.2, "answers": 40, "wrong_concentration": 0.1}
    at, past = plurality_accuracy([0.06] * 200, **kw), plurality_accuracy([0.06] * 201, **kw)  # type: ignore[arg-type]
    assert abs(past - at) < 2e-3  # one more member moves the exact value by ~1e-3 here
    exact_201 = float(correct_count_pmf([0.06] * 201, 0.2) @ _exact_win_table(201, 38, 0.1))
    assert past == pytest.approx(exact_201, abs=2.5e-4)


def test_a_256_member_council_file_runs_in_the_cli(tmp_path: Path) -> None:
    lines = ['topology = "all"', 'answers = "open"', "wrong_concentration = 0.05", "rho = 0.4", ""]
    for i in range(256):
        name = "m" if i == 0 else f"m#{i + 1}"
        lines += ["[[members]]", f'name = "{name}"', "p = 0.3", 'stage = { kind = "fixed", value_ms = 120 }', ""]
    path = tmp_path / "sc256.toml"
    path.write_text("\n".join(lines))
    out = runner.invoke(app, ["council", str(path), "-f", "json", "-n", "500"])
    assert out.exit_code in (0, 1), out.output
    doc = json.loads(out.stdout)
    expected = plurality_accuracy([0.3] * 256, rho=0.4, answers="open", wrong_concentration=0.05)
    assert doc["quality"]["accuracy"] == pytest.approx(expected, abs=1e-9)
    council = Council.model_validate_json(
        json.dumps(
            {
                "topology": "all",
                "answers": 40,
                "wrong_concentration": 0.2,
                "members": [
                    {"name": f"x{i}", "p": 0.2, "stage": {"kind": "fixed", "value_ms": 50}} for i in range(256)
                ],
            }
        )
    )
    res = evaluate_council(council, samples=200)
    assert res.quality.accuracy == pytest.approx(
        plurality_accuracy([0.2] * 256, answers=40, wrong_concentration=0.2), abs=1e-12
    )


def test_first_k_of_a_large_council_reads_the_right_members() -> None:
    # the subsets of first finishers were int64 bit masks: with member 63 in, the mask went negative
    # and its sign bit read every member past 63 as in (here the 10 slow ones, p = 0): 0.6279
    doc = {"topology": "first_k", "k": 70, "answers": "open", "wrong_concentration": 0.0}
    fast = [{"name": f"f{i}", "p": 0.03, "stage": {"kind": "fixed", "value_ms": 10}} for i in range(70)]
    slow = [{"name": f"s{i}", "p": 0.0, "stage": {"kind": "fixed", "value_ms": 500}} for i in range(10)]
    res = evaluate_council(Council.model_validate({**doc, "members": fast + slow}), samples=50)
    assert res.quality.accuracy == pytest.approx(open_never_agree(0.03, 70), abs=1e-12)  # the 70 fast ones: 0.634
