"""Number formats of weights and KV cache, and their sizes (a leaf module: the CLI's ``--precision``
choices read it without loading the catalog)."""

from __future__ import annotations

import typing
from typing import Literal

__all__ = ["PRECISIONS", "PRECISION_BYTES", "Precision"]

Precision = Literal["bf16", "fp16", "fp8", "fp4"]
"""Number format of weights (and, by default, of the KV cache)."""

PRECISIONS: tuple[str, ...] = typing.get_args(Precision)
"""The precisions, in order (the CLI's ``--precision`` choices)."""

PRECISION_BYTES: dict[str, float] = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "fp4": 0.5625}
"""Bytes per parameter. fp4 is NVFP4: 4-bit values plus one fp8 scale per 16 values = 4.5 bits
(NVIDIA, "Introducing NVFP4", developer.nvidia.com blog, 2025-06)."""
