"""`mode: recommend` and `mode: approve` end to end: `amtuner run` and `amtuner once` as child
processes against the simulated RM over HTTP, real scheduler files, `amtuner approve` as an
operator runs it.

What an operator relies on: nothing is written until a proposal is approved, and then exactly
that proposal, by the path every change takes, its audit line naming the approver; a proposal
whose file changed on disk since it was made, or that expired, is refused and the file keeps
what it holds.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from amtuner import lock
from amtuner.cycle import fingerprint
from amtuner.demo import running_sim
from amtuner.executor import SchedulerFile
from amtuner.model import SchedulerKind
from amtuner.proposals import load, path_for
from amtuner.state import load_states
from tests.e2e.conftest import amtuner, write_config
from tests.e2e.test_concurrency import amtuner_run, audit_lines, sim_config
from tests.e2e.test_once import seed_file
from tests.e2e.test_run import STOP_SLACK_S, cycles, scrape, wait_for

pytestmark = pytest.mark.slow

PROPOSED = r"cycle: proposed: would write "


def sim(tmp_path: Path, scheduler: str) -> tuple[list[str], Path, bytes]:
    """`amtuner sim` arguments for a simulated RM reading a scheduler file at A = 0.1, which
    the paper's batch soon finds too small (apps wait): the file, and its bytes."""
    sched = tmp_path / "conf" / f"{scheduler}-scheduler.xml"
    sched.parent.mkdir()
    seeded = seed_file(sched, scheduler)
    argv = ["--scheduler", scheduler, "--workload", "paper:mixed", "--port", "0",
            "--speed", "20", "--scheduler-config", str(sched)]  # fmt: skip
    return argv, sched, seeded


def proposals_made(log: Any) -> int:
    return sum(PROPOSED in line for line in list(log.lines))


def cycles_logged(log: Any) -> int:
    """The daemon logs one ``cycle: P=… R=…`` line per target per cycle (one target here)."""
    return sum(bool(re.search(r"cycle: P=\d+ R=\d+", line)) for line in list(log.lines))


def status_json(config: Path) -> dict[str, Any]:
    done = amtuner("status", "--json", "--config", str(config))
    assert done.returncode == 0, done.stdout + done.stderr
    return dict(json.loads(done.stdout))


def test_recommend_publishes_in_status_and_metrics_and_writes_nothing(tmp_path: Path) -> None:
    argv, sched, before = sim(tmp_path, "fair")
    with running_sim(argv) as (rm_url, _):
        config = sim_config(
            tmp_path, rm_url, sched, refresh={"method": "none"}, mode="recommend",
            metrics={"enabled": True, "address": "127.0.0.1", "port": 0},
        )  # fmt: skip
        with amtuner_run(config) as (proc, log):
            m = wait_for(lambda: log.find(r"metrics on (http://\S+/metrics)"), "metrics", proc)
            url = m.group(1)  # type: ignore[union-attr]

            def proposing() -> dict[Any, float] | None:
                s = scrape(url)
                shown = any(name == "amtuner_proposed_am_share_ratio" for name, _ in s)
                return s if shown and cycles(s) >= 3 else None

            samples = wait_for(proposing, "three cycles and a proposal in the metrics", proc)
            assert samples[("amtuner_mode", (("amtuner_mode", "recommend"),))] == 1  # type: ignore[index]
            doc = status_json(config)["proposal"]
            text = amtuner("status", "--config", str(config)).stdout
            refused = amtuner("approve", "--config", str(config))
            assert sched.read_bytes() == before
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=STOP_SLACK_S) == 0, log.text()

    # The proposal carries what it was made from: the file, its value, the RM's figures, why.
    assert Path(doc["where"]) == sched
    assert doc["fingerprint"] == fingerprint(before)
    assert doc["targets"][""]["from"] == 0.1 != doc["targets"][""]["to"]
    (change,) = doc["changes"]
    assert change["old"] == 0.1 and change["new"] == doc["targets"][""]["to"]
    assert change["reason"] and change["rule"] != "hold"
    assert {"pending_apps", "running_apps", "memory_used_mb", "memory_total_mb"} <= set(
        change["inputs"]
    )
    assert doc["diff"] and not doc["expired"]
    assert f"proposal    {doc['id']} (global " in text, text
    assert "amtuner approve" not in text  # recommend: advice only
    assert refused.returncode == 2 and "mode is recommend" in refused.stderr, refused.stderr
    # Nothing written over several cycles: the file, no backup, no audit line, no change.
    assert sched.read_bytes() == before
    assert not (tmp_path / "backups").exists()
    assert audit_lines(tmp_path) == []
    assert "cycle: proposed: would write" in log.text()


def test_approve_writes_nothing_until_approved_then_exactly_the_proposal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon proposes every period and writes nothing; `amtuner approve`, run beside it,
    writes the standing proposal, its audit line naming the OS user; the daemon goes on from
    the state the approval saved and writes nothing more."""
    monkeypatch.delenv("SUDO_USER", raising=False)
    argv, sched, before = sim(tmp_path, "fair")
    with running_sim(argv) as (rm_url, _):
        config = sim_config(tmp_path, rm_url, sched, refresh={"method": "none"}, mode="approve")
        with amtuner_run(config) as (proc, log):
            wait_for(lambda: proposals_made(log) >= 3, "three proposals", proc)
            assert sched.read_bytes() == before
            assert audit_lines(tmp_path) == []
            approved = amtuner("approve", "--config", str(config))
            assert approved.returncode == 0, approved.stdout + approved.stderr
            after = sched.read_bytes()
            seen = cycles_logged(log)
            wait_for(lambda: cycles_logged(log) >= seen + 2, "two cycles after it", proc)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=STOP_SLACK_S) == 0, log.text()
        assert sched.read_bytes() == after  # the daemon wrote nothing after the approval

    (line,) = audit_lines(tmp_path)
    assert line["approved_by"] == pwd.getpwuid(os.getuid()).pw_name
    assert f"proposal  {line['proposal']} (global " in approved.stdout, approved.stdout
    assert f"approved by {line['approved_by']}: wrote {sched}" in approved.stdout
    # Exactly the proposal: the one-line edit of the file it was made from, nothing else.
    expected = SchedulerFile(sched, SchedulerKind.FAIR, before).edit({"": float(line["new"])})
    assert after == expected.new_data
    assert all(d in approved.stdout for d in expected.diff.splitlines() if d[:1] in "+-")
    assert line["inputs"]["pending_apps"] is not None and line["reason"]
    assert line["proposed_at"] <= line["time"]
    assert load_states(tmp_path / "state.json")[""].a == line["new"]
    assert "was saved by another amtuner process: continuing from it" in log.text()


def capacity_setup(tmp_path: Path, url: str, sched: Path, **sections: Any) -> Path:
    refresh = [sys.executable, "-m", "amtuner", "sim-admin", "refresh-queues", "--url", url]
    return write_config(
        tmp_path / "amtuner.yaml",
        rm={"urls": [url], "connect_timeout_seconds": 2, "read_timeout_seconds": 2},
        scheduler={"kind": "capacity", "config_file": str(sched)},
        refresh={"method": "command", "command": refresh},
        audit_log=str(tmp_path / "audit.jsonl"),
        mode="approve",
        **sections,
    )


def propose(config: Path) -> str:
    """Run `amtuner once` until a cycle proposes (the simulated jobs need a moment to queue);
    the id it prints."""

    def once() -> str | None:
        done = amtuner("once", "--config", str(config))
        assert done.returncode == 0, done.stdout + done.stderr
        for line in done.stdout.splitlines():
            if line.startswith("proposal  "):
                assert line.endswith(f"amtuner approve --id {line.split()[1]}"), line
                return line.split()[1]
        return None

    return str(wait_for(once, "a proposal"))


def test_an_approval_after_an_edit_on_disk_is_refused_and_the_edit_kept(tmp_path: Path) -> None:
    """While the pause file exists an approval is refused. An admin sets the value by hand
    after the proposal was made: approving it is refused (exit 8) and the file keeps the
    admin's bytes; the next proposal, made from the edited file, is written when approved, and
    the RM runs it (the read-back passed)."""
    argv, sched, seeded = sim(tmp_path, "capacity")
    pause = tmp_path / "pause"
    with running_sim(argv) as (url, _):
        config = capacity_setup(tmp_path, url, sched, guard={"pause_file": str(pause)})
        first = propose(config)
        assert sched.read_bytes() == seeded
        pause.touch()
        paused = amtuner("approve", "--config", str(config), "--id", first)
        assert paused.returncode == 8, paused.stdout + paused.stderr
        assert "error     paused: " in paused.stdout
        pause.unlink()
        edited = seeded.replace(b"<value>0.1</value>", b"<value>0.2</value>")
        assert edited != seeded
        sched.write_bytes(edited)
        refused = amtuner("approve", "--config", str(config), "--by", "alice", "--id", first)
        assert refused.returncode == 8, refused.stdout + refused.stderr
        assert "error     proposal-stale: " in refused.stdout
        assert f"changed since proposal {first} was made" in refused.stdout
        assert sched.read_bytes() == edited
        assert audit_lines(tmp_path) == []
        assert not (tmp_path / "backups").exists()

        second = propose(config)
        assert second != first
        approved = amtuner("approve", "--config", str(config), "--by", "alice", "--id", second)
        assert approved.returncode == 0, approved.stdout + approved.stderr
        assert "refreshed with" in approved.stdout
    (line,) = audit_lines(tmp_path)
    assert (line["approved_by"], line["proposal"], line["old"]) == ("alice", second, 0.2)
    expected = SchedulerFile(sched, SchedulerKind.CAPACITY, edited).edit({"": line["new"]})
    assert sched.read_bytes() == expected.new_data
    assert load(path_for(tmp_path / "state.json")) is None  # approved: withdrawn
    assert status_json(config)["changes"][-1]["approved_by"] == "alice"


def test_an_expired_another_or_a_locked_approval_writes_nothing(tmp_path: Path) -> None:
    argv, sched, seeded = sim(tmp_path, "capacity")
    with running_sim(argv) as (url, _):
        config = capacity_setup(tmp_path, url, sched, proposal_ttl_seconds=1)
        made = propose(config)
        approve = ("approve", "--config", str(config), "--by", "alice")

        other = amtuner(*approve, "--id", "0123456789abcdef")
        assert other.returncode == 8, other.stdout + other.stderr
        assert f"the standing proposal is {made}, not 0123456789abcdef" in other.stdout

        with lock.held(lock.path_for(tmp_path / "state.json")):  # a cycle of the daemon's
            locked = amtuner(*approve)
        assert locked.returncode == 7, locked.stdout + locked.stderr

        proposal = load(path_for(tmp_path / "state.json"))
        assert proposal is not None and proposal.id == made
        wait_for(lambda: proposal.expired(time.time()), "the proposal to expire")
        expired = amtuner(*approve)
        assert expired.returncode == 8, expired.stdout + expired.stderr
        assert f"proposal {made} expired at " in expired.stdout
        assert "EXPIRED" in amtuner("status", "--config", str(config)).stdout
    assert sched.read_bytes() == seeded
    assert audit_lines(tmp_path) == []
    assert not (tmp_path / "backups").exists()


def test_an_approval_after_the_stores_value_changed_is_refused(tmp_path: Path) -> None:
    """A CapacityScheduler with a mutable configuration store and no file: another admin's
    PUT after the proposal was made voids it; the store keeps their value."""
    import requests

    from amtuner.executor.refresh import sched_conf_xml
    from tests.e2e.test_rest_store import store_value

    argv = ["--scheduler", "capacity", "--workload", "paper:mixed", "--port", "0",
            "--speed", "20", "--mutable-conf"]  # fmt: skip
    with running_sim(argv) as (url, _):
        config = write_config(
            tmp_path / "amtuner.yaml", rm={"urls": [url]}, scheduler={"kind": "capacity"},
            refresh={"method": "rest"}, audit_log=str(tmp_path / "audit.jsonl"), mode="approve",
        )  # fmt: skip
        made = propose(config)
        theirs = requests.put(
            f"{url}/ws/v1/cluster/scheduler-conf", data=sched_conf_xml({"": (None, 0.2)}),
            headers={"Content-Type": "application/xml"}, timeout=10,
        )  # fmt: skip
        assert theirs.ok, theirs.text
        refused = amtuner("approve", "--config", str(config), "--id", made)
        assert refused.returncode == 8, refused.stdout + refused.stderr
        assert "/ws/v1/cluster/scheduler-conf changed since proposal" in refused.stdout
        assert store_value(url) == 0.2
        assert audit_lines(tmp_path) == []

        again = propose(config)
        approved = amtuner("approve", "--config", str(config), "--id", again, "--by", "bob")
        assert approved.returncode == 0, approved.stdout + approved.stderr
        (line,) = audit_lines(tmp_path)
        assert (line["approved_by"], line["old"]) == ("bob", 0.2)
        assert store_value(url) == line["new"]
