"""Event-driven cluster simulator replaying Pollux workloads against nbrunner's policies.

Usage::

    python -m nbrunner.sim WORKLOAD.csv [--gpus 64] \
        [--policy static|tiresias|fairshare|priority|goodput] [--restart-pause 30] \
        [--traces DIR] [--json] [--interval 60]

Workload CSV: ``name,time,application,num_replicas,batch_size`` (one job a row).
Traces (default ``<workload dir>/../traces``): ``<app>/placements.csv``,
``<app>/scalability.csv`` and ``<app>/validation-<batch>.csv`` as in the Pollux
artifact.

Model (all documented choices):

* Performance. A job keeps its global batch ``B`` whatever its GPU count ``r``;
  the local batch is ``B / r``. For every replica count the traces measure, the
  rows with the fewest nodes are used (best packing: ``placements.csv`` for 1..16
  GPUs, ``scalability.csv`` above; duplicate points are averaged). Step time at a
  local batch between measured points is interpolated linearly in the local batch;
  below the smallest measured local batch it is held at that point (no speedup is
  assumed that the traces do not show); above the largest, gradient accumulation
  is used: ``k = ceil(b / b_max)`` micro-batches of ``b / k`` cost
  ``k * step - (k - 1) * sync`` (gradients are synchronised once). Replica counts
  between measured ones are interpolated linearly in ``r``; the largest measured
  count (64) is the most a job can use. Placement/fragmentation is not modelled.
* Work. Steps to finish = the ``iteration`` of row ``epochs`` (bert 2, cifar10 100,
  ncf 10, imagenet 90, deepspeech2 80, yolov3 50; other apps: all rows) in
  ``validation-<B>.csv``: the measured number of steps at batch ``B`` to reach that
  many epochs' worth of training progress, so large batches' lower statistical
  efficiency is included. Batch sizes without a file use the samples-to-finish
  (``iteration * B``) interpolated linearly in log(B), held constant outside.
* Scheduling. ``static``: every job gets exactly ``num_replicas`` (capped at the
  cluster size), FIFO with no backfill (``allocate`` with min = max = request).
  ``tiresias``: static sizes, preemptive two-queue discretised least attained
  service as in Tiresias (and the Pollux artifact's Tiresias): a job whose
  attained service (GPUs x seconds run) reaches ``TIRESIAS_THRESHOLD`` (16
  GPU-hours) is demoted to the second queue; queue 0 before queue 1, FIFO (by
  arrival in the queue) within each, and every job that fits in the GPUs left is
  started (backfill); a running job that no longer fits is preempted (it keeps
  its progress and pays the pause when it starts again).
  ``goodput``: ``allocate`` with the same min and max as fairshare, each job
  carrying ``throughput`` = the samples/s
  at the GPU counts it has run so far (revealed by running, as a live job measures
  them: nothing at sizes it has not run), its current ``gpus`` and ``pause_s`` =
  ``--restart-pause``.
  ``fairshare``/``priority``: ``nbrunner.core.allocate.allocate`` with min 1 and max =
  the fewest GPUs reaching the job's peak measured throughput (adding GPUs past
  that no longer speeds it up), all priorities equal (5000; the workloads have
  none). The policy is applied at every arrival and completion and every
  ``--interval`` seconds (a periodic call whose inputs did not change since the
  last call is skipped: the function is pure, so it would return the same).
* Every start and every change of a job's GPU count pauses it for
  ``--restart-pause`` seconds (GPUs held, no progress; default 30 s, the Pollux
  simulator's figure). ``restarts`` counts every change of a job's GPU count
  after its first start (resizes, preemptions and restarts).
* Metrics: JCT = finish - submit; p99 by linear interpolation; makespan = last
  finish - first submit; utilization = allocated GPU-seconds / (GPUs x makespan).
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import math
import os
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from nbrunner.core.allocate import allocate

__all__ = ["AppModel", "Job", "SimResult", "load_apps", "load_workload", "simulate", "main"]

POLICIES = ("static", "tiresias", "fairshare", "priority", "goodput")
TIRESIAS_THRESHOLD = 3600.0 * 16  # GPU-seconds of attained service before demotion
EPOCHS = {"bert": 2, "cifar10": 100, "ncf": 10, "imagenet": 90, "deepspeech2": 80, "yolov3": 50}
DEFAULT_PRIORITY = 5000
_EPS = 1e-9


class AppModel:
    """Step time and work of one application, from its measured traces."""

    def __init__(self, name: str, trace_dir: str | os.PathLike):
        self.name = name
        d = Path(trace_dir)
        points: dict[int, dict[int, dict[int, list[tuple[float, float]]]]] = {}  # r -> nodes -> bsz -> [(t, s)]

        def add(r: int, nodes: int, bsz: int, step: float, sync: float) -> None:
            points.setdefault(r, {}).setdefault(nodes, {}).setdefault(bsz, []).append((step, sync))

        with open(d / "placements.csv", newline="") as f:
            for row in csv.DictReader(f):
                p = row["placement"].strip()
                add(sum(int(c) for c in p), len(p), int(row["local_bsz"]), float(row["step_time"]),
                    float(row["sync_time"]))
        scal = d / "scalability.csv"
        if scal.exists():
            with open(scal, newline="") as f:
                for row in csv.DictReader(f):
                    add(int(row["num_replicas"]), int(row["num_nodes"]), int(row["local_bsz"]),
                        float(row["step_time"]), float(row["sync_time"]))
        if not points:
            raise ValueError(f"no step-time measurements in {d}")
        self.replicas = np.array(sorted(points), dtype=np.int64)
        self.tables: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for r, by_nodes in points.items():
            rows = by_nodes[min(by_nodes)]  # best-packed measurement of this GPU count
            bs = sorted(rows)
            self.tables[r] = (
                np.array(bs, dtype=np.float64),
                np.array([np.mean([t for t, _ in rows[b]]) for b in bs]),
                np.array([np.mean([s for _, s in rows[b]]) for b in bs]),
            )
        self.max_replicas = int(self.replicas[-1])

        self.samples: dict[int, float] = {}  # global batch -> samples to finish
        for path in glob.glob(str(d / "validation-*.csv")):
            bsz = int(Path(path).stem.rsplit("-", 1)[1])
            with open(path, newline="") as f:
                iters = [float(row["iteration"]) for row in csv.DictReader(f)]
            if not iters:
                continue
            epochs = EPOCHS.get(name, len(iters))
            steps = iters[epochs - 1] if epochs <= len(iters) else iters[-1] * epochs / len(iters)
            self.samples[bsz] = steps * bsz
        if not self.samples:
            raise ValueError(f"no validation-<batch>.csv in {d}")
        self._cache: dict[tuple[int, int], float] = {}

    def total_steps(self, batch: int) -> float:
        """Steps of global batch ``batch`` needed to finish training."""
        if batch in self.samples:
            return self.samples[batch] / batch
        bs = sorted(self.samples)
        samples = float(np.interp(math.log(batch), np.log(bs), [self.samples[b] for b in bs]))
        return samples / batch

    def _measured(self, r: int, local: float) -> float:
        bs, step, sync = self.tables[r]
        if local <= bs[-1]:
            return float(np.interp(local, bs, step))  # held at bs[0] below the measured range
        k = math.ceil(local / bs[-1] - 1e-12)
        micro = local / k
        t, s = float(np.interp(micro, bs, step)), float(np.interp(micro, bs, sync))
        return k * t - (k - 1) * min(s, t)

    def step_time(self, r: int, batch: int) -> float:
        """Seconds per step on ``r`` GPUs at global batch ``batch``."""
        key = (r, batch)
        t = self._cache.get(key)
        if t is None:
            if r < 1:
                raise ValueError("need at least one GPU")
            r_eff = min(r, self.max_replicas)
            i = int(np.searchsorted(self.replicas, r_eff))
            r_hi = int(self.replicas[i])
            if r_hi == r_eff:
                t = self._measured(r_hi, batch / r_hi)
            elif i == 0:  # fewer GPUs than any measurement: scale the smallest one up
                t = self._measured(r_hi, batch / r_hi) * r_hi / r_eff
            else:
                r_lo = int(self.replicas[i - 1])
                t_lo, t_hi = self._measured(r_lo, batch / r_lo), self._measured(r_hi, batch / r_hi)
                t = t_lo + (t_hi - t_lo) * (r_eff - r_lo) / (r_hi - r_lo)
            self._cache[key] = t
        return t

    def best_replicas(self, batch: int, limit: int) -> int:
        """Fewest GPUs (<= limit) reaching the highest measured throughput at ``batch``."""
        limit = max(1, min(limit, self.max_replicas))
        times = [self.step_time(r, batch) for r in range(1, limit + 1)]
        return int(np.argmin(times)) + 1  # argmin returns the first (fewest GPUs) optimum


@lru_cache(maxsize=8)
def _load_apps_cached(traces: str) -> dict[str, AppModel]:
    apps = {}
    for sub in sorted(Path(traces).iterdir()):
        if sub.is_dir() and (sub / "placements.csv").exists():
            apps[sub.name] = AppModel(sub.name, sub)
    if not apps:
        raise ValueError(f"no application traces under {traces}")
    return apps


def load_apps(traces: str | os.PathLike) -> dict[str, AppModel]:
    """All applications under a traces directory (cached per directory)."""
    return _load_apps_cached(str(Path(traces).resolve()))


@dataclass
class Job:
    """One workload row plus its simulation state."""

    idx: int
    name: str
    submit: float
    app: str
    replicas: int
    batch: int
    steps: float = 0.0
    done: float = 0.0
    gpus: int = 0
    step_time: float = math.inf
    paused_until: float = 0.0
    start: float | None = None
    finish: float | None = None
    resizes: int = 0
    max_gpus: int = 1
    restarts: int = 0
    attained: float = 0.0  # GPU-seconds run (tiresias)
    queue: int = 0  # tiresias queue
    queued_at: float = 0.0  # arrival in the current tiresias queue
    measured: dict = field(default_factory=dict)  # gpus -> samples/s seen (goodput)


def load_workload(path: str | os.PathLike) -> list[Job]:
    """Jobs of a workload CSV (``name,time,application,num_replicas,batch_size``)."""
    jobs = []
    with open(path, newline="") as f:
        for i, row in enumerate(csv.DictReader(f)):
            jobs.append(Job(i, row["name"], float(row["time"]), row["application"].strip(),
                            int(row["num_replicas"]), int(row["batch_size"])))
    return jobs


@dataclass
class SimResult:
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
             interval: float = 60.0) -> SimResult:
    """Replay a workload on ``gpus`` GPUs under ``policy`` and return the metrics."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; expected one of {POLICIES}")
    if gpus < 1:
        raise ValueError("gpus must be >= 1")
    if isinstance(workload, list):
        if traces is None:
            raise ValueError("traces is required when passing jobs")
        jobs = [Job(j.idx, j.name, j.submit, j.app, j.replicas, j.batch) for j in workload]
    else:
        jobs = load_workload(workload)
        if traces is None:
            traces = Path(workload).resolve().parent.parent / "traces"
    apps = load_apps(traces)
    for j in jobs:
        if j.app not in apps:
            raise ValueError(f"job {j.name}: no traces for application {j.app!r} in {traces}")
        model = apps[j.app]
        j.steps = model.total_steps(j.batch)
        j.max_gpus = model.best_replicas(j.batch, gpus)
    if not jobs:
        return SimResult(policy, gpus, np.zeros(0), 0.0, 0.0, [])

    arrivals = sorted(jobs, key=lambda j: (j.submit, j.idx))
    t0 = arrivals[0].submit
    now = t0
    nxt = 0  # next arrival
    active: dict[int, Job] = {}
    gpu_seconds = 0.0
    dirty = False  # policy inputs changed since the last call
    alloc_policy = "fairshare" if policy == "static" else policy
    for j in jobs:
        j.queued_at = j.submit

    def finish_time(j: Job) -> float:
        return max(now, j.paused_until) + (j.steps - j.done) * j.step_time

    def tiresias() -> dict[int, int]:
        for j in active.values():
            if j.queue == 0 and j.attained >= TIRESIAS_THRESHOLD:
                j.queue, j.queued_at = 1, now
        free = gpus
        grant = {}
        for j in sorted(active.values(), key=lambda j: (j.queue, j.queued_at, j.idx)):
            need = min(j.replicas, gpus)
            grant[j.idx] = need if need <= free else 0
            free -= grant[j.idx]
        return grant

    def reallocate() -> None:
        nonlocal dirty
        if policy == "tiresias":
            grant = tiresias()
        else:
            demands = []
            for j in active.values():
                if policy == "static":
                    lo = hi = min(j.replicas, gpus)
                else:
                    lo, hi = 1, j.max_gpus
                d = {"id": j.idx, "min_gpus": lo, "max_gpus": hi, "priority": DEFAULT_PRIORITY,
                     "submitted_at": j.submit, "running": j.gpus > 0}
                if policy == "goodput":
                    d.update(throughput=j.measured, gpus=j.gpus, pause_s=restart_pause)
                demands.append(d)
            grant = allocate(gpus, demands, alloc_policy)
        dirty = False
        for idx, g in grant.items():
            j = active[idx]
            if g == j.gpus:
                continue
            if j.gpus == 0:
                if j.start is None:
                    j.start = now
                else:
                    j.restarts += 1
                dirty = True  # the running set changed
            else:
                j.resizes += 1
                j.restarts += 1
            j.gpus = g
            if g == 0:
                j.step_time = math.inf
                dirty = True
            else:
                j.step_time = apps[j.app].step_time(g, j.batch)
                j.paused_until = now + restart_pause
                if policy == "goodput":
                    j.measured.setdefault(g, j.batch / j.step_time)
                    dirty = True  # its inputs (gpus, throughput) changed
        if policy == "static":
            dirty = False  # static has no periodic reallocation
        elif policy == "tiresias":
            dirty = bool(active)  # attained service grows: check demotions every interval

    while nxt < len(arrivals) or active:
        t_arrival = arrivals[nxt].submit if nxt < len(arrivals) else math.inf
        t_finish = math.inf
        for j in active.values():
            if j.gpus:
                t_finish = min(t_finish, finish_time(j))
        t_tick = (math.floor((now - t0) / interval + _EPS) + 1) * interval + t0 if dirty and interval > 0 else math.inf
        t_next = min(t_arrival, t_finish, t_tick)
        if t_next == math.inf:
            raise RuntimeError("simulation stalled: queued jobs can never be admitted")

        # Advance every running job to t_next.
        finished = []
        for j in active.values():
            if not j.gpus:
                continue
            gpu_seconds += j.gpus * (t_next - now)
            j.attained += j.gpus * (t_next - now)
            if finish_time(j) <= t_next + _EPS:
                finished.append(j)
            else:
                j.done += max(0.0, t_next - max(now, j.paused_until)) / j.step_time
        changed = bool(finished)
        for j in finished:
            j.finish = finish_time(j)
            j.done = j.steps
            del active[j.idx]
        now = t_next
        while nxt < len(arrivals) and arrivals[nxt].submit <= now:
            active[arrivals[nxt].idx] = arrivals[nxt]
            nxt += 1
            changed = True
        if changed or (dirty and now >= t_tick - _EPS):
            reallocate()

    jct = np.array([j.finish - j.submit for j in jobs])
    makespan = max(j.finish for j in jobs) - t0
    return SimResult(policy, gpus, jct, makespan, gpu_seconds, jobs)


def _summary(res: SimResult, workload: str) -> str:
    resizes = sum(j.resizes for j in res.jobs)
    wait = np.array([j.start - j.submit for j in res.jobs])
    lines = [
        f"workload      {workload}",
        f"policy        {res.policy} on {res.gpus} GPUs, {len(res.jobs)} jobs",
        f"avg JCT       {res.avg_jct_s:10.0f} s  ({res.avg_jct_s / 3600:.2f} h)",
        f"p99 JCT       {res.p99_jct_s:10.0f} s  ({res.p99_jct_s / 3600:.2f} h)",
        f"avg queueing  {wait.mean():10.0f} s  ({wait.mean() / 3600:.2f} h)",
        f"makespan      {res.makespan_s:10.0f} s  ({res.makespan_s / 3600:.2f} h)",
        f"utilization   {res.gpu_utilization:10.1%}",
        f"resizes       {resizes:10d}",
        f"restarts      {res.restarts:10d}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nbrunner.sim", description=__doc__.split("\n\n")[0])
    ap.add_argument("workload", help="workload CSV (name,time,application,num_replicas,batch_size)")
    ap.add_argument("--gpus", type=int, default=64, help="cluster size (default 64)")
    ap.add_argument("--policy", choices=POLICIES, default="fairshare")
    ap.add_argument("--json", action="store_true", help="print one JSON line of metrics")
    ap.add_argument("--restart-pause", type=float, default=30.0,
                    help="seconds lost per start/resize/restart (default 30)")
    ap.add_argument("--interval", type=float, default=60.0, help="periodic reallocation in seconds (default 60)")
    ap.add_argument("--traces", help="traces directory (default: <workload dir>/../traces)")
    args = ap.parse_args(argv)
    try:
        res = simulate(args.workload, args.gpus, args.policy, traces=args.traces,
                       restart_pause=args.restart_pause, interval=args.interval)
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(res.metrics()))
    else:
        print(_summary(res, args.workload))
    return 0


if __name__ == "__main__":
    sys.exit(main())
