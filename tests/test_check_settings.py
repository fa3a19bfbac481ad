"""What `amtuner check` says of the scheduler file besides A: leaves the global value does not
reach, and what the file sets each limit that holds waiting apps to. On the repository's
real-shaped capacity-scheduler.xml (root.prod.etl sets its own 0.25 under a global 0.1) and
fair-scheduler.xml (root.default sets its own maxAMShare, queueMaxAppsDefault 50, root.etl.daily
its own maxRunningApps 20); the command over HTTP: tests/e2e/test_check.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from amtuner.config import parse_config
from amtuner.cures import settings_in_file
from amtuner.executor import ExecutorError, SchedulerFile
from amtuner.model import (
    GLOBAL_TARGET,
    USERS_LIMIT,
    Observation,
    QueueStats,
    SchedulerKind,
    Wait,
    WaitCause,
)
from amtuner.risks import find_risks

DATA = Path(__file__).parent / "data" / "executor"
CS, FS = SchedulerKind.CAPACITY, SchedulerKind.FAIR


def real_file(kind: SchedulerKind, extra: bytes = b"") -> SchedulerFile:
    name, end = (
        ("capacity-scheduler.xml", b"</configuration>")
        if kind is CS
        else ("fair-scheduler.xml", b"</allocations>")
    )
    data = (DATA / name).read_bytes().replace(end, extra + end)
    return SchedulerFile(DATA / name, kind, data)


def observed(kind: SchedulerKind, apps: dict[str, tuple[int, ...]], *waits: Wait) -> Observation:
    """Leaves with (pending, running[, held over max-parallel-apps]) apps; the cluster's
    totals are theirs (held apps are pending for the cluster, in no leaf's pending)."""
    queues = tuple(
        QueueStats(q, n[0], n[1], memory_used_mb=0, held_apps=n[2] if n[2:] else None)
        for q, n in apps.items()
    )
    return Observation(
        time=0.0, scheduler=kind, memory_used_mb=0, memory_total_mb=1 << 20, queues=queues,
        pending_apps=sum(n[0] + sum(n[2:]) for n in apps.values()),
        running_apps=sum(n[1] for n in apps.values()), waits=waits,
    )  # fmt: skip


def risks(sched_file: SchedulerFile, obs: Observation, targets: list[str]) -> list[str]:
    cfg = parse_config(
        {"scheduler": {"config_file": str(sched_file.path), "targets": targets},
         "controller": {"a_min": 0.1}}
    )  # fmt: skip
    return find_risks(sched_file, obs, cfg)


CS_LEAVES = ("root.default", "root.prod.etl", "root.prod.reports")
FS_LEAVES = ("root.default", "root.etl.daily", "root.etl.adhoc")


@pytest.mark.parametrize(
    ("kind", "leaves", "own", "how"),
    [
        (CS, CS_LEAVES, "root.prod.etl",
         "each sets its own yarn.scheduler.capacity.<leaf>.maximum-am-resource-percent, amtuner "
         "tunes yarn.scheduler.capacity.maximum-am-resource-percent"),
        (FS, FS_LEAVES, "root.default",
         "each sets its own <maxAMShare>, amtuner tunes <queueMaxAMShareDefault>"),
    ],
)  # fmt: skip
def test_a_leaf_with_its_own_value_is_named_and_loudly_when_it_holds_most_apps(
    kind: SchedulerKind, leaves: tuple[str, ...], own: str, how: str
) -> None:
    others = [q for q in leaves if q != own]
    busy = observed(kind, {own: (30, 10), others[0]: (2, 3), others[1]: (0, 0)})
    first = risks(real_file(kind), busy, [])[0]
    assert first == (
        f"the global value reaches none of {own}, which hold 40 of 45 apps: tune them as targets "
        f"(scheduler.targets; {how})"
    )
    quiet = observed(kind, {own: (1, 1), others[0]: (20, 3), others[1]: (0, 0)})
    assert risks(real_file(kind), quiet, [])[0] == (
        f"the global value does not reach {own} (2 of 25 apps now): {how}; add them to "
        "scheduler.targets should they get busy"
    )
    # Tuned as a target, it is no longer out of reach.
    assert not [r for r in risks(real_file(kind), busy, [own]) if "global value" in r]


def test_several_leaves_and_held_apps_count_together() -> None:
    """Two CS leaves with their own value: their apps over max-parallel-apps (counted in the
    cluster's pending apps, in no leaf's pending) are theirs too."""
    both = real_file(
        CS,
        b"<property><name>yarn.scheduler.capacity.root.prod.reports.maximum-am-resource-percent"
        b"</name><value>0.3</value></property>\n",
    )
    leaves = {"root.default": (4, 4), "root.prod.etl": (1, 2), "root.prod.reports": (0, 1, 5)}
    obs = observed(CS, leaves)
    assert risks(both, obs, [])[0].startswith(
        "the global value reaches none of root.prod.etl, root.prod.reports, which hold 9 of 17 "
        "apps: tune them as targets"
    )


def test_leaves_the_file_does_not_declare_take_the_global_value() -> None:
    """A FairScheduler queue made for a user (root.alice) sets nothing: the global value
    reaches it, so it is not named."""
    obs = observed(FS, {"root.alice": (9, 1), "root.etl.adhoc": (1, 1)})
    assert not [r for r in risks(real_file(FS), obs, []) if "global value" in r]


def test_the_settings_behind_each_wait_as_the_capacity_file_sets_them() -> None:
    sched = real_file(
        CS,
        b"<property><name>yarn.scheduler.capacity.root.default.user-limit-factor</name>"
        b"<value>2</value></property>\n"
        b"<property><name>yarn.scheduler.capacity.max-parallel-apps</name>"
        b"<value>40</value></property>\n",
    )
    obs = observed(
        CS, {},
        Wait("root.prod.etl", WaitCause.QUEUE_AM_LIMIT, 3),
        Wait("root.default", WaitCause.QUEUE_AM_LIMIT, 1),
        Wait("root.default", WaitCause.USER_LIMIT, 2),
        Wait("root.default", WaitCause.USER_AM_LIMIT, 1),
        Wait("root.prod.reports", WaitCause.MAX_APPS, 4, held_at=("root.prod",)),
        Wait("root.prod.etl", WaitCause.MAX_APPS, 1, held_at=(USERS_LIMIT,)),
        Wait(GLOBAL_TARGET, WaitCause.CLUSTER_FULL, 2),
    )  # fmt: skip
    p = "yarn.scheduler.capacity."
    assert settings_in_file(obs, GLOBAL_TARGET, sched) == [
        f"{p}root.prod.etl.maximum-am-resource-percent = 0.25",
        f"{p}root.default.maximum-am-resource-percent unset: default 0.1 "
        f"({p}maximum-am-resource-percent)",
        f"{p}root.default.user-limit-factor = 2",
        f"{p}root.default.minimum-user-limit-percent unset: default 100",
        f"{p}root.prod.max-parallel-apps unset: default 40 ({p}max-parallel-apps)",
        f"{p}user.max-parallel-apps unset: default unlimited",
    ]
    assert settings_in_file(obs, "root.prod.etl", sched) == [
        f"{p}root.prod.etl.maximum-am-resource-percent = 0.25",
        f"{p}user.max-parallel-apps unset: default unlimited",
    ]


def test_the_settings_behind_each_wait_as_the_fair_file_sets_them() -> None:
    obs = observed(
        FS, {},
        Wait("root.default", WaitCause.QUEUE_AM_LIMIT, 1),
        Wait("root.etl.adhoc", WaitCause.QUEUE_AM_LIMIT, 1),
        Wait("root.etl.daily", WaitCause.MAX_APPS, 3),
        Wait("root.default", WaitCause.MAX_APPS, 2),
    )  # fmt: skip
    assert settings_in_file(obs, GLOBAL_TARGET, real_file(FS)) == [
        "maxAMShare of queue root.default = 0.50",
        "maxAMShare of queue root.etl.adhoc unset: default 0.5",
        "maxRunningApps of queue root.etl.daily = 20",
        "userMaxAppsDefault unset: default unlimited",
        "maxRunningApps of queue root.default unset: default 50 (queueMaxAppsDefault)",
    ]
    with_defaults = real_file(
        FS, b"<queueMaxAMShareDefault>0.3</queueMaxAMShareDefault>\n"
        b"<userMaxAppsDefault>4</userMaxAppsDefault>\n",
    )  # fmt: skip
    assert settings_in_file(obs, "root.etl.adhoc", with_defaults) == [
        "maxAMShare of queue root.etl.adhoc unset: default 0.3 (queueMaxAMShareDefault)"
    ]
    assert "userMaxAppsDefault = 4" in settings_in_file(obs, "root.etl.daily", with_defaults)


def test_a_setting_defined_twice_is_refused_not_guessed() -> None:
    """Hadoop's Configuration keeps the last definition unless an earlier one is final: the
    file's reader refuses to pick one, for reading as for writing."""
    twice = (
        b"<property><name>yarn.scheduler.capacity.root.default.user-limit-factor</name>"
        b"<value>2</value></property>\n"
    )
    obs = observed(CS, {}, Wait("root.default", WaitCause.USER_LIMIT, 1))
    with pytest.raises(ExecutorError, match="defined 2 times"):
        settings_in_file(obs, GLOBAL_TARGET, real_file(CS, twice * 2))
