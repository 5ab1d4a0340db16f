"""Pipecat's own user-to-bot latency against the turn rebuilt from its log: which end of the turn they
disagree on, and what the turn's total then is.

Pipecat computes its figure when its observer sees ``BotStartedSpeakingFrame``: ``time.time()`` minus
its "user stopped speaking" time (``UserBotLatencyLogObserver`` 0.0.70 - 0.0.108, ``observers/loggers/
user_bot_latency_log_observer.py``; ``UserBotLatencyObserver._handle_bot_started_speaking`` in 1.x), and
logs it at once (1.x: the user's ``on_latency_breakdown`` handler logs the ``TOTAL`` line). So the line's
own time is Pipecat's end, and the line's time minus the figure is Pipecat's start. Where that start lies
changed across versions (pipecat-ai/pipecat at the tags named, read 2026-12-02):

- before 0.0.98: ``UserStoppedSpeakingFrame``, the transport's ``User stopped speaking``; with a smart-turn
  analyzer that frame comes when the analyzer ends the turn, after the user stopped (v0.0.80, v0.0.95);
- 0.0.98 - 0.0.101: ``VADUserStoppedSpeakingFrame``'s arrival, the VAD stop without ``stop_secs``
  (v0.0.98, v0.0.100);
- 0.0.102 on, and 1.x: the VAD stop frame's ``timestamp - stop_secs``, the user's actual silence (v0.0.102,
  v0.0.108, pipecat-ai 1.14.0).

A larger figure is split into the part before the rebuilt end of speech (Pipecat's start is earlier: its
``stop_secs`` is larger than the one used, or the rebuilt anchor is a smart-turn analyzer's result, late by
the model's inference time) and the part after the rebuilt end (the bot's audio after the TTS first byte,
when the log does not show it). A smaller one is an anomaly on its turn that names the logged moment
Pipecat's start coincides with, if any.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AGREE_BELOW_MS", "Moment", "Verdict", "explain_total"]

AGREE_BELOW_MS = 5.0
"""Pipecat's own figure ends when its observer sees ``BotStartedSpeakingFrame``, after the first TTS audio
byte, so it may not fall below the rebuilt total by more than log rounding (5 ms)."""


@dataclass(frozen=True)
class Moment:
    """A logged moment Pipecat's start may coincide with: its time (s on the log's clock), line, and what it
    is (for the message)."""

    at: float
    line: int
    what: str


@dataclass(frozen=True)
class Verdict:
    """What the comparison changes: the turn's new total (None: the rebuilt one stands), ms added to
    ``endpointing`` (Pipecat's start is earlier) and to ``output`` (Pipecat's end is later), the shift of
    ``t = 0`` on the log's clock (s, <= 0), a note for the turn, and an anomaly's reason."""

    total_ms: float | None = None
    endpointing_ms: float = 0.0
    output_ms: float = 0.0
    shift_s: float = 0.0
    note: str = ""
    anomaly: str = ""


def _larger(
    reported_ms: float,
    line: int,
    at: float | None,
    rebuilt_ms: float,
    speech_end: float | None,
    audio_end: bool,
    anchor: str,
    hop_ms: float,
) -> Verdict:
    diff = reported_ms - rebuilt_ms
    end = "the bot's first audio" if audio_end else "the TTS first byte"
    head = (
        f"Pipecat's own total {reported_ms:.0f} ms (line {line}, to BotStartedSpeakingFrame) is {diff:.0f} ms above "
        f"the total rebuilt from the log ({rebuilt_ms:.0f} ms, to {end})"
    )
    start_gap = 0.0 if at is None or speech_end is None else reported_ms - (at - speech_end) * 1000.0
    start_gap = min(max(start_gap, 0.0), diff)
    end_gap = diff - start_gap
    parts: list[str] = []
    endpointing = output = 0.0
    if start_gap > hop_ms:
        endpointing = round(start_gap, 3)
        parts.append(
            f"they differ in where the turn starts: Pipecat's start (line {line}'s time minus its figure; Pipecat "
            f"0.0.102 and later measure from the VAD stop frame's time minus stop_secs) is {start_gap:.0f} ms before "
            f"the rebuilt t = 0 ({anchor}): Pipecat's start is used, the {start_gap:.0f} ms counted in endpointing"
        )
    if audio_end:
        if end_gap > hop_ms:
            parts.append(
                f"Pipecat took its figure {end_gap:.0f} ms after the bot's first audio (its observer's own time), "
                "not counted"
            )
        if endpointing == 0.0:
            parts = parts or ["its start and its end each within the frame hop of the rebuilt ones"]
            return Verdict(note=f"{head}; {'; '.join(parts)}; the rebuilt total stands")
        return Verdict(rebuilt_ms + endpointing, endpointing, 0.0, -endpointing / 1000.0, f"{head}; {'; '.join(parts)}")
    output = round(diff - endpointing, 3)
    parts.append(
        f"the {output:.0f} ms after the first audio byte until Pipecat saw the bot start speaking counted as "
        "'output' (the log has no 'Bot started speaking' line after it)"
    )
    return Verdict(reported_ms, endpointing, output, -endpointing / 1000.0, f"{head}: {'; '.join(parts)}")


def _smaller(
    turn: str,
    reported_ms: float,
    line: int,
    at: float | None,
    rebuilt_ms: float,
    speech_end: float | None,
    moments: list[Moment],
    hop_ms: float,
) -> Verdict:
    diff = reported_ms - rebuilt_ms
    reason = (
        f"{turn}: Pipecat's own user-to-bot latency {reported_ms:.0f} ms (line {line}) is {-diff:.0f} ms below the "
        f"total rebuilt from the log ({rebuilt_ms:.0f} ms)"
    )
    if at is None or speech_end is None:
        return Verdict(anomaly=reason)
    start = at - reported_ms / 1000.0
    after_ms = (start - speech_end) * 1000.0
    near = [m for m in moments if abs(m.at - start) * 1000.0 <= hop_ms]
    match = min(near, key=lambda m: abs(m.at - start), default=None)
    if match is None:
        where = "at no moment the log shows"
    else:
        where = f"at {match.what} (line {match.line})"
    return Verdict(
        anomaly=f"{reason}: it starts {after_ms:.0f} ms after the rebuilt end of speech, {where}; the rebuilt "
        "total stands"
    )


def explain_total(
    turn: str,
    reported_ms: float,
    line: int,
    at: float | None,
    rebuilt_ms: float,
    speech_end: float | None,
    *,
    audio_end: bool,
    anchor: str,
    moments: list[Moment],
    hop_ms: float,
) -> Verdict:
    """Compare Pipecat's own total with the rebuilt one.

    :param turn: the turn's id (for the anomaly's reason).
    :param reported_ms: Pipecat's figure, ms.
    :param line: its line; ``at``: that line's time on the log's clock, s (None: not known).
    :param rebuilt_ms: the total rebuilt from the log, ms; ``speech_end``: its ``t = 0`` on the log's clock, s.
    :param audio_end: the rebuilt total already ends at the bot's first audio (the log shows it).
    :param anchor: what the rebuilt ``t = 0`` is, for the note.
    :param moments: logged moments Pipecat's start may coincide with when its figure is smaller.
    :param hop_ms: a difference up to this is the frame's hop, not a disagreement.
    :returns: the :class:`Verdict` (nothing to change when they agree).
    """
    diff = reported_ms - rebuilt_ms
    if diff > hop_ms:
        return _larger(reported_ms, line, at, rebuilt_ms, speech_end, audio_end, anchor, hop_ms)
    if diff >= -AGREE_BELOW_MS:
        return Verdict()
    return _smaller(turn, reported_ms, line, at, rebuilt_ms, speech_end, moments, hop_ms)
