"""How close nbrunner's expected starts come to the real ones, against Slurm's way, on replayed traces.

Traces: the eight shipped Pollux workloads (``nbrunner/sim/data/pollux/workloads``, 160 jobs
each over 8 hours: arrival time, application, GPUs), on 64 GPUs, jobs at their requested GPU
count (min = max), fairshare (first come, first served, no backfill).  Each job gets an owner
(one of 8 users, seeded) and its application is its notebook; its real wall time is the
application's run time at its GPU count (the sim's traces) times a log-normal factor (sigma 0.3:
the same notebook does not always take as long); each (owner, notebook) declares a time limit,
as Slurm users do, its typical run time times a factor drawn from 1.5..4, rounded up to 15 min.

The "real" cluster is the replay of the whole trace with the real wall times
(``nbrunner.core.replay``, the engine the simulator and the estimates share).  At each job's
arrival the queue as it stands then (the running jobs with their elapsed time and progress, in
steps of 5%, and the queued ones) is given to

* nbrunner: :func:`nbrunner.core.estimates.estimate`, queued jobs' durations from the median of
  their owner's last 10 completed runs of the same notebook (completed by then), running jobs'
  from their progress; None when there is nothing to go on;
* Slurm-style: the same replay with every job's declared limit as its duration (a running job:
  the limit minus what it has run), as ``squeue --start`` does;

and the arriving job's expected start is compared with its real one: error = |estimate - real|
/ real wait, over the jobs that waited at least a minute.  Reported: median and p90 of both,
and how many of nbrunner's were None (the first runs of a notebook, and jobs behind one).
Goal: nbrunner's median error below Slurm-style's.  Run: ``python bench/bench_estimates.py``.
"""
from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parent))
from table import format_table  # noqa: E402

import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

try:
    from nbrunner.core.estimates import estimate, median_duration, remaining_s
except ImportError:  # run as a script from anywhere
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from nbrunner.core.estimates import estimate, median_duration, remaining_s
from nbrunner.core.replay import Replay, ReplayState
from nbrunner.sim.apps import load_apps
from nbrunner.sim.workload import TRACES_DIR, bundled_workloads, load_workload

GPUS = 64
USERS = 8
SEED = 20261128
MIN_WAIT_S = 60.0
RUNS_KEPT = 10


@dataclass
class TraceJob(ReplayState):
    idx: int
    owner: str
    notebook: str
    submit: float
    gpus_asked: int
    actual: float  # real wall time, s
    limit: float  # declared time limit, s


class _Real(Replay):
    """The cluster: every job runs its real wall time."""

    def demand(self, j: TraceJob) -> dict:
        return {"id": j.idx, "min_gpus": j.gpus_asked, "max_gpus": j.gpus_asked, "priority": 5000,
                "submitted_at": j.submit, "running": j.start is not None}

    def set_pace(self, j: TraceJob) -> None:
        j.unit_time, j.boundary = 1.0, j.work


def make_trace(path: Path, rng: np.random.Generator) -> list[TraceJob]:
    apps = load_apps(TRACES_DIR)
    rows = load_workload(path)
    owners = [f"user{k}" for k in range(USERS)]
    typical: dict[tuple[str, str], float] = {}
    limits: dict[tuple[str, str], float] = {}
    jobs = []
    for r in rows:
        g = min(r.replicas, GPUS)
        base = apps[r.app].total_steps(r.batch) * apps[r.app].step_time(g, r.batch)
        owner = owners[int(rng.integers(USERS))]
        key = (owner, r.app)
        typical.setdefault(key, base)
        if key not in limits:
            limits[key] = math.ceil(typical[key] * rng.uniform(1.5, 4.0) / 900.0) * 900.0
        actual = base * float(rng.lognormal(0.0, 0.3))
        jobs.append(TraceJob(r.idx, owner, r.app, r.submit, g, actual, max(limits[key], actual)))
    return jobs


def replay_real(jobs: list[TraceJob]) -> None:
    for j in jobs:
        j.work = j.actual
    _Real(jobs, GPUS, "fairshare", 0.0, 0.0, None).run()


def snapshot(jobs: list[TraceJob], t: float, slurm: bool) -> list[dict]:
    """The queue at ``t`` as the scheduler sees it, each job with its remaining wall time."""
    rows = []
    done = [j for j in jobs if j.finish is not None and j.finish <= t]
    history: dict[tuple[str, str], list[float]] = {}
    for j in sorted(done, key=lambda j: -j.finish):
        history.setdefault((j.owner, j.notebook), []).append(j.actual)
    for j in jobs:
        if j.submit > t or (j.finish is not None and j.finish <= t):
            continue
        running = j.start is not None and j.start <= t
        elapsed = t - j.start if running else 0.0
        if slurm:
            rest = max(j.limit - elapsed, 0.0)
        else:
            usual = median_duration(history.get((j.owner, j.notebook), [])[:RUNS_KEPT])
            progress = math.floor(elapsed / j.actual * 20) / 20 if running else None
            rest = remaining_s(elapsed, progress or None, usual) if running else usual
        rows.append({"id": j.idx, "min_gpus": j.gpus_asked, "max_gpus": j.gpus_asked, "priority": 5000,
                     "submitted_at": j.submit, "running": running, "remaining_s": rest,
                     "held": j.gpus_asked if running else 0})
    return rows


def errors(jobs: list[TraceJob]) -> tuple[list[float], list[float], list[float], int, int]:
    """Relative start errors of nbrunner's and Slurm-style estimates (all, and on the jobs nbrunner
    estimated), nbrunner's Nones, and jobs judged."""
    ours, theirs, same, unknown, judged = [], [], [], 0, 0
    for j in jobs:
        wait = j.start - j.submit
        if wait < MIN_WAIT_S:
            continue
        judged += 1
        got = estimate(j.submit, GPUS, "fairshare", snapshot(jobs, j.submit, slurm=False)).get(j.idx, (None, None))[0]
        slurm = estimate(j.submit, GPUS, "fairshare", snapshot(jobs, j.submit, slurm=True))[j.idx][0]
        theirs.append(abs(slurm - j.start) / wait)
        if got is None:
            unknown += 1
        else:
            ours.append(abs(got - j.start) / wait)
            same.append(theirs[-1])
    return ours, theirs, same, unknown, judged


def run(verbose: bool = True) -> list[dict]:
    rng = np.random.default_rng(SEED)
    ours, theirs, same, unknown, judged = [], [], [], 0, 0
    t0 = time.perf_counter()
    for path in bundled_workloads():
        jobs = make_trace(path, rng)
        replay_real(jobs)
        o, s, sm, u, n = errors(jobs)
        ours += o
        theirs += s
        same += sm
        unknown += u
        judged += n
    took = time.perf_counter() - t0
    med, p90 = float(np.median(ours)), float(np.percentile(ours, 90))
    smed, sp90 = float(np.median(theirs)), float(np.percentile(theirs, 90))
    if verbose:
        print(f"{judged} jobs waited >= {MIN_WAIT_S:g} s in 8 Pollux workloads on {GPUS} GPUs; nbrunner gave "
              f"{judged - unknown} estimates ({unknown} None), Slurm-style {len(theirs)}; {took:.1f} s")
    return [
        {"benchmark": "expected start: median abs error / wait, nbrunner vs Slurm-style", "value": med,
         "baseline": smed, "ratio": med / smed, "goal": "< 1", "ok": med < smed},
        {"benchmark": "expected start: p90 abs error / wait, nbrunner vs Slurm-style", "value": p90,
         "baseline": sp90, "ratio": p90 / sp90, "goal": "report", "ok": True},
        {"benchmark": "expected start: median abs error / wait, nbrunner vs Slurm-style, the jobs nbrunner estimated",
         "value": med, "baseline": float(np.median(same)), "ratio": med / float(np.median(same)), "goal": "report",
         "ok": True},
        {"benchmark": "expected start: share of waiting jobs with an estimate (nbrunner; Slurm-style always)",
         "value": (judged - unknown) / judged, "baseline": 1.0, "ratio": (judged - unknown) / judged,
         "goal": "report", "ok": True},
    ]


if __name__ == "__main__":
    print(format_table(run()))
