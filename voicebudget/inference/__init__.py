"""LLM inference models: GPU serving (batch policy, fast mode), SRAM-resident chips, API providers.

Public names are re-exported from :mod:`voicebudget`; see docs/inference.md.
"""

from __future__ import annotations

from voicebudget.inference._catalog import (
    HARDWARE,
    MODEL_ALIASES,
    MODELS,
    ChipPrice,
    Hardware,
    ModelArch,
    SramTiming,
    get_hardware,
    get_model,
)
from voicebudget.inference._predict import DEFAULT_CALIBRATION, estimate_inference
from voicebudget.inference._speculative import SpeculativeDecoding
from voicebudget.inference._types import Deployment, GPUCalibration, InferenceResult, Workload

__all__ = [
    "DEFAULT_CALIBRATION",
    "HARDWARE",
    "MODELS",
    "MODEL_ALIASES",
    "ChipPrice",
    "Deployment",
    "GPUCalibration",
    "Hardware",
    "InferenceResult",
    "ModelArch",
    "SpeculativeDecoding",
    "SramTiming",
    "Workload",
    "estimate_inference",
    "get_hardware",
    "get_model",
]
