"""Reading reports and budget files, writing baselines: the one place the baseline package touches disk."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from voicebudget._budget import Budget
from voicebudget._errors import ScenarioError, param
from voicebudget._io import MAX_DATA_BYTES, parse_json, read_document, read_text, write_atomic
from voicebudget._measured import TurnSet, turn_sets_from_document, turns_document
from voicebudget._plausible import implausible_values, warn_each
from voicebudget.baseline._compare import CompareSettings, Comparison, compare_sets
from voicebudget.baseline._predict import Prediction, check_prediction

__all__ = ["compare_files", "load_budget", "pin_baseline", "read_turn_sets", "write_baseline"]


def read_turn_sets(path: str | Path) -> list[TurnSet]:
    """The measured turns of a JSON file: a baseline, ``voicebudget check --format json``, the pytest plugin's
    ``--voicebudget-json``, or a recorder report's ``to_dict()`` written as JSON.

    :raises ScenarioError: unreadable file, not JSON, or no valid measured turns (naming the field path).
    """
    origin = str(path)
    text = read_text(path, max_bytes=MAX_DATA_BYTES)
    return turn_sets_from_document(parse_json(text, origin=origin, allow_nan=False), origin=origin)


def write_baseline(sets: Sequence[TurnSet], path: str | Path, *, pinned_from: str = "") -> Path:
    """Write a baseline: the ``voicebudget-turns`` document of ``sets`` (plus ``pinned_from``), all at once.

    :raises OSError: the folder is not writable or the disk is full (no partial file is left).
    """
    if isinstance(sets, str | bytes) or not all(isinstance(s, TurnSet) for s in sets):
        raise ScenarioError(
            f"must be a list of TurnSets (read_turn_sets(path) reads them), got {sets!r}"[:200], origin=param("sets")
        )
    doc: dict[str, Any] = turns_document(sets)
    if pinned_from:
        doc["pinned_from"] = pinned_from
    return write_atomic(path, json.dumps(doc, indent=1, allow_nan=False) + "\n")


def pin_baseline(report: str | Path, output: str | Path) -> list[TurnSet]:
    """Keep a report's measured turns as a baseline file (``voicebudget baseline pin``).

    :returns: the sets pinned.
    :raises ScenarioError: the report has no valid measured turns.
    :raises OSError: the baseline cannot be written.
    """
    sets = read_turn_sets(report)
    write_baseline(sets, output, pinned_from=str(report))
    return sets


def load_budget(path: str | Path) -> Budget:
    """The ``budget`` table of a TOML/YAML file (a scenario file, or a file holding only ``[budget]``), with
    its ``tolerance`` table for ``compare``.

    :raises ScenarioError: unreadable file, no ``budget`` table, or an invalid field (naming it).
    :warns ImplausibleValue: a ``total_ms`` under 50 ms or over a minute (:mod:`voicebudget._plausible`).
    """
    origin = str(path)
    doc = read_document(path)
    raw = doc.get("budget")
    if not isinstance(raw, dict):
        raise ScenarioError(
            "no [budget] table (total_ms, percentile, stages, tolerance)", origin=origin, field="budget"
        )
    try:
        budget = Budget.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in ("budget", *err["loc"]))
        raise ScenarioError(err["msg"], origin=origin, field=where) from None
    warn_each(f"{origin}: {field}: {message}" for field, message in implausible_values(budget, "budget"))
    return budget


def compare_files(
    baseline: str | Path,
    new: str | Path,
    settings: CompareSettings | None = None,
    *,
    prediction: Prediction | None = None,
) -> Comparison:
    """Read a baseline and a new report, then :func:`~voicebudget.baseline.compare_sets` them; with a
    ``prediction``, check the measured change against it (:func:`~voicebudget.baseline.check_prediction`).

    :raises ScenarioError: a file has no valid measured turns.
    """
    result = compare_sets(
        read_turn_sets(baseline), read_turn_sets(new), settings, baseline_origin=str(baseline), new_origin=str(new)
    )
    return check_prediction(result, prediction) if prediction is not None else result
