"""``nbrunner scheduler``: admission, GPU grants, rebalancing and lost-worker recovery.

Exactly one scheduler is active: it holds a lease in Redis (``nbrunner:scheduler``); a
second one waits as standby and takes over when the lease expires.  The active scheduler
makes a pass on every event (submit, finish, cancel, priority change, release, worker
join or leave) and at least every ``interval`` seconds, resting ``PASS_REST_FACTOR`` times a
pass's length before the next while events keep coming:

1. capacity: the slots that live workers registered;
2. recovery: jobs whose worker stopped heart-beating are re-queued (or failed);
3. allocation: :func:`nbrunner.core.allocate.allocate` on the active jobs' demands (under the
   ``goodput`` policy with each job's attained service, :mod:`nbrunner.control.attained`, and
   the throughput its kind measured, :mod:`nbrunner.control.kinds`);
4. grants: shrinks are published and wait for the job's release; freed slots go to jobs
   below their share; admitted queued jobs are placed on concrete slots and handed to rq.
"""
from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from collections import defaultdict
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import NamedTuple

import redis

from ..core.accounts import AccountTree, held_by_account
from ..core.allocate import allocate_explained
from ..core.config import (GOODPUT_QUEUE, JOB_GRACE_S, KEEP_DAYS, LEASE_TTL, PASS_REST_FACTOR, RENEWALS_PER_TTL,
                           SCHEDULER_INTERVAL_S, Settings, check)
from ..core.demands import DEFAULT_POLICY
from ..core.goodput import HOLD_WINDOW_S, expected_hold_s
from ..core.keys import ACTIVE, JOBS, LEASE, POLICY, job_key
from ..core.lifecycle import Dispatch, Position, Preempt, Refused, SetAccount, Shrunk, Undispatch, WorkerLost
from ..core.models import JobRecord, parse_time, utcnow
from ..core.placement import Slot, Step, admitted, demand_of, plan, started
from .quarantine import quarantine_job
from ..core.reclaim import reclaim_plan
from ..core.shares import account_shares
from .store import JobStore
from . import accounts, counters, grants
from .attained import AttainedLedger
from .kinds import KindLedger
from .outlook import Outlooks, asking_accounts
from .actions import advance, carry_out
from .job_access import revoke_access, runs_as_owner
from .retention import Retention
from .dispatch_watch import DispatchWatch
from .pipelines import advance_pipelines
from .registration import Capacity, live_capacity
from .schedules import fire_due
from .sweeps import advance_sweeps

log = logging.getLogger("nbrunner.scheduler")

_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""


def lease_ms() -> int:
    """The lease's TTL in milliseconds (``NBRUNNER_LEASE_TTL``, read at each renewal)."""
    return int(LEASE_TTL.seconds() * 1000)


@contextmanager
def contained(store: JobStore, rec: JobRecord, what: str):
    """Run one job's part of a pass; an error that is not Redis's quarantines that job only."""
    try:
        yield
    except redis.RedisError:
        raise
    except Exception as exc:  # noqa: BLE001 - one bad record must never stop the pass
        log.warning("job %s %s: %s: %s", rec.id, what, exc.__class__.__name__, exc)
        quarantined(store, rec.id, f"the job {what} ({exc.__class__.__name__}: {exc})")


def quarantined(store: JobStore, job_id: str, cause: str) -> None:
    """Quarantine a job (see :mod:`nbrunner.control.quarantine`) and carry out what that asks for."""
    done = quarantine_job(store, job_id, cause)
    if done is not None:
        carry_out(store, job_id, done.actions)


class Division(NamedTuple):
    """One pass's division of the GPUs: the jobs the allocator accepts, their demands and shares,
    the admitted ids; with an accounts tree also each job's account and the accounts' rows."""

    jobs: list[JobRecord]
    demands: list[dict]
    shares: dict[str, int]
    admitted: set[str]
    account_of: dict[str, str]
    rows: list[dict]
    waiting: dict[str, dict]  # why each job left waiting waits (nbrunner.core.waiting)


def divide(total: int, demands: list[dict], policy: str, tree: AccountTree | None,
           queues: tuple[float, ...] | None = None, hosts: list[int] | None = None) -> tuple:
    """(shares, admitted ids, account of each job, account rows, reasons of the jobs left waiting)
    of ``demands``; ``queues``: the goodput policy's queue thresholds (attained GPU-seconds; None:
    its defaults); ``hosts``: the slots of each live host."""
    if tree is None:
        a = allocate_explained(total, demands, policy, queue_thresholds=queues, hosts=hosts)
        return a.gpus, admitted(total, demands, policy), {}, [], a.waiting
    s = account_shares(total, demands, policy, tree, queue_thresholds=queues, hosts=hosts, explain=True)
    ok = {d["id"] for d in demands if s.jobs.get(d["id"], 0) > 0 or d["max_gpus"] == 0}
    return s.jobs, ok, s.account_of, s.accounts, s.waiting


def placeable(store: JobStore, live: list[JobRecord], total: int, policy: str, tree: AccountTree | None = None,
              attained: dict[str, float] | None = None, queues: tuple[float, ...] | None = None,
              hosts: list[int] | None = None, holds: dict[str, float] | None = None,
              throughputs: dict[str, dict[str, float]] | None = None) -> Division:
    """The division of the live jobs the allocator accepts; a job whose demand it refuses (e.g. a
    GPU count out of range written by an older version) is quarantined.  ``attained``: the
    GPU-seconds each job has received (goodput serves the least served first); ``holds``: how long
    each job's next allocation is expected to last (goodput weighs growths over it); ``throughputs``:
    the measured points of each job with its kind's (goodput's model of its speedup)."""
    attained, holds, throughputs = attained or {}, holds or {}, throughputs or {}
    def refused(rec: JobRecord, exc: Exception) -> None:
        quarantined(store, rec.id, f"the job could not be placed ({exc.__class__.__name__}: {exc})")

    demands, kept = [], []
    for rec in live:
        try:
            demands.append(demand_of(rec, attained.get(rec.id, 0.0), holds.get(rec.id), throughputs.get(rec.id)))
            kept.append(rec)
        except Exception as exc:  # noqa: BLE001
            refused(rec, exc)
    try:
        return Division(kept, demands, *divide(total, demands, policy, tree, queues, hosts))
    except (ValueError, TypeError, OverflowError):
        pass
    good = []
    for rec, d in zip(kept, demands):  # find the demands the allocator refuses, one by one
        try:
            divide(total, [d], policy, tree, queues)
            good.append((rec, d))
        except Exception as exc:  # noqa: BLE001
            refused(rec, exc)
    kept, demands = [r for r, _ in good], [d for _, d in good]
    return Division(kept, demands, *divide(total, demands, policy, tree, queues, hosts))


class Scheduler:
    """The allocator loop (see module docstring)."""

    def __init__(self, settings: Settings, policy: str | None = None, interval: float = SCHEDULER_INTERVAL_S,
                 name: str | None = None):
        check((LEASE_TTL, GOODPUT_QUEUE))  # a bad value stops the scheduler here, not in every pass
        self.settings = settings
        self.store = JobStore.from_url(settings.url)
        self.r = self.store.r
        self.name = name or f"{socket.gethostname()}.{os.getpid()}"
        self.interval = interval
        self.stopping = threading.Event()
        self._outlook: dict[str, dict] = {}  # this pass's outlooks not yet written
        self._asking: set[str] = set()  # accounts GPUs are taken back for, this pass
        self.dispatches = DispatchWatch(self.store)  # are the jobs handed to rq still waiting there?
        self._renew = self.r.register_script(_RENEW)
        self._next_fire = None  # the earliest fire time of a schedule: the loop wakes for it
        self._next_expiry: float | None = None  # monotonic time the first worker registration expires
        self._parsed: dict[str, tuple[str, JobRecord]] = {}  # active job id -> its stored text and record
        self.retention = Retention(self.store, settings, KEEP_DAYS.days())
        self.attained = AttainedLedger(self.r)  # the goodput policy's attained service, per job
        self.kinds = KindLedger(self.r)  # and the throughput each kind of job measured
        self.outlooks = Outlooks(self.store)  # why jobs wait, when they should start and end
        if policy:
            self.r.set(POLICY, policy)
        elif not self.r.exists(POLICY):
            self.r.set(POLICY, DEFAULT_POLICY)

    @property
    def policy(self) -> str:
        return self.r.get(POLICY) or DEFAULT_POLICY

    # ---- lease ------------------------------------------------------------------
    def acquire(self) -> bool:
        if self.r.set(LEASE, self.name, nx=True, px=lease_ms()):
            log.info("scheduler %s is active", self.name)
            self.store.emit("scheduler", name=self.name)
            return True
        return bool(self._renew(keys=[LEASE], args=[self.name, lease_ms()]))

    def renew(self) -> bool:
        return bool(self._renew(keys=[LEASE], args=[self.name, lease_ms()]))

    def run(self) -> None:
        """Run until :meth:`stop` (or SIGTERM): standby until the lease is ours, then schedule."""
        last = self.store.last_event_id()
        threading.Thread(target=_warm_imports, name="nbrunner-warm-imports", daemon=True).start()
        indexed = False
        while not self.stopping.is_set():
            try:
                if not self.acquire():
                    self.stopping.wait(min(SCHEDULER_INTERVAL_S, LEASE_TTL.seconds() / RENEWALS_PER_TTL))
                    continue
                if not indexed:
                    self.store.reindex()  # records written before the status indexes existed, once
                    indexed = True
                began = time.perf_counter()
                self.step()
                took = time.perf_counter() - began
                counters.record_pass(self.r, took)
                self.retention.maybe_run()
                self.stopping.wait(min(PASS_REST_FACTOR * took, self.interval))
                last, _ = self.store.wait_events(last, self._wait())
            except Exception as exc:  # Redis restarting or unreachable: retry
                log.warning("scheduler pass failed: %s: %s", exc.__class__.__name__, exc)
                self.stopping.wait(0.5)
        if self.r.get(LEASE) == self.name:
            self.r.delete(LEASE)

    def stop(self) -> None:
        self.stopping.set()

    def _wait(self) -> float:
        """Seconds to wait for events: ``interval``, less if a schedule fires sooner or a
        worker's registration expires sooner (a host that stopped heart-beating is noticed
        as soon as it counts as lost)."""
        wait = self.interval
        if self._next_fire is not None:
            wait = min(wait, (self._next_fire - datetime.now(timezone.utc)).total_seconds())
        if self._next_expiry is not None:
            wait = min(wait, self._next_expiry - time.monotonic() + 0.005)
        return max(0.001, wait)

    # ---- one pass -------------------------------------------------------------------
    def active_jobs(self) -> list[JobRecord]:
        """Every active job's record; one whose stored text is unchanged since the last call is
        not parsed again (records are frozen)."""
        ids = sorted(self.r.smembers(ACTIVE))
        parsed, self._parsed = self._parsed, {}
        if not ids:
            return []
        out = []
        for jid, raw in zip(ids, self.r.mget([job_key(i) for i in ids])):
            if raw is None:
                self.r.srem(ACTIVE, jid)
                continue
            known = parsed.get(jid)
            if known is not None and known[0] == raw:
                rec = known[1]
            else:
                rec = self.store.load(jid, raw)  # an unreadable record comes back quarantined
            self._parsed[jid] = (raw, rec)
            out.append(rec)
        return out

    def step(self) -> None:
        cap = live_capacity(self.store)
        self._next_expiry = None if cap.expires_in is None else time.monotonic() + cap.expires_in
        jobs = self.active_jobs()
        held = grants.holdings(self.r)
        self.recover(jobs, cap, held)
        advance_sweeps(self.store, self.settings)  # trials are submitted as earlier ones finish
        advance_pipelines(self.store, self.settings)  # a step is submitted once the steps it needs completed
        _, self._next_fire = fire_due(self.store, self.settings)  # scheduled runs whose time has come
        jobs = self.active_jobs()
        held = grants.holdings(self.r)
        self.allocate(jobs, cap, held)

    def recover(self, jobs: list[JobRecord], cap: Capacity, held: dict[Slot, str]) -> None:
        """Re-queue jobs of dead workers; free slots of dead hosts and of finished jobs."""
        by_job = defaultdict(list)
        for slot, jid in held.items():
            by_job[jid].append(slot)
        live = cap.slots
        alive = self.dispatches.alive([r for r in jobs if r.status == "queued" and r.dispatched], cap)
        for rec in jobs:
            with contained(self.store, rec, "could not be recovered"):
                if rec.status == "running" and rec.worker not in cap.workers:
                    self.lost(rec)
                elif rec.status == "queued" and rec.dispatched and rec.id not in alive:
                    self.undispatch(rec)
                elif rec.finished and not rec.released and rec.worker not in cap.workers:
                    self.lost(rec)  # it ended, but its worker died before confirming: nothing runs
                elif rec.finished and rec.released:
                    self.outlooks.record_run(rec)  # once: it leaves the active set below
                    if by_job.pop(rec.id, None):
                        grants.free_slots(self.store, rec.id, "finished")
                    self.r.srem(ACTIVE, rec.id)
        dead = defaultdict(list)
        for slot, jid in held.items():
            if slot not in live:
                dead[jid].append(slot)
        for jid, slots in dead.items():  # their learners died with the worker: shrink the grant too
            grants.release(self.r, jid, slots, reason="host lost")
            target = [tuple(s) for s in grants.read_grant(self.r, jid)["slots"]]
            grants.write_grant(self.r, jid, [s for s in target if s not in slots])
            grants.sync_slots(self.store, jid)
        for jid in set(held.values()) - {r.id for r in jobs}:
            rest = [s for s, j in held.items() if j == jid]
            grants.release(self.r, jid, rest, reason="orphan")

    def lost(self, rec: JobRecord) -> None:
        """The worker running ``rec`` is gone: re-queue it, or fail it when retries are spent (a job
        that had ended already is only released)."""
        try:
            done = advance(self.store, rec.id, WorkerLost(attempt=rec.attempt, at=utcnow()), self.settings)
        except Refused:
            return
        log.warning("worker %s lost: job %s %s", rec.worker, rec.id, done.record.status)
        if runs_as_owner(self.store):  # its worker cannot delete the job's Redis user any more
            revoke_access(self.store, rec.id)

    def undispatch(self, rec: JobRecord) -> None:
        try:
            advance(self.store, rec.id, Undispatch(attempt=rec.attempt), self.settings)
        except Refused:
            pass

    # ---- allocation -------------------------------------------------------------------
    def holds(self, live: list[JobRecord], now: float) -> dict[str, float]:
        """How long the next allocation of each live job holding slots (only such a job grows) is expected
        to last (after ``self.attained.of``): from the jobs submitted in the last ``HOLD_WINDOW_S`` and the
        job's age and resizes."""
        holding = [rec for rec in live if rec.slots]
        if not holding:
            return {}
        arrivals = int(self.r.zcount(JOBS, now - HOLD_WINDOW_S, "+inf"))
        return {rec.id: expected_hold_s(arrivals, max(0.0, now - parse_time(rec.created_at).timestamp()),
                                        self.attained.resizes(rec.id)) for rec in holding}

    def allocate(self, jobs: list[JobRecord], cap: Capacity, held: dict[Slot, str]) -> None:
        """Shares from the policy (down the accounts tree, if the cluster has one), a plan from
        :func:`nbrunner.core.placement.plan`, then the plan carried out against Redis.  A slot
        another job took meanwhile (a stale view) makes that step wait for the next pass."""
        live = [r for r in jobs if not r.finished and not r.cancel_requested]
        total = len(cap.slots)
        tree = accounts.current(self.store)
        policy = self.policy
        now = time.time()
        served = self.attained.of(live, now) if policy == "goodput" else {}
        holds = self.holds(live, now) if policy == "goodput" else {}
        throughputs = self.kinds.throughputs(live) if policy == "goodput" else {}
        queues = (GOODPUT_QUEUE.seconds(),) if policy == "goodput" else None
        hosts = [len(idx) for idx in cap.hosts.values()] or ([0] if cap.workers else [])
        div = placeable(self.store, live, total, policy, tree, served, queues, hosts, holds, throughputs)
        shares, reasons, self._asking = div.shares, {}, set()
        if tree is not None:
            shares, reasons = self.reclaim(div, tree)
        grant_of = {r.id: [tuple(s) for s in grants.read_grant(self.r, r.id)["slots"]]
                    for r in div.jobs if started(r) and r.elastic}
        free = cap.slots - set(held)
        steps = plan(div.jobs, shares, div.admitted, grant_of, free, policy)
        placed = {s.rec.id for s in steps if s.kind == "dispatch"}
        free -= {tuple(x) for s in steps if s.kind in ("dispatch", "grow") for x in s.slots}
        times = self.outlooks.times(div.jobs, div.demands, total, policy, tree, time.time())
        self._outlook = self.outlooks.outlooks(div.jobs, div.waiting, placed, shares, free, div.account_of,
                                               self._asking, times)
        for step in steps:
            with contained(self.store, step.rec, "could not be placed"):
                if step.kind == "shrink" and step.rec.id in reasons:
                    self.note(step.rec, Shrunk(reason=reasons[step.rec.id]))
                self.apply(step)
        for rec in div.jobs:  # the outlooks no position step carried: started jobs', and those dispatched now
            if rec.id in self._outlook:
                with contained(self.store, rec, "could not be given its outlook"):
                    self.note(rec, Position(position=None, outlook=self._outlook.pop(rec.id)))

    def note(self, rec: JobRecord, event) -> None:
        """Apply a bookkeeping event to ``rec``; one that no longer applies (the job ended
        meanwhile) is dropped."""
        try:
            advance(self.store, rec.id, event)
        except Refused:
            pass

    def reclaim(self, div: Division, tree: AccountTree) -> tuple[dict[str, int], dict[str, str]]:
        """With accounts: note each job's account and what each account holds; preempt the jobs
        whose GPUs were asked back ``reclaim_after`` ago.  Returns the shares to place and why
        elastic jobs shrink (see :mod:`nbrunner.core.reclaim`)."""
        for rec in div.jobs:
            if rec.account != div.account_of.get(rec.id):
                with contained(self.store, rec, "could not be given its account"):
                    self.note(rec, SetAccount(account=div.account_of.get(rec.id)))
        held = {row["path"]: 0 for row in div.rows}
        held.update(held_by_account((div.account_of[rec.id], len(rec.slots)) for rec in div.jobs))
        accounts.record_usage(self.store, held)  # a parent account's usage is its sub-accounts'
        r = reclaim_plan(div.jobs, div.shares, div.rows, div.account_of)
        self._asking = asking_accounts({**r.shrunk, **r.preempt})
        by_id = {rec.id: rec for rec in div.jobs}
        for job_id in accounts.due_preemptions(self.store, r.preempt, tree.reclaim_after):
            rec = by_id[job_id]
            with contained(self.store, rec, "could not be preempted"):
                try:
                    advance(self.store, job_id, Preempt(attempt=rec.attempt, reason=r.preempt[job_id]), self.settings)
                    log.warning("job %s preempted: %s", job_id, r.preempt[job_id])
                except Refused:
                    pass
        return r.shares, r.shrunk

    def apply(self, step: Step) -> None:
        """Carry out one step of the plan."""
        rec = step.rec
        if step.kind == "shrink":
            grants.write_grant(self.r, rec.id, step.slots)
        elif step.kind == "position":
            self._set_position(rec, step.position)
        elif step.kind == "grow":
            if grants.grow(self.r, rec.id, step.have, step.slots):
                grants.sync_slots(self.store, rec.id)
        elif step.kind == "dispatch":
            taken = [s for s in step.slots if grants.take(self.r, rec.id, s)]
            if len(taken) != len(step.slots):  # raced with a stale view: give back, retry next pass
                grants.release(self.r, rec.id, taken, reason="race")
                return
            self.dispatch(rec, taken)

    def _set_position(self, rec: JobRecord, pos: int) -> None:
        outlook = self._outlook.pop(rec.id, None)
        if rec.queue_position != pos or outlook:
            try:
                advance(self.store, rec.id, Position(position=pos, outlook=outlook))
            except Refused:
                pass

    def dispatch(self, rec: JobRecord, slots: list[Slot]) -> None:
        """Hand a job to rq on the host of its slots (any worker when it holds none)."""
        hosts = defaultdict(int)
        for h, _ in slots:
            hosts[h] += 1
        host = max(hosts, key=lambda h: (hosts[h], h)) if hosts else None
        try:
            advance(self.store, rec.id, Dispatch(host=host, slots=tuple(slots), timeout_grace_s=JOB_GRACE_S),
                    self.settings)
        except Refused:
            grants.release(self.r, rec.id, slots, reason="not dispatched")


def _warm_imports() -> None:
    """Import what submitting a job needs (nbformat, kernel specs) before the first scheduled
    run, so that run is not late by the import time."""
    try:
        from jupyter_client.kernelspec import KernelSpecManager

        from ..core.notebooks import load_nbformat

        load_nbformat()
        KernelSpecManager().find_kernel_specs()
    except Exception:  # noqa: BLE001 - a warm-up only: the real submit reports any problem
        pass


def run_scheduler(settings: Settings, policy: str | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    sched = Scheduler(settings, policy)
    from .notify_sender import Notifier

    Notifier(settings, sched.name).start()  # its own threads: a slow target never holds a pass up
    signal.signal(signal.SIGTERM, lambda *_: sched.stop())
    signal.signal(signal.SIGINT, lambda *_: sched.stop())
    sched.run()
