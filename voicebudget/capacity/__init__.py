"""Capacity and price of a voice fleet: concurrent calls per deployment within budget, cost per call-minute.

See docs/capacity.md.
"""

from __future__ import annotations

from voicebudget._traffic import CallTraffic
from voicebudget.capacity._load import HostedDeployment, LoadModel, ModelledDeployment, OpenLoopLLM, Overloaded
from voicebudget.capacity._plan import (
    DEFAULT_CAPACITY_SAMPLES,
    CapacityPoint,
    CapacityResult,
    DeploymentCapacity,
    deployments_from_options,
    deployments_from_scenario,
    find_capacity,
    plan_capacity,
    plan_capacity_file,
)

__all__ = [
    "DEFAULT_CAPACITY_SAMPLES",
    "CallTraffic",
    "CapacityPoint",
    "CapacityResult",
    "DeploymentCapacity",
    "HostedDeployment",
    "LoadModel",
    "ModelledDeployment",
    "OpenLoopLLM",
    "Overloaded",
    "deployments_from_options",
    "deployments_from_scenario",
    "find_capacity",
    "plan_capacity",
    "plan_capacity_file",
]
