"""Framework integrations: feed a running agent's turns into a :class:`~voicebudget.TurnRecorder`.

- :mod:`voicebudget.integrations.pipecat`: ``BudgetObserver``, a Pipecat observer
  (``pip install "voicebudget[pipecat]"``).
- :mod:`voicebudget.integrations.livekit`: ``BudgetHook``, attached to a LiveKit ``AgentSession``
  (``pip install "voicebudget[livekit]"``).

Each module imports its framework when it is imported; this package and :mod:`voicebudget` import
none. See docs/checker.md.
"""

from __future__ import annotations

__all__: list[str] = []
