"""From recorded turns to a :class:`~voicebudget.Report`: stage times and critical-path attribution.

Each complete turn is looked at on its own time axis, the window ``[speech_end, first_audio]``
(its voice-to-voice latency). Only what happens inside the window delays the answer, so every
stage span is clipped to it: ASR streaming while the user still talks, or the LLM still streaming
while the agent already speaks, is not counted.

- A stage's **time** in a turn is the length of the union of its clipped spans (a stage that ran
  twice counts both runs; overlapping runs count once). NaN when the stage did not run in that turn.
- **Attribution** (the report's ``tail_ms``/``tail_share``): the window is cut at every span
  boundary; each piece is credited to one stage among those running through it: the one whose
  clipped span ends last (it is what the answer waited for), ties going to the one that started last
  (the later step of a pipeline: while the LLM streams and TTS synthesises the first sentence, the
  piece up to first audio is TTS's). Pieces no stage covers go to the ``untracked`` stage. The
  contributions add up exactly to the voice-to-voice latency, turn by turn, as the simulator's
  critical-path attribution does. A nested stage that ends before its parent gets no credit (the
  parent does); time the parts as siblings to see them in the attribution. Their own times are
  reported either way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from voicebudget._budget import Budget
from voicebudget._errors import ScenarioError
from voicebudget._report import Report, build_report
from voicebudget.checker._recorder import FIRST_AUDIO, UNTRACKED, StageSpan, Turn

__all__ = ["ExcludedTurn", "RecorderReport", "attribute_ns", "build_recorder_report", "union_ns"]

FloatArray = NDArray[np.float64]
Interval = tuple[str, int, int]
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
        return d


def union_ns(spans: Iterable[tuple[int, int]]) -> int:
    """Length of the union of ``(start_ns, end_ns)`` intervals, ns."""
    total, reach = 0, None
    for start, end in sorted(spans):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def attribute_ns(intervals: Sequence[Interval], lo: int, hi: int) -> dict[str, int]:
    """Credit every instant of ``[lo, hi]`` to one stage (see the module docstring).

    :param intervals: ``(stage, start_ns, end_ns)`` already clipped to ``[lo, hi]``.
    :returns: stage -> ns credited, with :data:`UNTRACKED` for uncovered time; sums to ``hi - lo``.
    """
    cuts = sorted({lo, hi, *(s for _, s, _ in intervals), *(e for _, _, e in intervals)})
    out: dict[str, int] = {}
    for a, b in zip(cuts, cuts[1:], strict=False):
        best: tuple[int, int, int] | None = None
        owner = UNTRACKED
        for order, (name, s, e) in enumerate(intervals):
            if s <= a and e >= b and (best is None or (e, s, order) > best):
                best, owner = (e, s, order), name
        out[owner] = out.get(owner, 0) + (b - a)
    return out


def _clipped(spans: Iterable[StageSpan], lo: int, hi: int) -> list[Interval]:
    """Spans clipped to ``[lo, hi]``, empty ones dropped, in start order."""
    out = [(s.name, max(s.start_ns, lo), min(s.end_ns, hi)) for s in spans]
    return sorted((iv for iv in out if iv[2] > iv[1]), key=lambda iv: (iv[1], iv[2]))


def _stage_names(turns: Sequence[Turn]) -> list[str]:
    """Stage names in order of first appearance (by start time within each turn)."""
    names: dict[str, None] = {}
    for turn in turns:
        for span in sorted(turn.spans, key=lambda s: s.start_ns):
            names.setdefault(span.name, None)
    return list(names)


@dataclass(frozen=True)
class _Measured:
    total_ms: FloatArray
    stages_ms: dict[str, FloatArray]
    contributions_ms: dict[str, FloatArray]


def measure(turns: Sequence[Turn]) -> _Measured:
    """Per-turn voice-to-voice, per-stage clipped time and attribution of complete turns, ms.

    :returns: ``float64[n]`` arrays; stages in first-appearance order then ``untracked``.
    """
    names = _stage_names(turns)
    n = len(turns)
    total = np.empty(n)
    stages = {k: np.full(n, np.nan) for k in [*names, UNTRACKED]}
    contrib = {k: np.zeros(n) for k in [*names, UNTRACKED]}
    for i, turn in enumerate(turns):
        lo, hi = turn.origin_ns, turn.marks_ns[FIRST_AUDIO]
        total[i] = (hi - lo) / _NS_PER_MS
        clipped = _clipped(turn.spans, lo, hi)
        for name in {s.name for s in turn.spans}:
            stages[name][i] = union_ns((s, e) for k, s, e in clipped if k == name) / _NS_PER_MS
        credit = attribute_ns(clipped, lo, hi)
        stages[UNTRACKED][i] = credit.get(UNTRACKED, 0) / _NS_PER_MS
        for name, ns in credit.items():
            contrib[name][i] = ns / _NS_PER_MS
    return _Measured(total, stages, contrib)


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
    m = measure(complete)
    report = build_report(
        name,
        budget,
        m.total_ms,
        m.stages_ms,
        contributions=lambda tail: {k: v[tail] for k, v in m.contributions_ms.items()},
        source="recorder",
    )
    fields = {f: getattr(report, f) for f in report.__dataclass_fields__}
    return RecorderReport(**fields, excluded=excluded)
