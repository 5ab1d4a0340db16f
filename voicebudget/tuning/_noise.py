"""Monte Carlo standard errors of the tuner's objectives, and comparisons that treat noise as a tie.

A configuration's latency at p95, mean latency and (for ``vote`` and ``first_k``) accuracy are
estimated from simulated turns, so two configurations whose figures differ by less than their Monte
Carlo error are not ranked: the difference could flip with the seed.

- **Quantile**: the number of samples below the true ``q``-quantile is ``Binomial(n, q)``, so the
  order statistics at ranks ``n q -/+ sqrt(n q (1 - q))`` bracket it with ~68% confidence; half their
  distance is the standard error (the distribution-free interval for a quantile: H. A. David and
  H. N. Nagaraja, *Order Statistics*, 3rd ed., Wiley 2003, section 7.1). Found by selection
  (``np.partition``), O(n).
- **Mean**: ``std / sqrt(n)``.
- **Expected user time** ``X(e) * S`` with ``S = T_user + mean + other + T_agent``: the delta method,
  ``se^2 = (X se_mean)^2 + (S X'(e) se_e)^2`` (the covariance between a turn's latency and its
  correctness is ignored).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

__all__ = ["NOISE_Z", "SCREEN_Z", "mean_with_se", "quantile_with_se", "tie_tolerance"]

FloatArray = NDArray[np.float64]

NOISE_Z = 2.0
"""Two estimates tie when their ``+/- NOISE_Z`` standard-error intervals overlap (:func:`tie_tolerance`)."""
SCREEN_Z = 3.0
"""The wider band of the first pass (which configurations to re-evaluate at more turns): only a
configuration beaten by ``SCREEN_Z`` standard errors on every objective is left out."""


def quantile_with_se(samples_ms: FloatArray, percentile: float) -> tuple[float, float]:
    """The ``percentile`` of ``samples_ms`` (numpy's linear interpolation, as the reports use) and its
    Monte Carlo standard error from the binomial order-statistic interval.

    :param samples_ms: ``float64[n]``, ``n >= 1``.
    :param percentile: in [0, 100].
    :returns: ``(value_ms, standard_error_ms)``; the error is 0 for ``n < 2``.
    """
    x = np.asarray(samples_ms, dtype=np.float64)
    n = x.size
    q = percentile / 100.0
    pos = q * (n - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, n - 1)
    spread = math.sqrt(n * q * (1.0 - q))
    below = max(0, math.floor(pos - spread))
    above = min(n - 1, math.ceil(pos + spread))
    ranks = sorted({lo, hi, below, above})
    part = np.partition(x, ranks)
    value = float(part[lo] + (part[hi] - part[lo]) * (pos - lo))
    se = float(part[above] - part[below]) / 2.0 if n > 1 else 0.0
    return value, se


def mean_with_se(samples_ms: FloatArray) -> tuple[float, float]:
    """Mean and its standard error ``std / sqrt(n)`` (0 for ``n < 2``)."""
    x = np.asarray(samples_ms, dtype=np.float64)
    if x.size < 2:
        return float(np.mean(x)), 0.0
    return float(np.mean(x)), float(np.std(x, ddof=1) / math.sqrt(x.size))


def tie_tolerance(
    se_a: FloatArray, se_b: FloatArray, values_a: FloatArray, values_b: FloatArray, z: float = NOISE_Z
) -> FloatArray:
    """How far apart two estimates may be and still tie: their ``+/- z`` standard-error intervals
    overlap, ``z (se_a + se_b)``, plus 1e-9 relative for float noise. Broadcasts.

    For two estimates of one true value with equal errors the difference leaves this band with
    probability ``P(|N(0,1)| > z sqrt(2))``: 0.5% at ``z = 2`` (the band of ``z`` standard errors of
    the difference, ``z sqrt(se_a^2 + se_b^2)``, would split a true tie in 5% of seeds). Common random
    numbers correlate the two estimates positively, which only makes the band safer.

    :returns: ``float64`` of the broadcast shape; non-finite standard errors count as 0.
    """
    sa, sb = np.asarray(se_a, dtype=np.float64), np.asarray(se_b, dtype=np.float64)
    sa, sb = np.where(np.isfinite(sa), sa, 0.0), np.where(np.isfinite(sb), sb, 0.0)  # not nan_to_num: 10x the time
    scale = np.maximum(np.abs(values_a), np.abs(values_b))
    scale = np.where(np.isfinite(scale), scale, 0.0)
    return np.asarray(z * (sa + sb) + 1e-9 * scale, dtype=np.float64)
