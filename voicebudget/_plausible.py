"""Values outside the plausible range of what they measure: warnings, not errors.

A latency typed in seconds where the field is in ms (``p50_ms = 0.26`` for a 260 ms ASR, ``--budget-ms
0.8`` for 800 ms) is a valid number, so validation lets it through and the run simulates a 0.26 ms ASR
without a word. Here each value is compared with the range of what it measures, and one outside it is
an :class:`~voicebudget.ImplausibleValue` warning naming the field path; the run goes on (a local
model on the same host may really answer in under a millisecond somewhere).

What a value measures is declared by the models that hold it (:attr:`DataModel.plausible_as
<voicebudget._model.DataModel.plausible_as>`: the voice turn's ``asr`` field is an ASR finalisation, an
``llm`` stage's ``ttft`` an LLM's time to first token); a combinator's stage named like a voice-turn
stage (``stages.asr``) measures the same. A distribution is judged by its median (a log-normal's
``p50_ms``, a fixed ``value_ms``, a normal's ``mean_ms``; a mixture by the range of its components'
medians, which holds the mixture's median). A median of exactly 0 means "not in this turn" (the bundled
scenarios put the network round trip inside the LLM's measured TTFT) and is never a warning.

The ranges (:data:`RANGES`) come from docs/reference/component-latencies.csv (a copy of
shared/reference/component-latencies.csv, read 2026-06 to 2026-09); tests/test_plausible.py checks the
figures quoted here against that file:

- too small: a median under :data:`SUB_MS` (1 ms) for an ASR, an LLM's first token, a TTS first byte,
  a network leg or the transport to the listener. The fastest published medians are 75 ms (ElevenLabs
  Flash v2.5 TTS, model time only; elevenlabs.io/docs/api-reference/reducing-latency), 221 ms (ASR:
  NVIDIA Nemotron, pipecat-ai/stt-benchmark) and 321 ms (LLM TTFT: gemini-2.5-flash-lite, OpenRouter
  probe, jonathanwrede.de): a value 75x below all of them is what 0.26 typed for 260 ms looks like.
  An endpointing wait has no lower bound (0 is a push-to-talk commit).
- too large: a median over :data:`OVER_MS` (a minute) for any of them, the endpointing wait included:
  20x the longest published setting (LiveKit's turn-detector ``max_delay``, 3.0 s; livekit/agents
  voice/turn.py) and 28x the slowest published median (claude-sonnet-4.6 TTFT 2,120 ms, same probe):
  a value multiplied by 1,000 once too often.
- a budget under :data:`BUDGET_MIN_MS` (50 ms): below the fastest single stage published (the 75 ms TTS
  above), so no voice turn can meet it; a budget over a minute is the other direction.
- a budget judged below :data:`PERCENTILE_MIN` (the median): ``percentile = 0.95`` is p0.95, which passes
  when 0.95% of turns fit (a share typed for a percentile); a latency budget is judged at p50 to p99.

Time per output token is not judged: sub-millisecond is real there (Cerebras at 1,800 tokens/s is 0.56 ms
per token; scenarios/support-line.toml). Modelled stages (``gpu``, ``wafer``) are computed, not typed.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel

from voicebudget._budget import Budget
from voicebudget._distributions import Empirical, Fixed, LogNormal, Mixture, Normal, Shifted, Uniform
from voicebudget._errors import ImplausibleValue
from voicebudget._model import DataModel
from voicebudget._text import as_given

__all__ = [
    "BUDGET_MIN_MS",
    "OVER_MS",
    "PERCENTILE_MIN",
    "RANGES",
    "SUB_MS",
    "Plausible",
    "budget_percentile_warning",
    "budget_total_warning",
    "implausible_values",
    "warn_each",
]

SUB_MS = 1.0
"""A median below this (and above 0) is implausible for every stage that has a lower bound, ms."""
OVER_MS = 60_000.0
"""A median above this (a minute) is implausible for every stage of a voice turn, and so is a budget, ms."""
BUDGET_MIN_MS = 50.0
"""A voice-to-voice budget below this is implausible: under the fastest single stage published (75 ms)."""
PERCENTILE_MIN = 50.0
"""A budget's percentile below this is implausible: a verdict below the median passes when most turns miss the
budget (``percentile = 0.95``, a share typed for p95, passes when 0.95% of turns fit)."""


@dataclass(frozen=True)
class Plausible:
    """The plausible range of what a value measures.

    :ivar what: the thing measured, as a message names it (``"an ASR finalisation"``).
    :ivar published: the published figures, as a message quotes them.
    :ivar low_ms: a median in (0, low_ms) is implausible; None: no lower bound.
    :ivar high_ms: a median above it is implausible.
    """

    what: str
    published: str
    low_ms: float | None = SUB_MS
    high_ms: float = OVER_MS


_NETWORK = "ITU-T G.114 plans one-way delay up to 150 ms; a cold connection adds ~1,300 ms"

RANGES: Mapping[str, Plausible] = {
    # endpointing_wait rows: Pipecat stop_secs 200 ms ... LiveKit turn detector max_delay 2,500-3,000 ms
    "endpointing": Plausible("an endpointing wait", "published settings 200 to 3,000 ms", low_ms=None),
    # stt_final_after_speech_end rows (pipecat-ai/stt-benchmark): p50 221 (Nemotron) to 1,136 ms (AWS)
    "asr": Plausible("an ASR finalisation", "published medians 221 to 1,136 ms"),
    # llm_ttft rows (OpenRouter probe, LiveKit user report): 321 to 2,120 ms
    "llm": Plausible("an LLM's first token", "published medians 321 to 2,120 ms"),
    # tts_ttfb rows: ElevenLabs Flash model time 75 ms ... a measured WebSocket run 313 ms
    "tts": Plausible("a TTS first byte", "published medians 75 to 313 ms"),
    # network_one_way (ITU-T G.114) and cold_connection_extra (dograh-hq/dograh PR 749) rows
    "network": Plausible("a network leg", _NETWORK),
    "transport": Plausible("the transport to the listener", _NETWORK),
}
"""What a value measures -> its plausible range (the names are the voice turn's stage names)."""


def implausible_values(model: BaseModel, prefix: str = "") -> list[tuple[str, str]]:
    """Every value of ``model`` outside the plausible range of what it measures, in field order.

    :param model: a scenario, a council, a pipeline or any input model (walked through its fields).
    :param prefix: the field path of ``model`` in its document (``"variants.fast"``), ``""`` at the top.
    :returns: ``(field path, message)`` pairs, e.g. ``("pipeline.asr.p50_ms", "0.26 ms is implausible for an
        ASR finalisation (...); seconds typed as ms? 0.26 s is 260 ms")``.
    """
    return list(_walk(model, prefix, None))


def warn_each(messages: Iterable[str], stacklevel: int = 2) -> None:
    """Issue each message as an :class:`~voicebudget.ImplausibleValue` warning.

    :param stacklevel: as :func:`warnings.warn`'s, counted from the caller of this function.
    """
    for message in messages:
        warnings.warn(ImplausibleValue(message), stacklevel=stacklevel + 1)


def budget_total_warning(total_ms: float) -> str | None:
    """The message for an implausible voice-to-voice budget (None when plausible), e.g. ``0.8 ms is under
    50 ms, ...; seconds typed as ms? 0.8 s is 800 ms``.

    :param total_ms: the budget, ms.
    """
    if total_ms < BUDGET_MIN_MS:
        return (
            f"{as_given(total_ms)} ms is under {BUDGET_MIN_MS:.0f} ms, less than the fastest single stage of a "
            f"voice turn published (a TTS first byte, 75 ms), so no turn can meet it; "
            f"seconds typed as ms? {as_given(total_ms)} s is {as_given(round(total_ms * 1000, 9))} ms"
        )
    if total_ms > OVER_MS:
        return _too_large(total_ms, "a voice-to-voice budget", "the usual budget is 800 ms")
    return None


def budget_percentile_warning(percentile: float) -> str | None:
    """The message for a budget judged below the median (None from :data:`PERCENTILE_MIN` on), e.g. ``p0.95
    passes when 0.95% of turns are within budget ...; a share typed for a percentile? 0.95 is p95``.

    :param percentile: the budget's percentile, in (0, 100].
    """
    if percentile >= PERCENTILE_MIN:
        return None
    message = (
        f"p{percentile:g} passes when {percentile:g}% of turns are within budget, so most turns may miss it; a "
        f"latency budget is judged at p50 to p99"
    )
    if percentile <= 1:
        message += f"; a share typed for a percentile? {percentile:g} is p{round(percentile * 100, 9):g}"
    return message


def _walk(node: object, path: str, role: str | None) -> Iterator[tuple[str, str]]:
    if role is not None and isinstance(node, _MEDIANS):
        found = _judge(node, RANGES[role])
        if found is not None:
            field, message = found
            yield (f"{path}.{field}" if field else path), message
        return
    if isinstance(node, Budget):
        yield from _budget(node, path)
        return
    if isinstance(node, BaseModel):
        roles = node.plausible_as if isinstance(node, DataModel) else {}
        for name in type(node).model_fields:
            yield from _walk(getattr(node, name), _join(path, name), roles.get(name))
    elif isinstance(node, Mapping):
        for key, value in node.items():
            yield from _walk(value, _join(path, str(key)), key if key in RANGES else None)
    elif isinstance(node, tuple | list) and node and isinstance(node[0], BaseModel | Mapping | tuple | list):
        for i, value in enumerate(node):  # not lists of numbers: samples can be millions long
            yield from _walk(value, _join(path, str(i)), None)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _budget(budget: Budget, path: str) -> Iterator[tuple[str, str]]:
    message = budget_total_warning(budget.total_ms)
    if message is not None:
        yield _join(path, "total_ms"), message
    message = budget_percentile_warning(budget.percentile)
    if message is not None:
        yield _join(path, "percentile"), message


def _judge(dist: object, plausible: Plausible) -> tuple[str | None, str] | None:
    """``(the field the median was read from or None, message)`` for an implausible median, else None."""
    low, high, field = _median_bounds(dist)
    if plausible.low_ms is not None and 0 < high < plausible.low_ms:
        shown = _shown(high, field, low == high, "at most")
        return field, (
            f"{shown} is implausible for {plausible.what} ({plausible.published}); seconds typed as ms? "
            f"{as_given(high)} s is {as_given(round(high * 1000, 9))} ms"
        )
    if low > plausible.high_ms:
        return field, _too_large(low, plausible.what, plausible.published, _shown(low, field, low == high, "at least"))
    return None


def _shown(value_ms: float, field: str | None, exact: bool, bound: str) -> str:
    """The value as a message quotes it: as typed when read from a field, else the median (or its bound)."""
    if field:
        return f"{as_given(value_ms)} ms"
    return f"a median of {'' if exact else bound + ' '}{as_given(value_ms)} ms"


def _too_large(value_ms: float, what: str, published: str, shown: str | None = None) -> str:
    meant = as_given(round(value_ms / 1000, 9))
    return (
        f"{shown or as_given(value_ms) + ' ms'} ({meant} s) is implausible for {what} ({published}); "
        f"ms multiplied by 1,000 again? that would be {meant} ms"
    )


def _median_bounds(dist: object) -> tuple[float, float, str | None]:
    """Bounds on a distribution's median, ms, and the field it is read from (None: computed)."""
    if isinstance(dist, Fixed):
        return dist.value_ms, dist.value_ms, "value_ms"
    if isinstance(dist, LogNormal):
        return dist.p50_ms, dist.p50_ms, "p50_ms"
    if isinstance(dist, Normal):  # the median of a normal clipped below at floor_ms
        m = max(dist.mean_ms, dist.floor_ms)
        return m, m, "mean_ms" if dist.mean_ms >= dist.floor_ms else "floor_ms"
    if isinstance(dist, Uniform):
        m = (dist.low_ms + dist.high_ms) / 2
        return m, m, None
    if isinstance(dist, Empirical):
        m = float(np.median(np.asarray(dist.samples_ms, dtype=np.float64)))
        return m, m, None
    if isinstance(dist, Shifted):
        low, high, _ = _median_bounds(dist.base)
        return dist.shift_ms + low, dist.shift_ms + high, None
    assert isinstance(dist, Mixture)
    bounds = [_median_bounds(c) for c in dist.components]  # the mixture's median lies between theirs
    return min(b[0] for b in bounds), max(b[1] for b in bounds), None


_MEDIANS = (Fixed, LogNormal, Normal, Uniform, Empirical, Shifted, Mixture)
