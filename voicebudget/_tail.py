"""How many measured turns a percentile needs: one rule for ``check``, the pytest plugin and ``compare``.

A percentile ``q`` of ``n`` turns rests on the ``n x min(q, 100 - q) / 100`` turns beyond it (numpy's
linear interpolation: a p95 of 10 turns lies between the two slowest, so it is the slowest turn's
neighbourhood). A verdict is *informed* by a percentile when at least :data:`TAIL_TURNS_TO_INFORM` turns
lie beyond it (a p95 needs 60 turns, a p99 300, a p50 6); ``compare`` gates a CI run on a percentile only
with :data:`voicebudget.baseline._compare.MIN_TAIL_TURNS` (5) beyond it (a p95 needs 100).
"""

from __future__ import annotations

import math

from voicebudget._text import count

__all__ = ["TAIL_TURNS_TO_INFORM", "few_turns_warning", "rests_on", "turns_needed"]

TAIL_TURNS_TO_INFORM = 3
"""Turns beyond a percentile for it to say more than its most extreme turn or two does."""


def turns_needed(q: float, beyond: int = TAIL_TURNS_TO_INFORM) -> int:
    """Turns for ``beyond`` of them to lie beyond percentile ``q`` (on its far side): ``ceil(beyond / far)``
    with ``far = min(q, 100 - q) / 100``; a p0 or p100 never has any (returns a huge number).

    :param q: the percentile, 0..100.
    """
    far = min(q, 100.0 - q) / 100.0
    return 2**62 if far <= 0 else math.ceil(beyond / far - 1e-9)


def rests_on(q: float, n: int) -> str:
    """``"a p95 of 10 turns rests on the slowest turn"``: how many turns lie beyond percentile ``q``."""
    k = max(1, math.ceil(n * min(q, 100.0 - q) / 100.0 - 1e-9))
    side = "slowest" if q >= 50 else "fastest"
    return f"a p{q:g} of {count(n, 'turn')} rests on the {side} {'turn' if k == 1 else f'{k} turns'}"


def few_turns_warning(q: float, n: int) -> str | None:
    """The warning for a measured percentile on too few turns, ``None`` from :func:`turns_needed` on:
    ``"a p95 of 10 turns rests on the slowest turn (a p95 wants 60+)"`` (short enough for one line of an
    80-column terminal with its ``warning:`` prefix)."""
    need = turns_needed(q)
    if n >= need:
        return None
    return f"{rests_on(q, n)} (a p{q:g} wants {need:,}+)"
