"""The memory guard (issue 13 item 9, issue 11 item 5, case 33): the estimate counts every array a run
keeps, whatever the stage kinds, and ``run``, ``council`` and ``tune`` refuse what would not fit."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget import _memory
from voicebudget._memory import GUARD_FROM_TURNS, PROBE_TURNS, estimate_peak_bytes, measure_peak_bytes
from voicebudget.cli import app

ROOT = Path(__file__).parent.parent
CASES = Path(__file__).parent / "data" / "reliability"
SCENARIOS = sorted(
    [
        *ROOT.glob("scenarios/*.toml"),
        *ROOT.glob("scenarios/*.yaml"),
        ROOT / "voicebudget" / "data" / "webrtc-cascade.toml",
        CASES / "33_wide16_scenario_guard_underestimate.toml",
    ]
)
COUNCILS = sorted([*ROOT.glob("councils/*.toml"), CASES / "33_wide16_council.toml"])
N = 90_000  # above the probe sizes, below the guard (so the measured run does not probe itself)
runner = CliRunner()


def test_the_measured_size_is_where_the_guard_does_not_probe() -> None:
    assert PROBE_TURNS[1] < N < GUARD_FROM_TURNS


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_estimate_within_25_percent_of_the_measured_peak_scenarios(path: Path) -> None:
    scenario = vb.load_scenario(path, allowed_roots=[ROOT])

    def run(k: int) -> object:
        return vb.simulate(scenario, samples=k, seed=3)

    estimate = estimate_peak_bytes(run, N)
    measured = measure_peak_bytes(run, N)
    assert measured > 8 * N * 2  # at least a few arrays of float64[n]: the measurement sees numpy
    assert estimate == pytest.approx(measured, rel=0.25)


@pytest.mark.parametrize("path", COUNCILS, ids=lambda p: p.name)
def test_estimate_within_25_percent_of_the_measured_peak_councils(path: Path) -> None:
    council = vb.load_council(path)

    def run(k: int) -> object:
        return vb.evaluate_council(council, samples=k, seed=3)

    estimate = estimate_peak_bytes(run, N)
    measured = measure_peak_bytes(run, N)
    assert measured > 8 * N * len(council.members)  # every member's samples are kept
    assert estimate == pytest.approx(measured, rel=0.25)


def test_sixteen_members_cost_sixteen_arrays_per_turn() -> None:
    # the old guard counted combinator nodes (3 here) at 24 bytes each: 72 bytes per turn, 6x too few
    scenario = vb.load_scenario(CASES / "33_wide16_scenario_guard_underestimate.toml")
    per_turn = estimate_peak_bytes(lambda k: vb.simulate(scenario, samples=k), 2 * PROBE_TURNS[1]) / (
        2 * PROBE_TURNS[1]
    )
    assert per_turn > 16 * 2 * 8  # each member's draw and its critical-path part, float64


@pytest.fixture
def half_memory_4_gib(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine with 8 GB (half: 4 GiB), whatever this one has: case 33 needs ~13.5 GiB (and no work
    guard: these test the memory guard)."""
    monkeypatch.setattr(_memory, "available_bytes", lambda: 4 * 2**30)
    monkeypatch.setattr(_memory, "MAX_STAGE_SAMPLES", 10**12)


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    assert "Traceback" not in result.output
    return result.exit_code, " ".join(result.output.split())


@pytest.mark.usefixtures("half_memory_4_gib")
def test_case_33_run_refused_naming_samples() -> None:
    code, out = invoke("run", str(CASES / "33_wide16_scenario_guard_underestimate.toml"), "-n", "50000000")
    assert code == 2
    assert "--samples/-n" in out
    gib = float(out.split("needs ~")[1].split(" GiB")[0])
    # 50M turns x ~290 bytes: 16 members' draws and parts, the council's total, tts, the sum, the report
    assert 12 < gib < 16
    fits = int(out.split("at most ")[1].split(" turns")[0].replace(",", ""))
    assert 12_000_000 < fits < 17_000_000


@pytest.mark.usefixtures("half_memory_4_gib")
def test_case_33_turns_from_the_file_name_the_field(tmp_path: Path) -> None:
    text = (
        (CASES / "33_wide16_scenario_guard_underestimate.toml")
        .read_text()
        .replace("samples = 1000", "samples = 50000000")
    )
    (tmp_path / "s.toml").write_text(text)
    (tmp_path / "33_wide16_council.toml").write_text((CASES / "33_wide16_council.toml").read_text())
    code, out = invoke("run", str(tmp_path / "s.toml"))
    assert code == 2
    assert "s.toml: samples:" in out


def test_council_uses_the_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_memory, "available_bytes", lambda: 2**30)
    code, out = invoke("council", str(CASES / "33_wide16_council.toml"), "-n", "5000000")
    assert code == 2
    assert "--samples/-n" in out
    assert "council 'wide'" in out


def test_tune_uses_the_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_memory, "available_bytes", lambda: 2**28)
    monkeypatch.setattr(_memory, "MAX_STAGE_SAMPLES", 10**12)  # the memory guard, not the work guard
    code, out = invoke("tune", str(ROOT / "councils" / "tune-intent.toml"), "-n", "5000000")
    assert code == 2
    assert "--samples/-n" in out
    assert "members" in out


def test_a_run_that_fits_is_not_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_memory, "available_bytes", lambda: 2**30)
    result = vb.simulate(vb.load_scenario(CASES / "33_wide16_scenario_guard_underestimate.toml"), samples=200_000)
    assert result.reports[0].n_turns == 200_000


def test_member_memo_keeps_small_draws_only() -> None:
    # the tuner's memo of member draws must not keep 16 x 400 MB after a council at 50M turns
    from voicebudget.councils import _latency

    council = vb.load_council(CASES / "33_wide16_council.toml")
    _latency._MEMO.clear()
    vb.evaluate_council(council, samples=40_000, seed=5)
    assert _latency._MEMO == {}
    vb.evaluate_council(council, samples=2_000, seed=5)
    assert len(_latency._MEMO) == 16
