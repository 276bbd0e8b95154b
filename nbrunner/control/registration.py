"""Workers' registrations: who is alive, on which host, with which slots.

A worker keeps ``nbrunner:worker:<name>`` alive with a short TTL (its heartbeat) and
lists its name in ``nbrunner:workers``; a worker killed with SIGKILL disappears within
``WORKER_TTL`` seconds.  :func:`live_capacity` is what the scheduler, the client and a
job's slot source read.
"""
from __future__ import annotations

import json
import os
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..core.keys import WORKERS, worker_key
from ..core.placement import Slot
from ..core.store import JobStore

WORKER_TTL = float(os.environ.get("NBRUNNER_WORKER_TTL", "15"))
HEARTBEAT_INTERVAL = WORKER_TTL / 5


@dataclass
class Capacity:
    """Live workers and the slots they registered, per host."""

    workers: dict[str, dict] = field(default_factory=dict)
    hosts: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))

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
    raws = store.r.mget([worker_key(n) for n in names])
    gone = []
    for name, raw in zip(names, raws):
        if raw is None:
            gone.append(name)
            continue
        w = json.loads(raw)
        cap.workers[name] = w
        cap.hosts[w["host"]].update(w["slots"])
    if gone:
        store.r.srem(WORKERS, *gone)
    return cap


def heartbeat(store: JobStore, name: str, registration: dict[str, Any]) -> None:
    """Register (or renew) worker ``name`` for ``WORKER_TTL`` seconds."""
    with store.r.pipeline() as p:
        p.set(worker_key(name), json.dumps(registration), px=int(WORKER_TTL * 1000))
        p.sadd(WORKERS, name)
        p.execute()


def unregister(store: JobStore, name: str) -> None:
    """Forget worker ``name`` at once (a clean stop)."""
    with store.r.pipeline() as p:
        p.delete(worker_key(name))
        p.srem(WORKERS, name)
        p.execute()


def is_alive(store: JobStore, name: str) -> bool:
    """Whether worker ``name``'s heartbeat is alive."""
    return bool(store.r.exists(worker_key(name)))
