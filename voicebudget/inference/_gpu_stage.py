"""The ``gpu`` hardware kind's stage: an LLM served on GPUs (HBM), modelled by the iteration-level
roofline of :mod:`voicebudget.inference._gpu` (through :func:`~voicebudget.estimate_inference`).

Under load, capacity planning sends it Poisson arrivals through the chunked-prefill scheduler model
(:func:`~voicebudget.inference.estimate_open_loop`); a turn waits for the running batch step.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from voicebudget.inference._stage import ModelledStage, QueueModel
from voicebudget.inference._types import Deployment

__all__ = ["GPUStage"]


class GPUStage(ModelledStage):
    """An LLM served on GPUs, modelled (see :func:`voicebudget.estimate_inference`).

    :param model: catalog id (``llama-3.1-70b``) or an inline :class:`ModelArch` table.
    :param hardware: catalog id (``h100-sxm``) or an inline :class:`Hardware` table.
    :param chips: chips (default: the fewest that fit); ``tensor_parallel`` defaults to the largest degree
        that divides them and splits the attention heads (see :class:`Deployment`).
    :param concurrency: requests in flight on the deployment (the batch policy).
    :param prompt_tokens: prompt per turn (int, ``{low, high}`` or observed counts).
    :param output_tokens: mean reply length (sets other users' prefill load per step).
    :param first_phrase_tokens: tokens until the first phrase the TTS can speak.
    :param jitter_cv: per-turn log-normal noise on TTFT and TPOT (module docstring).
    :param prefill_chunk_tokens: the server's step budget, tokens (``Deployment.prefill_chunk_tokens``; default the
        serving stacks' default for the chip, :func:`voicebudget.default_step_budget`).
    :param chunked_prefill: ``False`` for a server that runs prompts whole in prefill-only steps
        (``Deployment.chunked_prefill``: vLLM V0 with chunked prefill off).
    :param scheduler_steps: decode steps per scheduler call (``Deployment.scheduler_steps``: vLLM's multi-step
        scheduling).
    """

    kind: Literal["gpu"] = "gpu"
    memory_kind: ClassVar[str] = "hbm"
    queue_model: ClassVar[QueueModel] = "open_loop"
    waits_for_batch_step: ClassVar[bool] = True
    tensor_parallel: int | None = Field(default=None, ge=1)
    prefill_chunk_tokens: int | None = Field(default=None, ge=16)
    chunked_prefill: bool = True
    scheduler_steps: int = Field(default=1, ge=1, le=1024)

    def deployment(self) -> Deployment:
        """The :class:`Deployment` these fields describe."""
        return Deployment(
            chips=self.chips,
            tensor_parallel=self.tensor_parallel,
            precision=self.precision,
            concurrency=self.concurrency,
            prefill_chunk_tokens=self.prefill_chunk_tokens,
            chunked_prefill=self.chunked_prefill,
            scheduler_steps=self.scheduler_steps,
        )
