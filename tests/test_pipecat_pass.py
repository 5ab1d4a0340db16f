"""The Pipecat reader's shortcuts change nothing (issue 24): a line remembered but for its time is not split
nor classified again, or not read at all when it changes nothing; a log given as runs of lines, as lines or
as text reads alike. Each is compared with the reference reading every line in full (``fast=False``), on
every sample and case and on generated logs that repeat lines with other times, valid or not."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voicebudget._io import iter_blocks, iter_lines
from voicebudget.traces import ReadOptions
from voicebudget.traces._pipecat import _read, read_pipecat, read_pipecat_lines, read_pipecat_runs
from voicebudget.traces._pipecat_lines import _PROC_REST, _TEMPLATE_STARTS, _cut_rest, _is_cut, inert, plain_stamp
from voicebudget.traces._pipecat_pass import runs_of_blocks, runs_of_text

TRACES = Path(__file__).parent / "data" / "traces"
LOGS = sorted(p for p in TRACES.rglob("*.log"))


def _both(text: str, options: ReadOptions | None = None) -> tuple[str, str]:
    fast = _read(lambda: runs_of_text(text), "<log>", options)
    full = _read(lambda: runs_of_text(text), "<log>", options, fast=False)
    return repr(fast), repr(full)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(TRACES)))
def test_every_sample_reads_as_the_full_reading(path: Path) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    for options in (None, ReadOptions(stop_secs=0.5)):
        fast, full = _both(text, options)
        assert fast == full


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(TRACES)))
def test_runs_lines_and_text_read_alike(path: Path) -> None:
    """A file read as runs (iter_blocks), as lines (iter_lines, a log shipper's layer path) and as text."""
    runs = read_pipecat_runs(lambda: iter_blocks(path), "f")
    lines = read_pipecat_lines(lambda: iter_lines(path), "f")
    text = read_pipecat(path.read_text(encoding="utf-8", errors="replace").removeprefix("\ufeff"), "f")
    assert repr(runs) == repr(lines) == repr(text)


def test_iter_blocks_gives_iter_lines_lines(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_bytes(b"\xef\xbb\xbfone\r\ntwo\n\nthree \xff\nlast")
    got = [
        (first + i, line.removesuffix("\r"))
        for first, text in iter_blocks(path)
        for i, line in enumerate(text.split("\n")[:-1])
    ]
    assert got == list(iter_lines(path)) == [(1, "one"), (2, "two"), (3, ""), (4, "three \ufffd"), (5, "last")]
    assert list(runs_of_blocks([(1, "a\n")])) == [(1, "a\n", True)]


_STAMPS = (
    "2025-11-29 12:20:00.{ms:03d}",
    "2025-11-29T12:20:01,{ms:03d}",
    "2025-13-01 12:20:00.{ms:03d}",  # month 13
    "2024-02-29 12:20:00.{ms:03d}",  # a leap day
    "2025-02-29 12:20:00.{ms:03d}",  # none
    "2025-11-29 24:00:00.{ms:03d}",
    "2025-11-29 12:60:00.{ms:03d}",
    "2025-11-29 12:20:60.{ms:03d}",
    "0000-01-01 00:00:00.{ms:03d}",
    "2025-11-29 12:20:00.{ms}",  # fewer or more digits
    "2025-11-29 12:20:0\u0663.{ms:03d}",  # an Arabic-Indic digit
    "2025-11-29 12:20:00.\u0661{ms:02d}",  # ... in the milliseconds
    "2025-11-29 12:20:00:{ms:03d}",  # another separator
    "2025-11-29 12:20:00.{ms:03d}Z",
    "2025-11-29 12:20:00",
)
_MESSAGES = (
    "VADProcessor#0: User stopped speaking",
    "VADProcessor#0: User started speaking",
    "LLMUserAggregator#0: User stopped speaking (strategy: SpeechTimeoutUserTurnStopStrategy#0)",
    "SpeechTimeoutUserTurnStopStrategy#0 VADUserStoppedSpeakingFrame received",
    "User stopped speaking",
    "OpenAILLMService#0 TTFB: 0.{ms:03d}s",
    "OpenAILLMService#0 TTFB: 0.3",
    "OpenAILLMService#0 TTFAT: 0.301s (0.002s thinking)",
    "CartesiaTTSService#0 TTFB: 0.{ms:03d}s",
    "CartesiaTTSService#0 text aggregation time: 0.0{ms:03d}",
    "CartesiaTTSService#0 TTFA: 0.137s (0.023s leading silence)",
    "OpenAILLMService#0: Generating LLM response [{{'role': 'user', 'content': 'hi'}}]",
    "OpenAILLMService#0: Generating LLM response [{{'role': 'assistant', 'content': 'hi'}}]",
    "Bot started speaking",
    "Bot stopped speaking",
    "LLMUserAggregator#0: broadcasting interruption",
    "OpenAILLMService#0 processing time: 0.{ms:03d}s",
    "OpenAILLMService#0 TTFB",
    "OpenAILLMService#0 TT",
    "OpenAILLMService#0: User st",
    "OpenAILLMService#0 User",
    "Foo#1 Bar#2",
    "OpenAILLMService#0 did not report TTFB",
    "Linking VADProcessor#0 -> DeepgramSTTService#0",
    "OpenAILLMService#0 Calling function [get_weather:call_1]",
    "LLMAssistantAggregator#0 FunctionCallResultFrame: [get_weather:call_1]",
    '{{"kind": "function_call_started", "function_name": "get_weather", "tool_call_id": "c1"}}',
    "Setting VAD params to: confidence=0.7 start_secs=0.2 stop_secs=0.{ms:03d} min_volume=0.6",
    "  0.704s  TOTAL",
    "LATENCY FROM USER STOPPED SPEAKING TO BOT STARTED SPEAKING: 0.{ms:03d}s",
    "End of Turn result: EndOfTurnState.COMPLETE",
    "   ",
    "",
)
_WHERES = (
    "pipecat.processors.metrics.frame_processor_metrics:stop_ttfb_metrics:175",
    "pipecat.processors.metrics.frame_processor_metrics:stop_processing_metrics:308",
    "pipecat.transports.base_output:_bot_started_speaking:751",
    "pipecat.processors.audio.vad_processor:on_speech_stopped:81",
    "x:y\t:1",
)


@st.composite
def _logs(draw: st.DrawFn) -> str:
    """A log whose lines are a few lines drawn from layouts, places and messages, each repeated with times
    drawn from :data:`_STAMPS` (valid or not), with colours, trailing blanks and lines without a layout
    now and then."""
    pool = []
    for _ in range(draw(st.integers(1, 8))):
        level = draw(st.sampled_from(["DEBUG   ", "INFO    ", "DEBUG", "WARNING "]))
        where = draw(st.sampled_from(_WHERES))
        msg = draw(st.sampled_from(_MESSAGES)).format(ms=draw(st.integers(0, 999)))
        layout = draw(st.sampled_from(["{t} | {l} | {w} - {m}"] * 6 + ["{t} - {l} - {m}", "{t} {l} {m}", "{m}"]))
        end = draw(st.sampled_from(["", "", "", " ", "\r", "\t"]))
        pool.append((layout, level, where, msg, end))
    lines = []
    for _ in range(draw(st.integers(1, 60))):
        layout, level, where, msg, end = draw(st.sampled_from(pool))
        stamp = draw(st.sampled_from(_STAMPS)).format(ms=draw(st.integers(0, 999)))
        line = layout.format(t=stamp, l=level, w=where, m=msg) + end
        if draw(st.integers(0, 20)) == 0:
            line = "\x1b[32m" + line + "\x1b[0m"
        lines.append(line)
    return "\n".join(lines)


@settings(max_examples=300, deadline=None)
@given(text=_logs())
def test_generated_logs_read_as_the_full_reading(text: str) -> None:
    fast, full = _both(text)
    assert fast == full


@given(msg=st.from_regex(re.compile(r"(?:\S+ )?\[?[\w.]{0,4}#[0-9\u0663]{1,3}\]?:? ?[TtUx ]{0,8}[a-z:.]{0,30}")))
def test_cut_rest_gives_the_rest_of_every_line_cut_short(msg: str) -> None:
    """``_cut_rest`` rules most messages out without the pattern: whenever the pattern's rest would make the
    line a cut one, it gives that rest."""
    m = _PROC_REST.match(msg)
    rest = None if m is None else m.group("rest")
    got = _cut_rest(msg)
    assert got is None or got == rest
    if rest is not None and (_is_cut(rest) or (len(rest) >= 4 and "User stopped speaking".startswith(rest))):
        assert got == rest


def test_inert_and_plain_stamp() -> None:
    assert inert("LLMUserAggregator#0: broadcasting interruption", "x - LLMUserAggregator#0: broadcasting")
    assert not inert("OpenAILLMService#0 TT", "x - OpenAILLMService#0 TT")  # a metrics line cut short
    assert not inert("VADProcessor#0: User sto", "x - VADProcessor#0: User sto")
    assert not inert("odd", "t | DEBUG | m:stop_ttfb_metrics:1 - odd")  # a metrics function's line
    assert inert("did not report TTFB", "t | DEBUG | m:stop_ttfb_metrics:1 - did not report TTFB")
    assert all(p in _TEMPLATE_STARTS for p in ("", "T", "User stopped spe"))
    assert plain_stamp("2025-11-29 12:20:00.123 | DEBUG")
    assert plain_stamp("2024-02-29T23:59:59,999 | DEBUG")
    for bad in ("2025-02-29 12:20:00.123", "2025-11-29 12:20:60.123", "2025-11-29 12:20:00.12", "2025-11-29"):
        assert not plain_stamp(bad + " | DEBUG")
