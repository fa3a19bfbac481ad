"""The monitor against a live RM: its REST API and its /cluster page say the same."""

from __future__ import annotations

import requests

from amtuner.monitor import RMClient
from amtuner.monitor.webui import parse_cluster_page
from amtuner.realyarn import RealRM
from tests.realyarn.conftest import metrics, set_am_share, share_for, submit_holders, wait_for


def test_rest_and_web_ui_give_the_same_figures(real_rm: RealRM) -> None:
    """Three apps hold AMs and two wait behind the AM limit: the REST observation and the page
    the web UI fallback reads (as Hadoop's Hamlet writer renders it) give P, R and memory as the
    RM's own metrics say, and the REST queue figures show the AMs' memory."""
    set_am_share(real_rm, share_for(real_rm, 3))
    submit_holders(real_rm, 5)
    # An app counts as pending only once the scheduler has added its attempt (QueueMetrics
    # .submitAppAttempt), which on a loaded machine can come after the first three register.
    wait_for(
        lambda: (m := metrics(real_rm))["appsRunning"] == 3 and m["appsPending"] == 2,
        60,
        "3 AMs to register and 2 apps to wait behind the AM limit",
    )
    session = requests.Session()
    rest = RMClient([real_rm.url], session, web_ui_fallback=False).observe(["root.default"])
    page_url = f"{real_rm.url}/cluster"
    page = parse_cluster_page(session.get(page_url, timeout=10).content, page_url)
    raw = metrics(real_rm)

    assert rest.source.startswith("rest") and rest.scheduler is real_rm.spec.scheduler
    assert page.scheduler is real_rm.spec.scheduler
    expected = (2, 3, raw["allocatedMB"], raw["totalMB"])
    assert (rest.pending_apps, rest.running_apps, rest.memory_used_mb,
            rest.memory_total_mb) == expected  # fmt: skip
    web = page.metrics
    assert (web.pending_apps, web.running_apps, web.memory_used_mb,
            web.memory_total_mb) == expected  # fmt: skip
    assert rest.am_memory_used_mb == 3 * 1024
    leaf = rest.queue("root.default")
    assert leaf is not None and leaf.running_apps == 3 and leaf.am_memory_used_mb == 3 * 1024
