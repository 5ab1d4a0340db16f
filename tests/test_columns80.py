"""Every command's table output read in an 80-column terminal (issue 13, item 1): no header or number
cut to "…", no line wider than the terminal; ``check`` lists the slowest turns unless ``--turns``."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from voicebudget.cli import app

ROOT = Path(__file__).parent.parent
TRACES = Path(__file__).parent / "data" / "traces"
runner = CliRunner()


def at_80(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": "80"})
    assert "Traceback" not in result.output
    return result.exit_code, result.output


COMMANDS = [
    ["run", "-n", "20000"],
    ["run", str(ROOT / "scenarios" / "council-vs-cache.toml"), "-n", "20000", "--allow-root", str(ROOT)],
    ["run", str(ROOT / "scenarios" / "hardware-llm.toml"), "-n", "5000"],
    ["infer", "-m", "llama-3.1-70b", "-H", "h100-sxm", "--chips", "4"],
    ["hardware"],
    ["models"],
    ["check", str(TRACES / "pipecat.log"), str(TRACES / "livekit-metrics.jsonl")],
    ["check", str(TRACES / "pipecat.log"), str(TRACES / "livekit-metrics.jsonl"), "--turns"],
    ["check", str(TRACES / "pipecat-broken.log"), "--turns"],
    ["council", str(ROOT / "councils" / "intent-wafer-all.toml"), "-n", "5000"],
    ["council", str(ROOT / "councils" / "router-flash-lite-sonnet.toml"), "-n", "5000"],
    ["tune", str(ROOT / "councils" / "tune-intent.toml"), "-n", "500"],
    ["capacity", str(ROOT / "scenarios" / "support-line.toml"), "-n", "500", "--target-calls", "500"],
    [
        "capacity",
        str(ROOT / "scenarios" / "support-line.toml"),
        "-n",
        "500",
        "--target-calls",
        "500",
        "--hardware",
        "h100-sxm",
        "--model",
        "llama-3.1-70b",
        "--chips",
        "2",
        "--precision",
        "fp8",
        "--batch-cap",
        "2,32",
    ],
    ["check", str(TRACES / "pipecat-broken.log"), str(TRACES / "livekit-broken.jsonl")],
    ["check", str(TRACES / "otel-livekit-broken.jsonl")],
    ["run", str(ROOT / "scenarios" / "telephony-pstn.toml"), "-n", "5000"],
    ["infer", "-m", "llama-3.3-70b", "-H", "h100-sxm", "--chips", "2", "--precision", "fp8", "--request-rate", "5"],
    [
        "guard-report",
        str(ROOT / "scenarios" / "webrtc-cascade.toml"),
        "--variant",
        "wafer-scale-llm",
        "-n",
        "2000",
        "--guard-turns",
        "2000",
        "-p",
        "p-fit:0.5",
        "-p",
        "timeout:300",
        "-p",
        "median:budget@framework",
    ],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(Path(x).name for x in a[:2]))
def test_table_output_fits_80_columns(args: list[str]) -> None:
    code, out = at_80(*args)
    assert code in (0, 1), out
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_check_lists_the_slowest_turns_with_the_file_once() -> None:
    code, out = at_80("check", str(TRACES / "pipecat.log"), str(TRACES / "livekit-metrics.jsonl"))
    assert code == 1
    assert "the slowest 10 of 40 turns" in out
    rows = [line.split() for line in out.splitlines() if line.startswith(" speech_") or line.startswith(" turn-")]
    assert len(rows) == 10
    totals = [int(r[-1]) if r[-1].isdigit() else int(r[-3]) for r in rows]
    assert totals[:4] == [3034, 3033, 3002, 2417]  # livekit's file: slowest first
    assert min(totals) == 1632  # the tenth slowest of all 40 turns
    titles = [line.strip() for line in out.splitlines() if line.strip() in ("pipecat.log", "livekit-metrics.jsonl")]
    assert titles == ["livekit-metrics.jsonl", "pipecat.log"]  # each file once, as its table's title
    assert "endp = endpointing wait" in out  # the legend of the short column names


def test_check_turns_lists_every_turn() -> None:
    code, out = at_80("check", str(TRACES / "pipecat.log"), str(TRACES / "livekit-metrics.jsonl"), "--turns")
    assert code == 1
    assert "(40 turns read)" in out
    rows = [line for line in out.splitlines() if line.startswith(" speech_") or line.startswith(" turn-")]
    assert len(rows) == 40


HELP_COMMANDS = [[]] + [[c.name or c.callback.__name__] for c in app.registered_commands if c.callback is not None]


@pytest.mark.parametrize("command", HELP_COMMANDS, ids=lambda c: " ".join(c) or "voicebudget")
def test_help_fits_80_columns_with_unbroken_sentences(command: list[str]) -> None:
    code, out = at_80(*command, "--help")
    assert code == 0, out
    assert "…" not in out  # no option name, type or help word cut
    lines = out.splitlines()
    description = lines[
        lines.index(next(x for x in lines if x.lstrip().startswith("Usage:"))) + 2 : lines.index(
            next(x for x in lines if x.startswith("╭"))
        )
    ]
    # a docstring's own line breaks used to survive into --help ("2 on / invalid input or when an /
    # evaluation failed"): a line breaks only where the next word would not have fitted
    for line, after in zip(description, description[1:], strict=False):
        if line.strip() and after.strip():
            assert len(line.rstrip()) + 1 + len(after.split()[0]) > 79, (line, after)
    if not command:  # the command list, the same rule in its help column
        rows = [x for x in lines if x.startswith("│ ")]
        for row, after in zip(rows, rows[1:], strict=False):
            if not after[2:13].strip():
                assert len(row[15:-1].rstrip()) + 1 + len(after[15:-1].split()[0]) > len(row[15:-2]), (row, after)


def test_run_comparison_is_one_line_per_variant_with_its_numbers() -> None:
    import voicebudget as vb

    code, out = at_80("run", "-n", "20000", "--seed", "1")
    assert code == 1
    result = vb.simulate(vb.load_scenario(ROOT / "scenarios" / "webrtc-cascade.toml"), samples=20_000, seed=1)
    base = result.reports[0].total.p95_ms
    for r in result.reports:
        d = r.tail_driver
        assert d is not None
        row = [
            r.name,
            f"{r.total.p50_ms:.1f}",
            f"{r.total.p95_ms:.1f}",
            f"{r.total.p95_ms - base:+.1f}",
            f"{r.within_budget_share:.1%}",
            d.name,
            f"{d.tail_ms:.0f}",
            "FAIL",
        ]
        assert row in [line.split() for line in out.splitlines()], row
    assert "seed 1, 20,000 turns per variant, budget 800 ms at p95" in out.splitlines()  # its own line
    assert "variant: baseline (ms)" in out  # the column legend is a caption, not a wrapped title
    assert "tail = share of the latency of the turns >= p95" in out


def test_waterfall_names_are_whole_and_a_router_is_not_drawn_as_parallel(tmp_path: Path) -> None:
    code, out = at_80("council", str(ROOT / "councils" / "intent-wafer-all.toml"), "-n", "5000")
    assert code == 1
    assert "gpt-oss-120b∥ " in out  # was cut to "gpt-oss-120∥"
    assert "[all] (ms)" in out  # the topology was eaten as rich markup
    code, out = at_80("council", str(ROOT / "councils" / "router-flash-lite-sonnet.toml"), "-n", "5000")
    assert "[router] (ms)" in out
    assert "∥ = one of" in out  # a router runs one member per turn
    assert "in parallel" not in out
    fitted = tmp_path / "fit.toml"
    assert at_80("fit", str(TRACES / "pipecat.log"), "-o", str(fitted))[0] == 0
    code, out = at_80("run", str(fitted), "-n", "5000")
    assert any(line.lstrip().startswith("first_phrase ") for line in out.splitlines())


def test_anomalies_are_listed_per_file_with_whole_field_names() -> None:
    code, out = at_80("check", str(TRACES / "pipecat-broken.log"), str(TRACES / "livekit-broken.jsonl"))
    assert code == 1
    lines = out.splitlines()
    assert "anomalies (12)" in lines
    assert [x.strip() for x in lines].count("livekit-broken.jsonl") == 2  # the file once per table: turns, anomalies
    rows = [x.split(None, 3) for x in lines if x[:6].strip().isdigit()]
    assert ["8", "end_of_utterance_delay", "200.5", "absurd value: over 20 s"] in [
        [*r[:3], r[3].strip()[:23]] for r in rows if len(r) == 4
    ]
    assert ["35", "LLM", "TTFB", "250.0"] in [x.split()[:4] for x in lines]
    assert any(x.split()[:3] == ["12", "ttft", '{"type":'] and '"llm_m...' in x for x in lines)  # value cut, marked


def test_tune_pick_uses_the_words_of_the_front_listing() -> None:
    code, out = at_80("tune", str(ROOT / "tests" / "data" / "tune-small.toml"), "-n", "500")
    assert code == 0
    flat = " ".join(out.split())
    assert "pick: a + b + c, vote m=2: lowest expected user time" in flat
    assert "1 a + b + c, vote m=2" in flat
    assert "tail: the member driving the tail (name#2: its second copy; tie of n: within the noise)" in flat
    assert "you  your council as written: a + b + c, all, rule majority" in out


def test_open_loop_infer_names_the_model_as_asked_and_capacity_counts_singular() -> None:
    code, out = at_80(
        "infer", "-m", "llama-3.3-70b", "-H", "h100-sxm", "--chips", "2", "--precision", "fp8", "--request-rate", "5"
    )
    assert code == 0
    assert "llama-3.3-70b (same architecture as llama-3.1-70b)" in " ".join(out.split())
    code, out = at_80("capacity", str(ROOT / "scenarios" / "support-line.toml"), "-n", "500")
    assert "6 turns/call-min x 1 LLM request = 6 requests/min per call" in out


def test_catalog_tables_keep_ids_numbers_headers_and_aliases_whole() -> None:
    code, out = at_80("models")
    assert code == 0
    rows = [line.split() for line in out.splitlines()]
    assert ["id", "params", "B", "active", "B", "layers", "kv", "ctx", "MoE", "aliases"] in rows  # one header line
    assert ["llama-3.1-70b", "70.6", "70.6", "80", "8", "128k", "dense", "llama-3.3-70b"] in rows  # alias unfolded
    code, out = at_80("hardware")
    assert code == 0
    rows = [line.split() for line in out.splitlines()]
    assert ["id", "name", "mem", "GB", "TB/s", "bf16", "TF", "fp8", "TF", "eff", "$/h"] in rows
    h100 = next(r for r in rows if r and r[0] == "h100-sxm")
    assert h100[-6:] == ["80", "3.35", "989", "1979", "1.00", "3.00"]  # the datasheet's figures, each whole


def test_check_says_how_many_listed_turns_the_statistics_leave_out() -> None:
    code, out = at_80("check", str(TRACES / "pipecat-broken.log"), str(TRACES / "livekit-broken.jsonl"))
    assert code == 1
    flat = " ".join(out.split())
    counted = int(flat.split(" turns within ")[0].split()[-1])  # the verdict line's turn count
    assert counted == 7
    assert f"(the slowest 10 of 18 turns read, {18 - counted} of them not in the statistics (dim);" in flat
    code, out = at_80("check", str(TRACES / "pipecat.log"), str(TRACES / "livekit-metrics.jsonl"))
    assert "(the slowest 10 of 40 turns read; all with --turns" in " ".join(out.split())  # nothing left out
