"""The endpointing frontier (issue 28, item 4) against its closed form: exponential mid-turn pauses of
mean mu, Poisson(lambda) pauses per turn and a fixed silence timeout s cut off
1 - exp(-lambda exp(-s / mu)) of the turns and add s at every turn end."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from voicebudget._distributions import Fixed, Mixture
from voicebudget.audio._frontier import PauseModel, at_pauses, endpointing_frontier, load_pauses
from voicebudget.cli import app

runner = CliRunner()
MU_MS, LAMBDA = 600.0, 1.5


def closed_form(s_ms: np.ndarray | float) -> np.ndarray | float:
    return 1.0 - np.exp(-LAMBDA * np.exp(-np.asarray(s_ms) / MU_MS))


@pytest.fixture(scope="module")
def pauses() -> PauseModel:
    return PauseModel(np.random.default_rng(7).exponential(MU_MS, 400_000), LAMBDA)


def test_fixed_timeout_frontier_matches_the_closed_form(pauses: PauseModel) -> None:
    f = endpointing_frontier({"stop_secs 0.5": Fixed(value_ms=500.0)}, pauses, samples=200_000, seed=3)
    # the survival of 400,000 draws: standard error below 0.001 everywhere
    assert np.max(np.abs(f.cut_share - closed_form(f.timeouts_ms))) < 0.004
    (point,) = f.settings
    assert point.added_p95_ms == 500.0  # a fixed timeout adds exactly itself at every turn end
    assert point.cut_share == pytest.approx(closed_form(500.0), abs=0.005)  # Monte Carlo over 200,000 turns
    # the shortest timeout cutting off at most 5%: s = -mu ln(-ln(0.95) / lambda), on the 25 ms grid
    exact = -MU_MS * math.log(-math.log(0.95) / LAMBDA)
    assert f.timeout_for(0.05) == pytest.approx(exact, abs=25.0)


def test_observed_pause_counts_replace_poisson(pauses: PauseModel) -> None:
    two = PauseModel(pauses.pauses_ms, counts=np.full(100, 2, dtype=np.int64))
    f = endpointing_frontier({}, two)
    s = np.exp(-f.timeouts_ms / MU_MS)
    assert np.max(np.abs(f.cut_share - (1.0 - (1.0 - s) ** 2))) < 0.004  # every turn has two pauses


def test_turn_detector_waits_differently_at_pauses() -> None:
    detector = Mixture(weights=(0.85, 0.15), components=(Fixed(value_ms=300.0), Fixed(value_ms=2500.0)))
    rng = np.random.default_rng(1)
    pm = PauseModel(rng.exponential(MU_MS, 200_000), 1.0)
    same = endpointing_frontier({"d": detector}, pm, samples=200_000).settings[0]
    told = endpointing_frontier({"d": detector}, pm, samples=200_000, false_end_rate=0.1).settings[0]
    assert same.added_p95_ms == 2500.0  # 15% of turn ends wait max_delay: the p95 is max_delay
    # one pause per turn (Poisson 1): cut = 1 - exp(-P(pause > wait)), wait 300 w.p. f, else 2500
    for point, f in ((same, 0.85), (told, 0.1)):
        per_pause = f * math.exp(-300.0 / MU_MS) + (1 - f) * math.exp(-2500.0 / MU_MS)
        assert point.cut_share == pytest.approx(1.0 - math.exp(-per_pause), abs=0.005)
    assert at_pauses(detector, 0.1).weights == pytest.approx((0.1, 0.9))


def test_cli_prints_plots_and_marks_the_scenario(root: Path, tmp_path: Path) -> None:
    pauses = tmp_path / "pauses.toml"
    pauses.write_text('source = "test: exponential"\np95_ms = %r\npauses_per_turn = 1.5\n' % (MU_MS * math.log(20)))
    scenario = root / "scenarios" / "semantic-turn-detector.yaml"
    out = runner.invoke(app, ["endpointing", str(scenario), "--pauses", str(pauses), "--format", "json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    grid = np.array([p["timeout_ms"] for p in doc["frontier"]])
    cut = np.array([p["cut_share"] for p in doc["frontier"]])
    assert np.max(np.abs(cut - closed_form(grid))) < 0.005  # drawn from the exponential through the p95
    settings = {p["label"]: p for p in doc["settings"]}
    assert set(settings) == {"baseline", "max-delay-1s", "vad-only"}
    assert settings["vad-only"]["added_ms"] == 550.0  # Silero min_silence_duration 0.55 s: on the curve
    assert settings["vad-only"]["cut_share"] == pytest.approx(closed_form(550.0), abs=0.005)
    assert settings["baseline"]["added_ms"] == pytest.approx(2500.0, abs=60.0)
    png = tmp_path / "frontier.png"
    table = runner.invoke(app, ["endpointing", str(scenario), "--pauses", str(pauses), "--plot", str(png)])
    assert table.exit_code == 0, table.output
    assert "turns cut off" in table.output
    assert png.stat().st_size > 10_000
    # docs/audio.md's picture, by the command it quotes
    docs_png = tmp_path / "docs-frontier.png"
    args = ["endpointing", str(scenario), "--pauses", str(root / "docs" / "examples" / "pauses-call-center.toml"),
            "--false-end-rate", "0.1", "--plot", str(docs_png)]  # fmt: skip
    assert runner.invoke(app, args).exit_code == 0
    if os.environ.get("VOICEBUDGET_DOCS_IMAGES") == "1":
        shutil.copyfile(docs_png, root / "docs" / "images" / "endpointing-frontier.png")


def test_published_pause_files(root: Path) -> None:
    # livekit/agents PR 3640: mid-turn pause p95 2.5 s (call centre) and 1.4 s (two-channel conversations)
    for name, p95 in (("pauses-call-center.toml", 2500.0), ("pauses-conversation.toml", 1400.0)):
        pm = load_pauses(root / "docs" / "examples" / name)
        assert float(np.percentile(pm.pauses_ms, 95)) == pytest.approx(p95, rel=0.02)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("pauses_per_turn = 1\n", "give exactly one of samples_ms, p95_ms, pauses"),
        ("p95_ms = -5\n", "p95_ms"),
        ("p95_ms = 100\npauses_per_turn = 0\n", "pauses_per_turn"),
    ],
)
def test_bad_pause_files_exit_2(root: Path, tmp_path: Path, text: str, message: str) -> None:
    pauses = tmp_path / "p.toml"
    pauses.write_text(text)
    out = runner.invoke(app, ["endpointing", str(root / "scenarios/webrtc-cascade.toml"), "--pauses", str(pauses)])
    assert out.exit_code == 2, out.output
    assert message in out.output
    assert "Traceback" not in out.output


def test_a_frontier_from_few_measured_pauses_says_so(root: Path, tmp_path: Path) -> None:
    # one mid-turn pause in a recording or a file makes a frontier of steps of 100%: flagged, not hidden
    pauses = tmp_path / "pauses.csv"
    pauses.write_text("pause_ms\n400\n")
    scenario = root / "scenarios" / "semantic-turn-detector.yaml"
    out = runner.invoke(app, ["endpointing", str(scenario), "--pauses", str(pauses), "--format", "json"])
    assert out.exit_code == 0, out.output
    message = (
        "the frontier rests on 1 measured pause: its cut-off shares move in steps of 100% (a share near 5% wants 20+)"
    )
    assert json.loads(out.stdout)["pauses"]["warning"] == message
    assert out.stderr.strip() == f"warning: {message}"
    many = tmp_path / "many.csv"
    many.write_text("pause_ms\n" + "\n".join(str(100 + 10 * i) for i in range(20)) + "\n")
    out = runner.invoke(app, ["endpointing", str(scenario), "--pauses", str(many), "--format", "json"])
    assert json.loads(out.stdout)["pauses"]["warning"] is None
    assert not out.stderr
