"""The attained service of the live jobs, for the ``goodput`` policy: read from their GPU timelines.

Each job's timeline (``nbrunner:timeline:<job>``, written at every change of the slots it holds)
is integrated by :mod:`nbrunner.core.attained`.  The active scheduler keeps the running sums in
memory and reads only the points added since its previous pass (one pipelined ``LRANGE`` per job
that has ever been handed to a worker), so a pass costs no more for a long-lived job than for a
new one; a scheduler that takes over rebuilds the sums from the whole timelines.
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

    def of(self, jobs: list[JobRecord], now: float | None = None) -> dict[str, float]:
        """``{job id: GPU-seconds received up to now}`` of ``jobs`` (0 for a job never dispatched);
        the sums of jobs not in ``jobs`` are forgotten."""
        now = time.time() if now is None else now
        ran = [rec.id for rec in jobs if rec.attempt > 0]
        sums = {jid: self._sums.get(jid, Attained()) for jid in ran}
        if ran:
            with self.r.pipeline(transaction=False) as p:
                for jid in ran:
                    p.lrange(timeline_key(jid), sums[jid].seen, -1)
                for jid, raw in zip(ran, p.execute()):
                    if raw:
                        sums[jid] = fold(sums[jid], (json.loads(x) for x in raw))
        self._sums = sums
        return {rec.id: service_at(sums[rec.id], now) if rec.id in sums else 0.0 for rec in jobs}

    def resizes(self, job_id: str) -> int:
        """Changes of the job's GPU count since its first start, as of the last :meth:`of` (0 if not seen)."""
        acc = self._sums.get(job_id)
        return acc.resizes if acc is not None else 0
