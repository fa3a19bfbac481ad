"""An app's pending task requests: identical ones as one record with a count."""

from __future__ import annotations

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
    def of(group: TaskGroup, memory_mb: int) -> Unit:
        return Unit(
            group.kind == "map",
            group.count,
            memory_mb,
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
