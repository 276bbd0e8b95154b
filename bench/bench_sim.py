"""Replay the 8 Pollux workloads under static, fairshare and priority (64 GPUs).

Data: ``$NBRUNNER_POLLUX`` or ``<repo>/../shared/data/pollux`` (workloads/ and
traces/). Goal: fairshare's average JCT at least 40% lower than static's, as the
mean over the 8 workloads of the per-workload ratio fairshare / static (<= 0.60).
Prints the 8x3 table (avg JCT, p99 JCT, makespan, utilization) in markdown.

Run: ``python bench/bench_sim.py [--restart-pause 2] [--interval 60] [--gpus 64]``.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parent))
from table import format_table  # noqa: E402

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
try:
    from nbrunner.sim import simulate
except ImportError:  # run as a script from anywhere
    sys.path.insert(0, str(REPO))
    from nbrunner.sim import simulate

POLICIES = ("static", "fairshare", "priority")
GOAL_RATIO = 0.60
TIME_LIMIT_S = 120.0


def pollux_dir() -> Path:
    return Path(os.environ.get("NBRUNNER_POLLUX") or REPO.parent / "shared" / "data" / "pollux")


def simulate_all(gpus: int = 64, restart_pause: float = 2.0, interval: float = 60.0) -> tuple[dict, float]:
    """{(workload, policy): metrics} for every workload x policy, and the wall time."""
    base = pollux_dir()
    workloads = sorted((base / "workloads").glob("workload-*.csv"), key=lambda p: int(p.stem.split("-")[-1]))
    if not workloads:
        raise FileNotFoundError(f"no workloads under {base / 'workloads'} (set NBRUNNER_POLLUX)")
    results = {}
    t = time.perf_counter()
    for w in workloads:
        for policy in POLICIES:
            res = simulate(w, gpus, policy, traces=base / "traces", restart_pause=restart_pause, interval=interval)
            results[(w.stem, policy)] = res.metrics()
    return results, time.perf_counter() - t


def markdown_table(results: dict) -> str:
    lines = ["| workload | policy | avg JCT (h) | p99 JCT (h) | makespan (h) | utilization |",
             "|---|---|---:|---:|---:|---:|"]
    for (w, policy), m in results.items():
        lines.append(f"| {w} | {policy} | {m['avg_jct_s'] / 3600:.2f} | {m['p99_jct_s'] / 3600:.2f} | "
                     f"{m['makespan_s'] / 3600:.2f} | {m['gpu_utilization']:.1%} |")
    for policy in POLICIES:
        ms = [m for (_, p), m in results.items() if p == policy]
        lines.append(f"| **mean** | {policy} | {np.mean([m['avg_jct_s'] for m in ms]) / 3600:.2f} | "
                     f"{np.mean([m['p99_jct_s'] for m in ms]) / 3600:.2f} | "
                     f"{np.mean([m['makespan_s'] for m in ms]) / 3600:.2f} | "
                     f"{np.mean([m['gpu_utilization'] for m in ms]):.1%} |")
    return "\n".join(lines)


def run(verbose: bool = True, gpus: int = 64, restart_pause: float = 2.0, interval: float = 60.0) -> list[dict]:
    """Rows {benchmark, value, baseline, ratio, goal, ok}; prints the 8x3 table if verbose."""
    results, elapsed = simulate_all(gpus, restart_pause, interval)
    if verbose:
        print(markdown_table(results))
        print()
    workloads = sorted({w for w, _ in results}, key=lambda s: int(s.split("-")[-1]))
    static = np.array([results[(w, "static")]["avg_jct_s"] for w in workloads])
    rows = []
    for policy, goal in (("fairshare", GOAL_RATIO), ("priority", 1.0)):
        jct = np.array([results[(w, policy)]["avg_jct_s"] for w in workloads])
        ratio = float(np.mean(jct / static))
        rows.append({"benchmark": f"sim avg JCT {policy} / static (mean of {len(workloads)} workloads), h",
                     "value": float(jct.mean()) / 3600, "baseline": float(static.mean()) / 3600, "ratio": ratio,
                     "goal": f"<= {goal:.2f}" + (" (>= 40% lower)" if policy == "fairshare" else ""),
                     "ok": ratio <= goal})
    n_runs = len(results)
    rows.append({"benchmark": f"sim wall time, {n_runs} runs, s", "value": elapsed, "baseline": TIME_LIMIT_S,
                 "ratio": elapsed / TIME_LIMIT_S, "goal": f"< {TIME_LIMIT_S:g} s", "ok": elapsed < TIME_LIMIT_S})
    return rows


format_rows = format_table  # the table of bench/table.py


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", type=int, default=64)
    ap.add_argument("--restart-pause", type=float, default=2.0)
    ap.add_argument("--interval", type=float, default=60.0)
    a = ap.parse_args()
    print(format_rows(run(True, a.gpus, a.restart_pause, a.interval)))
