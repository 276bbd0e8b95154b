"""Riding out a Redis outage: Redis restarted from its AOF, or a host's link down for a while.

A job's end must be recorded whatever happens meanwhile: the work horse's final status, the
worker's confirmation that nothing of the job runs any more, its Redis user deleted, its
directory handed over.  :func:`until_reachable` runs such a step again while Redis cannot be
reached (refused, timed out, still loading its data set), for at most ``OUTAGE_RETRY_S``.
"""
from __future__ import annotations

import logging
import time
from typing import Callable, TypeVar

import redis

from ..core.config import HEARTBEAT_RETRY_S, OUTAGE_RETRY_S

log = logging.getLogger("nbrunner.outage")
T = TypeVar("T")
UNREACHABLE = (redis.ConnectionError, redis.TimeoutError)  # BusyLoadingError is a ConnectionError


def until_reachable(fn: Callable[[], T], what: str, wait_s: float = OUTAGE_RETRY_S,
                    pause_s: float = HEARTBEAT_RETRY_S) -> T:
    """``fn()``, run again while Redis is out of reach, for at most ``wait_s`` seconds (then the
    last error is raised); ``what`` names the step in the log."""
    deadline = time.monotonic() + wait_s
    warned = False
    while True:
        try:
            return fn()
        except UNREACHABLE as exc:
            if time.monotonic() >= deadline:
                raise
            if not warned:
                log.warning("%s: Redis out of reach (%s): trying again", what, exc.__class__.__name__)
                warned = True
            time.sleep(pause_s)


__all__ = ["until_reachable", "UNREACHABLE"]
