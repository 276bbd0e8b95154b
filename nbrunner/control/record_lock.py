"""A lock on one record in Redis (``SET NX PX``; released only by its holder), for records that
several processes change: the scheduler's pass and a user's request (a pipeline; sweeps and
schedules may use it too)."""
from __future__ import annotations

import time
import uuid

import redis

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
