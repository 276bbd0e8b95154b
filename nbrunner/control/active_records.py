"""The scheduler's pass over the unfinished records of one kind (sweeps, pipelines): each is moved
on in turn, and one that fails is logged and left for the next pass, never stopping the others."""
from __future__ import annotations

import logging
from typing import Callable

import redis

from .store import JobStore


def advance_each(store: JobStore, active_key: str, advance: Callable[[str], object], kind: str,
                 log: logging.Logger) -> None:
    """``advance(id)`` for every id in the set ``active_key``, in order; never raises."""
    try:
        ids = store.r.smembers(active_key)
    except redis.RedisError as exc:
        log.warning("advancing %ss: %s", kind, exc)
        return
    for record_id in sorted(ids):
        try:
            advance(record_id)
        except Exception as exc:  # noqa: BLE001 - one broken record must not stop the scheduler
            log.warning("advancing %s %s failed: %s: %s", kind, record_id, exc.__class__.__name__, exc)
