"""The usage report (``nbrunner usage``, ``GET /usage``): GPU-hours per account or user per day.

Reads only the jobs that can have held a GPU in the window: the live ones (queued and running)
and those that finished since its start (the ``nbrunner:finished`` index, by finish time), then
their GPU timelines, one pipelined round trip per thousand jobs; :mod:`nbrunner.core.usage`
adds them up.  A caller who is not an admin gets only their own jobs.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..core.config import PAGE_READ_BATCH, USAGE_MAX_DAYS, USAGE_SINCE_DAYS
from ..core.counters import account_label
from ..core.keys import ACTIVE, FINISHED_AT, job_key
from ..core.usage import BY, parse_since, usage_report
from ..core.errors import InvalidRequest
from .grants import timeline_key

if TYPE_CHECKING:
    from ..core.identity import Caller
    from .store import JobStore


def usage(store: JobStore, caller: Caller, by: str | None = "account", since: str | None = None,
          now: datetime | None = None) -> dict[str, Any]:
    """The report of :func:`nbrunner.core.usage.usage_report` for the jobs ``caller`` sees."""
    by = by or "account"
    if by not in BY:
        raise InvalidRequest(f"by must be one of {', '.join(BY)}, got {str(by)[:20]!r}")
    now = now or datetime.now(timezone.utc)
    start = parse_since(since, now, USAGE_SINCE_DAYS, USAGE_MAX_DAYS)
    ids = set(store.r.smembers(ACTIVE)) | set(store.r.zrangebyscore(FINISHED_AT, start.timestamp(), "+inf"))
    jobs: list[tuple[str, list[dict]]] = []
    ordered = sorted(ids)
    for i in range(0, len(ordered), PAGE_READ_BATCH):
        part = ordered[i:i + PAGE_READ_BATCH]
        with store.r.pipeline(transaction=False) as p:
            p.mget([job_key(j) for j in part])
            for j in part:
                p.lrange(timeline_key(j), 0, -1)
            raws, *timelines = p.execute()
        for job_id, raw, points in zip(part, raws, timelines):
            if raw is None or not points:
                continue
            rec = store.load(job_id, raw)
            if not caller.sees(rec.owner):
                continue
            key = account_label(rec) if by == "account" else rec.owner
            jobs.append((key, [json.loads(x) for x in points]))
    return usage_report(jobs, by, start, now)
