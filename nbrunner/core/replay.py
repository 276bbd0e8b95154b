"""The event-driven replay of a queue under an allocation policy, pure (no I/O, no clock).

Jobs arrive, the policy (:func:`nbrunner.core.allocate.allocate`, down an accounts tree if
given) divides the GPUs, jobs run at a pace, pause on every start and resize, reach
boundaries and finish.  :class:`Replay` is the loop; what a job asks for (``demand``) and how
fast it goes on its GPUs (``set_pace``) are its subclasses': the cluster simulator
(``nbrunner.sim.engine``: Pollux workloads and traces) and the live estimates of a job's start
and end (``nbrunner.core.estimates``: the cluster's queue, durations from past runs).

A job is any object with the attributes the loop reads and writes: ``idx`` (unique, sortable),
``submit``, ``work``, ``done``, ``gpus``, ``unit_time`` (seconds per unit of work),
``boundary`` (work at which ``set_pace`` is asked again), ``epoch``, ``paused_until``,
``start``, ``finish``, ``resizes``, ``restarts``, ``attained`` (GPU-seconds held).

Rules: the policy is applied at every arrival and completion and every ``interval`` seconds
while ``dirty`` (its inputs changed; a periodic call whose inputs did not change would return
the same); a job with GPUs advances, one without waits; a start or a change of GPU count
pauses the job ``restart_pause`` seconds.  ``horizon``: the replay stops there (jobs not
finished keep ``finish`` None); with ``stall_ok`` a queue that can never move on ends the
replay instead of raising.
"""
from __future__ import annotations

import bisect
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from .accounts import AccountTree
from .allocate import allocate

__all__ = ["Replay", "EPS"]

EPS = 1e-9


@dataclass(kw_only=True)
class ReplayState:
    """What a replay keeps of each job (a job class of a replay adds its own fields before these)."""

    work: float = 0.0  # units to finish
    done: float = 0.0
    gpus: int = 0
    unit_time: float = math.inf  # seconds per unit on its current GPUs
    boundary: float = 0.0  # work at which its rate changes next
    epoch: int = 0
    paused_until: float = 0.0
    start: float | None = None
    finish: float | None = None
    resizes: int = 0
    restarts: int = 0
    attained: float = 0.0  # GPU-seconds held so far
    extra: dict = field(default_factory=dict)


class Replay(ABC):
    """One replay's state: the clock, the active jobs and the policy's bookkeeping."""

    def __init__(self, jobs: list, gpus: int, policy: str, restart_pause: float, interval: float,
                 tree: AccountTree | None, *, every_interval: bool = False, horizon: float = math.inf,
                 stall_ok: bool = False):
        self.jobs, self.gpus, self.policy, self.tree = jobs, gpus, policy, tree
        self.pause, self.interval = restart_pause, interval
        self.arrivals = sorted(jobs, key=lambda j: (j.submit, j.idx))
        self._submits = [j.submit for j in self.arrivals]
        self.t0 = self.now = self.arrivals[0].submit if jobs else 0.0
        self.next_arrival = 0
        self.active: dict[Any, Any] = {}
        self.gpu_seconds = 0.0
        self.dirty = False  # policy inputs changed since the last call
        self.every_interval = every_interval  # called every interval while jobs are active
        self.horizon, self.stall_ok = horizon, stall_ok

    def arrived_since(self, t: float) -> int:
        """Jobs that arrived after ``t`` and by now."""
        return max(0, self.next_arrival - bisect.bisect_right(self._submits, t))

    # ---- hooks ----------------------------------------------------------------------------------
    @abstractmethod
    def demand(self, j) -> dict:
        """The allocator's demand of ``j`` (``nbrunner.core.allocate``)."""

    @abstractmethod
    def set_pace(self, j) -> None:
        """Set ``j.unit_time`` and ``j.boundary`` for its GPUs (and what it measures)."""

    def grants(self) -> dict:
        """``{idx: gpus}`` of the active jobs: the policy's allocation."""
        return allocate(self.gpus, [self.demand(j) for j in self.active.values()], self.policy, accounts=self.tree)

    def at_boundary(self, j) -> None:
        """``j`` reached its boundary before the end of its work (an epoch ended, say)."""
        j.done = j.boundary
        j.epoch += 1
        self.set_pace(j)

    # ---- the loop -------------------------------------------------------------------------------
    def run(self) -> None:
        while self.next_arrival < len(self.arrivals) or self.active:
            t_tick = self._next_tick()
            t_next = min(self._next_arrival_time(), self._next_event_time(), t_tick)
            if t_next == math.inf:
                if self.stall_ok:
                    return
                raise RuntimeError("simulation stalled: queued jobs can never be admitted")
            if t_next > self.horizon:
                return
            changed = self._advance(t_next)
            changed |= self._admit_arrivals()
            if changed or (self.dirty and self.now >= t_tick - EPS):
                self.reallocate()

    def event_time(self, j) -> float:
        """When ``j`` reaches its boundary: its end, or (adapting) the end of its epoch."""
        return max(self.now, j.paused_until) + (j.boundary - j.done) * j.unit_time

    def _next_arrival_time(self) -> float:
        return self.arrivals[self.next_arrival].submit if self.next_arrival < len(self.arrivals) else math.inf

    def _next_event_time(self) -> float:
        return min((self.event_time(j) for j in self.active.values() if j.gpus), default=math.inf)

    def _next_tick(self) -> float:
        if not self.dirty or self.interval <= 0:
            return math.inf
        return (math.floor((self.now - self.t0) / self.interval + EPS) + 1) * self.interval + self.t0

    def _advance(self, t_next: float) -> bool:
        """Run every job to ``t_next``; True if one finished."""
        finished = []
        for j in self.active.values():
            if not j.gpus:
                continue
            held = j.gpus * (t_next - self.now)
            self.gpu_seconds += held
            j.attained += held
            if self.event_time(j) > t_next + EPS:
                j.done += max(0.0, t_next - max(self.now, j.paused_until)) / j.unit_time
            elif j.boundary < j.work:
                self.at_boundary(j)
            else:
                finished.append(j)
        for j in finished:
            j.finish = self.event_time(j)
            j.done = j.work
            del self.active[j.idx]
        self.now = t_next
        return bool(finished)

    def _admit_arrivals(self) -> bool:
        """Make the jobs submitted by now active; True if any."""
        arrived = False
        while self.next_arrival < len(self.arrivals) and self.arrivals[self.next_arrival].submit <= self.now:
            j = self.arrivals[self.next_arrival]
            self.active[j.idx] = j
            self.next_arrival += 1
            arrived = True
        return arrived

    def reallocate(self) -> None:
        grant = self.grants()
        self.dirty = False
        for idx, g in grant.items():
            if g != self.active[idx].gpus:
                self.resize(self.active[idx], g)
        if self.every_interval:
            self.dirty = bool(self.active)

    def resize(self, j, g: int) -> None:
        """Give ``j`` ``g`` GPUs: a start, resize, preemption or restart (each pauses it)."""
        if j.gpus == 0:
            if j.start is None:
                j.start = self.now
            else:
                j.restarts += 1
            self.dirty = True  # the running set changed
        else:
            j.resizes += 1
            j.restarts += 1
        j.gpus = g
        if g == 0:
            j.unit_time = math.inf
            self.dirty = True
            return
        j.paused_until = self.now + self.pause
        self.set_pace(j)
