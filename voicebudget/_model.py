"""The base of voicebudget's data models."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

__all__ = ["MODEL_CONFIG", "DataModel"]


def _numeric(annotation: Any) -> bool:
    """``float``/``int`` fields (optional or not), but not those that also accept ``bool``."""
    if annotation in (float, int):
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = set(typing.get_args(annotation)) - {type(None)}
        return bool(args) and args <= {float, int}
    return False


MODEL_CONFIG = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
"""The one configuration of every input model: immutable, unknown fields are errors (they list the
allowed ones), and infinity/NaN are refused at load, naming the field."""


class DataModel(BaseModel):
    """The base of voicebudget's input models: :data:`MODEL_CONFIG`, and numeric fields refuse booleans.

    pydantic's lax mode reads ``true`` as 1, so a YAML ``value_ms: yes`` would silently become 1 ms.
    Here it is an error naming the field. Subclasses do not repeat the configuration (a subclass's
    ``model_config`` is merged with it).
    """

    model_config = MODEL_CONFIG

    @model_validator(mode="before")
    @classmethod
    def _no_booleans_for_numbers(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key, value in data.items():
                field = cls.model_fields.get(key) if isinstance(key, str) else None
                if isinstance(value, bool) and field is not None and _numeric(field.annotation):
                    raise ValueError(f"{key} = {str(value).lower()} is a boolean; expected a number")
        return data
