"""The one write path of a job record.

Every change of ``nbrunner:job:<id>`` (a new job, a transition, a quarantine, a removal) is a
:class:`JobWrite`, and :func:`queue_write` is the only code that turns one into Redis commands:
the record, its indexes (``nbrunner:jobs``, the status indexes, ``nbrunner:finished``), the
active set, the counters, its event-stream entries and its GPU timeline, all in one atomic step.
A change of an existing record is decided and written in :func:`write_job`, the optimistic loop
(:func:`~nbrunner.control.record_lock.optimistic`) around its key; new records are written by
:func:`insert` (one script: none of the ids may exist).

:func:`transition_write` turns a job's :class:`~nbrunner.core.lifecycle.Transition` into its
write.  The actions that only change the record or what is written with it are done in that same
write instead of after it: ``SyncSlots`` (and the record side of ``FreeSlots``) note the slots
the job holds as the ``SlotsHeld`` transition would, ``AppendTimeline`` adds to the timeline.  So
no action writes the record again; what is left for :mod:`nbrunner.control.actions` touches other
keys only (grants, holdings, rq, files).  ``tests/control/test_write_path.py`` checks that no
other module writes a job's keys.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, TypeVar

import redis

from ..core.config import EVENTS_MAXLEN
from ..core.counters import merge, transition_counts
from ..core.indexes import finish_time
from ..core.keys import ACTIVE, COUNTERS, EVENTS, FINISHED_AT, HOLDINGS, JOBS, job_key, status_index, timeline_key
from ..core.lifecycle import AppendTimeline, FreeSlots, Refused, SlotsHeld, SyncSlots, Transition, transition
from ..core.models import FINISHED, STATUSES, JobRecord, utcnow
from .record_lock import optimistic

T = TypeVar("T")
Slots = tuple[tuple[str, int], ...]


@dataclass
class JobWrite:
    """What one change of a job writes, besides its record (``record``; None: the job is removed
    with every index entry of it and the keys ``drop``)."""

    job_id: str
    record: JobRecord | None
    entries: list[dict[str, Any]] = field(default_factory=list)  # event-stream entries, in order
    counts: dict[str, float] = field(default_factory=dict)  # counter increments (core.counters)
    timeline: list[int] = field(default_factory=list)  # GPU counts to add to the timeline
    score: float | None = None  # file the record under its status, with this creation time (None: it did not move)
    new: bool = False  # a new job: listed in nbrunner:jobs at ``score``
    active: bool = False  # the scheduler looks after it (the active set)
    keep: dict[str, str] = field(default_factory=dict)  # other keys written with it (a quarantined original)
    drop: tuple[str, ...] = ()  # other keys deleted with a removed job (its grant, timeline, ...)


def queue_write(p: Any, w: JobWrite) -> None:
    """Queue, on ``p`` (a pipeline in MULTI mode, or :class:`Commands`), everything ``w`` writes."""
    key = job_key(w.job_id)
    if w.record is None:
        p.delete(key, *w.drop)
        p.zrem(JOBS, w.job_id)
        for status in STATUSES:
            p.zrem(status_index(status), w.job_id)
        p.zrem(FINISHED_AT, w.job_id)
        p.srem(ACTIVE, w.job_id)
    else:
        for other, value in w.keep.items():
            p.set(other, value)
        p.set(key, w.record.to_json())
        if w.new:
            p.zadd(JOBS, {w.job_id: w.score})
        if w.score is not None:
            index_status(p, w.record, w.score, fresh=w.new)
        if w.active:
            p.sadd(ACTIVE, w.job_id)
    for entry in w.entries:
        p.xadd(EVENTS, entry, maxlen=EVENTS_MAXLEN, approximate=True)
    add_counts(p, w.counts)
    for gpus in w.timeline:
        p.rpush(timeline_key(w.job_id), json.dumps({"t": utcnow(), "gpus": gpus}))


def index_status(p: Any, rec: JobRecord, score: float, fresh: bool = False) -> None:
    """Queue, on pipeline ``p``, the moves that file ``rec`` under its status (and finish time);
    ``fresh``: a new job (:func:`insert` checked its key is free), in no index yet: only the adds."""
    if fresh:
        p.zadd(status_index(rec.status), {rec.id: score})
        if rec.status in FINISHED:
            p.zadd(FINISHED_AT, {rec.id: finish_time(rec)})
        return
    for status in STATUSES:
        if status != rec.status:
            p.zrem(status_index(status), rec.id)
    p.zadd(status_index(rec.status), {rec.id: score})
    file_finish(p, rec)


def file_finish(p: Any, rec: JobRecord) -> None:
    """Queue the ``nbrunner:finished`` entry of ``rec`` as its record has it (none if unfinished)."""
    if rec.status in FINISHED:
        p.zadd(FINISHED_AT, {rec.id: finish_time(rec)})
    else:
        p.zrem(FINISHED_AT, rec.id)


def refile(p: Any, rec: JobRecord, score: float) -> None:
    """Queue the index entries of a record stored before the status indexes existed; only adds (a
    concurrent status change is never undone)."""
    p.zadd(status_index(rec.status), {rec.id: score})
    if rec.finished:
        p.zadd(FINISHED_AT, {rec.id: finish_time(rec)})


def forget(r: Any, keys: Iterable[str]) -> None:
    """Delete what is left of a removed job (its grant, timeline, quarantined original, ...)."""
    r.delete(*keys)


def add_counts(p: Any, counts: dict[str, float]) -> None:
    """Queue, on pipeline ``p``, the increments of the cluster's counters (:mod:`.counters`)."""
    for name, n in counts.items():
        if isinstance(n, int):
            p.hincrby(COUNTERS, name, n)
        else:
            p.hincrbyfloat(COUNTERS, name, n)


def write_job(r: redis.Redis, job_id: str, decide: Callable[[Any, str | None], tuple[T, JobWrite | None]]) -> T:
    """Change job ``job_id`` atomically: ``decide(p, raw)`` gets the stored text (None: no record)
    and returns ``(result, write)`` (write None: nothing); retried from the read when the record
    changed meanwhile (see :func:`~nbrunner.control.record_lock.optimistic`).  Returns ``result``."""
    key = job_key(job_id)

    def step(p: Any) -> tuple[T, Callable[[Any], None] | None]:
        result, w = decide(p, p.get(key))
        return result, None if w is None else (lambda q: queue_write(q, w))

    return optimistic(r, [key], step)


def held_slots(r: Any, job_id: str) -> list[tuple[str, int]]:
    """The slots ``job_id`` holds now (read from the holdings), sorted."""
    out = []
    for name, holder in r.hgetall(HOLDINGS).items():
        if holder == job_id:
            host, _, index = name.rpartition("/")
            out.append((host, int(index)))
    return sorted(out)


def transition_write(rec: JobRecord, done: Transition, held: Callable[[], Iterable[tuple[str, int]]],
                     score: Callable[[], float]) -> tuple[Transition, JobWrite | None]:
    """The write of transition ``done`` of ``rec``, with its record-side actions done in it (see the
    module); returns the transition as the caller sees it (the final record, the actions left to
    carry out) and the write (None: nothing changed).  ``held`` reads the slots the job holds now,
    ``score`` its creation time (for a status move)."""
    steps = [done] if done.record != rec else []
    cur = done.record
    left = []
    timeline = []
    for action in done.actions:
        if isinstance(action, AppendTimeline):
            timeline.append(action.gpus)
            continue
        if isinstance(action, (SyncSlots, FreeSlots)):  # FreeSlots gives every slot back: it holds none
            sub = _slots_held(cur, tuple(held()) if isinstance(action, SyncSlots) else ())
            if sub is not None:
                steps.append(sub)
                cur = sub.record
                timeline += [a.gpus for a in sub.actions if isinstance(a, AppendTimeline)]
        if not isinstance(action, SyncSlots):
            left.append(action)
    out = Transition(cur, tuple(left), done.event)
    if not steps and not timeline:
        return out, None
    entries, counts, before = [], [], rec
    for s in steps:
        if s.event:
            entries.append({"type": s.event, "job": rec.id, "status": s.record.status.value})
        counts.append(transition_counts(before, s.record, s.event))  # counted with the change
        before = s.record
    moved = cur.status != rec.status
    return out, JobWrite(rec.id, cur, entries=entries, counts=merge(*counts), timeline=timeline,
                         score=score() if moved else None)


def _slots_held(rec: JobRecord, slots: Slots) -> Transition | None:
    """The ``SlotsHeld`` transition of ``rec`` (None: no change, or it ended meanwhile: whoever
    gives back its slots does so)."""
    try:
        sub = transition(rec, SlotsHeld(slots=slots))
    except Refused:
        return None
    return sub if sub.record != rec else None


# Write new jobs in one atomic round trip (with ``appendfsync always``, one fsync), all or none:
# nothing is written (0) if one of KEYS (their records' keys) exists; else the commands of ARGV,
# each given as its word count and its words.
INSERT = """
for i = 1, #KEYS do
  if redis.call('exists', KEYS[i]) == 1 then return 0 end
end
local i = 1
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  redis.call(unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
return 1
"""


class Commands:
    """Records the commands :func:`queue_write` queues, as the words of :data:`INSERT`'s ARGV."""

    def __init__(self) -> None:
        self.args: list[Any] = []

    def add(self, *words: Any) -> None:
        self.args += [len(words), *words]

    def set(self, key: str, value: str) -> None:
        self.add("set", key, value)

    def zadd(self, key: str, mapping: dict[str, float]) -> None:
        for member, score in mapping.items():
            self.add("zadd", key, score, member)

    def zrem(self, key: str, *members: str) -> None:
        self.add("zrem", key, *members)

    def sadd(self, key: str, *members: str) -> None:
        self.add("sadd", key, *members)

    def xadd(self, key: str, fields: dict[str, Any], maxlen: int, approximate: bool = True) -> None:
        self.add("xadd", key, "MAXLEN", *(("~",) if approximate else ()), maxlen, "*",
                 *(w for pair in fields.items() for w in pair))

    def hincrby(self, key: str, name: str, n: int) -> None:
        self.add("hincrby", key, name, n)

    def hincrbyfloat(self, key: str, name: str, n: float) -> None:
        self.add("hincrbyfloat", key, name, n)

    def rpush(self, key: str, *values: str) -> None:
        self.add("rpush", key, *values)


def insert(script: Any, writes: list[JobWrite]) -> bool:
    """Write new jobs (each a :class:`JobWrite` with ``new``) with ``script`` (:data:`INSERT`,
    registered on a client), all or none; False (nothing written) if an id is taken."""
    ops = Commands()
    for w in writes:
        queue_write(ops, w)
    return bool(script(keys=[job_key(w.job_id) for w in writes], args=ops.args))
