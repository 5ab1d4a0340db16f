"""The budget checker: time real (async or sync) voice turns and judge them like the simulator does.

Public names are re-exported from :mod:`voicebudget`; see docs/checker.md. Names are imported on
first use (PEP 562), so the pytest plugin, which every pytest run loads, does not pay for numpy and
pydantic until a test records a turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicebudget._lazy import lazy_getattr

if TYPE_CHECKING:
    from voicebudget.checker._analysis import ExcludedTurn, RecorderReport
    from voicebudget.checker._guard import BudgetGuard, GuardDecision, GuardedTurn
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

_LAZY = {
    **dict.fromkeys(("BudgetGuard", "GuardDecision", "GuardedTurn"), "voicebudget.checker._guard"),
    "ExcludedTurn": "voicebudget.checker._analysis",
    "RecorderReport": "voicebudget.checker._analysis",
    **dict.fromkeys(
        ("AUDIO_SENT", "FIRST_AUDIO", "SPEECH_END", "UNTRACKED", "StageSpan", "StageTimer", "Turn", "TurnRecorder"),
        "voicebudget.checker._recorder",
    ),
}

__all__ = [
    "AUDIO_SENT",
    "FIRST_AUDIO",
    "SPEECH_END",
    "UNTRACKED",
    "BudgetGuard",
    "ExcludedTurn",
    "GuardDecision",
    "GuardedTurn",
    "RecorderReport",
    "StageSpan",
    "StageTimer",
    "Turn",
    "TurnRecorder",
]


__getattr__ = lazy_getattr("voicebudget.checker", _LAZY, globals())
