"""Adding to the cluster's counters in Redis (``nbrunner:counters``, fields of
:mod:`nbrunner.core.counters`): the scheduler's passes, and the API's requests.

A job's transitions add to them inside :meth:`~nbrunner.control.store.JobStore.transition`.  The
scheduler adds each pass's duration when the pass ends.  API requests are many and cheap, so a
server process counts them in memory (:class:`RequestTally`) and adds them to Redis at most once
a second, and whenever its own ``GET /metrics`` is served: a count reaches every process's
scrape within a second.
"""
from __future__ import annotations

import threading
import time
from collections import Counter
from typing import TYPE_CHECKING

from ..core.config import REQUEST_COUNTS_FLUSH_S
from ..core.counters import field, observation, request_field
from ..core.keys import COUNTERS
from .job_write import add_counts

if TYPE_CHECKING:
    import redis

LAST_PASS = field("last_pass")  # the Unix time the active scheduler last ended a pass


def add(r: redis.Redis, counts: dict[str, float]) -> None:
    """Add ``counts`` (``{field: increment}``) to the counters, in one round trip."""
    if counts:
        with r.pipeline(transaction=True) as p:
            add_counts(p, counts)
            p.execute()


def record_pass(r: redis.Redis, seconds: float, now: float | None = None) -> None:
    """One scheduler pass of ``seconds``, ended at ``now``."""
    with r.pipeline(transaction=True) as p:
        add_counts(p, observation("pass", seconds))
        p.hset(COUNTERS, LAST_PASS, repr(time.time() if now is None else now))
        p.execute()


class RequestTally:
    """The API requests one server process answered, not yet added to Redis."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._flushed = time.monotonic()

    def count(self, method: str, route: str, code: int) -> bool:
        """Count a request; True when the counts are due to be added to Redis (:meth:`flush`)."""
        with self._lock:
            self._counts[request_field(method, route, code)] += 1
            return time.monotonic() - self._flushed >= REQUEST_COUNTS_FLUSH_S

    def flush(self, r: redis.Redis) -> None:
        """Add the counts to Redis; on a Redis error they are kept for the next flush."""
        with self._lock:
            counts, self._counts = dict(self._counts), Counter()
            self._flushed = time.monotonic()
        try:
            add(r, counts)
        except Exception:
            with self._lock:
                self._counts.update(counts)
            raise
