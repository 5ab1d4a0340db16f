"""The trace commands' choices and defaults (formats, fit methods, ``stop_secs``, ``absurd_ms``), in a
module that loads no reader: ``voicebudget --help`` builds ``check``/``fit``'s options from these
without pydantic, YAML or the readers' patterns.

:data:`FORMATS` is the reader table's names (:data:`voicebudget.traces.READERS`) written out; a test
checks that the two agree (tests/test_trace_readers.py).
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["ABSURD_MS", "DEFAULT_STOP_SECS", "DETECT_HEAD_CHARS", "FIT_METHODS", "FORMATS", "FitMethod"]

FORMATS: tuple[str, ...] = ("vapi", "deepgram-agent", "retell", "livekit", "otel", "livekit-history", "pipecat")
"""The trace formats :func:`~voicebudget.traces.read_trace` knows: the names of
:data:`~voicebudget.traces.READERS`, in detection order."""

ABSURD_MS = 20_000.0
"""Default ceiling for one stage, ms. A stage longer than 20 s is not a latency but a value measured
from a stale anchor (e.g. a 200 s transcription delay timed from an earlier utterance); such values
are flagged. Endpointing waits top out at a few seconds (LiveKit's ``max_endpointing_delay`` default
3 s, livekit-agents ``voice/agent_session.py``), so 20 s leaves wide room. Change it with the
``absurd_ms`` parameter of the readers, :func:`~voicebudget.traces.check` and ``fit``."""

DEFAULT_STOP_SECS = 0.2
"""Pipecat ``VADParams.stop_secs`` default, s (pipecat ``src/pipecat/audio/vad/vad_analyzer.py``)."""

FitMethod = Literal["joint", "empirical", "lognormal"]
"""How :func:`~voicebudget.traces.fit` turns observed stages into distributions (the default first)."""
FIT_METHODS: tuple[str, ...] = get_args(FitMethod)
"""The fit methods, the default first (the CLI's ``fit --method`` choices)."""

DETECT_HEAD_CHARS = 65_536
"""Detection looks at this many characters from the start of a file, never more (a detector's cost
is bounded whatever the file's size)."""
