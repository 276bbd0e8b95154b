"""GPU slots in Redis: who holds each slot, each job's grant, and how a job confirms a release.

- ``nbrunner:slots``: hash ``"host/index" -> job id``: the slots held right now.  Only the
  scheduler adds to it (HSETNX: a slot is never held by two jobs); a job or its worker
  removes its own entries when it confirmed that nothing runs on them any more.
- ``nbrunner:grant:<job>``: JSON ``{"generation", "slots": [[host, index], ...]}``: what the
  job should hold.  A grow is held at once; a shrink is held until the job releases.
- ``nbrunner:slotlog``: stream of every grant and release; ``nbrunner:timeline:<job>``: the
  job's GPU count over time, for the timeline chart.

:class:`GrantClient` is what a running job (ElasticTrainer) uses to learn its grant and to
confirm changes.
"""
from __future__ import annotations

import json
import time
from typing import Callable, Iterable

import redis

from ..core.config import JOB_ID, REDIS_URL, SLOTLOG_MAXLEN
from ..core.keys import HOLDINGS, PREFIX, grant_key, job_key, timeline_key
from ..core.lifecycle import Declare, Refused, SlotsHeld, TrainingOver, fence
from ..core.models import JobRecord
from ..core.placement import Slot
from .store import JobStore
from .job_channel import WorkerChannel, channel_for
from .job_write import held_slots
from .record_lock import optimistic

SLOTLOG = PREFIX + "slotlog"


def slot_name(slot: Slot) -> str:
    return f"{slot[0]}/{slot[1]}"


def parse_slot(name: str) -> Slot:
    host, _, index = name.rpartition("/")
    return host, int(index)


def holdings(r: redis.Redis) -> dict[Slot, str]:
    return {parse_slot(k): v for k, v in r.hgetall(HOLDINGS).items()}


def held_by(r: redis.Redis, job_id: str) -> list[Slot]:
    return held_slots(r, job_id)


def _grant_of(raw: str | None) -> dict:
    return json.loads(raw) if raw else {"generation": 0, "slots": []}


def read_grant(r: redis.Redis, job_id: str) -> dict:
    return _grant_of(r.get(grant_key(job_id)))


def _publish_grant(q, job_id: str, gen: int, slots: list) -> None:
    """Write and announce a job's grant (on a client or a transaction's pipeline)."""
    q.set(grant_key(job_id), json.dumps({"generation": gen, "slots": slots}))
    q.publish(grant_key(job_id), gen)


def _log_grant(q, job_id: str, name: str, now: float) -> None:
    q.xadd(SLOTLOG, {"t": now, "job": job_id, "slot": name, "action": "grant"}, maxlen=SLOTLOG_MAXLEN,
           approximate=True)


def write_grant(r: redis.Redis, job_id: str, slots: Iterable[Slot]) -> int:
    """Publish a job's target slots; returns the new generation."""
    cur = read_grant(r, job_id)
    new = sorted([list(s) for s in slots])
    if new == sorted(cur["slots"]):
        return cur["generation"]
    gen = cur["generation"] + 1
    _publish_grant(r, job_id, gen, new)
    return gen


def take(r: redis.Redis, job_id: str, slot: Slot) -> bool:
    """Hold a free slot for ``job_id`` (False if someone holds it)."""
    if not r.hsetnx(HOLDINGS, slot_name(slot), job_id):
        return False
    _log_grant(r, job_id, slot_name(slot), time.time())
    return True


def grow(r: redis.Redis, job_id: str, have: Iterable[Slot], slots: Iterable[Slot]) -> list[Slot]:
    """Hold those of ``slots`` that are free for a running job and publish its grant, ``have`` and them,
    in one step: a job never sees slots held for it that its grant does not list yet (it would give
    them back as not its own).  Returns the slots taken."""
    names = {slot_name(tuple(slot)): tuple(slot) for slot in slots}
    if not names:
        return []
    key = grant_key(job_id)

    def step(p) -> tuple[list[Slot], Callable | None]:
        free = [n for n, holder in zip(names, p.hmget(HOLDINGS, list(names))) if holder is None]
        if not free:
            return [], None
        cur = _grant_of(p.get(key))
        new = sorted([list(s) for s in have] + [list(names[n]) for n in free])

        def writes(q) -> None:
            q.hset(HOLDINGS, mapping={n: job_id for n in free})
            _publish_grant(q, job_id, cur["generation"] + 1, new)
            now = time.time()
            for n in free:
                _log_grant(q, job_id, n, now)

        return [names[n] for n in free], writes

    return optimistic(r, [HOLDINGS, key], step)


def release(r: redis.Redis, job_id: str, slots: Iterable[Slot], reason: str = "release",
            attempt: int | None = None) -> list[Slot]:
    """Drop ``job_id``'s hold on ``slots`` (only those it holds), all at once (a scheduler pass
    never sees part of a release); returns what was released.  ``attempt``: released on behalf of
    that attempt of the job, which must still own it (:func:`nbrunner.core.lifecycle.fence`):
    a stale attempt's learners cannot give away the slots a later attempt holds."""
    names = {slot_name(tuple(slot)): tuple(slot) for slot in slots}
    if not names:
        return []

    def step(p) -> tuple[list[Slot], Callable | None]:
        held = [n for n, holder in zip(names, p.hmget(HOLDINGS, list(names))) if holder == job_id]
        if held and attempt is not None and not _owns(p.get(job_key(job_id)), attempt):
            held = []
        if not held:
            return [], None

        def writes(q) -> None:
            q.hdel(HOLDINGS, *held)
            now = time.time()
            for name in held:
                q.xadd(SLOTLOG, {"t": now, "job": job_id, "slot": name, "action": reason},
                       maxlen=SLOTLOG_MAXLEN, approximate=True)

        return [names[n] for n in held], writes

    return optimistic(r, [HOLDINGS, *([job_key(job_id)] if attempt is not None else [])], step)


def _owns(raw: str | bytes | None, attempt: int) -> bool:
    """Does the job record ``raw`` still belong to ``attempt``?"""
    if raw is None:
        return False
    try:
        fence(JobRecord.from_json(raw), attempt)
    except (Refused, ValueError):
        return False
    return True


def sync_slots(store: JobStore, job_id: str) -> None:
    """Copy the slots the job holds now into its record (``gpus``, ``slots``) and its timeline (the
    ``SlotsHeld`` transition, read and written in one step)."""
    try:
        store.transition(job_id, lambda rec: SlotsHeld(slots=tuple(held_by(store.r, job_id))))
    except Refused:  # it ended meanwhile: the scheduler gives back what it still holds
        return


def give_back(store: JobStore, job_id: str, reason: str, note: bool = False) -> None:
    """Give back every slot the job holds and publish an empty grant: the ``FreeSlots`` action (its
    transition noted in the record that the job holds none); ``note``: note it in the record now."""
    freed = release(store.r, job_id, held_by(store.r, job_id), reason=reason)
    write_grant(store.r, job_id, [])
    if note:
        sync_slots(store, job_id)
    if freed:  # the record said so already (no event of its own): the scheduler and the cluster's views learn it now
        store.emit("slots_freed", released=job_id)


def free_slots(store: JobStore, job_id: str, reason: str) -> None:
    """Give back every slot the job holds, publish an empty grant and note it in the record."""
    give_back(store, job_id, reason, note=True)


def timeline(r: redis.Redis, job_id: str) -> list[dict]:
    return [json.loads(x) for x in r.lrange(timeline_key(job_id), 0, -1)]


class GrantClient:
    """A running job's view of its GPU grant.

    ``declare(min, max)`` marks the job elastic; ``grant()`` returns ``(generation, slots)``;
    ``release(slots)`` confirms that nothing of the job runs on ``slots`` any more;
    ``withdraw()`` says its training is over: it gives back every slot and wants none until
    it declares again (the notebook may go on running without GPUs).  In a job that runs as its
    owner the changes go through the work horse (:mod:`nbrunner.control.job_channel`).
    """

    def __init__(self, job_id: str | None = None, url: str | None = None):
        self.job_id = job_id or JOB_ID.required()
        self.store = JobStore.from_url(url or REDIS_URL.required())
        self.channel = channel_for(self.store, self.job_id)

    def declare(self, min_gpus: int | None = None, max_gpus: int | None = None) -> None:
        self.channel.transition(Declare(min_gpus=min_gpus, max_gpus=max_gpus))

    def grant(self) -> tuple[int, list[Slot]]:
        g = read_grant(self.store.r, self.job_id)
        return g["generation"], [tuple(s) for s in g["slots"]]

    def held(self) -> list[Slot]:
        if isinstance(self.channel, WorkerChannel):
            return self.channel.held()
        return held_by(self.store.r, self.job_id)

    def wait(self, generation: int, timeout: float) -> tuple[int, list[Slot]]:
        """Block until the grant's generation differs from ``generation`` (or timeout)."""
        deadline = time.monotonic() + timeout
        pubsub = self.store.r.pubsub(ignore_subscribe_messages=True)
        pubsub.subscribe(grant_key(self.job_id))
        try:
            while True:
                gen, slots = self.grant()
                left = deadline - time.monotonic()
                if gen != generation or left <= 0:
                    return gen, slots
                pubsub.get_message(timeout=min(left, 1.0))
        finally:
            pubsub.close()

    def release(self, slots: Iterable[Slot]) -> list[Slot]:
        if isinstance(self.channel, WorkerChannel):
            return self.channel.release(slots)
        return release_and_sync(self.store, self.job_id, slots, attempt=getattr(self.channel, "attempt", None))

    def withdraw(self) -> list[Slot]:
        """Training is over: want no slot any more and release all the job holds."""

        # first the demand, so that the scheduler does not hand a released slot straight back
        self.channel.transition(TrainingOver())
        return self.release(self.held())


def release_and_sync(store: JobStore, job_id: str, slots: Iterable[Slot], attempt: int | None = None) -> list[Slot]:
    """A job confirms that nothing of it runs on ``slots``: release those it holds, note it in its
    record and wake the scheduler; returns what was released (nothing for a stale ``attempt``)."""
    done = release(store.r, job_id, slots, attempt=attempt)
    if done:
        sync_slots(store, job_id)
        store.emit("released", job=job_id)
    return done
