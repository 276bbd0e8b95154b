"""Pure placement: which jobs are admitted, and which concrete slots a job gets or keeps.

A slot is ``(host, index)``.  These functions read plain records, lists and sets and touch
no Redis: :mod:`nbrunner.control.scheduler` reads the cluster's state, asks them, and
writes the answer back.  Conventions (see docs/architecture.md):

- a job's demand: elastic jobs range over ``[min_gpus, max_gpus]``; other jobs are gangs
  (all their GPUs at once, on one host); an elastic job whose training is over asks for 0;
- admission walks running jobs first, then the others in the policy's order, and stops at
  the first job whose minimum does not fit (no backfill); a job with max 0 always fits;
- placement prefers few hosts per job and keeps existing placements.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from .models import JobRecord, parse_time

Slot = tuple[str, int]


def demand_of(rec: JobRecord) -> dict:
    """The allocator's view of a job: elastic jobs range over [min, max]; others are gangs."""
    running = rec.status == "running" or rec.dispatched
    if rec.elastic and running and rec.training_over:
        lo = hi = 0
    elif rec.elastic:
        lo, hi = rec.min_gpus, rec.max_gpus
    elif running:
        lo = hi = len(rec.slots)
    else:
        lo = hi = rec.max_gpus
    return {"id": rec.id, "min_gpus": lo, "max_gpus": hi, "priority": rec.priority,
            "submitted_at": parse_time(rec.created_at).timestamp(), "running": running}


def admitted(total: int, demands: list[dict], policy: str) -> set[str]:
    """The ids admitted by the allocator's walk (running first, no backfill; max 0 always fits)."""
    if policy == "priority":
        key = lambda d: (not d["running"], -d["priority"], d["submitted_at"], d["id"])  # noqa: E731
    else:
        key = lambda d: (not d["running"], d["submitted_at"], d["id"])  # noqa: E731
    out, used, blocked = set(), 0, False
    for d in sorted(demands, key=key):
        if d["max_gpus"] == 0:  # never refused for lack of a GPU, even behind a blocked job
            out.add(d["id"])
            continue
        if blocked or used + d["min_gpus"] > total:
            blocked = True
            continue
        used += d["min_gpus"]
        out.add(d["id"])
    return out


def _per_host(free: Iterable[Slot]) -> dict[str, list[int]]:
    per_host: dict[str, list[int]] = defaultdict(list)
    for h, i in free:
        per_host[h].append(i)
    return per_host


def keep(target: list[Slot], want: int, home: str | None) -> list[Slot]:
    """Which ``want`` of ``target`` a shrinking job keeps: its driver's host (``home``) first,
    then its largest hosts."""
    count: dict[str, int] = defaultdict(int)
    for h, _ in target:
        count[h] += 1
    ranked = sorted(target, key=lambda s: (s[0] != home, -count[s[0]], s[0], s[1]))
    return sorted(ranked[:want])


def pick(free: Iterable[Slot], n: int, prefer: list[str]) -> list[Slot]:
    """``n`` free slots (or as many as there are) on as few hosts as possible, hosts in
    ``prefer`` first."""
    if n <= 0:
        return []
    per_host = _per_host(free)
    hosts = sorted(per_host, key=lambda h: (h not in prefer, -len(per_host[h]), h))
    out: list[Slot] = []
    for h in hosts:
        for i in sorted(per_host[h]):
            if len(out) == n:
                return out
            out.append((h, i))
    return out


def pick_one_host(free: Iterable[Slot], n: int) -> list[Slot] | None:
    """``n`` free slots on one host (the tightest fit), or None."""
    per_host = _per_host(free)
    fits = [h for h in per_host if len(per_host[h]) >= n]
    if not fits:
        return None
    h = min(fits, key=lambda h: (len(per_host[h]), h))
    return [(h, i) for i in sorted(per_host[h])[:n]]
