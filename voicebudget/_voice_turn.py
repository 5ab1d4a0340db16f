"""The voice turn: the ready-made pipeline shape of one conversational turn.

Time axis (docs/design.md section 1): ``t = 0`` is the actual end of the user's speech::

    speech end ─┬─ endpointing wait ┐ turn commit: max(...) in VAD mode (ASR finalises while the
                ├─ ASR finalisation ┘ silence timer runs), sum in STT mode (the wait starts at the
                │                     final transcript)
                ├─ framework hop (aggregation, context assembly)
                ├─ network to the LLM (+ cold connection on some turns)
                ├─ LLM: TTFT + first-phrase tokens x TPOT
                ├─ TTS: TTFB (+ leading silence)
                └─ transport to the listener (network + jitter buffer + playout)
    voice-to-voice latency = first agent audio heard - speech end

The *server-side* latency (what Pipecat and LiveKit report) stops when audio leaves the server:
voice-to-voice minus ``transport``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from voicebudget._algebra import AllOf, FloatArray, Sequence, Stage, check_unique_names, evaluate
from voicebudget._distributions import Fixed
from voicebudget._stages import StageSpec

__all__ = ["STAGE_ORDER", "VoiceTurn"]

STAGE_ORDER = ("endpointing", "asr", "framework", "network", "llm", "tts", "transport")
"""The named stages of a voice turn, in time order."""


class VoiceTurn(Stage):
    """One turn of a cascaded voice agent (STT -> LLM -> TTS), stage by stage.

    Every stage is any :data:`~voicebudget.StageSpec` (a distribution, a stage model such as
    ``llm``/``tts``/``network``, or a combinator). All in ms.

    :param commit: ``"vad"``: the turn commits when both the endpointing wait and the final
        transcript are done (max); ``"stt"``: the endpointing wait starts at the final transcript (sum).
    :param endpointing: wait from speech end until the turn detector commits (VAD silence timer,
        semantic turn detector), ms.
    :param asr: speech end to final transcript (streaming STT finalisation), ms.
    :param framework: framework hop (aggregation timeouts, context assembly), ms; default 0.
    :param network: network to the LLM, ms.
    :param llm: request to first speakable phrase, ms.
    :param tts: first text to first audible sample, ms.
    :param transport: server to the listener's ear: network, jitter buffer, playout, ms.
    """

    kind: Literal["voice_turn"] = "voice_turn"
    commit: Literal["vad", "stt"] = "vad"
    endpointing: StageSpec
    asr: StageSpec
    framework: StageSpec = Field(default_factory=lambda: Fixed(value_ms=0.0))
    network: StageSpec
    llm: StageSpec
    tts: StageSpec
    transport: StageSpec

    @model_validator(mode="after")
    def _unique_names(self) -> VoiceTurn:
        check_unique_names(
            ((key, key, getattr(self, key)) for key in STAGE_ORDER),
            reserved={"turn_commit": "the voice turn's commit step (endpointing with asr)"},
        )
        return self

    group: ClassVar[bool] = True
    plausible_as: ClassVar[Mapping[str, str]] = {
        name: name for name in ("endpointing", "asr", "network", "llm", "tts", "transport")
    }

    def children(self) -> dict[str, Any]:
        """The stages of the turn by their names, in :data:`STAGE_ORDER`."""
        return {key: getattr(self, key) for key in STAGE_ORDER}

    def with_children(self, children: Mapping[str, Any]) -> VoiceTurn:
        """A copy with the named stages replaced (not validated)."""
        unknown = set(children) - set(STAGE_ORDER)
        if unknown:
            raise KeyError(f"a voice turn's stages are {', '.join(STAGE_ORDER)}; got {sorted(unknown)}")
        return self.model_copy(update=dict(children))

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        """Voice-to-voice latency per turn, ``float64[n]`` ms: :meth:`to_tree` evaluated on one seed from ``rng``."""
        return evaluate(self.to_tree(), n, int(rng.integers(0, 2**63 - 1))).total

    def to_tree(self) -> Sequence:
        """The pipeline as a combinator tree (leaf names are :data:`STAGE_ORDER`)."""
        # model_construct: the stages are validated (with their names, check_unique_names) as this turn's;
        # validating them again would build the combinators' validators (the stage union) on first use
        if self.commit == "vad":
            commit: AllOf | Sequence = AllOf.model_construct(stages={"endpointing": self.endpointing, "asr": self.asr})
        else:
            commit = Sequence.model_construct(stages={"asr": self.asr, "endpointing": self.endpointing})
        return Sequence.model_construct(
            stages={
                "turn_commit": commit,
                "framework": self.framework,
                "network": self.network,
                "llm": self.llm,
                "tts": self.tts,
                "transport": self.transport,
            }
        )
