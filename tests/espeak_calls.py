"""Two-channel call recordings spoken by espeak-ng, with every utterance's edges known.

Each line is spoken alone, cut to its first and last loud 10 ms window (within 40 dB of its loudest,
the definition tests/test_pipecat_audio.py uses), and placed at a chosen time on the caller's or the
agent's channel, so the truth (start and end of every utterance, ms) is exact to the sample."""

from __future__ import annotations

import shutil
import subprocess
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

RATE = 22_050
"""espeak-ng's own rate: the file is written at it, so reading it exercises the resampling to 16 kHz."""

VOICES = {"caller": "en-us", "agent": "en-gb"}


def have_espeak() -> bool:
    return shutil.which("espeak-ng") is not None


@dataclass
class Placed:
    """One utterance on the call: who, what, and where it is (ms, exact to the sample at :data:`RATE`)."""

    who: str
    text: str
    start: int
    clip: np.ndarray[Any, np.dtype[np.float32]]

    @property
    def start_ms(self) -> float:
        return self.start * 1000.0 / RATE

    @property
    def end_ms(self) -> float:
        return (self.start + self.clip.size) * 1000.0 / RATE


def _loud_span(pcm: np.ndarray[Any, np.dtype[np.float32]], peak: float | None = None) -> tuple[int, int]:
    win = RATE // 100
    n = pcm.size // win
    rms = np.sqrt(np.mean(pcm[: n * win].reshape(n, win).astype(np.float64) ** 2, axis=1))
    loud = np.flatnonzero(rms > 0.01 * (rms.max() if peak is None else peak))
    return int(loud[0] * win), int((loud[-1] + 1) * win)


def speak(text: str, who: str, folder: Path) -> np.ndarray[Any, np.dtype[np.float32]]:
    """``text`` spoken by ``who``'s voice, cut to its loud part, float32 at :data:`RATE`."""
    wav = folder / "line.wav"
    subprocess.run(["espeak-ng", "-v", VOICES[who], "-w", str(wav), text], check=True, capture_output=True)
    with wave.open(str(wav)) as w:
        assert w.getframerate() == RATE
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float32) / 32768.0
    a, b = _loud_span(pcm)
    return pcm[a:b]


class Call:
    """A call built line by line, then written as a stereo WAV (caller left unless told)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.lines: list[Placed] = []

    def say(
        self, who: str, text: str, *, at_ms: float | None = None, after: Placed | None = None, gap_ms: float = 0.0,
        after_start: Placed | None = None,
    ) -> Placed:  # fmt: skip
        """Place ``text``: at ``at_ms``, or ``gap_ms`` after the end of ``after`` (negative: before it
        ends), or ``gap_ms`` after the start of ``after_start``."""
        if after is not None:
            t = after.end_ms + gap_ms
        elif after_start is not None:
            t = after_start.start_ms + gap_ms
        else:
            assert at_ms is not None
            t = at_ms
        line = Placed(who, text, round(t * RATE / 1000), speak(text, who, self.folder))
        self.lines.append(line)
        return line

    def cut(self, line: Placed, at_ms: float) -> None:
        """Stop ``line`` at ``at_ms`` (its audio stops, as an agent's does on a barge-in), then drop the
        quiet windows before the cut so its end is its last loud window."""
        keep = round(at_ms * RATE / 1000) - line.start
        peak = float(np.sqrt(np.max(np.convolve(line.clip.astype(np.float64) ** 2, np.ones(RATE // 100)))
                             / (RATE // 100)))  # fmt: skip
        clip = line.clip[:keep]
        _, b = _loud_span(clip, peak)
        line.clip = clip[:b]

    def write(self, path: Path, *, tail_ms: float = 1500.0, caller: str = "left") -> None:
        n = max(ln.start + ln.clip.size for ln in self.lines) + round(tail_ms * RATE / 1000)
        chans = {"caller": np.zeros(n, np.float32), "agent": np.zeros(n, np.float32)}
        for ln in self.lines:
            chans[ln.who][ln.start : ln.start + ln.clip.size] += ln.clip
        left, right = (chans["caller"], chans["agent"]) if caller == "left" else (chans["agent"], chans["caller"])
        pcm = (np.clip(np.stack([left, right], axis=1), -1.0, 1.0) * 32767).astype(np.int16)
        with wave.open(str(path), "wb") as w:
            w.setnchannels(2)
            w.setsampwidth(2)
            w.setframerate(RATE)
            w.writeframes(pcm.tobytes())
