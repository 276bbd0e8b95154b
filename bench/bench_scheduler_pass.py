"""One scheduler pass with a long queue, against reading that queue.

A real cluster (embedded Redis, one worker, stopped so that every job stays dispatched in rq's
queue, and the cluster's own scheduler stopped so this script's is the only one) holds N queued
jobs of one notebook, N = 1,000, 5,000 and 10,000. The value is a pass of
:class:`~nbrunner.control.scheduler.Scheduler` once every job is dispatched (what each pass of a
burst repeats: recovery checks, allocation, outlooks), the median of 5; the baseline, measured
in the same script on the same Redis, is reading the active records (one ``MGET``) and parsing
them, the least any pass that looks at every job must do. Goal: a pass within 10x that read.
The first pass (which dispatches every new job: a transition and an rq enqueue each) is
reported per job.

Run: ``python bench/bench_scheduler_pass.py``.
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_jobs import trivial_notebook  # noqa: E402
from table import print_table  # noqa: E402

SIZES = (1_000, 5_000, 10_000)
REPEATS = 5
GOAL = 10.0


def _stop_own(cluster) -> None:
    for child in cluster.supervisor.children:
        if child.name.startswith(("worker", "scheduler")):
            child.restart = False
            child.proc.terminate()
            child.proc.wait(30)


def _read_all(store) -> float:
    from nbrunner.core.keys import ACTIVE, job_key
    from nbrunner.core.models import JobRecord

    t = time.perf_counter()
    ids = sorted(store.r.smembers(ACTIVE))
    [JobRecord.from_json(raw) for raw in store.r.mget([job_key(i) for i in ids])]
    return time.perf_counter() - t


def run(verbose: bool = True) -> list[dict]:
    import nbrunner
    from nbrunner.control.scheduler import Scheduler

    ws = Path(tempfile.mkdtemp(prefix="nbs", dir="/tmp"))
    notebook = trivial_notebook(ws / "one.ipynb")
    saved = {k: os.environ.pop(k) for k in ("NBRUNNER_REDIS_URL", "NBRUNNER_STORAGE") if k in os.environ}
    rows = []
    try:
        with nbrunner.setup_cluster(gpus=0, workers=1, workspace=ws) as cluster:
            _stop_own(cluster)
            scheduler = Scheduler(cluster.settings)
            have = 0
            for n in SIZES:
                new = n - have
                while have < n:
                    k = min(1000, n - have)
                    cluster.submit_many([{"notebook": str(notebook), "parameters": {"X": have + i}} for i in range(k)])
                    have += k
                t = time.perf_counter()
                scheduler.step()
                first = time.perf_counter() - t
                passes, reads = [], []
                for _ in range(REPEATS):
                    t = time.perf_counter()
                    scheduler.step()
                    passes.append(time.perf_counter() - t)
                    reads.append(_read_all(cluster.store))
                value, base = statistics.median(passes), statistics.median(reads)
                if verbose:
                    print(f"{n} queued: pass {value * 1000:.0f} ms (first, dispatching {new} new jobs: "
                          f"{first * 1000:.0f} ms), reading them {base * 1000:.0f} ms", file=sys.stderr)
                rows.append({"benchmark": f"scheduler pass, {n:,} queued jobs / reading them, s", "value": value,
                             "baseline": base, "ratio": value / base, "goal": f"<= {GOAL:g}x",
                             "ok": value / base <= GOAL})
                rows.append({"benchmark": f"scheduler's first pass over {new:,} new jobs (dispatching each), ms per job",
                             "value": first * 1000 / new, "baseline": 1.0, "ratio": first * 1000 / new,
                             "goal": "report", "ok": True})
    finally:
        os.environ.update(saved)
    return rows


if __name__ == "__main__":
    print_table(run())
