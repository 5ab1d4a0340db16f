"""Council latency per turn, with the critical path kept for tail attribution.

Members draw from :func:`voicebudget.stage_rng` ``(seed, member name)``, the same streams the
latency algebra gives a leaf of that name, so a council's ``all`` latency equals
``evaluate(AllOf(stages=members), n, seed).total`` sample for sample and two council
configurations that share a member share its samples (common random numbers for the tuner).

Per turn, with member latencies ``M[i]``, each topology in its module of
:mod:`voicebudget.councils._topologies` (``council.topology_model``):

===========  ===============================================================================
topology     latency (critical path)
===========  ===============================================================================
all          ``max_i M[i]`` (the slowest member) + aggregator
first_k      k-th order statistic (the k-th member to finish) + aggregator
vote         time the ``m``-th agreeing answer arrives (that member); all members if no side
             reaches ``m`` (the slowest) + aggregator
router       router + the member it picks (a mixture with the routing probabilities)
cascade      member 1 [+ scorer + member 2 [+ ...]] up to where the scorer accepts
===========  ===============================================================================

The aggregator's prefill grows with the output tokens of the members it read in that turn.
Right/wrong answers per turn (needed by ``vote``, whose stopping time depends on them) follow the
correlated competence model of :mod:`._quality`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from voicebudget._algebra import evaluate, is_group, stage_rng
from voicebudget.councils._quality import RHO_TINY, beta_params, solve_gammas

if TYPE_CHECKING:
    from voicebudget.councils._config import Council

__all__ = [
    "CouncilSamples",
    "answer_labels",
    "answers",
    "critical_members",
    "pick_members",
    "sample_council",
    "sample_stage",
]

FloatArray = NDArray[np.float64]


@dataclass
class CouncilSamples:
    """Per-turn samples of one council evaluation.

    :ivar total: ``float64[n]`` council latency, ms.
    :ivar parts: component (member name, ``router``, ``scorer``, ``aggregator``) -> ``float64[n]``
        its own latency, ms; NaN in turns where it did not run.
    :ivar critical: component -> ``float64[n]`` its contribution along the critical path; per turn
        they sum to ``total``.
    :ivar read: ``bool[N, n]`` members whose answers were in by the time the council answered.
    :ivar correct: ``float64[n]`` 1/0 (0.5 for a tie) whether the answer was right, for ``vote``;
        empty otherwise (other topologies have exact quality).
    """

    total: FloatArray
    parts: dict[str, FloatArray]
    critical: dict[str, FloatArray]
    read: NDArray[np.bool_]
    correct: FloatArray = field(default_factory=lambda: np.empty(0))
    stop_probabilities: FloatArray = field(default_factory=lambda: np.empty(0))

    def contributions(self, turns: NDArray[np.intp]) -> dict[str, FloatArray]:
        """Critical-path contribution of every component in the given turns (sum to the total)."""
        return {k: v[turns] for k, v in self.critical.items()}


def sample_council(council: Council, n: int, seed: int) -> CouncilSamples:
    """Draw ``n`` turns of a council.

    :param council: the configuration.
    :param n: turns, >= 1.
    :param seed: the run's seed; streams derive from it and component names.
    :returns: :class:`CouncilSamples`.
    """
    lat = np.stack([_memo_samples(_stage_key(mb.stage), mb.name, n, seed, mb.stage) for mb in council.members])
    return council.topology_model.latency(council, lat, seed)


def sample_stage(stage: Any, name: str, n: int, seed: int) -> FloatArray:
    """Samples of any stage called ``name``: a leaf draws from ``stage_rng(seed, name)`` (as in the
    algebra); a combinator is evaluated with a seed derived from ``(seed, name)``, so two members
    built from same-named parts do not share samples.

    The samples are a pure function of ``(stage spec, name, n, seed)``, so they are memoised
    (:func:`_memo_samples`, at most 256 entries of at most 32,768 turns): the tuner evaluates thousands of councils that
    share members, and each member is drawn once per process. Returns a fresh copy.
    """
    return _memo_samples(_stage_key(stage), name, n, seed, stage).copy()


_MEMO: dict[tuple[str, str, int, int], FloatArray] = {}
_MEMO_MAX = 256
_MEMO_MAX_TURNS = 32_768
"""Draws of more turns are not kept: the memo holds at most 256 x 256 KiB = 64 MiB, and a large run
(a council at 50,000,000 turns) does not leave 400 MB per member behind it."""


def _memo_samples(spec: str, name: str, n: int, seed: int, stage: Any) -> FloatArray:
    """The draws of ``stage`` (whose spec, :func:`_stage_key`, is ``spec``), memoised; the memo's own array:
    copy it before writing to it."""
    key = (spec, name, n, seed)
    hit = _MEMO.get(key)
    if hit is None:
        hit = _draw_stage(stage, name, n, seed)
        if n > _MEMO_MAX_TURNS:
            return hit
        if len(_MEMO) >= _MEMO_MAX:
            _MEMO.pop(next(iter(_MEMO)))  # drop the oldest entry
        _MEMO[key] = hit
    return hit


_KEYS: dict[int, tuple[Any, str]] = {}
"""Stage object id -> (the object, its spec): the object is held, so its id is not reused while it is here."""


def _stage_key(stage: Any) -> str:
    """A stage's spec, the memo's key: its JSON (``repr`` for a non-model). Memoised by identity (the last 256
    stages; stages are frozen): the tuner passes the same member stages to thousands of councils, and
    serialising one is ~30 us, a tenth of a council's simulation."""
    hit = _KEYS.get(id(stage))
    if hit is not None and hit[0] is stage:
        return hit[1]
    spec = stage.model_dump_json() if hasattr(stage, "model_dump_json") else repr(stage)
    if len(_KEYS) >= _MEMO_MAX:
        _KEYS.pop(next(iter(_KEYS)))
    _KEYS[id(stage)] = (stage, spec)
    return spec


def _draw_stage(stage: Any, name: str, n: int, seed: int) -> FloatArray:
    if not is_group(stage):
        return np.asarray(stage.sample(stage_rng(seed, name), n), dtype=np.float64)
    sub_seed = int(stage_rng(seed, name).integers(0, 2**63 - 1))
    return evaluate(stage, n, sub_seed, name=name).total


def pick_members(lat: FloatArray, which: NDArray[np.intp]) -> FloatArray:
    """Per turn, the latency of member ``which[turn]``: ``lat[which[t], t]`` (``lat: float64[N, n]``)."""
    return np.asarray(np.take_along_axis(lat, which[None, :], axis=0)[0], dtype=np.float64)


def critical_members(council: Council, lat: FloatArray, which: NDArray[np.intp]) -> dict[str, FloatArray]:
    """Each member's critical-path contribution when member ``which[turn]`` set the turn's latency."""
    crit = np.zeros_like(lat)
    turns = np.arange(lat.shape[1])
    crit[which, turns] = lat[which, turns]
    return {mb.name: crit[i] for i, mb in enumerate(council.members)}


def answers(council: Council, n: int, seed: int, p: FloatArray | None = None) -> NDArray[np.bool_]:
    """Right (True) / wrong answers per member and turn, ``bool[N, n]``, under correlated errors.

    The shared competence draws from stream ``competence``, member ``i``'s answer from
    ``"<name>/answer"``.

    :param p: members' correctness (default ``council.p``).
    """
    ps = tuple(np.asarray(council.p if p is None else p, dtype=np.float64).tolist())
    names = tuple(mb.name for mb in council.members)
    if n > _MEMO_MAX_TURNS:
        return _draw_answers(ps, council.rho, names, n, seed)
    return _memo_answers(ps, council.rho, names, n, seed).copy()


@lru_cache(maxsize=64)
def _memo_answers(p: tuple[float, ...], rho: float, names: tuple[str, ...], n: int, seed: int) -> NDArray[np.bool_]:
    """:func:`_draw_answers`, memoised (64 member sets of at most 32,768 turns: 10 MB at most): the answers
    do not depend on the members' latencies, so the tuner's ``vote`` councils of one member set share them
    in every batch policy and ``m``; read-only."""
    out = _draw_answers(p, rho, names, n, seed)
    out.setflags(write=False)
    return out


def _draw_answers(p: tuple[float, ...], rho: float, names: tuple[str, ...], n: int, seed: int) -> NDArray[np.bool_]:
    pa = np.asarray(p, dtype=np.float64)
    u = np.stack([stage_rng(seed, name + "/answer").random(n) for name in names])
    pbar = float(pa.mean())
    if rho < RHO_TINY or pbar <= 0 or pbar >= 1:
        return np.asarray(u < pa[:, None])
    a, b = beta_params(pbar, rho)
    theta = stage_rng(seed, "competence").beta(a, b, n)
    gammas = solve_gammas(pa, a, b)
    q = theta[None, :] ** gammas[:, None]
    return np.asarray(u < q)


def answer_labels(council: Council, n: int, seed: int) -> NDArray[np.int64]:
    """Answers per member and turn over the council's answer space, ``int64[N, n]``: 0 the right
    answer, 1 the turn's most common wrong answer, ``2 + j`` spread wrong answer ``j`` (``K``
    answers: ``j`` uniform in ``0..K-3``; open: ``j`` the member's index, never shared).

    Right/wrong as :func:`answers` on solvable turns (``p / (1 - unsolved)``); a turn is unsolved
    with probability ``unsolved`` (stream ``unsolved``), then every member is wrong. Wrong members
    pick the top wrong answer with probability ``wrong_concentration`` (stream ``"<name>/wrong"``).
    """
    from voicebudget.councils._plurality import check_answer_space

    assert council.answers is not None
    c, u = council.concentration, council.unsolved
    spread = check_answer_space(council.answers, c, u)
    right = answers(council, n, seed, np.asarray(council.p) / (1.0 - u))
    if u:
        right &= ~(stage_rng(seed, "unsolved").random(n) < u)[None, :]
    labels = np.zeros(right.shape, dtype=np.int64)
    for i, mb in enumerate(council.members):
        x = stage_rng(seed, mb.name + "/wrong").random(n)
        if spread is None:
            other = np.full(n, 2 + i)
        else:
            other = 2 + np.minimum(
                (np.maximum(x - c, 0.0) / max(1.0 - c, 1e-300) * spread).astype(np.int64), max(spread - 1, 0)
            )
        labels[i] = np.where(right[i], 0, np.where(x < c, 1, other))
    return labels
