"""The proposal file: what a cycle publishes reads back whole; a damaged one is refused with
its path, never approved in part (the end-to-end tests are in tests/e2e/test_modes.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amtuner.model import ControllerState, Rule
from amtuner.proposals import Proposal, ProposalError, load, path_for, save, to_doc

PROPOSAL = Proposal(
    id="3f9c0a1b2c4d5e6f",
    mode="approve",
    made_at="2026-11-28T01:40:00Z",
    expires_at="2026-11-28T01:41:00Z",
    where="/etc/hadoop/conf/capacity-scheduler.xml",
    fingerprint="sha256:00",
    targets={"": (0.1, 0.525), "root.b": (None, 0.3)},
    diff="-0.1\n+0.525\n",
    refresh="yarn rmadmin -refreshQueues",
    changes=(
        {
            "target": "global",
            "old": 0.1,
            "new": 0.525,
            "rule": "under-allocation",
            "case": "",
            "reason": "P 12 > P(t-1) 0",
            "inputs": {"pending_apps": 12},
        },
        {
            "target": "root.b",
            "old": 0.1,
            "new": 0.3,
            "rule": "under-allocation",
            "case": "",
            "reason": "P 3 > P(t-1) 0",
            "inputs": {"pending_apps": 3},
        },
    ),
    states={"": ControllerState(a=0.525, n=2, prev_pending=12, prev_running=6)},
)


def test_a_proposal_round_trips_and_a_withdrawn_one_is_none(tmp_path: Path) -> None:
    path = path_for(tmp_path / "state.json")
    assert path.name == "state.proposal.json"
    assert load(path) is None
    save(path, PROPOSAL)
    assert load(path) == PROPOSAL
    decisions = PROPOSAL.approval("alice").decisions
    assert [(d.target, d.old_a, d.new_a, d.rule) for d in decisions] == [
        ("", 0.1, 0.525, Rule.UNDER_ALLOCATION),
        ("root.b", 0.1, 0.3, Rule.UNDER_ALLOCATION),
    ]
    save(path, None)
    assert load(path) is None


def test_it_expires_at_its_time() -> None:
    assert not PROPOSAL.expired(1_795_830_000.0)  # 2026-11-28T01:40:00Z
    assert PROPOSAL.expired(1_795_830_060.0)


@pytest.mark.parametrize(
    "damage",
    [
        lambda doc: doc.update(version=2),
        lambda doc: doc["proposal"].pop("fingerprint"),
        lambda doc: doc["proposal"].update(expires_at="tomorrow"),
        lambda doc: doc["proposal"]["changes"][0].update(rule="guess"),
        lambda doc: doc["proposal"]["states"][""].update(a=7),
    ],
)
def test_a_damaged_file_is_refused_with_its_path(tmp_path: Path, damage) -> None:
    path = tmp_path / "state.proposal.json"
    doc = {"version": 1, "proposal": to_doc(PROPOSAL)}
    damage(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(ProposalError, match=rf"proposal file {path} is not valid"):
        load(path)
