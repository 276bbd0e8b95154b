"""Benchmark nbrunner.core.allocate.allocate against sorted() on the same demands.

10,000 random demands (fixed seed) on 8,000 GPUs, every policy; for goodput every
demand also carries 1-3 throughput measurements, its attained service (two thirds
of the jobs past the 16 GPU-hour queue threshold) and running ones their current GPU
count and pause, and a third of them adapt their batch: a statistical efficiency at
each measured size, or (a tenth of these) nothing measured yet (the worst case: every
job's model is fitted, both queues and every floor served). The baseline is
``sorted(demands, key=...)`` by the policy's order key without the running flag
((submitted_at, id) or (-priority, submitted_at, id)), i.e. the cheapest sort
that could produce the order. Goal: allocate() within 25x of that sort.

The accounts row: the same 10,000 demands owned by 1,000 users in a tree of 100
accounts (10 departments of 9 teams each, random weights, some guarantees and
limits; members by name and by hub group; 5% of the users in no account), fairshare
down the tree (``allocate(..., accounts=TREE)``), against the same sort.

The "explained" rows time ``allocate_explained`` (the same allocation plus why each job left
waiting waits: most of the 10,000 do, since their minimums add up to more than the GPUs) on the
same demands, against the same sort: the cost of the reasons is the difference from the row above.

Run: ``python bench/bench_allocate.py``.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parent))
from table import format_table  # noqa: E402

import random
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

try:
    from nbrunner.core.allocate import allocate, allocate_explained
except ImportError:  # run as a script from anywhere
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from nbrunner.core.allocate import allocate, allocate_explained

N_JOBS = 10_000
N_GPUS = 8_000
REPEATS = 11
GOAL = 25.0
KEYS = {
    "fairshare": lambda d: (d["submitted_at"], d["id"]),
    "priority": lambda d: (-d["priority"], d["submitted_at"], d["id"]),
    "goodput": lambda d: (d["submitted_at"], d["id"]),
}


def make_demands(n: int = N_JOBS, seed: int = 20240501, iso: bool = False, measured: bool = False) -> list[dict]:
    """Random demands: min 0..4, max min..min+32, priority 1..10000, 10% running.

    ``measured``: each also has ``throughput`` at 1-3 sizes from a random
    compute + sync curve, ``attained`` (0-48 GPU-hours), and running ones ``gpus``
    and ``pause_s``; a third adapt their batch (``efficiency`` at those sizes; a tenth of
    these have measured nothing: no ``throughput``, an empty ``efficiency``).
    """
    rng = random.Random(seed)
    adapting = random.Random(seed + 1)  # its own draws: the other fields are as without it
    out = []
    for i in range(n):
        lo = rng.randint(0, 4)
        t = 1.7e9 + rng.uniform(0, 86400)
        if iso:
            t = datetime.fromtimestamp(round(t, 3), timezone.utc).isoformat()
        out.append({"id": f"job-{rng.getrandbits(48):012x}-{i}", "min_gpus": lo, "max_gpus": lo + rng.randint(0, 32),
                    "priority": rng.randint(1, 10000), "submitted_at": t, "running": rng.random() < 0.1})
        if measured:
            d = out[-1]
            a, b, c = rng.uniform(0, 0.01), rng.uniform(0.001, 0.05), rng.uniform(0, 0.002)
            sizes = {rng.randint(1, 16) for _ in range(rng.randint(1, 3))}
            d["throughput"] = {k: 1.0 / (a + b / k + c * (k - 1)) for k in sizes}
            d["attained"] = rng.uniform(0, 48 * 3600.0)
            if d["running"]:
                d["gpus"], d["pause_s"] = rng.randint(d["min_gpus"], d["max_gpus"]), 30.0
            if adapting.random() < 1 / 3:
                if adapting.random() < 0.1:
                    d["throughput"], d["efficiency"] = {}, {}
                else:
                    d["efficiency"] = {k: adapting.uniform(0.3, 1.0) for k in d["throughput"]}
    return out


N_ACCOUNTS = 100
N_USERS = 1_000


def make_accounts(seed: int = 20240501) -> tuple[dict, list[str]]:
    """A tree of 10 departments with 9 teams each (100 accounts) and the users' names."""
    rng = random.Random(seed)
    users = [f"user{i:04d}" for i in range(N_USERS)]
    listed = users[: int(N_USERS * 0.95)]
    per_team = len(listed) // 90
    tree: dict = {"accounts": [], "default": {"weight": 1}, "reclaim_after": 30}
    for dep in range(10):
        teams = []
        for t in range(9):
            k = dep * 9 + t
            members = listed[k * per_team:(k + 1) * per_team]
            if t % 3 == 0:  # every third team by hub group
                members = [f"@group{k}"]
            team = {"name": f"team{k}", "weight": rng.randint(1, 5), "members": members}
            if t % 2 == 0:
                team["guaranteed"] = rng.randint(0, 40)
            teams.append(team)
        dept = {"name": f"dept{dep}", "weight": rng.randint(1, 4), "accounts": teams}
        if dep % 3 == 0:
            dept["limit"] = N_GPUS // 5
        tree["accounts"].append(dept)
    return tree, users


def make_owned_demands(tree: dict, users: list[str], seed: int = 20240501) -> list[dict]:
    """``make_demands`` with an owner each (10 jobs a user on average) and hub groups."""
    rng = random.Random(seed)
    demands = make_demands()
    per_team = int(N_USERS * 0.95) // 90
    for d in demands:
        i = rng.randrange(len(users))
        d["owner"] = users[i]
        team = i // per_team if per_team else 0
        d["groups"] = [f"group{team}", "everyone"]
    return demands


def _median_time(fn, repeats: int = REPEATS) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def run() -> list[dict]:
    """Rows {benchmark, value, baseline, ratio, goal, ok}; times in seconds."""
    rows = []
    cases = [("fairshare", False), ("priority", False), ("fairshare", True), ("goodput", False)]
    for policy, iso in cases:
        demands = make_demands(iso=iso, measured=policy == "goodput")
        key = KEYS[policy]
        value = _median_time(lambda: allocate(N_GPUS, demands, policy))
        baseline = _median_time(lambda: sorted(demands, key=key))
        ratio = value / baseline
        name = f"allocate {policy}, {N_JOBS:,} jobs / {N_GPUS:,} GPUs" + (", ISO-8601 times" if iso else "")
        if policy == "goodput":
            name += ", all measured, a third adapting their batch"
        rows.append({"benchmark": name, "value": value, "baseline": baseline, "ratio": ratio,
                     "goal": f"<= {GOAL:g}x sorted()", "ok": ratio <= GOAL})
        if policy == "fairshare" and not iso:
            rows.append(_explained(demands, None, name))
    tree, users = make_accounts()
    demands = make_owned_demands(tree, users)
    value = _median_time(lambda: allocate(N_GPUS, demands, "fairshare", accounts=tree))
    baseline = _median_time(lambda: sorted(demands, key=KEYS["fairshare"]))
    rows.append({"benchmark": f"allocate fairshare, {N_JOBS:,} jobs / {N_GPUS:,} GPUs, {N_USERS:,} users "
                              f"in {N_ACCOUNTS} accounts", "value": value, "baseline": baseline,
                 "ratio": value / baseline, "goal": f"<= {GOAL:g}x sorted()", "ok": value / baseline <= GOAL})
    rows.append(_explained(demands, tree, rows[-1]["benchmark"]))
    return rows


def _explained(demands: list[dict], tree: dict | None, name: str) -> dict:
    """The ``allocate_explained`` row of ``demands`` (fairshare): the allocation and every waiting job's reason."""
    got = allocate_explained(N_GPUS, demands, "fairshare", accounts=tree)
    value = _median_time(lambda: allocate_explained(N_GPUS, demands, "fairshare", accounts=tree))
    baseline = _median_time(lambda: sorted(demands, key=KEYS["fairshare"]))
    return {"benchmark": f"{name}, explained ({len(got.waiting):,} reasons)", "value": value, "baseline": baseline,
            "ratio": value / baseline, "goal": f"<= {GOAL:g}x sorted()", "ok": value / baseline <= GOAL}


format_rows = format_table  # the table of bench/table.py


if __name__ == "__main__":
    print(format_rows(run()))
