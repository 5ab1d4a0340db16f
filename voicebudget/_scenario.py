"""Scenario files: a budget, a pipeline and named variants, in TOML or YAML, validated by pydantic.

A variant is a partial pipeline merged over the baseline: tables merge key by key, except a table
with a ``kind``, which replaces what was there (so switching ``llm`` from ``kind = "llm"`` to
``kind = "gpu"`` does not inherit stale fields). Building a :class:`Scenario` touches no disk;
:func:`load_scenario` is the one place that reads files.

Errors name the origin, the field path and what is allowed, e.g.
``scenarios/x.toml: pipeline.asr.p95_ms: must be >= p50_ms (247.0), got 200.0``. A valid value outside
the plausible range of what it measures (``p50_ms = 0.26`` for an ASR: seconds typed as ms) is a warning
(:class:`~voicebudget.ImplausibleValue`, :mod:`voicebudget._plausible`), kept in
:attr:`Scenario.implausible`.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Union

from pydantic import Field, PrivateAttr, ValidationError

from voicebudget._algebra import AllOf, Choice, KOfN, Race, Sequence
from voicebudget._barge_in import BargeInTurn
from voicebudget._budget import Budget
from voicebudget._errors import ScenarioError
from voicebudget._io import Roots, read_document, reference_context, refuse_other_document, validation_error
from voicebudget._model import DataModel
from voicebudget._plausible import implausible_values, warn_each
from voicebudget._traffic import CallTraffic
from voicebudget._voice_turn import VoiceTurn

__all__ = [
    "BASELINE",
    "MAX_VARIANTS",
    "PipelineSpec",
    "Scenario",
    "load_scenario",
    "parse_scenario",
    "scenario_json_schema",
]

BASELINE = "baseline"
"""The name of the scenario's own pipeline among its variants."""

MAX_VARIANTS = 1_000
"""Most variants a scenario may have: each is merged, validated, simulated in full and printed as a row,
so 20,001 empty ``[variants.vN]`` tables (349 KB) took 191 s and 11 GB before the memory guard refused
them. A sweep wider than this is several files (or a loop over :func:`~voicebudget.simulate`)."""

PipelineSpec = Annotated[
    Union[VoiceTurn, BargeInTurn, Sequence, AllOf, KOfN, Race, Choice],  # noqa: UP007
    Field(discriminator="kind"),
]
"""A pipeline: the ready-made ``voice_turn``, a ``barge_in`` (caller onset -> agent audio stops) or any
combinator tree."""


class Scenario(DataModel):
    """A scenario: what to simulate and what to judge it against.

    :param name: a human name for reports.
    :param budget: the budget (default 800 ms at p95).
    :param pipeline: the baseline pipeline.
    :param variants: variant name -> its full pipeline (already merged over the baseline).
    :param samples: default number of simulated turns (the CLI's ``--samples`` overrides it).
    :param seed: default seed (``--seed`` overrides it).
    :param traffic: the calls' traffic for ``voicebudget capacity`` (optional; defaults are assumptions).
    """

    name: str = Field(min_length=1)
    description: str = ""
    budget: Budget = Field(default_factory=Budget)
    pipeline: PipelineSpec
    variants: dict[str, PipelineSpec] = Field(default_factory=dict)
    variant_descriptions: dict[str, str] = Field(default_factory=dict)
    samples: int = Field(default=200_000, ge=1)
    seed: int = Field(default=1, ge=0)
    traffic: CallTraffic | None = None

    _origin: str = PrivateAttr(default="<scenario>")
    _implausible: tuple[str, ...] = PrivateAttr(default=())

    @property
    def origin(self) -> str:
        """The file this scenario was read from (``"<scenario>"`` when built in code); errors raised
        later, while simulating or judging, name it."""
        return self._origin

    @property
    def implausible(self) -> tuple[str, ...]:
        """The values outside the plausible range of what they measure, one message each, naming the file
        and the field path (``scenarios/x.toml: pipeline.asr.p50_ms: 0.26 ms is implausible for an ASR
        finalisation (...)``); a variant's value is named once, where the variant sets it. Empty for a
        scenario built in code; :func:`load_scenario` and :func:`parse_scenario` fill it and warn each
        (:class:`~voicebudget.ImplausibleValue`)."""
        return self._implausible

    def pipelines(self) -> dict[str, Any]:
        """Every pipeline to run, baseline first: name -> pipeline."""
        return {BASELINE: self.pipeline, **self.variants}


def load_scenario(path: str | Path, *, allowed_roots: Roots = ()) -> Scenario:
    """Read and validate a scenario file (``.toml``, ``.yaml`` or ``.yml``).

    ``file`` fields (empirical samples, council files) resolve against the scenario file's folder and
    must stay under that folder, the current working directory, or one of ``allowed_roots``: a
    scenario file from a pull request cannot read ``/proc/self/environ`` or a home folder.

    :param allowed_roots: further folders that ``file`` references may read from.
    :raises ScenarioError: the file is missing, unreadable, not TOML/YAML, or invalid; the message
        names the file, the field path and what is allowed.
    :warns ImplausibleValue: one per value outside the plausible range of what it measures
        (:attr:`Scenario.implausible`).
    """
    path = Path(path)
    data = read_document(path, fields=_TOP_LEVEL)
    return _warned(_parse(data, str(path), reference_context(path, allowed_roots=allowed_roots)))


def parse_scenario(data: Mapping[str, Any], *, origin: str = "<scenario>", base_dir: str | Path = ".") -> Scenario:
    """Validate a scenario given as a dict (as read from TOML/YAML).

    :param data: the document; ``variants`` maps a name to ``{description?, <pipeline overrides>}``.
    :param origin: the file name used in error messages (and kept as :attr:`Scenario.origin`).
    :param base_dir: where relative ``file`` fields resolve.
    :raises ScenarioError: invalid document; every error is listed with its field path.
    :warns ImplausibleValue: one per value outside the plausible range of what it measures
        (:attr:`Scenario.implausible`).
    """
    return _warned(_parse(data, origin, {"base_dir": str(base_dir)}))


def _warned(scenario: Scenario) -> Scenario:
    warn_each(scenario.implausible, stacklevel=3)
    return scenario


def _implausible(scenario: Scenario) -> tuple[str, ...]:
    """Every implausible value of the scenario, ``origin: field.path: message``; a variant's value only where
    the variant changes it (the baseline's, merged into every variant, is named once)."""
    top = {name: getattr(scenario, name) for name in Scenario.model_fields if name not in ("pipeline", "variants")}
    found = [f for name, value in top.items() if isinstance(value, DataModel) for f in implausible_values(value, name)]
    baseline = implausible_values(scenario.pipeline)
    found += [(_join("pipeline", path), message) for path, message in baseline]
    for name, pipeline in scenario.variants.items():
        found += [
            (_join(f"variants.{name}", path), message)
            for path, message in implausible_values(pipeline)
            if (path, message) not in baseline
        ]
    return tuple(f"{scenario.origin}: {path}: {message}" for path, message in found)


def _join(prefix: str, path: str) -> str:
    return f"{prefix}.{path}" if path else prefix


def _parse(data: Mapping[str, Any], origin: str, context: dict[str, Any]) -> Scenario:
    refuse_other_document(data, "scenario", origin)
    raw = dict(data)
    raw_variants = raw.pop("variants", {}) or {}
    if not isinstance(raw_variants, dict):
        raise ScenarioError("must be a table of variant name -> overrides", origin=origin, field="variants")
    if len(raw_variants) > MAX_VARIANTS:
        raise ScenarioError(
            f"{len(raw_variants):,} variants; at most {MAX_VARIANTS:,} (each is simulated in full): split them "
            "into several files",
            origin=origin,
            field="variants",
        )
    pipeline_raw = raw.get("pipeline")
    merged: dict[str, Any] = {}
    descriptions: dict[str, str] = {}
    for vname, override in raw_variants.items():
        if not isinstance(override, dict):
            raise ScenarioError("must be a table of pipeline overrides", origin=origin, field=f"variants.{vname}")
        override = dict(override)
        desc = override.pop("description", "")
        if not isinstance(desc, str):
            raise ScenarioError(
                f"must be text, got a {type(desc).__name__}", origin=origin, field=f"variants.{vname}.description"
            )
        descriptions[str(vname)] = desc
        if vname == BASELINE:
            raise ScenarioError(
                f"{BASELINE!r} is the scenario's own pipeline; pick another name",
                origin=origin,
                field=f"variants.{vname}",
            )
        try:
            merged[vname] = merge_override(pipeline_raw, override) if isinstance(pipeline_raw, dict) else override
        except _NewStage as exc:
            raise ScenarioError(str(exc), origin=origin, field=".".join(["variants", vname, *exc.path])) from None
    doc = {**raw, "variants": merged, "variant_descriptions": descriptions}
    try:
        scenario = Scenario.model_validate(doc, context=context)
    except ValidationError as exc:
        raise validation_error(exc, origin, doc, raw_variants, schema=_schema()) from None
    scenario._origin = origin
    scenario._implausible = _implausible(scenario)
    return scenario


_TOP_LEVEL = frozenset({*Scenario.model_fields, "variants"})


def _schema() -> dict[str, Any]:
    """The scenario's JSON schema (only built for an error message: it lists the fields of each kind)."""
    return Scenario.model_json_schema()


class _NewStage(ValueError):
    def __init__(self, message: str, path: list[str]) -> None:
        super().__init__(message)
        self.path = path


def merge_override(base: Any, override: Any, path: list[str] | None = None) -> Any:
    """Deep-merge ``override`` into ``base``; a mapping with ``kind`` replaces instead of merging.

    A variant changes stages; it does not add them by merging: a name in a ``stages`` table that the
    baseline lacks (usually a typo) is an error. To restructure, give the parent with its ``kind``.

    :raises ValueError: (``_NewStage``) a new stage name, with the path of the offending key.
    """
    path = path or []
    if not isinstance(base, dict) or not isinstance(override, dict) or "kind" in override:
        return copy.deepcopy(override)
    out = copy.deepcopy(base)
    for key, value in override.items():
        if path and path[-1] == "stages" and key not in base:
            raise _NewStage(
                f"no stage {key!r} in the baseline; stages: {list(base)}. A variant changes stages; to add "
                "one, give the whole parent with its kind (it replaces)",
                [*path, key],
            )
        out[key] = merge_override(out.get(key), value, [*path, str(key)])
    return out


def scenario_json_schema() -> dict[str, Any]:
    """The JSON Schema of a scenario file (for editor completion)."""
    schema = Scenario.model_json_schema()
    schema["properties"].pop("variant_descriptions", None)
    schema["properties"]["variants"] = {
        "type": "object",
        "description": "Variant name -> {description?, <partial pipeline merged over the baseline>}.",
        "additionalProperties": {"type": "object"},
    }
    schema["description"] = (
        "A voicebudget scenario file: a pipeline of stages (each with a kind), a budget, and variants that "
        "replace or change stages of the baseline pipeline (docs/scenarios.md)."
    )
    _without_docstring_fields(schema)
    return schema


_FIELD_LIST = re.compile(r"\n\s*:(param|ivar|returns|raises|cvar)\b.*", re.S)


def _without_docstring_fields(node: Any) -> None:
    """Cut Sphinx field lists (``:param x: ...``) out of schema descriptions taken from docstrings: they
    describe the Python objects (e.g. variants already merged), not the file."""
    if isinstance(node, dict):
        desc = node.get("description")
        if isinstance(desc, str):
            node["description"] = _FIELD_LIST.sub("", desc).strip()
        for value in node.values():
            _without_docstring_fields(value)
    elif isinstance(node, list):
        for value in node:
            _without_docstring_fields(value)
