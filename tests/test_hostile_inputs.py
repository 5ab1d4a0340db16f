"""Hostile input, round 3 (issue 22): each kind of input that exited 3, hung, ran super-linearly or broke
the one-line message, as the smallest file that showed it. The fuzzer of these kinds is
tests/test_fuzz_kinds.py (small budget) and benchmarks/fuzz_kinds.py (large)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import typer
from cli_calls import cli, one_error_line, runner
from hfconfig_files import write_config
from time_limit import time_limit

import voicebudget as vb
from voicebudget._io import read_document
from voicebudget.cli import app

ROOT = Path(__file__).resolve().parent.parent


# --- 1. CSV line ends: \r, \r\n and a stray \r in a cell (council-fit logs, empirical samples) -------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("item,member,answer,correct\r1,a,x,1\r1,b,x,1\r", 2),  # old Mac line ends: two rows
        ("item,member,answer,correct\r\n1,a,x,1\r\n1,b,x,1\r\n", 2),
        ('item,member,answer,correct\n1,a,"x\ry",1\n1,b,x,1\n', 2),  # \r in a quoted cell stays in it
    ],
)
def test_council_fit_reads_every_line_end(tmp_path: Path, text: str, expected: int) -> None:
    path = tmp_path / "logs.csv"
    path.write_bytes(text.encode())
    code, output = cli("council-fit", path, "-f", "json")
    assert code == 0, output
    assert json.loads(output)["rows"] == expected


def test_council_fit_stray_cr_in_a_cell_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "logs.csv"
    path.write_bytes(b"item,member,answer,correct\n1,a,x,1\n1,b,x\r,1\n")  # the \r ends line 3
    code, output = cli("council-fit", path)
    assert code == 2
    assert one_error_line(output) == f"error: {path}: line 3: 3 columns, the header has 4"


def test_csv_cell_over_the_field_limit_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "logs.csv"
    path.write_text("item,member,answer,correct\n1,a," + "x" * 200_000 + ",1\n")
    code, output = cli("council-fit", path)
    assert code == 2
    line = one_error_line(output)
    assert line.startswith(f"error: {path}: line 2: cannot read the CSV row: field larger than field limit")


@pytest.mark.parametrize("line_end", ["\r", "\r\n", "\n"])
def test_empirical_samples_read_every_line_end(tmp_path: Path, line_end: str) -> None:
    (tmp_path / "s.csv").write_bytes(line_end.join(["ms", "1", "2", "3", ""]).encode())
    stage = vb.Empirical.model_validate({"file": "s.csv"}, context={"base_dir": str(tmp_path)})
    assert stage.samples_ms == (1.0, 2.0, 3.0)


def test_empirical_stray_cr_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "s.csv").write_bytes(b"1\n2x\r3\n")  # "2x" is line 2, "3" line 3
    (tmp_path / "e.toml").write_text(
        'name = "e"\n[pipeline]\nkind = "sequence"\nstages.x = { kind = "empirical", file = "s.csv" }\n'
    )
    code, output = cli("run", tmp_path / "e.toml", "-n", "100")
    assert code == 2
    assert one_error_line(output).endswith(
        "pipeline.stages.x: " + str(tmp_path / "s.csv") + ": line 2, column 1: not a number; "
        "a sample must be a finite number of ms, >= 0 and at most 1,000 hours"
    )


# --- 1. a stage name used twice in one evaluated tree, at any depth ----------------------------------------

FIXED = '{ kind = "fixed", value_ms = 1 }'


@pytest.mark.parametrize(
    ("pipeline", "message"),
    [
        (  # a combinator reusing its own name for a child
            f'kind = "sequence"\nstages.x = {{ kind = "sequence", stages.x = {FIXED} }}',
            "pipeline: two stages are named 'x' (stages.x and stages.x.stages.x)",
        ),
        (  # two branches reusing one name
            f'kind = "sequence"\nstages.a = {{ kind = "all_of", stages.y = {FIXED} }}\n'
            f'stages.b = {{ kind = "race", stages.y = {FIXED} }}',
            "pipeline: two stages are named 'y' (stages.a.stages.y and stages.b.stages.y)",
        ),
        (  # a voice turn's own stage name inside another of its stages
            f'kind = "voice_turn"\nendpointing = {FIXED}\nasr = {{ kind = "sequence", stages.llm = {FIXED} }}\n'
            f"network = {FIXED}\nllm = {FIXED}\ntts = {FIXED}\ntransport = {FIXED}",
            "pipeline: two stages are named 'llm' (asr.stages.llm and llm)",
        ),
        (  # a reply cache's branch names inside its miss path
            f'kind = "sequence"\nstages.c = {{ kind = "reply_cache", hit_rate = 0.5, hit = {FIXED}, '
            f'miss = {{ kind = "sequence", stages.cache_hit = {FIXED} }} }}',
            "pipeline.stages.c: two stages are named 'cache_hit' (hit and miss.stages.cache_hit)",
        ),
    ],
)
def test_a_stage_name_used_twice_exits_2_naming_both_paths(tmp_path: Path, pipeline: str, message: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(f'name = "n"\n[pipeline]\n{pipeline}\n')
    code, output = cli("run", path, "-n", "100")
    assert code == 2
    assert one_error_line(output) == f"error: {path}: {message}; stage names must be unique in a pipeline"


def test_a_stage_may_share_the_name_of_the_tree_it_is_the_root_of(tmp_path: Path) -> None:
    # "total" (a scenario's root) and a council member's own name are not stages of the tree
    path = tmp_path / "s.toml"
    path.write_text(f'name = "n"\n[pipeline]\nkind = "sequence"\nstages.total = {FIXED}\n')
    code, output = cli("run", path, "-n", "100", "-f", "json")
    assert code == 0, output
    assert json.loads(output)["variants"][0]["total"]["p50_ms"] == 1.0
    council = tmp_path / "c.toml"
    council.write_text(
        'kind = "council"\nname = "c"\ntopology = "all"\n'
        f'[[members]]\nname = "a"\np = 0.8\nstage = {{ kind = "sequence", stages.a = {FIXED} }}\n'
        f'[[members]]\nname = "b"\np = 0.8\nstage = {FIXED}\n'
    )
    code, output = cli("council", council, "-n", "100", "-f", "json")
    assert code == 0, output
    assert json.loads(output)["latency"]["p50_ms"] == 1.0


# --- 2. a file reference that is not a regular file: refused before anything blocks on it -----------------

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo") or not hasattr(signal, "setitimer"), reason="POSIX FIFOs")


@needs_fifo
@pytest.mark.parametrize("target", ["fifo", "link-to-fifo", "/dev/null", "folder"])
def test_a_samples_reference_to_anything_but_a_regular_file_exits_2(tmp_path: Path, target: str) -> None:
    os.mkfifo(tmp_path / "fifo")  # nothing ever writes to it: open() would block forever
    (tmp_path / "link-to-fifo").symlink_to(tmp_path / "fifo")
    (tmp_path / "folder").mkdir()
    path = tmp_path / "s.toml"
    path.write_text(
        f'name = "n"\n[pipeline]\nkind = "sequence"\nstages.x = {{ kind = "empirical", file = "{target}" }}\n'
    )
    kind = {"fifo": "a FIFO (named pipe)", "link-to-fifo": "a FIFO (named pipe)", "/dev/null": "a device"}
    with time_limit(20):
        code, output = cli("run", path, "-n", "100", "--allow-root", "/dev")
    assert code == 2
    assert one_error_line(output) == (
        f"error: {path}: pipeline.stages.x: file {target!r} is {kind.get(target, 'a folder')}, not a regular file; "
        "a file reference must name one"
    )


@needs_fifo
def test_a_council_reference_to_a_fifo_exits_2(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "c.toml")
    path = tmp_path / "s.toml"
    path.write_text('name = "n"\n[pipeline]\nkind = "sequence"\nstages.c = { kind = "council", file = "c.toml" }\n')
    with time_limit(20):
        code, output = cli("run", path, "-n", "100")
    assert code == 2
    assert "file 'c.toml' is a FIFO (named pipe), not a regular file" in one_error_line(output)


@needs_fifo
def test_the_reader_rechecks_the_kind_on_the_open_file(tmp_path: Path) -> None:
    # a reference swapped for a FIFO after its check: the reader opens without blocking and refuses it
    os.mkfifo(tmp_path / "c.toml")
    with time_limit(20), pytest.raises(vb.ScenarioError, match=r"is a FIFO \(named pipe\), not a regular file"):
        read_document(tmp_path / "c.toml", regular_only=True)


# --- 2. OTLP turn spans nested as a chain: each is a turn of its own, read in linear work -----------------


def otlp_chain(path: Path, n: int) -> Path:
    """``n`` Pipecat turn spans, each the parent of the next (a 4,000-turn chain took ~30 s)."""
    spans = []
    for i in range(n):
        span = {
            "traceId": "t",
            "spanId": f"s{i}",
            "name": "turn",
            "startTimeUnixNano": str(i * 10**9),
            "endTimeUnixNano": str(i * 10**9 + 5),
            "attributes": [{"key": "turn.user_bot_latency_seconds", "value": {"doubleValue": 0.5 + i / 1000}}],
        }
        if i:
            span["parentSpanId"] = f"s{i - 1}"
        spans.append(span)
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    return path


def test_turns_nested_as_a_chain_walk_each_span_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from voicebudget.traces import _otel

    walked: list[int] = []
    subtree = _otel._Reader.subtree

    def counting(self: object, *args: object) -> list[object]:
        members = subtree(self, *args)  # type: ignore[arg-type]
        walked.append(len(members))
        return members  # type: ignore[return-value]

    monkeypatch.setattr(_otel._Reader, "subtree", counting)
    table = vb.read_trace(otlp_chain(tmp_path / "chain.json", 1000))
    assert sum(walked) == 1000  # one span per turn (the whole chain below each turn: 500,500)
    assert [t.total_ms for t in table.turns[:3]] == pytest.approx([500.0, 501.0, 502.0])  # its own total each


def test_turns_that_are_each_others_parent_are_flagged_as_a_cycle(tmp_path: Path) -> None:
    path = otlp_chain(tmp_path / "loop.json", 2)
    doc = json.loads(path.read_text())
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["parentSpanId"] = "s1"  # s0 -> s1 -> s0
    path.write_text(json.dumps(doc))
    table = vb.read_trace(path)
    assert len(table.turns) == 2
    reasons = {(a.turn, a.field, a.reason) for a in table.anomalies if a.field == "parentSpanId"}
    assert reasons == {(t, "parentSpanId", "span tree has a cycle (a turn is its own ancestor)") for t in ("s0", "s1")}


# --- 2. counts in a model config or a deployment: closed forms and bounds, never a loop over the count ----

LLAMA_8B = {
    "num_hidden_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
}


def test_an_absurd_layer_count_exits_2_naming_the_field(tmp_path: Path) -> None:
    path = write_config(tmp_path, "m", {**LLAMA_8B, "num_hidden_layers": 2**53 + 1})  # ran past 90 s
    code, output = cli("infer", "--model-config", path, "--hardware", "wse-3")
    assert code == 2
    assert one_error_line(output) == (
        f"error: {path}: num_hidden_layers: must be at most 2,147,483,647 (2^31 - 1), got 9.01e+15"
    )


def test_layer_and_head_counts_at_the_bound_are_counted_in_closed_form(tmp_path: Path) -> None:
    n = 2**31 - 1
    cfg = {
        **LLAMA_8B,
        "num_hidden_layers": n,
        "num_attention_heads": 2**31 - 2,  # 2 x 3^2 x 7 x 11 x 31 x 151 x 331: 192 divisors
        "num_key_value_heads": 1,
        "head_dim": 128,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "first_k_dense_replace": 3,
        "moe_layer_freq": 2,
        "attention_chunk_size": 8192,
        "no_rope_layer_interval": 4,
    }
    with time_limit(20):  # looping over 2^31 layers or heads would take minutes
        arch = vb.model_from_hf_config(write_config(tmp_path, "m", cfg))
        options = arch.tensor_parallel_options()
    assert arch.n_moe_layers == (n - 1) // 2 - (3 - 1) // 2  # the even layers from 4 to n - 1
    assert arch.sliding_layers == n - n // 4  # all but every 4th
    assert len(options) == 192
    assert options[:6] == [1, 2, 3, 6, 7, 9]
    assert options[-1] == 2**31 - 2


def test_an_absurd_chip_count_exits_2_naming_the_option() -> None:
    with time_limit(20):  # the layouts of 10^11 chips were listed one candidate at a time: > 20 s
        code, output = cli("infer", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--chips", "100000000000")
    assert code == 2
    assert one_error_line(output) == "error: --chips: at most 1,048,576, got 100,000,000,000"
    with pytest.raises(ValueError, match="less than or equal to 1048576"):
        vb.Deployment(chips=2**20 + 1)


# --- 3. YAML tags for types no field takes: refused, not read as text ---------------------------------------


@pytest.mark.parametrize(
    ("value", "tag"),
    [("!!binary aGVsbG8=", "!!binary"), ("!!set {a: null}", "!!set"), ("!!omap [a: 1]", "!!omap")],
)
def test_yaml_binary_set_and_omap_tags_are_refused(tmp_path: Path, value: str, tag: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(f"name: {value}\npipeline: {{kind: sequence, stages: {{x: {{kind: fixed, value_ms: 1}}}}}}\n")
    code, output = cli("run", path, "-n", "100")  # !!binary aGVsbG8= was read as the name 'hello'
    assert code == 2
    assert one_error_line(output) == (
        f"error: {path}: line 1: cannot parse YAML: the tag {tag} is not allowed: a voicebudget file holds text, "
        "numbers, booleans, lists and tables"
    )


# --- 4. the recorder's (and the guard's) timestamps: a ValueError naming the argument ---------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda t: t.mark("x", at_ns=float("nan")), "mark 'x': at_ns: expected a finite number of ns"),
        (lambda t: t.mark("x", at_ns=float("inf")), "mark 'x': at_ns: expected a finite number of ns"),
        (
            lambda t: t.mark("x", at_ns="12"),
            "mark 'x': at_ns: expected a number of ns on the recorder's clock, got text",
        ),
        (lambda t: t.mark("x", at_ns=True), "mark 'x': at_ns: expected a number of ns .* got a boolean"),
        (lambda t: t.mark("x", at_ns=10**30), r"mark 'x': at_ns: 1e\+30 ns is beyond the clock's range"),
        (lambda t: t.mark("x", at_ms=True), "mark 'x': at_ms: expected a number of ms after speech_end, got a boolean"),
        (lambda t: t.mark("x", at_ms=1e300), "mark 'x': at_ms: expected a finite number of ms within"),
        (lambda t: t.add_stage("llm", start_ms=0, end_ms=float("nan")), "stage 'llm' end: end_ms: expected a finite"),
        (lambda t: t.add_stage("llm", start_ns=[1], end_ms=5), "stage 'llm' start: start_ns: expected a number"),
    ],
)
def test_recorder_timestamps_that_are_not_finite_numbers_raise_value_error(call: Any, message: str) -> None:
    turn = vb.TurnRecorder().turn()
    turn.mark("speech_end", at_ns=1_000)
    with pytest.raises(ValueError, match=message):  # was: OverflowError, TypeError ... __round__, True as 1 ns
        call(turn)
    assert turn.marks_ns == {"speech_end": 1_000}  # nothing recorded


def test_recorder_takes_integer_and_float_timestamps() -> None:
    turn = vb.TurnRecorder().turn()
    assert turn.mark("speech_end", at_ns=np.int64(1_000)) == 1_000
    assert turn.mark("a", at_ns=2_700.4) == 2_700
    assert turn.mark("b", at_ms=np.float64(1.5)) == 1_000 + 1_500_000


def test_guard_timestamps_are_checked_too() -> None:
    guard = vb.BudgetGuard(vb.Budget(total_ms=800), {"llm": np.arange(100.0)}, min_rows=1)
    live = guard.turn(start_ns=0)
    with pytest.raises(ValueError, match="at_ns: expected a finite number of ns"):
        live.check(at_ns=float("nan"))
    with pytest.raises(ValueError, match="start_ns: expected a number of ns .* got text"):
        guard.turn(start_ns="0")


# --- 3. parameters whose samples overflow: refused when the file is read, naming the field ----------------

TUNE_ONE_MEMBER = """kind = "council"
name = "t"
topology = "all"
[[members]]
name = "a"
p = 0.8
stage = {{ kind = "lognormal", p50_ms = {p50}, p95_ms = {p95} }}
[[members]]
name = "b"
p = 0.85
stage = {{ kind = "lognormal", p50_ms = 300, p95_ms = 500 }}
[search]
members = {{ n = [1, 2] }}
topology = ["all", "first_k"]
k = [1, 2]
"""


def test_a_denormal_p50_with_a_wide_p95_is_refused_before_tuning(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text(TUNE_ONE_MEMBER.format(p50="5e-324", p95="300"))  # half the evaluations failed, exit 3 after
    code, output = cli("tune", path, "-n", "500", "--workers", "1")
    assert code == 2
    assert one_error_line(output) == (
        f"error: {path}: members.0.stage.p95_ms: p50_ms 4.94066e-324 and p95_ms 300 spread the log-normal so "
        "wide (sigma 456) that its mu + 6 sigma is beyond 3,600,000,000 ms (1,000 hours): samples would overflow "
        "or be refused as turns that long"
    )


@pytest.mark.filterwarnings("always::voicebudget.ImplausibleValue")
def test_a_denormal_latency_is_ranked_not_a_nan(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text(TUNE_ONE_MEMBER.format(p50="5e-324", p95="5e-324"))  # 'objectives contain NaN', exit 3
    result = runner.invoke(app, ["tune", str(path), "-n", "500", "--workers", "1", "-f", "json"])
    assert result.exit_code == 0, result.output
    # valid, and implausible for an LLM's answer: a warning (docs/scenarios.md), in the JSON too
    assert f"warning: {path}: members.0.stage.p50_ms: 5e-324 ms is implausible" in result.stderr
    doc = json.loads(result.stdout)
    assert doc["warnings"][0].startswith(f"{path}: members.0.stage.p50_ms: 5e-324 ms")
    fastest = min(doc["pareto"], key=lambda c: c["p95_ms"])
    assert fastest["config"]["members"] == ["a"]
    assert fastest["p95_ms"] == 5e-324


@pytest.mark.parametrize(
    ("stage", "message"),
    [
        (
            '{ kind = "fixed", value_ms = 1e308 }',
            "value_ms: must be at most 3,600,000,000 ms (1,000 hours), got 1e+308",
        ),
        (
            '{ kind = "normal", mean_ms = 1e9, std_ms = 1e9 }',
            "mean_ms + 6 std_ms = 7e+09 ms is beyond 3,600,000,000 ms (1,000 hours): samples would be refused as "
            "turns that long",
        ),
        (
            '{ kind = "empirical", samples_ms = [1, 4e9] }',
            "samples_ms[1] (item 2): beyond 1,000 hours (4e+09 ms); a sample must be a finite number of ms, >= 0 "
            "and at most 1,000 hours",
        ),
    ],
)
def test_latency_parameters_beyond_1000_hours_are_refused(tmp_path: Path, stage: str, message: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(f'name = "n"\n[pipeline]\nkind = "sequence"\nstages.x = {stage}\n')
    code, output = cli("run", path, "-n", "100")
    assert code == 2
    line = one_error_line(output)
    assert line.startswith(f"error: {path}: pipeline.stages.x")
    assert line.endswith(message)


# --- 3. warnings while a command runs: never lines of source before the error --------------------------------


def guarded_app(code: int) -> typer.Typer:
    """A one-command app under the CLI's guard whose command warns as numpy does, twice, then ends with
    ``code`` (2: an input error raised by the library)."""
    from voicebudget.cli._guard import crash_guard

    def command() -> None:
        warnings.simplefilter("default")  # as outside pytest (filterwarnings = error raises instead)
        for _ in range(2):
            np.exp(np.array([1000.0]))  # RuntimeWarning: overflow encountered in exp, with its source line
        if code == 2:
            raise vb.ScenarioError("bad field", origin="x.toml", field="a.b")
        if code == 1:
            raise typer.Exit(1)

    test_app = typer.Typer()
    test_app.command()(crash_guard(command))
    return test_app


def test_a_warning_before_an_input_error_is_dropped() -> None:
    result = runner.invoke(guarded_app(2), [])
    assert result.exit_code == 2
    assert result.output == "error: x.toml: a.b: bad field\n"


@pytest.mark.parametrize("code", [0, 1])
def test_a_warning_of_a_finished_command_is_one_line_once(code: int) -> None:
    result = runner.invoke(guarded_app(code), [])
    assert result.exit_code == code
    assert result.output == "warning: overflow encountered in exp\n"


# --- 3. a council's errors name its file and the member's field path, not the council's name --------------


def test_a_council_error_names_the_file_and_the_members_field(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        'kind = "council"\nname = "My council"\ntopology = "all"\n'
        '[[members]]\nname = "b"\np = 0.8\nstage = { kind = "fixed", value_ms = 1 }\n'
        '[[members]]\nname = "a"\np = 0.8\nstage = { kind = "sequence", stages.x = { kind = "fixed", value_ms = 3e9 },'
        ' stages.y = { kind = "fixed", value_ms = 3e9 } }\n'
    )  # each stage within 1,000 hours, member a's sum beyond
    code, output = cli("council", path, "-n", "100")
    assert code == 2
    assert one_error_line(output) == (
        f"error: {path}: 100 turns take longer than 3,600,000,000 ms (1,000 hours) or are not finite; "
        "stages with such values: ['a'] at members.1.stage"
    )  # was 'error: My council: 100 turns ...'
    council = vb.load_council(path)
    assert council.origin == str(path)
    with pytest.raises(vb.ModelError, match=r"^council 'My council': 100 turns"):
        vb.evaluate_council(council.model_validate(council.model_dump()), samples=100)  # built in code: no file


# --- 5. the memory guard judges against the lowest limit the process really has ---------------------------


def fake_cgroup(tmp_path: Path, proc_cgroup: str, files: dict[str, str]) -> tuple[Path, Path]:
    """A cgroup mount and a ``/proc/self`` with the given ``cgroup`` file; ``files``: path -> content."""
    root, proc = tmp_path / "cgroup", tmp_path / "proc"
    proc.mkdir()
    (proc / "cgroup").write_text(proc_cgroup)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root, proc


def test_cgroup_v2_limits_of_the_group_and_its_parents_are_read(tmp_path: Path) -> None:
    from voicebudget._memory import MemoryLimit, memory_limits

    root, proc = fake_cgroup(
        tmp_path,
        "0::/outer/box\n",
        {
            "outer/box/memory.max": "max\n",  # no limit of its own
            "outer/box/memory.current": "1048576\n",
            "outer/memory.max": "104857600\n",  # 100 MiB for the container
            "outer/memory.current": "10485760\n",
        },
    )
    found = [m for m in memory_limits(cgroup_root=root, proc_self=proc) if "container" in m.what]
    assert found == [
        MemoryLimit(
            int((104857600 - 10485760) * 0.9), "the container's memory limit (memory.max 100 MiB, 10 MiB in use)"
        )
    ]


def test_cgroup_v1_limit_and_its_no_limit_value(tmp_path: Path) -> None:
    from voicebudget._memory import memory_limits

    files = {
        "memory/api/x/memory.limit_in_bytes": "52428800\n",
        "memory/api/x/memory.usage_in_bytes": "0\n",
        "memory/api/memory.limit_in_bytes": "9223372036854771712\n",  # v1's "no limit"
        "memory/memory.limit_in_bytes": "9223372036854771712\n",
    }
    root, proc = fake_cgroup(tmp_path, "9:name=systemd:/\n4:memory:/api/x\n0::/\n", files)
    found = [m for m in memory_limits(cgroup_root=root, proc_self=proc) if "container" in m.what]
    assert [m.bytes for m in found] == [int(52428800 * 0.9)]
    assert found[0].what == "the container's memory limit (memory.limit_in_bytes 50 MiB, 0 MiB in use)"


def test_the_guard_refuses_a_run_over_the_containers_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from voicebudget import _memory

    root, proc = fake_cgroup(tmp_path, "0::/\n", {"memory.max": "31457280\n", "memory.current": "0\n"})  # 30 MiB
    monkeypatch.setattr(_memory, "CGROUP_ROOT", root)
    monkeypatch.setattr(_memory, "PROC_SELF", proc)
    with pytest.raises(
        vb.ScenarioError, match=r"fit in the container's memory limit \(memory.max 30 MiB, 0 MiB in use\)"
    ):
        vb.run_scenarios([ROOT / "scenarios" / "webrtc-cascade.toml"], samples=2_000_000, seed=1)


ULIMIT_RUN = """
import resource, sys
from voicebudget.cli import main
resource.setrlimit(resource.RLIMIT_AS, (600 * 2**20, resource.RLIM_INFINITY))  # as `ulimit -v 614400`
sys.argv = ["voicebudget", "run", "-n", "5000000", "-f", "json"]
main()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status: Linux")
def test_the_guard_refuses_a_run_over_ulimit_v() -> None:
    done = subprocess.run([sys.executable, "-c", ULIMIT_RUN], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr  # was exit 3: MemoryError after 1 GB of work
    assert done.stderr.startswith("error: --samples/-n: 5,000,000 turns: simulating 3 variants needs ~")
    assert "turns fit in the process's ulimit -v limit (600 MiB, " in done.stderr


def test_a_memory_error_past_the_guard_exits_2_naming_the_limit() -> None:
    from voicebudget.cli._guard import crash_guard

    def command() -> None:
        raise MemoryError("Unable to allocate 153. MiB for an array with shape (20000000,) and data type int64")

    test_app = typer.Typer()
    test_app.command()(crash_guard(command))
    result = runner.invoke(test_app, [])
    assert result.exit_code == 2
    line = one_error_line(result.output)
    assert line.startswith("error: out of memory under ")
    assert line.endswith(
        ": Unable to allocate 153. MiB for an array with shape (20000000,) and data type int64; "
        "ask for fewer turns or variants"
    )


# --- 6. a line-based trace is read a line at a time: memory follows the turns, not the bytes ---------------

TRACES = ROOT / "tests" / "data" / "traces"


def padded_livekit(path: Path) -> None:
    """The 20-turn LiveKit sample, each line carrying 250 KB that no turn keeps (20 MB)."""
    rows = [json.loads(line) for line in (TRACES / "livekit-metrics.jsonl").read_text().splitlines()]
    path.write_text("".join(json.dumps({**row, "padding": "a" * 250_000}) + "\n" for row in rows))


def padded_pipecat(path: Path) -> None:
    """The 20-turn Pipecat sample, a 150 KB debug line no rule reads after each line (18 MB)."""
    filler = "2025-11-29 10:00:00.000 | DEBUG    | pipecat.transports.base_output:_bot_speaking:1 - " + "a" * 150_000
    path.write_text("".join(f"{line}\n{filler}\n" for line in (TRACES / "pipecat.log").read_text().splitlines()))


def padded_otlp(path: Path) -> None:
    """200 OTLP JSON lines, a Pipecat turn span each with a 100 KB attribute no turn reads (20 MB)."""
    lines = []
    for i in range(200):
        attributes = [
            {"key": "turn.user_bot_latency_seconds", "value": {"doubleValue": 0.5}},
            {"key": "padding", "value": {"stringValue": "a" * 100_000}},
        ]
        span = {"traceId": f"t{i}", "spanId": f"s{i}", "name": "turn", "attributes": attributes}
        span |= {"startTimeUnixNano": str(i * 10**9), "endTimeUnixNano": str(i * 10**9 + 5)}
        lines.append(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("make", "suffix", "turns"),
    [(padded_livekit, ".jsonl", 20), (padded_pipecat, ".log", 20), (padded_otlp, ".jsonl", 200)],
    ids=["livekit", "pipecat", "otlp"],
)
def test_a_line_based_trace_is_read_in_memory_well_under_its_size(
    tmp_path: Path, make: Any, suffix: str, turns: int
) -> None:
    import tracemalloc

    path = tmp_path / f"trace{suffix}"
    make(path)
    size = path.stat().st_size
    vb.read_trace(TRACES / "pipecat.log")  # imports done: only the reading is measured
    tracemalloc.start()
    try:
        table = vb.read_trace(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(table.turns) == turns
    assert size > 17_000_000
    assert peak < size / 2, f"{peak / 1e6:.1f} MB at peak for a {size / 1e6:.1f} MB file"  # ~6 MB: a 1 MB chunk
