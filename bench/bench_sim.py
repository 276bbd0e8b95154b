"""Replay the 8 Pollux workloads under every nbrunner.sim policy (64 GPUs, 30 s restarts).

Data: ``$NBRUNNER_POLLUX`` or ``<repo>/../shared/data/pollux`` (workloads/ and
traces/). Goals, as the mean over the 8 workloads of per-workload ratios:
fairshare's average JCT at least 40% below static's (<= 0.60); goodput's at or
below fairshare's (<= 1.00) and at least 25% below tiresias's (<= 0.75), with
p99 no worse than fairshare's (mean p99 ratio <= 1.00). Prints the 8x5 table
(avg JCT, p99 JCT, makespan, utilization, restarts) in markdown.

Run: ``python bench/bench_sim.py [--restart-pause 30] [--interval 60] [--gpus 64]``.
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

POLICIES = ("static", "tiresias", "fairshare", "priority", "goodput")
GOAL_RATIO = 0.60
TIME_LIMIT_S = 200.0  # 40 runs (5 policies x 8 workloads)


def pollux_dir() -> Path:
    return Path(os.environ.get("NBRUNNER_POLLUX") or REPO.parent / "shared" / "data" / "pollux")


def simulate_all(gpus: int = 64, restart_pause: float = 30.0, interval: float = 60.0) -> tuple[dict, float]:
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
    lines = ["| workload | policy | avg JCT (h) | p99 JCT (h) | makespan (h) | utilization | restarts |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for (w, policy), m in results.items():
        lines.append(f"| {w} | {policy} | {m['avg_jct_s'] / 3600:.2f} | {m['p99_jct_s'] / 3600:.2f} | "
                     f"{m['makespan_s'] / 3600:.2f} | {m['gpu_utilization']:.1%} | {m['restarts']} |")
    for policy in POLICIES:
        ms = [m for (_, p), m in results.items() if p == policy]
        lines.append(f"| **mean** | {policy} | {np.mean([m['avg_jct_s'] for m in ms]) / 3600:.2f} | "
                     f"{np.mean([m['p99_jct_s'] for m in ms]) / 3600:.2f} | "
                     f"{np.mean([m['makespan_s'] for m in ms]) / 3600:.2f} | "
                     f"{np.mean([m['gpu_utilization'] for m in ms]):.1%} | "
                     f"{np.mean([m['restarts'] for m in ms]):.0f} |")
    return "\n".join(lines)


def run(verbose: bool = True, gpus: int = 64, restart_pause: float = 30.0, interval: float = 60.0) -> list[dict]:
    """Rows {benchmark, value, baseline, ratio, goal, ok}; prints the 8x5 table if verbose."""
    results, elapsed = simulate_all(gpus, restart_pause, interval)
    if verbose:
        print(markdown_table(results))
        print()
    workloads = sorted({w for w, _ in results}, key=lambda s: int(s.split("-")[-1]))
    def col(policy: str, key: str = "avg_jct_s") -> np.ndarray:
        return np.array([results[(w, policy)][key] for w in workloads])

    rows = []
    checks = (("fairshare", "static", "avg_jct_s", GOAL_RATIO, " (>= 40% lower)"),
              ("priority", "static", "avg_jct_s", 1.0, ""),
              ("goodput", "fairshare", "avg_jct_s", 1.0, ""),
              ("goodput", "tiresias", "avg_jct_s", 0.75, " (>= 25% lower)"),
              ("goodput", "fairshare", "p99_jct_s", 1.0, ""))
    for policy, base, key, goal, note in checks:
        jct, ref = col(policy, key), col(base, key)
        ratio = float(np.mean(jct / ref))
        what = "avg JCT" if key == "avg_jct_s" else "p99 JCT"
        rows.append({"benchmark": f"sim {what} {policy} / {base} (mean of {len(workloads)} workloads), h",
                     "value": float(jct.mean()) / 3600, "baseline": float(ref.mean()) / 3600, "ratio": ratio,
                     "goal": f"<= {goal:.2f}{note}", "ok": ratio <= goal})
    n_runs = len(results)
    rows.append({"benchmark": f"sim wall time, {n_runs} runs, s", "value": elapsed, "baseline": TIME_LIMIT_S,
                 "ratio": elapsed / TIME_LIMIT_S, "goal": f"< {TIME_LIMIT_S:g} s", "ok": elapsed < TIME_LIMIT_S})
    return rows


format_rows = format_table  # the table of bench/table.py


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", type=int, default=64)
    ap.add_argument("--restart-pause", type=float, default=30.0)
    ap.add_argument("--interval", type=float, default=60.0)
    a = ap.parse_args()
    print(format_rows(run(True, a.gpus, a.restart_pause, a.interval)))
