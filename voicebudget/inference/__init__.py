"""LLM inference models: GPU serving (batch policy, fast mode), SRAM-resident chips, API providers.

Public names are re-exported from :mod:`voicebudget`; see docs/inference.md.
"""

from __future__ import annotations

from voicebudget.inference._catalog import (
    HARDWARE,
    MODEL_ALIASES,
    MODELS,
    PRECISIONS,
    ChipPrice,
    Hardware,
    ModelArch,
    SramTiming,
    get_hardware,
    get_model,
)
from voicebudget.inference._fastmode import FastModeComparison, FastModePlan, compare_policies, plan_fast_mode
from voicebudget.inference._hfconfig import hardware_from_toml, model_from_hf_config, parse_speculative
from voicebudget.inference._load import estimate_at_arrival_rate
from voicebudget.inference._predict import DEFAULT_CALIBRATION, estimate_inference
from voicebudget.inference._queue import estimate_open_loop, step_time_function
from voicebudget.inference._speculative import (
    SPECULATIVE_PRESETS,
    SpeculativeDecoding,
    SpeculativePreset,
    get_speculative_preset,
)
from voicebudget.inference._stage import APIStage, FastTier, GPUStage, WaferStage
from voicebudget.inference._types import Deployment, GPUCalibration, InferenceResult, OpenLoopResult, Workload

__all__ = [
    "PRECISIONS",
    "APIStage",
    "ChipPrice",
    "DEFAULT_CALIBRATION",
    "Deployment",
    "FastModeComparison",
    "FastModePlan",
    "FastTier",
    "GPUCalibration",
    "GPUStage",
    "HARDWARE",
    "Hardware",
    "InferenceResult",
    "MODELS",
    "MODEL_ALIASES",
    "ModelArch",
    "OpenLoopResult",
    "SPECULATIVE_PRESETS",
    "SpeculativeDecoding",
    "SpeculativePreset",
    "SramTiming",
    "WaferStage",
    "Workload",
    "compare_policies",
    "estimate_at_arrival_rate",
    "estimate_inference",
    "estimate_open_loop",
    "get_hardware",
    "get_model",
    "get_speculative_preset",
    "hardware_from_toml",
    "model_from_hf_config",
    "parse_speculative",
    "plan_fast_mode",
    "step_time_function",
]

# Complete the stage union's forward references (combinators, councils, caches) for users who
# import this sub-package before anything else.
import voicebudget._stages  # noqa: E402, F401, I001
