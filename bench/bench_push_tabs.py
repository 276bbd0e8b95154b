"""50 simulated tabs on one Jupyter server: each on the push channel (``GET /events``) against the
same 50 tabs polling as the Lab did before it (the Jobs panel's job list, cluster and models every
1.5 s, the notifier's job list every 3 s), on the same server, with a history of 3,000 jobs:

- the server's CPU while nothing changes (a share of one core), and what each tab receives;
- a burst of 500 submissions (job records written as ``submit`` writes them, from 4 threads):
  how long until every tab has every job, and the latency of each (job, tab) pair.

``python bench/bench_push_tabs.py [TABS [HISTORY [BURST [IDLE_S]]]]``."""
from __future__ import annotations

import asyncio
import getpass
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_history import fill  # noqa: E402
from pushkit import REPO, Poller, Server, Tab, new_job, redis_store  # noqa: E402

GOAL_IDLE_CPU = 5.0  # % of a core
GOAL_BURST_S = 2.0


async def measure(server: Server, store, kind, tabs: int, burst: int, idle_s: float) -> dict:
    clients = [kind(server.port, server.token) for _ in range(tabs)]
    tasks = [asyncio.ensure_future(c.run()) for c in clients]
    try:
        await asyncio.sleep(5)  # connected (or a first poll done) and settled
        cpu, sent, t = server.cpu_s(), sum(c.bytes for c in clients), time.monotonic()
        await asyncio.sleep(idle_s)
        span = time.monotonic() - t
        idle_cpu = (server.cpu_s() - cpu) / span * 100
        idle_bytes = (sum(c.bytes for c in clients) - sent) / span / tabs
        written: dict[str, float] = {}

        def submit(n: int, prefix: str) -> None:
            for i in range(n):
                rec = new_job(f"{prefix}-{i}", getpass.getuser(), min_gpus=9)
                store.create(rec)
                written[rec.id] = time.time()

        loop = asyncio.get_running_loop()
        with ThreadPoolExecutor(4) as pool:
            start = time.time()
            await asyncio.gather(*(loop.run_in_executor(pool, submit, burst // 4, f"b{k}") for k in range(4)))
        deadline = time.monotonic() + 120
        while not all(set(written) <= set(c.heard) for c in clients) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        complete = all(set(written) <= set(c.heard) for c in clients)
        latencies = sorted(c.heard[j] - w for c in clients for j, w in written.items() if j in c.heard)
        last = max((c.heard.get(j, time.time()) for c in clients for j in written), default=start)
        return {"idle_cpu": idle_cpu, "idle_bytes": idle_bytes, "all_s": last - start, "complete": complete,
                "p50": statistics.median(latencies), "max": latencies[-1], "written_s": max(written.values()) - start}
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def run(tabs: int = 50, history: int = 3000, burst: int = 500, idle_s: float = 30.0) -> list[dict]:
    root = Path(tempfile.mkdtemp(prefix="nbrtabs", dir="/tmp"))
    with redis_store(root) as store:
        fill(store, history, owners=(getpass.getuser(),))
        server = Server(REPO, root)
        try:
            push = asyncio.run(measure(server, store, Tab, tabs, burst, idle_s))
            poll = asyncio.run(measure(server, store, Poller, tabs, burst, idle_s))
        finally:
            server.stop()
    print(f"push: {push}\npolling: {poll}", file=sys.stderr)
    n = f"{tabs} tabs, {history:,} jobs"
    return [
        {"benchmark": f"idle server CPU, {n}: push channel vs polling (% of a core)", "value": push["idle_cpu"],
         "baseline": poll["idle_cpu"], "ratio": push["idle_cpu"] / max(poll["idle_cpu"], 1e-9),
         "goal": f"<= {GOAL_IDLE_CPU:g} %", "ok": push["idle_cpu"] <= GOAL_IDLE_CPU},
        {"benchmark": f"idle bytes per tab per second, {n}: push vs polling (B/s)", "value": push["idle_bytes"],
         "baseline": poll["idle_bytes"], "ratio": push["idle_bytes"] / max(poll["idle_bytes"], 1e-9),
         "goal": "report", "ok": True},
        {"benchmark": f"burst of {burst} submissions: until all {tabs} tabs have all (s)", "value": push["all_s"],
         "baseline": poll["all_s"], "ratio": push["all_s"] / poll["all_s"], "goal": f"<= {GOAL_BURST_S:g} s",
         "ok": push["complete"] and push["all_s"] <= GOAL_BURST_S},
        {"benchmark": f"burst of {burst}: latency of a (job, tab) p50 (s)", "value": push["p50"], "baseline": poll["p50"],
         "ratio": push["p50"] / poll["p50"], "goal": "report", "ok": True},
        {"benchmark": f"burst of {burst}: latency of a (job, tab) max (s)", "value": push["max"], "baseline": poll["max"],
         "ratio": push["max"] / poll["max"], "goal": "report", "ok": True},
    ]


if __name__ == "__main__":
    from table import print_table

    print_table(run(*(float(a) if i == 3 else int(a) for i, a in enumerate(sys.argv[1:5]))))
