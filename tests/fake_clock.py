"""A settable nanosecond clock for exact figures in checker and guard tests (imported by the tests)."""

from __future__ import annotations

MS = 1_000_000
"""Nanoseconds per millisecond."""


class FakeClock:
    """A settable ns clock for exact figures."""

    def __init__(self) -> None:
        self.now_ns = 0

    def __call__(self) -> int:
        return self.now_ns

    def at_ms(self, ms: float) -> None:
        self.now_ns = round(ms * MS)
