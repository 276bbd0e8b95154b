"""A history that scales: with 100,000 finished jobs in Redis, ``GET /jobs?limit=50`` through a
real Jupyter server and one scheduler pass, each against a twin cluster with an empty history
(two embedded Redis servers, two Jupyter servers; A and B measured in turn, so load hits both).

The records are realistic (parameters, metrics, owners, the three end states, times spread over
30 days) and written with pipelines, as the store files them (record, ``nbrunner:jobs``, the
status index, ``nbrunner:finished``)."""
from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loadgen import call, jupyter_server  # noqa: E402

GOAL_P99_S = 0.050


def fill(store, n: int, seed: int = 0, owners: tuple[str, ...] = ("alice", "bob", "carol", "dan")) -> float:
    """Write ``n`` finished job records (of ``owners``); returns the seconds it took."""
    from nbrunner.control.submit import new_id
    from nbrunner.control.job_write import JobWrite, queue_write
    from nbrunner.core.models import JobRecord

    rng = random.Random(seed)
    now = time.time()
    t = time.perf_counter()
    with store.r.pipeline(transaction=False) as p:
        for i in range(n):
            created = now - 30 * 86400 + i * (30 * 86400 / n)
            start = datetime.fromtimestamp(created + rng.uniform(0.5, 30), timezone.utc)
            end = start + timedelta(seconds=rng.uniform(5, 3600))
            status = rng.choices(("completed", "failed", "cancelled"), (0.85, 0.1, 0.05))[0]
            rec = JobRecord(
                id=new_id(), name=f"digits lr={rng.choice((0.01, 0.05, 0.1))} #{i}", notebook="/home/user/digits.ipynb",
                parameters={"EPOCHS": rng.randint(1, 20), "LR": rng.choice((0.01, 0.05, 0.1)), "SEED": i},
                status=status, owner=rng.choice(owners), max_gpus=rng.choice((0, 1, 2, 4)),
                created_at=datetime.fromtimestamp(created, timezone.utc).isoformat(timespec="milliseconds"),
                started_at=start.isoformat(timespec="milliseconds"), finished_at=end.isoformat(timespec="milliseconds"),
                output=f"/home/user/runs/x{i}/output.ipynb", progress=1.0 if status == "completed" else rng.random(),
                metrics={"loss": rng.random(), "accuracy": rng.random()} if status != "cancelled" else {},
                error="ValueError: diverged" if status == "failed" else None, attempt=1, worker=f"host.{i % 7}",
            )
            queue_write(p, JobWrite(rec.id, rec, score=created, new=True))  # as the store files a job
            if i % 2000 == 1999:
                p.execute()
        p.execute()
    return time.perf_counter() - t


def percentiles(times: list[float]) -> tuple[float, float]:
    times = sorted(times)
    return statistics.median(times), times[min(len(times) - 1, int(round(0.99 * (len(times) - 1))))]


def alternate(a, b, n: int, warmup: int = 5) -> tuple[tuple[float, float], tuple[float, float]]:
    """(p50, p99) seconds of ``a()`` and of ``b()``, called in turn ``n`` times each (after ``warmup``;
    A B B A ..., so neither always runs first)."""
    ta, tb = [], []
    for i in range(n + warmup):
        for f, out in ((a, ta), (b, tb))[::1 if i % 2 else -1]:
            t = time.perf_counter()
            f()
            if i >= warmup:
                out.append(time.perf_counter() - t)
    return percentiles(ta), percentiles(tb)


def get(base: str, token: str, path: str):
    def once() -> None:
        code, body = call(base, token, "GET", path)
        assert code == 200 and len(body["jobs"]) <= 50, (code, body)

    return once


def commands(store, f) -> int:
    """Redis commands ``f()`` sends (a script's calls count), from the server's own counter."""
    def count() -> int:
        return int(store.r.info("stats")["total_commands_processed"])

    before = count()
    f()
    return count() - before - 1  # the second INFO counts itself


def handler_path(store, **page):
    """What ``GET /jobs`` does besides HTTP: a page, each record as a dict, the JSON text."""
    import json

    def once() -> None:
        records, after = store.page(**page)
        json.dumps({"jobs": [r.to_dict() for r in records], "next": after}, default=str)

    return once


def waiting_jobs(store, n: int) -> None:
    """``n`` queued jobs that want a GPU the cluster does not have: every pass weighs them."""
    from nbrunner.control.submit import new_id
    from nbrunner.core.models import JobRecord

    for i in range(n):
        store.create(JobRecord(id=new_id(), name=f"waiting #{i}", notebook="/home/user/digits.ipynb", min_gpus=1,
                               max_gpus=2, owner="alice"))


def run(history: int = 100_000, requests: int = 300, passes: int = 100) -> list[dict]:
    from nbrunner.control.scheduler import Scheduler
    from nbrunner.core.config import Settings
    from nbrunner.control.store import JobStore
    from nbrunner.execution.redis_server import EmbeddedRedis

    for k in ("NBRUNNER_REDIS_URL", "NBRUNNER_STORAGE", "NBRUNNER_KEEP_DAYS"):
        os.environ.pop(k, None)
    spaces = [Path(tempfile.mkdtemp(prefix="nbrh", dir="/tmp")) for _ in range(2)]  # empty history, full history
    servers = [EmbeddedRedis(Settings.load(ws).state_dir).ensure() for ws in spaces]
    try:
        stores = [JobStore.from_url(Settings.load(ws).url) for ws in spaces]
        for store in stores:
            waiting_jobs(store, 20)
        filled = fill(stores[1], history)
        print(f"history: {history} records written in {filled:.1f} s", file=sys.stderr)
        # no workers and no scheduler process: two idle clusters that differ only by their history
        scheds = [Scheduler(Settings.load(ws)) for ws in spaces]
        empty_pass, full_pass = alternate(scheds[0].step, scheds[1].step, passes)
        pass_cmds = [commands(st, sc.step) for st, sc in zip(stores, scheds)]
        page = {"limit": 50}
        empty_h, full_h = alternate(handler_path(stores[0], **page), handler_path(stores[1], **page), requests)
        page_cmds = [commands(st, handler_path(st, **page)) for st in stores]
        with jupyter_server(spaces[0]) as (base0, token0), jupyter_server(spaces[1]) as (base1, token1):
            rest = {}
            for path in ("/jobs?limit=50", "/jobs?status=failed&limit=50"):
                rest[path] = alternate(get(base0, token0, path), get(base1, token1, path), requests)
            _, cursor = stores[1].page(limit=history // 2)  # a page from the middle of the history
            _, deep = alternate(get(base0, token0, "/jobs?limit=50"), get(base1, token1, f"/jobs?limit=50&cursor={cursor}"),
                                requests)
        t = time.perf_counter()
        everything = stores[1].all()  # what every listing read before pages
        old_way = time.perf_counter() - t
        assert len(everything) >= history
    finally:
        for server in servers:
            server.stop()
    n = f"{history:,}"
    goal = f"p99 <= {GOAL_P99_S * 1000:.0f} ms"
    rows = []
    for path, (empty, full) in rest.items():
        rows += [
            {"benchmark": f"REST GET {path} p50, {n} finished jobs vs none (s)", "value": full[0],
             "baseline": empty[0], "ratio": full[0] / empty[0], "goal": "report", "ok": True},
            {"benchmark": f"REST GET {path} p99, {n} finished jobs vs none (s)", "value": full[1],
             "baseline": empty[1], "ratio": full[1] / empty[1], "goal": goal, "ok": full[1] <= GOAL_P99_S},
        ]
    empty = rest["/jobs?limit=50"][0]
    rows += [
        {"benchmark": f"REST GET /jobs?limit=50&cursor=(middle) p99, {n} jobs vs first page, none (s)",
         "value": deep[1], "baseline": empty[1], "ratio": deep[1] / empty[1], "goal": goal, "ok": deep[1] <= GOAL_P99_S},
        {"benchmark": f"handler path of GET /jobs?limit=50 (no HTTP) p99, {n} jobs vs none (s)", "value": full_h[1],
         "baseline": empty_h[1], "ratio": full_h[1] / empty_h[1], "goal": "report", "ok": True},
        {"benchmark": f"scheduler pass (20 waiting jobs) p50, {n} finished jobs vs none (s)", "value": full_pass[0],
         "baseline": empty_pass[0], "ratio": full_pass[0] / empty_pass[0], "goal": "report (see the commands row)",
         "ok": True},
        {"benchmark": f"Redis commands of one scheduler pass, {n} finished jobs vs none", "value": pass_cmds[1],
         "baseline": pass_cmds[0], "ratio": pass_cmds[1] / pass_cmds[0], "goal": "== 1 (the same work)",
         "ok": pass_cmds[1] == pass_cmds[0]},
        {"benchmark": f"Redis commands of one page of 50, {n} finished jobs vs none", "value": page_cmds[1],
         "baseline": page_cmds[0], "ratio": page_cmds[1] / page_cmds[0], "goal": "report", "ok": True},
        {"benchmark": f"reading the whole history (every listing before pages) vs a page, {n} jobs (s)",
         "value": old_way, "baseline": full_h[0], "ratio": old_way / full_h[0], "goal": "report", "ok": True},
    ]
    return rows


if __name__ == "__main__":
    from table import print_table

    print_table(run(*(int(a) for a in sys.argv[1:2])))
