"""500 jobs submitted concurrently over REST by 10 clients: all accepted, each executed exactly
once; REST latency percentiles (the baseline is the same request on an idle server)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loadgen import run_load  # noqa: E402


def run(jobs: int | None = None, clients: int = 10) -> list[dict]:
    """``jobs``: 500, or ``NBRUNNER_BENCH_LOAD_JOBS`` (fewer for quick iterations)."""
    jobs = jobs or int(os.environ.get("NBRUNNER_BENCH_LOAD_JOBS", "500"))
    idle = run_load(jobs=10, clients=1)
    res = run_load(jobs=jobs, clients=clients)
    ok = res["accepted"] == jobs and res["completed"] == jobs and res["executed_once"] and not res["errors"]
    print(f"load: {res}", file=sys.stderr)
    return [
        {"benchmark": f"REST POST /jobs p50 under load, {jobs} jobs / {clients} clients (s)", "value": res["post_p50_s"],
         "baseline": idle["post_p50_s"], "ratio": res["post_p50_s"] / idle["post_p50_s"], "goal": "all accepted, each run once",
         "ok": ok},
        {"benchmark": "REST POST /jobs p99 under load (s)", "value": res["post_p99_s"], "baseline": idle["post_p99_s"],
         "ratio": res["post_p99_s"] / idle["post_p99_s"], "goal": "report", "ok": ok},
        {"benchmark": "REST GET /jobs?status=running p50 while the POSTs run (s)", "value": res["get_during_post_p50_s"],
         "baseline": idle["get_p50_s"], "ratio": res["get_during_post_p50_s"] / idle["get_p50_s"], "goal": "report",
         "ok": ok},
        {"benchmark": "REST GET /jobs p99 while the POSTs run (s)", "value": res["get_during_post_p99_s"],
         "baseline": idle["get_p99_s"], "ratio": res["get_during_post_p99_s"] / idle["get_p99_s"], "goal": "report",
         "ok": ok},
        {"benchmark": f"REST GET /jobs?status=running p50 while {jobs} jobs run (s)", "value": res["get_p50_s"],
         "baseline": idle["get_p50_s"], "ratio": res["get_p50_s"] / idle["get_p50_s"], "goal": "report", "ok": ok},
        {"benchmark": f"REST GET /jobs p99 while {jobs} jobs run (s)", "value": res["get_p99_s"],
         "baseline": idle["get_p99_s"], "ratio": res["get_p99_s"] / idle["get_p99_s"], "goal": "report", "ok": ok},
    ]


if __name__ == "__main__":
    from table import print_table

    print_table(run(*(int(a) for a in sys.argv[1:3])))
