"""A set of measured turns: the one versioned JSON schema ``voicebudget-turns`` (docs/ci.md).

``voicebudget check --format json``, the pytest plugin's session JSON and a recorder report's ``to_dict()``
all carry it under ``"measured"``; ``voicebudget baseline pin`` writes it as the baseline file; ``voicebudget
compare`` reads it on both sides. It keeps the turns themselves (so a comparison can be redone with other
resamples, another level or another tolerance), not only their percentiles::

    {
      "schema": "voicebudget-turns", "version": 1,
      "sets": [
        {
          "name": "tests/test_agent.py::test_answers", "source": "recorder",
          "anchor": "recorder: the speech_end mark", "total": "voice-to-voice: first_audio - speech_end",
          "budget": {"total_ms": 800.0, "percentile": 95.0, "stages": {"llm": 450.0}},
          "stages": ["asr", "llm", "tts", "untracked"],
          "turns": {
            "id": ["turn 0", "turn 1"], "call": ["call-a", "call-a"],
            "total_ms": [712.4, 698.0],
            "stages_ms": {"asr": [70.1, 68.2], "llm": [520.3, null], ...}
          }
        }
      ]
    }

The ``turns`` table is by column: every list has one entry per turn; a stage's ``null`` is a turn the stage did
not run in; ``call`` (the conversation each turn belongs to) is ``null`` for the whole table or a string per
turn. Values are ms rounded to 0.001 ms. Building a :class:`TurnSet` touches no disk.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pydantic import ValidationError

from voicebudget._budget import MAX_LATENCY_MS, Budget
from voicebudget._errors import ScenarioError

__all__ = ["SCHEMA", "SCHEMA_VERSION", "TurnSet", "turns_document", "turn_sets_from_document"]

SCHEMA = "voicebudget-turns"
"""The ``schema`` value of a measured-turns document."""
SCHEMA_VERSION = 1
"""The version this library writes and reads; a document of another version is refused, naming both."""

FloatArray = NDArray[np.float64]
_DECIMALS = 3


@dataclass(frozen=True)
class TurnSet:
    """One set of measured turns (one trace check, one recorder, one budgeted test).

    :ivar name: the set's name (a test's node id, the trace files, the recorder's name).
    :ivar source: ``"trace"`` or ``"recorder"``.
    :ivar anchor: what ``t = 0`` of a turn is in this source (two sets with different anchors do not compare).
    :ivar total: what a turn's total is (voice-to-voice, or server side).
    :ivar budget: the budget the turns were judged against.
    :ivar total_ms: ``float64[n_turns]`` each turn's total, ms.
    :ivar stages_ms: stage -> ``float64[n_turns]`` ms, NaN where the stage did not run; in report order.
    :ivar ids: each turn's id or name.
    :ivar calls: each turn's call (conversation) id, or None when the source does not say.
    """

    name: str
    source: str
    anchor: str
    total: str
    budget: Budget
    total_ms: FloatArray
    stages_ms: Mapping[str, FloatArray]
    ids: tuple[str, ...]
    calls: tuple[str, ...] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Other keys of the set as read (kept, not interpreted)."""

    @property
    def n_turns(self) -> int:
        return int(self.total_ms.size)

    def to_dict(self) -> dict[str, Any]:
        """The set's JSON object (one entry of ``sets``)."""
        return {
            "name": self.name,
            "source": self.source,
            "anchor": self.anchor,
            "total": self.total,
            "budget": self.budget.model_dump(exclude_defaults=False),
            "stages": list(self.stages_ms),
            "turns": {
                "id": list(self.ids),
                "call": list(self.calls) if self.calls is not None else None,
                "total_ms": _rounded(self.total_ms),
                "stages_ms": {k: _rounded(v) for k, v in self.stages_ms.items()},
            },
        }


def _rounded(values: FloatArray) -> list[float | None]:
    return [None if math.isnan(v) else round(v, _DECIMALS) for v in np.asarray(values, dtype=np.float64).tolist()]


def turns_document(sets: Sequence[TurnSet]) -> dict[str, Any]:
    """The ``voicebudget-turns`` document holding ``sets``."""
    return {"schema": SCHEMA, "version": SCHEMA_VERSION, "sets": [s.to_dict() for s in sets]}


def turn_sets_from_document(doc: Any, *, origin: str) -> list[TurnSet]:
    """Read the measured turns of a JSON document: a ``voicebudget-turns`` document (a baseline file), or any
    output that carries one under ``"measured"`` (``check --format json``, the pytest plugin's JSON, a recorder
    report's ``to_dict()``).

    :param origin: the file, for messages.
    :raises ScenarioError: no measured turns in the document, another schema version, an invalid field, or two sets
        of one name; the message names the file and the field path (``sets[0].turns.total_ms[3]``).
    """
    if isinstance(doc, Mapping) and doc.get("schema") != SCHEMA and "measured" in doc:
        return turn_sets_from_document(doc["measured"], origin=origin)
    if not isinstance(doc, Mapping) or doc.get("schema") != SCHEMA:
        raise ScenarioError(
            f'no measured turns: expected a {SCHEMA!r} document or an output carrying one under "measured" '
            "(the JSON output of voicebudget check, the pytest plugin's JSON file, a recorder report's "
            "to_dict(), a baseline written by voicebudget baseline pin)",
            origin=origin,
        )
    version = doc.get("version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        got = f"the text {_written(version)}" if isinstance(version, str) else _written(version)
        raise ScenarioError(
            f"schema version {got}; this voicebudget reads version {SCHEMA_VERSION} (a number)",
            origin=origin,
            field="version",
        )
    sets = doc.get("sets")
    if not isinstance(sets, list) or not sets:
        raise ScenarioError("must be a non-empty list of turn sets", origin=origin, field="sets")
    out = [_read_set(s, origin, f"sets[{i}]") for i, s in enumerate(sets)]
    first: dict[str, int] = {}
    for i, s in enumerate(out):  # sets pair by name: of two new sets of one name, the last silently won
        if s.name in first:
            raise ScenarioError(
                f"{s.name!r} is also the name of sets[{first[s.name]}]; sets pair by name, so each needs its own",
                origin=origin,
                field=f"sets[{i}].name",
            )
        first[s.name] = i
    return out


def _need(d: Mapping[str, Any], key: str, kind: type | tuple[type, ...], origin: str, where: str) -> Any:
    value = d.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        got = "missing" if key not in d else _kind_of(value)
        raise ScenarioError(f"must be {_NAMES.get(names, names)}, got {got}", origin=origin, field=f"{where}.{key}")
    return value


_NAMES = {"str": "text", "dict": "a table", "list": "a list", "Mapping": "a table"}


def _kind_of(value: Any) -> str:
    """What a JSON value is, in JSON's words: ``null``, ``true``/``false``, a number, a text, a list, a table
    (not Python's ``NoneType``, ``int``, ``dict``)."""
    if value is None or isinstance(value, bool):
        return _written(value)
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a text"
    if isinstance(value, list | tuple):
        return "a list"
    return "a table" if isinstance(value, Mapping) else f"a {type(value).__name__}"


def _written(value: Any) -> str:
    """A JSON value as the file writes it (``null``, ``true``, ``"x"``, ``12.5``), cut at 60 characters; a list or
    a table by its kind."""
    if value is None or isinstance(value, bool | int | float | str):
        return json.dumps(value)[:60]
    return _kind_of(value)


def _plainly(names: Sequence[str]) -> str:
    """Names as a plain comma-separated list (``asr, tts``), not a Python list's repr."""
    return ", ".join(names)


def _read_set(d: Any, origin: str, where: str) -> TurnSet:
    if not isinstance(d, Mapping):
        raise ScenarioError(f"must be a table, got {_kind_of(d)}", origin=origin, field=where)
    name = _need(d, "name", str, origin, where)
    source = _need(d, "source", str, origin, where)
    anchor = _need(d, "anchor", str, origin, where)
    total = _need(d, "total", str, origin, where)
    budget_raw = _need(d, "budget", Mapping, origin, where)
    try:
        budget = Budget.model_validate(budget_raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        path = ".".join(str(p) for p in err["loc"])
        raise ScenarioError(err["msg"], origin=origin, field=f"{where}.budget.{path}") from None
    turns = _need(d, "turns", Mapping, origin, where)
    tw = f"{where}.turns"
    total_ms = _numbers(_need(turns, "total_ms", list, origin, tw), origin, f"{tw}.total_ms", nullable=False)
    n = total_ms.size
    if n == 0:
        raise ScenarioError("no turns", origin=origin, field=f"{tw}.total_ms")
    ids_raw = _need(turns, "id", list, origin, tw)
    ids = _texts(ids_raw, n, origin, f"{tw}.id")
    calls_raw = turns.get("call")
    calls = None if calls_raw is None else _texts(calls_raw, n, origin, f"{tw}.call")
    stages_raw = _need(turns, "stages_ms", Mapping, origin, tw)
    stages: dict[str, FloatArray] = {}
    for key, values in stages_raw.items():
        if not isinstance(values, list):
            raise ScenarioError(f"must be a list, got {_written(values)}", origin=origin, field=f"{tw}.stages_ms.{key}")
        arr = _numbers(values, origin, f"{tw}.stages_ms.{key}", nullable=True)
        if arr.size != n:
            raise ScenarioError(f"has {arr.size} values for {n} turns", origin=origin, field=f"{tw}.stages_ms.{key}")
        stages[str(key)] = arr
    _check_stage_list(d.get("stages"), list(stages), origin, f"{where}.stages")
    known = {"name", "source", "anchor", "total", "budget", "stages", "turns"}
    return TurnSet(
        name,
        source,
        anchor,
        total,
        budget,
        total_ms,
        stages,
        ids,
        calls,
        {k: v for k, v in d.items() if k not in known},
    )


def _check_stage_list(listed: Any, columns: list[str], origin: str, where: str) -> None:
    """A set's ``stages`` (optional; the writer lists the report order) names exactly the ``stages_ms`` columns:
    a list that says otherwise was edited by hand or written by something else, and is refused, not ignored.

    :raises ScenarioError: not a list of the columns' names."""
    if listed is None:
        return
    if not isinstance(listed, list) or not all(isinstance(x, str) for x in listed):
        got = (
            _written(listed)
            if not isinstance(listed, list)
            else "a list holding " + next(_kind_of(x) for x in listed if not isinstance(x, str))
        )
        raise ScenarioError(f"must be a list of stage names, got {got}", origin=origin, field=where)
    if sorted(listed) != sorted(columns):
        missing, extra = sorted(set(columns) - set(listed)), sorted(set(listed) - set(columns))
        said = "; ".join(
            p
            for p in (
                f"no column for {_plainly(extra)}" if extra else "",
                f"not listed: {_plainly(missing)}" if missing else "",
            )
            if p
        )
        raise ScenarioError(
            f"lists other stages than turns.stages_ms has ({said or 'a name twice'})", origin=origin, field=where
        )


def _texts(values: Any, n: int, origin: str, where: str) -> tuple[str, ...]:
    if not isinstance(values, list) or len(values) != n:
        size = f"{len(values)}" if isinstance(values, list) else _written(values)
        raise ScenarioError(f"must be a list of {n} texts (one per turn), got {size}", origin=origin, field=where)
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise ScenarioError(f"must be text, got {_written(v)}", origin=origin, field=f"{where}[{i}]")
    return tuple(values)


def _numbers(values: list[Any], origin: str, where: str, *, nullable: bool) -> FloatArray:
    kinds = set(map(type, values))
    if kinds <= ({int, float, type(None)} if nullable else {int, float}):  # one pass; bools and text excluded
        out = np.array(values, dtype=np.float64)  # None -> NaN
        bad = np.flatnonzero(~(np.isfinite(out) | (np.isnan(out) & nullable)) | (out < 0))
        if not bad.size:
            long = np.flatnonzero(out > MAX_LATENCY_MS)  # NaN compares False
            if not long.size:
                return out
            first = int(long[0])  # its square overflows: a bootstrap's spread would be inf (JSON refuses inf)
            raise ScenarioError(
                f"must be at most {MAX_LATENCY_MS:,.0f} ms (1,000 hours), got {_written(values[first])}"[:200],
                origin=origin,
                field=f"{where}[{first}]",
            )
        first = int(bad[0])
    else:
        first = next(i for i, v in enumerate(values) if type(v) not in (int, float) and (v is not None or not nullable))
    allowed = "a finite number >= 0 ms" + (" or null (the stage did not run)" if nullable else "")
    raise ScenarioError(
        f"must be {allowed}, got {_written(values[first])}"[:200], origin=origin, field=f"{where}[{first}]"
    )
