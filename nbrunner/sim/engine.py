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
  as a live job measures them: nothing at sizes it has not run; once it has run,
  with what earlier jobs of its kind, ``nbrunner.core.kinds``, measured at other
  sizes: its owner's jobs of its application and batch), its current
  ``gpus``, ``pause_s`` = the restart pause, ``attained`` = the GPU-seconds it
  has held so far, ``progress`` = the share of its work done (as a live job
  reports it) and, running, ``hold_s`` = ``nbrunner.core.goodput.expected_hold_s``
  of the arrivals in the last hour, its age since submission and its restarts (as
  the live scheduler measures them for the jobs holding slots: only they grow).
* The policy is applied at every arrival and completion and every ``interval``
  seconds (a periodic call whose inputs did not change since the last call is
  skipped: the function is pure, so it would return the same; attained service
  changes whenever a job runs, so ``tiresias`` and ``goodput`` are called every
  interval while jobs are active).
* ``adaptive_batch``: each job of an elastic policy (fairshare, priority,
  goodput) picks its global batch by goodput, throughput x statistical
  efficiency (``nbrunner.sim.adapt``), when its GPU count changes and at every
  epoch; its max is then the fewest GPUs reaching its peak goodput in its last
  epoch, and goodput demands carry its ``throughput`` (samples/s at the batch it
  runs) and ``efficiency`` (that batch's statistical efficiency) at each size it ran:
  the policy fits its goodput, their product (initial-batch samples/s); an adapting
  job that has run nothing yet carries an empty ``efficiency``. ``static`` and
  ``tiresias`` keep the workload's batches, as the Pollux study's baselines do.
* Every start and every change of a job's GPU count pauses it for
  ``restart_pause`` seconds (GPUs held, no progress; default 30 s, the Pollux
  simulator's figure). ``restarts`` counts every change of a job's GPU count
  after its first start (resizes, preemptions and restarts).
* ``accounts``: an accounts tree (as ``nbrunner.allocate`` takes it); each job's
  ``owner`` (and ``groups``) places it in an account and the elastic policies and
  ``static`` divide the GPUs down the tree (``allocate(..., accounts=TREE)``); the result
  has a row per account (``nbrunner.sim.accounts``). ``tiresias`` has no accounts.
* Metrics: JCT = finish - submit; p99 by linear interpolation; makespan = last
  finish - first submit; utilization = allocated GPU-seconds / (GPUs x makespan).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nbrunner.core import goodput
from nbrunner.core.accounts import AccountTree, accounts_tree
from nbrunner.core.allocate import allocate
from nbrunner.core.kinds import with_kind
from nbrunner.core.replay import Replay

from .adapt import BatchAdaptation
from .apps import AppModel, load_apps
from .workload import TRACES_DIR, Job, load_workload

__all__ = ["SimResult", "simulate", "POLICIES", "TIRESIAS_THRESHOLD", "DEFAULT_PRIORITY"]

POLICIES = ("static", "tiresias", "fairshare", "priority", "goodput")
ELASTIC = ("fairshare", "priority", "goodput")
TIRESIAS_THRESHOLD = 3600.0 * 16  # GPU-seconds of attained service before demotion
DEFAULT_PRIORITY = 5000


@dataclass
class SimResult:
    """Metrics of one replay, and its jobs with their final state."""

    policy: str
    gpus: int
    jct: np.ndarray
    makespan_s: float
    gpu_seconds: float
    jobs: list[Job] = field(repr=False, default_factory=list)
    accounts: list[dict] = field(default_factory=list)  # per account, with an accounts tree

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

    def metrics(self) -> dict:
        out = {"avg_jct_s": self.avg_jct_s, "p99_jct_s": self.p99_jct_s,
               "makespan_s": self.makespan_s, "gpu_utilization": self.gpu_utilization,
               "restarts": self.restarts}
        return {**out, "accounts": self.accounts} if self.accounts else out


def simulate(workload: str | os.PathLike | list[Job], gpus: int = 64, policy: str = "fairshare", *,
             traces: str | os.PathLike | None = None, restart_pause: float = 30.0,
             interval: float = 60.0, attained: bool = True, adaptive_batch: bool = False,
             accounts: dict | AccountTree | None = None, kinds: bool = True) -> SimResult:
    """Replay a workload (a CSV path or jobs) on ``gpus`` GPUs under ``policy`` and return the metrics.

    ``traces`` defaults to the ``traces`` directory beside the workload's
    directory if there is one, else the shipped Pollux traces. ``attained=False``
    replays ``goodput`` without attained service (every job in its first queue:
    the goodput policy before short work first), for comparisons.
    ``adaptive_batch`` lets the elastic policies' jobs pick their batch by goodput.
    ``accounts``: an accounts tree the GPUs are divided down (see the module docstring).
    ``kinds=False``: a goodput job's model reads only what it measured itself, not its kind's points.
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; expected one of {POLICIES}")
    tree = None if accounts is None else accounts_tree(accounts)
    if tree is not None and policy == "tiresias":
        raise ValueError("the tiresias policy has no accounts: use static, fairshare, priority or goodput")
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
    adapt = {name: _adaptation(app) for name, app in apps.items()} if adaptive_batch and policy in ELASTIC else {}
    for j in jobs:
        if j.app not in apps:
            raise ValueError(f"job {j.name}: no traces for application {j.app!r} in {traces}")
        if adapt:
            j.work, j.max_gpus = adapt[j.app].work, adapt[j.app].best_replicas(gpus)
        else:
            j.work, j.max_gpus = apps[j.app].total_steps(j.batch), apps[j.app].best_replicas(j.batch, gpus)
        j.queued_at = j.submit
    if not jobs:
        return SimResult(policy, gpus, np.zeros(0), 0.0, 0.0, [])
    res = _Replay(jobs, apps, gpus, policy, restart_pause, interval, attained, adapt, tree, kinds).result()
    if tree is not None:
        from .accounts import account_results

        res.accounts = account_results(tree, res.jobs)
    return res


_ADAPTATIONS: dict[int, BatchAdaptation] = {}


def _adaptation(app: AppModel) -> BatchAdaptation:
    """One BatchAdaptation per (cached) application, so its batch choices are computed once."""
    if id(app) not in _ADAPTATIONS or _ADAPTATIONS[id(app)].app is not app:
        _ADAPTATIONS[id(app)] = BatchAdaptation(app)
    return _ADAPTATIONS[id(app)]


class _Replay(Replay):
    """A workload's replay: Pollux jobs paced by their traces (:class:`nbrunner.core.replay.Replay`)."""

    def __init__(self, jobs: list[Job], apps: dict[str, AppModel], gpus: int, policy: str, restart_pause: float,
                 interval: float, attained: bool, adapt: dict[str, BatchAdaptation], tree: AccountTree | None,
                 kinds: bool = True):
        # Called every interval while jobs are active: their attained service grows.
        super().__init__(jobs, gpus, policy, restart_pause, interval, tree,
                         every_interval=policy == "tiresias" or (policy == "goodput" and attained))
        self.apps, self.adapt, self.feed_attained = apps, adapt, attained
        self.share_kinds = kinds and policy == "goodput"
        self.kinds: dict[tuple, dict[int, float]] = {}  # kind -> {gpus: what a job of it measured there}

    def result(self) -> SimResult:
        self.run()
        jct = np.array([j.finish - j.submit for j in self.jobs])
        makespan = max(j.finish for j in self.jobs) - self.t0
        return SimResult(self.policy, self.gpus, jct, makespan, self.gpu_seconds, self.jobs)

    def grants(self) -> dict[int, int]:
        if self.policy == "tiresias":
            return self._tiresias()
        policy = "fairshare" if self.policy == "static" else self.policy
        return allocate(self.gpus, [self.demand(j) for j in self.active.values()], policy, accounts=self.tree)

    def reallocate(self) -> None:
        super().reallocate()
        if self.policy == "static":
            self.dirty = False  # static has no periodic reallocation

    def demand(self, j: Job) -> dict:
        if self.policy == "static":
            lo = hi = min(j.replicas, self.gpus)
        else:
            lo, hi = 1, j.max_gpus
        d = {"id": j.idx, "min_gpus": lo, "max_gpus": hi, "priority": DEFAULT_PRIORITY, "submitted_at": j.submit,
             "running": j.gpus > 0, "owner": j.owner or "-", "groups": j.groups}
        if self.policy == "goodput":
            thr = j.measured if self.adapt else with_kind(j.measured, self.kinds.get(self.kind(j), {}))
            d.update(throughput=thr, gpus=j.gpus, pause_s=self.pause,
                     progress=min(1.0, j.done / j.work) if j.work else 0.0,
                     hold_s=goodput.expected_hold_s(self.arrived_since(self.now - goodput.HOLD_WINDOW_S),
                                                    self.now - j.submit, j.restarts) if j.gpus else None)
            if self.adapt:
                d["efficiency"] = j.efficiency
                if j.measured and set(self.kinds.get(self.kind(j), ())) - set(j.measured):
                    d["throughput"], d["efficiency"] = self.measured_at(j, {*self.kinds[self.kind(j)], *j.measured})
            if self.feed_attained:
                d["attained"] = j.attained
        return d

    def set_pace(self, j: Job) -> None:
        """Seconds per unit of work on ``j``'s GPUs (its batch chosen again if it adapts), and what it measures."""
        if self.adapt:
            ad = self.adapt[j.app]
            j.run_batch, rate = ad.best(j.gpus, j.epoch)
            j.unit_time = 1.0 / rate
            j.boundary = min(float(ad.epoch_ends[min(j.epoch, len(ad.epoch_ends) - 1)]), j.work)
            measured = ad.init_batch * rate  # goodput: initial-batch samples/s
        else:
            j.run_batch, j.boundary = j.batch, j.work
            j.unit_time = self.apps[j.app].step_time(j.gpus, j.batch)
            measured = j.batch / j.unit_time
        if self.policy == "goodput":
            if self.adapt:  # every size it ran, at this epoch's batch and efficiency (as a live job reports)
                j.measured, j.efficiency = self.measured_at(j, (*j.measured, j.gpus))
            else:
                j.measured.setdefault(j.gpus, measured)
            if self.share_kinds:
                self.kinds.setdefault(self.kind(j), {})[j.gpus] = j.measured[j.gpus]
            self.dirty = True  # its inputs (gpus, throughput) changed

    def kind(self, j: Job) -> tuple:
        """The job's kind (``nbrunner.core.kinds``): its owner's runs of its application with its batch rule
        (an adapting job's batch follows its application's rule)."""
        return (j.owner, j.app) if self.adapt else (j.owner, j.app, j.batch)

    def measured_at(self, j: Job, sizes) -> tuple[dict, dict]:
        """An adapting job's (throughput, efficiency) at ``sizes``, at this epoch's batches (as it reports them)."""
        seen = {g: self.adapt[j.app].measure(g, j.epoch) for g in sizes}
        return {g: thr for g, (thr, _) in seen.items()}, {g: eff for g, (_, eff) in seen.items()}

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
