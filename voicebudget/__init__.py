"""voicebudget: does your voice agent answer fast enough, why not, and what to change.

Everything a user may import is here; modules with a leading underscore are private.
"""

from __future__ import annotations

from voicebudget._algebra import AllOf, Choice, Evaluation, KOfN, Race, Sampler, Sequence, evaluate, stage_rng
from voicebudget._budget import Budget
from voicebudget._distributions import Distribution, Empirical, Fixed, LogNormal, Mixture, Normal, Shifted, Uniform
from voicebudget._errors import BudgetExceeded, ModelError, ScenarioError, VoiceBudgetError
from voicebudget._report import LatencyStats, Report, StageReport, build_report
from voicebudget._scenario import PipelineSpec, Scenario, load_scenario, parse_scenario, scenario_json_schema
from voicebudget._simulate import RunResult, simulate, simulate_pipeline
from voicebudget._stage_models import ColdConnection, LLMStage, NetworkStage, TokenRange, TTSStage
from voicebudget._stages import StageSpec
from voicebudget._voice_turn import STAGE_ORDER, VoiceTurn
from voicebudget.checker import ExcludedTurn, RecorderReport, StageSpan, StageTimer, Turn, TurnRecorder

__version__ = "0.1.0"

__all__ = [
    "AllOf",
    "Budget",
    "BudgetExceeded",
    "Choice",
    "ColdConnection",
    "Distribution",
    "Empirical",
    "Evaluation",
    "ExcludedTurn",
    "Fixed",
    "KOfN",
    "LLMStage",
    "LatencyStats",
    "LogNormal",
    "Mixture",
    "ModelError",
    "NetworkStage",
    "Normal",
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
    "build_report",
    "evaluate",
    "load_scenario",
    "parse_scenario",
    "scenario_json_schema",
    "simulate",
    "simulate_pipeline",
    "stage_rng",
]
