"""FairScheduler queue placement as Hadoop 3.x's ``QueuePlacementPolicy`` decides it."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree.ElementTree import fromstring

import pytest

from amtuner.sim.placement import (
    ALLOW_UNDECLARED_POOLS,
    USER_AS_DEFAULT_QUEUE,
    PlacementRule,
    Rejected,
    parse_policy,
    place,
    rules_from_site,
)
from amtuner.sim.sched_config import SchedulerConfigError
from amtuner.sim.sched_config.fair import parse_allocation_file
from amtuner.sim.spec import JobSpec, TaskGroup, Workload
from amtuner.sim.workload import load_workload
from tests.sim.conftest import build_at_once

DECLARED = {"root", "root.default", "root.etl"}


def _declared(path: str) -> bool:
    return path in DECLARED


def _where(rules: tuple[PlacementRule, ...], asked: str, user: str = "alice") -> str:
    return place(rules, asked, user, _declared)


def test_by_default_an_app_that_names_no_queue_runs_in_its_users_queue() -> None:
    """``fromConfiguration`` with Hadoop's defaults (both flags true): specified, then user. The
    name ``default`` is what an app sends when it names no queue (MapReduce's
    ``mapreduce.job.queuename``), so the specified rule passes it on."""
    rules = rules_from_site({})
    assert [r.name for r in rules] == ["specified", "user"]
    assert _where(rules, "default") == "root.alice"
    assert _where(rules, "default", " first.last ") == "root.first_dot_last"
    assert _where(rules, "root.default") == "root.default"  # named: where it asked
    assert _where(rules, "adhoc") == "root.adhoc"  # undeclared, created


@pytest.mark.parametrize(
    ("site", "asked", "user", "expected"),
    [
        ({USER_AS_DEFAULT_QUEUE: "false"}, "default", "alice", "root.default"),
        ({USER_AS_DEFAULT_QUEUE: "false"}, "adhoc", "alice", "root.adhoc"),
        ({ALLOW_UNDECLARED_POOLS: "false"}, "default", "alice", "root.default"),
        ({ALLOW_UNDECLARED_POOLS: "false"}, "default", "etl", "root.etl"),  # user's, declared
        ({ALLOW_UNDECLARED_POOLS: "false"}, "adhoc", "alice", "root.default"),
        ({ALLOW_UNDECLARED_POOLS: "false"}, "etl", "alice", "root.etl"),
    ],
)
def test_the_two_yarn_site_flags(
    site: dict[str, str], asked: str, user: str, expected: str
) -> None:
    """Without ``allow-undeclared-pools`` no rule creates a queue and ``default`` ends the list;
    without ``user-as-default-queue`` there is no user rule."""
    assert _where(rules_from_site(site), asked, user) == expected


def test_a_site_flag_that_is_not_a_boolean_is_refused() -> None:
    with pytest.raises(SchedulerConfigError, match="user-as-default-queue: 'yes'"):
        rules_from_site({USER_AS_DEFAULT_QUEUE: "yes"})


def _policy(body: str) -> tuple[PlacementRule, ...]:
    return parse_policy(fromstring(f"<queuePlacementPolicy>{body}</queuePlacementPolicy>"))


def test_a_policy_in_the_file_places_and_rejects() -> None:
    rules = _policy(
        '<rule name="specified" create="false"/><rule name="default" queue="etl" create="false"/>'
        '<rule name="reject"/>'
    )
    assert _where(rules, "root.default") == "root.default"
    assert _where(rules, "adhoc") == "root.etl"
    undeclared = _policy('<rule name="specified" create="false"/><rule name="reject"/>')
    with pytest.raises(Rejected):
        _where(undeclared, "adhoc")
    with pytest.raises(Rejected, match="illegal queue name"):
        _where(rules, "root.etl.")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("", "Empty configuration"),
        ('<rule name="fastest"/>', "No rule class found for fastest"),
        ("<rule/>", "No name provided"),
        ('<rule name="user"/><rule name="default"/>', "Rules after rule 1 .* never be reached"),
        ('<rule name="specified"/>', "Could get past last queue placement rule"),
        ('<rule name="user" create="false"/>', "Could get past last queue placement rule"),
        ('<rule name="primaryGroup"/>', "groups"),
        ('<rule name="nestedUserQueue"><rule name="primaryGroup"/></rule>', "groups"),
    ],
)
def test_a_bad_policy_is_refused_as_hadoop_refuses_it(body: str, message: str) -> None:
    """``QueuePlacementPolicy.fromXml``'s checks; rules on the users' groups are not modelled
    and say so."""
    with pytest.raises(SchedulerConfigError, match=message):
        _policy(body)


def test_the_allocation_file_carries_its_policy() -> None:
    conf = parse_allocation_file(
        b'<allocations><queue name="etl"/><queuePlacementPolicy><rule name="user"/>'
        b"</queuePlacementPolicy></allocations>"
    )
    assert conf.placement == (PlacementRule("user"),)
    assert parse_allocation_file(b"<allocations/>").placement is None


def _holders(users: dict[str, int], queue: str = "default") -> Workload:
    jobs = tuple(
        JobSpec(
            job_id=f"{user}-{i}", submit_s=0.0, queue=queue, user=user,
            maps=(TaskGroup("map", 1, 1024, 1, 1e6, 0.0, 0.0),), am_memory_mb=1024,
        )
        for user, n in users.items()
        for i in range(n)
    )  # fmt: skip
    return Workload("users", jobs, nodes=2, queues=("root.default",))


def test_users_queues_each_get_an_am_limit_of_their_own() -> None:
    """Two users' apps that name no queue land in root.alice and root.bob, queues made for
    them with queueMaxAMShareDefault (0.25); root.default's own maxAMShare (1.0) binds nobody.
    Each active leaf's fair share is half of the 16 GB cluster, so each admits 0.25 x 8 GB = 2
    AMs of 1 GB (``FSLeafQueue.canRunAppAM``)."""
    alloc = (
        b"<allocations><queueMaxAMShareDefault>0.25</queueMaxAMShareDefault>"
        b'<queue name="default"><maxAMShare>1.0</maxAMShare></queue></allocations>'
    )
    sim = build_at_once("fair", _holders({"alice": 4, "bob": 4}), alloc)
    sim.run_until(30.0)
    by_queue = {q.path: q for q in sim.view().queues}
    assert {p for p, q in by_queue.items() if q.is_leaf} == {
        "root.default", "root.alice", "root.bob"
    }  # fmt: skip
    admitted = {
        path: sum(1 for a in sim.apps if a.am_node is not None and a.leaf.conf.path == path)
        for path in ("root.alice", "root.bob", "root.default")
    }
    assert admitted == {"root.alice": 2, "root.bob": 2, "root.default": 0}


def test_with_user_as_default_queue_off_they_share_root_default() -> None:
    alloc = b'<allocations><queue name="default"><maxAMShare>0.25</maxAMShare></queue>'
    alloc += b"</allocations>"
    sim = build_at_once(
        "fair", _holders({"alice": 4, "bob": 4}), alloc, site={USER_AS_DEFAULT_QUEUE: "false"}
    )
    sim.run_until(30.0)
    assert {q.path for q in sim.view().queues if q.is_leaf} == {"root.default"}
    assert sum(1 for a in sim.apps if a.am_node is not None) == 4  # 0.25 x 16 GB


def test_an_app_no_rule_places_is_rejected() -> None:
    alloc = (
        b'<allocations><queue name="default"/><queuePlacementPolicy>'
        b'<rule name="specified" create="false"/><rule name="reject"/>'
        b"</queuePlacementPolicy></allocations>"
    )
    sim = build_at_once("fair", _holders({"alice": 2}, queue="adhoc"), alloc)
    result = sim.run()
    assert result.jobs_failed == 2 and result.jobs_completed == 0


@pytest.mark.parametrize(
    ("kind", "expected"), [("fair", {"root.alice", "root.bob"}), ("capacity", {"root.default"})]
)
def test_a_trace_job_that_names_no_queue_runs_where_its_scheduler_puts_it(
    tmp_path: Path, kind: str, expected: set[str]
) -> None:
    """SLS submits a job with the queue its trace names (``SLSRunner``): ``default`` names none,
    so a FairScheduler runs it in root.<user>; a CapacityScheduler in its leaf ``default``."""
    trace = tmp_path / "users.sls.json"
    trace.write_text(
        "".join(
            json.dumps({
                "job.start.ms": 0, "job.queue.name": "default", "job.id": f"job_{user}",
                "job.user": user, "num.nodes": 2,
                "job.tasks": [{"container.host": "/rack/node1", "container.start.ms": 0,
                               "container.end.ms": 60000, "container.type": "map"}],
            })
            for user in ("alice", "bob")
        )
    )  # fmt: skip
    workload = load_workload(f"sls:{trace}")
    assert workload.queues == ("root.default",)
    sim = build_at_once(kind, workload)
    sim.run_until(30.0)
    assert {view.queue for view in sim.app_views()} == expected
