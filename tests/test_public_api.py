"""The public surface: everything importable from ``voicebudget`` and nothing by accident."""

from __future__ import annotations

import voicebudget


def test_all_is_sorted_and_importable() -> None:
    names = voicebudget.__all__
    assert names == sorted(names), "keep __all__ sorted"
    for name in names:
        assert hasattr(voicebudget, name), name


def test_public_objects_live_in_private_modules_or_subpackages() -> None:
    for name in voicebudget.__all__:
        obj = getattr(voicebudget, name)
        if name.isupper() or name in {"Distribution", "PipelineSpec", "StageSpec"}:
            continue  # constants and typing aliases (Annotated unions) have no home module
        assert obj.__module__.startswith("voicebudget."), (name, obj.__module__)


def test_exception_tree() -> None:
    assert issubclass(voicebudget.ScenarioError, voicebudget.VoiceBudgetError)
    assert issubclass(voicebudget.ModelError, voicebudget.VoiceBudgetError)
    assert issubclass(voicebudget.BudgetExceeded, voicebudget.VoiceBudgetError)
