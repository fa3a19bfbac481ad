"""FairScheduler arithmetic on plain values, so tests check it against worked examples directly.

The water-filling of ``ComputeFairShares`` and the AM limit of ``FSLeafQueue`` (yarn-facts §2):
maxAMShare × the fair share, with the zero-fair-share fallback of Hadoop 2.9+/3.x, the
memory-only check of 2.7/2.8, and -1 disabling the check. `amtuner.sim.fair` applies them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def compute_fair_shares(total: int, queues: Sequence[tuple[float, int, int]]) -> list[int]:
    """Water-filling of ``total`` among (weight, min share, max share): every queue gets
    clamp(weight × R, min, max) for the R that uses it all (or all reach their max); a binary
    search on R as ``ComputeFairShares`` does."""
    if not queues:
        return []
    total = min(total, sum(mx for _, _, mx in queues))

    def used(ratio: float) -> float:
        return sum(min(max(w * ratio, mn), mx) for w, mn, mx in queues)

    hi = 1.0
    while used(hi) < total and hi < 1e18:
        hi *= 2.0
    lo = 0.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        if used(mid) < total:
            lo = mid
        else:
            hi = mid
    # the small nudge undoes float error (39.99999999 MB is a share of 40)
    return [int(min(max(w * hi, mn), mx) + 1e-6) for w, mn, mx in queues]


def max_am_resource(
    fair_share: tuple[int, int],
    max_share: tuple[int, int],
    available: tuple[int, int],
    max_am_share: float,
) -> tuple[int, int]:
    """maxAMShare × fair share, rounded up; a zero fair share in a resource is replaced by
    min(what the cluster has free, the queue's max share) (``computeMaxAMResource``)."""
    mem, vc = fair_share
    if mem == 0:
        mem = min(available[0], max_share[0])
    if vc == 0:
        vc = min(available[1], max_share[1])
    return math.ceil(mem * max_am_share), math.ceil(vc * max_am_share)


def max_am_memory_2_8(fair_share_mb: int, max_am_share: float) -> int:
    """Hadoop 2.7/2.8 ``FSLeafQueue.canRunAppAM``: maxAMShare x the fair share
    (``Resources.multiply`` truncates), compared on memory alone
    (``FairSharePolicy.checkIfAMResourceUsageOverLimit``): no vcores, no available fallback."""
    return int(fair_share_mb * max_am_share)


def can_run_am(
    am_used: tuple[int, int], am: tuple[int, int], limit: tuple[int, int], max_am_share: float
) -> bool:
    if abs(max_am_share + 1.0) < 0.0001:
        return True
    return am_used[0] + am[0] <= limit[0] and am_used[1] + am[1] <= limit[1]
