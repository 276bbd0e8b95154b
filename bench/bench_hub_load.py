"""10 users x 50 submissions through a real JupyterHub's proxy to ``nbrunner service``, against the
same load on the single-server Jupyter extension measured in the same run (the baseline): every job
runs exactly once with the right owner; the service's POST p99 within 2x the extension's."""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loadgen import run_load  # noqa: E402

P99_GOAL = 2.0  # the service's POST p99 at most this many times the extension's


def run(jobs: int | None = None, clients: int = 10) -> list[dict]:
    """``jobs``: 500 (50 per user), or ``NBRUNNER_BENCH_LOAD_JOBS`` (fewer for quick iterations)."""
    jobs = jobs or int(os.environ.get("NBRUNNER_BENCH_LOAD_JOBS", "500"))
    ext = run_load(jobs=jobs, clients=clients, front="extension")
    hub = run_load(jobs=jobs, clients=clients, front="hub")
    for res in (ext, hub):
        print(f"load ({res['front']}): {res}", file=sys.stderr)
    ok = all(r["accepted"] == jobs and r["completed"] == jobs and r["executed_once"] and r["right_owner"]
             and not r["errors"] for r in (ext, hub))
    per = f"{clients} users x {jobs // clients} jobs"
    row = lambda what, key, goal, good: {  # noqa: E731
        "benchmark": f"{what}: nbrunner service through the hub vs the Jupyter extension, {per} (s)",
        "value": hub[key], "baseline": ext[key], "ratio": hub[key] / ext[key], "goal": goal, "ok": ok and good}
    ratio = hub["post_p99_s"] / ext["post_p99_s"]
    return [
        row("REST POST /jobs p99", "post_p99_s", f"<= {P99_GOAL:g}, each job once, its user's", ratio <= P99_GOAL),
        row("REST POST /jobs p50", "post_p50_s", "report", True),
        row("REST GET /jobs p99 while the POSTs run", "get_during_post_p99_s", "report", True),
        row("all jobs submitted and finished", "total_s", "report", True),
    ]


if __name__ == "__main__":
    from table import print_table

    print_table(run(*(int(a) for a in sys.argv[1:3])))
