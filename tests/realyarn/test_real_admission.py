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
    batch = admission.batch(SUBMITTED)
    expected = admission.simulated(rm.spec, a, batch, am_mb)
    assert 1 <= expected.admitted < SUBMITTED, expected
    assert expected.by_queue == {"root.default": expected.admitted}
    got = admission.real(requests.Session(), rm.url, str(rm.markers), batch, am_mb)
    assert got == expected


def test_users_queues_get_their_own_am_limits_on_the_real_rm_as_in_the_simulator(
    fair_users_rm: RealRM,
) -> None:
    """Hadoop's defaults (``user-as-default-queue`` and ``allow-undeclared-pools`` true): apps
    that name no queue go to root.<user> (``QueuePlacementPolicy.fromConfiguration``), queues
    made for them that take queueMaxAMShareDefault; an app that names root.default goes there.
    Three active leaves share the 16 GB: each admits AMs up to 0.5 x 16 GB / 3 = 2730 MB, two
    of 1 GB. The batch goes in at A = 0 and A rises once the RM knows every app, so no AM is
    placed under the shares of a half-submitted batch."""
    batch = [
        *(admission.Holder("alice") for _ in range(3)),
        *(admission.Holder("bob") for _ in range(3)),
        *(admission.Holder("carol", "root.default") for _ in range(2)),
    ]
    expected = admission.simulated(fair_users_rm.spec, 0.5, batch, 1024)
    assert expected.by_queue == {"root.alice": 2, "root.bob": 2, "root.default": 2}
    set_am_share(fair_users_rm, 0.0)
    got = admission.real(
        requests.Session(), fair_users_rm.url, str(fair_users_rm.markers), batch, 1024,
        release=lambda: set_am_share(fair_users_rm, 0.5),
    )  # fmt: skip
    assert got == expected


def test_without_undeclared_pools_apps_land_in_root_default_on_the_real_rm_as_in_the_simulator(
    fair_rm: RealRM,
) -> None:
    """``user-as-default-queue`` and ``allow-undeclared-pools`` false (the harness's usual
    FairScheduler): the rules are specified (create false), then default. An app that names an
    undeclared queue and one that names none both run in root.default, beside one that names
    it."""
    batch = [
        admission.Holder("alice", "adhoc"),
        admission.Holder("alice"),
        admission.Holder("bob", "root.default"),
    ]
    expected = admission.simulated(fair_rm.spec, 0.5, batch, 1024)
    assert expected.by_queue == {"root.default": 3}
    got = admission.real(requests.Session(), fair_rm.url, str(fair_rm.markers), batch, 1024)
    assert got == expected
