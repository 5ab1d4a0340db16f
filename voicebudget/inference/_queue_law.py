"""The TTFT law of the open-loop scheduler model (:mod:`voicebudget.inference._queue`) and its quantiles.

The wait ``W`` for a prefill slot is M/G/1 with the exact Cramer-Lundberg tail (``prefill_wait``,
``PrefillWait``); TTFT is a mixture, over the decoding population's states, of the prompt's own step, the rest of
the running step (uniform) and ``W`` (``TTFTLaw``): its CDF and density are closed-form, and its quantiles are
found all at once by Newton's steps kept inside brackets.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from voicebudget._algebra import FloatArray

__all__ = ["PrefillWait", "TTFTLaw", "prefill_wait"]

_LOOK = np.linspace(0.0, 1.0, 17)
"""Where :meth:`TTFTLaw.quantiles` first looks across a bracket (shares of its width)."""


def _gamma(lam: float, s: FloatArray, w: FloatArray) -> float:
    """Positive root of ``lam (E[exp(gamma s)] - 1) = gamma`` for service times ``s`` with weights ``w``
    (needs ``lam E[s] < 1``), 1/ms: the exact tail decay rate of the M/G/1 waiting time."""

    # f(x) = lam (E e^{x s} - 1) - x is convex, f(0) = 0, f'(0) = lam E[s] - 1 < 0: one positive root.
    def f(x: float) -> float:
        return lam * float(np.dot(w, np.expm1(np.minimum(x * s, 700.0)))) - x

    hi = 1.0 / float(np.max(s))
    while f(hi) <= 0:
        hi *= 2.0
    lo = 0.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if f(mid) > 0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class PrefillWait:
    """The wait ``W`` for a prefill slot, M/G/1: ``P(W > t) = min(rho, c exp(-gamma t))``."""

    rho: float
    gamma: float
    c: float

    @functools.cached_property
    def t_star(self) -> float:
        """Where the exponential tail drops below ``rho``, ms."""
        return max(math.log(self.c / self.rho) / self.gamma, 0.0) if self.rho > 0.0 and self.c > self.rho else 0.0

    def mean(self) -> float:
        """``E[W]``, ms."""
        if self.rho <= 0.0:
            return 0.0
        return self.rho * self.t_star + self.c / self.gamma * math.exp(-self.gamma * self.t_star)

    def integral_and_cdf(self, z: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``H(z) = int_0^z P(W <= t) dt`` (0 for ``z <= 0``), ms, and ``P(W <= max(z, 0))``, arrays shaped as ``z``.

        For ``t >= 0``, ``P(W <= t) = 1 - c exp(-gamma max(t, t*))``: below ``t*`` the tail's ``min(rho, .)`` is
        ``rho = c exp(-gamma t*)``."""
        zp = np.maximum(z, 0.0)
        if self.rho <= 0.0:
            return zp, np.ones_like(zp)
        ts = self.t_star
        tail = self.c * np.exp(-self.gamma * np.maximum(zp, ts))
        h: FloatArray = zp - self.rho * np.minimum(zp, ts) - (self.c * math.exp(-self.gamma * ts) - tail) / self.gamma
        return h, 1.0 - tail


@dataclass(frozen=True)
class TTFTLaw:
    """TTFT over the decode population's states ``i``: the mixture of ``own_i + U + W`` with ``U`` uniform on a step
    carrying prompt tokens or a decode-only step (``spans``, float64[2, N] ms, with ``weights`` float64[2, N]) when
    the arrival lands in one, ``U = 0`` when it finds the server idle (weights ``idle``, float64[N]); the weights sum
    to 1."""

    own: FloatArray
    spans: FloatArray
    weights: FloatArray
    idle: FloatArray
    wait: PrefillWait

    def cdf_pdf(self, x: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``P(TTFT <= x)`` and its density at ``x`` (float64[k] ms; 1/ms): float64[k] each.

        Through a span, ``P(U + W <= y) = (H(y) - H(y - span)) / span`` with ``H = int_0 F_W`` (closed form), and its
        density ``(F_W(y) - F_W(y - span)) / span`` (``F_W`` taken as 0 below 0); with no span, ``F_W(y)`` and
        ``W``'s density (its atom at 0 is a jump)."""
        wait, spans, k = self.wait, self.spans, len(x)
        # y and the two y - span side by side, float64[k, 3, N]: H and F_W of all three in one pass
        at = np.empty((k, 3, len(self.own)))
        y = np.subtract(x[:, None], self.own, out=at[:, 0])  # float64[k, N]
        np.subtract(y[:, None, :], spans, out=at[:, 1:])
        h_at, f_at = wait.integral_and_cdf(at)
        f = f_at[:, 0]
        through = (h_at[:, :1] - h_at[:, 1:]) / spans
        f_positive = np.where(at > 0.0, f_at, 0.0)
        density = (f_positive[:, :1] - f_positive[:, 1:]) / spans
        at_once = np.where(y >= 0.0, f, 0.0)
        density_at_once = np.where(y > wait.t_star, wait.gamma * (1.0 - f), 0.0)
        # sums row by row (not a matrix product: its rounding would depend on how many x are asked at once)
        flat = self.weights.ravel()
        cdf: FloatArray = np.sum(through.reshape(k, -1) * flat, axis=1) + np.sum(at_once * self.idle, axis=1)
        pdf: FloatArray = np.sum(density.reshape(k, -1) * flat, axis=1) + np.sum(density_at_once * self.idle, axis=1)
        return cdf, pdf

    def _past_atoms(
        self, qs: FloatArray, lo: FloatArray, hi: FloatArray, x: FloatArray, tol: FloatArray
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Brackets ``(lo, hi]`` and first guesses ``x`` narrowed at TTFT's atom (an idle server and no wait: the
        prompt's own step, ``own`` of the states with ``idle`` weight). A quantile on the atom's jump (most turns at
        light load) is the atom: the bracket becomes ``(atom - tol / 2, atom]``, where Newton's steps have nothing to
        follow and a bisection would take ~45 halvings; otherwise the bracket ends at the atom, on its side."""
        atoms = self.own[self.idle > 0.0]
        if not atoms.size:
            return lo, hi, x
        inside = (atoms > lo[:, None]) & (atoms <= hi[:, None])
        atom = np.min(np.where(inside, atoms, np.inf), axis=1)
        has = np.isfinite(atom)
        if not has.any():
            return lo, hi, x
        atom = np.where(has, atom, hi)
        at, below = np.split(self.cdf_pdf(np.concatenate([atom, atom - 0.5 * tol]))[0], 2)
        on_jump = has & (at >= qs) & (below < qs)
        lo = np.where(on_jump | (has & (at < qs)), np.where(on_jump, atom - 0.5 * tol, atom), lo)
        hi = np.where(has & (at >= qs), np.where(on_jump, atom, atom - 0.5 * tol), hi)
        return lo, hi, np.where(has, np.where(on_jump, hi, 0.5 * (lo + hi)), x)

    def quantiles(self, qs: FloatArray, start_ms: float) -> FloatArray:
        """The smallest ``x`` with ``P(TTFT <= x) >= q`` for each of ``qs`` (float64[k]), ms, within
        ``2**-50`` of the bracket ``[0, start_ms]`` (doubled until it holds ``q``), every quantile at once.

        Newton's steps on the closed-form density, kept inside each quantile's bracket, with a bisection
        whenever a step would leave it or not shrink fast enough (Numerical Recipes' ``rtsafe``); a quantile is
        found when its bracket is that narrow, or when the top holds ``q`` and the density puts the root less than
        the tolerance below it (a step of less than half the tolerance is stretched to it, so the bracket closes).
        The answer is the bracket's top, as the bisection this replaces returned: the same quantile to within its
        tolerance or the rounding of the CDF (a sum of ~100-300 terms: ``eps / density`` is 1e-13 to 1e-11 ms at
        p99), in ~10 evaluations instead of ~150."""
        lo, hi = np.zeros_like(qs), np.full_like(qs, start_ms)
        while True:
            short = self.cdf_pdf(hi)[0] < qs
            if not short.any():
                break
            lo, hi = np.where(short, hi, lo), np.where(short, 2.0 * hi, hi)
        tol = (hi - lo) * 2.0**-50
        # a first look at 16 points across each bracket, in one evaluation: the first point holding q and the one
        # before it are the bracket, and the chord between them the first guess
        across = lo[:, None] + (hi - lo)[:, None] * _LOOK
        seen = self.cdf_pdf(across.ravel())[0].reshape(across.shape)
        first = np.argmax(seen >= qs[:, None], axis=1)  # >= 1: the bracket's bottom is below q, its top holds it
        rows = np.arange(len(qs))
        lo, hi = across[rows, first - 1], across[rows, first]
        at_lo, at_hi = seen[rows, first - 1], seen[rows, first]
        x = lo + (hi - lo) * np.clip((qs - at_lo) / np.maximum(at_hi - at_lo, 1e-300), 0.0, 1.0)
        lo, hi, x = self._past_atoms(qs, lo, hi, x, tol)
        x = np.where((x > lo) & (x < hi), x, 0.5 * (lo + hi))
        step, last = hi - lo, hi - lo  # the last two steps' lengths
        for _ in range(300):  # ~10 needed; a bisection alone closes the bracket in ~100
            cdf, pdf = self.cdf_pdf(x)
            reached = cdf >= qs
            lo, hi = np.where(reached, lo, x), np.where(reached, x, hi)
            with np.errstate(divide="ignore", invalid="ignore"):
                newton = (cdf - qs) / pdf
            if np.all((hi - lo <= tol) | (reached & (newton <= tol))):
                break
            newton = np.where(np.abs(newton) < 0.5 * tol, np.where(reached, 0.5 * tol, -0.5 * tol), newton)
            to = x - newton
            use = (to > lo) & (to < hi) & (np.abs(newton) <= 0.5 * last)
            last, step = step, np.where(use, np.abs(newton), 0.5 * (hi - lo))
            x = np.where(use, to, 0.5 * (lo + hi))
        return hi


def prefill_wait(lam: float, s: FloatArray, w: FloatArray) -> PrefillWait:
    """M/G/1 wait for service times ``s`` (ms) with probabilities ``w``: ``P(W > 0) = rho`` and the exact
    Cramer-Lundberg tail ``c exp(-gamma t)``, ``c = (1 - rho) / (lam E[s e^(gamma s)] - 1)`` (Asmussen,
    *Applied Probability and Queues*, 2003, XIII.5)."""
    rho = lam * float(np.dot(w, s))
    if rho <= 1e-12:  # no wait at any quantile; the tail's root would sit beyond exp's range (rho ~ e^-700
        return PrefillWait(0.0, 1.0, 0.0)  # made _gamma double its bracket forever: --request-rate 1e-300 hung)
    gamma = _gamma(lam, s, w)
    c = (1.0 - rho) / max(lam * float(np.dot(w, s * np.exp(np.minimum(gamma * s, 700.0)))) - 1.0, 1e-12)
    return PrefillWait(rho, gamma, c)
