"""Councils of small models, speculative replies, and the time cost of errors.

Council configurations (:class:`Council`, ``councils/*.toml``), their latency from the latency
algebra, quality under correlated errors, cost per turn and expected user time per completed request
(:func:`evaluate_council`); reply caches and preemptive generation (:class:`ReplyCache`,
:class:`Preemptive`). See docs/councils.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicebudget._lazy import lazy_getattr, lazy_table

if TYPE_CHECKING:
    from voicebudget.councils._calibrate import (  # noqa: I001 - one statement per module, "X as X" re-exports
        AnswerSpaceFit as AnswerSpaceFit,
        fit_answer_space as fit_answer_space,
    )
    from voicebudget.councils._config import (
        Aggregator as Aggregator,
        Council as Council,
        Member as Member,
        Router as Router,
        Scorer as Scorer,
        Topology as Topology,
        UserTime as UserTime,
        load_council as load_council,
    )
    from voicebudget.councils._evaluate import (
        CouncilResult as CouncilResult,
        QualityResult as QualityResult,
        evaluate_council as evaluate_council,
        run_council as run_council,
    )
    from voicebudget.councils._latency import (
        CouncilSamples as CouncilSamples,
        sample_council as sample_council,
    )
    from voicebudget.councils._plurality import (
        AnswerSpace as AnswerSpace,
        plurality_accuracy as plurality_accuracy,
        weighted_plurality_accuracy as weighted_plurality_accuracy,
    )
    from voicebudget.councils._quality import (
        cascade_accuracy as cascade_accuracy,
        correct_count_pmf as correct_count_pmf,
        log_odds_weights as log_odds_weights,
        majority_accuracy as majority_accuracy,
        majority_cap as majority_cap,
        router_accuracy as router_accuracy,
        weighted_vote_accuracy as weighted_vote_accuracy,
    )
    from voicebudget.councils._speculation import (
        CacheResult as CacheResult,
        Preemptive as Preemptive,
        PreemptiveResult as PreemptiveResult,
        ReplyCache as ReplyCache,
        break_even_false_hit_rate as break_even_false_hit_rate,
        evaluate_cache as evaluate_cache,
        evaluate_preemptive as evaluate_preemptive,
    )

# Module -> the public names it defines, imported on first use (PEP 562): importing this package
# costs nothing until a name is used (``voicebudget --help`` imports no numpy).
_PUBLIC: dict[str, tuple[str, ...]] = {
    "voicebudget.councils._calibrate": (
        "AnswerSpaceFit",
        "fit_answer_space",
    ),
    "voicebudget.councils._config": (
        "Aggregator",
        "Council",
        "Member",
        "Router",
        "Scorer",
        "Topology",
        "UserTime",
        "load_council",
    ),
    "voicebudget.councils._evaluate": (
        "CouncilResult",
        "QualityResult",
        "evaluate_council",
        "run_council",
    ),
    "voicebudget.councils._latency": (
        "CouncilSamples",
        "sample_council",
    ),
    "voicebudget.councils._plurality": (
        "AnswerSpace",
        "plurality_accuracy",
        "weighted_plurality_accuracy",
    ),
    "voicebudget.councils._quality": (
        "cascade_accuracy",
        "correct_count_pmf",
        "log_odds_weights",
        "majority_accuracy",
        "majority_cap",
        "router_accuracy",
        "weighted_vote_accuracy",
    ),
    "voicebudget.councils._speculation": (
        "CacheResult",
        "Preemptive",
        "PreemptiveResult",
        "ReplyCache",
        "break_even_false_hit_rate",
        "evaluate_cache",
        "evaluate_preemptive",
    ),
}

_LAZY = lazy_table(_PUBLIC)

__all__ = sorted(_LAZY)

# the stage union's forward references (members and wrapped paths are stages) are completed by _stages
__getattr__ = lazy_getattr("voicebudget.councils", _LAZY, globals(), first="voicebudget._stages")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
