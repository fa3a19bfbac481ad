"""An app's pending task requests: identical ones as one record with a count."""

from __future__ import annotations

from amtuner.sim.cluster import normalise_up
from amtuner.sim.spec import TaskGroup


class Unit:
    """Identical pending task requests of one app: one record, a count. It copies what each
    task needs from its group: compiled, its fields are read directly, the group's (a
    dataclass) by name."""

    __slots__ = ("count", "cpu", "disk", "duration_s", "is_map", "memory_mb", "vcores")

    def __init__(
        self,
        is_map: bool,
        count: int,
        memory_mb: int,
        vcores: int,
        duration_s: float,
        cpu: float,
        disk: float,
    ) -> None:
        self.is_map = is_map
        self.count = count
        self.memory_mb = memory_mb
        self.vcores = vcores
        self.duration_s = duration_s
        self.cpu = cpu
        self.disk = disk

    @staticmethod
    def of(group: TaskGroup, min_alloc_mb: int) -> Unit:
        """The group's tasks, each asking for its memory normalised up as the RM does."""
        return Unit(
            group.kind == "map",
            group.count,
            normalise_up(group.memory_mb, min_alloc_mb),
            group.vcores,
            group.duration_s,
            group.cpu_cores,
            group.disk_mbps,
        )

    def like(self, count: int) -> Unit:
        """``count`` more tasks like these, a record of their own."""
        return Unit(
            self.is_map, count, self.memory_mb, self.vcores, self.duration_s, self.cpu, self.disk
        )

    def split(self, count: int) -> Unit:
        """``count`` of these tasks as a record of their own, taken from this one."""
        self.count -= count
        return self.like(count)


def take_reduces(units: list[Unit], count: int) -> list[Unit]:
    """Up to ``count`` reduces from the reduce records at the front of ``units``, as records of
    their own; records emptied are dropped."""
    taken: list[Unit] = []
    left = count
    while left > 0 and units and not units[0].is_map:
        unit = units[0]
        taken.append(unit.split(min(left, unit.count)))
        left -= taken[-1].count
        if unit.count == 0:
            units.pop(0)
    return taken
