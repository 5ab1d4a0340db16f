"""The budget checker: time real (async or sync) voice turns and judge them like the simulator does.

Public names are re-exported from :mod:`voicebudget`; see docs/checker.md.
"""

from __future__ import annotations

from voicebudget.checker._analysis import ExcludedTurn, RecorderReport
from voicebudget.checker._recorder import (
    AUDIO_SENT,
    FIRST_AUDIO,
    SPEECH_END,
    UNTRACKED,
    StageSpan,
    StageTimer,
    Turn,
    TurnRecorder,
)

__all__ = [
    "AUDIO_SENT",
    "FIRST_AUDIO",
    "SPEECH_END",
    "UNTRACKED",
    "ExcludedTurn",
    "RecorderReport",
    "StageSpan",
    "StageTimer",
    "Turn",
    "TurnRecorder",
]
