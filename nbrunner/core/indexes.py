"""The indexes a job record is filed in besides ``nbrunner:jobs``: one sorted set per status
(scored by creation time, like ``nbrunner:jobs``) and ``nbrunner:finished`` (by finish time).
They are written with the record, by :mod:`nbrunner.control.job_write` only."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .models import parse_time

if TYPE_CHECKING:
    from .models import JobRecord


def finish_time(rec: JobRecord) -> float:
    """A finished record's ``finished_at`` as a Unix time (now if missing or unreadable)."""
    try:
        when = parse_time(rec.finished_at)
    except ValueError:
        when = None
    return when.timestamp() if when else time.time()
