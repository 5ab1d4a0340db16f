"""The base of voicebudget's data models."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler
from pydantic_core import CoreSchema, PydanticCustomError
from pydantic_core import core_schema as cs

__all__ = ["MODEL_CONFIG", "DataModel"]


def _no_text_for_number(value: Any) -> Any:
    """Refuse what pydantic's lax mode would turn into a number: text (``"20000"``) and booleans."""
    if isinstance(value, bool):
        raise PydanticCustomError(
            "bool_for_number", "{value} is a boolean; expected a number", {"value": str(value).lower()}
        )
    if isinstance(value, str | bytes):
        raise PydanticCustomError(
            "text_for_number",
            "{value} is text; expected a number (write it without quotes)",
            {"value": repr(value[:40])},
        )
    return value


def _no_text_for_bool(value: Any) -> Any:
    """Refuse what lax mode would turn into a boolean: text (``"true"``, ``"no"``) and numbers (1, 0)."""
    if isinstance(value, str | bytes):
        raise PydanticCustomError(
            "text_for_bool", "{value} is text; expected true or false (without quotes)", {"value": repr(value[:40])}
        )
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise PydanticCustomError(
            "number_for_bool", "{value} is a number; expected true or false", {"value": repr(value)}
        )
    return value


def _no_text_in_numbers(value: Any) -> Any:
    """The check of :func:`_no_text_for_number` on every item of a list of numbers, looking item by item
    only when a text or boolean item is there (sample lists hold millions of numbers)."""
    if isinstance(value, list | tuple) and {str, bytes, bool} & set(map(type, value)):
        for i, item in enumerate(value):
            try:
                _no_text_for_number(item)
            except PydanticCustomError as exc:
                raise PydanticCustomError(
                    exc.type, "item [{index}]: " + exc.message_template, {**(exc.context or {}), "index": i}
                ) from None
    return value


_CHECKS = {"float": _no_text_for_number, "int": _no_text_for_number, "bool": _no_text_for_bool}
_OURS = frozenset({_no_text_for_number, _no_text_for_bool, _no_text_in_numbers})
_NOT_SCHEMAS = frozenset({"metadata", "serialization", "default", "ref", "json_schema_input_schema"})


def _numbers_only(schema: dict[str, Any]) -> bool:
    """A tuple/list/set schema whose items are all plain numbers (``tuple[float, ...]``)."""
    items = schema.get("items_schema")
    items = items if isinstance(items, list) else [items]
    return bool(items) and all(isinstance(s, dict) and s.get("type") in ("float", "int") for s in items)


def _tighten(schema: Any, own: type | None = None) -> Any:
    """A copy of a pydantic core schema in which number and boolean fields, at any depth, refuse text
    (and numbers booleans, booleans numbers) before pydantic's lax conversion runs.

    The schema of another :class:`DataModel` inside it (``own`` is the model being built) is left as it
    is: that model's own schema hook tightened it when pydantic built it. Walking into it again would
    make building the stage union quadratic in its depth (~40% of ``import voicebudget._stages``)."""
    if isinstance(schema, list | tuple):
        return type(schema)(_tighten(s, own) for s in schema)
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")
    if kind == "model" and schema.get("cls") is not own and issubclass(schema.get("cls", object), DataModel):
        return schema  # a nested model's schema, already tightened
    if kind in _CHECKS:
        return cs.no_info_before_validator_function(_CHECKS[kind], schema)
    if kind in ("tuple", "list", "set", "frozenset") and _numbers_only(schema):
        return cs.no_info_before_validator_function(_no_text_in_numbers, schema)
    if kind == "function-before" and schema.get("function", {}).get("function") in _OURS:
        return schema  # a nested model's schema, already tightened
    return {k: v if k in _NOT_SCHEMAS else _tighten(v, own) for k, v in schema.items()}


MODEL_CONFIG = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
"""The one configuration of every input model: immutable, unknown fields are errors (they list the
allowed ones), and infinity/NaN are refused at load, naming the field."""


class DataModel(BaseModel):
    """The base of voicebudget's input models: :data:`MODEL_CONFIG`, and numbers and booleans are never
    read from text.

    pydantic's lax mode reads ``true`` as 1 and ``"20000"`` as 20000, so a YAML ``value_ms: yes`` would
    silently become 1 ms and a quoted TOML ``samples = "20000"`` would pass. Here every ``float``/``int``
    field (optional or not, and the items of tuples, lists and mappings of them) refuses text and
    booleans, and every ``bool`` field refuses text and numbers, with an error at the field's path
    (``samples: '20000' is text; expected a number (write it without quotes)``). The rest of lax mode
    stays (a list for a tuple, ``20000.0`` for an ``int``), which pydantic's full strict mode would refuse.
    Subclasses do not repeat the configuration (a subclass's ``model_config`` is merged with it).
    """

    model_config = MODEL_CONFIG

    plausible_as: ClassVar[Mapping[str, str]] = {}
    """Field -> what its value measures (a key of :data:`voicebudget._plausible.RANGES`: ``"asr"``, ``"llm"``,
    ...), so that a value outside that range warns (``p50_ms = 0.26`` for an ASR); fields not named are
    walked through without a range."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: type[BaseModel], handler: GetCoreSchemaHandler, /) -> CoreSchema:
        if source is cls and cls.__dict__.get("__pydantic_complete__", False):
            return handler(source)  # built (and tightened) already: pydantic hands out its stored schema
        return _tighten(handler(source), source)  # type: ignore[no-any-return]
