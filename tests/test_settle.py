"""File and RM agree: the read-back after a refresh, and the write-ahead record that lets the
next cycle settle a change whose process was killed between its write and its refresh.

The cycle runs for real (real scheduler file, real state file, real audit log) against a
scripted RM that loads the file when refreshed, or, like an RM whose configuration a manager
regenerates elsewhere, never does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from amtuner import audit
from amtuner.config import (
    Config,
    ControllerSettings,
    GuardSettings,
    RefreshSettings,
    SchedulerSettings,
)
from amtuner.cycle import Cycle, PendingChange
from amtuner.executor import Edit, RefreshError, SchedulerFile
from amtuner.model import ControllerState, Observation, QueueStats, SchedulerKind
from amtuner.monitor.rest import build_observation
from amtuner.readback import disagreements
from amtuner.sim.simulation import default_scheduler_config
from amtuner.state import (
    journal_to,
    load_pending,
    load_states,
    save_pending,
    save_states,
)
from tests.conftest import HADOOP_350


@dataclass
class ScriptedRM:
    """A CapacityScheduler RM with one leaf: a refresh loads ``reads`` (the file amtuner
    writes, unless the RM reads another), and each observation shows more apps waiting."""

    reads: Path
    loaded: float = 0.1
    calls: int = 0
    refreshed: list[Edit] = field(default_factory=list)
    fail: str | None = None

    def observe(self, targets: object = ()) -> Observation:
        self.calls += 1
        leaf = QueueStats("root.default", 10 * self.calls, 2, 8192, am_share=self.loaded)
        return Observation(
            time=1_000.0 + self.calls, scheduler=SchedulerKind.CAPACITY,
            pending_apps=10 * self.calls, running_apps=2, memory_used_mb=8_192,
            memory_total_mb=65_536, queues=(leaf,),
        )  # fmt: skip

    def describe(self) -> str:
        return "scripted -refreshQueues"

    def refresh(self, edit: Edit) -> None:
        self.refreshed.append(edit)
        if self.fail:
            raise RefreshError(self.fail)
        self.loaded = SchedulerFile.read(self.reads, "capacity").effective_value("")


def conf(tmp_path: Path, a: float = 0.1) -> Path:
    path = tmp_path / "capacity-scheduler.xml"
    path.write_bytes(default_scheduler_config("capacity", ["root.default"], am_share=a))
    return path


def cycle(tmp_path: Path, rm: ScriptedRM, sched: Path, **kw: object) -> Cycle:
    cfg = Config(
        scheduler=SchedulerSettings(kind="capacity", config_file=sched),
        refresh=RefreshSettings(method="command"),
        # The paper's loop: its depth n is what shows the search went on from amtuner's value.
        controller=ControllerSettings(policy="paper"),
        guard=GuardSettings(hold_off_seconds=0),
        state_file=tmp_path / "state.json",
        audit_log=tmp_path / "audit.jsonl",
        backup_dir=tmp_path / "backups",
    )
    return Cycle(config=cfg, monitor=rm, refresher=rm, **kw)  # type: ignore[arg-type]


def file_a(path: Path) -> float:
    return SchedulerFile.read(path, "capacity").effective_value("")


def test_the_rm_agrees_when_it_runs_with_the_files_value(tmp_path: Path) -> None:
    sched = SchedulerFile.read(conf(tmp_path, 0.15), "capacity")
    rm = ScriptedRM(tmp_path, loaded=0.150000006)  # a Java float
    assert disagreements(sched, rm.observe()) == []
    rm.loaded = 0.1
    assert disagreements(sched, rm.observe()) == [
        "root.default runs with 0.1, the file says 0.15"
    ]
    assert disagreements(sched, rm.observe(), ["root.other"]) == []


def recorded(kind: str) -> Observation:
    """Hadoop 3.5.0's own answers: A = 0.1875, three AMs run, two apps wait for theirs."""
    docs = [json.loads((HADOOP_350 / kind / f"{doc}.json").read_text()) for doc in
            ("metrics", "scheduler")]  # fmt: skip
    return build_observation(*docs, time=0.0, source="recorded")


@pytest.mark.parametrize("kind", ["capacity", "fair"])
def test_hadoop_s_own_answers_agree_with_the_file_they_were_recorded_with(
    tmp_path: Path, kind: str
) -> None:
    obs = recorded(kind)
    path = tmp_path / f"{kind}.xml"
    path.write_bytes(default_scheduler_config(kind, ["root.default"], am_share=0.1875))
    assert disagreements(SchedulerFile.read(path, kind), obs, fair_reloaded=True) == []
    path.write_bytes(default_scheduler_config(kind, ["root.default"], am_share=0.5))
    (line,) = disagreements(SchedulerFile.read(path, kind), obs, fair_reloaded=True)
    assert line == {
        "capacity": "root.default runs with 0.1875, the file says 0.5",
        "fair": "root.default admits AMs up to 3072 MB of its 16384 MB fair share (maxAMShare "
        "0.188), the file says 0.5",
    }[kind]


def test_a_fair_scheduler_is_judged_only_after_its_reload_and_while_apps_wait(
    tmp_path: Path,
) -> None:
    """amMaxResources follows a change only once the file is reloaded (5-15 s) and an app is
    checked for its AM (FSLeafQueue.canRunAppAM); before that it shows the old limit."""
    obs = recorded("fair")
    path = tmp_path / "fair.xml"
    path.write_bytes(default_scheduler_config("fair", ["root.default"], am_share=0.5))
    sched = SchedulerFile.read(path, "fair")
    assert disagreements(sched, obs) == []
    (leaf,) = obs.queues
    idle = replace(obs, queues=(replace(leaf, pending_apps=0),))
    assert disagreements(sched, idle, fair_reloaded=True) == []


def test_a_change_the_rm_does_not_take_is_undone_and_said(tmp_path: Path) -> None:
    """The RM reads a copy of the file (a manager regenerates it elsewhere): the refresh
    succeeds, the RM keeps its value. The first change finds it: the file is put back, and
    the error says why."""
    sched = conf(tmp_path)
    copy = tmp_path / "managed" / "capacity-scheduler.xml"
    copy.parent.mkdir()
    copy.write_bytes(sched.read_bytes())
    rm = ScriptedRM(copy)
    before = sched.read_bytes()
    report, states = cycle(tmp_path, rm, sched, read_back=True).run({})
    assert report.error == "refresh-failed", report.message
    assert "the RM did not take the change (root.default runs with 0.1, the file says" in (
        report.message
    )
    assert "does not load" in report.message and "Ambari or Cloudera Manager" in report.message
    assert "refreshed again" in report.message
    assert sched.read_bytes() == before
    assert [e.targets for e in rm.refreshed][1] == {
        t: (new, old) for t, (old, new) in rm.refreshed[0].targets.items()
    }
    assert states == {} and report.owed is None


def test_a_change_the_rm_takes_passes_the_read_back(tmp_path: Path) -> None:
    sched = conf(tmp_path)
    rm = ScriptedRM(sched)
    report, states = cycle(tmp_path, rm, sched, read_back=True).run({})
    assert report.applied and report.error is None, report.message
    assert rm.loaded == file_a(sched) == states[""].a > 0.1


def interrupted(tmp_path: Path, rm: ScriptedRM, sched: Path) -> PendingChange:
    """A cycle that recorded its change and wrote the file, then died before the refresh."""
    journal = journal_to(tmp_path / "state.json", unit_mb=1024)

    class Killed(BaseException):
        pass

    def die(edit: Edit) -> None:
        raise Killed

    live = cycle(tmp_path, rm, sched, journal=journal)
    live.refresher = type("R", (), {"describe": rm.describe, "refresh": staticmethod(die)})()
    save_states(tmp_path / "state.json", {"": ControllerState(a=0.1, n=3)})
    with pytest.raises(Killed):
        live.run(load_states(tmp_path / "state.json"))
    pending = load_pending(tmp_path / "state.json")
    assert pending is not None
    return pending


def test_a_change_killed_before_its_refresh_is_refreshed_not_taken_for_an_admins(
    tmp_path: Path,
) -> None:
    sched = conf(tmp_path)
    rm = ScriptedRM(sched)
    pending = interrupted(tmp_path, rm, sched)
    ((old, new),) = pending.targets.values()
    assert (old, file_a(sched), rm.loaded) == (0.1, new, 0.1)  # file and RM disagree
    assert [line["change"] for line in pending.audit] == [pending.id]

    states = load_states(tmp_path / "state.json")
    assert states[""].a == 0.1  # the state was saved before the write
    report, after = cycle(tmp_path, rm, sched).run(states, pending)
    assert report.settled == pending and report.owed is None, report.message
    assert rm.loaded == file_a(sched)
    assert "by a cycle stopped before its refresh" in report.message
    # amtuner's own value, so the search goes on from it (n kept), not from an admin's edit
    decided = report.decisions[0]
    assert decided.old_a == new and after[""].n >= 3

    audit.record(tmp_path / "audit.jsonl", report, states, unit_mb=1024)
    audit.record(tmp_path / "audit.jsonl", report, states, unit_mb=1024)  # written once
    lines = [json.loads(x) for x in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [x.get("change") for x in lines].count(pending.id) == 1
    assert next(x for x in lines if x.get("change") == pending.id)["new"] == new


def test_a_settle_whose_refresh_fails_stays_owed(tmp_path: Path) -> None:
    sched = conf(tmp_path)
    rm = ScriptedRM(sched)
    pending = interrupted(tmp_path, rm, sched)
    rm.fail = "RM is in safe mode"
    states = load_states(tmp_path / "state.json")
    report, after = cycle(tmp_path, rm, sched).run(states, pending)
    assert report.error == "refresh-failed" and report.owed == pending
    assert "MAY DISAGREE" in report.message and after == states
    save_states(tmp_path / "state.json", after, pending=report.owed)
    assert load_pending(tmp_path / "state.json") == pending


def test_a_file_restored_after_a_kill_is_refreshed_too(tmp_path: Path) -> None:
    """Killed after the restore of a failed refresh, before refreshing the restored file: the
    RM may hold the change the file no longer does."""
    sched = conf(tmp_path)
    rm = ScriptedRM(sched)
    pending = interrupted(tmp_path, rm, sched)
    ((old, new),) = pending.targets.values()
    sched.write_bytes(default_scheduler_config("capacity", ["root.default"], am_share=0.1))
    rm.loaded = new
    report, _ = cycle(tmp_path, rm, sched).run(load_states(tmp_path / "state.json"), pending)
    assert report.settled is None and report.owed is None, report.message
    assert rm.refreshed[0].targets == {"": (new, old)}  # the restored file, loaded first
    assert rm.loaded == file_a(sched)


def test_an_admins_edit_after_the_kill_is_theirs(tmp_path: Path) -> None:
    sched = conf(tmp_path)
    rm = ScriptedRM(sched)
    pending = interrupted(tmp_path, rm, sched)
    sched.write_bytes(default_scheduler_config("capacity", ["root.default"], am_share=0.3))
    report, _ = cycle(tmp_path, rm, sched).run(load_states(tmp_path / "state.json"), pending)
    assert report.settled is None and report.owed is None
    assert report.decisions[0].old_a == 0.3


def test_the_write_ahead_record_keeps_the_rest_of_the_state_file(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    save_states(path, {"": ControllerState(a=0.2)}, {"result": "ok"})
    change = PendingChange("id1", "/etc/x.xml", {"": (0.2, 0.3)}, 5.0, ({"new": 0.3},))
    save_pending(path, change)
    assert load_pending(path) == change
    assert load_states(path) == {"": ControllerState(a=0.2)}
    assert json.loads(path.read_text())["last_cycle"] == {"result": "ok"}
    save_states(path, {"": ControllerState(a=0.3)})
    assert load_pending(path) is None


def test_no_write_without_its_record(tmp_path: Path) -> None:
    """A state file that cannot be written stops the change before the scheduler file is."""
    sched = conf(tmp_path)
    before = sched.read_bytes()
    (tmp_path / "state-dir").write_text("a file where a directory should be")
    rm = ScriptedRM(sched)
    journal = journal_to(tmp_path / "state-dir" / "state.json", unit_mb=1024)
    report, _ = cycle(tmp_path, rm, sched, journal=journal).run({})
    assert report.error == "write-failed", report.message
    assert "nothing changed" in report.message and sched.read_bytes() == before
    assert rm.refreshed == []
