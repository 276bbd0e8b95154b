"""rq queues: which queue a job goes to and under which rq id."""
from __future__ import annotations

import redis
from rq import Queue

from .store import JobStore, connect

DEFAULT_QUEUE = "nbrunner"


def host_queue(host: str) -> str:
    """The queue of jobs placed on ``host`` (their driver must run there)."""
    return f"nbrunner.host.{host}"


def rq_job_id(job_id: str, attempt: int) -> str:
    return f"{job_id}-{attempt}"


def rq_connection(store: JobStore) -> redis.Redis:
    """A client for rq (rq wants bytes, the store decodes to str)."""
    if not hasattr(store, "_rq_conn"):
        store._rq_conn = connect(store.url, decode_responses=False)
    return store._rq_conn


def queue(store: JobStore, name: str = DEFAULT_QUEUE) -> Queue:
    return Queue(name, connection=rq_connection(store))
