"""Generations: the plans that resize the learners' process group in place.

The driver publishes a plan for every generation: its members and the learner whose state
the others take.  A shrink is published at once (the slot is confirmed released once its
learner left); a grow waits for the new learners to be ready, so the running ones never
stop for a start.
"""
from __future__ import annotations

import time
from typing import Optional

from .options import TrainOptions
from .pool import LearnerPool, LearnerProcess
from .protocol import Plan, Rendezvous


class GenerationPlanner:
    """The generation plans of a run: the newest one published, the newest one running
    (whose first step ran), and the one in flight between the two."""

    def __init__(self, options: TrainOptions, rendezvous: Rendezvous, pool: LearnerPool):
        self.options, self.rendezvous, self.pool = options, rendezvous, pool
        self.plans: dict[int, Plan] = {}
        self.gen = 0                  # newest published generation
        self.active_gen = 0           # newest generation whose first step ran
        self.inflight: Optional[int] = None
        self.inflight_since = 0.0

    def involved(self) -> set:
        """Learner ids of the newest plan and of the running one."""
        s = set()
        if self.gen and self.gen in self.plans:
            s.update(self.plans[self.gen].members)
        if self.active_gen and self.active_gen in self.plans:
            s.update(self.plans[self.active_gen].members)
        return s

    def running(self) -> set:
        """Learner ids of the running generation."""
        return set(self.plans[self.active_gen].members) if self.active_gen in self.plans else set()

    def newest(self) -> Optional[Plan]:
        return self.plans.get(self.gen)

    def running_world(self) -> int:
        return self.plans[self.active_gen].world if self.active_gen else 0

    def overdue(self, now: float) -> bool:
        """The plan in flight has not started within the collective timeout (and a margin)."""
        return self.inflight is not None and now - self.inflight_since > self.options.timeout + 15

    def started(self, g: int) -> Optional[Plan]:
        """Generation ``g`` made its first step: the plan, if it is the one in flight."""
        if g != self.inflight:
            return None
        self.inflight = None
        self.active_gen = g
        return self.plans[g]

    def _cpu_share(self, colocated: int) -> int:
        """How many learners of this job share a host's CPUs: a CPU learner uses
        usable_cpus // share intra-op threads.  The share is the job's maximum learner
        count (not the current one), so a resize never changes a learner's thread count
        (oversubscribing a shared host makes every parallel region wait for descheduled
        threads).  A negative value asks for exactly -n threads."""
        if self.options.threads_per_learner:
            return -int(self.options.threads_per_learner)
        share = self.options.max_gpus or self.pool.max_granted
        return max(colocated, min(share, self.options.cap))

    def publish(self, members: list[LearnerProcess], source: LearnerProcess, mode: str, reason: str,
                prev_world: int, checkpoint: Optional[str] = None) -> None:
        self.gen += 1
        g = self.gen
        per_host: dict = {}
        for L in members:
            per_host[L.slot.host] = per_host.get(L.slot.host, 0) + 1
        backend = "nccl" if all(L.slot.is_gpu for L in members) else "gloo"
        plan = Plan(gen=g, members=[L.lid for L in members], source=source.lid, mode=mode, backend=backend,
                    threads={L.lid: self._cpu_share(per_host[L.slot.host]) for L in members}, prev_world=prev_world,
                    reason=reason, checkpoint=checkpoint)
        self.plans[g] = plan
        self.rendezvous.publish(plan)
        self.inflight = g
        self.inflight_since = time.monotonic()
        self.pool.enlist(members)

    def plan(self, now: float) -> None:
        """Publish the first generation once enough learners are ready, then a resize when
        slots were taken back or new learners are ready (no plan may be in flight)."""
        pool, options = self.pool, self.options
        ready, starting = pool.granted_learners("ready"), pool.granted_learners("starting")
        if self.active_gen == 0:
            if not ready:
                return
            need = max(1, options.min_gpus)
            first_ready = min(L.t_ready for L in ready)
            if starting and not (len(ready) >= need and now - first_ready > max(10.0, options.join_wait)):
                return
            self.publish(ready, ready[0], "restart", "start", 0)
            return
        gset = set(pool.granted)
        active = [pool.get(lid) for lid in self.plans[self.active_gen].members]
        leaving = [L for L in active if L.slot not in gset]
        stay = [L for L in active if L.slot in gset]
        join: list[LearnerProcess] = []
        if ready and (not starting or leaving or now - min(L.t_ready for L in ready) >= options.join_wait):
            join = ready
        if not leaving and not join:
            return
        if not stay:
            if not join:
                return  # everything was revoked and nothing new is ready: keep training meanwhile
            stay = [leaving.pop(0)]  # it hands its state over, then leaves at the next plan
        members = (stay + join)[: options.cap]
        for L in leaving:
            pool.leave(L)
        self.publish(members, stay[0], "live", "grant", len(active))
