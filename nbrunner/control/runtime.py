"""What code running inside a job (the notebook's kernel, its learners) knows of its job.

A worker starts the kernel with ``NBRUNNER_JOB_ID``, ``NBRUNNER_JOB_DIR`` and the Redis URL
in the environment (a job that runs as its owner: its own credential, and its changes go
through its work horse, :mod:`nbrunner.control.job_channel`).  Outside a job every function
here is a harmless no-op.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from ..core.config import JOB_DIR, JOB_ID, REDIS_URL

_store = None
_channel = None


def job_id() -> str | None:
    """The id of the job this process belongs to, or None outside a job."""
    return JOB_ID.text()


def job_dir() -> Path | None:
    """``runs/<job-id>/`` of the running job, or None outside a job."""
    d = JOB_DIR.text()
    return Path(d) if d else None


def job_store():
    """The running job's store (one per process), from ``NBRUNNER_REDIS_URL``."""
    global _store
    if _store is None:
        from .store import JobStore

        _store = JobStore.from_url(REDIS_URL.required())
    return _store


def job_channel():
    """The running job's channel (:func:`nbrunner.control.job_channel.channel_for`), one per process."""
    global _channel
    if _channel is None:
        from .job_channel import channel_for

        _channel = channel_for(job_store(), job_id())
    return _channel


def _scalar(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def report(progress: float | None = None, metrics: dict[str, Any] | None = None, **extra: Any) -> None:
    """Stream progress (0..1) and scalar metrics to the running job's record and
    ``metrics.jsonl``.  Extra keyword fields go to ``metrics.jsonl`` only."""
    jid = job_id()
    if jid is None:
        return
    metrics = {k: _scalar(v) for k, v in (metrics or {}).items()}
    d = job_dir()
    if d is not None:
        line = {"time": time.time(), **({"progress": progress} if progress is not None else {}), **metrics}
        line.update({k: _scalar(v) for k, v in extra.items()})
        with open(d / "metrics.jsonl", "a") as f:
            f.write(json.dumps(line) + "\n")
    if REDIS_URL.text() is not None:
        import redis

        from ..core.lifecycle import Progress, Refused
        from .job_channel import ChannelError

        try:
            job_channel().transition(Progress(progress=progress, metrics=metrics))
        except Refused:
            pass  # the job has finished (a cancel came first): the record keeps its final state
        except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError, ChannelError):
            pass  # Redis is restarting: metrics.jsonl has the line; the next report updates the record


def record(name: str, value: Any) -> None:
    """Store a scalar metric on the running job (harmless outside a job)."""
    if not isinstance(name, str) or not name:
        raise ValueError("metric name must be a non-empty string")
    report(metrics={name: value})
