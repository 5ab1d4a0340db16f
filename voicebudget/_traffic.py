"""Call traffic: what a fleet of concurrent voice calls asks of the LLM deployment.

A call is a conversation; each agent turn sends ``llm_requests_per_turn`` requests to the LLM (1 for
a plain reply, more with tool calls). The prompt grows turn by turn: the system prompt and tools
(``prompt_tokens_start``) plus what each turn adds to the history (``prompt_tokens_per_turn``). With
``calls`` concurrent calls the LLM receives

    request rate = calls x turns_per_call_minute x llm_requests_per_turn / 60   requests/s

and the prompt of a request is that of one of the call's turns, each equally likely: turn ``k``
(from 0) sends ``prompt_tokens_start + prompt_tokens_per_turn x k`` tokens.

Every default is an assumption (no published per-turn traffic figure for voice agents was found);
set yours, or read turn timing from your traces (``voicebudget check``).
"""

from __future__ import annotations

import math

from pydantic import Field

from voicebudget._model import DataModel

__all__ = ["CallTraffic"]


class CallTraffic(DataModel):
    """The traffic one voice call puts on the LLM.

    :param turns_per_call_minute: agent replies per minute of call, 0.01 (one in 100 minutes: fewer is
        not a conversation, and 5e-324 made the request rate 0, a division by zero) to 600. Default 6
        (assumption: a user turn of ~4 s, an agent turn of ~5 s and ~1 s of gaps).
    :param agent_speaking_share: share of call time the agent speaks (TTS audio streaming), in [0, 1].
        Default 0.5 (assumption). Reported as TTS streams in flight per call.
    :param llm_requests_per_turn: LLM requests per agent turn (> 1 with tool calls), 0.01 to 100. Default 1.
    :param call_minutes: mean call length, minutes (sets how far the prompt grows). Default 4
        (assumption).
    :param prompt_tokens_start: prompt of a call's first request (system prompt, tools). Default 1000.
    :param prompt_tokens_per_turn: tokens each turn adds to the history (user words, agent reply, tool
        results). Default 100 (assumption: ~40 spoken words each way at ~1.3 tokens/word).
    :param output_tokens: tokens generated per request; ``None``: the LLM stage's ``output_tokens``.
    :param prefix_caching: the server keeps a call's KV cache between its turns (vLLM automatic prefix
        caching, SGLang RadixAttention), so a request prefills only what the previous turn did not:
        ``prompt_tokens_per_turn`` (the first turn: its whole prompt). Default false. Approximation:
        the inference model then sees the prefilled tokens as the prompt, so attention KV reads and KV
        memory of the cached prefix are not charged (small for GQA models at these lengths).
    """

    turns_per_call_minute: float = Field(default=6.0, ge=0.01, le=600)
    agent_speaking_share: float = Field(default=0.5, ge=0, le=1)
    llm_requests_per_turn: float = Field(default=1.0, ge=0.01, le=100)
    call_minutes: float = Field(default=4.0, gt=0, le=24 * 60)
    prompt_tokens_start: int = Field(default=1000, ge=1, le=10_000_000)
    prompt_tokens_per_turn: int = Field(default=100, ge=0, le=1_000_000)
    output_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    prefix_caching: bool = False

    def request_rate_per_s(self, calls: float) -> float:
        """LLM requests per second from ``calls`` concurrent calls (>= 0)."""
        return calls * self.turns_per_call_minute * self.llm_requests_per_turn / 60.0

    @property
    def turns_per_call(self) -> int:
        """Agent turns in a mean call (at least 1)."""
        return max(1, math.ceil(self.turns_per_call_minute * self.call_minutes))

    @property
    def prompt_tokens_range(self) -> tuple[int, int]:
        """(first, last) prompt tokens over a mean call."""
        last = self.prompt_tokens_start + self.prompt_tokens_per_turn * (self.turns_per_call - 1)
        return self.prompt_tokens_start, last

    @property
    def prompt_tokens_by_turn(self) -> tuple[int, ...]:
        """Prompt tokens of each turn of a mean call (``turns_per_call`` values), each equally likely."""
        return tuple(self.prompt_tokens_start + self.prompt_tokens_per_turn * k for k in range(self.turns_per_call))

    @property
    def prefill_tokens_by_turn(self) -> tuple[int, ...]:
        """Tokens each turn's request prefills: its whole prompt, or with ``prefix_caching`` only the
        new ones (the first turn: all of its prompt)."""
        prompts = self.prompt_tokens_by_turn
        if not self.prefix_caching:
            return prompts
        return (prompts[0], *(max(1, self.prompt_tokens_per_turn) for _ in prompts[1:]))

    @property
    def mean_prompt_tokens(self) -> float:
        """Mean prompt over a call's requests, tokens."""
        low, high = self.prompt_tokens_range
        return (low + high) / 2
