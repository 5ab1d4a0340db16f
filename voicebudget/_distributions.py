"""Latency distributions: pure data that draws ``float64[n]`` samples in milliseconds.

Each distribution is a frozen pydantic model with a ``kind`` tag (the scenario-file discriminator) and
``sample(rng, n)``. Nothing here touches disk, clock or global random state, except
:class:`Empirical` with a ``file``, which reads it once at validation (that is, inside
:func:`voicebudget.load_scenario`, relative to the scenario file).

The log-normal is parameterised by two quantiles because that is what benchmarks publish:
``mu = ln(p50)``, ``sigma = ln(p95 / p50) / z_0.95`` with ``z_0.95 = 1.6448536...``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import numpy as np
from numpy.typing import NDArray
from pydantic import (
    AfterValidator,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from voicebudget._algebra import Buffers, Stage
from voicebudget._budget import MAX_LATENCY_MS
from voicebudget._errors import ScenarioError
from voicebudget._io import MAX_DATA_BYTES, csv_rows, parse_json, read_text, resolve_reference

__all__ = [
    "Distribution",
    "Empirical",
    "Fixed",
    "LogNormal",
    "Mixture",
    "Normal",
    "Shifted",
    "Uniform",
]

Z95 = 1.6448536269514722
"""Standard normal 95th percentile, ``Phi^-1(0.95)``."""

TAIL_Z = 6.0
"""How far into its tail a distribution must stay below :data:`~voicebudget._budget.MAX_LATENCY_MS`: mu +
6 sigma (one sample in ~10^9 beyond), so parameters whose samples would overflow, or that a run would
refuse as turns beyond 1,000 hours, are refused when the file is read, naming the field."""


def _within_max(v: float) -> float:
    if v > MAX_LATENCY_MS:
        raise ValueError(f"must be at most {MAX_LATENCY_MS:,.0f} ms (1,000 hours), got {v:g}")
    return v


LatencyMs = Annotated[float, Field(ge=0), AfterValidator(_within_max)]
"""A latency parameter in ms: >= 0 and at most :data:`~voicebudget._budget.MAX_LATENCY_MS`."""

FloatArray = NDArray[np.float64]


class _Dist(Stage):
    """A latency distribution: a leaf stage (its component distributions are parameters, not stages).

    Every kind draws in :meth:`sample_into` (into the engine's buffer); :meth:`sample` is the same draws
    into a new array.
    """

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        return self.sample_into(rng, np.empty(n), Buffers(n))


class Fixed(_Dist):
    """A constant latency, e.g. a VAD ``stop_secs`` silence timer (``value_ms``)."""

    kind: Literal["fixed"] = "fixed"
    value_ms: LatencyMs = Field(description="The constant latency in ms.")

    def sample_into(self, rng: np.random.Generator, out: FloatArray, buffers: Buffers) -> FloatArray:
        out.fill(self.value_ms)
        return out


class Uniform(_Dist):
    """Uniform on ``[low_ms, high_ms]``."""

    kind: Literal["uniform"] = "uniform"
    low_ms: LatencyMs
    high_ms: LatencyMs

    @field_validator("high_ms")
    @classmethod
    def _high_ge_low(cls, v: float, info: ValidationInfo) -> float:
        low = info.data.get("low_ms")
        if low is not None and v < low:
            raise ValueError(f"must be >= low_ms ({low}), got {v}")
        return v

    def sample_into(self, rng: np.random.Generator, out: FloatArray, buffers: Buffers) -> FloatArray:
        rng.random(out=out)  # low + (high - low) * u, as numpy's ``uniform`` computes it (the same draws)
        out *= self.high_ms - self.low_ms
        out += self.low_ms
        return out


class Normal(_Dist):
    """Normal with mean ``mean_ms`` and standard deviation ``std_ms``, clipped below at ``floor_ms``.

    The clip is explicit: samples below ``floor_ms`` (default 0) are set to it, so the mean is
    slightly above ``mean_ms`` when ``mean_ms`` is within ~3 ``std_ms`` of the floor.
    """

    kind: Literal["normal"] = "normal"
    mean_ms: LatencyMs
    std_ms: LatencyMs
    floor_ms: LatencyMs = Field(default=0.0, description="Samples below this are set to it.")

    @model_validator(mode="after")
    def _tail_within_max(self) -> Normal:
        if self.mean_ms + TAIL_Z * self.std_ms > MAX_LATENCY_MS:
            raise ValueError(
                f"mean_ms + 6 std_ms = {self.mean_ms + TAIL_Z * self.std_ms:.3g} ms is beyond "
                f"{MAX_LATENCY_MS:,.0f} ms (1,000 hours): samples would be refused as turns that long"
            )
        return self

    def sample_into(self, rng: np.random.Generator, out: FloatArray, buffers: Buffers) -> FloatArray:
        rng.standard_normal(out=out)  # mean + std * z, as numpy's ``normal`` computes it (the same draws)
        out *= self.std_ms
        out += self.mean_ms
        np.maximum(out, self.floor_ms, out=out)
        return out


class LogNormal(_Dist):
    """Log-normal fixed by its median and 95th percentile (the figures benchmarks publish).

    ``mu = ln(p50_ms)``, ``sigma = ln(p95_ms / p50_ms) / 1.6449``. ``p95_ms == p50_ms`` degenerates
    to a constant.
    """

    kind: Literal["lognormal"] = "lognormal"
    p50_ms: LatencyMs = Field(gt=0)
    p95_ms: LatencyMs = Field(gt=0)

    @field_validator("p95_ms")
    @classmethod
    def _p95_ge_p50(cls, v: float, info: ValidationInfo) -> float:
        p50 = info.data.get("p50_ms")
        if p50 is not None and v < p50:
            raise ValueError(f"must be >= p50_ms ({p50}), got {v}")
        sigma = (math.log(v) - math.log(p50)) / Z95 if p50 is not None else 0.0  # no overflow: 300 / 5e-324
        if p50 is not None and math.log(p50) + TAIL_Z * sigma > math.log(MAX_LATENCY_MS):
            raise ValueError(
                f"p50_ms {p50:g} and p95_ms {v:g} spread the log-normal so wide (sigma {sigma:.3g}) that its "
                f"mu + 6 sigma is beyond {MAX_LATENCY_MS:,.0f} ms (1,000 hours): samples would overflow or be "
                "refused as turns that long"
            )
        return v

    @property
    def mu(self) -> float:
        """Location of ``ln X``."""
        return math.log(self.p50_ms)

    @property
    def sigma(self) -> float:
        """Scale of ``ln X``."""
        return math.log(self.p95_ms / self.p50_ms) / Z95

    def sample_into(self, rng: np.random.Generator, out: FloatArray, buffers: Buffers) -> FloatArray:
        z = rng.standard_normal(out=out)
        z *= self.sigma
        z += self.mu
        return np.exp(z, out=z)


class Empirical(_Dist):
    """Observed latencies resampled with replacement (bootstrap).

    Give ``samples_ms`` inline or a ``file``: CSV (one number per row, or the column named
    ``column``, header optional) or JSON (a list, or an object with a ``samples_ms`` list). A relative
    ``file`` is resolved against the scenario file's folder (validation context ``base_dir``).

    :raises pydantic.ValidationError: (turned into :class:`ScenarioError` by ``load_scenario``) when
        neither or both are given, the file is missing or unreadable, or a value is negative/not finite.
    """

    kind: Literal["empirical"] = "empirical"
    samples_ms: tuple[float, ...] | None = None
    file: str | None = None
    column: str | None = Field(default=None, description="CSV column to read (default: the first).")

    @model_validator(mode="before")
    @classmethod
    def _read_file(cls, data: object, info: ValidationInfo) -> object:
        if not isinstance(data, dict) or data.get("file") is None:
            return data
        if data.get("samples_ms") is not None:
            raise ValueError("give samples_ms or file, not both")
        path = resolve_reference(data["file"], info.context)
        return {**data, "samples_ms": _read_samples(path, data.get("column"))}

    @field_validator("samples_ms")
    @classmethod
    def _check_samples(cls, v: tuple[float, ...] | None) -> tuple[float, ...] | None:
        if v is None:
            raise ValueError("give samples_ms (a list of ms) or file (a CSV or JSON of ms)")
        if len(v) == 0:
            raise ValueError("needs at least one sample")
        arr = np.asarray(v, dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(arr) | (arr < 0) | (arr > MAX_LATENCY_MS))
        if bad.size:
            i = int(bad[0])
            got = _describe_cell(str(arr[i]), float(arr[i]))
            raise ValueError(f"samples_ms[{i}] (item {i + 1}): {got}; {_ALLOWED}")
        return v

    def sample_into(self, rng: np.random.Generator, out: FloatArray, buffers: Buffers) -> FloatArray:
        return resample_into(np.asarray(self.samples_ms, dtype=np.float64), rng, out)


_ALLOWED = "a sample must be a finite number of ms, >= 0 and at most 1,000 hours"


def _read_samples(path: Path, column: str | None) -> list[float]:
    """Samples in ms from a JSON list (or ``{"samples_ms": [...]}``) or a CSV column.

    Messages name the file, the line (CSV) or item (JSON), the column and what is allowed, never the
    file's content. Blank CSV lines are skipped; lines are numbered as a text editor does (from 1).
    """
    try:
        text = read_text(path, max_bytes=MAX_DATA_BYTES, regular_only=True)
        if path.suffix.lower() == ".json":
            return _json_samples(parse_json(text, origin=str(path), allow_nan=False), path)
        rows = [(line, r) for line, r in csv_rows(text, origin=str(path)) if any(cell.strip() for cell in r)]
    except ScenarioError as exc:
        raise ValueError(str(exc)) from None
    if not rows:
        raise ValueError(f"{path}: no samples")
    index, rows = _csv_column(rows, column, path)
    if not rows:
        raise ValueError(f"{path}: no samples (header only)")
    where = f"column {index + 1}" + (f" ({column[:80]!r})" if column is not None else "")
    return [_csv_sample(row, index, path, line, where) for line, row in rows]


def _csv_column(
    rows: list[tuple[int, list[str]]], column: str | None, path: Path
) -> tuple[int, list[tuple[int, list[str]]]]:
    """The samples' column (``column`` in the header row, else the first) and the rows after any header."""
    if column is not None:
        if column not in rows[0][1]:
            raise ValueError(f"{path}: no column {column[:80]!r} in the header row ({len(rows[0][1])} columns)")
        return rows[0][1].index(column), rows[1:]
    return 0, rows[1:] if _parse_ms(rows[0][1][0]) is None else rows


def _csv_sample(row: list[str], index: int, path: Path, line: int, where: str) -> float:
    """One CSV row's sample in ms.

    :raises ValueError: missing, not a number, not finite, negative or beyond 1,000 hours (naming the line
        and the column, ``where``).
    """
    value = _parse_ms(row[index]) if index < len(row) else None
    if value is None or not math.isfinite(value) or not 0 <= value <= MAX_LATENCY_MS:
        got = _describe_cell(row[index] if index < len(row) else None, value)
        raise ValueError(f"{path}: line {line}, {where}: {got}; {_ALLOWED}")
    return value


def _parse_ms(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def _describe_cell(cell: str | None, value: float | None) -> str:
    """What is wrong with a sample cell, without quoting it (files may hold anything)."""
    if cell is None:
        return "missing (the line has fewer columns)"
    if not cell.strip():
        return "empty"
    if value is None:
        return "not a number"
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "infinite (or too large for a float)" if value > 0 else "-infinite"
    return f"negative ({value:g} ms)" if value < 0 else f"beyond 1,000 hours ({value:g} ms)"


def _json_samples(data: Any, path: Path) -> list[float]:
    if isinstance(data, dict):
        data = data.get("samples_ms")
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of ms or an object with 'samples_ms'")
    for i, x in enumerate(data):
        if isinstance(x, bool) or not isinstance(x, int | float):
            got = "null" if x is None else "a boolean" if isinstance(x, bool) else f"a {type(x).__name__}"
            raise ValueError(f"{path}: samples_ms[{i}] (item {i + 1}): expected a number of ms, got {got}")
        if not math.isfinite(x) or not 0 <= x <= MAX_LATENCY_MS:
            got = _describe_cell(str(x), float(x))
            raise ValueError(f"{path}: samples_ms[{i}] (item {i + 1}): {got}; {_ALLOWED}")
    return [float(x) for x in data]


class Mixture(_Dist):
    """A probabilistic mixture: with probability ``weights[i]`` a turn draws from ``components[i]``.

    E.g. a semantic turn detector's bimodal wait: ``min_delay`` when it is confident the user is
    done, ``max_delay`` when not. ``weights`` must be non-negative and sum to 1 (within 1e-6).
    """

    kind: Literal["mixture"] = "mixture"
    weights: tuple[float, ...]
    components: tuple[Distribution, ...]

    @model_validator(mode="after")
    def _check_weights(self) -> Mixture:
        if len(self.weights) != len(self.components):
            raise ValueError(f"weights has {len(self.weights)} entries but components has {len(self.components)}")
        if not self.components:
            raise ValueError("needs at least one component")
        if any(w < 0 for w in self.weights) or abs(sum(self.weights) - 1.0) > 1e-6:
            raise ValueError(f"weights must be >= 0 and sum to 1, got {list(self.weights)}")
        return self

    def sample_into(self, rng: np.random.Generator, out: FloatArray, buffers: Buffers) -> FloatArray:
        draws = [lambda m, c=c: c.sample(rng, m) for c in self.components]
        return mix_samples(rng, out.shape[0], self.weights, draws, out=out)


class Shifted(_Dist):
    """``base`` plus a constant ``shift_ms`` (e.g. a fixed network floor under a jittery service)."""

    kind: Literal["shifted"] = "shifted"
    shift_ms: LatencyMs
    base: Distribution

    def sample_into(self, rng: np.random.Generator, out: FloatArray, buffers: Buffers) -> FloatArray:
        x = self.base.sample_into(rng, out, buffers)
        x += self.shift_ms
        return x


def mix_samples(
    rng: np.random.Generator,
    n: int,
    weights: tuple[float, ...] | list[float],
    draws: list,  # type: ignore[type-arg]
    out: FloatArray | None = None,
) -> FloatArray:
    """Sample a mixture: pick a branch per turn, then draw each branch only for its own turns.

    :param weights: branch probabilities (sum to 1).
    :param draws: one callable per branch, ``draw(m) -> float64[m]``.
    :param out: ``float64[n]`` to write the samples into; default a new array.
    :returns: ``float64[n]`` (``out`` when given).
    """
    branch = rng.choice(len(weights), size=n, p=np.asarray(weights, dtype=np.float64))
    out = np.empty(n, dtype=np.float64) if out is None else out
    for i, draw in enumerate(draws):
        mask = branch == i
        m = int(mask.sum())
        if m:
            out[mask] = draw(m)
    return out


CHUNK = 1 << 16
"""Turns per call when integers are drawn in pieces (:func:`resample_into`): numpy's ``integers`` has no
``out``, and drawing in pieces gives the same integers as one call (PCG64 keeps its spare 32 bits in its
state), so a stage needs a 512 KB index array, not an ``int64[n]`` one."""


def resample_into(values: FloatArray, rng: np.random.Generator, out: FloatArray) -> FloatArray:
    """``values[rng.integers(0, values.size, n)]`` written into ``out`` (``float64[n]``), the same draws,
    in pieces of :data:`CHUNK` turns."""
    for start in range(0, out.shape[0], CHUNK):
        piece = out[start : start + CHUNK]
        np.take(values, rng.integers(0, values.size, piece.shape[0]), out=piece)
    return out


Distribution = Annotated[
    Union[Fixed, Uniform, Normal, LogNormal, Empirical, Mixture, Shifted],  # noqa: UP007
    Field(discriminator="kind"),
]
"""Any latency distribution, chosen by its ``kind`` field."""

Mixture.model_rebuild()
Shifted.model_rebuild()
