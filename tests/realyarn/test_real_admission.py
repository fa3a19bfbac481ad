"""The number of AMs the real RM admits under its AM limit is the number the simulator admits.

Issue 14's bar for the AM-limit scenarios: exact equality, counted as Hadoop counts it (apps
holding their AM container), against the simulator's own count for the same batch and cluster
shape, never against a number written here.
"""

from __future__ import annotations

import pytest
import requests

from amtuner.realyarn import RealRM, admission
from tests.realyarn.conftest import set_am_share

SUBMITTED = 6

CASES = [
    # scheduler, A, AM size asked (MB): each limit holds fewer AMs than are submitted
    ("capacity", 0.1, 2048),
    ("capacity", 0.3, 1536),
    ("fair", 0.3, 2048),
    ("fair", 0.5, 1536),
]


@pytest.mark.parametrize("kind, a, am_mb", CASES, ids=[f"{k}-{a:g}-{m}" for k, a, m in CASES])
def test_the_real_rm_admits_as_many_ams_as_the_simulator(
    request: pytest.FixtureRequest, kind: str, a: float, am_mb: int
) -> None:
    """Six apps that hold their AM are submitted at once. CapacityScheduler: apps are activated
    while their AMs fit max(guarantee, limit) x maximum-am-resource-percent, normalised up to
    the minimum allocation (``LeafQueue.activateApplications``), the first always; a 1536 MB AM
    counts as the 2048 MB it is normalised to. FairScheduler: an AM is placed while the queue's
    AM usage with it fits maxAMShare x its fair share, rounded up (``FSLeafQueue.canRunAppAM``,
    3.x; the vcore side from what is free). The real count, once settled, equals the
    simulator's, and the limit binds (fewer than six)."""
    rm: RealRM = request.getfixturevalue(f"{kind}_rm")
    set_am_share(rm, a)
    expected = admission.simulated(rm.spec, a, SUBMITTED, am_mb)
    assert 1 <= expected.admitted < SUBMITTED, expected
    got = admission.real(requests.Session(), rm.url, str(rm.markers), SUBMITTED, am_mb)
    assert got == expected
