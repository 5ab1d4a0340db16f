"""Tuning councils: search spaces, Pareto fronts, parallel evaluation (local processes, Dask)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicebudget._lazy import lazy_getattr, lazy_table

if TYPE_CHECKING:
    from voicebudget.tuning._pareto import (  # noqa: I001 - one statement per module, "X as X" re-exports
        pareto_front as pareto_front,
    )
    from voicebudget.tuning._space import (
        CacheSpec as CacheSpec,
        Constraints as Constraints,
        MemberChoice as MemberChoice,
        SearchSpace as SearchSpace,
    )
    from voicebudget.tuning._result import (
        AsWritten as AsWritten,
        Candidate as Candidate,
        TuneResult as TuneResult,
    )
    from voicebudget.tuning._tune import (
        as_written as as_written,
        load_search as load_search,
        rest_of_turn as rest_of_turn,
        tune_council as tune_council,
    )

# Module -> the public names it defines, imported on first use (PEP 562): importing this package
# costs nothing until a name is used (``voicebudget --help`` imports no numpy).
_PUBLIC: dict[str, tuple[str, ...]] = {
    "voicebudget.tuning._pareto": ("pareto_front",),
    "voicebudget.tuning._space": (
        "CacheSpec",
        "Constraints",
        "MemberChoice",
        "SearchSpace",
    ),
    "voicebudget.tuning._result": (
        "AsWritten",
        "Candidate",
        "TuneResult",
    ),
    "voicebudget.tuning._tune": (
        "as_written",
        "load_search",
        "rest_of_turn",
        "tune_council",
    ),
}

_LAZY = lazy_table(_PUBLIC)

__all__ = sorted(_LAZY)

__getattr__ = lazy_getattr("voicebudget.tuning", _LAZY, globals())


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
