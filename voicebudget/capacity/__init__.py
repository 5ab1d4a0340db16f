"""Capacity and price of a voice fleet: concurrent calls per deployment within budget, cost per call-minute.

See docs/capacity.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicebudget._lazy import lazy_getattr, lazy_table

if TYPE_CHECKING:
    from voicebudget._traffic import (  # noqa: I001 - one statement per module, "X as X" re-exports
        CallTraffic as CallTraffic,
    )
    from voicebudget.capacity._load import (
        HostedDeployment as HostedDeployment,
        LoadModel as LoadModel,
        ModelledDeployment as ModelledDeployment,
        OpenLoopLLM as OpenLoopLLM,
        Overloaded as Overloaded,
    )
    from voicebudget.capacity._plan import (
        DEFAULT_CAPACITY_SAMPLES as DEFAULT_CAPACITY_SAMPLES,
        CapacityPoint as CapacityPoint,
        CapacityResult as CapacityResult,
        DeploymentCapacity as DeploymentCapacity,
        deployments_from_options as deployments_from_options,
        deployments_from_scenario as deployments_from_scenario,
        find_capacity as find_capacity,
        plan_capacity as plan_capacity,
        plan_capacity_file as plan_capacity_file,
    )

# Module -> the public names it defines, imported on first use (PEP 562): importing this package
# costs nothing until a name is used (``voicebudget --help`` imports no numpy).
_PUBLIC: dict[str, tuple[str, ...]] = {
    "voicebudget._traffic": ("CallTraffic",),
    "voicebudget.capacity._load": (
        "HostedDeployment",
        "LoadModel",
        "ModelledDeployment",
        "OpenLoopLLM",
        "Overloaded",
    ),
    "voicebudget.capacity._plan": (
        "DEFAULT_CAPACITY_SAMPLES",
        "CapacityPoint",
        "CapacityResult",
        "DeploymentCapacity",
        "deployments_from_options",
        "deployments_from_scenario",
        "find_capacity",
        "plan_capacity",
        "plan_capacity_file",
    ),
}

_LAZY = lazy_table(_PUBLIC)

__all__ = sorted(_LAZY)

__getattr__ = lazy_getattr("voicebudget.capacity", _LAZY, globals())


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
