"""The monitor against a live RM: its REST API and its /cluster page say the same."""

from __future__ import annotations

import requests

from amtuner.monitor import RMClient
from amtuner.realyarn import RealRM
from tests.realyarn.conftest import metrics, set_am_share, share_for, submit_holders, wait_for


def test_rest_and_web_ui_give_the_same_figures(real_rm: RealRM) -> None:
    """k apps hold AMs, two wait behind the AM limit: both transports read P, R and memory as
    the RM's own metrics say, and the REST queue figures show the AMs' memory."""
    set_am_share(real_rm, share_for(real_rm, 3))
    submit_holders(real_rm, 5)
    wait_for(lambda: metrics(real_rm)["appsRunning"] == 3, 60, "3 AMs to register")
    session = requests.Session()
    rest = RMClient([real_rm.url], session, web_ui_fallback=False).observe(["root.default"])
    web = RMClient([real_rm.url], session)._observe_webui(
        real_rm.url.rstrip("/"), (), rest.time, why=None  # type: ignore[arg-type]
    )
    raw = metrics(real_rm)
    assert rest.source.startswith("rest") and web.source.startswith("webui")
    assert rest.scheduler is web.scheduler is real_rm.spec.scheduler
    for obs in (rest, web):
        assert (obs.pending_apps, obs.running_apps) == (raw["appsPending"], raw["appsRunning"])
        assert (obs.memory_used_mb, obs.memory_total_mb) == (
            raw["allocatedMB"], raw["totalMB"])
    assert rest.pending_apps == 2 and rest.am_memory_used_mb == 3 * 1024
    leaf = rest.queue("root.default")
    assert leaf is not None and leaf.running_apps == 3 and leaf.am_memory_used_mb == 3 * 1024
