"""LLM inference models: GPU serving (batch policy, fast mode), SRAM-resident chips, API providers.

Public names are re-exported from :mod:`voicebudget`; see docs/inference.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicebudget._lazy import lazy_getattr, lazy_table

if TYPE_CHECKING:
    from voicebudget.inference._catalog import (  # noqa: I001 - one statement per module, "X as X" re-exports
        HARDWARE as HARDWARE,
        MODEL_ALIASES as MODEL_ALIASES,
        MODELS as MODELS,
        ChipPrice as ChipPrice,
        Hardware as Hardware,
        ModelArch as ModelArch,
        SramTiming as SramTiming,
        get_hardware as get_hardware,
        get_model as get_model,
    )
    from voicebudget.inference._precision import (
        PRECISIONS as PRECISIONS,
    )
    from voicebudget.inference._fastmode import (
        FastModeBand as FastModeBand,
        FastModeBandRow as FastModeBandRow,
        FastModeComparison as FastModeComparison,
        FastModePlan as FastModePlan,
        compare_policies as compare_policies,
        fast_mode_band as fast_mode_band,
        plan_fast_mode as plan_fast_mode,
    )
    from voicebudget.inference._hfconfig import (
        hardware_from_toml as hardware_from_toml,
        model_from_hf_config as model_from_hf_config,
        parse_speculative as parse_speculative,
    )
    from voicebudget.inference._gpu import (
        default_step_budget as default_step_budget,
    )
    from voicebudget.inference._load import (
        estimate_at_arrival_rate as estimate_at_arrival_rate,
    )
    from voicebudget.inference._predict import (
        DEFAULT_CALIBRATION as DEFAULT_CALIBRATION,
        estimate_inference as estimate_inference,
    )
    from voicebudget.inference._queue import (
        estimate_open_loop as estimate_open_loop,
        step_time_function as step_time_function,
    )
    from voicebudget.inference._speculative import (
        SPECULATIVE_PRESETS as SPECULATIVE_PRESETS,
        SpeculativeDecoding as SpeculativeDecoding,
        SpeculativePreset as SpeculativePreset,
        get_speculative_preset as get_speculative_preset,
    )
    from voicebudget.inference._gpu_stage import (
        GPUStage as GPUStage,
    )
    from voicebudget.inference._stage import (
        APIStage as APIStage,
        FastTier as FastTier,
        ModelledStage as ModelledStage,
    )
    from voicebudget.inference._wafer_stage import (
        WaferStage as WaferStage,
    )
    from voicebudget.inference._types import (
        Deployment as Deployment,
        GPUCalibration as GPUCalibration,
        InferenceResult as InferenceResult,
        OpenLoopResult as OpenLoopResult,
        Workload as Workload,
    )

# Module -> the public names it defines, imported on first use (PEP 562): importing this package
# costs nothing until a name is used (``voicebudget --help`` imports no numpy).
_PUBLIC: dict[str, tuple[str, ...]] = {
    "voicebudget.inference._catalog": (
        "HARDWARE",
        "MODEL_ALIASES",
        "MODELS",
        "ChipPrice",
        "Hardware",
        "ModelArch",
        "SramTiming",
        "get_hardware",
        "get_model",
    ),
    "voicebudget.inference._precision": ("PRECISIONS",),
    "voicebudget.inference._fastmode": (
        "FastModeBand",
        "FastModeBandRow",
        "FastModeComparison",
        "FastModePlan",
        "compare_policies",
        "fast_mode_band",
        "plan_fast_mode",
    ),
    "voicebudget.inference._hfconfig": (
        "hardware_from_toml",
        "model_from_hf_config",
        "parse_speculative",
    ),
    "voicebudget.inference._gpu": ("default_step_budget",),
    "voicebudget.inference._load": ("estimate_at_arrival_rate",),
    "voicebudget.inference._predict": (
        "DEFAULT_CALIBRATION",
        "estimate_inference",
    ),
    "voicebudget.inference._queue": (
        "estimate_open_loop",
        "step_time_function",
    ),
    "voicebudget.inference._speculative": (
        "SPECULATIVE_PRESETS",
        "SpeculativeDecoding",
        "SpeculativePreset",
        "get_speculative_preset",
    ),
    "voicebudget.inference._gpu_stage": ("GPUStage",),
    "voicebudget.inference._stage": (
        "APIStage",
        "FastTier",
        "ModelledStage",
    ),
    "voicebudget.inference._wafer_stage": ("WaferStage",),
    "voicebudget.inference._types": (
        "Deployment",
        "GPUCalibration",
        "InferenceResult",
        "OpenLoopResult",
        "Workload",
    ),
}

_LAZY = lazy_table(_PUBLIC)

__all__ = sorted(_LAZY)

__getattr__ = lazy_getattr("voicebudget.inference", _LAZY, globals())


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
