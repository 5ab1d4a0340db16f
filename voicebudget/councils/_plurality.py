"""Plurality over an answer space: councils whose answers are intents, slot values, numbers.

The binary model of :mod:`._quality` lets wrong answers always agree, so a vote of members right
less than half the time can only lose. With many possible answers wrong answers scatter, and the
right one wins whenever it is the *most common* answer. Here:

- ``answers`` is ``2`` (one wrong answer: the binary model exactly), an integer ``K`` (one right and
  ``K - 1`` wrong answers), or ``"open"`` (free-form: unboundedly many wrong answers).
- ``wrong_concentration`` ``c`` is the share of a wrong answer's probability on the item's single
  most common wrong answer; the rest ``1 - c`` spreads uniformly over the ``K - 2`` other wrong
  answers (``"open"``: over answers that never coincide). ``c = 1``: wrong answers all agree (the
  binary model for every ``K``); ``c = 1/(K-1)``: uniform over the wrong options; ``c = 0``
  (``"open"`` only): wrong answers never agree.
- ``unsolved`` ``u``: a share of items no member ever gets right (each member's accuracy on the
  other items is ``p_i / (1 - u)``).
- Item difficulty and correlated errors: the shared competence ``theta ~ Beta`` behind ``rho``
  (:func:`~voicebudget.councils._quality.competence_nodes`). An item whose ``theta`` lies below
  ``c / (1 + c)`` is *hard*: more votes make it lose; above, more votes make it win. A task with
  both (a wide ``theta`` spread, large ``rho``) gives accuracy curves that rise, then fall with
  ``N`` (Chen et al. 2024, arXiv 2403.02419, Theorem 1 and Figure 1).

Ties for first place are broken uniformly at random.

**Exact computation.** Given the number ``r`` of right answers among ``N``, the wrong members
choose the top wrong answer independently with probability ``c`` whatever their accuracy, so
``P(win) = sum_r P(R = r) V[r]``, with ``P(R = r)`` the count pmf of :mod:`._quality` (exact or
quadrature over ``theta``) and ``V[r] = sum_w Binom(N - r, c)(w) H(r, w)``. ``H`` enumerates the
spread answers: for ``"open"`` they are singletons; for ``K`` the ``s = N - r - w`` spread votes fall
uniformly in ``m = K - 2`` bins, and ``P(max <= r, T bins at r)`` is a ratio of exponential
generating-function coefficients (multinomial counting), computed by polynomial powers. The
polynomial's variable is scaled by ``a = s_max / e`` so that its coefficients (``~ 1/s!`` unscaled)
stay inside the float range: unscaled they underflowed past ~170 spread votes, which made councils of
200 members over 40 answers score ``V[14] = 0.057`` instead of ``0.991`` (``v0.x`` refused 201+).

**Large councils.** Yes/no (``K = 2`` or ``c = 1``), ``"open"`` answers and ``K <= 4`` stay exact at any
size up to :data:`MAX_MEMBERS` (their cost grows as ``N**2``). With ``K >= 5`` answers and ``c < 1``,
past :data:`EXACT_MEMBERS` members the spread answers are counted with Levin's representation and an
Edgeworth expansion (:mod:`._plurality_large`): within 2.5e-4 of the exact accuracy at 150 to 400
members over a grid of ``K``, ``c``, ``p`` and ``rho`` (``tests/test_council_plurality_large.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from voicebudget.councils._plurality_large import win_given_right_large
from voicebudget.councils._quality import (
    RHO_TINY,
    _beta_quadrature,
    _poisson_binomial,
    beta_params,
    competence_nodes,
    correct_count_pmf,
    majority_cap,
    weighted_vote_accuracy,
)

__all__ = [
    "EXACT_MEMBERS",
    "MAX_MEMBERS",
    "AnswerSpace",
    "check_answer_space",
    "plurality_accuracy",
    "plurality_cap",
    "plurality_from_nodes",
    "plurality_log_odds_weights",
    "plurality_method",
    "weighted_plurality_accuracy",
    "weighted_plurality_from_nodes",
    "win_given_right",
]

FloatArray = NDArray[np.float64]
AnswerSpace = int | Literal["open"]
EXACT_MEMBERS = 200
"""Largest council whose spread answers (``K >= 5``, ``c < 1``) are counted exactly; past it
:func:`win_given_right` uses the approximation of :mod:`._plurality_large`."""
MAX_MEMBERS = 1000
"""Largest council :func:`plurality_accuracy` scores (the exact tables grow as ``N**2`` to ``N**3``)."""
MAX_WEIGHTED_MEMBERS = 8
"""Largest council :func:`weighted_plurality_accuracy` enumerates (every assignment of answers)."""


def check_answer_space(answers: AnswerSpace, wrong_concentration: float, unsolved: float = 0.0) -> int | None:
    """Validate an answer space; return ``m``, the number of *spread* wrong answers (``K - 2``), or
    ``None`` for ``"open"``.

    :raises ValueError: ``answers`` not ``"open"`` nor an integer >= 2; ``wrong_concentration``
        outside ``[1/(K-1), 1]`` (``[0, 1]`` for ``"open"``; exactly 1 for ``K = 2``); ``unsolved``
        outside [0, 1).
    """
    if not 0.0 <= unsolved < 1.0:
        raise ValueError(f"unsolved must be in [0, 1), got {unsolved}")
    if answers == "open":
        if not 0.0 <= wrong_concentration <= 1.0:
            raise ValueError(f"wrong_concentration must be in [0, 1], got {wrong_concentration}")
        return None
    if isinstance(answers, bool) or not isinstance(answers, int) or answers < 2:
        raise ValueError(f"answers must be an integer >= 2 or 'open', got {answers!r}")
    if answers == 2:
        if wrong_concentration != 1.0:
            raise ValueError("answers = 2 has a single wrong answer: wrong_concentration must be 1")
        return 0
    lowest = 1.0 / (answers - 1)
    if not lowest - 1e-12 <= wrong_concentration <= 1.0:
        raise ValueError(
            f"wrong_concentration must be in [1/(K-1), 1] = [{lowest:.4g}, 1] for answers = {answers} "
            f"(1/(K-1): wrong answers uniform over the options; 1: they all agree), got {wrong_concentration}"
        )
    return answers - 2


def _solvable(p: Sequence[float] | FloatArray, unsolved: float) -> FloatArray:
    pa = np.asarray(p, dtype=np.float64)
    if pa.ndim != 1 or pa.size == 0:
        raise ValueError("accuracies must be a non-empty sequence, one per member")
    if np.any(~np.isfinite(pa)) or np.any(pa < 0) or np.any(pa > 1):
        raise ValueError(f"accuracies must be in [0, 1], got {pa.tolist()}")
    if unsolved and pa.max() > 1.0 - unsolved + 1e-12:
        raise ValueError(
            f"a member's accuracy {pa.max():g} exceeds 1 - unsolved = {1 - unsolved:g}: "
            "no member can be right on the unsolved items"
        )
    return np.asarray(np.clip(pa / (1.0 - unsolved), 0.0, 1.0), dtype=np.float64)


def plurality_accuracy(
    accuracies: Sequence[float] | FloatArray,
    *,
    rho: float = 0.0,
    answers: AnswerSpace = 2,
    wrong_concentration: float = 1.0,
    unsolved: float = 0.0,
) -> float:
    """Probability that the plurality answer of the members is right (ties broken at random).

    Three independent members at ``p = 0.4`` with open answers that never agree (``c = 0``): right
    if at least two are right (``3 * 0.4**2 * 0.6 + 0.4**3 = 0.352``), or one is right and wins the
    three-way tie of singletons with probability 1/3 (``3 * 0.4 * 0.6**2 / 3 = 0.144``): 0.496.

    :param accuracies: ``p_i``, each member's probability of answering right, in [0, 1]; for samples
        of one model, the *sampled* single-call accuracy (below the greedy one).
    :param rho: error correlation in [0, 1) (shared competence, as :func:`majority_accuracy`).
    :param answers: ``2``, an integer ``K >= 2``, or ``"open"``.
    :param wrong_concentration: ``c``, share of the wrong mass on the most common wrong answer:
        ``1`` all wrong answers agree (binary model), ``1/(K-1)`` uniform, ``0`` never agree
        (``"open"`` only).
    :param unsolved: share of items no member gets right, in [0, 1); each ``p_i <= 1 - unsolved``.
    :returns: accuracy in [0, 1]. With ``answers = 2`` (or ``c = 1``) and ``unsolved = 0`` it equals
        :func:`~voicebudget.councils.majority_accuracy`.
    :raises ValueError: invalid answer space, accuracies, ``rho`` or more than 1000 members.

    Exact up to 200 members for every answer space, and at any size for ``answers = 2``, ``"open"``,
    ``K <= 4`` or ``c = 1``; past 200 members with ``K >= 5`` and ``c < 1`` the spread answers are
    approximated (Levin's representation with an Edgeworth expansion), within 2.5e-4 of the exact
    value on the grid of ``tests/test_council_plurality_large.py`` (150 to 400 members).
    """
    m = check_answer_space(answers, wrong_concentration, unsolved)
    if not 0.0 <= rho < 1.0:
        raise ValueError(f"rho must be in [0, 1), got {rho}")
    p = _solvable(accuracies, unsolved)
    if p.size > MAX_MEMBERS:
        raise ValueError(f"plurality is computed for up to {MAX_MEMBERS} members, got {p.size}")
    pmf = correct_count_pmf(list(p), rho)
    return float(np.clip((1.0 - unsolved) * (pmf @ win_given_right(p.size, m, wrong_concentration)), 0.0, 1.0))


def plurality_method(n: int, answers: AnswerSpace, wrong_concentration: float) -> str:
    """``"exact"``, or ``"edgeworth"`` when :func:`plurality_accuracy` of ``n`` members approximates
    (``n > 200``, ``K >= 5`` answers, ``c < 1``: within 3e-3, 2.5e-4 on the tested grid)."""
    spread = answers != "open" and answers >= 5 and wrong_concentration < 1.0
    return "edgeworth" if spread and n > EXACT_MEMBERS else "exact"


def plurality_from_nodes(node_w: FloatArray, q: FloatArray, m: int | None, c: float) -> float:
    """Plurality accuracy on solvable items of members with per-node correctness ``q[J, N]``
    (independent given the node), averaged with ``node_w[J]``."""

    pmf = np.asarray(node_w @ _poisson_binomial(q), dtype=np.float64)
    return float(pmf @ win_given_right(q.shape[1], m, c))


def plurality_cap(p: float, rho: float, c: float, unsolved: float = 0.0) -> float:
    """Limit of plurality accuracy as equal members (accuracy ``p``) are added:
    ``(1 - u) P(theta > c / (1 + c))``, ``theta`` the competence on solvable items.

    The right answer's share ``theta`` beats the top wrong answer's ``c (1 - theta)`` (the spread
    ones are smaller still). ``c = 1``: :func:`majority_cap`.
    """
    ps = p / (1.0 - unsolved)
    threshold = c / (1.0 + c)
    if c == 1.0:
        return (1.0 - unsolved) * majority_cap(ps, rho)
    if rho < RHO_TINY or ps in (0.0, 1.0):
        inside = 1.0 if ps > threshold else (0.5 if ps == threshold else 0.0)
        return (1.0 - unsolved) * inside

    theta, w = _beta_quadrature(*beta_params(ps, rho), n=400)
    # the rule's nodes are not split at the threshold: 400 nodes keep the error below ~1e-4
    return float((1.0 - unsolved) * w[theta > threshold].sum())


@lru_cache(maxsize=64)
def _win_table(n: int, m: int | None, c: float) -> FloatArray:
    if m is not None and m >= 3 and c < 1.0 and n > EXACT_MEMBERS:
        v = win_given_right_large(n, m, c)
    else:
        v = _exact_win_table(n, m, c)
    v.setflags(write=False)
    return v


def _exact_win_table(n: int, m: int | None, c: float) -> FloatArray:
    v = np.zeros(n + 1)
    log_fact = np.array([math.lgamma(j + 1) for j in range(n + 1)])
    for r in range(1, n + 1):
        rest = n - r
        w = np.arange(min(r, rest) + 1)
        binom = np.exp(log_fact[rest] - log_fact[w] - log_fact[rest - w] + _xlogy(w, c) + _xlogy(rest - w, 1.0 - c))
        spread = _spread_table(r, rest, m)  # [s, base-1]: E[1{max<=r} / (base + T)]
        v[r] = float(binom @ spread[rest - w, (w == r).astype(np.int64)])
    return v


def win_given_right(n: int, m: int | None, c: float) -> FloatArray:
    """``V[r]``, ``float64[n+1]``: probability the right answer wins the plurality when ``r`` of the
    ``n`` members are right (ties at random).

    :param m: spread wrong answers (``K - 2``), ``0`` for yes/no, ``None`` for open answers.
    :param c: wrong concentration.
    """
    return _win_table(n, m, float(c))


def _xlogy(k: NDArray[np.int64] | int, x: float) -> FloatArray:
    """``k * log(x)`` with ``0 * log(0) = 0``."""
    ka = np.asarray(k, dtype=np.float64)
    if x > 0:
        return np.asarray(ka * math.log(x), dtype=np.float64)
    return np.where(ka > 0, -np.inf, 0.0)


def _spread_table(r: int, smax: int, m: int | None) -> FloatArray:
    """``E[1{max <= r} / (base + T)]`` for ``s = 0..smax`` spread votes and ``base`` 1 or 2, where
    ``T`` counts spread answers with exactly ``r`` votes; ``float64[smax+1, 2]``."""
    out = np.zeros((smax + 1, 2))
    s = np.arange(smax + 1)
    if m == 0:  # yes/no: no spread answers (c = 1, so s = 0 has all the mass)
        out[0] = [1.0, 0.5]
        return out
    if m is None:  # open: every spread vote is its own answer with one vote
        if r >= 2:
            out[:, 0], out[:, 1] = 1.0, 0.5
        else:
            out[:, 0], out[:, 1] = 1.0 / (1.0 + s), 1.0 / (2.0 + s)
        return out
    probs = _max_and_ties(r, smax, m)  # [t, s]
    t = np.arange(probs.shape[0])[:, None]
    out[:, 0] = (probs / (1.0 + t)).sum(axis=0)
    out[:, 1] = (probs / (2.0 + t)).sum(axis=0)
    return out


def _poly_mul(a: FloatArray, b: FloatArray, degree: int) -> FloatArray:
    return np.asarray(np.convolve(a, b)[: degree + 1], dtype=np.float64)


def _poly_pow(a: FloatArray, k: int, degree: int) -> FloatArray:
    result = np.zeros(degree + 1)
    result[0] = 1.0
    base = a.copy()
    while k:
        if k & 1:
            result = _poly_mul(result, base, degree)
        k >>= 1
        if k:
            base = _poly_mul(base, base, degree)
    return result


def _max_and_ties(r: int, smax: int, m: int) -> FloatArray:
    """``P(max bin <= r and exactly t bins hold r)`` for ``s`` balls thrown uniformly into ``m``
    bins, ``float64[T+1, smax+1]`` (``t`` rows, ``s`` columns).

    Multinomial counting: ``P = C(m, t) s! / (m**(t r) r!**t) [x**(s - t r)] e(x/m)**(m - t)``
    with ``e(x) = sum_{k<r} x**k / k!``. The variable is scaled, ``x -> a x`` with ``a = smax / e``,
    so the coefficient of degree ``d`` (about ``a**d / d!``, at most ``e**a``) neither underflows past
    ``d ~ 170`` nor overflows below ``smax ~ 1900``; the scale is divided out in logs.
    """
    tmax = min(m, smax // r)
    a = max(1.0, smax / math.e)
    k = np.arange(r)
    e = np.exp(-np.array([math.lgamma(j + 1) for j in k]) + k * math.log(a / m))
    out = np.zeros((tmax + 1, smax + 1))
    poly = _poly_pow(e, m - tmax, smax)
    log_fact = np.array([math.lgamma(j + 1) for j in range(smax + 1)])
    s = np.arange(smax + 1)
    for t in range(tmax, -1, -1):
        log_choose = math.lgamma(m + 1) - math.lgamma(t + 1) - math.lgamma(m - t + 1)
        log_coef = log_choose - t * (r * math.log(m) + math.lgamma(r + 1))
        d = s[t * r :] - t * r
        f = poly[d]
        with np.errstate(divide="ignore"):
            out[t, t * r :] = np.exp(log_coef + log_fact[t * r :] - d * math.log(a) + np.log(np.maximum(f, 0.0)))
        if t:
            poly = _poly_mul(poly, e, smax)
    return out


# ---------------------------------------------------------------- weighted plurality


def plurality_log_odds_weights(p: Sequence[float] | FloatArray, answers: AnswerSpace, c: float) -> FloatArray:
    """Vote weights ``max(0, log((K - 1) p / (1 - p)))`` for a ``K``-answer space.

    For ``"open"`` answers ``K - 1`` becomes ``1 / c`` (the top wrong answer has probability
    ``c (1 - p)``; ``c`` floored at 1e-6). A member no better than chance gets weight 0, never a
    negative one: in a many-answer space a vote against an answer is not a vote for another.
    ``p`` is clipped to [1e-6, 1 - 1e-6].
    """
    pa = np.clip(np.asarray(p, dtype=np.float64), 1e-6, 1 - 1e-6)
    others = 1.0 / max(c, 1e-6) if answers == "open" else float(answers) - 1.0
    return np.asarray(np.maximum(0.0, np.log(others * pa / (1 - pa))), dtype=np.float64)


@lru_cache(maxsize=16)
def _assignments(n: int, m: int | None, c_is_one: bool, c_is_zero: bool) -> tuple[NDArray[np.int64], FloatArray]:
    """Every way ``n`` members can answer, up to renaming the spread wrong answers.

    :returns: ``(label int[O, n], log_g float64[O])``: label 0 right, 1 the top wrong answer, 2.. a
        spread wrong answer (numbered by first appearance); ``log_g`` the log-probability of the
        spread answers' pattern given who is spread (``m`` bins chosen uniformly; open: all new).
    """
    rows: list[tuple[tuple[int, ...], float, int]] = [((), 0.0, 0)]
    for _ in range(n):
        nxt = []
        for labels, log_g, used in rows:
            if not c_is_zero:
                nxt.append(((*labels, 1), log_g, used))
            nxt.append(((*labels, 0), log_g, used))
            if c_is_one or m == 0:
                continue
            if m is None:
                nxt.append(((*labels, 2 + used), log_g, used + 1))
                continue
            for j in range(used):
                nxt.append(((*labels, 2 + j), log_g - math.log(m), used))
            if used < m:
                nxt.append(((*labels, 2 + used), log_g + math.log((m - used) / m), used + 1))
        rows = nxt
    out = np.array([r[0] for r in rows], dtype=np.int64).reshape(len(rows), n)
    return out, np.array([r[1] for r in rows], dtype=np.float64)


def weighted_plurality_from_nodes(
    node_w: FloatArray, q: FloatArray, weights: FloatArray, m: int | None, c: float
) -> float:
    """Weighted plurality accuracy on solvable items, members independent given the node
    (``q[J, N]``, ``node_w[J]``); exact over every assignment of answers (ties at random)."""
    n = q.shape[1]
    labels, log_g = _assignments(n, m, c >= 1.0, c <= 0.0)
    n_labels = int(labels.max()) + 1
    onehot = labels[:, :, None] == np.arange(n_labels)[None, None, :]  # [O, n, L]
    score = np.einsum("onl,n->ol", onehot, weights)
    voted = onehot.any(axis=1)
    score = np.where(voted, score, -np.inf)
    best = score.max(axis=1, keepdims=True)
    at_top = voted & (score >= best - 1e-12)
    win = np.where(at_top[:, 0], 1.0 / at_top.sum(axis=1), 0.0)
    tiny = 1e-300
    log_q = np.log(np.maximum(q, tiny))
    log_top = np.log(np.maximum((1 - q) * c, tiny))
    log_spread = np.log(np.maximum((1 - q) * (1 - c), tiny))
    is_right, is_top = labels == 0, labels == 1
    is_spread = labels >= 2
    acc = 0.0
    for start in range(0, labels.shape[0], 4096):
        sl = slice(start, start + 4096)
        logp = (
            is_right[sl].astype(np.float64) @ log_q.T
            + is_top[sl].astype(np.float64) @ log_top.T
            + is_spread[sl].astype(np.float64) @ log_spread.T
            + log_g[sl, None]
        )
        acc += float(win[sl] @ np.exp(logp) @ node_w)
    return acc


def weighted_plurality_accuracy(
    accuracies: Sequence[float] | FloatArray,
    *,
    rho: float = 0.0,
    answers: AnswerSpace = 2,
    wrong_concentration: float = 1.0,
    unsolved: float = 0.0,
    weights: Sequence[float] | None = None,
) -> float:
    """Probability that a weighted plurality is right (ties at random).

    :param weights: vote weights; default :func:`plurality_log_odds_weights` (floored at 0). With
        ``answers = 2`` the default is today's unfloored ``log(p / (1 - p))``
        (:func:`~voicebudget.councils.weighted_vote_accuracy`), so the binary case is unchanged.
    :raises ValueError: as :func:`plurality_accuracy`, or more than 8 members (the enumeration covers
        every assignment of answers).
    """

    m = check_answer_space(answers, wrong_concentration, unsolved)
    p = _solvable(accuracies, unsolved)
    if answers == 2 or wrong_concentration == 1.0:
        return (1.0 - unsolved) * weighted_vote_accuracy(list(p), rho, weights)
    if p.size > MAX_WEIGHTED_MEMBERS:
        raise ValueError(f"weighted plurality is exact up to {MAX_WEIGHTED_MEMBERS} members, got {p.size}")
    w = plurality_log_odds_weights(p, answers, wrong_concentration) if weights is None else np.asarray(weights, float)
    node_w, q = competence_nodes(p, rho)
    return (1.0 - unsolved) * weighted_plurality_from_nodes(node_w, q, w, m, wrong_concentration)
