"""Memory between runs: pin a baseline of measured turns, compare a new run with it (bootstrap intervals over
turns or calls), and check a prediction against what was measured. See docs/ci.md.

Names are imported on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicebudget._lazy import lazy_getattr, lazy_table

if TYPE_CHECKING:
    from voicebudget._measured import (  # noqa: I001 - one statement per module, "X as X" re-exports
        TurnSet as TurnSet,
    )
    from voicebudget.baseline._compare import (
        Comparison as Comparison,
        Row as Row,
        SetComparison as SetComparison,
        compare_sets as compare_sets,
    )
    from voicebudget.baseline._settings import (
        CompareSettings as CompareSettings,
        Tolerance as Tolerance,
    )
    from voicebudget.baseline._predict import (
        PredictedSet as PredictedSet,
        Prediction as Prediction,
        PredictionRow as PredictionRow,
        SimulatedChange as SimulatedChange,
        check_prediction as check_prediction,
        load_prediction as load_prediction,
        simulate_change as simulate_change,
    )
    from voicebudget.baseline._files import (
        compare_files as compare_files,
        load_budget as load_budget,
        pin_baseline as pin_baseline,
        read_turn_sets as read_turn_sets,
        write_baseline as write_baseline,
    )

_PUBLIC: dict[str, tuple[str, ...]] = {
    "voicebudget._measured": ("TurnSet",),
    "voicebudget.baseline._compare": ("Comparison", "Row", "SetComparison", "compare_sets"),
    "voicebudget.baseline._settings": ("CompareSettings", "Tolerance"),
    "voicebudget.baseline._predict": (
        "PredictedSet",
        "Prediction",
        "PredictionRow",
        "SimulatedChange",
        "check_prediction",
        "load_prediction",
        "simulate_change",
    ),
    "voicebudget.baseline._files": ("compare_files", "load_budget", "pin_baseline", "read_turn_sets", "write_baseline"),
}

_LAZY = lazy_table(_PUBLIC)

__all__ = sorted(_LAZY)

__getattr__ = lazy_getattr("voicebudget.baseline", _LAZY, globals())


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
