"""Load for a real RM: apps submitted over its REST API, whose AMs the launcher's AM host plays.

An app is a real YARN application: the RM admits it under its real AM limit and a NodeManager
launches its AM container, a shell that waits for the marker the AM host writes when the job is
done. What the job does is in its tags (see ``AmHost.java``): its tasks, or, for a launcher, the
child app its AM submits and waits for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import TracebackType

import requests

from amtuner.sim.spec import NO_USER, JobSpec, TaskGroup, Workload

APP_TYPE = "AMTUNER"
USER = "amtuner"


@dataclass(frozen=True)
class Tasks:
    count: int
    memory_mb: int
    vcores: int
    seconds: float

    def tag(self, kind: str) -> str:
        return f"amtuner.{kind}={self.count}x{self.memory_mb}x{self.vcores}x{self.seconds:g}"


@dataclass(frozen=True)
class RealJob:
    """What one app asks of the cluster; no maps, no reduces and one run that does not linger:
    it holds its AM until killed."""

    name: str = "amtuner-hold"
    queue: str = "default"
    user: str = USER
    """Who submits it (``?user.name=``, the RM's simple authentication)."""
    am_memory_mb: int = 1024
    am_vcores: int = 1
    maps: Tasks | None = None
    reduces: Tasks | None = None
    am_startup_s: float = 0.0
    am_teardown_s: float = 0.0
    slowstart: float = 0.05
    runs: int = 1
    idle_s: float = 0.0
    linger_s: float = 0.0
    """`JobSpec.runs`, ``idle_s`` and ``linger_s``: a session's DAGs, a driver's jobs, a
    service's life."""
    child: RealJob | None = None
    """A launcher's (Oozie's ``LauncherAM``): the app its AM submits, as its user, once its
    start-up is over, and waits for; the launcher's own tasks and the child's user are
    ignored."""

    def tags(self) -> list[str]:
        """What the AM host reads; YARN lowercases tags and keeps at most 10 of 100 characters
        (``yarn.resourcemanager.application-tag-*`` defaults), which a child's fit."""
        tags = [f"amtuner.am={self.am_startup_s:g}x{self.am_teardown_s:g}x{self.slowstart:g}"]
        if self.maps is not None:
            tags.append(self.maps.tag("maps"))
        if self.reduces is not None:
            tags.append(self.reduces.tag("reduces"))
        if (self.runs, self.idle_s, self.linger_s) != (1, 0.0, 0.0):
            tags.append(f"amtuner.runs={self.runs}x{self.idle_s:g}x{self.linger_s:g}")
        if self.child is not None:
            c = self.child
            if c.child is not None:
                raise ValueError(f"{self.name}: the AM host's launchers launch no launcher")
            if (c.runs, c.idle_s, c.linger_s) != (1, 0.0, 0.0):
                raise ValueError(f"{self.name}: the AM host's launchers' children run once")
            tags += [f"amtuner.child.name={c.name}", f"amtuner.child.queue={c.queue}",
                     f"amtuner.child.resource={c.am_memory_mb}x{c.am_vcores}"]  # fmt: skip
            tags += [t.replace("amtuner.", "amtuner.child.", 1) for t in c.tags()]
        return tags


def real_job(spec: JobSpec, child: JobSpec | None = None) -> RealJob:
    """The same job for the AM host: counts, sizes, times and slow start, its user (`USER`
    where the workload names none: one user for all, as in the simulator), and the ``child``
    its AM submits and waits for (`JobSpec.launched_by`)."""

    def tasks(groups: tuple[TaskGroup, ...]) -> Tasks | None:
        if not groups:
            return None
        (g,) = groups
        return Tasks(g.count, g.memory_mb, g.vcores, g.duration_s)

    return RealJob(
        name=spec.job_id,
        queue=spec.queue.removeprefix("root."),
        user=USER if spec.user == NO_USER else spec.user,
        am_memory_mb=spec.am_memory_mb,
        am_vcores=spec.am_vcores,
        maps=tasks(spec.maps),
        reduces=tasks(spec.reduces),
        am_startup_s=spec.am_startup_s,
        am_teardown_s=spec.am_teardown_s,
        slowstart=spec.slowstart,
        runs=spec.runs,
        idle_s=spec.idle_s,
        linger_s=spec.linger_s,
        child=None if child is None else real_job(child),
    )


def real_jobs(batch: Workload) -> list[RealJob]:
    """The jobs of ``batch`` submitted at once, each launcher's child inside it (the AM host's
    launchers submit one child each)."""
    return [job for _, job in timed_jobs(batch)]


def timed_jobs(batch: Workload) -> list[tuple[float, RealJob]]:
    """The jobs of ``batch`` to submit, each with its `JobSpec.submit_s`, in the order of
    ``batch``; each launcher's child inside it (the AM host's launchers submit one child
    each), since its AM submits it."""
    children: dict[str, JobSpec] = {}
    for job in batch.jobs:
        if job.launched_by in children:
            raise ValueError(f"{job.launched_by} launches more than one child")
        if job.launched_by:
            children[job.launched_by] = job
    return [
        (j.submit_s, real_job(j, children.get(j.job_id))) for j in batch.jobs if not j.launched_by
    ]


def submit(session: requests.Session, url: str, job: RealJob, markers: str) -> str:
    """Submit ``job``; returns its application id. ``session`` must be ``job.user``'s own: the
    RM's authentication filter knows a caller by the cookie it set on the first request."""
    q = {"user.name": job.user}
    new = session.post(f"{url}/ws/v1/cluster/apps/new-application", params=q, timeout=10)
    new.raise_for_status()
    app_id = str(new.json()["application-id"])
    body = {
        "application-id": app_id,
        "application-name": job.name,
        "application-type": APP_TYPE,
        "queue": job.queue,
        "max-app-attempts": 1,
        "am-container-spec": {
            "commands": {
                "command": f'while [ ! -e "{markers}/$CONTAINER_ID" ]; do sleep 0.5; done'
            }
        },
        "resource": {"memory": job.am_memory_mb, "vCores": job.am_vcores},
        "application-tags": {"tag": job.tags()},
    }
    done = session.post(f"{url}/ws/v1/cluster/apps", params=q, json=body, timeout=10)
    if done.status_code != 202:
        raise RuntimeError(f"submitting {app_id}: HTTP {done.status_code}: {done.text[:300]}")
    return app_id


@dataclass
class Submitter:
    """Submits jobs to the RM at ``url``, each over its user's own session: the RM's
    authentication filter (``AuthenticationFilter``) knows a caller by the cookie it set on
    the first request, whatever ``user.name`` a later one gives, so one session shared by two
    users submits every app as the first. A context manager: the sessions close on exit."""

    url: str
    markers: str
    _sessions: dict[str, requests.Session] = field(default_factory=dict)

    def submit(self, job: RealJob) -> str:
        """`submit` as ``job.user``; returns the application id."""
        session = self._sessions.setdefault(job.user, requests.Session())
        return submit(session, self.url, job, self.markers)

    def close(self) -> None:
        for session in self._sessions.values():
            session.close()
        self._sessions.clear()

    def __enter__(self) -> Submitter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def kill(session: requests.Session, url: str, app_id: str) -> None:
    r = session.put(
        f"{url}/ws/v1/cluster/apps/{app_id}/state", params={"user.name": USER},
        json={"state": "KILLED"}, timeout=10,
    )  # fmt: skip
    if r.status_code not in (200, 202):
        raise RuntimeError(f"killing {app_id}: HTTP {r.status_code}: {r.text[:300]}")


def listed(session: requests.Session, url: str, states: str = "") -> list[dict[str, object]]:
    """The RM's apps (``states``: a comma-separated filter such as ``RUNNING,ACCEPTED``)."""
    params = {"states": states} if states else {}
    r = session.get(f"{url}/ws/v1/cluster/apps", params=params, timeout=10)
    r.raise_for_status()
    apps = (r.json().get("apps") or {}).get("app") or []
    return list(apps)


def am_allocated(record: dict[str, object]) -> bool:
    """An app ACCEPTED with a container: its AM's, allocated and not yet registered."""
    return record["state"] == "ACCEPTED" and int(str(record.get("runningContainers") or 0)) > 0


def kill_all(session: requests.Session, url: str) -> None:
    for app in listed(session, url, "NEW,NEW_SAVING,SUBMITTED,ACCEPTED,RUNNING"):
        kill(session, url, str(app["id"]))
