"""The cases of the adaptive policy: which rule decided, or which stage held a move back; what
each means in an operator's words; and which of the paper's rules each reports as."""

from __future__ import annotations

import enum
from collections.abc import Mapping

from amtuner.model import Rule


class Case(enum.StrEnum):
    """Which rule of the policy decided, or which stage held a move back: finer than `Rule`,
    which keeps the paper's names for the metrics it shares with the paper's policy."""

    IDLE_START = "idle-start"
    NOTHING_WAITS = "nothing-waits"
    NEWCOMERS = "newcomers-into-short-jobs"
    ALL_FIT = "room-all-fit"
    SMALL_BATCH = "room-small-batch"
    UNSEEN = "room-raise-unseen"
    NOT_BINDING = "room-a-admits-more"
    ROOM_SHORT = "room-short-jobs"
    ROOM_TAIL_UNCONFIRMED = "room-tail-unconfirmed"
    ROOM_TAIL = "room-tail"
    ROOM = "room"
    UNDER_GUARANTEE = "full-leaf-under-guarantee"
    DEAD_BAND = "dead-band"
    LARGE_JOBS_HOLD = "full-large-jobs-hold-it"
    TASKS_KEEP_AIM = "full-tasks-keep-aim"
    AMS_OVER_A = "full-ams-over-a"
    SHORT_FULL = "full-short-jobs"
    AT_GOAL = "full-at-goal"
    OVER_ALLOCATED = "over-allocated"
    REVERSAL_UNCONFIRMED = "reversal-unconfirmed"
    USERS_LIMIT = "users-limit"
    HELD_BACK = "first-look-rest-added"
    TOP_OF_BAND = "first-look-top-of-band"

    @property
    def meaning(self) -> str:
        """What the case says in an operator's words."""
        return CASE_MEANINGS[self]


CASE_MEANINGS: Mapping[Case, str] = {
    Case.IDLE_START: "first period, nothing running yet: start from 1 - T2",
    Case.NOTHING_WAITS: "no app waits: keep A",
    Case.NEWCOMERS: "new jobs arrive into short jobs (FairScheduler): down to 1 - T2",
    Case.ALL_FIT: "room, and every waiting AM already fits under A: keep A",
    Case.SMALL_BATCH: (
        "a batch of small jobs (FairScheduler, the period after a burst): A to the AMs that,"
        " with their tasks, fill the share"
    ),
    Case.UNSEEN: "room, but AM use has not grown since the last raise: wait",
    Case.NOT_BINDING: (
        "room, but A admits more AMs than run: the waiting get them as nodes beat (and, on a"
        " FairScheduler, as tasks free the vcores its limit counts)"
    ),
    Case.ROOM_SHORT: "room while short jobs turn over (CapacityScheduler): raise by alpha/2^n",
    Case.ROOM_TAIL_UNCONFIRMED: "room, apps hold more as AMs than as tasks: wait to see it twice",
    Case.ROOM_TAIL: "that room seen twice: raise by one AM",
    Case.ROOM: "room while apps wait: raise by alpha/2^n (at least step)",
    Case.UNDER_GUARANTEE: (
        "full, but a leaf its AM limit holds uses less than its guarantee (CapacityScheduler):"
        " raise A by one AM"
    ),
    Case.DEAD_BAND: "between roomy and full: keep A",
    Case.LARGE_JOBS_HOLD: "full, held by a few large jobs (FairScheduler): raise A",
    Case.TASKS_KEEP_AIM: "full, but tasks already hold their aim: keep A",
    Case.AMS_OVER_A: "full, AM use over A by more than one AM (a lower A acts as jobs end): wait",
    Case.SHORT_FULL: "full, but short jobs turn over (FairScheduler): keep A",
    Case.AT_GOAL: "full, A already at the goal where tasks keep their aim: keep A",
    Case.OVER_ALLOCATED: "full while apps wait, AMs crowd tasks: lower A to the goal",
    Case.REVERSAL_UNCONFIRMED: "a second reversal in a row waits one period for confirmation",
    Case.USERS_LIMIT: (
        "a user's AM limit holds apps (CapacityScheduler): A already at 1 - aim, where that"
        " user's tasks keep their aim of its limit"
    ),
    Case.HELD_BACK: (
        "the half of the first look's step held back (CapacityScheduler), added once the jobs"
        " it admitted show no more work per AM than it assumed"
    ),
    Case.TOP_OF_BAND: (
        "first look, where a FairScheduler's limit counts vcores free (its fair share has"
        " none): A to the top of its band of whole AMs, which starts each of them soonest"
    ),
}
"""One home for the case names' explanations: `once`, `status` and `--help` show them."""


RULE_OF = {
    Case.IDLE_START: Rule.UNDER_ALLOCATION,
    Case.NEWCOMERS: Rule.OVER_ALLOCATION_3,
    Case.SMALL_BATCH: Rule.UNDER_ALLOCATION,
    Case.ROOM_SHORT: Rule.UNDER_ALLOCATION,
    Case.ROOM_TAIL: Rule.UNDER_ALLOCATION,
    Case.ROOM: Rule.UNDER_ALLOCATION,
    Case.UNDER_GUARANTEE: Rule.UNDER_ALLOCATION,
    Case.LARGE_JOBS_HOLD: Rule.UNDER_ALLOCATION,
    Case.OVER_ALLOCATED: Rule.OVER_ALLOCATION_3,
    Case.HELD_BACK: Rule.UNDER_ALLOCATION,
    Case.TOP_OF_BAND: Rule.UNDER_ALLOCATION,
}
"""The paper's rule a case reports as (every other case holds)."""
