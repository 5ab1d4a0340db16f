"""Scenario files: a budget, a pipeline and named variants, in TOML or YAML, validated by pydantic.

A variant is a partial pipeline merged over the baseline: tables merge key by key, except a table
with a ``kind``, which replaces what was there (so switching ``llm`` from ``kind = "llm"`` to
``kind = "gpu"`` does not inherit stale fields). Building a :class:`Scenario` touches no disk;
:func:`load_scenario` is the one place that reads files.

Errors name the origin, the field path and what is allowed, e.g.
``scenarios/x.toml: pipeline.asr.p95_ms: must be >= p50_ms (247.0), got 200.0``.
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Union

import yaml
from pydantic import ConfigDict, Field, ValidationError

from voicebudget._algebra import AllOf, Choice, KOfN, Race, Sequence
from voicebudget._budget import Budget
from voicebudget._errors import ScenarioError
from voicebudget._model import DataModel
from voicebudget._voice_turn import VoiceTurn

__all__ = ["BASELINE", "PipelineSpec", "Scenario", "load_scenario", "parse_scenario", "scenario_json_schema"]

BASELINE = "baseline"
"""The name of the scenario's own pipeline among its variants."""

PipelineSpec = Annotated[
    Union[VoiceTurn, Sequence, AllOf, KOfN, Race, Choice],  # noqa: UP007
    Field(discriminator="kind"),
]
"""A pipeline: the ready-made ``voice_turn`` or any combinator tree."""


class Scenario(DataModel):
    """A scenario: what to simulate and what to judge it against.

    :param name: a human name for reports.
    :param budget: the budget (default 800 ms at p95).
    :param pipeline: the baseline pipeline.
    :param variants: variant name -> its full pipeline (already merged over the baseline).
    :param samples: default number of simulated turns (the CLI's ``--samples`` overrides it).
    :param seed: default seed (``--seed`` overrides it).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    name: str = Field(min_length=1)
    description: str = ""
    budget: Budget = Field(default_factory=Budget)
    pipeline: PipelineSpec
    variants: dict[str, PipelineSpec] = Field(default_factory=dict)
    variant_descriptions: dict[str, str] = Field(default_factory=dict)
    samples: int = Field(default=200_000, ge=1)
    seed: int = Field(default=1, ge=0)

    def pipelines(self) -> dict[str, Any]:
        """Every pipeline to run, baseline first: name -> pipeline."""
        return {BASELINE: self.pipeline, **self.variants}


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file (``.toml``, ``.yaml`` or ``.yml``).

    Relative ``file`` fields (empirical samples) resolve against the scenario file's folder.

    :raises ScenarioError: the file is missing, unreadable, not TOML/YAML, or invalid; the message
        names the file, the field path and what is allowed.
    """
    path = Path(path)
    origin = str(path)
    data = read_document(path)
    return parse_scenario(data, origin=origin, base_dir=path.parent)


def read_document(path: Path) -> dict[str, Any]:
    """Parse a TOML or YAML file into a dict.

    :raises ScenarioError: missing file, unknown extension, syntax error, or not a table at the top.
    """
    origin = str(path)
    if not path.is_file():
        raise ScenarioError("file not found", origin=origin)
    suffix = path.suffix.lower()
    try:
        text = path.read_text(encoding="utf-8-sig")  # a UTF-8 byte-order mark is dropped
        if suffix == ".toml":
            data: Any = tomllib.loads(text)
        elif suffix in (".yaml", ".yml"):
            data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
        else:
            raise ScenarioError(f"unknown file type {suffix!r}; allowed: .toml, .yaml, .yml", origin=origin)
    except (tomllib.TOMLDecodeError, yaml.YAMLError, UnicodeDecodeError, OSError) as exc:
        raise ScenarioError(f"cannot parse: {exc}", origin=origin) from None
    if not isinstance(data, dict):
        raise ScenarioError("expected a table (mapping) at the top level", origin=origin)
    return data


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key given twice in one mapping is an error (as in TOML)
    instead of the last one silently winning."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen and key != "<<":
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (line {key_node.start_mark.line + 1})", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def parse_scenario(data: Mapping[str, Any], *, origin: str = "<scenario>", base_dir: str | Path = ".") -> Scenario:
    """Validate a scenario given as a dict (as read from TOML/YAML).

    :param data: the document; ``variants`` maps a name to ``{description?, <pipeline overrides>}``.
    :param origin: the file name used in error messages.
    :param base_dir: where relative ``file`` fields resolve.
    :raises ScenarioError: invalid document; every error is listed with its field path.
    """
    raw = dict(data)
    raw_variants = raw.pop("variants", {}) or {}
    if not isinstance(raw_variants, dict):
        raise ScenarioError("must be a table of variant name -> overrides", origin=origin, field="variants")
    pipeline_raw = raw.get("pipeline")
    merged: dict[str, Any] = {}
    descriptions: dict[str, str] = {}
    for vname, override in raw_variants.items():
        if not isinstance(override, dict):
            raise ScenarioError("must be a table of pipeline overrides", origin=origin, field=f"variants.{vname}")
        override = dict(override)
        desc = override.pop("description", "")
        descriptions[vname] = str(desc)
        if vname == BASELINE:
            raise ScenarioError(f"{BASELINE!r} is the scenario's own pipeline; pick another name",
                                origin=origin, field=f"variants.{vname}")
        try:
            merged[vname] = merge_override(pipeline_raw, override) if isinstance(pipeline_raw, dict) else override
        except _NewStage as exc:
            raise ScenarioError(str(exc), origin=origin, field=".".join(["variants", vname, *exc.path])) from None
    doc = {**raw, "variants": merged, "variant_descriptions": descriptions}
    try:
        return Scenario.model_validate(doc, context={"base_dir": str(base_dir)})
    except ValidationError as exc:
        raise validation_error(exc, origin, doc, raw_variants) from None


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
                "one, give the whole parent with its kind (it replaces)", [*path, key],
            )
        out[key] = merge_override(out.get(key), value, [*path, str(key)])
    return out


def validation_error(
    exc: ValidationError, origin: str, doc: Mapping[str, Any], overrides: Mapping[str, Any] | None = None
) -> ScenarioError:
    """Turn a pydantic error into a :class:`ScenarioError` with user-facing field paths.

    Pydantic's internal location parts (union tags, validator wrappers) are dropped by walking the
    document along the location; errors inside a merged variant point at the variant's override
    when the field came from it.
    """
    errors = []
    for err in exc.errors():
        path = _user_path(doc, err["loc"])
        if overrides and len(path) >= 2 and path[0] == "variants":
            rest = path[2:]
            if _from_override(overrides.get(str(path[1]), {}), rest):
                path = ["variants", path[1], *rest]
            else:
                path = ["pipeline", *rest]
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = f"unknown field {path[-1]!r}" + _allowed_fields(doc, path[:-1])
        elif err["type"] == "missing":
            message = "required field missing"
        errors.append((".".join(str(p) for p in path), message))
    return ScenarioError.from_errors(origin, errors)


def _user_path(doc: Any, loc: tuple[int | str, ...]) -> list[int | str]:
    path: list[int | str] = []
    node = doc
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
            path.append(part)
        elif isinstance(node, list | tuple) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            path.append(part)
        elif isinstance(node, dict) and isinstance(part, str) and "[" not in part and part not in _WRAPPER_PARTS:
            if node.get("kind") == part:
                continue  # union tag
            path.append(part)
            node = None
    return path


_WRAPPER_PARTS = frozenset({"function-after", "function-before", "function-wrap"})


def _from_override(override: Any, path: list[int | str]) -> bool:
    """Whether the field at ``path`` of a merged variant came from the variant's override: the override
    has the path, or replaced a table above it (a table with ``kind`` replaces the baseline's)."""
    node = override
    for part in path:
        if isinstance(node, dict) and "kind" in node:
            return True
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return False
    return True


def _allowed_fields(doc: Any, parent: list[int | str]) -> str:
    node = doc
    for part in parent:
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int):
            node = node[part]
        else:
            node = None
    if isinstance(node, dict) and "kind" in node:
        from pydantic import TypeAdapter

        from voicebudget._stages import StageSpec  # local: only for the message

        defs = {
            **TypeAdapter(StageSpec).json_schema().get("$defs", {}),
            **TypeAdapter(PipelineSpec).json_schema().get("$defs", {}),
        }
        for definition in defs.values():
            kind = definition.get("properties", {}).get("kind", {})
            if kind.get("const") == node["kind"] or kind.get("default") == node["kind"]:
                return f"; allowed for kind {node['kind']!r}: {', '.join(definition['properties'])}"
    return ""


def scenario_json_schema() -> dict[str, Any]:
    """The JSON Schema of a scenario file (for editor completion)."""
    schema = Scenario.model_json_schema()
    schema["properties"].pop("variant_descriptions", None)
    schema["properties"]["variants"] = {
        "type": "object",
        "description": "Variant name -> {description?, <partial pipeline merged over the baseline>}.",
        "additionalProperties": {"type": "object"},
    }
    return schema
