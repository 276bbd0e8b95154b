"""The cost of one Prometheus scrape of the cluster's metrics (``GET /metrics``, ``nbrunner metrics``)
with 20,000 jobs in Redis, on a live cluster (embedded Redis, scheduler, a worker with 4 CPU slots).

The collector reads the counters hash, one ``ZCARD`` per finished status, the live workers and
accounts, and the records of the live jobs only: a history of finished jobs must not make a
scrape dearer.  Measured (median of ``SCRAPES`` scrapes, the whole text exposition in-process,
then over HTTP from ``nbrunner metrics``):

(a) 20,000 finished jobs against the baseline of reading those records once (what a collector that
    scanned the history would do at every scrape). Goal: at most a tenth of it.
(b) the same scrape against an empty cluster's. Goal: at most 2x.
(c) 19,000 finished and 1,000 queued jobs (the live records are read, as the allocator reads
    them each pass), against (a)'s baseline: reported.

Run: ``python bench/bench_metrics.py``.
"""
from __future__ import annotations

import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from table import format_table  # noqa: E402

JOBS = 20_000
LIVE = 1_000
SCRAPES = 30
ACCOUNTS = 8


def scrape_ms(store) -> float:
    """Median milliseconds of one in-process scrape (the text GET /metrics answers)."""
    from nbrunner.control.cluster_metrics import exposition

    times = []
    for _ in range(SCRAPES):
        t = time.perf_counter()
        body, _ = exposition(lambda: store)
        times.append((time.perf_counter() - t) * 1000)
        assert b"nbrunner_up 1.0" in body
    return statistics.median(times)


def http_ms(url: str) -> float:
    times = []
    for _ in range(SCRAPES):
        t = time.perf_counter()
        with urllib.request.urlopen(url, timeout=30) as resp:
            resp.read()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def fill_finished(store, n: int) -> None:
    """``n`` finished jobs, filed as the store files them (record, the listing, its status and
    finish-time indexes), written in pipelined batches; and counters as their ends added them."""
    from nbrunner.control.counters import add
    from nbrunner.core.counters import merge, transition_counts
    from nbrunner.core.keys import FINISHED_AT, JOBS, job_key, status_index
    from nbrunner.core.lifecycle import CancelRequested, Dispatch, Finish, ReleaseConfirmed, Start, submitted, transition
    from nbrunner.core.models import JobRecord

    now = time.time()
    counts: list[dict[str, float]] = []
    for start in range(0, n, 1000):
        with store.r.pipeline(transaction=False) as p:
            for i in range(start, min(n, start + 1000)):
                rec = submitted(JobRecord(id=f"b{i:07d}", name=f"bench {i}", notebook="bench.ipynb", owner=f"user{i % 40}",
                                          account=f"acct{i % ACCOUNTS}", min_gpus=1, max_gpus=2,
                                          created_at="2026-11-01T00:00:00.000Z"))
                events = ([CancelRequested(at="2026-11-01T00:00:03.000Z")] if i % 10 == 0 else
                          [Dispatch(host="h"), Start(attempt=1, worker="w", host="h", at="2026-11-01T00:00:05.000Z"),
                           Finish(attempt=1, at="2026-11-01T00:20:00.000Z"),
                           ReleaseConfirmed(attempt=1, worker="w", at="2026-11-01T00:20:00.000Z")])
                for e in events:
                    done = transition(rec, e)
                    if len(counts) < 2000:  # the counters' fields are the same after that: skip the work
                        counts.append(transition_counts(rec, done.record, done.event))
                    rec = done.record
                score = now - n + i
                p.set(job_key(rec.id), rec.to_json())
                p.zadd(JOBS, {rec.id: score})
                p.zadd(status_index(rec.status.value), {rec.id: score})
                p.zadd(FINISHED_AT, {rec.id: score})
            p.execute()
    add(store.r, merge(*counts))


def run() -> list[dict]:
    import nbrunner
    from support import free_port, make_notebook

    ws = Path(tempfile.mkdtemp(prefix="nbmet", dir="/tmp"))
    make_notebook(ws / "bench.ipynb", "print('never runs: it asks for more GPUs than there are')")
    with nbrunner.setup_cluster(gpus=4, workers=1, workspace=ws) as cluster:
        import subprocess

        store = cluster.store
        empty = scrape_ms(store)
        fill_finished(store, JOBS)
        t = time.perf_counter()
        assert len(store.all()) == JOBS
        scan = (time.perf_counter() - t) * 1000
        finished = scrape_ms(store)
        port = free_port()
        exporter = subprocess.Popen([sys.executable, "-m", "nbrunner", "metrics", "--port", str(port), "--dir", str(ws)],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            exporter.stdout.readline()
            over_http = http_ms(f"http://127.0.0.1:{port}/metrics")
        finally:
            exporter.terminate()
            exporter.wait(20)
        for _ in range(LIVE):  # queued for good: 64 GPUs asked of 4
            cluster.submit("bench.ipynb", min_gpus=64, max_gpus=64)
        with_live = scrape_ms(store)
    return [
        {"benchmark": f"scrape, {JOBS} finished jobs, vs reading their records once (ms)", "value": finished,
         "baseline": scan, "ratio": finished / scan, "goal": "<= 0.1", "ok": finished / scan <= 0.1},
        {"benchmark": f"scrape, {JOBS} finished jobs, vs an empty cluster (ms)", "value": finished,
         "baseline": empty, "ratio": finished / empty, "goal": "<= 2", "ok": finished / empty <= 2},
        {"benchmark": f"scrape over HTTP from nbrunner metrics, {JOBS} finished jobs (ms)", "value": over_http,
         "baseline": scan, "ratio": over_http / scan, "goal": "<= 0.1", "ok": over_http / scan <= 0.1},
        {"benchmark": f"scrape, {JOBS - LIVE} finished + {LIVE} queued jobs (ms)", "value": with_live,
         "baseline": scan, "ratio": with_live / scan, "goal": "report", "ok": True},
    ]


if __name__ == "__main__":
    print(format_table(run()))
