"""``python -m nbrunner.sim``: replay one workload under one policy and print its metrics."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from nbrunner.control.local_files import read_accounts
from nbrunner.core.demands import DEFAULT_POLICY

from .engine import POLICIES, SimResult, simulate
from .workload import ARRIVALS, generate_workload, load_workload, resolve_workload, write_workload

__all__ = ["main"]

USAGE_EPILOG = """\
WORKLOAD is a CSV file (name,time,application,num_replicas,batch_size) or the name of a
shipped Pollux workload (workload-1 .. workload-8); --generate SEED replays a workload
drawn from the shipped ones instead (see nbrunner.sim.workload). --traces defaults to the
traces directory beside the workload's directory if there is one, else the shipped traces.
"""


def _summary(res: SimResult, workload: str) -> str:
    resizes = sum(j.resizes for j in res.jobs)
    wait = np.array([j.start - j.submit for j in res.jobs]) if res.jobs else np.zeros(1)
    lines = [
        f"workload      {workload}",
        f"policy        {res.policy} on {res.gpus} GPUs, {len(res.jobs)} jobs",
        f"avg JCT       {res.avg_jct_s:10.0f} s  ({res.avg_jct_s / 3600:.2f} h)",
        f"p99 JCT       {res.p99_jct_s:10.0f} s  ({res.p99_jct_s / 3600:.2f} h)",
        f"avg queueing  {wait.mean():10.0f} s  ({wait.mean() / 3600:.2f} h)",
        f"makespan      {res.makespan_s:10.0f} s  ({res.makespan_s / 3600:.2f} h)",
        f"utilization   {res.gpu_utilization:10.1%}",
        f"resizes       {resizes:10d}",
        f"restarts      {res.restarts:10d}",
    ]
    if res.accounts:
        lines.append(f"{'account':<20}{'weight':>8}{'jobs':>6}{'avg JCT h':>11}{'p99 JCT h':>11}{'GPU share':>11}")
        lines += [f"{a['account']:<20}{a['weight']:>8g}{a['jobs']:>6}{a['avg_jct_s'] / 3600:>11.2f}"
                  f"{a['p99_jct_s'] / 3600:>11.2f}{a['gpu_share']:>11.1%}" for a in res.accounts]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m nbrunner.sim", epilog=USAGE_EPILOG,
                                 description="Replay a cluster workload against nbrunner's allocation policies.",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workload", nargs="?", help="workload CSV, or a shipped workload's name (workload-1..8)")
    ap.add_argument("--generate", type=int, metavar="SEED", help="replay a workload generated with this seed")
    ap.add_argument("--jobs", type=int, default=160, help="jobs of a generated workload (default 160)")
    ap.add_argument("--arrivals", choices=ARRIVALS, default="pollux",
                    help="arrival process of a generated workload (default pollux: the shipped hourly mix)")
    ap.add_argument("--save", metavar="CSV", help="also write the generated workload to this CSV")
    ap.add_argument("--gpus", type=int, default=64, help="cluster size (default 64)")
    ap.add_argument("--policy", choices=POLICIES, default=DEFAULT_POLICY,
                    help=f"allocation policy (default {DEFAULT_POLICY}, the service's)")
    ap.add_argument("--json", action="store_true", help="print one JSON line of metrics")
    ap.add_argument("--restart-pause", type=float, default=30.0,
                    help="seconds lost per start/resize/restart (default 30)")
    ap.add_argument("--interval", type=float, default=60.0, help="periodic reallocation in seconds (default 60)")
    ap.add_argument("--traces", help="traces directory (default: see below)")
    ap.add_argument("--adaptive-batch", action="store_true",
                    help="elastic policies' jobs pick their batch by goodput (see nbrunner.sim.adapt)")
    ap.add_argument("--accounts", metavar="ACCOUNTS.yaml",
                    help="divide the GPUs down this accounts tree; jobs' owner (and groups) columns place them")
    ap.add_argument("--owners", metavar="A,B,...",
                    help="owners given to the jobs in turn (for a workload without an owner column)")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    if (args.workload is None) == (args.generate is None):
        ap.error("give either WORKLOAD or --generate SEED")
    if args.save and args.generate is None:
        ap.error("--save writes a generated workload: give --generate SEED")
    try:
        if args.generate is not None:
            workload = generate_workload(args.generate, args.jobs, arrivals=args.arrivals)
            label = f"generated, seed {args.generate}, {args.jobs} jobs, {args.arrivals} arrivals"
            if args.save:
                write_workload(args.save, workload)
        else:
            workload = resolve_workload(args.workload)
            label = str(args.workload)
        if args.owners:
            beside = None if isinstance(workload, list) else Path(workload).resolve().parent.parent / "traces"
            args.traces = args.traces or (beside if beside is not None and beside.is_dir() else None)
            workload = _with_owners(workload, [o.strip() for o in args.owners.split(",") if o.strip()])
        tree = read_accounts(args.accounts) if args.accounts else None
        res = simulate(workload, args.gpus, args.policy, traces=args.traces, restart_pause=args.restart_pause,
                       interval=args.interval, adaptive_batch=args.adaptive_batch, accounts=tree)
    except (OSError, ValueError, KeyError) as exc:  # (a bad accounts file: InvalidRequest, a ValueError)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(res.metrics()) if args.json else _summary(res, label))
    return 0


def _with_owners(workload, owners: list[str]) -> list:
    """The workload's jobs, owned in turn by ``owners``."""
    jobs = workload if isinstance(workload, list) else load_workload(workload)
    if not owners:
        raise ValueError("--owners needs at least one name")
    return [replace(j.fresh(), owner=owners[j.idx % len(owners)]) for j in jobs]
