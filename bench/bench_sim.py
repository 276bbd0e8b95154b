"""Replay the 8 Pollux workloads and 3 generated ones under each nbrunner.sim policy (64 GPUs, 30 s restarts).

Workloads: the 8 shipped with ``nbrunner.sim`` (``workload-1`` .. ``workload-8``) and 3
drawn from them with ``nbrunner.sim.generate_workload`` (seeds 1, 2, 3: ``generated-1``
.. ``generated-3``). Policies: static, tiresias, fairshare, goodput-flat (goodput without
attained service: one queue, the goodput policy before short work first) and goodput; then
fairshare, goodput-flat and goodput again with batch-size adaptation (``+adapt``: each job
picks its batch by goodput, ``nbrunner.sim.adapt``; static and tiresias keep their batches).

Prints the per-workload table (avg JCT and its ratio to tiresias's; p99 JCT and makespan
and their ratios to fairshare's; restarts), then returns rows for bench/run.py: the goal for
goodput with batch-size adaptation, then for goodput without it (avg JCT against tiresias's
on every workload, at least 25% below: <= 0.75; the means over the Pollux and over the
generated workloads of its three ratios: avg JCT <= 0.75 of tiresias's, p99 and makespan <=
fairshare's), goodput against goodput-flat, fairshare against static (<= 0.60), each
policy's mean avg JCT with adaptation on the 8 Pollux workloads against Pollux's published
0.76 h, and the wall time.

Run: ``python bench/bench_sim.py [--restart-pause 30] [--interval 60] [--gpus 64]``.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parent))
from table import format_table  # noqa: E402

import argparse
import sys
import time
from pathlib import Path

import numpy as np

try:
    from nbrunner.sim import bundled_workloads, generate_workload, simulate
except ImportError:  # run as a script from anywhere
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from nbrunner.sim import bundled_workloads, generate_workload, simulate

POLICIES = ("static", "tiresias", "fairshare", "goodput-flat", "goodput")
ADAPTIVE = ("fairshare+adapt", "goodput-flat+adapt", "goodput+adapt")
SEEDS = (1, 2, 3)
POLLUX_JCT_H = 0.76  # Pollux's published mean JCT on these workloads (OSDI 2021), with adaptation
JCT_GOAL = 0.75  # goodput's avg JCT against tiresias's: at least 25% below
FAIRSHARE_GOAL = 0.60  # fairshare's avg JCT against static's: at least 40% below
TIME_LIMIT_S = 600.0  # 88 runs (8 policies x 11 workloads)


def workloads() -> dict[str, object]:
    """{name: workload} for the shipped workloads and the generated ones."""
    out: dict[str, object] = {p.stem: p for p in bundled_workloads()}
    out.update({f"generated-{s}": generate_workload(s) for s in SEEDS})
    return out


def simulate_all(gpus: int = 64, restart_pause: float = 30.0, interval: float = 60.0) -> tuple[dict, float]:
    """{(workload, policy): metrics} for every workload x policy, and the wall time."""
    results = {}
    t = time.perf_counter()
    for name, w in workloads().items():
        for policy in POLICIES + ADAPTIVE:
            base = policy.removesuffix("+adapt")
            res = simulate(w, gpus, base.removesuffix("-flat"), restart_pause=restart_pause, interval=interval,
                           attained=not base.endswith("-flat"), adaptive_batch=policy.endswith("+adapt"))
            results[(name, policy)] = res.metrics()
    return results, time.perf_counter() - t


def markdown_table(results: dict) -> str:
    lines = ["| workload | policy | avg JCT (h) | / tiresias | p99 JCT (h) | / fairshare | makespan (h) | / fairshare "
             "| restarts |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for (w, policy), m in results.items():
        t, f = results[(w, "tiresias")], results[(w, "fairshare")]
        lines.append(f"| {w} | {policy} | {m['avg_jct_s'] / 3600:.2f} | {m['avg_jct_s'] / t['avg_jct_s']:.3f} | "
                     f"{m['p99_jct_s'] / 3600:.2f} | {m['p99_jct_s'] / f['p99_jct_s']:.3f} | "
                     f"{m['makespan_s'] / 3600:.2f} | {m['makespan_s'] / f['makespan_s']:.3f} | {m['restarts']} |")
    for group, names in _groups(results).items():
        for policy in POLICIES + ADAPTIVE:
            r = _mean_ratios(results, names, policy)
            lines.append(f"| **mean, {group}** | {policy} | {r['avg'][0] / 3600:.2f} | {r['avg'][2]:.3f} | "
                         f"{r['p99'][0] / 3600:.2f} | {r['p99'][2]:.3f} | {r['makespan'][0] / 3600:.2f} | "
                         f"{r['makespan'][2]:.3f} | {np.mean([results[(w, policy)]['restarts'] for w in names]):.0f} |")
    return "\n".join(lines)


def _groups(results: dict) -> dict[str, list[str]]:
    names = list(dict.fromkeys(w for w, _ in results))
    return {"Pollux": [w for w in names if w.startswith("workload-")],
            "generated": [w for w in names if w.startswith("generated-")]}


def _mean_ratios(results: dict, names: list[str], policy: str) -> dict[str, tuple[float, float, float]]:
    """{metric: (mean value, mean baseline, mean of per-workload ratios)}; avg against tiresias, others fairshare."""
    out = {}
    for metric, key, base in (("avg", "avg_jct_s", "tiresias"), ("p99", "p99_jct_s", "fairshare"),
                              ("makespan", "makespan_s", "fairshare")):
        v = np.array([results[(w, policy)][key] for w in names])
        b = np.array([results[(w, base)][key] for w in names])
        out[metric] = (float(v.mean()), float(b.mean()), float(np.mean(v / b)))
    return out


def run(verbose: bool = True, gpus: int = 64, restart_pause: float = 30.0, interval: float = 60.0) -> list[dict]:
    """Rows {benchmark, value, baseline, ratio, goal, ok}; prints the per-workload table if verbose."""
    results, elapsed = simulate_all(gpus, restart_pause, interval)
    if verbose:
        print(markdown_table(results))
        print()
    rows = _goal_rows(results, "goodput+adapt") + _goal_rows(results, "goodput")
    names = _groups(results)["Pollux"] + _groups(results)["generated"]
    for policy, base, goal in (("goodput", "goodput-flat", 1.0), ("fairshare", "static", FAIRSHARE_GOAL)):
        v = np.array([results[(w, policy)]["avg_jct_s"] for w in names])
        b = np.array([results[(w, base)]["avg_jct_s"] for w in names])
        ratio = float(np.mean(v / b))
        rows.append({"benchmark": f"sim avg JCT {policy} / {base} (mean of {len(names)} workloads), h",
                     "value": float(v.mean()) / 3600, "baseline": float(b.mean()) / 3600, "ratio": ratio,
                     "goal": f"<= {goal:.2f}", "ok": ratio <= goal})
    rows += _adaptive_rows(results)
    rows.append({"benchmark": f"sim wall time, {len(results)} runs, s", "value": elapsed, "baseline": TIME_LIMIT_S,
                 "ratio": elapsed / TIME_LIMIT_S, "goal": f"< {TIME_LIMIT_S:g} s", "ok": elapsed < TIME_LIMIT_S})
    return rows


def _goal_rows(results: dict, policy: str) -> list[dict]:
    """The issue's goal for ``policy``: avg JCT against tiresias's on every workload, and the means over the
    Pollux and the generated workloads of its three ratios (avg JCT to tiresias's, p99 and makespan to
    fairshare's, both fixed-batch)."""
    rows = []
    for w in dict.fromkeys(w for w, _ in results):
        v, b = results[(w, policy)]["avg_jct_s"], results[(w, "tiresias")]["avg_jct_s"]
        rows.append({"benchmark": f"sim {w}: avg JCT {policy} / tiresias, h", "value": v / 3600, "baseline": b / 3600,
                     "ratio": v / b, "goal": f"<= {JCT_GOAL:.2f}", "ok": v / b <= JCT_GOAL})
    for group, names in _groups(results).items():
        r = _mean_ratios(results, names, policy)
        for metric, base, goal in (("avg", "tiresias", JCT_GOAL), ("p99", "fairshare", 1.0),
                                   ("makespan", "fairshare", 1.0)):
            value, baseline, ratio = r[metric]
            what = "avg JCT" if metric == "avg" else ("p99 JCT" if metric == "p99" else "makespan")
            rows.append({"benchmark": f"sim {what} {policy} / {base} (mean of {len(names)} {group}), h",
                         "value": value / 3600, "baseline": baseline / 3600, "ratio": ratio,
                         "goal": f"<= {goal:.2f}", "ok": ratio <= goal})
    return rows


def _adaptive_rows(results: dict) -> list[dict]:
    """Mean avg JCT with batch-size adaptation on the Pollux workloads against Pollux's published figure."""
    names = _groups(results)["Pollux"]
    rows = []
    for policy in ADAPTIVE:
        v = float(np.mean([results[(w, policy)]["avg_jct_s"] for w in names])) / 3600
        rows.append({"benchmark": f"sim avg JCT {policy} (mean of {len(names)} Pollux) / Pollux published, h",
                     "value": v, "baseline": POLLUX_JCT_H, "ratio": v / POLLUX_JCT_H,
                     "goal": f"<= {POLLUX_JCT_H} h", "ok": v <= POLLUX_JCT_H})
    return rows


format_rows = format_table  # the table of bench/table.py


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", type=int, default=64)
    ap.add_argument("--restart-pause", type=float, default=30.0)
    ap.add_argument("--interval", type=float, default=60.0)
    a = ap.parse_args()
    print(format_rows(run(True, a.gpus, a.restart_pause, a.interval)))
