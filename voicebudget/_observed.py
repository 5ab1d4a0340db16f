"""Observed turns as a stage: one column of a table of measured turns, resampled jointly.

A trace gives, per turn, a value for every stage (endpointing, TTFT, TTS TTFB, ...). Resampling each
stage on its own would break what ties them together in one turn (a cold first turn is slow in the
LLM *and* the TTS; with a few dozen turns, chance pairings of independent tails move the p95 of the
sum by 10% or more). An :class:`Observed` stage is one column of such a table: every column with
the same ``table`` name draws the *same* rows in a run, so the stages of a simulated turn come
from the same observed turn.

With ``interpolate = true`` (the default) a draw is a point between two neighbouring rows: rows
are ordered by their total, ``u ~ U(0, 1)`` picks position ``r = u * (m - 1)``, and every column
takes ``(1 - w) * x[i] + w * x[i + 1]`` with ``i = floor(r)``, ``w = r - i``. The sum of the
columns is then distributed exactly as the observed totals under numpy's default (linear)
percentile, so a scenario fitted from a trace reproduces the trace's p50 and p95. With
``interpolate = false`` a draw is one whole row (a plain bootstrap of turns).

The shared row draw comes from the run's seed: the engine hands every stage a generator built by
:func:`voicebudget.stage_rng` from ``SeedSequence(seed, ...)``; the table's stream is derived from
that seed and the table name, so it is the same for every column (and for every variant: common
random numbers).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import Field, field_validator

from voicebudget._algebra import Stage, stage_rng
from voicebudget._errors import ModelError

__all__ = ["Observed", "table_uniforms"]

FloatArray = NDArray[np.float64]


class Observed(Stage):
    """One stage's value in each turn of a table of observed turns, resampled jointly with the table's
    other columns.

    :param table: the table's name; columns with the same name draw the same rows.
    :param values_ms: ``float64[m]`` this stage's value in each observed turn, ms (finite, >= 0),
        in the table's row order (rows sorted by turn total, so interpolation keeps totals exact).
    :param interpolate: interpolate linearly between neighbouring rows (default) or draw whole rows.
    """

    kind: Literal["observed"] = "observed"
    table: str = Field(min_length=1, description="Name of the turn table; its columns draw the same rows.")
    values_ms: tuple[float, ...] = Field(description="This stage's value in each observed turn, ms, in row order.")
    interpolate: bool = Field(default=True, description="Interpolate between neighbouring rows (else bootstrap).")

    @field_validator("values_ms")
    @classmethod
    def _finite(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        if not v:
            raise ValueError("needs at least one observed turn")
        if not all(math.isfinite(x) and x >= 0 for x in v):
            raise ValueError("values must be finite and >= 0 ms")
        return v

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        """Draw ``n`` turns: ``float64[n]`` ms, rows shared with the other columns of ``table``.

        :raises ModelError: ``rng`` was not built from a :class:`numpy.random.SeedSequence` (the
            engine's generators are), so the table's shared stream cannot be derived.
        """
        values = np.asarray(self.values_ms, dtype=np.float64)
        u = table_uniforms(rng, self.table, n)
        m = values.size
        if m == 1:
            return np.full(n, values[0])
        if not self.interpolate:
            return values[np.minimum((u * m).astype(np.intp), m - 1)]
        pos = u * (m - 1)
        i = np.minimum(pos.astype(np.intp), m - 2)
        w = pos - i
        out: FloatArray = values[i] * (1.0 - w) + values[i + 1] * w
        return out


def table_uniforms(rng: np.random.Generator, table: str, n: int) -> FloatArray:
    """``float64[n]`` uniforms on [0, 1) shared by every column of ``table`` in one run.

    Derived from the entropy (the run's seed) of the :class:`numpy.random.SeedSequence` behind
    ``rng`` and a CRC-32 of the table name.

    :raises ModelError: ``rng`` has no SeedSequence.
    """
    seed_seq = getattr(rng.bit_generator, "seed_seq", None)
    if not isinstance(seed_seq, np.random.SeedSequence) or not isinstance(seed_seq.entropy, int):
        raise ModelError(
            f"observed table {table!r}: the generator has no SeedSequence to derive the table's shared "
            "stream from; sample through voicebudget.simulate/evaluate or pass np.random.default_rng(seed)"
        )
    # the table's stream is the engine's stream of a pseudo-stage named after the table
    return stage_rng(seed_seq.entropy, f"observed-table:{table}").random(n)
