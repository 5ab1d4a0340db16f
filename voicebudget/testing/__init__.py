"""Scripted voice-agent services for your tests: a fake STT, LLM, TTS and transport that wait known delays,
for a real Pipecat pipeline or a real LiveKit ``AgentSession``, so a budget test needs no provider account and
no fakes of your own.

- :class:`TurnScript` (this package, no framework imported): one turn's delays, ms, named as the stages the
  observers record; :func:`scripted_turns` draws them with a seed from numbers, distributions or stages,
  :func:`turns_from_scenario` from a scenario's own simulated turns.
- :mod:`voicebudget.testing.pipecat` (``pip install "voicebudget[pipecat]"``): ``ScriptedSTT``,
  ``ScriptedLLM``, ``ScriptedTTS``, ``ScriptedOutput`` (real ``FrameProcessor`` subclasses pushing the frames
  real services push), ``ScriptedVADAnalyzer`` and ``run_conversation``.
- :mod:`voicebudget.testing.livekit` (``pip install "voicebudget[livekit]"``): ``ScriptedVAD``,
  ``ScriptedSTT``, ``ScriptedLLM``, ``ScriptedTTS`` (LiveKit's ``vad.VAD``/``stt.STT``/``llm.LLM``/``tts.TTS``),
  ``SilenceInput``, ``PlayoutOutput`` and ``run_session``.

Importing this package imports neither framework; each submodule raises an ``ImportError`` naming the extra
when its framework is not installed. See docs/checker.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicebudget._lazy import lazy_getattr, lazy_table

if TYPE_CHECKING:
    from voicebudget.testing._script import (  # noqa: I001 - one statement per module, "X as X" re-exports
        DELAY_FIELDS as DELAY_FIELDS,
        TurnScript as TurnScript,
        scripted_turns as scripted_turns,
        turns_from_scenario as turns_from_scenario,
    )

# Module -> the public names it defines, imported on first use (PEP 562).
_PUBLIC: dict[str, tuple[str, ...]] = {
    "voicebudget.testing._script": (
        "DELAY_FIELDS",
        "TurnScript",
        "scripted_turns",
        "turns_from_scenario",
    ),
}

_LAZY = lazy_table(_PUBLIC)

__all__ = sorted(_LAZY)

__getattr__ = lazy_getattr("voicebudget.testing", _LAZY, globals())


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
