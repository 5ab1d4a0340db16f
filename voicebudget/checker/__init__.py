"""The budget checker: time real (async or sync) voice turns and judge them like the simulator does.

Public names are re-exported from :mod:`voicebudget`; see docs/checker.md. Names are imported on
first use (PEP 562), so the pytest plugin, which every pytest run loads, does not pay for numpy and
pydantic until a test records a turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicebudget._lazy import lazy_getattr, lazy_table

if TYPE_CHECKING:
    from voicebudget.checker._analysis import (  # noqa: I001 - one statement per module, "X as X" re-exports
        ExcludedTurn as ExcludedTurn,
        RecorderReport as RecorderReport,
    )
    from voicebudget.checker._fillers import (
        FillerPolicy as FillerPolicy,
        FillerReport as FillerReport,
        FillerResult as FillerResult,
        GuardPolicy as GuardPolicy,
        MedianPolicy as MedianPolicy,
        TimeoutPolicy as TimeoutPolicy,
        evaluate_fillers as evaluate_fillers,
        guard_report as guard_report,
    )
    from voicebudget.checker._guard import (
        BudgetGuard as BudgetGuard,
        GuardDecision as GuardDecision,
        GuardedTurn as GuardedTurn,
    )
    from voicebudget.checker._recorder import (
        AUDIO_SENT as AUDIO_SENT,
        FIRST_AUDIO as FIRST_AUDIO,
        SPEECH_END as SPEECH_END,
        UNTRACKED as UNTRACKED,
        StageSpan as StageSpan,
        StageTimer as StageTimer,
        Turn as Turn,
        TurnRecorder as TurnRecorder,
    )

# Module -> the public names it defines, imported on first use (PEP 562).
_PUBLIC: dict[str, tuple[str, ...]] = {
    "voicebudget.checker._analysis": ("ExcludedTurn", "RecorderReport"),
    "voicebudget.checker._fillers": (
        "FillerPolicy",
        "FillerReport",
        "FillerResult",
        "GuardPolicy",
        "MedianPolicy",
        "TimeoutPolicy",
        "evaluate_fillers",
        "guard_report",
    ),
    "voicebudget.checker._guard": ("BudgetGuard", "GuardDecision", "GuardedTurn"),
    "voicebudget.checker._recorder": (
        "AUDIO_SENT",
        "FIRST_AUDIO",
        "SPEECH_END",
        "UNTRACKED",
        "StageSpan",
        "StageTimer",
        "Turn",
        "TurnRecorder",
    ),
}

_LAZY = lazy_table(_PUBLIC)

__all__ = sorted(_LAZY)

__getattr__ = lazy_getattr("voicebudget.checker", _LAZY, globals())


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
