"""Which FairScheduler queue an app lands in: Hadoop 3.x's queue placement policy.

An app names the queue it asks for (MapReduce's ``mapreduce.job.queuename``, ``default`` when
unset); the FairScheduler's rules decide where it goes (``QueuePlacementPolicy``, 3.3+ built on
the ``placement`` package's ``SpecifiedPlacementRule``, ``UserPlacementRule``,
``DefaultPlacementRule``, ``RejectPlacementRule``). The first rule that places the app wins; a
rule that cannot place it passes to the next; an app no rule places is rejected.

Without a ``<queuePlacementPolicy>`` in the allocation file the rules come from yarn-site.xml
(``QueuePlacementPolicy.fromConfiguration``): ``specified``, then ``user`` when
``user-as-default-queue`` (default true), then ``default`` when not both that and
``allow-undeclared-pools`` (default true); the last flag is every rule's ``create``. So by
default a MapReduce job submitted without a queue runs in ``root.<user>``, a queue of its own
that takes ``queueMaxAMShareDefault``, not ``root.default``'s ``maxAMShare``.

The group rules (``primaryGroup``, ``secondaryGroupExistingQueue``, nested rules) need the
users' groups, which the simulator does not know: an allocation file that uses them is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from xml.etree.ElementTree import Element

from amtuner.model import queue_path
from amtuner.sim.sched_config import SchedulerConfigError

USER_AS_DEFAULT_QUEUE = "yarn.scheduler.fair.user-as-default-queue"
ALLOW_UNDECLARED_POOLS = "yarn.scheduler.fair.allow-undeclared-pools"
AM_NODE_LABEL = "yarn.resourcemanager.node-labels.am.default-node-label-expression"
"""The node label every AM goes to whatever its queue (``RMAppManager``; EMR sets it): read by
the CapacityScheduler's simulation (`amtuner.sim.capacity`)."""
UNSPECIFIED = "default"
"""The queue an app asks for when it names none (``YarnConfiguration.DEFAULT_QUEUE_NAME``)."""


@dataclass(frozen=True, slots=True)
class PlacementRule:
    name: str
    create: bool = True
    """May the rule create the queue it names (else only a queue the file declares)."""
    queue: str = "root.default"
    """The ``default`` rule's queue."""


class Rejected(Exception):
    """No rule placed the app, or a rule refused it: the RM rejects the submission."""


Configured = Callable[[str], bool]
"""Whether the allocation file declares a queue (full path)."""


def clean(user: str) -> str:
    """A user name as a queue name (``FairQueuePlacementUtils.cleanName``): trimmed, each '.'
    written ``_dot_``."""
    return user.strip().replace(".", "_dot_")


def _valid(name: str) -> bool:
    """``FairQueuePlacementUtils.isValidQueueName`` (and not empty)."""
    return bool(name) and name == name.strip() and not (name.startswith(".") or name.endswith("."))


def _specified(rule: PlacementRule, asked: str, user: str, configured: Configured) -> str | None:
    if not _valid(asked):
        raise Rejected(f"Application submitted by user {user} with illegal queue name '{asked}'.")
    if asked == UNSPECIFIED:  # the app named no queue: the next rule decides
        return None
    queue = queue_path(asked)
    return queue if rule.create or configured(queue) else None


def _user(rule: PlacementRule, asked: str, user: str, configured: Configured) -> str | None:
    queue = queue_path(clean(user))
    return queue if rule.create or configured(queue) else None


def _default(rule: PlacementRule, asked: str, user: str, configured: Configured) -> str | None:
    return rule.queue if rule.create or configured(rule.queue) else None


def _reject(rule: PlacementRule, asked: str, user: str, configured: Configured) -> str | None:
    raise Rejected("Application rejected by the reject placement rule")


_PLACE: dict[str, Callable[[PlacementRule, str, str, Configured], str | None]] = {
    "specified": _specified,
    "user": _user,
    "default": _default,
    "reject": _reject,
}
"""Rule name -> where it places an app (None: the next rule decides)."""

_TERMINAL: dict[str, Callable[[PlacementRule], bool]] = {
    "specified": lambda rule: False,
    "user": lambda rule: rule.create,
    "default": lambda rule: rule.create,
    "reject": lambda rule: True,
}
"""Rule name -> whether it always places or rejects (``QueuePlacementPolicy``'s terminal
states): no rule may follow one, and the last must be one."""

_GROUP_RULES = ("primaryGroup", "secondaryGroupExistingQueue", "nestedUserQueue")


def place(rules: tuple[PlacementRule, ...], asked: str, user: str, configured: Configured) -> str:
    """The queue an app asking for ``asked``, submitted by ``user``, lands in; raises Rejected."""
    for rule in rules:
        queue = _PLACE[rule.name](rule, asked, user, configured)
        if queue is not None:
            return queue
    raise Rejected(f"no placement rule placed the app of user {user} asking for '{asked}'")


def _flag(site: Mapping[str, str], key: str) -> bool:
    value = site.get(key, "true").strip().lower()
    if value not in ("true", "false"):
        raise SchedulerConfigError(f"{key}: {site[key]!r} is not true or false")
    return value == "true"


def rules_from_site(site: Mapping[str, str]) -> tuple[PlacementRule, ...]:
    """The rules a FairScheduler follows when its allocation file has no placement policy."""
    create = _flag(site, ALLOW_UNDECLARED_POOLS)
    user_as_default = _flag(site, USER_AS_DEFAULT_QUEUE)
    rules = [PlacementRule("specified", create)]
    if user_as_default:
        rules.append(PlacementRule("user", create))
    if not (user_as_default and create):
        rules.append(PlacementRule("default"))
    return tuple(rules)


def _rule(el: Element) -> PlacementRule:
    name = el.get("name", "")
    if not name:
        raise SchedulerConfigError("queuePlacementPolicy: No name provided for a rule element")
    if name in _GROUP_RULES or any(child.tag.lower() == "rule" for child in el):
        raise SchedulerConfigError(
            f"queuePlacementPolicy: rule {name!r} (or a nested rule) places by the users' groups "
            "or a parent rule, which the simulator does not model"
        )
    if name not in _PLACE:
        raise SchedulerConfigError(f"queuePlacementPolicy: No rule class found for {name}")
    create = el.get("create", "").strip().lower() in ("", "true")  # FSPlacementRule.getCreateFlag
    queue = el.get("queue", "").strip()
    return PlacementRule(name, create, queue_path(queue) if _valid(queue) else "root.default")


def parse_policy(el: Element) -> tuple[PlacementRule, ...]:
    """A ``<queuePlacementPolicy>``, checked as Hadoop checks it when it loads the file."""
    rules = tuple(_rule(child) for child in el if child.tag.lower() == "rule")
    if not rules:
        raise SchedulerConfigError(
            "Empty configuration for QueuePlacementPolicy is not allowed"
        )
    for i, rule in enumerate(rules[:-1]):
        if _TERMINAL[rule.name](rule):
            raise SchedulerConfigError(
                f"Rules after rule {i + 1} in queue placement policy can never be reached"
            )
    if not _TERMINAL[rules[-1].name](rules[-1]):
        raise SchedulerConfigError("Could get past last queue placement rule without assigning")
    return rules
