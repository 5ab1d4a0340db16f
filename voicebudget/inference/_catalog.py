"""Catalogs of accelerator hardware and model architectures: frozen, typed, each entry sourced.

The types (:class:`Hardware`, :class:`ModelArch`, ...) are in :mod:`._catalog_types`, the entries in
:mod:`._catalog_data` (spec-sheet values from ``docs/reference/hardware-specs.csv`` and ``models.csv``,
their sources repeated on each entry); this module looks them up. Users add their own entries inline in
a scenario file (``hardware = {...}`` instead of an id) or in code by building :class:`Hardware` /
:class:`ModelArch` directly.
"""

from __future__ import annotations

from voicebudget._errors import ModelError
from voicebudget._text import unknown
from voicebudget.inference._catalog_data import HARDWARE, MODEL_ALIASES, MODELS
from voicebudget.inference._catalog_types import (
    PRECISION_BYTES,
    PRECISIONS,
    ChipPrice,
    Hardware,
    HostedPath,
    ModelArch,
    Precision,
    SramTiming,
    model_from_hf_dict,
)

__all__ = [
    "HARDWARE",
    "MODELS",
    "MODEL_ALIASES",
    "PRECISIONS",
    "PRECISION_BYTES",
    "ChipPrice",
    "Hardware",
    "HostedPath",
    "ModelArch",
    "Precision",
    "SramTiming",
    "get_hardware",
    "get_model",
    "model_from_hf_dict",
]


def get_hardware(hw: str | Hardware) -> Hardware:
    """Look up a hardware id (case-insensitive) or pass a :class:`Hardware` through.

    :raises ModelError: unknown id; the message lists the known ones.
    """
    if isinstance(hw, Hardware):
        return hw
    key = hw.strip().lower()
    if key not in HARDWARE:
        raise ModelError(unknown("hardware", hw, sorted(HARDWARE)))
    return HARDWARE[key]


def get_model(model: str | ModelArch) -> ModelArch:
    """Look up a model id or alias (case-insensitive) or pass a :class:`ModelArch` through.

    :raises ModelError: unknown id; the message lists the known ones.
    """
    if isinstance(model, ModelArch):
        return model
    key = model.strip().lower()
    key = MODEL_ALIASES.get(key, key)
    if key not in MODELS:
        known = sorted([*MODELS, *MODEL_ALIASES])
        raise ModelError(unknown("model", model, known))
    return MODELS[key]
