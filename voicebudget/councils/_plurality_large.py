"""Plurality of a large council over ``K >= 5`` answers: the spread answers' maximum, approximated.

:func:`~voicebudget.councils._plurality.win_given_right` needs ``V[r]``, the probability that the
right answer, with ``r`` of ``n`` votes, wins the plurality (ties at random). Given ``r``, the
``n - r`` wrong members pick the top wrong answer with probability ``c`` (``W ~ Binom(n - r, c)``,
summed exactly here) and spread the other ``s = n - r - W`` votes uniformly over ``m = K - 2``
answers. What is approximated is ``H(r, s) = E[1{every spread answer <= r} / (base + T)]``, ``T``
the number of spread answers tied at ``r``, ``base`` 1 (2 when ``W = r``).

**Levin's representation** (B. Levin, "A representation for multinomial cumulative distribution
functions", Annals of Statistics 9(5), 1981, pp. 1123-1126): for a multinomial ``(s; 1/m, ...)``
and independent ``Y_j ~ Poisson(s/m)``,
``P(X in A) = P(Y in A, sum Y = s) / P(Poisson(s) = s)``. With ``A_j`` either ``Y_j <= r - 1`` or
``Y_j = r`` (``t`` of the ``m`` answers tied at ``r``):

``H = sum_t C(m, t) P(Y = r)**t P(Y <= r-1)**(m-t) / (base + t) * P(S_{m-t} = s - t r) / P(Poisson(s) = s)``

where ``S_j`` is a sum of ``j`` independent ``Poisson(s/m)`` truncated to ``<= r - 1``. Levin computes
``P(S_j = x)`` with an Edgeworth expansion; so does this module, to the fourth cumulant (local,
lattice form: ``phi(z) / sd * (1 + g1 He3 / 6 + g2 He4 / 24 + g1**2 He6 / 72)``, floored at 0), with
the truncated Poisson's moments from its factorial moments ``E[(Y)_q 1{Y <= r-1}] = lam**q
P(Y <= r-1-q)``. Exact parts: the top wrong answer (binomial), a strict majority (``2 r > n``: wins),
no spread votes (``s = 0``).

**Error** against the exact counting of :mod:`._plurality` (``tests/test_council_plurality_large.py``):
``V[r]`` within 3e-3 at every ``r``, so a council's accuracy ``sum_r P(R = r) V[r]`` is within 3e-3
whatever its members; on a grid of ``K`` 5 to 100, ``c`` from ``1/(K-1)`` to 0.9, equal members at
``p`` 0.05 to 0.8 and ``rho`` 0 to 0.5, at 150 to 400 members, within 2.5e-4 (largest at ``K = 5``
with uniform wrong answers, falling as ``K`` grows). Only the sum of ``m - t`` truncated counts is
approximated, so few spread answers (``K <= 4``) would be the weak case: those stay exact.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

__all__ = ["win_given_right_large"]

FloatArray = NDArray[np.float64]
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_WINDOW_SD = 12.0
"""Top-wrong-answer counts further than this many standard deviations from the mean are skipped
(binomial mass below 1e-30)."""


def win_given_right_large(n: int, m: int, c: float) -> FloatArray:
    """``V[r]``, ``float64[n+1]``: probability the right answer wins the plurality with ``r`` of ``n``
    votes, ``m >= 3`` spread wrong answers and wrong concentration ``0 < c < 1`` (approximate, see the
    module docstring).

    :raises ValueError: ``m < 3`` or ``c`` outside (0, 1) (those cases are exact elsewhere).
    """
    if m < 3 or not 0.0 < c < 1.0:
        raise ValueError(f"the large-council approximation needs m >= 3 and 0 < c < 1, got m={m}, c={c}")
    v = np.zeros(n + 1)
    log_fact = np.array([math.lgamma(j + 1) for j in range(n + 1)])
    for r in range(1, n + 1):
        rest = n - r
        if 2 * r > n:  # more votes than all wrong members together
            v[r] = 1.0
            continue
        mean, sd = rest * c, math.sqrt(rest * c * (1.0 - c))
        lo, hi = max(0, math.floor(mean - _WINDOW_SD * sd)), min(r, math.ceil(mean + _WINDOW_SD * sd))
        if lo > hi:
            continue
        w = np.arange(lo, hi + 1)
        s = rest - w
        binom = np.exp(log_fact[rest] - log_fact[w] - log_fact[s] + w * math.log(c) + s * math.log1p(-c))
        base = 1.0 + (w == r)
        v[r] = float(binom @ _spread_wins(r, s, base, m, log_fact))
    return v


def _spread_wins(r: int, s: NDArray[np.int64], base: FloatArray, m: int, log_fact: FloatArray) -> FloatArray:
    """``H(r, s)`` for each entry of ``s`` (spread votes), ``float64[len(s)]``."""
    lam = s / m
    cdf, at_r = _poisson_cdf_tail(lam, r, log_fact)  # cdf[:, q] = P(Y <= r-1-q), q = 0..4
    below = cdf[:, 0]
    safe = np.where(below > 0, below, 1.0)
    f = [lam**q * cdf[:, q] / safe for q in range(1, 5)]  # factorial moments given Y <= r-1
    m1 = f[0]
    m2 = f[1] + f[0]
    m3 = f[2] + 3 * f[1] + f[0]
    m4 = f[3] + 6 * f[2] + 7 * f[1] + f[0]
    k2 = np.maximum(m2 - m1**2, 0.0)
    k3 = m3 - 3 * m2 * m1 + 2 * m1**3
    k4 = m4 - 4 * m3 * m1 - 3 * m2**2 + 12 * m2 * m1**2 - 6 * m1**4
    with np.errstate(divide="ignore"):
        log_below, log_at = np.log(below), np.log(at_r)
    h = np.zeros(s.shape)
    for t in range(min(m, int(s.max()) // r) + 1):
        j = m - t
        log_choose = math.lgamma(m + 1) - math.lgamma(t + 1) - math.lgamma(j + 1)
        log_w = log_choose + (t * log_at if t else 0.0) + (j * log_below if j else 0.0)
        x = s - t * r
        dens = _edgeworth(x, j * m1, j * k2, j * k3, j * k4) if j else (x == 0).astype(np.float64)
        h += np.where(x >= 0, np.exp(log_w) * dens, 0.0) / (base + t)
    with np.errstate(divide="ignore"):
        log_norm = np.where(s > 0, s * np.log(np.maximum(s, 1)) - s - log_fact[s], 0.0)  # P(Poisson(s) = s)
    return np.asarray(np.where(s == 0, 1.0 / base, h * np.exp(-log_norm)), dtype=np.float64)


def _poisson_cdf_tail(lam: FloatArray, r: int, log_fact: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``(P(Y <= r-1-q) for q = 0..4: float64[len, 5], P(Y = r): float64[len])`` for ``Y ~ Poisson(lam)``."""
    k = np.arange(r + 1)
    log_lam = np.log(np.where(lam > 0, lam, 1.0))[:, None]
    log_pmf = np.where(lam[:, None] > 0, k * log_lam - lam[:, None] - log_fact[k], np.where(k == 0, 0.0, -np.inf))
    pmf = np.exp(log_pmf)
    cum = np.cumsum(pmf, axis=1)
    cols = [cum[:, r - 1 - q] if r - 1 - q >= 0 else np.zeros(lam.shape) for q in range(5)]
    return np.stack(cols, axis=1), pmf[:, r]


def _edgeworth(x: NDArray[np.int64], mu: FloatArray, k2: FloatArray, k3: FloatArray, k4: FloatArray) -> FloatArray:
    """Local Edgeworth approximation of ``P(S = x)`` for an integer sum with cumulants ``mu, k2..k4``."""
    degenerate = k2 <= 0
    sd = np.sqrt(np.where(degenerate, 1.0, k2))
    z = (x - mu) / sd
    z2 = z * z
    g1, g2 = k3 / sd**3, k4 / (sd**2) ** 2
    he3 = z * (z2 - 3.0)
    he4 = z2 * (z2 - 6.0) + 3.0
    he6 = z2 * (z2 * (z2 - 15.0) + 45.0) - 15.0
    corr = 1.0 + g1 * he3 / 6.0 + g2 * he4 / 24.0 + g1 * g1 * he6 / 72.0
    dens = np.maximum(np.exp(-0.5 * z2) / (_SQRT_2PI * sd) * corr, 0.0)
    return np.asarray(np.where(degenerate, (np.abs(x - mu) < 0.5).astype(np.float64), dens), dtype=np.float64)
