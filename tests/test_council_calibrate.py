"""Calibration from a team's own logs: rho, wrong_concentration and unsolved from repeated answers."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.cli import app

runner = CliRunner()


def simulate_logs(
    path: Path, *, items: int, members: int, p: float, rho: float, c: float, u: float, k: int, seed: int
) -> None:
    """Answers drawn from the model itself: an item is unsolved with probability u, else has a
    competence theta ~ Beta (mean p/(1-u), correlation rho); a wrong member says the item's top wrong
    answer with probability c, else one of the k - 2 others uniformly."""
    rng = np.random.default_rng(seed)
    ps, s = p / (1 - u), (1 - rho) / rho
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["item", "member", "answer", "correct"])
        for j in range(items):
            theta = 0.0 if rng.random() < u else rng.beta(ps * s, (1 - ps) * s)
            for m in range(members):
                a = 0 if rng.random() < theta else (1 if rng.random() < c else 2 + int(rng.integers(0, k - 2)))
                out.writerow([f"turn-{j}", f"model-{m}", f"intent-{(a + j) % k}", int(a == 0)])


def test_recovers_the_parameters_it_was_simulated_with(tmp_path: Path) -> None:
    path = tmp_path / "logs.csv"
    simulate_logs(path, items=3000, members=5, p=0.6, rho=0.3, c=0.2, u=0.1, k=40, seed=11)
    fit = vb.fit_answer_space(path, answers=40)
    assert fit.items == 3000
    assert fit.rows == 15_000
    assert fit.rho == pytest.approx(0.3, abs=0.06)
    assert fit.unsolved == pytest.approx(0.1, abs=0.04)
    assert fit.wrong_concentration == pytest.approx(0.2, abs=0.03)
    assert all(v == pytest.approx(0.6, abs=0.03) for v in fit.members.values())
    # the fitted fields are a valid council answer space
    acc = vb.plurality_accuracy([0.6] * 5, **fit.council_fields())
    assert 0.6 < acc < 1.0


def write(tmp_path: Path, rows: list[tuple[str, str, str, int]]) -> Path:
    path = tmp_path / "small.csv"
    path.write_text("item,member,answer,correct\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n")
    return path


SMALL = [
    # item 1: wrong x, x, y (1 agreeing pair of 3); item 2: a, b, c (0 of 3); item 3: z, z, z (3 of 3)
    ("1", "m1", "x", 0),
    ("1", "m2", "x", 0),
    ("1", "m3", "y", 0),
    ("1", "m4", "r", 1),
    ("2", "m1", "a", 0),
    ("2", "m2", "b", 0),
    ("2", "m3", "c", 0),
    ("2", "m4", "r", 1),
    ("3", "m1", "z", 0),
    ("3", "m2", "z", 0),
    ("3", "m3", "z", 0),
    ("3", "m4", "r", 1),
]


def test_wrong_concentration_solves_the_pair_agreement_in_closed_form(tmp_path: Path) -> None:
    path = write(tmp_path, SMALL)
    open_fit = vb.fit_answer_space(path, answers="open")
    assert open_fit.wrong_pairs == 9
    assert open_fit.agreement == pytest.approx(4 / 9)
    assert open_fit.wrong_concentration == pytest.approx(2 / 3, abs=1e-12)  # c**2 = 4/9
    k10 = vb.fit_answer_space(path, answers=10)
    c = k10.wrong_concentration
    assert c**2 + (1 - c) ** 2 / 8 == pytest.approx(4 / 9, abs=1e-12)
    assert open_fit.members == {"m1": 0.0, "m2": 0.0, "m3": 0.0, "m4": 1.0}
    assert any("rough" in n for n in open_fit.notes)
    # default answer space: the distinct answers seen (x, y, r, a, b, c, z)
    assert vb.fit_answer_space(path).answers == 7


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("item,member,answer\n1,m,a\n", "missing column(s) ['correct']"),
        ("item,member,answer,correct\n1,m,a,maybe\n", "line 2: correct must be 1/0"),
        ("item,member,answer,correct\n1,m,a,1\n2,m,b,0\n", "no item has two or more answers"),
        ("", "empty file"),
    ],
)
def test_bad_logs_exit_2_naming_the_file_and_line(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(vb.ScenarioError, match=words.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        vb.fit_answer_space(path)
    out = runner.invoke(app, ["council-fit", str(path)])
    assert out.exit_code == 2
    assert str(path) in out.stderr
    assert "Traceback" not in out.stderr


def test_cli_prints_the_fields_and_json_agrees_with_the_library(tmp_path: Path) -> None:
    path = tmp_path / "logs.csv"
    simulate_logs(path, items=400, members=3, p=0.5, rho=0.2, c=0.3, u=0.05, k=12, seed=3)
    fit = vb.fit_answer_space(path, answers=12)
    out = runner.invoke(app, ["council-fit", str(path), "--answers", "12", "-f", "json"])
    assert out.exit_code == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["rho"] == round(fit.rho, 4)
    assert doc["wrong_concentration"] == round(fit.wrong_concentration, 4)
    assert doc["unsolved"] == round(fit.unsolved, 4)
    assert doc["items"] == 400
    table = runner.invoke(app, ["council-fit", str(path), "--answers", "12"])
    assert table.exit_code == 0
    assert f"wrong_concentration = {round(fit.wrong_concentration, 4)}" in table.stdout
    assert runner.invoke(app, ["council-fit", str(path), "--answers", "one"]).exit_code == 2
    assert "council-fit" in runner.invoke(app, ["--help"]).stdout
    assert math.isfinite(doc["agreement"])


def test_an_answer_space_smaller_than_the_answers_seen_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    path.write_text("item,member,answer,correct\nq1,a,x,1\nq1,b,y,0\nq1,c,z,0\nq2,a,x,1\nq2,b,x,1\n")
    with pytest.raises(vb.ScenarioError, match="3 distinct answers, more than the answer space of 2"):
        vb.fit_answer_space(path, answers=2)
    assert vb.fit_answer_space(path, answers=3).answers == 3
    out = CliRunner().invoke(app, ["council-fit", str(path), "--answers", "2"])
    assert out.exit_code == 2
