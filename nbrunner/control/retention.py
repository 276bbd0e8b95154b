"""Retention: with ``NBRUNNER_KEEP_DAYS`` set, finished jobs that ended longer ago than that
are removed (record, index entries, grant keys and run directory) by the active scheduler,
a bounded batch at a time; a queued or running job is never touched."""
from __future__ import annotations

import logging
import math
import os
import shutil
import time
from typing import Mapping

from ..core.config import Settings
from ..core.errors import InvalidRequest
from ..core.indexes import finish_time
from ..core.keys import ACTIVE, FINISHED_AT
from ..core.quarantine import quarantine_key
from ..core.store import JobStore
from .grants import grant_key, timeline_key

ENV_KEEP_DAYS = "NBRUNNER_KEEP_DAYS"
EVERY_S = 10.0  # the scheduler expires at most one batch this often
BATCH = 200  # jobs one batch may remove
log = logging.getLogger("nbrunner.retention")


def keep_days(environ: Mapping[str, str] = os.environ) -> float | None:
    """``NBRUNNER_KEEP_DAYS`` as a number of days, or None when unset (keep everything)."""
    raw = environ.get(ENV_KEEP_DAYS, "").strip()
    if not raw:
        return None
    try:
        days = float(raw)
    except ValueError:
        days = math.nan
    if not math.isfinite(days) or days <= 0:
        raise InvalidRequest(f"{ENV_KEEP_DAYS} must be a number of days > 0 (or unset to keep every job), got {raw!r}")
    return days


def expire(store: JobStore, settings: Settings, days: float, now: float | None = None, batch: int = BATCH) -> list[str]:
    """Remove up to ``batch`` jobs that finished more than ``days`` days before ``now``; returns their ids."""
    cutoff = (time.time() if now is None else now) - days * 86400
    removed = []
    for job_id in store.r.zrangebyscore(FINISHED_AT, "-inf", cutoff, start=0, num=batch):
        rec = store.find(job_id)
        if rec is not None and not rec.finished:  # an out-of-date entry: it is filed again when the job ends
            store.r.zrem(FINISHED_AT, job_id)
            continue
        if rec is not None and finish_time(rec) > cutoff:
            store.r.zadd(FINISHED_AT, {job_id: finish_time(rec)})
            continue
        if rec is not None and store.r.sismember(ACTIVE, job_id):  # the scheduler has yet to free its GPUs
            continue
        shutil.rmtree(settings.job_dir(job_id), ignore_errors=True)  # before the record: no directory is orphaned
        extra = (grant_key(job_id), timeline_key(job_id))
        if store.remove(job_id, extra) or rec is None:
            store.r.delete(*extra, quarantine_key(job_id))
            removed.append(job_id)
    if removed:
        log.info("retention: removed %d jobs that finished more than %g days ago", len(removed), days)
    return removed


class Retention:
    """The scheduler's rate-limited caller of :func:`expire`."""

    def __init__(self, store: JobStore, settings: Settings, days: float | None):
        self.store, self.settings, self.days = store, settings, days
        self._next = 0.0

    def maybe_run(self) -> list[str]:
        if self.days is None or time.monotonic() < self._next:
            return []
        self._next = time.monotonic() + EVERY_S
        return expire(self.store, self.settings, self.days)
