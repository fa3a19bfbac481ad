"""A CapacityScheduler user's limit where no document reports it: in a labelled partition
(`amtuner.monitor.restqueues` reads the rest of a leaf's users)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from amtuner.model import user_limit_mb

Triple = tuple[int, int, int]
"""A leaf's capacity, use and maximum in one partition, in MB."""


def user_limit_there(queue: Mapping[str, Any], users: list[Any], there: Triple) -> int | None:
    """A CS leaf's user limit in a labelled partition, which no document reports:
    ``computeUserLimit`` on its capacity, use and maximum there (``there``), its active users
    (``isActive``), ``userLimit`` and ``userLimitFactor``; to the MB, as the document carries
    no minimum allocation to round to. None where a figure is missing."""
    percent, factor = queue.get("userLimit"), queue.get("userLimitFactor")
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (percent, factor)):
        return None
    active = sum(1 for u in users if isinstance(u, Mapping) and u.get("isActive"))
    return user_limit_mb(
        *there, 1, active_users=active,
        user_limit_percent=float(percent), user_limit_factor=float(factor),  # type: ignore[arg-type]
    )  # fmt: skip
