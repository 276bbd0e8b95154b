"""Locking a record in Redis, the two ways nbrunner does it.

- :func:`optimistic`: the one optimistic-lock loop (WATCH, read, MULTI/EXEC, again from the read
  when a watched key changed meanwhile).  Every atomic read-then-write of a record goes through
  it: jobs (:mod:`nbrunner.control.job_write`), sweeps, pipelines, schedules, the slot holdings.
- :class:`RecordLock`: a lock held across a longer step (``SET NX PX``; released only by its
  holder).  It never guards a write (a holder whose lock lapsed is fenced out by
  :func:`optimistic`); it keeps side effects that must not run twice from running in two
  processes at once: making a sweep's trial jobs or a pipeline step's job.
"""
from __future__ import annotations

import time
import uuid
from typing import Any, Callable, Sequence, TypeVar

import redis

T = TypeVar("T")
Writes = Callable[[Any], None]  # queues the writes of a step on a pipeline in MULTI mode

_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


class RecordLock:
    """The lock key ``key`` of one record, living ``ttl_s`` unless released (a holder that died)."""

    def __init__(self, r: redis.Redis, key: str, ttl_s: float):
        self.r = r
        self.key = key
        self.ttl_ms = int(ttl_s * 1000)
        self.token = uuid.uuid4().hex

    def acquire(self, wait: float = 0.0) -> bool:
        """Take the lock, waiting up to ``wait`` seconds; False if another holder kept it."""
        deadline = time.monotonic() + wait
        while True:
            if self.r.set(self.key, self.token, nx=True, px=self.ttl_ms):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def release(self) -> None:
        try:
            self.r.eval(_RELEASE, 1, self.key, self.token)
        except redis.RedisError:
            pass

    def __enter__(self) -> "RecordLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def optimistic(r: redis.Redis, keys: Sequence[str], step: Callable[[Any], tuple[T, Writes | None]]) -> T:
    """Change what ``keys`` hold atomically, without holding a lock: WATCH them, let ``step`` read
    (on the pipeline it is given, which answers at once) and return ``(result, writes)``; ``writes``
    queues the changes (None: nothing to write), which run in one MULTI/EXEC; if a watched key
    changed meanwhile, everything again from the read.  Returns ``result``.

    ``step`` may run more than once: besides its reads it does nothing that must not be repeated
    (or it guards that itself).  It may raise ``redis.WatchError`` to read again (it changed a
    watched key itself); any other exception ends the loop, nothing written."""
    with r.pipeline() as p:
        while True:
            try:
                p.watch(*keys)
                result, writes = step(p)
                if writes is None:
                    p.reset()
                    return result
                p.multi()
                writes(p)
                p.execute()
                return result
            except redis.WatchError:
                p.reset()
                continue
