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
from typing import TYPE_CHECKING, Iterable, NamedTuple

from .models import parse_time

if TYPE_CHECKING:
    from .models import JobRecord

Slot = tuple[str, int]


def demand_of(rec: JobRecord, attained: float = 0.0, hold_s: float | None = None,
              throughput: dict[str, float] | None = None) -> dict:
    """The allocator's view of a job: elastic jobs range over [min, max]; others are gangs.
    ``attained``: the GPU-seconds it has received so far (its GPU timeline's integral); ``hold_s``:
    how long its next allocation is expected to last (``nbrunner.core.goodput.expected_hold_s``);
    ``throughput``: its measured points with its kind's (``nbrunner.core.kinds``; default its own)."""
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
            "submitted_at": parse_time(rec.created_at).timestamp(), "running": running,
            "throughput": rec.throughput if throughput is None else throughput,  # goodput inputs
            "gpus": len(rec.slots), "pause_s": rec.pause_s or 0.0,
            "attained": attained, "hold_s": hold_s, "progress": rec.progress,
            **({"efficiency": rec.efficiency} if rec.efficiency else {}),
            "owner": rec.owner, "groups": rec.groups,  # accounts inputs
            "gang": not rec.elastic}  # its GPUs on one host (why it waits: nbrunner.core.waiting)


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
    """``n`` free slots (or as many as there are) on as few hosts as possible: hosts in
    ``prefer`` first, then, while what is left fits on one host, the tightest such host (so
    that emptier hosts stay whole for larger jobs), else the host with the most free slots."""
    if n <= 0:
        return []
    per_host = {h: sorted(slots) for h, slots in _per_host(free).items()}
    out: list[Slot] = []
    for h in sorted((h for h in per_host if h in prefer), key=lambda h: (-len(per_host[h]), h)):
        out += [(h, i) for i in per_host.pop(h)[:n - len(out)]]
    while len(out) < n and per_host:
        need = n - len(out)
        fits = [h for h in per_host if len(per_host[h]) >= need]
        if fits:
            h = min(fits, key=lambda h: (len(per_host[h]), h))
        else:
            h = min(per_host, key=lambda h: (-len(per_host[h]), h))
        out += [(h, i) for i in per_host.pop(h)[:need]]
    return out


def pick_one_host(free: Iterable[Slot], n: int) -> list[Slot] | None:
    """``n`` free slots on one host (the tightest fit), or None."""
    per_host = _per_host(free)
    fits = [h for h in per_host if len(per_host[h]) >= n]
    if not fits:
        return None
    h = min(fits, key=lambda h: (len(per_host[h]), h))
    return [(h, i) for i in sorted(per_host[h])[:n]]


class Step(NamedTuple):
    """One thing a scheduler pass does to one job.

    ``kind``: ``"shrink"`` (its grant becomes ``slots``; they come back once the job confirms),
    ``"grow"`` (``slots`` are added to the ``have`` it holds), ``"position"`` (a queued job's
    place in the queue is ``position``) or ``"dispatch"`` (start it on ``slots``)."""

    kind: str
    rec: JobRecord
    slots: list[Slot] = []
    have: list[Slot] = []
    position: int = 0


def _grows(running: list[JobRecord], shares: dict[str, int], grant_of: dict[str, list[Slot]], free: set[Slot]
           ) -> list[Step]:
    """The grows of started elastic jobs (``running``, in the policy's order), taking slots out of ``free``: how
    many each gets is decided in that order, while slots last; where they go, largest grow first (small ones
    then fill the gaps it leaves, as in first-fit decreasing)."""
    haves = {r.id: sorted(grant_of.get(r.id, [])) for r in running}
    left, count = len(free), {}
    for r in running:
        count[r.id] = min(max(shares.get(r.id, 0) - len(haves[r.id]), 0), left)
        left -= count[r.id]
    extra = {}
    for r in sorted(running, key=lambda r: -count[r.id]):
        extra[r.id] = pick(free, count[r.id], prefer=[h for h, _ in haves[r.id]])
        free -= set(extra[r.id])
    return [Step("grow", r, extra[r.id], haves[r.id]) for r in running if extra[r.id]]


def started(rec: JobRecord) -> bool:
    """Running, or handed to a worker already."""
    return rec.status == "running" or rec.dispatched


def plan(live: list[JobRecord], shares: dict[str, int], ok: set[str], grant_of: dict[str, list[Slot]],
         free: set[Slot], policy: str) -> list[Step]:
    """The steps of one pass, in the order they are carried out: shrinks first (the slots come
    back when the job confirms), then, job by job in the policy's order, grows of started
    elastic jobs (their slots chosen largest grow first), queue positions of jobs that wait, and
    dispatches of admitted ones.

    ``shares``: each job's GPUs from :func:`nbrunner.core.allocate.allocate`; ``ok``: the
    admitted ids; ``grant_of``: the current grant of every started elastic job; ``free``: the
    slots nobody holds (not changed)."""
    free = set(free)
    order = sorted(live, key=lambda r: (not started(r), -r.priority if policy == "priority" else 0,
                                        parse_time(r.created_at).timestamp(), r.id))
    steps: list[Step] = []
    grant_of = dict(grant_of)
    for rec in order:
        target = grant_of.get(rec.id) if started(rec) and rec.elastic else None
        want = shares.get(rec.id, 0)
        if target is not None and len(target) > want:
            grant_of[rec.id] = keep(target, want, rec.host)
            steps.append(Step("shrink", rec, grant_of[rec.id]))
    steps += _grows([r for r in order if started(r) and r.elastic], shares, grant_of, free)
    positions = 0
    for rec in order:
        if started(rec):
            continue
        share = shares.get(rec.id, 0)
        if rec.id not in ok:
            positions += 1
            steps.append(Step("position", rec, position=positions))
            continue
        if rec.max_gpus == 0:
            steps.append(Step("dispatch", rec, []))
            continue
        if rec.elastic:
            slots = pick(free, min(share, len(free)), prefer=[])
            fits = len(slots) >= max(rec.min_gpus, 1 if share else 0)
        else:
            slots = pick_one_host(free, share)
            fits = slots is not None
        if not fits:
            positions += 1
            steps.append(Step("position", rec, position=positions))
            continue
        free -= set(slots)
        steps.append(Step("dispatch", rec, slots))
    return steps
