from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent

# Property tests draw the same examples on every run (a CI failure is reproducible, never a lucky
# draw); set HYPOTHESIS_PROFILE=explore locally to search new examples.
settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


@pytest.fixture
def root() -> Path:
    """The repository root."""
    return ROOT
