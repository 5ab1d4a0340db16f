"""voicebudget: does your voice agent answer fast enough, why not, and what to change.

Everything a user may import is here; modules with a leading underscore are private.
"""

from __future__ import annotations

from voicebudget._algebra import AllOf, Choice, Evaluation, KOfN, Race, Sampler, Sequence, evaluate, stage_rng
from voicebudget._budget import Budget
from voicebudget._distributions import Distribution, Empirical, Fixed, LogNormal, Mixture, Normal, Shifted, Uniform
from voicebudget._errors import BudgetExceeded, ModelError, ScenarioError, VoiceBudgetError
from voicebudget._observed import Observed
from voicebudget._report import LatencyStats, Report, StageReport, build_report
from voicebudget._scenario import PipelineSpec, Scenario, load_scenario, parse_scenario, scenario_json_schema
from voicebudget._simulate import RunResult, simulate, simulate_pipeline
from voicebudget._stage_models import ColdConnection, LLMStage, NetworkStage, TokenRange, TTSStage
from voicebudget._stages import StageSpec
from voicebudget._voice_turn import STAGE_ORDER, VoiceTurn
from voicebudget.checker import ExcludedTurn, RecorderReport, StageSpan, StageTimer, Turn, TurnRecorder
from voicebudget.inference import (
    HARDWARE,
    MODELS,
    APIStage,
    ChipPrice,
    Deployment,
    FastModeComparison,
    FastModePlan,
    FastTier,
    GPUCalibration,
    GPUStage,
    Hardware,
    InferenceResult,
    ModelArch,
    SpeculativeDecoding,
    WaferStage,
    Workload,
    compare_policies,
    estimate_inference,
    get_hardware,
    get_model,
    plan_fast_mode,
)

__version__ = "0.1.0"

__all__ = [
    "APIStage",
    "AllOf",
    "Budget",
    "BudgetExceeded",
    "ChipPrice",
    "Choice",
    "ColdConnection",
    "Deployment",
    "Distribution",
    "Empirical",
    "Evaluation",
    "ExcludedTurn",
    "FastModeComparison",
    "FastModePlan",
    "FastTier",
    "Fixed",
    "GPUCalibration",
    "GPUStage",
    "HARDWARE",
    "Hardware",
    "InferenceResult",
    "KOfN",
    "LLMStage",
    "LatencyStats",
    "LogNormal",
    "MODELS",
    "Mixture",
    "ModelArch",
    "ModelError",
    "NetworkStage",
    "Normal",
    "Observed",
    "PipelineSpec",
    "Race",
    "RecorderReport",
    "Report",
    "RunResult",
    "STAGE_ORDER",
    "Sampler",
    "Scenario",
    "ScenarioError",
    "Sequence",
    "Shifted",
    "SpeculativeDecoding",
    "StageReport",
    "StageSpan",
    "StageSpec",
    "StageTimer",
    "TTSStage",
    "TokenRange",
    "Turn",
    "TurnRecorder",
    "Uniform",
    "VoiceBudgetError",
    "VoiceTurn",
    "WaferStage",
    "Workload",
    "build_report",
    "compare_policies",
    "estimate_inference",
    "evaluate",
    "get_hardware",
    "get_model",
    "load_scenario",
    "parse_scenario",
    "plan_fast_mode",
    "scenario_json_schema",
    "simulate",
    "simulate_pipeline",
    "stage_rng",
]
