"""One time limit for the fuzzers (tests/test_fuzz_inputs.py and benchmarks/fuzz_inputs.py): an input
that runs past it raises :class:`Hang` in the main thread (SIGALRM, so POSIX only; the caller checks
``hasattr(signal, "setitimer")``)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Hang", "time_limit"]


class Hang(Exception):
    """An input ran past the time limit."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`Hang` if the block runs longer than ``seconds`` (wall clock); the previous SIGALRM
    handler and timer state are restored on exit."""

    def on_alarm(signum: int, frame: Any) -> None:
        raise Hang(f"still running after {seconds:g} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
