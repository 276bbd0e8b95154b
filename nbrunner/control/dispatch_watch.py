"""Are the jobs the scheduler handed to rq, and that have not started, still on their way?

A dispatched job is alive while its rq job waits in its queue, is deferred or scheduled, or has
been taken by a live worker. A worker that dies (or loses Redis) between taking a job from the
queue and starting it leaves it in rq's intermediate queue, 'queued' for ever: after a grace (a
worker takes milliseconds) the job counts as lost and the scheduler dispatches it again. A pass
checks every such job, so the check reads their rq states in one pipeline and each queue once: a
round trip and a scan of the queue per job made a pass quadratic in the queue's length.
"""
from __future__ import annotations

import logging
import time

from rq.job import Job as RqJob

from ..core.config import STRANDED_AFTER_S
from ..core.models import JobRecord
from .queues import queue, rq_connection, rq_job_id
from .registration import Capacity
from .store import JobStore

log = logging.getLogger("nbrunner.scheduler")


class DispatchWatch:
    """The scheduler's view of its dispatched jobs' rq jobs (one per scheduler: it remembers since
    when a 'queued' rq job has been in no queue)."""

    def __init__(self, store: JobStore):
        self.store = store
        self._stranded: dict[str, float] = {}  # rq job id -> when first seen 'queued' but in no queue

    def alive(self, recs: list[JobRecord], cap: Capacity) -> set[str]:
        """Of ``recs`` (dispatched, not started), the ids of those whose rq job is still waiting or
        being picked up on a live host."""
        if not recs:
            return set()
        conn = rq_connection(self.store)
        pipe = conn.pipeline(transaction=False)
        for rec in recs:
            pipe.hmget(RqJob.key_for(rq_job_id(rec.id, rec.attempt)), "status", "worker_name", "origin")
        waiting_in: dict[bytes, set[bytes]] = {}  # a queue's name -> the rq job ids in it
        out = set()
        for rec, (status, worker, origin) in zip(recs, pipe.execute()):
            rq_id = rq_job_id(rec.id, rec.attempt)
            if status is None or (rec.host and not cap.host_alive(rec.host)):
                continue
            if status == b"queued":
                if origin and origin not in waiting_in:
                    waiting_in[origin] = set(conn.lrange(queue(self.store, origin.decode()).key, 0, -1))
                if self._waiting(rq_id, rq_id.encode() in waiting_in.get(origin, ())):
                    out.add(rec.id)
                continue
            self._stranded.pop(rq_id, None)
            if status in (b"deferred", b"scheduled") or status == b"started" and (worker or b"").decode() in cap.workers:
                out.add(rec.id)
        return out

    def _waiting(self, rq_id: str, in_queue: bool) -> bool:
        """Is a 'queued' rq job really waiting (in its queue, or out of it for less than the grace)?"""
        if in_queue:
            self._stranded.pop(rq_id, None)
            return True
        first = self._stranded.setdefault(rq_id, time.monotonic())
        if time.monotonic() - first < STRANDED_AFTER_S:
            return True
        del self._stranded[rq_id]
        log.warning("rq job %s was taken from its queue but never started: re-dispatching", rq_id)
        return False
