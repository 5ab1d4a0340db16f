"""Trace readers: per-turn numbers against the sample truth files, and flagged defects in files
written for these tests (tests/data/traces/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from voicebudget import ScenarioError
from voicebudget.traces import ReadOptions, detect_format, read_trace

DATA = Path(__file__).parent / "data" / "traces"
# The sample logs round values: LiveKit/OTel to 0.1 ms (4 decimals in s), Pipecat TTFBs to 1 ms and
# its timestamps to 1 ms, so values rebuilt from two timestamps and a TTFB are within ~1.5 ms.
LK_TOL_MS = 0.06
PC_VALUE_TOL_MS = 0.51
PC_DERIVED_TOL_MS = 1.6


def truth(name: str) -> list[dict[str, float]]:
    return json.loads((DATA / name).read_text())["turns"]


def test_livekit_sample_per_turn() -> None:
    table = read_trace(DATA / "livekit-metrics.jsonl")
    expected = truth("livekit-metrics.truth.json")
    assert table.format == "livekit"
    assert table.anomalies == ()
    assert [t.id for t in table.turns] == [t["speech_id"] for t in expected]
    for turn, exp in zip(table.turns, expected, strict=True):
        assert turn.stages_ms["endpointing"] == pytest.approx(exp["eou_s"] * 1000, abs=LK_TOL_MS)
        assert turn.stages_ms["llm_ttft"] == pytest.approx(exp["ttft_s"] * 1000, abs=LK_TOL_MS)
        assert turn.stages_ms["tts_ttfb"] == pytest.approx(exp["ttfb_s"] * 1000, abs=LK_TOL_MS)
        assert turn.total_ms == pytest.approx(exp["total_s"] * 1000, abs=3 * LK_TOL_MS)
    # the first turn opened the TTS connection (connection_reused false, acquire_time 0.23 s)
    assert table.turns[0].cold
    assert not any(t.cold for t in table.turns[1:])


def test_pipecat_sample_per_turn() -> None:
    table = read_trace(DATA / "pipecat.log")
    expected = truth("pipecat.truth.json")
    assert table.format == "pipecat"
    assert "0.2 s" in table.anchor
    assert table.anomalies == ()
    assert len(table.turns) == len(expected) == 20
    for turn, exp in zip(table.turns, expected, strict=True):
        s = turn.stages_ms
        assert s["asr"] == pytest.approx(exp["stt_ttfb_s"] * 1000, abs=PC_VALUE_TOL_MS)
        assert s["llm_ttft"] == pytest.approx(exp["llm_ttfb_s"] * 1000, abs=PC_VALUE_TOL_MS)
        assert s["first_phrase"] == pytest.approx(exp["text_aggregation_s"] * 1000, abs=1e-6)
        assert s["tts_ttfb"] == pytest.approx(exp["tts_ttfb_s"] * 1000, abs=PC_VALUE_TOL_MS)
        assert s["leading_silence"] == pytest.approx(exp["leading_silence_s"] * 1000, abs=PC_VALUE_TOL_MS)
        assert s["endpointing"] == pytest.approx(exp["turn_commit_s"] * 1000, abs=PC_DERIVED_TOL_MS)
        assert turn.total_ms == pytest.approx(exp["voice_to_voice_server_s"] * 1000, abs=PC_DERIVED_TOL_MS)


def test_pipecat_stop_secs_moves_the_anchor() -> None:
    base = read_trace(DATA / "pipecat.log").turns[0]
    shifted = read_trace(DATA / "pipecat.log", options=ReadOptions(stop_secs=0.3)).turns[0]
    assert shifted.total_ms == pytest.approx(base.total_ms + 100, abs=1e-6)
    assert shifted.stages_ms["endpointing"] == pytest.approx(base.stages_ms["endpointing"] + 100, abs=1e-6)


def test_otel_livekit_sample_per_turn() -> None:
    table = read_trace(DATA / "otel-spans.json")
    expected = truth("otel-spans.truth.json")
    assert table.format == "otel-livekit"
    assert table.anomalies == ()
    assert len(table.turns) == 20
    for turn, exp in zip(table.turns, expected, strict=True):
        assert turn.stages_ms["endpointing"] == pytest.approx(exp["eou_s"] * 1000, abs=LK_TOL_MS)
        assert turn.stages_ms["llm_ttft"] == pytest.approx(exp["ttft_s"] * 1000, abs=LK_TOL_MS)
        assert turn.stages_ms["tts_ttfb"] == pytest.approx(exp["ttfb_s"] * 1000, abs=LK_TOL_MS)
        assert turn.total_ms == pytest.approx(exp["e2e_s"] * 1000, abs=LK_TOL_MS)
        # what lk.e2e_latency has beyond the three stages (first sentence, playout start)
        assert turn.stages_ms["other"] == pytest.approx(
            (exp["e2e_s"] - exp["eou_s"] - exp["ttft_s"] - exp["ttfb_s"]) * 1000, abs=4 * LK_TOL_MS
        )


def anomalies(path: str) -> list[tuple[int, str, str]]:
    return [(a.line, a.field, a.reason) for a in read_trace(DATA / path).anomalies]


def test_livekit_broken_lines_are_flagged_with_line_numbers() -> None:
    table = read_trace(DATA / "livekit-broken.jsonl")
    found = {(a.line, a.field): a for a in table.anomalies}
    assert found[(6, "ttft")].reason == "no first token (ttft = -1)"
    assert found[(8, "end_of_utterance_delay")].value == 200.5
    assert "absurd" in found[(8, "transcription_delay")].reason
    # a cut llm_metrics line lost its speech_id: placed on the turn before it that lacks one (d)
    assert "unparseable JSON" in found[(12, "ttft")].reason
    assert found[(12, "ttft")].turn == "d"
    assert "duplicate eou_metrics" in found[(17, "speech_id")].reason
    # a greeting: the missing metric is named with the speech id
    assert found[(21, "eou_metrics")].reason.startswith("no eou_metrics line for speech_id g ")
    # a cut eou_metrics line opens the next turn that lacks one (h), which is not flagged twice
    assert found[(24, "end_of_utterance_delay")].turn == "h"
    assert found[(29, "ttfb")].reason == "negative duration"
    assert len(table.anomalies) == 8
    clean = {t.id: t.total_ms for t in table.turns if not t.flagged}
    assert clean == {"a": 1870.0, "f": 1090.0, "j": 860.0, "k": 890.0}


def test_pipecat_broken_lines_are_flagged() -> None:
    table = read_trace(DATA / "pipecat-broken.log")
    assert anomalies("pipecat-broken.log") == [
        (20, "LLM TTFB", "unparseable metrics line (cut short?)"),
        (24, "LLM TTFB", "negative duration"),
        (26, "TTS TTFB", "turn has no TTS TTFB line"),
        (35, "LLM TTFB", "absurd value: over 20 s (stale anchor?)"),  # one row: not its derived request start
    ]
    clean = [t for t in table.turns if not t.flagged]
    # turn 2: the user paused (VAD stop at 20.2 s), spoke again, stopped at 21.0 s: anchor 20.8 s
    assert [(t.id, t.total_ms) for t in clean] == [("turn-1", 1750.0), ("turn-2", 1450.0), ("turn-6", 1350.0)]
    first = clean[0].stages_ms
    assert first == {
        "asr": 250.0,
        "endpointing": 800.0,
        "llm_ttft": 600.0,
        "first_phrase": 150.0,
        "tts_ttfb": 200.0,
        "leading_silence": 50.0,
    }
    # no text aggregation line: the gap TTS start 41.25 s - first token 41.0 s is not a measured stage,
    # it stays in "other" (cases/traces/README.md, pipecat-iso-format.log: "other 45")
    assert "first_phrase" not in clean[2].stages_ms
    assert clean[2].stages_ms["other"] == pytest.approx(250.0)


def test_otel_livekit_jsonl_nested_spans_and_broken_line() -> None:
    table = read_trace(DATA / "otel-livekit-broken.jsonl")
    assert table.format == "otel-livekit"
    assert [(a.line, a.field, a.turn) for a in table.anomalies] == [
        (3, "lk.response.ttft", "s3"),
        (4, "lk.response.ttft", "s4"),
        (4, "lk.response.ttfb", "s4"),
        (5, "", None),
        (6, "lk.e2e_latency", "s5"),
    ]
    s1 = table.turns[0]
    assert s1.stages_ms == {
        "endpointing": 500.0,
        "asr": 200.0,
        "llm_ttft": 800.0,
        "tts_ttfb": 300.0,
        "other": pytest.approx(100.0),
    }
    assert s1.total_ms == pytest.approx(1700.0)
    assert [t.id for t in table.turns if not t.flagged] == ["s1", "s2", "s6"]


def test_otel_pipecat_turn_spans() -> None:
    table = read_trace(DATA / "otel-pipecat.json")
    assert table.format == "otel-pipecat"
    assert table.anomalies == ()
    t1 = table.turns[0]
    assert t1.total_ms == pytest.approx(1950.0)
    assert t1.stages_ms["endpointing"] == pytest.approx(900.0)
    assert t1.stages_ms["asr"] == pytest.approx(250.0)
    assert t1.stages_ms["llm_ttft"] == pytest.approx(450.0)
    assert t1.stages_ms["first_phrase"] == pytest.approx(200.0)
    assert t1.stages_ms["tts_ttfb"] == pytest.approx(150.0)
    assert t1.stages_ms["other"] == pytest.approx(250.0)
    assert "first_phrase" not in table.turns[3].stages_ms  # turn 4 logged no text aggregation


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("pipecat.log", "pipecat"),
        ("livekit-metrics.jsonl", "livekit"),
        ("otel-spans.json", "otel"),
        ("otel-livekit-broken.jsonl", "otel"),
        ("pipecat-broken.log", "pipecat"),
    ],
)
def test_format_detection(name: str, fmt: str) -> None:
    assert detect_format((DATA / name).read_text()) == fmt


def test_unknown_and_missing_files_raise_scenario_error(tmp_path: Path) -> None:
    junk = tmp_path / "notes.txt"
    junk.write_text("hello\nworld\n")
    with pytest.raises(ScenarioError, match="unknown trace format"):
        read_trace(junk)
    with pytest.raises(ScenarioError, match="missing.log: file not found"):
        read_trace(tmp_path / "missing.log")
    cut = tmp_path / "cut.json"
    cut.write_text((DATA / "otel-spans.json").read_text()[:500])
    with pytest.raises(ScenarioError, match="not an OTLP JSON span export"):
        read_trace(cut)


@pytest.mark.parametrize("sample", ["livekit-metrics.jsonl", "pipecat.log", "otel-spans.json"])
def test_a_line_cut_short_never_changes_clean_numbers_silently(sample: str, tmp_path: Path) -> None:
    """Cut one line at a time (every 5th line or ~60 lines per file, at 30% and 70% of its length): the reader either
    flags something or gives the same clean turns as the intact file; it never raises."""
    lines = (DATA / sample).read_text().splitlines()
    base = read_trace(DATA / sample)
    clean = {t.id: t.total_ms for t in base.turns if not t.flagged}
    for k in range(0, len(lines), max(5, len(lines) // 60)):
        for frac in (0.3, 0.7):
            cut = list(lines)
            cut[k] = cut[k][: int(len(cut[k]) * frac)]
            path = tmp_path / sample
            path.write_text("\n".join(cut) + "\n")
            table = read_trace(path)
            now = {t.id: t.total_ms for t in table.turns if not t.flagged}
            assert table.anomalies or now == clean, (k + 1, cut[k])


def test_damaged_pretty_otel_document_keeps_the_intact_spans(tmp_path: Path) -> None:
    lines = (DATA / "otel-spans.json").read_text().splitlines()
    assert lines[39].strip() == "{"
    lines[39] = ""  # line 40 opens an attribute of the first span
    path = tmp_path / "damaged.json"
    path.write_text("\n".join(lines))
    table = read_trace(path)
    assert len(table.turns) == 19
    assert table.anomalies[0].line == 41
    assert "span cut short or broken" in table.anomalies[0].reason


def test_livekit_follow_up_requests_wrapped_events_and_errors() -> None:
    table = read_trace(DATA / "livekit-multi.jsonl")
    t1, t2, t3 = table.turns
    # two LLM requests before the turn's first TTS request (a tool call, then the reply): the time between
    # them is on the path, but these lines carry no duration, so it is unknown: the turn keeps the stages it
    # has, and its total (end of utterance + both TTFTs + TTS TTFB) is a lower bound, not a left-out turn
    assert not t1.flagged
    assert t1.lower_bound
    assert t1.unknown_stages == ("llm_tool_call", "tool")
    assert t1.total_ms == pytest.approx(
        sum(t1.stages_ms[s] for s in ("endpointing", "llm_ttft", "llm_2_ttft", "tts_ttfb"))
    )
    assert t2.total_ms == pytest.approx(860.0)  # {"metrics": {...}} events
    assert t3.flagged  # 0.x sequence_id joins the turn; the LLM reported an error
    assert [(a.line, a.field) for a in table.anomalies] == [(10, "error")]
    assert table.anomalies[0].reason == "llm_metrics reports an error"


def test_log_prefixes_and_terminal_colours_are_tolerated(tmp_path: Path) -> None:
    lk = tmp_path / "agent.log"
    lk.write_text(
        '2025-01-01 12:00:00 INFO agent - metrics {"type": "eou_metrics", "end_of_utterance_delay": 0.5, '
        '"transcription_delay": 0.2, "speech_id": "x"}\nstarting {worker}\n'
        '{"type": "llm_metrics", "ttft": 0.3, "speech_id": "x"}\n'
        '{"type": "tts_metrics", "ttfb": 0.1, "speech_id": "x"}\n'
    )
    table = read_trace(lk)
    assert table.format == "livekit"
    assert [(t.id, t.total_ms) for t in table.turns] == [("x", 900.0)]
    assert table.anomalies == ()
    coloured = tmp_path / "pipecat.log"
    text = (DATA / "pipecat.log").read_text()
    coloured.write_text(text.replace("2025-11-29 ", "\x1b[32m2025-11-29 ").replace(" | DEBUG", "\x1b[0m | DEBUG"))
    plain = read_trace(DATA / "pipecat.log")
    assert [t.total_ms for t in read_trace(coloured).turns] == [t.total_ms for t in plain.turns]


def test_pipecat_turns_missing_a_line(tmp_path: Path) -> None:
    """Drop turn 3's VAD stop line (line 13) and turn 5's TTS TTFB line (line 29)."""
    lines = (DATA / "pipecat.log").read_text().splitlines()
    assert "User stopped speaking" in lines[12]
    assert "CartesiaTTSService#0 TTFB" in lines[28]
    path = tmp_path / "missing.log"
    path.write_text("\n".join(x for i, x in enumerate(lines, 1) if i not in (13, 29)) + "\n")
    table = read_trace(path)
    # line numbers are the new file's: the orphan LLM TTFB is on line 14, turn 5 starts on line 24
    assert [(a.line, a.turn) for a in table.anomalies] == [(14, "turn-3"), (24, "turn-5")]
    assert "VAD line missing" in table.anomalies[0].reason
    assert table.anomalies[1].reason == "turn has no TTS TTFB line"
    assert [t.total_ms is None for t in table.turns][:6] == [False, False, True, False, True, False]
    assert len(table.turns) == 20


def test_pipecat_stt_ttfb_before_the_vad_stop_line(tmp_path: Path) -> None:
    """A transcript faster than stop_secs is logged before the VAD stop event; it still belongs to
    the turn that follows."""
    lines = (DATA / "pipecat.log").read_text().splitlines()
    stt = lines[1].replace("12:20:00.289", "12:20:00.150").replace("TTFB: 0.289s", "TTFB: 0.150s")
    path = tmp_path / "early.log"
    path.write_text("\n".join([stt, lines[0], *lines[2:]]) + "\n")
    table = read_trace(path)
    assert table.anomalies == ()
    assert table.turns[0].stages_ms["asr"] == pytest.approx(150.0)


def test_livekit_per_message_metrics_from_the_chat_history() -> None:
    table = read_trace(DATA / "livekit-history.json")
    assert table.format == "livekit-history"
    a0 = table.turns[0]
    assert a0.stages_ms == {
        "endpointing": 620.0,
        "asr": 310.0,
        "llm_ttft": 520.0,
        "tts_ttfb": 180.0,
        "other": pytest.approx(200.0),
    }
    assert a0.total_ms == pytest.approx(1520.0)  # e2e_latency
    assert [(a.line, a.field, a.turn) for a in table.anomalies] == [
        (92, "llm_node_ttft", "item_a2"),
        (140, "end_of_turn_delay", "item_a_greet"),  # a reply with no user turn before it
    ]
    assert [t.id for t in table.turns if not t.flagged] == ["item_a0", "item_a1", "item_a3"]


@pytest.mark.parametrize(("option", "value"), [("--stop-secs", "-1"), ("--absurd-ms", "0")])
def test_a_bad_read_option_is_named_by_the_option(option: str, value: str) -> None:
    from typer.testing import CliRunner

    from voicebudget.cli import app

    result = CliRunner().invoke(app, ["check", str(DATA / "livekit-metrics.jsonl"), option, value])
    assert result.exit_code == 2
    assert result.output.startswith(f"error: {option}: ")  # the option, not a "<scenario>" that is not there
