"""Retention: with ``NBRUNNER_KEEP_DAYS`` set, finished jobs that ended longer ago than that
are removed (record, index entries, grant keys and run directory) by the active scheduler,
a bounded batch at a time; a queued or running job is never touched."""
from __future__ import annotations

import logging
import shutil
import time

from ..core.config import RETENTION_BATCH, RETENTION_EVERY_S, Settings
from ..core.indexes import finish_time
from ..core.keys import ACTIVE, FINISHED_AT, notify_once_key
from .quarantine import quarantine_key
from .store import JobStore
from .grants import grant_key, timeline_key
from .job_write import file_finish, forget

log = logging.getLogger("nbrunner.retention")


def expire(store: JobStore, settings: Settings, days: float, now: float | None = None,
           batch: int = RETENTION_BATCH) -> list[str]:
    """Remove up to ``batch`` jobs that finished more than ``days`` days before ``now``; returns their ids."""
    cutoff = (time.time() if now is None else now) - days * 86400
    removed = []
    for job_id in store.r.zrangebyscore(FINISHED_AT, "-inf", cutoff, start=0, num=batch):
        rec = store.find(job_id)
        if rec is not None and (not rec.finished or finish_time(rec) > cutoff):  # an out-of-date entry
            file_finish(store.r, rec)  # unfinished: filed again when the job ends
            continue
        if rec is not None and store.r.sismember(ACTIVE, job_id):  # the scheduler has yet to free its GPUs
            continue
        shutil.rmtree(settings.job_dir(job_id), ignore_errors=True)  # before the record: no directory is orphaned
        extra = (grant_key(job_id), timeline_key(job_id), notify_once_key("job", job_id))
        if store.remove(job_id, extra) or rec is None:
            forget(store.r, (*extra, quarantine_key(job_id)))
            removed.append(job_id)
    if removed:
        log.info("retention: removed %d jobs that finished more than %g days ago", len(removed), days)
    return removed


class Retention:
    """The scheduler's rate-limited caller of :func:`expire` (``days`` None: keep every job)."""

    def __init__(self, store: JobStore, settings: Settings, days: float | None):
        self.store, self.settings, self.days = store, settings, days
        self._next = 0.0

    def maybe_run(self) -> list[str]:
        if self.days is None or time.monotonic() < self._next:
            return []
        self._next = time.monotonic() + RETENTION_EVERY_S
        return expire(self.store, self.settings, self.days)
