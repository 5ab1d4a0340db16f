"""Calibrate a council's answer space from a team's own logs: ``rho``, ``wrong_concentration`` and
``unsolved`` estimated from repeated answers per item.

The input is a CSV with one row per answer: ``item`` (the turn or test case), ``member`` (the model
or sample that answered), ``answer`` (the label it gave, compared as text) and ``correct`` (1/0,
true/false, yes/no). Several members (or several samples of one model) must answer the same items.

Estimators (docs/councils.md, "Calibrating from your logs"):

- ``p`` per member: its share of correct rows.
- ``wrong_concentration`` ``c``, from how often two *wrong* answers to the same item agree. Under the
  model two wrong answers agree with probability ``c**2 + (1 - c)**2 / (K - 2)`` (open answers:
  ``c**2``), so the observed agreement rate over all pairs of wrong answers within items is solved
  for ``c`` (the root in ``[1/(K-1), 1]``). Pairs count every item with two or more wrong answers.
- ``unsolved`` and ``rho``: maximum likelihood of the number right per item, ``r_j`` of ``n_j``,
  under a zero-inflated beta-binomial: with probability ``u`` an item is unsolved (``r = 0``), else
  ``r ~ BetaBinomial(n, a, b)`` with mean ``pbar / (1 - u)`` and pairwise correlation ``rho``
  (``pbar`` the pooled share of correct rows; members are pooled for these two). Grid search in
  steps of 0.01, refined to 0.001.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from voicebudget._errors import ScenarioError
from voicebudget._io import MAX_DATA_BYTES, csv_rows, read_text
from voicebudget.councils._plurality import AnswerSpace, check_answer_space

__all__ = ["AnswerSpaceFit", "fit_answer_space"]

COLUMNS = ("item", "member", "answer", "correct")
_TRUE = frozenset({"1", "true", "yes", "y", "t"})
_FALSE = frozenset({"0", "false", "no", "n", "f"})
FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class AnswerSpaceFit:
    """What :func:`fit_answer_space` estimated.

    :ivar answers: the answer space used (given, or the number of distinct answers seen).
    :ivar rho: error correlation between members, [0, 1).
    :ivar wrong_concentration: share of wrong answers on the most common wrong answer.
    :ivar unsolved: share of items no member gets right.
    :ivar members: member -> share of its answers that are right (its ``p``).
    :ivar items: items read; ``rows``: answers read; ``wrong_pairs``: pairs of wrong answers to one
        item (the evidence behind ``wrong_concentration``); ``agreement``: their agreement rate.
    """

    answers: AnswerSpace
    rho: float
    wrong_concentration: float
    unsolved: float
    members: dict[str, float]
    items: int
    rows: int
    wrong_pairs: int
    agreement: float
    notes: tuple[str, ...] = field(default=())

    def council_fields(self) -> dict[str, Any]:
        """The council-file fields to paste: ``answers``, ``rho``, ``wrong_concentration``, ``unsolved``."""
        return {
            "answers": self.answers,
            "rho": round(self.rho, 4),
            "wrong_concentration": round(self.wrong_concentration, 4),
            "unsolved": round(self.unsolved, 4),
        }

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``voicebudget council-fit --format json``."""
        return {
            **self.council_fields(),
            "members": self.members,
            "items": self.items,
            "rows": self.rows,
            "wrong_pairs": self.wrong_pairs,
            "agreement": self.agreement,
            "notes": list(self.notes),
        }


def _read_rows(path: Path) -> list[tuple[str, str, str, bool]]:
    origin = str(path)
    reader = csv_rows(read_text(path, max_bytes=MAX_DATA_BYTES), origin=origin)
    header = _header(reader, origin)
    idx = [header.index(c) for c in COLUMNS]
    rows = []
    for line_no, row in reader:
        if any(cell.strip() for cell in row):
            rows.append(_row(row, len(header), idx, origin, line_no))
    if not rows:
        raise ScenarioError("no answers after the header row", origin=origin)
    return rows


def _header(reader: Iterator[tuple[int, list[str]]], origin: str) -> list[str]:
    """The header row's column names (lower case), which must include :data:`COLUMNS`."""
    try:
        header = [h.strip().lower() for h in next(reader)[1]]
    except StopIteration:
        raise ScenarioError("empty file; expected a header row: item,member,answer,correct", origin=origin) from None
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise ScenarioError(
            f"missing column(s) {missing} in the header row; expected: {', '.join(COLUMNS)}",
            origin=origin,
            field="line 1",
        )
    return header


def _row(row: list[str], width: int, idx: list[int], origin: str, line_no: int) -> tuple[str, str, str, bool]:
    """One answer: ``(item, member, answer, correct)``.

    :raises ScenarioError: fewer cells than the header, a bad ``correct``, an empty item or member.
    """
    if len(row) < width:
        raise ScenarioError(f"{len(row)} columns, the header has {width}", origin=origin, field=f"line {line_no}")
    item, member, answer, flag = (row[i].strip() for i in idx)
    value = flag.lower()
    if value not in _TRUE | _FALSE:
        raise ScenarioError("correct must be 1/0, true/false or yes/no", origin=origin, field=f"line {line_no}")
    if not item or not member:
        raise ScenarioError("item and member must not be empty", origin=origin, field=f"line {line_no}")
    return item, member, answer, value in _TRUE


def _concentration(agreement: float, spread: int | None) -> float:
    """Solve ``c**2 + (1 - c)**2 / m = agreement`` for ``c`` in ``[1/(m+1), 1]`` (open: ``c**2``)."""
    if spread == 0:
        return 1.0
    if spread is None:
        return min(1.0, math.sqrt(max(agreement, 0.0)))
    m = float(spread)
    lowest = 1.0 / (m + 1.0)
    floor = lowest**2 + (1 - lowest) ** 2 / m  # agreement of uniformly spread wrong answers
    if agreement <= floor:
        return lowest
    qa, qb, qc = 1.0 + 1.0 / m, -2.0 / m, 1.0 / m - agreement
    return min(1.0, (-qb + math.sqrt(qb * qb - 4 * qa * qc)) / (2 * qa))


def _rising_log(x: float, nmax: int) -> FloatArray:
    """``L[k] = sum_{i<k} log(x + i)`` for ``k = 0..nmax`` (log of the rising factorial)."""
    out = np.zeros(nmax + 1)
    out[1:] = np.cumsum(np.log(x + np.arange(nmax)))
    return out


def _log_likelihood(
    n: NDArray[np.int64],
    r: NDArray[np.int64],
    weight: FloatArray,
    log_choose: FloatArray,
    pbar: float,
    rho: float,
    u: float,
) -> float:
    ps = pbar / (1.0 - u)
    nmax = int(n.max())
    if rho <= 0.0:
        log_bb = log_choose + r * math.log(ps) + (n - r) * math.log1p(-ps)
    else:
        s = (1.0 - rho) / rho
        a, b = ps * s, (1.0 - ps) * s
        log_bb = log_choose + _rising_log(a, nmax)[r] + _rising_log(b, nmax)[n - r] - _rising_log(a + b, nmax)[n]
    like = (1.0 - u) * np.exp(log_bb) + np.where(r == 0, u, 0.0)
    return float(weight @ np.log(np.maximum(like, 1e-300)))


def _zero_inflated_fit(counts: dict[tuple[int, int], int], pbar: float) -> tuple[float, float]:
    """Maximum-likelihood ``(rho, unsolved)`` for per-item ``(n, r)`` counts: a grid in steps of 0.01,
    then steps of 0.001 around its best point."""
    keys = np.array(list(counts), dtype=np.int64)
    n, r = keys[:, 0], keys[:, 1]
    weight = np.array(list(counts.values()), dtype=np.float64)
    log_choose = np.array([math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(a - b + 1) for a, b in keys])
    u_max = min(0.95, 1.0 - pbar - 1e-3)

    def best_on(rhos: FloatArray, us: FloatArray) -> tuple[float, float, float]:
        best = (-math.inf, 0.0, 0.0)
        for u in us[(us >= 0.0) & (us <= u_max)]:
            for rho in rhos[(rhos >= 0.0) & (rhos < 0.995)]:
                ll = _log_likelihood(n, r, weight, log_choose, pbar, float(rho), float(u))
                if ll > best[0]:
                    best = (ll, float(rho), float(u))
        return best

    _, rho0, u0 = best_on(np.round(np.arange(0.0, 0.99, 0.01), 3), np.round(np.arange(0.0, 0.951, 0.01), 3))
    fine = np.round(np.arange(-0.01, 0.0105, 0.001), 3)
    _, rho, u = best_on(np.round(rho0 + fine, 3), np.round(u0 + fine, 3))
    return round(rho, 3), round(u, 3)


def fit_answer_space(path: str | Path, *, answers: AnswerSpace | None = None) -> AnswerSpaceFit:
    """Estimate ``rho``, ``wrong_concentration`` and ``unsolved`` from repeated answers per item.

    :param path: CSV with columns ``item``, ``member``, ``answer``, ``correct`` (any order, any others
        ignored), one row per answer.
    :param answers: the answer space (``K`` or ``"open"``); default: the number of distinct answers in
        the file (at least 2).
    :returns: an :class:`AnswerSpaceFit`; :meth:`~AnswerSpaceFit.council_fields` are the council-file
        fields.
    :raises ScenarioError: unreadable file, missing columns, a bad ``correct`` value (naming the line),
        no item answered twice, or an invalid ``answers`` (including a ``K`` smaller than the distinct
        answers one item received).
    """
    path = Path(path)
    rows = _read_rows(path)
    by_item: dict[str, list[tuple[str, bool]]] = defaultdict(list)
    by_member: dict[str, list[bool]] = defaultdict(list)
    for item, member, answer, right in rows:
        by_item[item].append((answer, right))
        by_member[member].append(right)
    if answers is None:
        answers = max(2, len({answer for _, _, answer, _ in rows}))
    spread = _spread(answers, by_item, str(path))
    repeated = {k: v for k, v in by_item.items() if len(v) >= 2}
    if not repeated:
        raise ScenarioError(
            "no item has two or more answers: rho and wrong_concentration need repeated "
            "answers per item (several members or samples)",
            origin=str(path),
        )
    pairs, agree, counts = _wrong_pairs(repeated)
    agreement, c = _agreement(pairs, agree, spread)
    pbar = sum(ok for *_, ok in rows) / len(rows)
    rho, unsolved = _zero_inflated_fit(counts, pbar) if 0.0 < pbar < 1.0 else (0.0, 0.0)
    notes = _fit_notes(len(repeated), pairs)
    members = {m: sum(v) / len(v) for m, v in sorted(by_member.items())}
    return AnswerSpaceFit(answers, rho, c, unsolved, members, len(by_item), len(rows), pairs, agreement, tuple(notes))


def _spread(answers: AnswerSpace, by_item: dict[str, list[tuple[str, bool]]], origin: str) -> int | None:
    """The answer space's wrong answers (``check_answer_space``); a ``K`` must hold every item's answers.

    :raises ScenarioError: an invalid answer space, or an item with more distinct answers than ``K``.
    """
    try:
        spread = check_answer_space(answers, 1.0 if answers == 2 else 0.0 if answers == "open" else 1.0)
    except ValueError as exc:
        raise ScenarioError(str(exc), origin=origin, field="answers") from None
    if isinstance(answers, int):
        item, seen = max(((k, {a for a, _ in v}) for k, v in by_item.items()), key=lambda kv: len(kv[1]))
        if len(seen) > answers:
            raise ScenarioError(
                f"item {item!r} has {len(seen)} distinct answers, more than the answer space "
                f"of {answers}; give a larger K or 'open'",
                origin=origin,
                field="answers",
            )
    return spread


def _wrong_pairs(
    repeated: dict[str, list[tuple[str, bool]]],
) -> tuple[int, int, dict[tuple[int, int], int]]:
    """Over the items answered twice or more: the pairs of wrong answers, how many of them agree, and the
    items by ``(answers, right answers)``."""
    pairs = agree = 0
    counts: dict[tuple[int, int], int] = defaultdict(int)
    for answers_j in repeated.values():
        wrong = [a for a, ok in answers_j if not ok]
        tally: dict[str, int] = defaultdict(int)
        for a in wrong:
            tally[a] += 1
        pairs += len(wrong) * (len(wrong) - 1) // 2
        agree += sum(k * (k - 1) // 2 for k in tally.values())
        counts[(len(answers_j), sum(ok for _, ok in answers_j))] += 1
    return pairs, agree, counts


def _agreement(pairs: int, agree: int, spread: int | None) -> tuple[float, float]:
    """The share of wrong-answer pairs that agree, and the wrong answers' concentration it gives (1, 1
    without any pair)."""
    if not pairs:
        return 1.0, 1.0
    agreement = agree / pairs
    return agreement, _concentration(agreement, spread)


def _fit_notes(n_repeated: int, pairs: int) -> list[str]:
    notes = []
    if n_repeated < 30:
        notes.append(f"only {n_repeated} items answered twice or more: the estimates are rough")
    if not pairs:
        notes.append("no item has two wrong answers: wrong_concentration cannot be estimated (set to 1)")
    return notes
