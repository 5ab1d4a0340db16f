"""The union of everything that can stand as a stage in a pipeline, chosen by ``kind``.

Adding a stage kind: write its model in its own module (a subclass of :class:`voicebudget._algebra.Stage`
with a ``kind`` literal and ``sample(rng, n) -> float64[n]``; one that holds stages declares them in
``children()``) and add it to :data:`StageSpec` here. A hardware kind is a
:class:`~voicebudget.inference.ModelledStage` subclass in its own ``inference/`` module, plus its entry here.
"""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field

from voicebudget import _algebra, _barge_in, _tool_turn
from voicebudget._algebra import AllOf, Choice, KOfN, Race, Sequence
from voicebudget._barge_in import BargeInTurn
from voicebudget._distributions import Empirical, Fixed, LogNormal, Mixture, Normal, Shifted, Uniform
from voicebudget._observed import Observed
from voicebudget._stage_models import LLMStage, NetworkStage, TTSStage
from voicebudget._tool_turn import ToolTurn
from voicebudget.councils import _config, _speculation
from voicebudget.councils._config import Council
from voicebudget.councils._speculation import Preemptive, ReplyCache
from voicebudget.inference._gpu_stage import GPUStage
from voicebudget.inference._stage import APIStage
from voicebudget.inference._wafer_stage import WaferStage

__all__ = ["StageSpec"]

StageSpec = Annotated[
    Union[  # noqa: UP007
        Fixed,
        Uniform,
        Normal,
        LogNormal,
        Empirical,
        Mixture,
        Shifted,
        Observed,
        LLMStage,
        TTSStage,
        NetworkStage,
        GPUStage,
        WaferStage,
        APIStage,
        Council,
        ReplyCache,
        Preemptive,
        ToolTurn,
        Sequence,
        AllOf,
        KOfN,
        Race,
        Choice,
        BargeInTurn,
    ],
    Field(discriminator="kind"),
]
"""A stage: a distribution, a stage model or a combinator of stages."""

# The kinds that hold stages name StageSpec in their annotations; their modules cannot import it (this
# module imports them), so it is given to them here, and pydantic resolves it when it builds them: on first
# use (``defer_build``), each once, instead of at import, where each rebuild walked the others again.
for _module in (_algebra, _barge_in, _tool_turn, _config, _speculation):
    _module.StageSpec = StageSpec  # type: ignore[attr-defined]
