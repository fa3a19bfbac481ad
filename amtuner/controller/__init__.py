"""Controllers: pure functions from (observation, state, settings, target) to (decision, state).

A policy never does I/O, reads a clock or logs, so the daemon, ``amtuner once`` and the simulator
share it and tests can replay any sequence of observations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from amtuner.config import ControllerSettings
from amtuner.controller import adaptive, paper
from amtuner.model import ControllerState, Decision, Observation

Policy = Callable[
    [Observation, ControllerState, ControllerSettings, str], tuple[Decision, ControllerState]
]
"""args: (observation, state, settings, target); target is GLOBAL_TARGET "" or a queue path."""

POLICIES: Mapping[str, Policy] = MappingProxyType(
    {"paper": paper.decide, "adaptive": adaptive.decide}
)
"""Every name ``controller.policy`` accepts (config.PolicyName must list the same)."""


def get_policy(name: str) -> Policy:
    """The policy called ``name``; ValueError (listing the known ones) for any other."""
    try:
        return POLICIES[name]
    except KeyError:
        known = ", ".join(sorted(POLICIES))
        raise ValueError(f"unknown controller policy {name!r}; known: {known}") from None
