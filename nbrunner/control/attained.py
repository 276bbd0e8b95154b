"""The attained service of the live jobs, for the ``goodput`` policy: read from their GPU timelines.

Each job's timeline (``nbrunner:timeline:<job>``, written at every change of the slots it holds)
is integrated by :mod:`nbrunner.core.attained`.  The active scheduler keeps the running sums in
memory and reads only the points added since its previous pass (one pipelined ``LRANGE`` per job
that has been handed to a worker and whose record changed: a timeline point is written in the same
write as the record, and the scheduler hands back the same record object while its stored text is
unchanged), so a pass costs no more for a long-lived job than for a new one and nothing for a job
whose slots did not change; a scheduler that takes over rebuilds the sums from the whole timelines.
"""
from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from ..core.attained import Attained, fold, service_at
from .grants import timeline_key

if TYPE_CHECKING:
    import redis

    from ..core.models import JobRecord


class AttainedLedger:
    """Attained service (GPU-seconds) of the jobs a scheduler sees, updated pass by pass."""

    def __init__(self, r: redis.Redis):
        self.r = r
        self._sums: dict[str, Attained] = {}
        self._read: dict[str, JobRecord] = {}  # the record each job's timeline was last read with

    def of(self, jobs: list[JobRecord], now: float | None = None) -> dict[str, float]:
        """``{job id: GPU-seconds received up to now}`` of ``jobs`` (0 for a job never dispatched);
        the sums of jobs not in ``jobs`` are forgotten."""
        now = time.time() if now is None else now
        ran = [rec for rec in jobs if rec.attempt > 0]
        sums = {rec.id: self._sums.get(rec.id, Attained()) for rec in ran}
        changed = [rec.id for rec in ran if self._read.get(rec.id) is not rec]
        if changed:
            with self.r.pipeline(transaction=False) as p:
                for jid in changed:
                    p.lrange(timeline_key(jid), sums[jid].seen, -1)
                for jid, raw in zip(changed, p.execute()):
                    if raw:
                        sums[jid] = fold(sums[jid], (json.loads(x) for x in raw))
        self._sums = sums
        self._read = {rec.id: rec for rec in ran}
        return {rec.id: service_at(sums[rec.id], now) if rec.id in sums else 0.0 for rec in jobs}

    def resizes(self, job_id: str) -> int:
        """Changes of the job's GPU count since its first start, as of the last :meth:`of` (0 if not seen)."""
        acc = self._sums.get(job_id)
        return acc.resizes if acc is not None else 0
