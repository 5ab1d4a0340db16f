"""The reader table: detection, the CLI's --format-in choices and the unknown-format message read it;
one options object reaches every reader; every turn records its reader and rule set."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from voicebudget import ScenarioError
from voicebudget.cli import app
from voicebudget.traces import (
    DETECT_HEAD_CHARS,
    FORMATS,
    READERS,
    ReadOptions,
    detect_format,
    get_reader,
    read_trace,
)

DATA = Path(__file__).parent / "data" / "traces"
runner = CliRunner()


def test_formats_are_the_reader_table_names() -> None:
    assert FORMATS == tuple(r.name for r in READERS)
    assert len(set(FORMATS)) == len(FORMATS)
    assert {"pipecat", "livekit", "otel"} <= set(FORMATS)
    assert all(r.description for r in READERS)


def test_cli_format_in_choices_come_from_the_table(tmp_path: Path) -> None:
    trace = str(DATA / "pipecat.log")
    for args in (["check", trace], ["fit", trace, "-o", str(tmp_path / "x.toml")]):
        result = runner.invoke(app, [*args, "--format-in", "csv"])
        assert result.exit_code == 2, result.output
        for name in FORMATS:
            assert repr(name) in result.output


def test_unknown_format_message_names_the_option_and_every_format(tmp_path: Path) -> None:
    junk = tmp_path / "notes.txt"
    junk.write_text("hello\nworld\n")
    with pytest.raises(ScenarioError, match=r"give it with fmt=\.\.\.") as err:  # the CLI says --format-in
        read_trace(junk)
    for name in FORMATS:
        assert f"{name}: " in str(err.value)
    result = runner.invoke(app, ["check", str(junk)])
    assert result.exit_code == 2
    assert "--format-in" in result.output
    assert "Traceback" not in result.output


def test_unknown_reader_name_lists_the_known_ones() -> None:
    with pytest.raises(ScenarioError, match="allowed: " + ", ".join(FORMATS)):
        get_reader("csv")
    assert get_reader("pipecat").name == "pipecat"


def test_detection_reads_only_the_head() -> None:
    line = "2025-01-01 10:00:00.000 | DEBUG    | x:on_speech_stopped:1 - VADProcessor#0: User stopped speaking\n"
    assert detect_format(line) == "pipecat"
    assert detect_format("x" * DETECT_HEAD_CHARS + "\n" + line) is None
    assert detect_format("x" * (DETECT_HEAD_CHARS - len(line)) + line) == "pipecat"


def test_long_token_is_no_format(tmp_path: Path) -> None:
    """A 200 KB token (issue 11: detection was quadratic on it) is simply not a trace."""
    big = tmp_path / "token.txt"
    big.write_text("a" * 200_000 + "#1 TTF")
    assert detect_format(big.read_text()) is None
    result = runner.invoke(app, ["check", str(big)])
    assert result.exit_code == 2
    assert "unknown trace format" in result.output


def test_every_turn_records_its_reader() -> None:
    for name, fmt in (
        ("pipecat.log", "pipecat"),
        ("livekit-metrics.jsonl", "livekit"),
        ("otel-spans.json", "otel"),
        ("livekit-history.json", "livekit-history"),
    ):
        table = read_trace(DATA / name)
        assert {t.reader for t in table.turns} == {fmt}
        assert table.turns[0].to_dict()["reader"] == fmt


def test_forced_reader_is_used(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="no turns found in this livekit trace"):
        read_trace(DATA / "pipecat.log", "livekit")


@pytest.mark.parametrize(
    ("values", "option", "flag"),
    [
        ({"stop_secs": -0.1}, "stop_secs", "--stop-secs"),
        ({"absurd_ms": 0.5}, "absurd_ms", "--absurd-ms"),
        ({"stop_secs": float("nan")}, "stop_secs", "--stop-secs"),
        ({"log_format": ""}, "log_format", "--log-format"),
    ],
)
def test_read_options_errors_name_the_option(values: dict[str, float], option: str, flag: str) -> None:
    # Python callers read the parameter; the CLI's check names its flag for the same error
    with pytest.raises(ScenarioError, match=f"^{option}: "):
        ReadOptions.checked(**values)
    args = [f"{flag}={v}" for v in values.values()]
    result = runner.invoke(app, ["check", str(DATA / "livekit-metrics.jsonl"), *args])
    assert result.exit_code == 2
    assert f"error: {flag}: " in result.output


def test_read_options_reach_the_readers() -> None:
    tight = read_trace(DATA / "livekit-metrics.jsonl", options=ReadOptions(absurd_ms=100.0))
    assert any("absurd value: over 0.1 s" in a.reason for a in tight.anomalies)
    assert ReadOptions().stop_secs_or_default == pytest.approx(0.2)
    assert ReadOptions(stop_secs=1.0).stop_secs_or_default == pytest.approx(1.0)


def test_cli_stop_secs_and_absurd_ms_errors_exit_2() -> None:
    for args in (["--stop-secs", "-1"], ["--absurd-ms", "0"]):
        result = runner.invoke(app, ["check", str(DATA / "pipecat.log"), *args])
        assert result.exit_code == 2, result.output
        assert args[0] in result.output
        assert "Traceback" not in result.output


OTLP = sorted(
    p
    for p in [*DATA.glob("otel-*.json*"), *(DATA / "cases").glob("*otel*/spans.json*")]
    if not p.name.endswith(".truth.json")
)


@pytest.mark.parametrize("path", OTLP, ids=lambda p: p.parent.name + "/" + p.name)
def test_streamed_otlp_equals_the_whole_file_reader(path: Path) -> None:
    """read_trace streams OTLP JSON lines (read_otel_lines); the turns and anomalies are those of
    read_otel on the whole text, line numbers included."""
    from dataclasses import replace

    from voicebudget._io import read_text
    from voicebudget.traces._otel import read_otel

    streamed = read_trace(path, "otel")
    whole = read_otel(read_text(path, errors="replace"), str(path))
    assert streamed.turns  # every sample has turns
    assert {t.reader for t in (*streamed.turns, *whole.turns)} == {"otel"}
    assert replace(streamed, wrappers=()) == whole


def test_otlp_json_lines_are_read_in_one_pass_and_a_pretty_printed_export_whole() -> None:
    from voicebudget._io import iter_lines
    from voicebudget.traces._otel import read_otel_lines

    for name, passes in [("otel-livekit-broken.jsonl", 1), ("otel-spans.json", 2)]:
        opened: list[int] = []

        def open_lines(path: Path = DATA / name, opened: list[int] = opened) -> object:
            opened.append(1)
            return iter_lines(path)

        table = read_otel_lines(open_lines, name)  # type: ignore[arg-type]
        assert len(opened) == passes, name
        assert table.turns
    broken = read_otel_lines(lambda: iter_lines(DATA / "otel-livekit-broken.jsonl"), "b.jsonl")
    assert [a.line for a in broken.anomalies] == sorted(a.line for a in broken.anomalies)
    assert all(1 <= a.line <= 7 for a in broken.anomalies)
