"""voicebudget: does your voice agent answer fast enough, why not, and what to change.

Everything a user may import is here; modules with a leading underscore are private.

The public names are written once, in :data:`_PUBLIC` (module -> names); ``__all__`` and the lazy
import table are built from it. The ``TYPE_CHECKING`` imports repeat them for type checkers (which
cannot follow a lazy import); ``tests/test_public_api.py`` checks that the two agree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicebudget._lazy import lazy_getattr, lazy_table

if TYPE_CHECKING:
    from voicebudget._algebra import (  # noqa: I001 - one statement per module, "X as X" re-exports
        AllOf as AllOf,
        Choice as Choice,
        Evaluation as Evaluation,
        KOfN as KOfN,
        Race as Race,
        Sampler as Sampler,
        Sequence as Sequence,
        evaluate as evaluate,
        stage_rng as stage_rng,
    )
    from voicebudget._budget import (
        Budget as Budget,
    )
    from voicebudget._distributions import (
        Distribution as Distribution,
        Empirical as Empirical,
        Fixed as Fixed,
        LogNormal as LogNormal,
        Mixture as Mixture,
        Normal as Normal,
        Shifted as Shifted,
        Uniform as Uniform,
    )
    from voicebudget._errors import (
        BudgetExceeded as BudgetExceeded,
        ImplausibleValue as ImplausibleValue,
        ModelError as ModelError,
        ScenarioError as ScenarioError,
        VoiceBudgetError as VoiceBudgetError,
    )
    from voicebudget._observed import (
        Observed as Observed,
    )
    from voicebudget._report import (
        LatencyStats as LatencyStats,
        Report as Report,
        StagePart as StagePart,
        StageReport as StageReport,
        build_report as build_report,
    )
    from voicebudget._scenario import (
        PipelineSpec as PipelineSpec,
        Scenario as Scenario,
        load_scenario as load_scenario,
        parse_scenario as parse_scenario,
        scenario_json_schema as scenario_json_schema,
    )
    from voicebudget._simulate import (
        RunResult as RunResult,
        run_scenarios as run_scenarios,
        simulate as simulate,
        simulate_pipeline as simulate_pipeline,
    )
    from voicebudget._stage_models import (
        ColdConnection as ColdConnection,
        LLMStage as LLMStage,
        NetworkStage as NetworkStage,
        TokenRange as TokenRange,
        TTSStage as TTSStage,
    )
    from voicebudget._barge_in import (
        BARGE_IN_BUDGET_MS as BARGE_IN_BUDGET_MS,
        BARGE_IN_STAGES as BARGE_IN_STAGES,
        BargeInTurn as BargeInTurn,
    )
    from voicebudget._stages import (
        StageSpec as StageSpec,
    )
    from voicebudget._tool_turn import (
        ToolTurn as ToolTurn,
    )
    from voicebudget._voice_turn import (
        STAGE_ORDER as STAGE_ORDER,
        VoiceTurn as VoiceTurn,
    )
    from voicebudget.capacity import (
        CallTraffic as CallTraffic,
        CapacityPoint as CapacityPoint,
        CapacityResult as CapacityResult,
        DeploymentCapacity as DeploymentCapacity,
        HostedDeployment as HostedDeployment,
        LoadModel as LoadModel,
        ModelledDeployment as ModelledDeployment,
        Overloaded as Overloaded,
        plan_capacity as plan_capacity,
    )
    from voicebudget.checker import (
        BudgetGuard as BudgetGuard,
        ExcludedTurn as ExcludedTurn,
        FillerPolicy as FillerPolicy,
        FillerReport as FillerReport,
        FillerResult as FillerResult,
        GuardDecision as GuardDecision,
        GuardedTurn as GuardedTurn,
        GuardPolicy as GuardPolicy,
        MedianPolicy as MedianPolicy,
        RecorderReport as RecorderReport,
        StageSpan as StageSpan,
        StageTimer as StageTimer,
        TimeoutPolicy as TimeoutPolicy,
        Turn as Turn,
        TurnRecorder as TurnRecorder,
        evaluate_fillers as evaluate_fillers,
        guard_report as guard_report,
    )
    from voicebudget.councils import (
        Aggregator as Aggregator,
        CacheResult as CacheResult,
        Council as Council,
        CouncilResult as CouncilResult,
        Member as Member,
        Preemptive as Preemptive,
        PreemptiveResult as PreemptiveResult,
        QualityResult as QualityResult,
        ReplyCache as ReplyCache,
        Router as Router,
        Scorer as Scorer,
        UserTime as UserTime,
        break_even_false_hit_rate as break_even_false_hit_rate,
        evaluate_cache as evaluate_cache,
        evaluate_council as evaluate_council,
        evaluate_preemptive as evaluate_preemptive,
        fit_answer_space as fit_answer_space,
        load_council as load_council,
        majority_accuracy as majority_accuracy,
        plurality_accuracy as plurality_accuracy,
        run_council as run_council,
        weighted_plurality_accuracy as weighted_plurality_accuracy,
        weighted_vote_accuracy as weighted_vote_accuracy,
    )
    from voicebudget.inference import (
        HARDWARE as HARDWARE,
        MODELS as MODELS,
        APIStage as APIStage,
        ChipPrice as ChipPrice,
        Deployment as Deployment,
        FastModeBand as FastModeBand,
        FastModeBandRow as FastModeBandRow,
        FastModeComparison as FastModeComparison,
        FastModePlan as FastModePlan,
        FastTier as FastTier,
        GPUCalibration as GPUCalibration,
        GPUStage as GPUStage,
        Hardware as Hardware,
        InferenceResult as InferenceResult,
        ModelArch as ModelArch,
        OpenLoopResult as OpenLoopResult,
        SPECULATIVE_PRESETS as SPECULATIVE_PRESETS,
        SpeculativeDecoding as SpeculativeDecoding,
        SpeculativePreset as SpeculativePreset,
        WaferStage as WaferStage,
        Workload as Workload,
        compare_policies as compare_policies,
        default_step_budget as default_step_budget,
        estimate_at_arrival_rate as estimate_at_arrival_rate,
        estimate_inference as estimate_inference,
        estimate_open_loop as estimate_open_loop,
        fast_mode_band as fast_mode_band,
        get_hardware as get_hardware,
        get_model as get_model,
        get_speculative_preset as get_speculative_preset,
        hardware_from_toml as hardware_from_toml,
        model_from_hf_config as model_from_hf_config,
        plan_fast_mode as plan_fast_mode,
        step_time_function as step_time_function,
    )
    from voicebudget.telemetry import (
        BudgetEvent as BudgetEvent,
        PrometheusMetrics as PrometheusMetrics,
        Telemetry as Telemetry,
    )
    from voicebudget.traces import (
        Anomaly as Anomaly,
        ReadOptions as ReadOptions,
        TraceCheck as TraceCheck,
        TraceFit as TraceFit,
        TraceTable as TraceTable,
        TraceTurn as TraceTurn,
        check_traces as check_traces,
        detect_format as detect_format,
        fit_traces as fit_traces,
        read_trace as read_trace,
        read_traces as read_traces,
    )
    from voicebudget.tuning import (
        Candidate as Candidate,
        SearchSpace as SearchSpace,
        TuneResult as TuneResult,
        pareto_front as pareto_front,
        tune_council as tune_council,
    )

__version__ = "0.1.0"

# Module -> the public names it defines. Imported on first use (PEP 562), so that
# ``import voicebudget`` (and the pytest plugin, which every pytest run loads) stays cheap.
_PUBLIC: dict[str, tuple[str, ...]] = {
    "voicebudget._algebra": (
        "AllOf",
        "Choice",
        "Evaluation",
        "KOfN",
        "Race",
        "Sampler",
        "Sequence",
        "evaluate",
        "stage_rng",
    ),
    "voicebudget._budget": ("Budget",),
    "voicebudget._distributions": (
        "Distribution",
        "Empirical",
        "Fixed",
        "LogNormal",
        "Mixture",
        "Normal",
        "Shifted",
        "Uniform",
    ),
    "voicebudget._errors": (
        "BudgetExceeded",
        "ImplausibleValue",
        "ModelError",
        "ScenarioError",
        "VoiceBudgetError",
    ),
    "voicebudget._observed": ("Observed",),
    "voicebudget._report": (
        "LatencyStats",
        "Report",
        "StagePart",
        "StageReport",
        "build_report",
    ),
    "voicebudget._scenario": (
        "PipelineSpec",
        "Scenario",
        "load_scenario",
        "parse_scenario",
        "scenario_json_schema",
    ),
    "voicebudget._simulate": (
        "RunResult",
        "run_scenarios",
        "simulate",
        "simulate_pipeline",
    ),
    "voicebudget._stage_models": (
        "ColdConnection",
        "LLMStage",
        "NetworkStage",
        "TTSStage",
        "TokenRange",
    ),
    "voicebudget._barge_in": ("BARGE_IN_BUDGET_MS", "BARGE_IN_STAGES", "BargeInTurn"),
    "voicebudget._stages": ("StageSpec",),
    "voicebudget._tool_turn": ("ToolTurn",),
    "voicebudget._voice_turn": (
        "STAGE_ORDER",
        "VoiceTurn",
    ),
    "voicebudget.capacity": (
        "CallTraffic",
        "CapacityPoint",
        "CapacityResult",
        "DeploymentCapacity",
        "HostedDeployment",
        "LoadModel",
        "ModelledDeployment",
        "Overloaded",
        "plan_capacity",
    ),
    "voicebudget.checker": (
        "BudgetGuard",
        "ExcludedTurn",
        "FillerPolicy",
        "FillerReport",
        "FillerResult",
        "GuardDecision",
        "GuardPolicy",
        "GuardedTurn",
        "MedianPolicy",
        "RecorderReport",
        "StageSpan",
        "StageTimer",
        "TimeoutPolicy",
        "Turn",
        "TurnRecorder",
        "evaluate_fillers",
        "guard_report",
    ),
    "voicebudget.councils": (
        "Aggregator",
        "CacheResult",
        "Council",
        "CouncilResult",
        "Member",
        "Preemptive",
        "PreemptiveResult",
        "QualityResult",
        "ReplyCache",
        "Router",
        "Scorer",
        "UserTime",
        "break_even_false_hit_rate",
        "evaluate_cache",
        "evaluate_council",
        "evaluate_preemptive",
        "fit_answer_space",
        "load_council",
        "majority_accuracy",
        "plurality_accuracy",
        "run_council",
        "weighted_plurality_accuracy",
        "weighted_vote_accuracy",
    ),
    "voicebudget.inference": (
        "APIStage",
        "ChipPrice",
        "Deployment",
        "FastModeBand",
        "FastModeBandRow",
        "FastModeComparison",
        "FastModePlan",
        "FastTier",
        "GPUCalibration",
        "GPUStage",
        "HARDWARE",
        "Hardware",
        "InferenceResult",
        "MODELS",
        "ModelArch",
        "OpenLoopResult",
        "SPECULATIVE_PRESETS",
        "SpeculativeDecoding",
        "SpeculativePreset",
        "WaferStage",
        "Workload",
        "compare_policies",
        "default_step_budget",
        "estimate_at_arrival_rate",
        "estimate_inference",
        "estimate_open_loop",
        "fast_mode_band",
        "get_hardware",
        "get_model",
        "get_speculative_preset",
        "hardware_from_toml",
        "model_from_hf_config",
        "plan_fast_mode",
        "step_time_function",
    ),
    "voicebudget.telemetry": ("BudgetEvent", "PrometheusMetrics", "Telemetry"),
    "voicebudget.traces": (
        "Anomaly",
        "ReadOptions",
        "TraceCheck",
        "TraceFit",
        "TraceTable",
        "TraceTurn",
        "check_traces",
        "detect_format",
        "fit_traces",
        "read_trace",
        "read_traces",
    ),
    "voicebudget.tuning": (
        "Candidate",
        "SearchSpace",
        "TuneResult",
        "pareto_front",
        "tune_council",
    ),
}

_LAZY = lazy_table(_PUBLIC)

__all__ = sorted(_LAZY)

# the stage union's forward references (combinators, councils) are completed by _stages
__getattr__ = lazy_getattr("voicebudget", _LAZY, globals(), first="voicebudget._stages")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
