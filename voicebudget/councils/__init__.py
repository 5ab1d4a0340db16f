"""Councils of small models, speculative replies, and the time cost of errors.

Council configurations (:class:`Council`, ``councils/*.toml``), their latency from the latency
algebra, quality under correlated errors, cost per turn and expected user time per completed request
(:func:`evaluate_council`); reply caches and preemptive generation (:class:`ReplyCache`,
:class:`Preemptive`). See docs/councils.md.
"""

from __future__ import annotations

from voicebudget.councils._calibrate import AnswerSpaceFit, fit_answer_space
from voicebudget.councils._config import Aggregator, Council, Member, Router, Scorer, Topology, UserTime, load_council
from voicebudget.councils._evaluate import CouncilResult, QualityResult, evaluate_council, run_council
from voicebudget.councils._latency import CouncilSamples, sample_council
from voicebudget.councils._plurality import AnswerSpace, plurality_accuracy, weighted_plurality_accuracy
from voicebudget.councils._quality import (
    cascade_accuracy,
    correct_count_pmf,
    log_odds_weights,
    majority_accuracy,
    majority_cap,
    router_accuracy,
    weighted_vote_accuracy,
)
from voicebudget.councils._speculation import (
    CacheResult,
    Preemptive,
    PreemptiveResult,
    ReplyCache,
    break_even_false_hit_rate,
    evaluate_cache,
    evaluate_preemptive,
)

__all__ = [
    "Aggregator",
    "AnswerSpace",
    "AnswerSpaceFit",
    "CacheResult",
    "Council",
    "CouncilResult",
    "CouncilSamples",
    "Member",
    "Preemptive",
    "PreemptiveResult",
    "QualityResult",
    "ReplyCache",
    "Router",
    "Scorer",
    "Topology",
    "UserTime",
    "break_even_false_hit_rate",
    "cascade_accuracy",
    "correct_count_pmf",
    "evaluate_cache",
    "evaluate_council",
    "evaluate_preemptive",
    "fit_answer_space",
    "load_council",
    "log_odds_weights",
    "majority_accuracy",
    "majority_cap",
    "plurality_accuracy",
    "router_accuracy",
    "run_council",
    "sample_council",
    "weighted_plurality_accuracy",
    "weighted_vote_accuracy",
]

# Complete the stage union's forward references (combinators, councils, caches) for users who
# import this sub-package before anything else.
import voicebudget._stages  # noqa: E402, F401, I001
