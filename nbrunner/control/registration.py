"""Workers' registrations: who is alive, on which host, with which slots.

A worker keeps ``nbrunner:worker:<name>`` alive with a short TTL (its heartbeat) and
lists its name in ``nbrunner:workers``; a worker killed with SIGKILL disappears within
``NBRUNNER_WORKER_TTL`` seconds.  :func:`live_capacity` is what the scheduler, the client and a
job's slot source read.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..core.config import RENEWALS_PER_TTL, WORKER_TTL
from ..core.keys import WORKERS, worker_key
from ..core.placement import Slot
from .store import JobStore


def heartbeat_interval() -> float:
    """Seconds between a worker's heartbeats: ``RENEWALS_PER_TTL`` in each ``NBRUNNER_WORKER_TTL``."""
    return WORKER_TTL.seconds() / RENEWALS_PER_TTL


@dataclass
class Capacity:
    """Live workers and the slots they registered, per host."""

    workers: dict[str, dict] = field(default_factory=dict)
    hosts: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    expires_in: float | None = None  # seconds until the first live registration expires unless renewed

    @property
    def slots(self) -> set[Slot]:
        return {(h, i) for h, idx in self.hosts.items() for i in idx}

    def host_alive(self, host: str) -> bool:
        return any(w["host"] == host for w in self.workers.values())


def live_capacity(store: JobStore) -> Capacity:
    """The workers whose heartbeat is alive and their slots (forgetting the dead ones)."""
    names = sorted(store.r.smembers(WORKERS))
    cap = Capacity()
    if not names:
        return cap
    with store.r.pipeline(transaction=False) as p:
        p.mget([worker_key(n) for n in names])
        for n in names:
            p.pttl(worker_key(n))
        raws, *ttls = p.execute()
    gone = []
    for name, raw, ttl in zip(names, raws, ttls):
        if raw is None:
            gone.append(name)
            continue
        w = json.loads(raw)
        cap.workers[name] = w
        cap.hosts[w["host"]].update(w["slots"])
        if ttl is not None and ttl >= 0:
            left = ttl / 1000
            cap.expires_in = left if cap.expires_in is None else min(cap.expires_in, left)
    if gone:
        store.r.srem(WORKERS, *gone)
    return cap


def heartbeat(store: JobStore, name: str, registration: dict[str, Any]) -> bool:
    """Register (or renew) worker ``name`` for ``NBRUNNER_WORKER_TTL`` seconds; True if it was not
    registered (it starts, or it comes back after its registration expired)."""
    with store.r.pipeline() as p:
        p.exists(worker_key(name))
        p.set(worker_key(name), json.dumps(registration), px=int(WORKER_TTL.seconds() * 1000))
        p.sadd(WORKERS, name)
        existed, _, _ = p.execute()
    return not existed


def unregister(store: JobStore, name: str) -> None:
    """Forget worker ``name`` at once (a clean stop)."""
    with store.r.pipeline() as p:
        p.delete(worker_key(name))
        p.srem(WORKERS, name)
        p.execute()


def is_alive(store: JobStore, name: str) -> bool:
    """Whether worker ``name``'s heartbeat is alive."""
    return bool(store.r.exists(worker_key(name)))
