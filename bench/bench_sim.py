"""The cluster simulator's policies on a tuning set and on a test set the tuning never reads (64 GPUs, 30 s restarts).

Tuning discipline: the goodput policy's constants (``nbrunner.core.goodput``) are chosen on
the **tuning set** only, and the figures the README reports are the **test set**'s:

* tuning set: the shipped Pollux workloads 1-4 and three workloads generated with Pollux's
  arrivals from fixed seeds (:data:`TUNING_SEEDS`, "seeds A");
* test set: the shipped workloads 5-8 and, for each arrival process of
  ``nbrunner.sim.generate_workload`` (``pollux``: the shipped hourly mix; ``uniform``;
  ``bursty``), :data:`TEST_SEEDS_PER_PROCESS` workloads from seeds drawn fresh at every run
  (printed, so a run can be replayed with ``--test-seeds``; never one of the tuning seeds).

Policies: static, tiresias, fairshare and goodput with fixed batches; fairshare and goodput
again with batch-size adaptation (``+adapt``, ``nbrunner.sim.adapt``; static and tiresias
keep their batches, as the Pollux study's baselines do). Goals (the issue's, judged on the
test set; the tuning set's rows are reported with the same goals for comparison): goodput with
adaptation at most 0.75x tiresias's average JCT, p99 and makespan within 5% of fixed-batch
fairshare's; goodput with fixed batches at most 0.85x tiresias's average JCT, makespan
within 5% of fairshare's. Each ratio is the mean over the set of the per-workload ratios.

``--sensitivity`` also replays goodput and goodput+adapt on the test set with each constant of
:data:`SENSITIVITY` moved to each of its alternatives (one at a time) and prints how far each
moves the test figures.

Each run's metrics are cached in ``bench/results/sim_cache.json`` (not committed), keyed by
the workload's rows, the policy, the settings, the constants and a digest of the policy's
and simulator's source, so unchanged runs are not simulated twice.

Run: ``python bench/bench_sim.py [--sensitivity [NAME,...]] [--test-seeds S1,S2,...] [--gpus 64]
[--restart-pause 30] [--interval 60] [--jobs N]``.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parent))
from table import format_table  # noqa: E402

import argparse
import contextlib
import hashlib
import json
import multiprocessing
import os
import secrets
import sys
import time
from pathlib import Path

import numpy as np

try:
    from nbrunner.sim import bundled_workloads, generate_workload, load_workload, simulate
except ImportError:  # run as a script from anywhere
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from nbrunner.sim import bundled_workloads, generate_workload, load_workload, simulate
from nbrunner.core import goodput as goodput_module
from nbrunner.sim.workload import ARRIVALS

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(__file__).resolve().parent / "results" / "sim_cache.json"
POLICIES = ("static", "tiresias", "fairshare", "goodput", "fairshare+adapt", "goodput+adapt")
TUNING_WORKLOADS = ("workload-1", "workload-2", "workload-3", "workload-4")
TEST_WORKLOADS = ("workload-5", "workload-6", "workload-7", "workload-8")
TUNING_SEEDS = (1, 2, 3)
TEST_SEEDS_PER_PROCESS = 2
POLLUX_JCT_H = 0.76  # Pollux's published mean JCT on the 8 workloads (OSDI 2021), with adaptation
GOALS = {  # policy: (avg JCT / tiresias, p99 / fairshare, makespan / fairshare)
    "goodput+adapt": (0.75, 1.05, 1.05),
    "goodput": (0.85, None, 1.05),
}
BOTH, FIXED, ADAPT = ("goodput", "goodput+adapt"), ("goodput",), ("goodput+adapt",)
SENSITIVITY = {  # constant of nbrunner.core.goodput: (alternatives to its chosen value, the policies it acts on)
    "QUEUE_THRESHOLDS": (((8 * 3600.0,), (32 * 3600.0,)), BOTH),
    "HORIZON_S": ((75.0, 300.0), BOTH),
    "EFFICIENCY_FLOOR": ((0.75, 0.95), BOTH),
    "SHORT_EFFICIENCY_FLOOR": ((0.4,), FIXED),
    "SHORT_ADAPTIVE_FLOOR": ((0.2,), ADAPT),
    "LONG_ADAPTIVE_FLOOR": ((0.3,), ADAPT),
    "EXPLORE_FACTOR": ((4,), BOTH),
    "ADAPTIVE_START": ((2,), ADAPT),
    "SHRINK_PAUSES": ((1, 3), BOTH),
    "REMAINING_EXPONENT": ((0.35, 0.7), BOTH),
    "HOLD_WINDOW_S": ((1800.0, 7200.0), FIXED),
}
SOURCES = ("nbrunner/core/goodput.py", "nbrunner/core/allocate.py", "nbrunner/core/demands.py", "nbrunner/core/kinds.py",
           "nbrunner/core/throughput.py", "nbrunner/core/efficiency.py", "nbrunner/core/fairsplit.py",
           "nbrunner/core/pauses.py", "nbrunner/core/dips.py",
           "nbrunner/sim/engine.py", "nbrunner/sim/adapt.py", "nbrunner/sim/apps.py")
GOODPUT_ONLY = ("nbrunner/core/goodput.py", "nbrunner/core/pauses.py", "nbrunner/core/dips.py")
"""The sources only the goodput policy reads: the baselines' cached runs do not depend on them."""


def fresh_test_seeds() -> list[int]:
    """Seeds for the test set's generated workloads, drawn now (none of the tuning seeds)."""
    out: list[int] = []
    while len(out) < TEST_SEEDS_PER_PROCESS * len(ARRIVALS):
        s = secrets.randbelow(2**31)
        if s not in TUNING_SEEDS and s not in out:
            out.append(s)
    return out


def workload_sets(test_seeds: list[int]) -> dict[str, dict[str, list]]:
    """{"tuning": {name: jobs}, "test": {name: jobs}}; test seeds go to the arrival processes in turn."""
    shipped = {p.stem: p for p in bundled_workloads()}
    tuning = {w: load_workload(shipped[w]) for w in TUNING_WORKLOADS}
    tuning.update({f"pollux-seed{s}": generate_workload(s) for s in TUNING_SEEDS})
    test = {w: load_workload(shipped[w]) for w in TEST_WORKLOADS}
    for i, s in enumerate(test_seeds):
        arrivals = ARRIVALS[i % len(ARRIVALS)]
        test[f"{arrivals}-seed{s}"] = generate_workload(s, arrivals=arrivals)
    return {"tuning": tuning, "test": test}


class Runner:
    """Runs (workload, policy) pairs through the simulator, with the cache."""

    def __init__(self, gpus: int = 64, restart_pause: float = 30.0, interval: float = 60.0, jobs: int = 1):
        self.settings = {"gpus": gpus, "restart_pause": restart_pause, "interval": interval}
        self.jobs = max(1, jobs)  # processes simulating the runs not in the cache
        digest, base = hashlib.sha1(), hashlib.sha1()  # base: without the goodput policy's own modules
        for src in SOURCES:
            digest.update((ROOT / src).read_bytes())
            if src not in GOODPUT_ONLY:
                base.update((ROOT / src).read_bytes())
        self.code, self.base_code = digest.hexdigest(), base.hexdigest()
        self.cache = json.loads(CACHE.read_text()) if CACHE.exists() else {}
        self.simulated = 0

    def key(self, jobs: list, policy: str) -> str:
        """The cache key of one run: the workload's rows, the policy, the settings, goodput's constants, the code."""
        ours = policy.startswith("goodput")  # the baselines do not read goodput's module or constants
        consts = _constants() if ours else {}
        rows = [(j.name, j.submit, j.app, j.replicas, j.batch) for j in jobs]
        code = self.code if ours else self.base_code
        return hashlib.sha1(json.dumps([rows, policy, self.settings, consts, code], default=str).encode()).hexdigest()

    def metrics(self, jobs: list, policy: str) -> dict:
        key = self.key(jobs, policy)
        if key not in self.cache:
            self.cache[key] = _simulate((jobs, policy, self.settings, _constants()))
            self.simulated += 1
            if self.simulated % 5 == 0:  # a long run that is stopped keeps most of its work
                self.save()
        return self.cache[key]

    def run_set(self, workloads: dict[str, list], policies=POLICIES) -> dict:
        if self.jobs > 1:  # the missing runs in parallel processes (each with the constants of this moment)
            todo = {self.key(jobs, p): (jobs, p, self.settings, _constants())
                    for w, jobs in workloads.items() for p in policies}
            todo = {k: v for k, v in todo.items() if k not in self.cache}
            if todo:
                with multiprocessing.get_context("fork").Pool(self.jobs) as pool:
                    for k, m in zip(todo, pool.imap(_simulate, todo.values())):
                        self.cache[k] = m
                        self.simulated += 1
                        if self.simulated % 5 == 0:
                            self.save()
                self.save()
        return {(w, p): self.metrics(jobs, p) for w, jobs in workloads.items() for p in policies}

    def save(self) -> None:
        """Write the cache, merged with what another run wrote meanwhile."""
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        if CACHE.exists():
            with contextlib.suppress(ValueError):
                self.cache = {**json.loads(CACHE.read_text()), **self.cache}
        tmp = CACHE.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.cache))
        tmp.replace(CACHE)


def _constants() -> dict:
    """goodput's constants of :data:`SENSITIVITY`, as they are now."""
    return {k: getattr(goodput_module, k) for k in SENSITIVITY if hasattr(goodput_module, k)}


def _simulate(task: tuple) -> dict:
    """One run's metrics (``task``: jobs, policy, settings, goodput's constants); in a worker process too."""
    jobs, policy, settings, consts = task
    for k, v in consts.items():
        setattr(goodput_module, k, v)
    res = simulate(jobs, settings["gpus"], policy.removesuffix("+adapt"), restart_pause=settings["restart_pause"],
                   interval=settings["interval"], adaptive_batch=policy.endswith("+adapt"))
    return res.metrics()


@contextlib.contextmanager
def constant(name: str, value):
    """``nbrunner.core.goodput.<name>`` set to ``value`` for the block."""
    old = getattr(goodput_module, name)
    setattr(goodput_module, name, value)
    try:
        yield
    finally:
        setattr(goodput_module, name, old)


def mean_ratios(results: dict, names: list[str], policy: str, base: dict | None = None) -> dict:
    """{metric: (mean value, mean baseline, mean of per-workload ratios)}: avg JCT against tiresias's,
    p99 and makespan against fairshare's (fixed batch); ``base``: results holding the baselines."""
    base = results if base is None else base
    out = {}
    for metric, key, ref in (("avg", "avg_jct_s", "tiresias"), ("p99", "p99_jct_s", "fairshare"),
                             ("makespan", "makespan_s", "fairshare")):
        v = np.array([results[(w, policy)][key] for w in names])
        b = np.array([base[(w, ref)][key] for w in names])
        out[metric] = (float(v.mean()), float(b.mean()), float(np.mean(v / b)))
    return out


def markdown_table(results: dict, groups: dict[str, list[str]]) -> str:
    lines = ["| workload | policy | avg JCT (h) | / tiresias | p99 JCT (h) | / fairshare | makespan (h) | / fairshare "
             "| restarts |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for (w, policy), m in results.items():
        t, f = results[(w, "tiresias")], results[(w, "fairshare")]
        lines.append(f"| {w} | {policy} | {m['avg_jct_s'] / 3600:.2f} | {m['avg_jct_s'] / t['avg_jct_s']:.3f} | "
                     f"{m['p99_jct_s'] / 3600:.2f} | {m['p99_jct_s'] / f['p99_jct_s']:.3f} | "
                     f"{m['makespan_s'] / 3600:.2f} | {m['makespan_s'] / f['makespan_s']:.3f} | {m['restarts']} |")
    lines += group_lines(results, groups)
    return "\n".join(lines)


def group_lines(results: dict, groups: dict[str, list[str]], policies=POLICIES) -> list[str]:
    lines = []
    for group, names in groups.items():
        for policy in policies:
            r = mean_ratios(results, names, policy)
            lines.append(f"| **mean, {group}** | {policy} | {r['avg'][0] / 3600:.2f} | {r['avg'][2]:.3f} | "
                         f"{r['p99'][0] / 3600:.2f} | {r['p99'][2]:.3f} | {r['makespan'][0] / 3600:.2f} | "
                         f"{r['makespan'][2]:.3f} | {np.mean([results[(w, policy)]['restarts'] for w in names]):.0f} |")
    return lines


def test_groups(names: list[str]) -> dict[str, list[str]]:
    """The test set, and its parts: the shipped workloads and each arrival process's generated ones."""
    out = {"test set": names, "test, shipped 5-8": [w for w in names if w.startswith("workload-")]}
    for a in ARRIVALS:
        out[f"test, {a} arrivals"] = [w for w in names if w.startswith(f"{a}-seed")]
    return out


def goal_rows(results: dict, names: list[str], label: str, judged: bool) -> list[dict]:
    """The issue's goals on one set (``judged``: the test set, else reported only)."""
    rows = []
    for policy, goals in GOALS.items():
        r = mean_ratios(results, names, policy)
        for (metric, ref, what), goal in zip((("avg", "tiresias", "avg JCT"), ("p99", "fairshare", "p99 JCT"),
                                              ("makespan", "fairshare", "makespan")), goals):
            if goal is None:
                continue
            value, baseline, ratio = r[metric]
            rows.append({"benchmark": f"sim {label}: {what} {policy} / {ref} (mean of {len(names)}), h",
                         "value": value / 3600, "baseline": baseline / 3600, "ratio": ratio,
                         "goal": f"<= {goal:.2f}" if judged else f"report (test goal <= {goal:.2f})",
                         "ok": ratio <= goal if judged else True})
    return rows


def sensitivity(runner: Runner, test: dict[str, list], base: dict, only: list[str] | None = None) -> str:
    """Markdown table: the test set's goodput figures with each constant moved, against the chosen values
    (a policy the constant does not act on is shown as ``=``, not replayed)."""
    names = list(test)

    def cells(res: dict, policies=BOTH) -> str:
        out = []
        for p in BOTH:
            if p not in policies:
                out.append("=")
                continue
            r = mean_ratios(res, names, p, base)
            out.append(f"{r['avg'][2]:.3f} / {r['p99'][2]:.3f} / {r['makespan'][2]:.3f}")
        return " | ".join(out)

    lines = ["| constant | value | goodput: avg / tiresias, p99 / fairshare, makespan / fairshare | goodput+adapt: "
             "the same |", "|---|---|---|---|", f"| (chosen) | | {cells(base)} |"]
    for name, (values, policies) in SENSITIVITY.items():
        if not hasattr(goodput_module, name) or (only and name not in only):
            continue
        chosen = getattr(goodput_module, name)
        for v in values:
            with constant(name, v):
                res = runner.run_set(test, policies)
            runner.save()
            lines.append(f"| {name} (chosen {_fmt(chosen)}) | {_fmt(v)} | {cells(res, policies)} |")
            print(f"sensitivity: {lines[-1]}", file=sys.stderr, flush=True)  # progress of a long run
    return "\n".join(lines)


def _fmt(v) -> str:
    if isinstance(v, tuple):
        return "(" + ", ".join(f"{x / 3600:g} h" for x in v) + ")"
    return f"{v:g}"


def run(verbose: bool = True, gpus: int = 64, restart_pause: float = 30.0, interval: float = 60.0,
        test_seeds: list[int] | None = None, with_sensitivity: bool | list[str] = False, jobs: int = 1) -> list[dict]:
    """Rows {benchmark, value, baseline, ratio, goal, ok}; prints the per-workload tables if verbose."""
    seeds = list(test_seeds) if test_seeds else fresh_test_seeds()
    if verbose:
        print(f"test seeds: {','.join(map(str, seeds))}", flush=True)
    sets = workload_sets(seeds)
    runner = Runner(gpus, restart_pause, interval, jobs)
    t = time.perf_counter()
    tuning = runner.run_set(sets["tuning"])
    test = runner.run_set(sets["test"])
    runner.save()
    elapsed = time.perf_counter() - t
    if verbose:
        print(f"{runner.simulated} runs simulated, the rest cached (replay the test set with --test-seeds "
              f"{','.join(map(str, seeds))})\n")
        print("Tuning set\n")
        print(markdown_table(tuning, {"tuning set": list(sets["tuning"])}))
        print("\nTest set\n")
        print(markdown_table(test, test_groups(list(sets["test"]))))
        print()
    rows = goal_rows(test, list(sets["test"]), "test set", True)
    rows += goal_rows(tuning, list(sets["tuning"]), "tuning set", False)
    for label, res in (("test set", test), ("tuning set", tuning)):
        names = list(sets["test" if label == "test set" else "tuning"])
        v = np.array([res[(w, "fairshare")]["avg_jct_s"] for w in names])
        b = np.array([res[(w, "static")]["avg_jct_s"] for w in names])
        rows.append({"benchmark": f"sim {label}: avg JCT fairshare / static (mean of {len(names)}), h",
                     "value": float(v.mean()) / 3600, "baseline": float(b.mean()) / 3600,
                     "ratio": float(np.mean(v / b)), "goal": "<= 0.60", "ok": float(np.mean(v / b)) <= 0.60})
    pollux = [w for w in list(sets["tuning"]) + list(sets["test"]) if w.startswith("workload-")]
    both = {**tuning, **test}
    v = float(np.mean([both[(w, "goodput+adapt")]["avg_jct_s"] for w in pollux])) / 3600
    rows.append({"benchmark": "sim avg JCT goodput+adapt (mean of the 8 Pollux workloads) / Pollux published, h",
                 "value": v, "baseline": POLLUX_JCT_H, "ratio": v / POLLUX_JCT_H, "goal": "report", "ok": True})
    rows.append({"benchmark": f"sim wall time, {runner.simulated} runs simulated (of {len(tuning) + len(test)}), s",
                 "value": elapsed, "baseline": 600.0, "ratio": elapsed / 600.0, "goal": "< 600 s",
                 "ok": elapsed < 600.0})
    if with_sensitivity:
        only = with_sensitivity if isinstance(with_sensitivity, list) else None
        table = sensitivity(runner, sets["test"], test, only)
        if verbose:
            print("Sensitivity (test set; ratios as above, one constant moved at a time)\n")
            print(table)
            print()
    return rows


format_rows = format_table  # the table of bench/table.py


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", type=int, default=64)
    ap.add_argument("--restart-pause", type=float, default=30.0)
    ap.add_argument("--interval", type=float, default=60.0)
    ap.add_argument("--test-seeds", help="comma-separated seeds for the test set's generated workloads "
                    f"({TEST_SEEDS_PER_PROCESS * len(ARRIVALS)}: the arrival processes in turn)")
    ap.add_argument("--sensitivity", nargs="?", const="all", metavar="NAMES",
                    help="also print the constants' sensitivity table (NAMES: only these constants, comma-separated)")
    ap.add_argument("--jobs", type=int, default=1, help="processes simulating the runs not cached (default 1)")
    a = ap.parse_args()
    seeds = [int(s) for s in a.test_seeds.split(",")] if a.test_seeds else None
    sens = a.sensitivity == "all" or (a.sensitivity.split(",") if a.sensitivity else False)
    print(format_rows(run(True, a.gpus, a.restart_pause, a.interval, seeds, sens, a.jobs)))
