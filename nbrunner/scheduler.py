"""``nbrunner scheduler``: admission, GPU grants, rebalancing and lost-worker recovery.

Exactly one scheduler is active: it holds a lease in Redis (``nbrunner:scheduler``); a
second one waits as standby and takes over when the lease expires.  The active scheduler
makes a pass on every event (submit, finish, cancel, priority change, release, worker
join or leave) and at least every ``interval`` seconds:

1. capacity: the slots that live workers registered;
2. recovery: jobs whose worker stopped heart-beating are re-queued (or failed);
3. allocation: :func:`nbrunner.allocate.allocate` on the active jobs' demands;
4. grants: shrinks are published and wait for the job's release; freed slots go to jobs
   below their share; admitted queued jobs are placed on concrete slots and handed to rq.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import socket
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

from rq.exceptions import NoSuchJobError
from rq.job import Job as RqJob

from . import grants
from .allocate import allocate
from .config import Settings
from .execute import JOB_GRACE_S
from .grants import Slot
from .models import JobRecord, parse_time, utcnow
from .queues import DEFAULT_QUEUE, host_queue, queue, rq_connection, rq_job_id
from .store import ACTIVE, PREFIX, JobStore
from .sweeps import advance_sweeps
from .worker import WORKERS, worker_key

LEASE = PREFIX + "scheduler"
POLICY = PREFIX + "policy"
LEASE_TTL = float(os.environ.get("NBRUNNER_LEASE_TTL", "5"))
STRANDED_AFTER_S = 10.0  # a dispatched rq job "queued" in no queue this long was dropped by its worker
log = logging.getLogger("nbrunner.scheduler")

_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""


@dataclass
class Capacity:
    """Live workers and the slots they registered, per host."""

    workers: dict[str, dict] = field(default_factory=dict)
    hosts: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))

    @property
    def slots(self) -> set[Slot]:
        return {(h, i) for h, idx in self.hosts.items() for i in idx}

    def host_alive(self, host: str) -> bool:
        return any(w["host"] == host for w in self.workers.values())


def live_capacity(store: JobStore) -> Capacity:
    names = sorted(store.r.smembers(WORKERS))
    cap = Capacity()
    if not names:
        return cap
    raws = store.r.mget([worker_key(n) for n in names])
    gone = []
    for name, raw in zip(names, raws):
        if raw is None:
            gone.append(name)
            continue
        w = json.loads(raw)
        cap.workers[name] = w
        cap.hosts[w["host"]].update(w["slots"])
    if gone:
        store.r.srem(WORKERS, *gone)
    return cap


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
            "submitted_at": parse_time(rec.created_at).timestamp(), "running": running,
            "throughput": rec.throughput, "gpus": len(rec.slots), "pause_s": rec.pause_s or 0.0}  # goodput inputs


def admitted(total: int, demands: list[dict], policy: str) -> set[str]:
    """The ids admitted by DESIGN 4's walk (running first, no backfill; max 0 always fits)."""
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


class Scheduler:
    """The allocator loop (see module docstring)."""

    def __init__(self, settings: Settings, policy: str | None = None, interval: float = 1.0, name: str | None = None):
        self.settings = settings
        self.store = JobStore.from_url(settings.url)
        self.r = self.store.r
        self.name = name or f"{socket.gethostname()}.{os.getpid()}"
        self.interval = interval
        self.stopping = threading.Event()
        self._stranded: dict[str, float] = {}  # rq job id -> when first seen 'queued' but in no queue
        self._renew = self.r.register_script(_RENEW)
        if policy:
            self.r.set(POLICY, policy)
        elif not self.r.exists(POLICY):
            self.r.set(POLICY, "fairshare")

    @property
    def policy(self) -> str:
        return self.r.get(POLICY) or "fairshare"

    # ---- lease ------------------------------------------------------------------
    def acquire(self) -> bool:
        if self.r.set(LEASE, self.name, nx=True, px=int(LEASE_TTL * 1000)):
            log.info("scheduler %s is active", self.name)
            self.store.emit("scheduler", name=self.name)
            return True
        return bool(self._renew(keys=[LEASE], args=[self.name, int(LEASE_TTL * 1000)]))

    def renew(self) -> bool:
        return bool(self._renew(keys=[LEASE], args=[self.name, int(LEASE_TTL * 1000)]))

    def run(self) -> None:
        """Run until :meth:`stop` (or SIGTERM): standby until the lease is ours, then schedule."""
        last = self.store.last_event_id()
        while not self.stopping.is_set():
            try:
                if not self.acquire():
                    self.stopping.wait(min(1.0, LEASE_TTL / 5))
                    continue
                self.step()
                last, _ = self.store.wait_events(last, self.interval)
            except Exception as exc:  # Redis restarting or unreachable: retry
                log.warning("scheduler pass failed: %s: %s", exc.__class__.__name__, exc)
                self.stopping.wait(0.5)
        if self.r.get(LEASE) == self.name:
            self.r.delete(LEASE)

    def stop(self) -> None:
        self.stopping.set()

    # ---- one pass -------------------------------------------------------------------
    def active_jobs(self) -> list[JobRecord]:
        ids = sorted(self.r.smembers(ACTIVE))
        if not ids:
            return []
        out = []
        for jid, raw in zip(ids, self.r.mget([f"{PREFIX}job:{i}" for i in ids])):
            if raw is None:
                self.r.srem(ACTIVE, jid)
                continue
            out.append(JobRecord.model_validate_json(raw))
        return out

    def step(self) -> None:
        cap = live_capacity(self.store)
        jobs = self.active_jobs()
        held = grants.holdings(self.r)
        self.recover(jobs, cap, held)
        advance_sweeps(self.store, self.settings)  # trials are submitted as earlier ones finish
        jobs = self.active_jobs()
        held = grants.holdings(self.r)
        self.allocate(jobs, cap, held)

    def recover(self, jobs: list[JobRecord], cap: Capacity, held: dict[Slot, str]) -> None:
        """Re-queue jobs of dead workers; free slots of dead hosts and of finished jobs."""
        by_job = defaultdict(list)
        for slot, jid in held.items():
            by_job[jid].append(slot)
        live = cap.slots
        for rec in jobs:
            if rec.status == "running" and rec.worker not in cap.workers:
                self.lost(rec)
            elif rec.status == "queued" and rec.dispatched and not self._dispatch_alive(rec, cap):
                self.undispatch(rec)
            elif rec.finished and (rec.released or rec.worker not in cap.workers):
                if by_job.get(rec.id):
                    grants.release(self.r, rec.id, by_job.pop(rec.id), reason="finished")
                    grants.sync_record(self.store, rec.id)
                self.r.srem(ACTIVE, rec.id)
        dead = defaultdict(list)
        for slot, jid in held.items():
            if slot not in live:
                dead[jid].append(slot)
        for jid, slots in dead.items():  # their learners died with the worker: shrink the grant too
            grants.release(self.r, jid, slots, reason="host lost")
            target = [tuple(s) for s in grants.read_grant(self.r, jid)["slots"]]
            grants.write_grant(self.r, jid, [s for s in target if s not in slots])
            grants.sync_record(self.store, jid)
        for jid in set(held.values()) - {r.id for r in jobs}:
            rest = [s for s, j in held.items() if j == jid]
            grants.release(self.r, jid, rest, reason="orphan")

    def _dispatch_alive(self, rec: JobRecord, cap: Capacity) -> bool:
        """A dispatched job not yet started: is its rq job still waiting or being picked up?"""
        if rec.host and not cap.host_alive(rec.host):
            return False
        try:
            job = RqJob.fetch(rq_job_id(rec.id, rec.attempt), connection=rq_connection(self.store))
        except NoSuchJobError:
            return False
        status = job.get_status(refresh=False)
        if status == "queued":
            return self._waiting(job)
        self._stranded.pop(job.id, None)
        if status in ("deferred", "scheduled"):
            return True
        if status == "started":
            return (job.worker_name or "") in cap.workers
        return False

    def _waiting(self, job: RqJob) -> bool:
        """Is a 'queued' rq job really in its queue?  A worker that dies (or loses Redis) between
        taking a job from the queue and starting it leaves it in rq's intermediate queue,
        'queued' for ever; after a grace (a worker takes milliseconds) it is re-dispatched."""
        if job.connection.lpos(queue(self.store, job.origin).key, job.id) is not None:
            self._stranded.pop(job.id, None)
            return True
        first = self._stranded.setdefault(job.id, time.monotonic())
        if time.monotonic() - first < STRANDED_AFTER_S:
            return True
        del self._stranded[job.id]
        log.warning("rq job %s was taken from its queue but never started: re-dispatching", job.id)
        return False

    def lost(self, rec: JobRecord) -> None:
        """The worker running ``rec`` is gone: re-queue it, or fail it when retries are spent."""

        def change(r: JobRecord) -> bool:
            if r.status != "running" or r.attempt != rec.attempt:
                return False
            if r.lost < r.retries:
                r.lost += 1
                r.status = "queued"
                r.dispatched = False
                r.worker = None
                r.error = None
                r.progress = None
            else:
                r.status, r.error, r.finished_at = "failed", "worker lost", utcnow()
            r.released = True
            return True

        new = self.store.update(rec.id, change, event="requeued")
        if new is not None:
            log.warning("worker %s lost: job %s %s", rec.worker, rec.id, new.status)
            self._forget_rq(rec)
            grants.release(self.r, rec.id, grants.held_by(self.r, rec.id), reason="worker lost")
            grants.write_grant(self.r, rec.id, [])
            grants.sync_record(self.store, rec.id)

    def undispatch(self, rec: JobRecord) -> None:
        def change(r: JobRecord) -> bool:
            if r.status != "queued" or r.attempt != rec.attempt or not r.dispatched:
                return False
            r.dispatched = False
            return True

        if self.store.update(rec.id, change, event="undispatched") is not None:
            self._forget_rq(rec)
            grants.release(self.r, rec.id, grants.held_by(self.r, rec.id), reason="undispatched")
            grants.write_grant(self.r, rec.id, [])
            grants.sync_record(self.store, rec.id)

    def _forget_rq(self, rec: JobRecord) -> None:
        conn = rq_connection(self.store)
        try:
            job = RqJob.fetch(rq_job_id(rec.id, rec.attempt), connection=conn)
            job.cancel()
            conn.lrem(queue(self.store, job.origin).intermediate_queue_key, 0, job.id)
        except Exception:
            pass

    # ---- allocation -------------------------------------------------------------------
    def allocate(self, jobs: list[JobRecord], cap: Capacity, held: dict[Slot, str]) -> None:
        live = [r for r in jobs if not r.finished and not r.cancel_requested]
        total = len(cap.slots)
        demands = [demand_of(r) for r in live]
        policy = self.policy
        shares = allocate(total, demands, policy) if demands else {}
        ok = admitted(total, demands, policy)
        by_id = {r.id: r for r in live}
        mine: dict[str, list[Slot]] = defaultdict(list)
        for slot, jid in held.items():
            mine[jid].append(slot)
        free = cap.slots - set(held)

        # shrinks first (the slots come back when the job confirms), then grows, then new jobs
        order = sorted(live, key=lambda r: (r.status != "running" and not r.dispatched, -r.priority if policy == "priority" else 0,
                                            parse_time(r.created_at).timestamp(), r.id))
        for rec in order:
            if (rec.status == "running" or rec.dispatched) and rec.elastic:
                target = grants.read_grant(self.r, rec.id)["slots"]
                want = shares.get(rec.id, 0)
                if len(target) > want:
                    keep = self._keep(rec, [tuple(s) for s in target], want)
                    grants.write_grant(self.r, rec.id, keep)
        positions = 0
        for rec in order:
            share = shares.get(rec.id, 0)
            started = rec.status == "running" or rec.dispatched
            if started:
                if rec.elastic:
                    have = sorted(tuple(s) for s in grants.read_grant(self.r, rec.id)["slots"])
                    if len(have) < share and free:
                        extra = self._pick(free, share - len(have), prefer=[h for h, _ in have])
                        taken = [s for s in extra if grants.take(self.r, rec.id, s)]
                        free -= set(taken)
                        if taken:
                            grants.write_grant(self.r, rec.id, have + taken)
                            grants.sync_record(self.store, rec.id)
                continue
            if rec.id not in ok:
                positions += 1
                self._set_position(rec, positions)
                continue
            if rec.max_gpus == 0:
                self.dispatch(rec, [])
                continue
            need = share if not rec.elastic else max(rec.min_gpus, 1 if share else 0)
            if rec.elastic:
                slots = self._pick(free, min(share, len(free)), prefer=[])
                if len(slots) < max(rec.min_gpus, 1 if share else 0):
                    positions += 1
                    self._set_position(rec, positions)
                    continue
            else:
                slots = self._pick_one_host(free, cap, need)
                if slots is None:
                    positions += 1
                    self._set_position(rec, positions)
                    continue
            taken = [s for s in slots if grants.take(self.r, rec.id, s)]
            if len(taken) != len(slots):  # raced with a stale view: give back, retry next pass
                grants.release(self.r, rec.id, taken, reason="race")
                continue
            free -= set(taken)
            self.dispatch(rec, taken)

    def _set_position(self, rec: JobRecord, pos: int) -> None:
        if rec.queue_position != pos:
            def change(r: JobRecord) -> bool:
                if r.status != "queued":
                    return False
                r.queue_position = pos
                return True

            self.store.update(rec.id, change)

    @staticmethod
    def _keep(rec: JobRecord, target: list[Slot], want: int) -> list[Slot]:
        """Which slots a shrinking job keeps: its driver's host first, then its largest hosts."""
        count = defaultdict(int)
        for h, _ in target:
            count[h] += 1
        ranked = sorted(target, key=lambda s: (s[0] != rec.host, -count[s[0]], s[0], s[1]))
        return sorted(ranked[:want])

    @staticmethod
    def _pick(free: set[Slot], n: int, prefer: list[str]) -> list[Slot]:
        """``n`` free slots on as few hosts as possible, hosts in ``prefer`` first."""
        if n <= 0:
            return []
        per_host = defaultdict(list)
        for h, i in free:
            per_host[h].append(i)
        hosts = sorted(per_host, key=lambda h: (h not in prefer, -len(per_host[h]), h))
        out: list[Slot] = []
        for h in hosts:
            for i in sorted(per_host[h]):
                if len(out) == n:
                    return out
                out.append((h, i))
        return out

    @staticmethod
    def _pick_one_host(free: set[Slot], cap: Capacity, n: int) -> list[Slot] | None:
        """``n`` free slots on one host (the tightest fit), or None."""
        per_host = defaultdict(list)
        for h, i in free:
            per_host[h].append(i)
        fits = [h for h in per_host if len(per_host[h]) >= n]
        if not fits:
            return None
        h = min(fits, key=lambda h: (len(per_host[h]), h))
        return [(h, i) for i in sorted(per_host[h])[:n]]

    def dispatch(self, rec: JobRecord, slots: list[Slot]) -> None:
        """Hand a job to rq on the host of its slots (any worker when it holds none)."""
        hosts = defaultdict(int)
        for h, _ in slots:
            hosts[h] += 1
        host = max(hosts, key=lambda h: (hosts[h], h)) if hosts else None

        def change(r: JobRecord) -> bool:
            if r.status != "queued" or r.dispatched or r.cancel_requested:
                return False
            r.attempt += 1
            r.dispatched = True
            r.training_over = False
            r.host = host
            r.queue_position = None
            return True

        new = self.store.update(rec.id, change, event="dispatched")
        if new is None:
            grants.release(self.r, rec.id, slots, reason="not dispatched")
            return
        grants.write_grant(self.r, rec.id, slots)
        grants.sync_record(self.store, rec.id)
        timeout = -1 if not new.timeout else int(new.timeout + JOB_GRACE_S)
        queue(self.store, host_queue(host) if host else DEFAULT_QUEUE).enqueue_call(
            "nbrunner.execute.run_job", args=(new.id, new.attempt), job_id=rq_job_id(new.id, new.attempt),
            timeout=timeout, result_ttl=3600, failure_ttl=24 * 3600, description=f"nbrunner job {new.id}",
        )


def run_scheduler(settings: Settings, policy: str | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    sched = Scheduler(settings, policy)
    signal.signal(signal.SIGTERM, lambda *_: sched.stop())
    signal.signal(signal.SIGINT, lambda *_: sched.stop())
    sched.run()
