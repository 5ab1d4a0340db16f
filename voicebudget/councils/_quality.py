"""Council quality: how often the combined answer is right, from per-member correctness ``p_i``.

The answer model is the Condorcet jury setting: each member's answer is right or wrong, and wrong
answers agree with each other (the pessimistic case: wrong members can outvote right ones; with many
answer classes, wrong answers scatter and plurality does better than this).

**Correlated errors.** Members fail together on hard turns. A turn has a shared *competence*
``theta ~ Beta(a, b)`` with ``a = pbar (1 - rho) / rho``, ``b = (1 - pbar)(1 - rho) / rho``
(``pbar`` the members' mean ``p``); given ``theta``, members answer independently, member ``i``
correctly with probability ``theta ** gamma_i``, where ``gamma_i`` solves
``E[theta ** gamma_i] = B(a + gamma_i, b) / B(a, b) = p_i``. With equal ``p`` every ``gamma`` is 1
and the number of right answers is exactly beta-binomial, whose pairwise error correlation is
``rho = 1 / (a + b + 1)`` (Ladha 1992, "The Condorcet jury theorem, free speech, and correlated
votes", Am. J. Pol. Sci. 36(3); Kaniovski & Zaigraev 2011, Theory and Decision 71). Majority accuracy
then tends to ``P(theta > 1/2)`` as members are added: it is capped, however many vote.

Exact where a closed form exists: independent members (``rho = 0``) by the Poisson-binomial
recursion; equal ``p`` by the beta-binomial pmf (``math.lgamma``). Otherwise by Gauss-Legendre
quadrature over ``theta`` (split at 1/2, the density's endpoint singularities removed by a change
of variable), rescaled so each member's marginal is exactly ``p_i``; the remaining error is about
1e-6 at worst (members far apart, e.g. 0.875 and 0.125) and below 1e-9 for similar members.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "RHO_TINY",
    "beta_params",
    "cascade_accuracy",
    "competence_nodes",
    "conditional_accuracy",
    "correct_count_pmf",
    "log_odds_weights",
    "majority_accuracy",
    "majority_cap",
    "router_accuracy",
    "routing_probabilities",
    "solve_gammas",
    "vote_accuracy",
    "weighted_vote_accuracy",
]

FloatArray = NDArray[np.float64]
_NODES = 96
_EPS = 1e-12
_CONCENTRATED = 20.0
RHO_TINY = 1e-9
"""Below this error correlation members are taken as independent (the small-``rho`` limit; the
accuracy moves by O(rho))"""


def beta_params(pbar: float, rho: float) -> tuple[float, float]:
    """Beta parameters of the shared competence: mean ``pbar``, pairwise error correlation ``rho``.

    :param pbar: mean member correctness in (0, 1).
    :param rho: error correlation in (0, 1).
    :returns: ``(a, b)`` with ``a / (a + b) = pbar`` and ``1 / (a + b + 1) = rho``.
    """
    s = (1.0 - rho) / rho
    return pbar * s, (1.0 - pbar) * s


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


@lru_cache(maxsize=4)
def _legendre(n: int) -> tuple[FloatArray, FloatArray]:
    """Gauss-Legendre nodes and weights on [-1, 1] (an eigenvalue problem: computed once per ``n``)."""
    x, w = np.polynomial.legendre.leggauss(n)
    x.setflags(write=False)
    w.setflags(write=False)
    return x, w


def _beta_quadrature(a: float, b: float, n: int = _NODES) -> tuple[FloatArray, FloatArray]:
    """Nodes and weights for ``E[h(theta)]``, ``theta ~ Beta(a, b)``; weights sum to 1.

    Gauss-Legendre on each half of [0, 1]; ``theta = s**(1/c)`` with ``c = a / ceil(a)`` near 0 (and
    the mirror image near 1) turns the density's endpoint factor into the integer power
    ``s**(ceil(a) - 1)``, so the integrand is smooth and the rule converges fast. A concentrated
    density (both parameters above ``_CONCENTRATED``, i.e. small ``rho``) goes to
    :func:`_window_quadrature` instead: a rule spread over [0, 1] would put only a few nodes under
    its peak, and ``B(a, b)`` underflows.
    """
    if min(a, b) > _CONCENTRATED:
        return _window_quadrature(a, b, n)
    x, w = _legendre(n)
    ca, cb = a / math.ceil(a), b / math.ceil(b)
    lo_end, hi_end = 0.5**ca, 0.5**cb
    s = (x + 1.0) * lo_end / 2.0
    t = (x + 1.0) * hi_end / 2.0
    theta_lo = s ** (1.0 / ca)
    theta_hi = 1.0 - t ** (1.0 / cb)
    w_lo = w * lo_end / 2.0 / ca * s ** (math.ceil(a) - 1.0) * (1.0 - theta_lo) ** (b - 1.0)
    w_hi = w * hi_end / 2.0 / cb * t ** (math.ceil(b) - 1.0) * theta_hi ** (a - 1.0)
    nodes = np.concatenate([theta_lo, theta_hi])
    weights = np.concatenate([w_lo, w_hi]) / math.exp(_log_beta(a, b))
    return nodes, weights / weights.sum()


def _window_quadrature(a: float, b: float, n: int) -> tuple[FloatArray, FloatArray]:
    """Gauss-Legendre over mean +/- 14 standard deviations of ``Beta(a, b)`` (clipped to [0, 1] and
    split at 1/2 when the window holds it), density evaluated in log space.

    For ``a, b > 20`` the density is smooth, unimodal and nearly normal: the mass outside the window
    is far below double precision, and the log-space density cannot overflow however small ``rho``.
    """
    mean = a / (a + b)
    sd = math.sqrt(mean * (1.0 - mean) / (a + b + 1.0))
    lo, hi = max(0.0, mean - 14.0 * sd), min(1.0, mean + 14.0 * sd)
    edges = [lo, 0.5, hi] if lo < 0.5 < hi else [lo, hi]
    x, w = _legendre(n)
    nodes = np.concatenate([(x + 1.0) * (r - q) / 2.0 + q for q, r in itertools.pairwise(edges)])
    widths = np.concatenate([w * (r - q) / 2.0 for q, r in itertools.pairwise(edges)])
    log_pdf = (a - 1.0) * np.log(nodes) + (b - 1.0) * np.log1p(-nodes)
    weights = widths * np.exp(log_pdf - log_pdf.max())
    return nodes, weights / weights.sum()


def _gammaln(x: FloatArray) -> FloatArray:
    """``log |Gamma(x)|`` elementwise: scipy's ``gammaln`` when installed (the ``tune`` and ``test`` extras),
    else :func:`math.lgamma` per value (same values to ~1e-15)."""
    try:
        from scipy.special import gammaln  # lazy: ~0.1 s to import, and scipy is optional
    except ImportError:  # pragma: no cover - depends on the extras installed
        return np.asarray([math.lgamma(v) for v in np.ravel(x)], dtype=np.float64).reshape(np.shape(x))
    return np.asarray(gammaln(x), dtype=np.float64)


def solve_gammas(p: Sequence[float] | FloatArray, a: float, b: float) -> FloatArray:
    """Per-member exponents ``gamma_i`` with ``E[theta**gamma_i] = p_i`` for ``theta ~ Beta(a, b)`` (0 for
    ``p_i = 1``, inf for 0): bisection on a log scale, every member at once (``log E[theta**g] = lgamma(a +
    g) + lgamma(a + b) - lgamma(a) - lgamma(a + b + g)``, decreasing in ``g``). Cached per member set (a
    tuner simulates the answers of the same set in every batch policy): the array returned is read-only."""
    return _solve_gammas(tuple(np.asarray(p, dtype=np.float64).tolist()), float(a), float(b))


@lru_cache(maxsize=1024)
def _solve_gammas(p: tuple[float, ...], a: float, b: float) -> FloatArray:
    pa = np.asarray(p, dtype=np.float64)
    out = np.where(pa >= 1 - _EPS, 0.0, np.inf)
    solve = (pa > _EPS) & (pa < 1 - _EPS)
    out.setflags(write=False)
    if not solve.any():
        return out
    out = out.copy()
    target = np.log(pa[solve])
    const = math.lgamma(a + b) - math.lgamma(a)

    def log_moment(g: FloatArray) -> FloatArray:
        up, down = _gammaln(np.stack([a + g, a + b + g]))
        return np.asarray(up - down + const, dtype=np.float64)

    lo, hi = np.zeros(target.size), np.ones(target.size)
    grow = log_moment(hi) > target
    while grow.any():  # double until the root is bracketed
        hi = np.where(grow, hi * 2.0, hi)
        grow &= hi <= 1e15  # a heavy tail near theta = 1 and a tiny p: the rescaled marginal takes over
        grow &= log_moment(hi) > target
    huge, bound = hi > 1e15, hi.copy()
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        above = log_moment(mid) > target
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    out[solve] = np.where(huge, bound, 0.5 * (lo + hi))
    out.setflags(write=False)
    return out


def competence_nodes(p: Sequence[float] | FloatArray, rho: float) -> tuple[FloatArray, FloatArray]:
    """Conditional correctness of every member at quadrature nodes of the shared competence.

    Given a node, members are independent; averaging any per-node quantity with the weights gives
    its value under correlated errors. Cached per member set and ``rho`` (a tuner meets the same set in
    every batch policy and topology): the arrays returned are read-only.

    :param p: per-member correctness, each in [0, 1].
    :param rho: error correlation in [0, 1).
    :returns: ``(weights float64[J], q float64[J, N])``; ``J = 1`` when ``rho == 0`` or the members
        are all certain.
    """
    return _competence_nodes(tuple(np.asarray(p, dtype=np.float64).tolist()), float(rho))


@lru_cache(maxsize=1024)
def _competence_nodes(p: tuple[float, ...], rho: float) -> tuple[FloatArray, FloatArray]:
    pa = np.asarray(p, dtype=np.float64)
    pbar = float(pa.mean())
    if rho < RHO_TINY or pbar <= _EPS or pbar >= 1 - _EPS:
        w, q = np.ones(1), pa[None, :].copy()
    else:
        a, b = beta_params(pbar, rho)
        theta, w = _beta_quadrature(a, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.nan_to_num(theta[:, None] ** solve_gammas(pa, a, b)[None, :], nan=0.0)
        # the rule integrates theta**gamma to ~1e-6 when gamma is far from 1; rescale so every member's
        # marginal is exactly p_i
        mean = w @ q
        scale = np.divide(pa, mean, out=np.ones_like(pa), where=mean > 0)
        q = np.clip(q * scale[None, :], 0.0, 1.0)
    w.setflags(write=False)
    q.setflags(write=False)
    return w, q


def _poisson_binomial(q: FloatArray) -> FloatArray:
    """pmf of the number of successes, ``float64[J, N+1]``, for independent ``q float64[J, N]``."""
    pmf = np.zeros((q.shape[0], q.shape[1] + 1))
    pmf[:, 0] = 1.0
    for i in range(q.shape[1]):
        qi = q[:, i : i + 1]
        pmf[:, 1 : i + 2] = pmf[:, 1 : i + 2] * (1 - qi) + pmf[:, : i + 1] * qi
        pmf[:, 0] *= 1 - q[:, i]
    return pmf


def _beta_binomial(n: int, a: float, b: float) -> FloatArray:
    k = np.arange(n + 1, dtype=np.float64)
    log_choose = math.lgamma(n + 1) - _gammaln(k + 1) - _gammaln(n - k + 1)
    log_b = _gammaln(k + a) + _gammaln(n - k + b) - math.lgamma(n + a + b) - _log_beta(a, b)
    return np.asarray(np.exp(log_choose + log_b), dtype=np.float64)


def correct_count_pmf(p: Sequence[float], rho: float) -> FloatArray:
    """Distribution of the number of members that answer correctly.

    :param p: per-member correctness in [0, 1].
    :param rho: error correlation in [0, 1).
    :returns: ``float64[N+1]``, entry ``k`` is ``P(exactly k right)``. Exact for ``rho == 0``
        (Poisson binomial) and for equal ``p`` (beta-binomial); quadrature otherwise.
    """
    pa = np.asarray(p, dtype=np.float64)
    # the closed form's lgamma terms lose digits past a + b ~ 1e6 (rho < 1e-6): quadrature there
    if 1e-6 <= rho and np.ptp(pa) < _EPS and _EPS < pa[0] < 1 - _EPS:
        return _beta_binomial(pa.size, *beta_params(float(pa[0]), rho))
    w, q = competence_nodes(pa, rho)
    return np.asarray(w @ _poisson_binomial(q), dtype=np.float64)


def _majority_from_pmf(pmf: FloatArray) -> float:
    n = pmf.size - 1
    k = np.arange(n + 1)
    return float(pmf[2 * k > n].sum() + 0.5 * pmf[2 * k == n].sum())


def majority_accuracy(p: Sequence[float], rho: float = 0.0) -> float:
    """Probability that a simple majority of the members is right (a tie is a coin flip).

    Three independent members at ``p = 0.7``: ``0.7**3 + 3 * 0.7**2 * 0.3 = 0.784``.

    :param p: per-member correctness in [0, 1].
    :param rho: error correlation in [0, 1).
    """
    return _majority_from_pmf(correct_count_pmf(p, rho))


def majority_cap(p: float, rho: float) -> float:
    """Limit of majority accuracy as equal members (correctness ``p``) are added: ``P(theta > 1/2)``.

    :returns: 1.0 (or 0.0) for ``rho == 0`` and ``p`` above (below) 1/2; the incomplete-beta tail
        otherwise, by quadrature.
    """
    return _majority_cap(float(p), float(rho))


@lru_cache(maxsize=1024)
def _majority_cap(p: float, rho: float) -> float:
    """:func:`majority_cap`, memoised (1,024 values): the tuner reports it for every ``majority`` council, a
    quadrature over 192 nodes each time, for a few mean ``p`` values."""
    if rho < RHO_TINY or p in (0.0, 1.0):
        return 1.0 if p > 0.5 else (0.5 if p == 0.5 else 0.0)
    theta, w = _beta_quadrature(*beta_params(p, rho))
    # the split quadrature puts its first half of the nodes below 1/2
    return float(w[theta > 0.5].sum())


def log_odds_weights(p: Sequence[float] | FloatArray) -> FloatArray:
    """Optimal vote weights for independent members, ``log(p / (1 - p))`` (Nitzan & Paroush 1982,
    Int. Econ. Rev. 23(2) 289); ``p`` is clipped to [1e-6, 1 - 1e-6]."""
    pa = np.clip(np.asarray(p, dtype=np.float64), 1e-6, 1 - 1e-6)
    return np.asarray(np.log(pa / (1 - pa)), dtype=np.float64)


def weighted_vote_accuracy(p: Sequence[float], rho: float = 0.0, weights: Sequence[float] | None = None) -> float:
    """Probability that a weighted vote is right (ties are a coin flip), exact over all ``2**N``
    right/wrong outcomes.

    :param weights: vote weights; default :func:`log_odds_weights`.
    :raises ValueError: more than 16 members (the enumeration is ``2**N``).
    """
    n = len(p)
    if n > 16:
        raise ValueError(f"weighted vote is enumerated exactly over 2**N outcomes; at most 16 members, got {n}")
    w_vote = log_odds_weights(p) if weights is None else np.asarray(weights, dtype=np.float64)
    node_w, q = competence_nodes(p, rho)
    return _weighted(node_w, q, w_vote)


def _weighted(node_w: FloatArray, q: FloatArray, w_vote: FloatArray) -> float:
    n = q.shape[1]
    bits = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1).astype(np.float64)
    margin = bits @ w_vote - (1 - bits) @ w_vote
    score = np.where(margin > 1e-12, 1.0, np.where(margin < -1e-12, 0.0, 0.5))
    # q of exactly 0 or 1 (a member certain, or theta**gamma underflowing at a node) would give
    # 0 * log(0) = NaN in the products; 1e-300 stands for 0 (its powers vanish just the same)
    logp = bits @ np.log(np.maximum(q, 1e-300)).T + (1 - bits) @ np.log(np.maximum(1.0 - q, 1e-300)).T
    return float(score @ np.exp(logp) @ node_w)


def vote_accuracy(p: Sequence[float], rho: float, rule: str, gain: Sequence[float] | None = None) -> float:
    """Accuracy of a combination rule over the given members: ``majority``, ``weighted``, or ``gain``
    (``gain[k - 1]`` is the accuracy of a free-form aggregation that reads ``k`` answers)."""
    if rule == "majority":
        return majority_accuracy(p, rho)
    if rule == "weighted":
        return weighted_vote_accuracy(p, rho)
    if gain is None or len(gain) < len(p):
        raise ValueError(f"rule 'gain' needs a gain curve with at least {len(p)} entries")
    return float(gain[len(p) - 1])


def router_accuracy(p: Sequence[float], p_off: Sequence[float], share: Sequence[float], accuracy: float) -> float:
    """Accuracy of a router that sends each turn to one member.

    A turn belongs to member ``j`` with probability ``share[j]``; the router sends it there with
    probability ``accuracy``, else to one of the others uniformly. Member ``i`` is right with
    probability ``p[i]`` on its own turns and ``p_off[i]`` on turns meant for another member.
    """
    n = len(p)
    total = 0.0
    for j in range(n):
        others = [p_off[i] for i in range(n) if i != j]
        miss = float(np.mean(others)) if others else 0.0
        total += share[j] * (accuracy * p[j] + (1 - accuracy) * miss)
    return total


def routing_probabilities(share: Sequence[float], accuracy: float) -> FloatArray:
    """``P(router picks member i) = share_i * acc + sum_{j != i} share_j (1 - acc) / (N - 1)``."""
    s = np.asarray(share, dtype=np.float64)
    n = s.size
    if n == 1:
        return np.ones(1)
    return np.asarray(s * accuracy + (s.sum() - s) * (1 - accuracy) / (n - 1), dtype=np.float64)


def cascade_accuracy(
    p: Sequence[float], rho: float, accept_if_correct: float, accept_if_wrong: float
) -> tuple[float, FloatArray]:
    """Accuracy of a cascade and where it stops.

    Member 1 answers; a scorer accepts a right answer with probability ``accept_if_correct`` and a
    wrong one with ``accept_if_wrong``; a rejected answer escalates to the next member; the last
    member's answer is always kept.

    :returns: ``(accuracy, stop float64[N])``, ``stop[i]`` = probability the cascade ends at member ``i``.
    """
    node_w, q = competence_nodes(p, rho)
    n = q.shape[1]
    reach = np.ones(q.shape[0])
    acc = np.zeros(q.shape[0])
    stop = np.zeros((q.shape[0], n))
    for i in range(n):
        qi = q[:, i]
        if i == n - 1:
            acc += reach * qi
            stop[:, i] = reach
            break
        accept = qi * accept_if_correct + (1 - qi) * accept_if_wrong
        acc += reach * qi * accept_if_correct
        stop[:, i] = reach * accept
        reach = reach * (1 - accept)
    return float(acc @ node_w), np.asarray(node_w @ stop, dtype=np.float64)


def conditional_accuracy(node_w: FloatArray, q: FloatArray, rule: str) -> float:
    """Accuracy of ``majority`` or ``weighted`` over members with per-node correctness ``q[J, N]``
    (members independent given the node), averaged with ``node_w[J]``."""
    if rule == "majority":
        pmf = node_w @ _poisson_binomial(q)
        return _majority_from_pmf(np.asarray(pmf, dtype=np.float64))
    return _weighted(node_w, q, log_odds_weights(q.T @ node_w))
