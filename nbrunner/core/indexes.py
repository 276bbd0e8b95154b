"""The indexes a job record is filed in besides ``nbrunner:jobs``: one sorted set per status
(scored by creation time, like ``nbrunner:jobs``) and ``nbrunner:finished`` (by finish time)."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .keys import FINISHED_AT, status_index
from .models import FINISHED, STATUSES, parse_time

if TYPE_CHECKING:
    from .models import JobRecord


def finish_time(rec: JobRecord) -> float:
    """A finished record's ``finished_at`` as a Unix time (now if missing or unreadable)."""
    try:
        when = parse_time(rec.finished_at)
    except ValueError:
        when = None
    return when.timestamp() if when else time.time()


def index_status(p: Any, rec: JobRecord, score: float) -> None:
    """Queue, on pipeline ``p``, the moves that file ``rec`` under its status (and finish time)."""
    for status in STATUSES:
        if status != rec.status:
            p.zrem(status_index(status), rec.id)
    p.zadd(status_index(rec.status), {rec.id: score})
    if rec.status in FINISHED:
        p.zadd(FINISHED_AT, {rec.id: finish_time(rec)})
    else:
        p.zrem(FINISHED_AT, rec.id)
