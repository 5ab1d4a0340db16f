"""Hostile input, round 3, second pass (issue 22): what an audit of the first pass still found, each kind
as the smallest input that showed it. The first pass's cases are in tests/test_hostile_inputs.py; the
fuzzer of these kinds is tests/test_fuzz_kinds.py (small budget) and benchmarks/fuzz_kinds.py (large)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cli_calls import cli, one_error_line, runner
from hfconfig_files import write_config
from time_limit import time_limit

import voicebudget as vb
from voicebudget._io import load_toml, load_yaml, parse_json
from voicebudget.cli import app

ROOT = Path(__file__).resolve().parent.parent
HUGE = 10**309  # the smallest power of ten beyond the float range: float(HUGE) raises OverflowError


# --- 1. integers beyond the float range: read as inf, as 1e400 is, in every file format ---------------------


@pytest.mark.parametrize(
    "parse",
    [
        lambda text: parse_json(f'{{"a": [{text}]}}', origin="x.json")["a"][0],
        lambda text: load_toml(f"a = [{text}]", origin="x.toml")["a"][0],
        lambda text: load_yaml(f"a: [{text}]", origin="x.yaml")["a"][0],
    ],
    ids=["json", "toml", "yaml"],
)
def test_an_integer_beyond_the_float_range_reads_as_inf(parse: object) -> None:
    assert parse(str(HUGE)) == float("inf")  # type: ignore[operator]
    assert parse(str(-HUGE)) == float("-inf")  # type: ignore[operator]
    assert parse(str(10**308)) == 10**308  # type: ignore[operator]  # within the range: the integer itself


def test_hexadecimal_integers_beyond_the_float_range_read_as_inf() -> None:
    big = "0x1" + "0" * 256  # 2^1024: 257 hex digits, no run of 309 decimal ones
    assert load_toml(f"a = {big}", origin="x.toml")["a"] == float("inf")
    assert load_yaml(f"a: {big}", origin="x.yaml")["a"] == float("inf")
    assert load_toml(f"a = 0x{'f' * 255}", origin="x.toml")["a"] == 16**255 - 1  # within the range


def test_a_livekit_duration_of_310_digits_is_flagged_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "lk.jsonl"
    path.write_text(f'{{"type":"llm_metrics","ttft":{HUGE},"speech_id":"s"}}\n')  # exit 3: OverflowError
    table = vb.read_trace(path)
    assert ("ttft", "not a finite number") in {(a.field, a.reason) for a in table.anomalies}
    for command in ("check", "fit"):
        code, output = cli(command, path, *(["-o", tmp_path / "f.toml"] if command == "fit" else []))
        assert code == 2, output
        assert "not a finite number" in output


def test_otlp_double_and_int_values_of_310_digits_are_flagged(tmp_path: Path) -> None:
    span = {
        "traceId": "t",
        "spanId": "s0",
        "name": "turn",
        "startTimeUnixNano": "0",
        "endTimeUnixNano": "5",
        "attributes": [{"key": "turn.user_bot_latency_seconds", "value": {"doubleValue": HUGE}}],
    }
    for value in ({"doubleValue": HUGE}, {"intValue": HUGE}, {"intValue": str(HUGE)}):
        span["attributes"][0]["value"] = value  # type: ignore[index]
        path = tmp_path / "o.json"
        path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
        table = vb.read_trace(path)
        assert len(table.turns) == 1, value
        assert table.turns[0].flagged, value
        assert any("finite" in a.reason for a in table.anomalies), table.anomalies


def test_a_chat_history_latency_of_310_digits_is_flagged(tmp_path: Path) -> None:
    metrics = {"started_speaking_at": 103.5, "llm_node_ttft": 0.52, "tts_node_ttfb": 0.18, "e2e_latency": HUGE}
    user = {"started_speaking_at": 100.0, "stopped_speaking_at": 102.0, "end_of_turn_delay": 0.6}
    items = [
        {"id": "u", "type": "message", "role": "user", "content": ["q"], "metrics": user},
        {"id": "a", "type": "message", "role": "assistant", "content": ["a"], "metrics": metrics},
    ]
    path = tmp_path / "history.json"
    path.write_text(json.dumps({"items": items}))
    table = vb.read_trace(path)
    assert ("e2e_latency", "not a finite number") in {(a.field, a.reason) for a in table.anomalies}


@pytest.mark.parametrize("key", ["num_hidden_layers", "hidden_size", "vocab_size", "num_local_experts"])
def test_a_model_config_count_of_310_digits_exits_2_naming_it(tmp_path: Path, key: str) -> None:
    cfg = {"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 14336}
    cfg |= {"vocab_size": 128256, "num_experts_per_tok": 2, "num_local_experts": 8, key: HUGE}
    path = write_config(tmp_path, "m", cfg)
    code, output = cli("infer", "--model-config", path, "-H", "h100-sxm")
    assert code == 2
    assert one_error_line(output).startswith(f"error: {path}: {key}: ")


@pytest.mark.parametrize("suffix", [".toml", ".yaml"])
def test_samples_of_310_digits_in_a_scenario_exits_2_naming_it(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"s{suffix}"
    if suffix == ".toml":
        path.write_text(
            f'name = "n"\nsamples = {HUGE}\n[pipeline]\nkind = "sequence"\n'
            'stages.x = { kind = "fixed", value_ms = 1 }\n'
        )
    else:
        path.write_text(
            f"name: n\nsamples: {HUGE}\npipeline: {{kind: sequence, stages: {{x: {{kind: fixed, value_ms: 1}}}}}}\n"
        )
    code, output = cli("run", path)
    assert code == 2
    assert one_error_line(output) == f"error: {path}: samples: Input should be a finite number"


def test_samples_of_310_digits_in_a_council_exits_2_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        f'kind = "council"\nname = "c"\ntopology = "all"\nsamples = {HUGE}\n'
        '[[members]]\nname = "a"\np = 0.8\nstage = { kind = "fixed", value_ms = 1 }\n'
    )
    code, output = cli("council", path)
    assert code == 2
    assert one_error_line(output) == f"error: {path}: samples: Input should be a finite number"


@pytest.mark.parametrize(
    "args",
    [
        ("run", "-n"),
        ("council", ROOT / "councils" / "cascade-8b-70b.toml", "-n"),
        ("capacity", ROOT / "scenarios" / "webrtc-cascade.toml", "-n"),
        ("run", "--seed"),
    ],
)
def test_an_integer_flag_of_310_digits_exits_2_naming_the_flag(args: tuple[str | Path, ...]) -> None:
    code, output = cli(*args, str(HUGE))
    assert code == 2
    flag = "--samples/-n" if args[-1] == "-n" else "--seed"
    assert one_error_line(output) == (f"error: {flag}: a 310-digit number is beyond the largest number read (~1.8e308)")


# --- 3. hardware figures far outside any chip: refused at load with the range, not inf ms -----------------


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("memory_bandwidth_bytes_per_s", "5e-324", "must be within 1e+08 to 1e+20 (the catalog spans 300 GB/s (l4)"),
        ("bf16_flops_per_s", "1e-300", "must be within 1e+11 to 1e+21 (the catalog spans 121 TFLOP/s (l4)"),
        ("memory_bandwidth_bytes_per_s", "864", "got 864"),  # 864 GB/s written without its unit
    ],
)
def test_a_hardware_figure_outside_any_chip_is_refused(tmp_path: Path, field: str, value: str, message: str) -> None:
    text = (ROOT / "docs" / "examples" / "l40s.toml").read_text()
    lines = [f"{field} = {value}" if line.startswith(f"{field} ") else line for line in text.splitlines()]
    path = tmp_path / "chip.toml"
    path.write_text("\n".join(lines) + "\n")
    for fmt in ("table", "json"):  # json exited 3 (inf is not JSON), the table printed "TTFT inf ms", exit 0
        code, output = cli("infer", "--hardware-config", path, "-m", "llama-3.1-8b", "-f", fmt)
        assert code == 2
        line = one_error_line(output)
        assert line.startswith(f"error: {path}: {field}: ")
        assert message in line


# --- 4. work a small file asks for: refused before any sampling, with the estimate ---------------------------

ONE_STAGE = (
    'name = "n"\nsamples = {samples}\n[pipeline]\nkind = "sequence"\nstages.x = {{ kind = "fixed", value_ms = 1 }}\n'
)


def test_variants_times_turns_beyond_the_work_limit_are_refused_up_front(tmp_path: Path) -> None:
    # memory does not bound it (variants run one after the other): 5,000 variants at 200,000 turns ran 112 s
    path = tmp_path / "s.toml"
    path.write_text(ONE_STAGE.format(samples=100_000_000) + "".join(f"[variants.v{i}]\n" for i in range(5)))
    with time_limit(10):
        code, output = cli("run", path)
    assert code == 2
    assert one_error_line(output) == (
        f"error: {path}: samples: 100,000,000 turns x 12 stages (6 variants) = 1,200,000,000 stage samples, over "
        "the limit of 1,000,000,000 (about 20 to 40 s of CPU); at most 83,333,333 turns fit, or ask for fewer variants"
    )
    code, output = cli("run", path, "-n", "83333334")  # the flag is named when it asked
    assert one_error_line(output).startswith("error: --samples/-n: 83,333,334 turns x 12 stages (6 variants)")


def test_more_than_1000_variants_are_refused_before_merging(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"  # 20,001 empty variants took 191 s and 11 GB before the memory guard refused
    path.write_text(ONE_STAGE.format(samples=1) + "".join(f"[variants.v{i}]\n" for i in range(1_001)))
    with time_limit(10):
        code, output = cli("run", path)
    assert code == 2
    assert one_error_line(output) == (
        f"error: {path}: variants: 1,001 variants; at most 1,000 (each is simulated in full): split them into "
        "several files"
    )


def test_council_members_times_turns_beyond_the_work_limit_are_refused(tmp_path: Path) -> None:
    member = '[[members]]\nname = "m{i}"\np = 0.8\nstage = {{ kind = "fixed", value_ms = 1 }}\n'
    path = tmp_path / "c.toml"
    path.write_text('kind = "council"\nname = "c"\ntopology = "all"\n' + "".join(member.format(i=i) for i in range(9)))
    code, output = cli("council", path, "-n", "100000001")
    assert code == 2
    assert one_error_line(output).startswith(
        "error: --samples/-n: 100,000,001 turns x 10 stages (9 members) = 1,000,000,010 stage samples, over the "
    )


def test_the_library_refuses_any_number_of_turns_without_overflow() -> None:
    scenario = vb.parse_scenario(
        {"name": "n", "pipeline": {"kind": "sequence", "stages": {"x": {"kind": "fixed", "value_ms": 1}}}}
    )
    with pytest.raises(vb.ScenarioError, match=r"samples: 1e\+400 turns x 2 stages \(1 variant\) = 2e\+400 stage"):
        vb.simulate(scenario, samples=10**400)  # float(samples) in the memory guard: OverflowError


# --- 6. a tune member beyond 1,000 hours: refused before the search, not reported after it -----------------


@pytest.mark.parametrize("where", ["members", "pool"])
def test_a_tune_member_summing_past_1000_hours_is_refused_before_the_search(tmp_path: Path, where: str) -> None:
    slow = (
        '{ kind = "sequence", stages.x = { kind = "fixed", value_ms = 3e9 }, '
        'stages.y = { kind = "fixed", value_ms = 3e9 } }'
    )  # each stage within 1,000 hours, their sum beyond
    member = '[[{table}]]\nname = "{name}"\np = 0.8\nstage = {stage}\n'
    fast = member.format(table="members", name="b", stage='{ kind = "fixed", value_ms = 1 }')
    path = tmp_path / "t.toml"
    if where == "members":
        members = fast + member.format(table="members", name="a", stage=slow)
        search, field = "[search]\nmembers = { n = [1, 2] }\n", "members.1.stage"
    else:
        members = fast
        search = "[search]\nmembers = { n = [1, 2] }\n" + member.format(table="search.pool", name="a", stage=slow)
        field = "search.pool.0.stage"
    path.write_text('kind = "council"\nname = "My council"\ntopology = "all"\n' + members + search)
    code, output = cli("tune", path, "-n", "200", "--workers", "1")
    assert code == 2  # printed a Pareto front, then "2 evaluations failed: ... council 'My council': ..."
    assert one_error_line(output) == (
        f"error: {path}: {field}: member 'a': 200 of 200 turns take longer than 3,600,000,000 ms (1,000 hours) or "
        "are not finite, so no configuration with it can be judged; refused before the search"
    )


# --- 7. a signal the instant the temporary file exists: still removed ---------------------------------------

SIGNAL_AFTER_OPEN = """
import os, signal, sys
# a shell's background job (CI started with `&`) inherits SIGINT ignored, and Python then installs no
# KeyboardInterrupt handler: the signal would be a no-op. A user's Ctrl-C has Python's default.
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
real_open = os.open

def open_then_signal(*args, **kwargs):
    fd = real_open(*args, **kwargs)
    os.kill(os.getpid(), int(sys.argv[2]))  # lands the instant the file exists, before any cleanup is set up
    return fd

os.open = open_then_signal
from voicebudget._io import write_atomic
write_atomic(sys.argv[1], b"new")
"""


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_just_after_the_temporary_file_is_created_removes_it(tmp_path: Path, signum: int) -> None:
    # SIGTERM between os.open and the cleanup's try left a hidden .f.toml.*.tmp in ~1 of 9 runs
    target = tmp_path / "f.toml"
    target.write_bytes(b"old")
    done = subprocess.run(
        [sys.executable, "-c", SIGNAL_AFTER_OPEN, str(target), str(int(signum))],
        timeout=60,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode in (-signum, 1), done.stderr  # ended by the signal (SIGINT: KeyboardInterrupt)
    assert [p.name for p in tmp_path.iterdir()] == ["f.toml"]  # no .f.toml.*.tmp left
    assert target.read_bytes() == b"old"


# --- 5. a file-wide anomaly is one row; the turn table lists the slowest turns --------------------------------


def livekit_turns(path: Path, n: int, ttfb: float = 0.1234) -> Path:
    """``n`` LiveKit turns (end of utterance, LLM, TTS lines), the same TTS TTFB on each: a stale value."""
    lines = []
    for i in range(n):
        sid = f"s{i:02d}"
        lines.append({"type": "eou_metrics", "end_of_utterance_delay": 0.5, "speech_id": sid, "timestamp": 10.0 * i})
        lines.append({"type": "llm_metrics", "ttft": 0.3 + i / 1000, "speech_id": sid, "timestamp": 10.0 * i + 1})
        lines.append({"type": "tts_metrics", "ttfb": ttfb, "speech_id": sid, "timestamp": 10.0 * i + 2})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_a_stale_value_on_every_turn_is_one_row_and_the_table_is_bounded(tmp_path: Path) -> None:
    # 2,000 such turns printed 6,017 lines: every turn, and the same anomaly 2,000 times
    path = livekit_turns(tmp_path / "lk.jsonl", 12)
    code, output = cli("check", path)
    assert code == 2
    lines = output.splitlines()
    turn_rows = [line for line in lines if line.lstrip().startswith("s") and "flagged" in line]
    assert [row.split()[0] for row in turn_rows] == [f"s{i:02d}" for i in range(11, 1, -1)]  # the 10 slowest
    assert "the slowest 10 of 12 turns read" in " ".join(output.split())
    assert "anomalies (12; 1 row when grouped)" in output
    stale = "the same ttfb = 0.1234 s on all 12 turns: a stale value repeated, not a measurement"
    assert " ".join(output.split()).count(stale) == 2  # its one row, and the error line
    assert lines[-1] == (
        f"error: {path}: no usable turn to check: 12 turns, 12 anomalies: line 3: {stale} (12 turns); include "
        "flagged turns with --include-anomalies"
    )
    assert "(12 turns, lines 3 to 36)" in " ".join(output.split())
    code, output = cli("check", path, "--turns")  # every turn, every anomaly row on request
    assert sum(1 for line in output.splitlines() if "flagged" in line and line.lstrip().startswith("s")) == 12


# --- 8. the command line's errors: one line each, naming the flag -------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ("run", "-n", "0"),
            "error: Invalid value for '--samples' / '-n': Input should be greater than or equal to 1, got 0; see "
            "'voicebudget run --help'",
        ),
        (
            ("capacity", str(ROOT / "scenarios" / "support-line.toml"), "--price-per-chip-hour", "nan"),
            "error: Invalid value for '--price-per-chip-hour': Input should be less than or equal to 1000000, "
            "got nan; see 'voicebudget capacity --help'",
        ),
        (  # was "Value error, 'csv' is not one of ..., got csv": pydantic's prefix, and the value twice
            ("run", "-f", "csv"),
            "error: Invalid value for '--format' / '-f': 'csv' is not one of 'table', 'json', 'markdown', 'junit', "
            "'github'; see 'voicebudget run --help'",
        ),
        (("nope",), "error: No such command 'nope'; see 'voicebudget --help'"),
        (("baseline", "pin"), "error: Missing argument 'report'; see 'voicebudget baseline pin --help'"),
    ],
)
def test_a_usage_error_is_one_line_not_a_box(args: tuple[str, ...], expected: str) -> None:
    result = runner.invoke(app, list(args), prog_name="voicebudget")
    assert result.exit_code == 2
    assert one_error_line(result.output) == expected


@pytest.mark.parametrize("value", ["5e-324", "-1", "inf"])
def test_turns_per_minute_out_of_range_names_the_flag(value: str) -> None:
    # 5e-324 exited 2 with "ZeroDivisionError: float division by zero"; -1 said "options: turns_per_call_minute"
    code, output = cli("capacity", ROOT / "scenarios" / "support-line.toml", "--turns-per-minute", value)
    assert code == 2
    assert one_error_line(output).startswith("error: --turns-per-minute: Input should be ")


def test_several_errors_are_a_summary_line_then_one_line_each(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        'name = "n"\n[pipeline]\nkind = "sequence"\nstages.x = { kind = "fixed" }\nstages.y = { kind = 3 }\n'
    )
    code, output = cli("run", path)
    assert code == 2
    first, *rest = output.strip().splitlines()
    assert first == f"error: {path}: 2 errors:"
    assert rest == [
        f"{path}: pipeline.stages.x.value_ms: required field missing",
        f"{path}: pipeline.stages.y: unknown kind '3'; known: " + rest[1].split("known: ", 1)[1],
    ]


# --- 9. the Python API: integers beyond the float range are a ValueError naming the argument ---------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda t: t.mark("x", at_ns=HUGE), r"mark 'x': at_ns: a 310-digit number ns is beyond the clock's range"),
        (lambda t: t.mark("x", at_ms=-HUGE), r"mark 'x': at_ms: expected a finite number of ms .* a 310-digit number"),
        (lambda t: t.add_stage("llm", start_ns=HUGE, end_ms=5), r"stage 'llm' start: start_ns: a 310-digit number"),
    ],
)
def test_recorder_timestamps_beyond_the_float_range_raise_value_error(call: object, message: str) -> None:
    turn = vb.TurnRecorder().turn()
    turn.mark("speech_end", at_ns=1_000)
    with pytest.raises(ValueError, match=message):  # was OverflowError: int too large to convert to float
        call(turn)  # type: ignore[operator]
    assert turn.marks_ns == {"speech_end": 1_000}


def test_guard_arguments_beyond_the_float_range_raise_value_error() -> None:
    import numpy as np

    guard = vb.BudgetGuard(vb.Budget(total_ms=800), {"llm": np.arange(100.0)}, min_rows=1)
    with pytest.raises(ValueError, match="start_ns: a 310-digit number ns is beyond the clock's range"):
        guard.turn(start_ns=HUGE)
    with pytest.raises(ValueError, match="elapsed_ms=a 310-digit number"):
        guard.decide("llm", HUGE)
    with pytest.raises(ValueError, match="threshold must be a number in \\(0, 1\\), got a 310-digit number"):
        vb.BudgetGuard(vb.Budget(total_ms=800), {"llm": np.arange(100.0)}, threshold=HUGE)
    with pytest.raises(ValueError, match=r"samples_ms\['llm'\]: expected numbers of ms"):
        vb.BudgetGuard(vb.Budget(total_ms=800), {"llm": [HUGE]}, min_rows=1)


# --- found by the fuzzer (benchmarks/fuzz_kinds.py, seed 22) ------------------------------------------------


def test_a_hardware_id_with_markup_is_printed_as_written(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "examples" / "l40s.toml").read_text().replace('id = "l40s-example"', 'id = "[/x]"')
    path = tmp_path / "chip.toml"
    path.write_text(text)  # rich's MarkupError: closing tag '[/x]' ... exit 3
    code, output = cli("infer", "--hardware-config", path, "-m", "llama-3.1-8b")
    assert code == 0, output
    assert "llama-3.1-8b on 1 x [/x] (bf16)" in output


TUNE_SIZES = """kind = "council"
name = "t"
topology = "all"
[[members]]
name = "a"
p = 0.8
stage = {{ kind = "fixed", value_ms = 1 }}
[[members]]
name = "b"
p = 0.8
stage = {{ kind = "fixed", value_ms = 2 }}
[search]
members = {{ n = [{n}], repeat = true }}
"""


def test_a_council_size_past_2_63_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text(TUNE_SIZES.format(n=2**63))  # OverflowError: Python int too large to convert to C ssize_t
    code, output = cli("tune", path, "-n", "100", "--workers", "1")
    assert code == 2
    assert one_error_line(output) == (
        f"error: {path}: search.members: council sizes must be between 1 and 1,000,000, got [{2**63}]"
    )


def test_a_search_space_past_its_bound_is_refused_before_the_search(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text(TUNE_SIZES.format(n=1_000_000))  # 1,000,001 councils of 10^6 members each: past the bound
    with time_limit(10):
        code, output = cli("tune", path, "-n", "100", "--workers", "1")
    assert code == 2
    assert one_error_line(output).startswith(
        f"error: {path}: search: the search space has at least 6 configurations of 6,000,000 members in all; at most "
    )


def test_an_implausible_value_under_warnings_as_errors_exits_2_naming_the_flag() -> None:
    # pytest's filterwarnings = error is what `python -W error` does: the warning is raised (was exit 3)
    code, output = cli("check", ROOT / "tests" / "data" / "traces" / "livekit-metrics.jsonl", "--budget-ms", "3")
    assert code == 2
    assert one_error_line(output).startswith("error: --budget-ms: 3 ms is under 50 ms, less than the fastest")


def test_tune_member_names_with_markup_are_printed_as_written(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text(
        'kind = "council"\nname = "[/x]"\ntopology = "all"\n'
        '[[members]]\nname = "a[/x]"\np = 0.8\nstage = { kind = "fixed", value_ms = 1 }\n'
        '[[members]]\nname = "b"\np = 0.9\nstage = { kind = "fixed", value_ms = 2 }\n'
        "[search]\nmembers = { n = [1] }\n"
    )  # rich's MarkupError on the pick line or the front's tail column: exit 3
    code, output = cli("tune", path, "-n", "100", "--workers", "1")
    assert code == 0, output
    assert "[/x]: exhaustive" in output


def test_an_otlp_ttft_of_310_digits_puts_no_time_on_the_path(tmp_path: Path) -> None:
    span = {
        "traceId": "t",
        "spanId": "a",
        "name": "agent_turn",
        "startTimeUnixNano": "0",
        "endTimeUnixNano": "2000000000",
        "attributes": [{"key": "lk.end_of_turn_delay", "value": {"doubleValue": 0.5}}],
    }
    llm = {**span, "spanId": "b", "parentSpanId": "a", "name": "llm_node", "startTimeUnixNano": "100"}
    llm["attributes"] = [{"key": "lk.response.ttft", "value": {"doubleValue": HUGE}}]
    path = tmp_path / "o.jsonl"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span, llm]}]}]}) + "\n")
    table = vb.read_trace(path)  # int(inf * 1e9): OverflowError, exit 3
    assert table.turns[0].flagged
    assert ("lk.response.ttft", "not a finite number") in {(a.field, a.reason) for a in table.anomalies}


MEMBER_B = '[[members]]\nname = "b"\np = 0.8\nstage = { kind = "fixed", value_ms = 1 }\n'
API = 'kind = "api", ttft = { kind = "fixed", value_ms = 100 }, tpot = { kind = "fixed", value_ms = 10 }'


@pytest.mark.parametrize(
    ("command", "text", "field", "message"),
    [
        (  # 1,500 tokens x $1e308 per million: cost inf, and 'ValueError: Out of range float values are not JSON
            "council",  # compliant: inf' (exit 3)
            'kind = "council"\nname = "c"\ntopology = "all"\n[[members]]\nname = "a"\np = 0.8\nprompt_tokens = 1500\n'
            'input_usd_per_mtok = 1e308\nstage = { kind = "fixed", value_ms = 1 }\n' + MEMBER_B,
            "members.0.input_usd_per_mtok",
            "Input should be less than or equal to 1000000",
        ),
        (
            "council",
            'kind = "council"\nname = "c"\ntopology = "all"\n[[members]]\nname = "a"\np = 0.8\n'
            'output_tokens = 100000000\nstage = { kind = "fixed", value_ms = 1 }\n' + MEMBER_B,
            "members.0.output_tokens",
            "Input should be less than or equal to 10000000",
        ),
        (  # an expected user time of inf ms
            "council",
            'kind = "council"\nname = "c"\ntopology = "all"\n[user_time]\nuser_turn_ms = 1e308\n'
            '[[members]]\nname = "a"\np = 0.8\nstage = { kind = "fixed", value_ms = 1 }\n',
            "user_time.user_turn_ms",
            "Input should be less than or equal to 3600000000",
        ),
        (
            "run",
            f'name = "n"\n[traffic]\n[pipeline]\nkind = "sequence"\nstages.llm = {{ {API}, '
            "usd_per_million_output_tokens = 1e308 }\n",
            "pipeline.stages.llm.usd_per_million_output_tokens",
            "Input should be less than or equal to 1000000",
        ),
        (
            "run",
            f'name = "n"\n[pipeline]\nkind = "sequence"\nstages.llm = {{ {API}, use_fast = true, '
            "fast = { speed_factor = 2, price_factor = 1e308 } }\n",
            "pipeline.stages.llm.fast.price_factor",
            "Input should be less than or equal to 1000000",
        ),
    ],
)
def test_a_price_or_count_that_overflows_a_cost_is_refused_naming_it(
    tmp_path: Path, command: str, text: str, field: str, message: str
) -> None:
    path = tmp_path / "f.toml"
    path.write_text(text)
    code, output = cli(command, path, "-n", "100", "-f", "json")
    assert code == 2, output
    assert one_error_line(output) == f"error: {path}: {field}: {message}"


def test_ctrl_c_while_a_model_is_built_is_an_interrupt_not_a_bug() -> None:
    # SIGINT while `fit` first loads the scenario models: pydantic-core turned the KeyboardInterrupt into
    # "SchemaError: Error building `literal` serializer: KeyboardInterrupt:" and the guard said exit 3
    from pydantic_core import SchemaError

    from voicebudget.cli._guard import crash_guard

    def building() -> None:
        raise SchemaError("Error building `model` serializer:\n  SchemaError: Field `kind`:\n  KeyboardInterrupt: ")

    def cleaning_up() -> None:
        try:
            raise KeyboardInterrupt
        finally:
            raise OSError("a cleanup failed while Ctrl-C was handled")

    for command in (building, cleaning_up):
        with pytest.raises(KeyboardInterrupt):  # handled as any Ctrl-C: exit 130, no "internal error" line
            crash_guard(command)()

    def broken() -> None:
        raise SchemaError("Error building `model` serializer: a real bug")

    result = runner.invoke(typer_app(crash_guard(broken)), [])
    assert result.exit_code == 3
    assert one_error_line(result.output).startswith("error: internal error in voicebudget")


def typer_app(command: object) -> object:
    import typer

    app = typer.Typer()
    app.command()(command)
    return app


def test_a_failed_only_member_is_one_error_not_also_an_empty_council(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('kind = "council"\nname = "c"\ntopology = "all"\n[[members]]\nname = "a"\np = 2\n')
    code, output = cli("council", path)  # also said "members: Tuple should have at least 1 item after validation"
    assert code == 2
    assert output.strip().splitlines() == [
        f"error: {path}: 2 errors:",
        f"{path}: members.0.stage: required field missing",
        f"{path}: members.0.p: 2 is over 1: a share is between 0 and 1",
    ]
