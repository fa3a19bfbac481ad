"""The MapReduce job model: what one application does between submission and finish.

An app holds its AM container for its whole life. After ``am_startup_s`` the AM asks for its maps;
once ``slowstart`` of the maps are done it asks for its reduces, which hold their containers
without running until the last map is done. When every task is done the AM tears down for
``am_teardown_s`` and releases its container. Pending requests are a few `Unit`s with a count;
only running containers have a record each (a heap entry on their node).

By default an app's maps are served before its reduces, so a reduce is only granted once every
map of its job is placed, and AMs plus held reduces can never starve their own maps. With
``Heartbeats.reduce_ramp`` the AM behaves as MapReduce's does (`amtuner.sim.mrallocator`): it
asks for reduces at a higher priority than maps, as many as its headroom allows, and preempts
held reduces when its maps starve; it then reconsiders every AM heartbeat while maps wait.

A launcher (Oozie's ``LauncherAM``: one AM that runs an action's main class, which submits a
child job and waits for it) submits its children (the jobs whose ``JobSpec.launched_by`` names
it) with its first asks, and is done only once they have ended and its AM has heard so, on its
next heartbeat. Its AM holds AM share all that time: while the children's AMs wait behind the
same queue's AM limit, nothing moves (the launcher deadlock).

An AM that runs its tasks more than once (`JobSpec.runs`: a Tez session's DAGs, a Spark driver's
jobs) waits ``idle_s`` after a run's last task before it asks for the next run's, holding only its
AM container; after its last run it stays ``linger_s`` before its tear-down (a session's timeout,
a service's life).
"""

from __future__ import annotations

import math
import random
from typing import Any

from amtuner.sim.app import App, link_launchers
from amtuner.sim.cluster import Cluster, Node, TaskSink, normalise_up
from amtuner.sim.engine import Engine, Event
from amtuner.sim.mrallocator import HEARTBEAT_S, Resource, Tasks, heartbeat
from amtuner.sim.spec import Heartbeats
from amtuner.sim.units import Unit, take_reduces
from amtuner.sim.view import AppState

DURATION_JITTER = 0.1
"""Each task's duration is drawn uniformly within ±10 % of its profile value, so that tasks of
one job do not finish in lock-step (real tasks never do)."""


TaskDone = tuple[App, bool, int, int]
"""(app, is a map, MB, vcores): what a task's end reports."""


class Scheduler:
    """What the job model needs from a scheduler (CapacityScheduler or FairScheduler). A base
    class rather than a protocol: compiled, a call through a protocol is a Python call, and the
    job model makes two or three per container."""

    am_refusals: int
    """How many times an AM limit held an app back (CapacityScheduler: an activation that left
    an app pending, by the queue's, the user's or the partition's AM limit; FairScheduler: a
    ``canRunAppAM`` that said no). Counting changes no decision. Each limit only grows with the
    AM share, so a run that never saw one is the run of every larger share too."""

    def submit(self, app: App) -> bool:
        """Accept (True) or reject (False) a new app; an accepted app waits for its AM."""
        raise NotImplementedError

    def add_demand(self, app: App, containers: int, memory_mb: int, vcores: int) -> None:
        """The app asks for ``containers`` more task containers, ``memory_mb`` and ``vcores``
        in all."""
        raise NotImplementedError

    def on_allocated(self, app: App, memory_mb: int, vcores: int, is_am: bool, part: int) -> None:
        raise NotImplementedError  # ``part``: the node's partition (`Node.part`)

    def on_released(self, app: App, memory_mb: int, vcores: int, part: int) -> None:
        raise NotImplementedError

    def app_finished(self, app: App) -> None:
        raise NotImplementedError

    def headroom(self, app: App) -> Resource:
        """What the RM tells ``app``'s AM it may still get (``getHeadroom``), in (MB, vcores)."""
        raise NotImplementedError

    def counts_vcores(self) -> bool:
        """Whether the RM tells AMs that it schedules vcores (``getSchedulingResourceTypes``
        includes CPU): MapReduce then fits tasks into its headroom by vcores too."""
        raise NotImplementedError

    def assign(self, runtime: Runtime) -> None:
        """One scheduling pass: place containers (`Runtime.launch`) while anything can be
        placed."""
        raise NotImplementedError


class _PassDue(Event):
    """The runtime's one scheduling pass, queued again each time one is asked for."""

    __slots__ = ("runtime",)

    def __init__(self, runtime: Runtime) -> None:
        super().__init__()
        self.runtime = runtime

    def fire(self) -> None:
        self.runtime.run_pass()


class _Starts(Event):
    """A task's AM hears of its container and starts it. This and the two events below happen
    once per task each: classes of their own, so that they are called without a bound method
    and a tuple of arguments made for each."""

    __slots__ = ("cluster", "cpu", "disk", "done", "node", "work")

    def __init__(
        self, cluster: Cluster, node: Node, work: float, cpu: float, disk: float, done: TaskDone
    ) -> None:
        super().__init__()
        self.cluster = cluster
        self.node = node
        self.work = work
        self.cpu = cpu
        self.disk = disk
        self.done = done

    def fire(self) -> None:
        self.cluster.start_task(self.node, self.work, self.cpu, self.disk, self.done)


class _Heard(Event):
    """A task's AM hears that it ended."""

    __slots__ = ("done", "node", "runtime")

    def __init__(self, runtime: Runtime, node: Node, done: TaskDone) -> None:
        super().__init__()
        self.runtime = runtime
        self.node = node
        self.done = done

    def fire(self) -> None:
        self.runtime.heard_done(self.node, self.done)


class _Sent(Event):
    """An ended task's container goes back with its AM's next heartbeat. The same fields as
    `_Heard`, not a common base: compiled, every read of a heap item checks that it is an
    `Event` by walking its type's bases, and one more level cost 15 % per event."""

    __slots__ = ("done", "node", "runtime")

    def __init__(self, runtime: Runtime, node: Node, done: TaskDone) -> None:
        super().__init__()
        self.runtime = runtime
        self.node = node
        self.done = done

    def fire(self) -> None:
        self.runtime.give_back(self.node, self.done)


class Runtime(TaskSink):
    """Drives apps through their life on an engine, a cluster and a scheduler."""

    def __init__(
        self,
        engine: Engine,
        cluster: Cluster,
        scheduler: Scheduler,
        apps: list[App],
        rng: random.Random,
        heartbeats: Heartbeats,
        pass_s: float,
    ) -> None:
        self.engine = engine
        self.heartbeats = heartbeats
        self.pass_s = pass_s
        """How often a scheduling pass can run: a round of node heartbeats, or the
        CapacityScheduler's asynchronous interval (0: whenever something changes)."""
        self.cluster = cluster
        self.scheduler = scheduler
        self.apps = apps
        self.rng = rng
        self.unfinished = len(apps)
        self.apps_submitted = 0
        self.apps_pending = 0
        self.apps_running = 0
        self.apps_completed = 0
        self.apps_failed = 0
        self.containers_pending = 0
        self._pass_due = False
        self._pass_event = _PassDue(self)
        self._last_pass = -math.inf
        self._am_s = heartbeats.am_s
        self._next_beat = heartbeats.am_s > 0 and heartbeats.next_beat
        self._exit_beat = heartbeats.node_s if heartbeats.am_exit_on_node_beat else 0.0
        self._maps_off_switch = heartbeats.maps_off_switch
        self._max_mb = cluster.nodes[0].memory_mb
        self._vcores_count = scheduler.counts_vcores()
        self._beat_s = heartbeats.am_s if heartbeats.am_s > 0 else HEARTBEAT_S
        self._reduce_ramp = heartbeats.reduce_ramp
        cluster.sink = self
        roots = link_launchers(apps)
        self._arrivals = engine.at_each([app.spec.submit_s for app in roots], self._submit, roots)

    def forget_arrivals(self) -> None:
        """The submissions still to come never happen: a model of the cluster that knows only
        the apps the RM knows. Launchers already submitted still submit their children."""
        arrivals = self._arrivals
        if arrivals is not None and arrivals.pos >= 0:
            self.engine.schedule(arrivals, math.inf)

    def to_beat(self, app: App) -> float:
        """Seconds to ``app``'s AM's next heartbeat, never 0: what happens at a heartbeat's
        instant reaches the AM with the one after. An AM heartbeats at a fixed rate, each at
        its own phase (MapReduce's ``RMCommunicator`` allocator thread, ``AMRMClientAsync``'s
        heartbeat thread), so the containers an ask brings arrive a whole interval after it on
        an RM that places them at once (Hadoop 3.5.0's asynchronous CapacityScheduler: every
        container ALLOCATED 5 ms after the ask was ACQUIRED 1.0 s later)."""
        am_s = self._am_s
        wait = (app.beat_phase - self.engine.now) % am_s
        return wait if wait > 1e-9 else am_s

    def mark_dirty(self) -> None:
        """Something may now be placeable: run one scheduling pass on the next round of node
        heartbeats, or the next asynchronous pass (at once where neither is modelled), one pass
        a round. With no container asked for, a pass would place nothing: none is run."""
        if self._pass_due or not self.containers_pending:
            return
        self._pass_due = True
        beat = self.pass_s
        if beat <= 0:
            self.engine.soon(self._pass_event)
            return
        tick = math.ceil(self.engine.now / beat - 1e-9) * beat
        self.engine.schedule(self._pass_event, max(tick, self._last_pass + beat))

    def run_pass(self) -> None:
        self._pass_due = False
        self._pass_event = _PassDue(self)
        self._last_pass = self.engine.now
        self.cluster.begin_heartbeat()
        self.scheduler.assign(self)
        if self.cluster.end_heartbeat():
            self.mark_dirty()

    def _submit(self, app: App) -> None:
        app.index = self.apps_submitted
        app.submitted_s = self.engine.now
        self.apps_submitted += 1
        app.state = "SUBMITTED"
        # An AM larger than any node: the RM refuses it (its maximum allocation).
        if app.am_memory_mb <= self._max_mb and self.scheduler.submit(app):
            app.state = "ACCEPTED"
            self.apps_pending += 1
            self.containers_pending += 1
            self.mark_dirty()
        else:
            app.state = "FAILED"
            app.finished_s = self.engine.now
            self.apps_failed += 1
            self._ended(app)

    def _ended(self, app: App) -> None:
        """``app`` reached a final state. Children it never submitted never will be; its
        launcher's AM hears of its end on its next heartbeat (it polls its child's report)."""
        for child in app.children:
            if child.state == "NEW":
                self._ended(child)
        self._one_less()
        launcher = app.launcher
        if launcher is None:
            return
        launcher.children_left -= 1
        if launcher.children_left == 0 and launcher.finished_s is None:
            if self._am_s > 0:
                self.engine.after(self.to_beat(launcher), self._maybe_done, launcher)
            else:
                self._maybe_done(launcher)

    def _one_less(self) -> None:
        self.unfinished -= 1
        if self.unfinished == 0:
            self.engine.halted = True

    def launch(self, app: App, node: Node) -> None:
        """Give ``app`` the container it asks for next, on ``node``. A task starts when its AM
        hears of the container, on its next heartbeat (at once where those are not modelled)."""
        self.containers_pending -= 1
        if app.am_node is None:
            mem, vc = app.am_memory_mb, app.am_vcores
            app.am_node = node
            app.started_s = self.engine.now
            app.beat_phase = self.engine.now + self._am_s * self.rng.random()
            app.state = "RUNNING"
            self.apps_pending -= 1
            self.apps_running += 1
            self.engine.after(app.spec.am_startup_s, self._am_ready, app)
            off_switch = is_am = True
        else:
            mem, vc, off_switch = self._next_task(app, node)
            is_am = False
        app.hold(self.engine.now, mem, vc)
        app.running_containers += 1
        self.cluster.allocate(node, mem, vc, off_switch=off_switch)
        self.scheduler.on_allocated(app, mem, vc, is_am, node.part)

    def _next_task(self, app: App, node: Node) -> tuple[int, int, bool]:
        """Its next asked task on ``node``: started, or held if it is a reduce whose maps are
        not all done; (MB, vcores, asked off-switch)."""
        unit = app.pending[0]
        unit.count -= 1
        if unit.count == 0:
            app.pending.pop(0)
        mem, vc, is_map = unit.memory_mb, unit.vcores, unit.is_map
        app.pending_containers -= 1
        app.pending_mb -= mem
        work = unit.duration_s * (1.0 + DURATION_JITTER * (2.0 * self.rng.random() - 1.0))
        if is_map:
            app.maps_granted += 1
            if self._reduce_ramp and app.maps_granted == app.maps_total and app.reduces_kept:
                # every map placed: at its next heartbeat its AM asks for every reduce left
                self.engine.after(self.to_beat(app), self._reconsider, app)
        else:
            app.reduces_asked -= 1
            app.reduces_assigned += 1
        if is_map or app.maps_done == app.maps_total:
            done = (app, is_map, mem, vc)
            if self._am_s > 0:
                start = _Starts(self.cluster, node, work, unit.cpu, unit.disk, done)
                self.engine.queue(start, self.to_beat(app))
            else:
                self.cluster.start_task(node, work, unit.cpu, unit.disk, done)
        else:
            app.held_reduces.append((node, unit, work))
        return mem, vc, not is_map or self._maps_off_switch

    def _add_asks(self, app: App, units: list[Unit], first: bool) -> None:
        """``units`` reach the RM as asks; ``first``: ahead of the app's other asks, as reduces
        are (MapReduce asks for reduces at priority 10, maps at 20, and the RM serves an app's
        asks in priority order: ``SchedulerApplicationAttempt``'s scheduler keys)."""
        if not units:
            return
        if first:
            app.pending[0:0] = units
        else:
            app.pending.extend(units)
        self._count_asks(app, units, 1)
        self.mark_dirty()

    def _count_asks(self, app: App, units: list[Unit], sign: int) -> None:
        """Add (``sign`` 1) or withdraw (-1) ``units`` in the pending counts of the app, the
        runtime and the scheduler."""
        n = mb = vc = 0
        for unit in units:
            n += unit.count
            mb += unit.count * unit.memory_mb
            vc += unit.count * unit.vcores
        app.pending_containers += sign * n
        app.pending_mb += sign * mb
        self.containers_pending += sign * n
        self.scheduler.add_demand(app, sign * n, sign * mb, sign * vc)

    def _ask_kept(self, app: App, count: int = -1, *, first: bool = True) -> None:
        """Ask for ``count`` (-1: all) of the reduces kept back (``rampUpReduces``), ahead of
        the app's maps unless not ``first``."""
        units = take_reduces(app.reduces_kept, count if count >= 0 else app.reduces_total)
        app.reduces_asked += sum(u.count for u in units)
        self._add_asks(app, units, first)

    def _ramp_down(self, app: App, count: int) -> None:
        """Withdraw ``count`` reduce asks and keep them back again (``rampDownReduces``). The
        app's reduce asks are first among its asks (`_add_asks`)."""
        back = take_reduces(app.pending, count)
        if not back:
            return
        app.reduces_kept.extend(back)
        app.reduces_asked -= sum(u.count for u in back)
        self._count_asks(app, back, -1)

    def _preempt(self, app: App, count: int) -> None:
        """Kill ``count`` reduces held for their maps, giving their containers back and keeping
        their tasks back to be asked for again (``AssignedRequests.preemptReduce``)."""
        for _ in range(min(count, len(app.held_reduces))):
            node, unit, _work = app.held_reduces.pop()
            app.reduces_assigned -= 1
            app.reduces_kept.append(unit.like(1))
            self._release(app, node, unit.memory_mb, unit.vcores)

    def _am_ready(self, app: App) -> None:
        min_alloc = self.cluster.min_alloc_mb
        groups = app.spec.maps + app.spec.reduces
        if any(normalise_up(g.memory_mb, min_alloc) > self._max_mb for g in groups):
            # MapReduce's AM kills the job when a task needs more than the maximum container
            self.engine.after(app.spec.am_teardown_s, self._finish, (app, "FAILED"))
            return
        if self._am_s > 0:
            # Its asks reach the RM with its next heartbeat (AMRMClient.allocate).
            self.engine.after(self.to_beat(app), self._ask, app)
        else:
            self._ask(app)

    def _ask(self, app: App) -> None:
        """The AM's first asks reach the RM: its maps (and its reduces, if slow start lets
        them go at once)."""
        min_alloc = self.cluster.min_alloc_mb
        maps = [Unit.of(g, min_alloc) for g in app.spec.maps if g.count > 0]
        self._add_asks(app, maps, first=False)
        app.maps_asked_s = self.engine.now
        if app.runs_done == 0:
            for child in app.children:
                self._submit(child)
        self._reconsider(app)
        self._maybe_done(app)

    def _reconsider(self, app: App) -> None:
        """Its AM's heartbeat, as far as its reduces go (`mrallocator.heartbeat`). While maps
        wait it runs again every heartbeat: headroom others free may let it ramp reduces up,
        and maps starved by its own reduces make it preempt them."""
        kept = app.reduces_kept
        scheduled_maps = app.maps_total - app.maps_granted
        if app.finished_s is not None or (scheduled_maps == 0 and not kept):
            return
        if not self._reduce_ramp:
            if app.maps_done >= app.spec.slowstart * app.maps_total:
                self._ask_kept(app, first=False)
            return
        if not kept and app.reduces_asked == 0 and app.reduces_assigned == 0:
            return
        tasks = Tasks(
            app.maps_total,
            app.maps_done,
            scheduled_maps,
            app.maps_granted - app.maps_done,
            sum(u.count for u in kept),
            app.reduces_asked,
            app.reduces_assigned,
        )
        move = heartbeat(
            tasks,
            started=app.reduce_started,
            slowstart=app.spec.slowstart,
            headroom=self.scheduler.headroom(app),
            map_ask=app.map_ask,
            reduce_ask=app.reduce_ask,
            vcores_count=self._vcores_count,
            maps_waited_s=self.engine.now - app.maps_asked_s,
        )
        app.reduce_started = move.started
        if move.ramp > 0:
            self._ask_kept(app, move.ramp)
        elif move.ramp < 0:
            self._ramp_down(app, -move.ramp)
        if move.preempt:
            self._preempt(app, move.preempt)
        if app.reduce_started and scheduled_maps > 0 and not app.beat_due:
            app.beat_due = True
            self.engine.after(self._beat_s, self._beat, app)

    def _beat(self, app: App) -> None:
        app.beat_due = False
        self._reconsider(app)

    def task_done(self, node: Node, payload: Any) -> None:
        """A task ended; its AM hears of it, and gives its container back, on its next
        heartbeat (at once where those are not modelled)."""
        if self._am_s > 0:
            self.engine.queue(_Heard(self, node, payload), self.to_beat(payload[0]))
        else:
            self.heard_done(node, payload)

    def heard_done(self, node: Node, payload: TaskDone) -> None:
        """The AM hears a task ended: it counts it and starts reduces held for the last map at
        once; the container's release and the reduces it now asks for reach the RM with its
        next heartbeat where that is modelled (`Heartbeats.next_beat`)."""
        app, is_map, mem, vc = payload
        if self._next_beat:
            self.engine.queue(_Sent(self, node, payload), self._am_s)
        else:
            self._release(app, node, mem, vc)
        if is_map:
            app.maps_done += 1
            if not self._next_beat:
                self._reconsider(app)
            if app.maps_done == app.maps_total and app.held_reduces:
                for rnode, unit, work in app.held_reduces:
                    done = (app, False, unit.memory_mb, unit.vcores)
                    self.cluster.start_task(rnode, work, unit.cpu, unit.disk, done)
                app.held_reduces.clear()
        else:
            app.reduces_done += 1
            app.reduces_assigned -= 1
        self._maybe_done(app)

    def give_back(self, node: Node, done: TaskDone) -> None:
        """The AM's next heartbeat: the ended task's container goes back (AMRMClient sends a
        release with its next ``allocate``), and a map's end may change its reduce asks
        (MapReduce's RMContainerAllocator schedules them after a heartbeat's response, so they
        go out with the next)."""
        app, is_map, mem, vc = done
        self._release(app, node, mem, vc)
        if is_map:
            self._reconsider(app)

    def _maybe_done(self, app: App) -> None:
        if (
            app.maps_done == app.maps_total
            and app.reduces_done == app.reduces_total
            and app.children_left == 0
        ):
            if app.runs_done + 1 < app.spec.runs:
                self.engine.after(app.spec.idle_s, self._run_again, app)
                return
            teardown = app.spec.linger_s + app.spec.am_teardown_s
            if self._exit_beat > 0:
                # The AM container's exit reaches the RM on its node's next heartbeat
                # (NodeStatusUpdater); the app is FINISHING until then, its AM held.
                teardown += self._exit_beat * self.rng.random()
            self.engine.after(teardown, self._finish, (app, "FINISHED"))

    def _run_again(self, app: App) -> None:
        """Its AM, idle since its last run, starts the next: the same tasks afresh, asked for
        with its next heartbeat, or with this one if its idle ends on one (its own decision
        goes out with the ``allocate`` it is making, unlike what the RM did in that
        instant)."""
        app.run_again(self.cluster.min_alloc_mb)
        wait = self.to_beat(app) if self._am_s > 0 else 0.0
        if wait < self._am_s - 1e-9:
            self.engine.after(wait, self._ask, app)
        else:
            self._ask(app)

    def _release(self, app: App, node: Node, mem: int, vc: int) -> None:
        app.hold(self.engine.now, -mem, -vc)
        app.running_containers -= 1
        self.cluster.release(node, mem, vc)
        self.scheduler.on_released(app, mem, vc, node.part)
        self.mark_dirty()

    def _finish(self, arg: tuple[App, AppState]) -> None:
        app, state = arg
        assert app.am_node is not None
        self._release(app, app.am_node, app.am_memory_mb, app.am_vcores)
        app.state = state
        app.finished_s = self.engine.now
        self.apps_running -= 1
        if state == "FINISHED":
            self.apps_completed += 1
        else:
            self.apps_failed += 1
        self.scheduler.app_finished(app)
        self._ended(app)

