"""Pipecat's version rules are data with their source; custom loguru layouts; the VAD's stop_secs
from the log; linear time on hostile lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from voicebudget import ScenarioError
from voicebudget.cli import app
from voicebudget.traces import ReadOptions, read_trace
from voicebudget.traces._pipecat_rules import LINE_RULES, LOG_PREFIXES, RULE_SETS, loguru_prefix

CASES = Path(__file__).parent / "data" / "traces" / "cases"
runner = CliRunner()


def test_every_rule_names_its_source_and_versions() -> None:
    for rule in (*LINE_RULES, *RULE_SETS.values()):
        assert rule.versions
        assert "src/pipecat/" in rule.source or "LatencyBreakdown" in rule.source
    for line in LINE_RULES:
        assert line.rule_set in ("", *RULE_SETS)
    for prefix in LOG_PREFIXES:
        assert prefix.pattern.match(prefix.example.replace(" - ...", " - msg").replace("...", "msg")), prefix.name


def test_stop_secs_from_the_log_unless_given() -> None:
    path = CASES / "pipecat-1x-vad-params" / "pipecat.log"
    from_log = read_trace(path)
    assert "stop_secs = 0.8 s (the log's VAD params)" in from_log.anchor
    given = read_trace(path, options=ReadOptions(stop_secs=0.2))
    assert "(--stop-secs)" in given.anchor
    # the anchor moves by the difference: 0.8 s - 0.2 s
    assert from_log.turns[0].total_ms == pytest.approx(2155.0)
    assert given.turns[0].total_ms == pytest.approx(1555.0)
    assert given.turns[0].stages_ms["endpointing"] == pytest.approx(805.0)


def test_loguru_format_string_is_read() -> None:
    prefix = loguru_prefix("<green>{time:YYYY-MM-DD HH:mm:ss.SSS}</green> | {level: <8} | {extra[call_id]} | {message}")
    m = prefix.pattern.match("2025-10-28 16:10:43.200 | DEBUG    | CA0 | OpenAILLMService#1 TTFB: 0.71")
    assert m is not None
    assert (m.group("ts"), m.group("msg")) == ("2025-10-28 16:10:43.200", "OpenAILLMService#1 TTFB: 0.71")
    with pytest.raises(ValueError, match=r"\{time\}"):
        loguru_prefix("{level} {message}")


def test_cli_log_format(tmp_path: Path) -> None:
    log = tmp_path / "call.log"
    log.write_text(
        "2025-10-28 16:10:43.200 ~ CA0 ~ DEBUG ~ VADProcessor#0: User stopped speaking\n"
        "2025-10-28 16:10:44.130 ~ CA0 ~ DEBUG ~ OpenAILLMService#1 TTFB: 0.71\n"
        "2025-10-28 16:10:44.380 ~ CA0 ~ DEBUG ~ CartesiaTTSService#1 TTFB: 0.2\n"
    )
    fmt = "{time:YYYY-MM-DD HH:mm:ss.SSS} ~ {extra[call_id]} ~ {level} ~ {message}"
    result = runner.invoke(app, ["check", str(log), "--log-format", fmt, "-f", "json", "--budget-ms", "2000"])
    assert result.exit_code == 0, result.output
    (turn,) = json.loads(result.stdout)["turns"]
    assert turn["total_ms"] == pytest.approx(1380.0)
    bad = runner.invoke(app, ["check", str(log), "--log-format", "{message}"])
    assert bad.exit_code == 2
    assert "--log-format" in bad.output


def test_log_format_error_from_the_library(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"\.log: log_format: a log format needs"):  # the CLI: --log-format
        read_trace(CASES / "pipecat-ttfat" / "pipecat-ttfat.log", options=ReadOptions(log_format="{level}"))


def test_hostile_lines_are_flagged_not_slow(tmp_path: Path) -> None:
    """Issue 11 case 11 (a 50 KB line of spaces after the level column) and its kin: one anomaly each,
    no traceback (linear time: benchmarks/bench_traces.py)."""
    vad = (
        "2025-11-29 12:20:00.200 | DEBUG    | pipecat.processors.audio.vad_processor:on_speech_stopped:78 - "
        "VADProcessor#0: User stopped speaking\n"
    )
    path = tmp_path / "hostile.log"
    for body in (
        "2025-11-29 12:20:00.300 | DEBUG |" + " " * 50_000,
        "2025-11-29 12:20:00.300 | DEBUG    | x:stop_ttfb_metrics:1 - " + "A" * 50_000 + "#1 TTFB: 0.4s x",
        "2025-11-29 12:20:00.300 | DEBUG    | x:stop_ttfb_metrics:1 - OpenAILLMService#0 TTFB: " + "1" * 50_000 + "x",
    ):
        path.write_text(vad + body + "\n")
        table = read_trace(path)
        assert [a.line for a in table.anomalies if a.line == 2], body[:80]


def test_garbled_value_is_flagged_without_a_function_column(tmp_path: Path) -> None:
    """A layout without loguru's function column: a TTFB line whose value is not a number is still
    named as broken (not silently skipped)."""
    log = tmp_path / "bot.log"
    log.write_text(
        "2025-10-28T16:10:43.200+0000 - DEBUG - CA0 - VADProcessor#0: User stopped speaking\n"
        "2025-10-28T16:10:44.130+0000 - DEBUG - CA0 - OpenAILLMService#1 TTFB: 0.7.1s\n"
        "2025-10-28T16:10:44.380+0000 - DEBUG - CA0 - CartesiaTTSService#1 TTFB: 0.200s\n"
    )
    table = read_trace(log)
    assert [(a.line, a.field, a.reason) for a in table.anomalies] == [
        (2, "LLM TTFB", "unparseable metrics line (cut short?)")
    ]
    assert table.turns[0].flagged
