"""What scripted services wait, turn by turn: :class:`TurnScript`, drawn from numbers, distributions or a
scenario's own stages with a seed. Framework-free (no Pipecat, no LiveKit)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from collections.abc import Sequence as SequenceABC
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from voicebudget._algebra import evaluate, stage_rng
from voicebudget._simulate import resolve_seed
from voicebudget._voice_turn import VoiceTurn

__all__ = ["DELAY_FIELDS", "DelaySource", "TurnScript", "scripted_turns", "turns_from_scenario"]

DelaySource = Any
"""What a delay is drawn from: a number of ms (every turn), a sequence of ms (one per turn), or anything with
``sample(rng, n) -> float64[n]`` in ms: a :class:`~voicebudget.Distribution` (``LogNormal(p50_ms=..., p95_ms=...)``)
or a stage (``LLMStage``, ``GPUStage``, ...)."""


@dataclass(frozen=True)
class TurnScript:
    """One user turn and the delays the scripted services wait in it, ms. The names are the stages the
    Pipecat observer records (``voicebudget.integrations.pipecat``), so a test can compare what a service
    waited with what was measured.

    :ivar endpointing_ms: the VAD's silence after the end of speech (Pipecat: the ``stop_secs`` of the
        ``VADUserStoppedSpeakingFrame``; LiveKit: the scripted VAD's silence before END_OF_SPEECH).
    :ivar stt_ms: the final transcript after the VAD stop (Pipecat) or after the end of speech (LiveKit,
        whose STT runs while the VAD waits).
    :ivar turn_detection_ms: Pipecat: the user turn ends this long after the transcript (a turn strategy);
        LiveKit waits its own endpointing delay (``AgentSession(turn_handling=...)``) instead.
    :ivar llm_ms: the LLM's time to first token after it is asked (TTFT).
    :ivar reasoning_ms: a thinking model: its answer's first token this long after its first reasoning
        token (0: not a thinking model).
    :ivar tts_ms: the TTS's first audio after its first text (TTFB).
    :ivar output_ms: the transport: Pipecat's bot starts speaking (``BotStartedSpeakingFrame``) this long
        after the first TTS audio; LiveKit's audio output starts playing this long after its first frame.
    :ivar speech_ms: how long the user speaks before the end of speech.
    :ivar transcript: what the STT hears; ``reply``: the LLM's text, in the chunks it streams.
    :raises ValueError: a delay negative, not finite, or above one hour (naming the field).
    """

    endpointing_ms: float = 200.0
    stt_ms: float = 80.0
    turn_detection_ms: float = 30.0
    llm_ms: float = 250.0
    reasoning_ms: float = 0.0
    tts_ms: float = 120.0
    output_ms: float = 20.0
    speech_ms: float = 400.0
    transcript: str = "what time is it"
    reply: tuple[str, ...] = ("It is ", "noon.")

    def __post_init__(self) -> None:
        for name in DELAY_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name}: must be a number of ms, got {value!r}")
            if not math.isfinite(value) or not 0.0 <= value <= 3_600_000.0:
                raise ValueError(f"{name}: must be within 0 to 3,600,000 ms (one hour), got {value!r}")
            object.__setattr__(self, name, float(value))
        if not self.reply:
            raise ValueError("reply: needs at least one chunk of text")

    def delays(self) -> dict[str, float]:
        """The stages this turn has, ms: the :data:`DELAY_FIELDS` without ``_ms`` (``reasoning`` only for
        a thinking model); ``speech`` is not a stage."""
        out = {name[:-3]: getattr(self, name) for name in DELAY_FIELDS if name != "speech_ms"}
        if not self.reasoning_ms:
            del out["reasoning"]
        return out


DELAY_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(TurnScript) if f.name.endswith("_ms"))
"""The delay fields of :class:`TurnScript`, in the order a turn runs."""


@dataclass
class _Conversation:
    """What the Pipecat and LiveKit scripted conversations share: the turns (validated), the current one and,
    per started turn, stage -> ms (each framework's subclass says which ms)."""

    turns: SequenceABC[TurnScript]
    turn: int = 0
    injected: list[dict[str, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.turns = tuple(self.turns)
        if not self.turns:
            raise ValueError("turns: needs at least one TurnScript")
        if not all(isinstance(t, TurnScript) for t in self.turns):
            raise ValueError("turns: must be TurnScript objects (voicebudget.testing.scripted_turns makes them)")

    @property
    def script(self) -> TurnScript:
        """The current turn's script."""
        return self.turns[self.turn]


def scripted_turns(
    n: int, *, seed: int | np.random.Generator | None = 0, **delays: DelaySource
) -> tuple[TurnScript, ...]:
    """``n`` turns whose delays are drawn with a seed.

    Each keyword is a :class:`TurnScript` delay without ``_ms`` (``stt``, ``llm``, ``tts``, ...) and its
    source: a number of ms, a sequence of ``n`` ms, or a distribution or stage (``sample(rng, n)``), drawn
    from the stream :func:`~voicebudget.stage_rng` gives that name under ``seed``: ``llm=LogNormal(...)``
    draws exactly what a scenario stage named ``llm`` with that spec draws in ``simulate(..., samples=n,
    seed=seed)``. Delays not given keep :class:`TurnScript`'s defaults.

    >>> turns = scripted_turns(3, seed=1, llm=600.0, tts=[100, 120, 140])
    >>> [t.tts_ms for t in turns]
    [100.0, 120.0, 140.0]

    :param n: number of turns, >= 1.
    :param seed: an int, a ``numpy.random.Generator`` (one int is drawn from it) or None (fresh entropy).
    :returns: ``n`` turn scripts.
    :raises ValueError: ``n < 1``, an unknown delay name (the message lists the known ones), a sequence of
        another length, or a drawn delay outside 0 to one hour (naming the turn).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n: must be an integer >= 1, got {n!r}")
    known = {name[:-3] for name in DELAY_FIELDS}
    unknown = sorted(set(delays) - known)
    if unknown:
        raise ValueError(f"unknown delay {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    seed_int = resolve_seed(seed)
    columns = {name: _draw(name, source, n, seed_int) for name, source in delays.items()}
    return _turns(n, columns)


def turns_from_scenario(
    scenario: Any,
    n: int,
    *,
    seed: int | np.random.Generator | None = None,
    variant: str = "baseline",
    stages: Mapping[str, str | float] | None = None,
) -> tuple[TurnScript, ...]:
    """``n`` turns whose delays are a scenario's own simulated turns: the per-turn samples
    ``simulate(scenario, samples=n, seed=seed)`` draws for the variant, stage by stage.

    :param scenario: a :class:`~voicebudget.Scenario` or the path of a scenario file.
    :param seed: default: the scenario's ``seed``.
    :param variant: ``baseline`` or one of the scenario's variants.
    :param stages: :class:`TurnScript` delay (without ``_ms``) -> the scenario stage (or group, e.g.
        ``turn_commit``) whose samples it waits, or a fixed number of ms. Default: ``stt`` <- ``asr``,
        ``llm`` <- ``llm``, ``tts`` <- ``tts``, ``output`` <- ``transport``, ``endpointing`` <- ``endpointing``
        (those the scenario has). How a framework's scripted services compose the delays is the framework's
        (Pipecat's STT finalises after the VAD stop), not the scenario's ``voice_turn``: compare stages, and
        the voice-to-voice total only where the two compose alike.
    :raises ValueError: an unknown variant or stage (the message lists the known ones).
    :raises ScenarioError: an invalid scenario file.
    """
    from voicebudget._scenario import load_scenario

    if isinstance(scenario, str | Path):
        scenario = load_scenario(scenario)
    pipelines = scenario.pipelines()
    if variant not in pipelines:
        raise ValueError(f"variant: no {variant!r}; variants: {', '.join(pipelines)}")
    pipeline = pipelines[variant]
    tree = pipeline.to_tree() if isinstance(pipeline, VoiceTurn) else pipeline
    seed_int = resolve_seed(scenario.seed if seed is None else seed)
    ev = evaluate(tree, n, seed_int)
    drawn = {**ev.groups, **ev.stages}
    default = {"endpointing": "endpointing", "stt": "asr", "llm": "llm", "tts": "tts", "output": "transport"}
    mapping: Mapping[str, str | float] = {k: v for k, v in default.items() if v in drawn} if stages is None else stages
    known = {name[:-3] for name in DELAY_FIELDS}
    columns: dict[str, Any] = {}
    for name, source in mapping.items():
        if name not in known:
            raise ValueError(f"stages: unknown delay {name!r}; known: {', '.join(sorted(known))}")
        if isinstance(source, str):
            if source not in drawn:
                raise ValueError(f"stages.{name}: the scenario has no stage {source!r}; stages: {', '.join(drawn)}")
            columns[name] = np.asarray(drawn[source], dtype=np.float64)
        else:
            columns[name] = _draw(name, source, n, seed_int)
    return _turns(n, columns)


def _draw(name: str, source: DelaySource, n: int, seed: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    if isinstance(source, bool):
        raise ValueError(f"{name}: must be ms, a sequence of ms or a distribution, got {source!r}")
    if isinstance(source, int | float):
        return np.full(n, float(source))
    if hasattr(source, "sample"):
        return np.asarray(source.sample(stage_rng(seed, name), n), dtype=np.float64)
    if isinstance(source, SequenceABC | np.ndarray) and not isinstance(source, str):
        values = np.asarray(source, dtype=np.float64)
        if values.shape != (n,):
            raise ValueError(f"{name}: {values.size} delays for {n} turns")
        return values
    raise ValueError(f"{name}: must be ms, a sequence of ms or a distribution, got {source!r}")


def _turns(n: int, columns: dict[str, Any]) -> tuple[TurnScript, ...]:
    out = []
    for i in range(n):
        try:
            values: dict[str, Any] = {f"{name}_ms": float(col[i]) for name, col in columns.items()}
            out.append(TurnScript(**values))
        except ValueError as exc:
            raise ValueError(f"turn {i}: {exc}") from None
    return tuple(out)
