"""A scaled-down trace on a live local cluster: average JCT under goodput, fairshare and Tiresias-like static sizing.

The same trace runs three times, one schedule after the other, each on a fresh cluster of
``SLOTS`` CPU slots: seven ElasticTrainer jobs arriving over 100 s, of two kinds whose
throughput scales differently with their learners, and of lengths from about 18 to 150 seconds
of training on one learner (four minutes or so a schedule, with the jobs' start-up).  The
longest job is a small model that does not scale: a share of the slots is wasted on it.

* Step cost: each job's loss takes as long as a model of its kind would (``StepCost``):
  ``fixed + per_sample * local_batch + sync * (learners - 1)`` seconds a step, slept, so the
  learners of several jobs share the machine's two cores without taking them from each other.
  ``scalable`` (a large model: most of the step is per-sample compute) speeds up about 2.9x
  on 4 learners; ``flat`` (a small model: a fixed step cost and more synchronisation) 1.05x
  on 2 and slower from 3 on.
* ``goodput``: the service's goodput policy (attained service from the GPU timelines, its first
  queue scaled to ``QUEUE_S`` GPU-seconds as the jobs are scaled down, throughput measured by the
  jobs); jobs elastic between 1 and ``SLOTS`` learners.
* ``fairshare``: the service's fairshare policy, the same elastic jobs.
* ``tiresias``: static sizes as the Tiresias baseline of ``nbrunner.sim``: each job runs on
  exactly its requested learners (``min = max``), and this script dispatches it, least attained
  service first with backfill, when its size fits in the free slots (the service's own
  admission has no backfill).  The jobs that wait have received no service, so that order is
  arrival order; what this emulation lacks is Tiresias's preemption of jobs past its first queue
  (the service preempts only for accounts), so a short job that arrives while long ones hold the
  slots waits for one of them to end.

JCT is from the job's arrival (its submission; for ``tiresias`` the trace's arrival time) to its
``finished_at``. Rows: goodput's average JCT against fairshare's and against tiresias's (goal:
below both, ratio < 1), each schedule's makespan, and the machine's load.

Run: ``python bench/bench_live_trace.py`` (``--quick``: 3 jobs, about 3 minutes in all;
``--timelines``: print every job's measured throughput and GPU timeline under each schedule;
``--adaptive-batch``: every job is ``ElasticTrainer(adaptive_batch=True)``, its global batch
``BATCH`` per learner up to ``BATCH x SLOTS``, under all three schedules).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from table import format_table  # noqa: E402

SLOTS = 4
QUEUE_S = 60.0
BATCH = 64
N_TRAIN = 640  # 10 steps an epoch at the global batch of 64
KINDS = {  # (fixed s, s per sample of the local batch, s per further learner)
    "scalable": (0.01, 0.004, 0.005),
    "flat": (0.06, 0.0005, 0.012),
}
# (arrival s, name, kind, epochs, learners requested under static sizing)
TRACE = [
    (0, "long-a", "flat", 160, 2),
    (10, "short-b", "scalable", 12, 2),
    (25, "mid-c", "scalable", 30, 4),
    (45, "short-d", "scalable", 10, 2),
    (60, "short-e", "flat", 20, 1),
    (80, "long-f", "scalable", 50, 4),
    (100, "short-g", "scalable", 10, 2),
]
QUICK = [(0, "long-a", "scalable", 24, 4), (6, "short-b", "scalable", 4, 2), (12, "short-c", "flat", 6, 1)]
SCHEDULES = ("goodput", "fairshare", "tiresias")

SETUP = '''import time
import torch
from torch import nn
from nbrunner.elastic import ElasticTrainer


def get_datasets():
    from torch.utils.data import TensorDataset
    g = torch.Generator().manual_seed(0)
    X = torch.randn(N_TRAIN + 256, 16, generator=g)
    y = (X @ torch.randn(16, 4, generator=g)).argmax(1)
    return TensorDataset(X[:N_TRAIN], y[:N_TRAIN]), TensorDataset(X[N_TRAIN:], y[N_TRAIN:])


class StepCost(nn.Module):
    """Cross-entropy that takes as long as a step of a model of this kind: a fixed cost, a cost
    per sample of the learner's batch, and a synchronisation cost per further learner."""

    def __init__(self, fixed, per_sample, sync):
        super().__init__()
        self.fixed, self.per_sample, self.sync = fixed, per_sample, sync

    def forward(self, out, y):
        if out.requires_grad:
            import torch.distributed as dist
            w = dist.get_world_size() if dist.is_initialized() else 1
            time.sleep(self.fixed + self.per_sample * len(y) + self.sync * (w - 1))
        return nn.functional.cross_entropy(out, y)


torch.manual_seed(0)
model = nn.Linear(16, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
history = ElasticTrainer(model, get_datasets, StepCost(FIXED, PER_SAMPLE, SYNC), optimizer, adaptive_batch=ADAPTIVE,
                         max_batch=MAX_BATCH if ADAPTIVE else None).train(
    epochs=EPOCHS, effective_batch_size=BATCH, max_gpus=MAX_GPUS, min_gpus=MIN_GPUS, verbose=0,
    checkpoint_every=0, threads_per_learner=1)
'''
PARAMS = ("EPOCHS = 1\nFIXED = 0.01\nPER_SAMPLE = 0.001\nSYNC = 0.0\nMAX_GPUS = 1\nMIN_GPUS = 1\nBATCH = 64\n"
          "N_TRAIN = 640\nADAPTIVE = False\nMAX_BATCH = 256")


def job_parameters(kind: str, epochs: int, lo: int, hi: int, adaptive: bool = False) -> dict:
    fixed, per_sample, sync = KINDS[kind]
    return {"EPOCHS": epochs, "FIXED": fixed, "PER_SAMPLE": per_sample, "SYNC": sync, "MIN_GPUS": lo, "MAX_GPUS": hi,
            "BATCH": BATCH, "N_TRAIN": N_TRAIN, "ADAPTIVE": adaptive, "MAX_BATCH": BATCH * SLOTS}


def _finished_at(job) -> float | None:
    from nbrunner.core.models import parse_time

    rec = job.record
    if rec.status in ("completed", "failed", "cancelled"):
        if rec.status != "completed":
            raise RuntimeError(f"job {rec.name} {rec.status}: {rec.error}")
        return parse_time(rec.finished_at).timestamp()
    return None


def run_schedule(schedule: str, trace: list, ws: Path, show: bool = False, adaptive: bool = False
                 ) -> dict[str, float]:
    """JCT (s) of every job of ``trace`` under ``schedule``, ``"makespan"`` and ``"slots held"`` (the
    mean fraction of the slots held); ``show``: print each job's throughput and GPU timeline."""
    import nbrunner

    policy = {"tiresias": "priority"}.get(schedule, schedule)
    os.environ["NBRUNNER_GOODPUT_QUEUE_S"] = str(QUEUE_S)
    with nbrunner.setup_cluster(gpus=SLOTS, workers=SLOTS, workspace=ws, policy=policy) as cluster:
        pending = sorted(trace)
        running: dict[str, tuple] = {}  # name -> (job, arrival wall time, requested learners)
        jct: dict[str, float] = {}
        used: list[int] = []
        t0 = last = time.time()
        while pending or running:
            now = time.time() - t0
            arrived = [t for t in pending if t[0] <= now]
            free = SLOTS - sum(req for _, _, req in running.values())
            for item in arrived:  # static sizing: submitted when its size fits (backfill), in arrival order
                at, name, kind, epochs, req = item
                lo, hi = (req, req) if schedule == "tiresias" else (1, SLOTS)
                if schedule == "tiresias" and req > free:
                    continue
                job = cluster.submit("train.ipynb", job_parameters(kind, epochs, lo, hi, adaptive), name=name,
                                     min_gpus=lo, max_gpus=hi)
                running[name] = (job, t0 + at, req)
                free -= req
                pending.remove(item)
            held = sum(job.refresh().record.gpus for job, _, _ in running.values())
            used.append(held)
            for name, (job, arrival, _) in list(running.items()):
                end = _finished_at(job)
                if end is not None:
                    jct[name] = end - arrival
                    last = max(last, end)
                    del running[name]
            time.sleep(0.25)
        jct["makespan"] = last - t0
        jct["slots held"] = sum(used) / len(used) / SLOTS
        if show:
            _show_timelines(schedule, cluster)
    return jct


def _show_timelines(schedule: str, cluster) -> None:
    """Each job's measured samples/s by learner count and its GPU timeline (mm:ss, GPUs)."""
    for job in sorted(cluster.jobs(), key=lambda j: j.record.created_at):
        r = job.record
        print(f"{schedule} {r.name}: samples/s {({k: round(v) for k, v in sorted(r.throughput.items())})}, "
              f"GPUs {[(p['t'][14:19], p['gpus']) for p in job.timeline()]}", flush=True)


def run(trace: list | None = None, show: bool = False, adaptive: bool = False) -> list[dict]:
    from support import make_notebook

    trace = TRACE if trace is None else trace
    results, loads = {}, []
    for schedule in SCHEDULES:  # each on a fresh cluster in a workspace of its own
        ws = Path(tempfile.mkdtemp(prefix="nbtrace", dir="/tmp"))
        make_notebook(ws / "train.ipynb", SETUP, parameters=PARAMS)
        results[schedule] = run_schedule(schedule, trace, ws, show, adaptive)
        loads.append(os.getloadavg()[0])
        shutil.rmtree(ws, ignore_errors=True)
    names = [name for _, name, *_ in trace]
    print("| job | " + " | ".join(SCHEDULES) + " |\n|---|" + "---:|" * len(SCHEDULES))
    for name in names + ["makespan", "slots held"]:
        print(f"| {name} | " + " | ".join(f"{results[s][name]:.1f}" for s in SCHEDULES) + " |")
    avg = {s: statistics.mean(results[s][n] for n in names) for s in SCHEDULES}
    load = f"load {statistics.mean(loads):.1f} on {os.cpu_count()} cores" + (", batch-adapting jobs" if adaptive else "")
    rows = []
    for base in ("fairshare", "tiresias"):
        ratio = avg["goodput"] / avg[base]
        rows.append({"benchmark": f"live trace ({len(trace)} jobs, {SLOTS} CPU slots): goodput avg JCT (s) vs {base} "
                                  f"({load})", "value": avg["goodput"], "baseline": avg[base], "ratio": ratio,
                     "goal": f"below {base}", "ok": ratio < 1.0})
    for s in ("fairshare", "tiresias"):
        rows.append({"benchmark": f"live trace: {s} avg JCT (s) vs goodput's", "value": avg[s],
                     "baseline": avg["goodput"], "ratio": avg[s] / avg["goodput"], "goal": "report", "ok": True})
    rows.append({"benchmark": "live trace: goodput makespan (s) vs fairshare's", "value": results["goodput"]["makespan"],
                 "baseline": results["fairshare"]["makespan"],
                 "ratio": results["goodput"]["makespan"] / results["fairshare"]["makespan"], "goal": "report", "ok": True})
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 jobs, about 3 minutes in all")
    ap.add_argument("--timelines", action="store_true",
                    help="print every job's measured throughput and GPU timeline under each schedule")
    ap.add_argument("--adaptive-batch", action="store_true",
                    help="every job is ElasticTrainer(adaptive_batch=True): its global batch grows with its learners "
                         "(BATCH per learner, up to BATCH x SLOTS); static sizing runs them at their requested size")
    args = ap.parse_args()
    print(format_table(run(QUICK if args.quick else TRACE, args.timelines, args.adaptive_batch)))
