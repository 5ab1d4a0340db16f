"""The ``wafer`` hardware kind's stage: an LLM on SRAM-resident chips (Cerebras WSE-3, Groq LPU), modelled
per layer and hop by :mod:`voicebudget.inference._wafer` (through :func:`~voicebudget.estimate_inference`),
with the provider's hosted path added by default.

Under load, capacity planning puts it at the concurrency Little's law gives (no scheduler model).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from voicebudget._distributions import Distribution, LogNormal
from voicebudget.inference._catalog import get_hardware
from voicebudget.inference._stage import FloatArray, ModelledStage, WaferPath
from voicebudget.inference._types import Deployment

__all__ = ["WaferStage"]


class WaferStage(ModelledStage):
    """An LLM on SRAM-resident chips (Cerebras WSE-3 ``wse-3``, Groq ``groq-lpu``), modelled.

    Same fields as :class:`GPUStage` without tensor parallelism; ``chips`` defaults to the fewest
    whose SRAM holds the model.

    The model gives chip time. These chips are mostly reached through their provider's API, so on a chip
    with a measured hosted path (``Hardware.hosted``: ``wse-3``, ``groq-lpu``) the stage adds that path by
    default: a log-normal network + front-end + queueing overhead per turn, drawn independently of the chip
    time and added to it.

    :param path: ``"hosted"`` (the default on a chip with a hosted path, or when ``hosted_overhead`` is
        given) or ``"on-prem"``: chip time only (a dedicated deployment next to the agent, or the API path
        modelled as a stage of its own).
    :param hosted_overhead: your own overhead distribution (any distribution kind, ms), replacing the
        catalog's; it implies ``path = "hosted"``.
    :param software: the vendor software generation of the chip timings (``voicebudget hardware`` lists
        them, e.g. ``"2024-08"`` for Cerebras' launch software); default the latest.
    """

    kind: Literal["wafer"] = "wafer"
    memory_kind: ClassVar[str] = "sram"
    plausible_as: ClassVar[Mapping[str, str]] = {"hosted_overhead": "network"}
    carried_fields: ClassVar[tuple[str, ...]] = (*ModelledStage.carried_fields, "path", "hosted_overhead")
    path: WaferPath | None = None
    hosted_overhead: Distribution | None = None
    software: str | None = Field(default=None, min_length=1, max_length=40)

    def deployment(self) -> Deployment:
        """The :class:`Deployment` these fields describe."""
        return Deployment(
            chips=self.chips, precision=self.precision, concurrency=self.concurrency, software=self.software
        )

    @field_validator("hosted_overhead", mode="before")
    @classmethod
    def _overhead_is_a_table(cls, value: object) -> object:
        if isinstance(value, (bool, int, float, str)):  # a bare number was refused as "a valid dictionary"
            raise ValueError(
                f'give a distribution (ms), e.g. {{ kind = "fixed", value_ms = 50 }} or '
                f'{{ kind = "lognormal", p50_ms = 180, p95_ms = 320 }}, got {value!r}'
            )
        return value

    @model_validator(mode="after")
    def _path_known(self) -> WaferStage:
        if self.path == "on-prem" and self.hosted_overhead is not None:
            raise ValueError(
                'hosted_overhead is the hosted path\'s overhead: give path = "hosted" (or leave path '
                "out), or drop hosted_overhead for chip time only"
            )
        if self.path == "hosted" and self.hosted_overhead is None and get_hardware(self.hardware).hosted is None:
            raise ValueError(
                f'path = "hosted": {get_hardware(self.hardware).name} has no measured hosted path; give '
                'hosted_overhead (a distribution, ms) or path = "on-prem" for chip time only'
            )
        return self

    @property
    def resolved_path(self) -> WaferPath:
        """``path`` as given, else ``"hosted"`` when the chip has a hosted path or an overhead is given."""
        if self.path is not None:
            return self.path
        hosted = self.hosted_overhead is not None or get_hardware(self.hardware).hosted is not None
        return "hosted" if hosted else "on-prem"

    def overhead(self) -> Distribution | None:
        """The hosted path's overhead distribution (ms), ``None`` on the on-prem path."""
        if self.resolved_path == "on-prem":
            return None
        if self.hosted_overhead is not None:
            return self.hosted_overhead
        hosted = get_hardware(self.hardware).hosted
        assert hosted is not None  # guarded by _path_known
        return LogNormal(p50_ms=hosted.overhead_p50_ms, p95_ms=hosted.overhead_p95_ms)

    def path_note(self) -> str:
        """One line saying what the stage's samples include (shown by ``voicebudget run``)."""
        if self.resolved_path == "on-prem":
            return 'chip time only (path = "on-prem": no network or provider overhead added)'
        if self.hosted_overhead is not None:
            return "hosted path added: your hosted_overhead distribution on top of chip time"
        hosted = get_hardware(self.hardware).hosted
        assert hosted is not None
        return (
            f"hosted path added: {hosted.provider} network + overhead, log-normal p50 "
            f"{hosted.overhead_p50_ms:g} / p95 {hosted.overhead_p95_ms:g} ms on top of chip time "
            '(path = "on-prem" for chip time only)'
        )

    def hosted_path(self) -> tuple[WaferPath, str]:
        """``(resolved_path, path_note())``: hosted or on-prem, and the sentence ``run`` prints."""
        return self.resolved_path, self.path_note()

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        """Time to the first speakable phrase per turn, ``float64[n]`` ms: chip time, plus the hosted
        path's overhead on the hosted path (drawn after the chip time, so both paths share those draws)."""
        out = super().sample(rng, n)
        extra = self.overhead()
        if extra is not None:
            out = out + extra.sample(rng, n)
        return out
