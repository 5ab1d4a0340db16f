"""Pipecat's version rules are data with their source; custom loguru layouts; the VAD's stop_secs
from the log; linear time on hostile lines."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from voicebudget import ScenarioError
from voicebudget.cli import app
from voicebudget.traces import ReadOptions, read_trace
from voicebudget.traces._pipecat_rules import LINE_RULES, LOG_PREFIXES, RULE_SETS, LineRule, loguru_prefix

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


def test_every_rule_has_a_needle_and_a_key() -> None:
    """The reader runs a rule's pattern only when its needle is in the message: the needle must be text
    every match holds (here: written out in the pattern), and hold one of the key words that sort
    messages (issue 24: one pass, ~1 pattern in 25 run per line)."""
    from voicebudget.traces._pipecat_rules import _KEYS

    for rule in LINE_RULES:
        assert rule.needle, rule.kind
        assert rule.needle in rule.pattern.pattern.replace("\\", ""), rule.kind
        assert any(key in rule.needle for key in _KEYS), rule.kind


@pytest.mark.parametrize("rule", [r for r in LINE_RULES if r.leads], ids=lambda r: r.needle.strip(" :"))
@given(data=st.data())
def test_a_leading_rule_leaves_no_room_for_an_earlier_one(rule: LineRule, data: st.DataObject) -> None:
    """Issue 24: a message that starts with a processor's name is tried on its leading rule first. That is
    the first match in LINE_RULES order only if no earlier rule matches any message the leading rule
    matches from its start: checked here on messages drawn from the rule's own pattern (any processor
    name, any number Pipecat's f-strings could print), the fast answer equal to the screened one."""
    from voicebudget.traces._pipecat_rules import _screened, classify

    assert rule.pattern.pattern.startswith(r"(?<![\w.])(?P<proc>")
    assert rule.pattern.pattern.endswith("$")
    msg = data.draw(st.from_regex(rule.pattern.pattern.removeprefix(r"(?<![\w.])").removesuffix("$"), fullmatch=True))
    earlier = [r for r in LINE_RULES[: LINE_RULES.index(rule)] if not r.kind.startswith("breakdown")]
    assert [r.kind for r in earlier if r.pattern.search(msg)] == []
    fast, screened = classify(msg, breakdown=False), _screened(msg, breakdown=False)
    assert fast is not None
    assert screened is not None
    assert (fast[0], fast[1].span(), fast[1].groups()) == (rule, screened[1].span(), screened[1].groups())


@given(
    moment=st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1)),
    digits=st.integers(0, 9),
    sep=st.sampled_from([" ", "T"]),
    comma=st.booleans(),
)
def test_log_timestamps_read_as_the_standard_library_reads_them(
    moment: datetime, digits: int, sep: str, comma: bool
) -> None:
    from voicebudget.traces._pipecat import _timestamp

    text = moment.strftime(f"%Y-%m-%d{sep}%H:%M:%S")
    if digits:
        text += ("," if comma else ".") + f"{moment.microsecond:06d}{moment.microsecond % 1000:03d}"[:digits]
    want = datetime.fromisoformat(text.replace(",", ".").replace("T", " ")).replace(tzinfo=UTC).timestamp()
    assert _timestamp(text) == want


@pytest.mark.parametrize(
    "bad",
    [
        "2025-13-01 10:00:00.000",
        "2025-02-30 10:00:00",
        "2025-01-01 24:00:00",
        "2025-01-01 10:60:00",
        "2025-01-01 10:00:60.5",
    ],
)
def test_invalid_log_timestamps_are_refused(bad: str) -> None:
    from voicebudget.traces._pipecat import _timestamp

    with pytest.raises(ValueError):  # noqa: PT011  # the standard library's message
        _timestamp(bad)


def test_a_ttfb_without_its_s_is_not_read_in_a_log_that_writes_it(tmp_path: Path) -> None:
    """Read in one pass, the log is read again when a TTFB without its "s" came before the first with
    one: the result is as if the reader had known from the start."""
    head = "2025-11-29 12:20:00.{} | DEBUG    | x:y:1 - "
    lines = [
        head.format("200") + "VADProcessor#0: User stopped speaking",
        head.format("700") + "OpenAILLMService#0 TTFB: 0.3",  # not Pipecat's metric in this log
        head.format("900") + "OpenAILLMService#0 TTFB: 0.4s",
        head.format("990") + "CartesiaTTSService#0 TTFB: 0.05s",
    ]
    path = tmp_path / "a.log"
    path.write_text("\n".join(lines) + "\n")
    (turn,) = read_trace(path).turns
    assert turn.stages_ms["llm_ttft"] == pytest.approx(400.0)
    assert turn.total_ms == pytest.approx(990.0)  # VAD stop 0.2 s - stop_secs 0.2 s -> TTS TTFB line at 0.99 s
