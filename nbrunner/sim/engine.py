"""The event-driven replay: jobs arrive, the policy allocates GPUs, jobs run, pause and finish.

Scheduling (documented choices; performance and work are in ``nbrunner.sim.apps``):

* ``static``: every job gets exactly ``num_replicas`` (capped at the cluster
  size), FIFO with no backfill (``allocate`` with min = max = request).
* ``tiresias``: static sizes, preemptive two-queue discretised least attained
  service as in Tiresias (and the Pollux artifact's Tiresias): a job whose
  attained service (GPUs x seconds held) reaches :data:`TIRESIAS_THRESHOLD` (16
  GPU-hours) is demoted to the second queue; queue 0 before queue 1, FIFO (by
  arrival in the queue) within each, and every job that fits in the GPUs left is
  started (backfill); a running job that no longer fits is preempted (it keeps
  its progress and pays the pause when it starts again).
* ``fairshare``/``priority``/``goodput``: ``nbrunner.core.allocate.allocate``
  with min 1 and max = the fewest GPUs reaching the job's peak measured
  throughput (adding GPUs past that no longer speeds it up), all priorities equal
  (5000; the workloads have none). ``goodput`` demands also carry ``throughput``
  = the samples/s at the GPU counts the job has run so far (revealed by running,
  as a live job measures them: nothing at sizes it has not run), its current
  ``gpus``, ``pause_s`` = the restart pause and ``attained`` = the GPU-seconds it
  has held so far.
* The policy is applied at every arrival and completion and every ``interval``
  seconds (a periodic call whose inputs did not change since the last call is
  skipped: the function is pure, so it would return the same; attained service
  changes whenever a job runs, so ``tiresias`` and ``goodput`` are called every
  interval while jobs are active).
* Every start and every change of a job's GPU count pauses it for
  ``restart_pause`` seconds (GPUs held, no progress; default 30 s, the Pollux
  simulator's figure). ``restarts`` counts every change of a job's GPU count
  after its first start (resizes, preemptions and restarts).
* Metrics: JCT = finish - submit; p99 by linear interpolation; makespan = last
  finish - first submit; utilization = allocated GPU-seconds / (GPUs x makespan).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nbrunner.core.allocate import allocate

from .apps import AppModel, load_apps
from .workload import TRACES_DIR, Job, load_workload

__all__ = ["SimResult", "simulate", "POLICIES", "TIRESIAS_THRESHOLD", "DEFAULT_PRIORITY"]

POLICIES = ("static", "tiresias", "fairshare", "priority", "goodput")
TIRESIAS_THRESHOLD = 3600.0 * 16  # GPU-seconds of attained service before demotion
DEFAULT_PRIORITY = 5000
_EPS = 1e-9


@dataclass
class SimResult:
    """Metrics of one replay, and its jobs with their final state."""

    policy: str
    gpus: int
    jct: np.ndarray
    makespan_s: float
    gpu_seconds: float
    jobs: list[Job] = field(repr=False, default_factory=list)

    @property
    def avg_jct_s(self) -> float:
        return float(self.jct.mean()) if len(self.jct) else 0.0

    @property
    def p99_jct_s(self) -> float:
        return float(np.percentile(self.jct, 99)) if len(self.jct) else 0.0

    @property
    def gpu_utilization(self) -> float:
        return self.gpu_seconds / (self.gpus * self.makespan_s) if self.makespan_s > 0 else 0.0

    @property
    def restarts(self) -> int:
        return sum(j.restarts for j in self.jobs)

    def metrics(self) -> dict[str, float]:
        return {"avg_jct_s": self.avg_jct_s, "p99_jct_s": self.p99_jct_s,
                "makespan_s": self.makespan_s, "gpu_utilization": self.gpu_utilization,
                "restarts": self.restarts}


def simulate(workload: str | os.PathLike | list[Job], gpus: int = 64, policy: str = "fairshare", *,
             traces: str | os.PathLike | None = None, restart_pause: float = 30.0,
             interval: float = 60.0, attained: bool = True) -> SimResult:
    """Replay a workload (a CSV path or jobs) on ``gpus`` GPUs under ``policy`` and return the metrics.

    ``traces`` defaults to the ``traces`` directory beside the workload's
    directory if there is one, else the shipped Pollux traces. ``attained=False``
    replays ``goodput`` without attained service (every job in its first queue:
    the goodput policy before short work first), for comparisons.
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; expected one of {POLICIES}")
    if gpus < 1:
        raise ValueError("gpus must be >= 1")
    if isinstance(workload, list):
        jobs = [j.fresh() for j in workload]
    else:
        jobs = load_workload(workload)
        beside = Path(workload).resolve().parent.parent / "traces"
        if traces is None and beside.is_dir():
            traces = beside
    traces = TRACES_DIR if traces is None else traces
    apps = load_apps(traces)
    for j in jobs:
        if j.app not in apps:
            raise ValueError(f"job {j.name}: no traces for application {j.app!r} in {traces}")
        j.steps = apps[j.app].total_steps(j.batch)
        j.max_gpus = apps[j.app].best_replicas(j.batch, gpus)
        j.queued_at = j.submit
    if not jobs:
        return SimResult(policy, gpus, np.zeros(0), 0.0, 0.0, [])
    return _Replay(jobs, apps, gpus, policy, restart_pause, interval, attained).run()


class _Replay:
    """One replay's state: the clock, the active jobs and the policy's bookkeeping."""

    def __init__(self, jobs: list[Job], apps: dict[str, AppModel], gpus: int, policy: str, restart_pause: float,
                 interval: float, attained: bool):
        self.jobs, self.apps, self.gpus, self.policy = jobs, apps, gpus, policy
        self.pause, self.interval, self.feed_attained = restart_pause, interval, attained
        self.arrivals = sorted(jobs, key=lambda j: (j.submit, j.idx))
        self.t0 = self.now = self.arrivals[0].submit
        self.next_arrival = 0
        self.active: dict[int, Job] = {}
        self.gpu_seconds = 0.0
        self.dirty = False  # policy inputs changed since the last call
        # Called every interval while jobs are active: their attained service grows.
        self.every_interval = policy == "tiresias" or (policy == "goodput" and attained)

    def run(self) -> SimResult:
        while self.next_arrival < len(self.arrivals) or self.active:
            t_tick = self._next_tick()
            t_next = min(self._next_arrival_time(), self._next_finish_time(), t_tick)
            if t_next == math.inf:
                raise RuntimeError("simulation stalled: queued jobs can never be admitted")
            changed = self._advance(t_next)
            changed |= self._admit_arrivals()
            if changed or (self.dirty and self.now >= t_tick - _EPS):
                self._reallocate()
        jct = np.array([j.finish - j.submit for j in self.jobs])
        makespan = max(j.finish for j in self.jobs) - self.t0
        return SimResult(self.policy, self.gpus, jct, makespan, self.gpu_seconds, self.jobs)

    def _finish_time(self, j: Job) -> float:
        return max(self.now, j.paused_until) + (j.steps - j.done) * j.step_time

    def _next_arrival_time(self) -> float:
        return self.arrivals[self.next_arrival].submit if self.next_arrival < len(self.arrivals) else math.inf

    def _next_finish_time(self) -> float:
        return min((self._finish_time(j) for j in self.active.values() if j.gpus), default=math.inf)

    def _next_tick(self) -> float:
        if not self.dirty or self.interval <= 0:
            return math.inf
        return (math.floor((self.now - self.t0) / self.interval + _EPS) + 1) * self.interval + self.t0

    def _advance(self, t_next: float) -> bool:
        """Run every job to ``t_next``; True if one finished."""
        finished = []
        for j in self.active.values():
            if not j.gpus:
                continue
            held = j.gpus * (t_next - self.now)
            self.gpu_seconds += held
            j.attained += held
            if self._finish_time(j) <= t_next + _EPS:
                finished.append(j)
            else:
                j.done += max(0.0, t_next - max(self.now, j.paused_until)) / j.step_time
        for j in finished:
            j.finish = self._finish_time(j)
            j.done = j.steps
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

    def _reallocate(self) -> None:
        if self.policy == "tiresias":
            grant = self._tiresias()
        else:
            policy = "fairshare" if self.policy == "static" else self.policy
            grant = allocate(self.gpus, [self._demand(j) for j in self.active.values()], policy)
        self.dirty = False
        for idx, g in grant.items():
            if g != self.active[idx].gpus:
                self._resize(self.active[idx], g)
        if self.policy == "static":
            self.dirty = False  # static has no periodic reallocation
        elif self.every_interval:
            self.dirty = bool(self.active)

    def _demand(self, j: Job) -> dict:
        if self.policy == "static":
            lo = hi = min(j.replicas, self.gpus)
        else:
            lo, hi = 1, j.max_gpus
        d = {"id": j.idx, "min_gpus": lo, "max_gpus": hi, "priority": DEFAULT_PRIORITY, "submitted_at": j.submit,
             "running": j.gpus > 0}
        if self.policy == "goodput":
            d.update(throughput=j.measured, gpus=j.gpus, pause_s=self.pause)
            if self.feed_attained:
                d["attained"] = j.attained
        return d

    def _resize(self, j: Job, g: int) -> None:
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
            j.step_time = math.inf
            self.dirty = True
            return
        j.step_time = self.apps[j.app].step_time(g, j.batch)
        j.paused_until = self.now + self.pause
        if self.policy == "goodput":
            j.measured.setdefault(g, j.batch / j.step_time)
            self.dirty = True  # its inputs (gpus, throughput) changed

    def _tiresias(self) -> dict[int, int]:
        for j in self.active.values():
            if j.queue == 0 and j.attained >= TIRESIAS_THRESHOLD:
                j.queue, j.queued_at = 1, self.now
        free = self.gpus
        grant = {}
        for j in sorted(self.active.values(), key=lambda j: (j.queue, j.queued_at, j.idx)):
            need = min(j.replicas, self.gpus)
            grant[j.idx] = need if need <= free else 0
            free -= grant[j.idx]
        return grant
