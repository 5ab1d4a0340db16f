"""From recorded turns to a :class:`~voicebudget.Report`: critical-path attribution on the time axis.

Each complete turn is looked at on its own time axis, the window ``[speech_end, first_audio]`` (its
voice-to-voice latency). Only what happens inside the window delays the answer, so every stage span
is clipped to it: ASR streaming while the user still talks, or the LLM still streaming while the
agent already speaks, costs nothing.

The window is cut at every span boundary and each piece is credited to exactly one stage among the
spans running through it:

1. a span gives way to a span nested inside it (a parent waits on its child stage);
2. among the rest, the span that ends last wins (what the answer waited for: the slowest of
   parallel branches, as ``max`` in the simulator's ``all_of``);
3. on a tie, the span that started last wins (the later pipeline step: while the LLM streams and
   TTS synthesises the first sentence, the piece up to first audio is TTS's);
4. a piece no span covers goes to the ``untracked`` stage.

A stage's figure in a turn is the time credited to it (NaN when it has no span in the turn; 0 when it
ran but never gated the answer). So the stage figures add up exactly to the voice-to-voice latency,
turn by turn, like the simulator's critical-path contributions, and a per-stage allocation caps what
that stage costs the user. Each stage's own wall time, overlaps included, stays on
:attr:`Turn.spans <voicebudget.Turn.spans>`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from voicebudget._budget import Budget
from voicebudget._errors import ScenarioError
from voicebudget._measured import TurnSet, turns_document
from voicebudget._report import Report, build_report
from voicebudget.checker._recorder import AUDIO_SENT, FIRST_AUDIO, UNTRACKED, StageSpan, Turn

__all__ = ["ExcludedTurn", "RecorderReport", "attribute_ns", "build_recorder_report", "measure", "server_side_ms"]

FloatArray = NDArray[np.float64]
_NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class ExcludedTurn:
    """A recorded turn left out of the latency figures, and why.

    :ivar status: ``incomplete``, ``cancelled``, ``errored``, ``invalid`` or ``open``.
    """

    index: int
    name: str
    status: str
    reason: str

    def __str__(self) -> str:
        return f"{self.name} {self.status}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "name": self.name, "status": self.status, "reason": self.reason}


@dataclass(frozen=True, repr=False)
class RecorderReport(Report):
    """A :class:`~voicebudget.Report` over measured turns, listing the turns it left out.

    :ivar excluded: turns without a voice-to-voice latency (no ``first_audio``, cancelled, errored,
        invalid, never ended); they do not change ``passed`` but appear in :meth:`summary`,
        the pytest failure message and ``to_dict()["excluded_turns"]``.
    """

    excluded: tuple[ExcludedTurn, ...] = ()
    measured: TurnSet | None = field(default=None, compare=False)
    """The complete turns themselves (per-turn total and stage credits, call ids): what ``to_dict()["measured"]``
    holds and ``voicebudget baseline pin`` keeps."""

    def summary(self) -> str:
        """The :class:`~voicebudget.Report` line, plus the number of turns left out and why."""
        line = super().summary()
        if self.excluded:
            line += f"; {len(self.excluded)} of {self.n_turns + len(self.excluded)} turns left out ("
            line += ", ".join(str(t) for t in self.excluded[:3]) + (", ..." if len(self.excluded) > 3 else "") + ")"
        return line

    def to_dict(self) -> dict[str, Any]:
        """:meth:`Report.to_dict`, with ``excluded_turns`` added when some turns were left out."""
        d = super().to_dict()
        if self.excluded:
            d["excluded_turns"] = [t.to_dict() for t in self.excluded]
        if self.measured is not None:
            d["measured"] = turns_document([self.measured])
        return d


def _ancestors(spans: Sequence[StageSpan]) -> dict[int, frozenset[int]]:
    """Span id -> ids of the spans it is nested in."""
    parent_of = {sp.id: sp.parent for sp in spans if sp.id >= 0}
    out: dict[int, frozenset[int]] = {}
    for sid in parent_of:
        chain: list[int] = []
        p = parent_of[sid]
        while p >= 0 and p not in chain:
            chain.append(p)
            p = parent_of.get(p, -1)
        out[sid] = frozenset(chain)
    return out


def _clip(spans: Sequence[StageSpan], lo: int, hi: int) -> list[StageSpan]:
    """Spans clipped to ``[lo, hi]``, empty ones dropped, in start order."""
    clipped = (sp._replace(start_ns=max(sp.start_ns, lo), end_ns=min(sp.end_ns, hi)) for sp in spans)
    return sorted((sp for sp in clipped if sp.end_ns > sp.start_ns), key=lambda sp: (sp.start_ns, sp.end_ns))


def _owner(covering: list[tuple[int, StageSpan]], ancestors: dict[int, frozenset[int]]) -> str:
    """The stage credited with a piece all of ``covering`` (order, span) run through."""
    hidden = frozenset().union(*(ancestors.get(sp.id, frozenset()) for _, sp in covering))
    candidates = [(sp.end_ns, sp.start_ns, order, sp.name) for order, sp in covering if sp.id not in hidden]
    return max(candidates)[3]


def attribute_ns(spans: Sequence[StageSpan], lo: int, hi: int) -> dict[str, int]:
    """Credit every instant of ``[lo, hi]`` to one stage (the rules in the module docstring).

    :param spans: the turn's spans (any order; clipped here).
    :param lo: window start (``speech_end``), ns.
    :param hi: window end (``first_audio``), ns, >= ``lo``.
    :returns: stage -> ns credited, :data:`UNTRACKED` for uncovered time; the values sum to ``hi - lo``.
    """
    clipped = _clip(spans, lo, hi)
    ancestors = _ancestors(spans)
    cuts = sorted({lo, hi, *(sp.start_ns for sp in clipped), *(sp.end_ns for sp in clipped)})
    out: dict[str, int] = {}
    for a, b in zip(cuts, cuts[1:], strict=False):
        covering = [(i, sp) for i, sp in enumerate(clipped) if sp.start_ns <= a and sp.end_ns >= b]
        owner = _owner(covering, ancestors) if covering else UNTRACKED
        out[owner] = out.get(owner, 0) + (b - a)
    return out


def _stage_names(turns: Sequence[Turn]) -> list[str]:
    """Stage names in order of first appearance (by start time within each turn)."""
    names: dict[str, None] = {}
    for turn in turns:
        for span in sorted(turn.spans, key=lambda s: s.start_ns):
            names.setdefault(span.name, None)
    return list(names)


def measure(turns: Sequence[Turn]) -> tuple[FloatArray, dict[str, FloatArray]]:
    """Voice-to-voice and per-stage credited time of complete turns.

    :returns: ``float64[n]`` voice-to-voice per turn, ms, and stage -> ``float64[n]`` ms credited
        (NaN where the stage has no span in the turn), stages in first-appearance order then
        ``untracked``; the stage values of a turn sum to its voice-to-voice latency.
    """
    names = _stage_names(turns)
    n = len(turns)
    total = np.empty(n)
    stages = {k: np.full(n, np.nan) for k in [*names, UNTRACKED]}
    for i, turn in enumerate(turns):
        lo, hi = turn.origin_ns, turn.marks_ns[FIRST_AUDIO]
        total[i] = (hi - lo) / _NS_PER_MS
        spans = turn.spans
        for name in {sp.name for sp in spans}:
            stages[name][i] = 0.0
        stages[UNTRACKED][i] = 0.0
        for name, ns in attribute_ns(spans, lo, hi).items():
            stages[name][i] = ns / _NS_PER_MS
    return total, stages


def server_side_ms(turns: Sequence[Turn]) -> FloatArray | None:
    """``audio_sent - speech_end`` per turn, ms, when every turn has an ``audio_sent`` mark, else None."""
    if not all(AUDIO_SENT in t.marks_ns for t in turns):
        return None
    return np.array([(t.marks_ns[AUDIO_SENT] - t.origin_ns) / _NS_PER_MS for t in turns])


def build_recorder_report(name: str, budget: Budget, turns: Sequence[Turn]) -> RecorderReport:
    """Judge the complete turns; list the others.

    :raises ScenarioError: no complete turn (the message lists what was recorded).
    """
    complete = [t for t in turns if t.status == "complete"]
    excluded = tuple(ExcludedTurn(t.index, t.name, t.status, t.reason) for t in turns if t.status != "complete")
    if not complete:
        listed = "; ".join(str(t) for t in excluded[:5]) + ("; ..." if len(excluded) > 5 else "")
        what = f"{len(turns)} recorded: {listed}" if turns else "no turn was recorded"
        raise ScenarioError(f"no complete turn (with first_audio) to report on; {what}", origin=name, field="turns")
    total, stages = measure(complete)
    report = build_report(
        name,
        budget,
        total,
        stages,
        contributions=lambda tail: {k: np.nan_to_num(v[tail], nan=0.0) for k, v in stages.items()},
        server_side_ms=server_side_ms(complete),
        source="recorder",
    )
    fields = {f: getattr(report, f) for f in report.__dataclass_fields__}
    calls = tuple(t.call for t in complete) if all(t.call is not None for t in complete) else None
    measured = TurnSet(
        name,
        "recorder",
        RECORDER_ANCHOR,
        RECORDER_TOTAL,
        budget,
        total,
        stages,
        tuple(t.name for t in complete),
        calls,  # type: ignore[arg-type]  # None, or a str per turn
    )
    return RecorderReport(**fields, excluded=excluded, measured=measured)


RECORDER_ANCHOR = "recorder: the speech_end mark (else the turn's start)"
"""The ``anchor`` of a recorder's turn set."""
RECORDER_TOTAL = "voice-to-voice: first_audio - speech_end"
"""The ``total`` of a recorder's turn set."""
