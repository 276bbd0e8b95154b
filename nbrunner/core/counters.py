"""The cluster's Prometheus counters and histograms, as fields of one Redis hash. Pure, no I/O.

Counters that must survive restarts and be the same whichever process serves ``GET /metrics``
live in the hash ``nbrunner:counters`` (:data:`~nbrunner.core.keys.COUNTERS`), one field per
series, each field a JSON list: the family's short name, then its label values (a histogram's
field also says ``"b"`` and a bucket index, or ``"s"`` for the sum of its observations).  The
writers add to them in the same atomic step as the change they count:

- :func:`transition_counts`: what a job's transition adds (applied by
  :mod:`nbrunner.control.job_write` in the transaction that writes the record, so
  an end is counted once, never twice, and never without its record);
- :func:`observation`: one observation of a histogram (the scheduler's passes, the ends above);
- :func:`request_field`: an API request (the handlers, flushed by ``nbrunner.control.counters``).

``nbrunner.control.metrics`` reads the hash back (:func:`parse_field`) and turns the bucket
counts into Prometheus's cumulative buckets.
"""
from __future__ import annotations

import json
from bisect import bisect_left
from typing import Any, Iterable

from .lifecycle import KERNEL_KILLED, WORKER_LOST
from .models import JobPhase, JobRecord, JobStatus, parse_time

__all__ = ["BUCKETS", "account_label", "ended", "field", "observation", "parse_field", "request_field",
           "requeue_reason", "transition_counts"]

# the upper bounds (seconds) of each histogram's buckets; +Inf follows the last
BUCKETS: dict[str, tuple[float, ...]] = {
    "wait": (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400),
    "run": (10, 30, 60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400, 259200),
    "pass": (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
}
# the default account's name (``core.accounts.DEFAULT``; named here so that every transition need not
# import the accounts file's parser)
DEFAULT = "default"
REQUEUE_REASONS = ("preempted", "worker_lost", "kernel_killed", "undispatched", "other")


def field(*parts: Any) -> str:
    """The hash field of one series: its parts as a compact JSON list."""
    return json.dumps(list(parts), separators=(",", ":"))


def parse_field(text: str) -> list[Any] | None:
    """A field's parts (None for a field this version cannot read)."""
    try:
        parts = json.loads(text)
    except ValueError:
        return None
    return parts if isinstance(parts, list) and parts and isinstance(parts[0], str) else None


def observation(name: str, value: float, *labels: str) -> dict[str, float]:
    """The increments of one observation of ``value`` by histogram ``name`` (of :data:`BUCKETS`):
    its bucket's count and its sum.  A bucket's index is that of the first bound >= the value."""
    value = max(0.0, float(value))
    return {field(name, "b", *labels, bisect_left(BUCKETS[name], value)): 1, field(name, "s", *labels): value}


def request_field(method: str, route: str, code: int) -> str:
    """The field counting API requests of this method, route pattern and status code."""
    return field("api", method, route, str(code))


def account_label(rec: JobRecord) -> str:
    """The ``account`` label of a job: its account's path, ``default`` when it has none (a cluster
    without accounts, or a job the scheduler has not placed yet)."""
    return rec.account or DEFAULT


def ended(rec: JobRecord) -> bool:
    """Has the job ended for good?  A job failed by a killed kernel with retries left is finished
    only for now: once its worker confirms, it waits again (then it has not ended)."""
    if not rec.status.finished:
        return False
    provisional = (rec.status is JobStatus.FAILED and (rec.error or "").startswith(KERNEL_KILLED)
                   and rec.lost < rec.retries and rec.phase is not JobPhase.ENDED)
    return not provisional


def requeue_reason(before: JobRecord, after: JobRecord) -> str | None:
    """Why the job went back to waiting (a label of :data:`REQUEUE_REASONS`), None if it did not."""
    if after.phase is not JobPhase.WAITING or before.phase is JobPhase.WAITING:
        return None
    if before.phase is JobPhase.DISPATCHED:
        return "undispatched"
    if after.preempted > before.preempted:
        return "preempted"
    why = (after.history[-1].get("reason") if after.history else None) or ""
    if why == WORKER_LOST:
        return "worker_lost"
    return "kernel_killed" if why.startswith(KERNEL_KILLED) else "other"


def _seconds(start: str | None, end: str | None) -> float | None:
    try:
        a, b = parse_time(start), parse_time(end)
    except ValueError:
        return None
    return None if a is None or b is None else max(0.0, (b - a).total_seconds())


def transition_counts(before: JobRecord, after: JobRecord, event: str) -> dict[str, float]:
    """What the change of a record from ``before`` to ``after`` (by the event named ``event``,
    the name the event stream gets) adds to the counters: an end (by status and account, with
    its run time), a first start (with its wait since the submission), a re-queue (by reason),
    a reclaim (the account's GPUs taken back from a job: preempted, or an elastic job shrunk)."""
    out: dict[str, float] = {}
    account = account_label(after)
    if ended(after) and not ended(before):
        out[field("finished", after.status.value, account)] = 1
        ran = _seconds(after.started_at, after.finished_at)
        if ran is not None:
            out.update(observation("run", ran, account))
    if before.started_at is None and after.started_at is not None:
        waited = _seconds(after.created_at, after.started_at)
        if waited is not None:
            out.update(observation("wait", waited, account))
    reason = requeue_reason(before, after)
    if reason is not None:
        out[field("requeues", reason)] = 1
    if event in ("preempted", "reclaimed"):
        out[field("reclaims", account)] = 1
    return out


def merge(*parts: Iterable[tuple[str, float]] | dict[str, float]) -> dict[str, float]:
    """Increments added up field by field."""
    out: dict[str, float] = {}
    for part in parts:
        for key, n in (part.items() if isinstance(part, dict) else part):
            out[key] = out.get(key, 0) + n
    return out
