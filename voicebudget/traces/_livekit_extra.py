"""LiveKit metrics that carry no ``speech_id``, placed on a pipeline turn by their time (or, in a console log
that prints whole seconds, by their place in the log).

- Before a turn's commit (from the previous turn's commit to this one's), LiveKit 1.8's
  ``eot_inference_metrics`` (the end-of-turn model's prediction: the last one splits ``endpointing`` into
  the parts ``turn_detector`` and ``wait``), ``interruption_metrics`` (barge-in detection) and
  ``decision_metrics`` (an LLM decision call): parts and notes, not on the reply's path.
- After a turn's commit, ``avatar_metrics`` (1.5.11+, ``voice/avatar/_types.py``): emitted when the
  assistant's message is added (after its speech), its ``playback_latency`` the delay between forwarding
  the first audio frame to the avatar and the avatar reporting playback started
  (``voice/agent_activity.py``: ``started_speaking_at - started_forwarding_at``; near zero for the default
  room output, which reports it itself). It is the ``output`` stage of the last turn committed before it:
  the avatar's audio after the TTS first byte, on the path. An ``avatar_metrics`` without a playback
  latency (the avatar joining: ``session_started_time``/``avatar_joined_time``) is not a turn's.

Sources: livekit-agents 1.8.9 ``metrics/base.py`` (``EOTInferenceMetrics``, ``InterruptionMetrics``,
``DecisionMetrics``, ``AvatarMetrics``), ``metrics/utils.py`` (``log_metrics``: ``"Avatar metrics"`` with
``playback_latency`` rounded to 1 ms), ``voice/avatar/_types.py``; ``AvatarMetrics`` since
``livekit-agents@1.5.11`` (github.com/livekit/agents, PR 5581); read 2026-12-02.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

from voicebudget.traces._table import TurnBuilder

__all__ = ["AVATAR", "BEFORE_COMMIT", "Extra", "place_extra"]

BEFORE_COMMIT = ("eot_inference_metrics", "interruption_metrics", "decision_metrics")
"""1.8's metrics without a ``speech_id`` that belong to the next turn's commit."""
AVATAR = "avatar_metrics"
"""Emitted after a reply's speech: belongs to the last turn committed before it."""
_SLACK_S = 0.005


@dataclass(frozen=True)
class Extra:
    """One such metrics line: its type, line, object, record time (s; None: the line gives none) and the
    turn the log's order puts it on (the open turn of a log without ``speech_id``), if any."""

    kind: str
    line: int
    obj: dict[str, Any]
    log_time: float | None
    by_position: TurnBuilder | None = None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _before_commit(turn: TurnBuilder, extra: Extra) -> None:
    if extra.kind == "eot_inference_metrics":
        delay = _number(extra.obj.get("detection_delay"))
        wait = turn.stages_ms.get("endpointing")
        if delay is not None and wait is not None and 0 <= delay * 1000.0 <= wait:
            turn.set_part("endpointing", "turn_detector", delay * 1000.0)
            turn.set_part("endpointing", "wait", wait - delay * 1000.0)
    elif extra.kind == "interruption_metrics":
        delay = _number(extra.obj.get("detection_delay"))
        if delay is not None:
            turn.note(f"barge-in detection (interruption_metrics, line {extra.line}): {delay * 1000:.0f} ms from "
                      "the speech onset to the model's verdict; not part of this reply's latency")  # fmt: skip
    else:
        duration = _number(extra.obj.get("duration"))
        if duration is not None:
            turn.note(f"an LLM decision call (decision_metrics, line {extra.line}) took {duration * 1000:.0f} ms "
                      "before this turn's commit")  # fmt: skip


def _avatar(turn: TurnBuilder, extra: Extra) -> None:
    value = extra.obj.get("playback_latency")
    if not value or "output" in turn.stages_ms or "tts_ttfb" not in turn.stages_ms:
        return  # the avatar joining; a later message of the same turn (not on the path); a turn that never spoke
    ms = turn.seconds(value, line=extra.line, fld="playback_latency")
    turn.set_stage("output", ms)
    if ms is not None:
        turn.note(f"the avatar started playing {ms:.0f} ms after the first audio frame was forwarded to it "
                  f"(avatar_metrics playback_latency, line {extra.line}): the 'output' stage")  # fmt: skip


def place_extra(extras: list[Extra], commits: list[tuple[float, TurnBuilder]]) -> None:
    """Put each line on its turn (see the module docstring).

    :param extras: the lines, in file order.
    :param commits: ``(commit time s, turn)`` of every pipeline turn whose commit is known.
    """
    commits = sorted(commits, key=lambda x: x[0])
    starts = [c for c, _ in commits]
    for extra in extras:
        at = extra.log_time if extra.log_time is not None else _number(extra.obj.get("timestamp"))
        if extra.kind == AVATAR:
            turn = _avatar_turn(extra, at, commits, starts)
            if turn is not None:
                _avatar(turn, extra)
            continue
        if at is None:
            continue
        i = bisect.bisect_left(starts, at - _SLACK_S)
        if i < len(commits):
            _before_commit(commits[i][1], extra)


def _avatar_turn(
    extra: Extra, at: float | None, commits: list[tuple[float, TurnBuilder]], starts: list[float]
) -> TurnBuilder | None:
    """An avatar's playback goes to the last turn committed before it (its log line's open turn when it
    has no time)."""
    i = -1 if at is None else bisect.bisect_right(starts, at + _SLACK_S) - 1
    return commits[i][1] if at is not None and i >= 0 else extra.by_position
