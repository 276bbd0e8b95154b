"""Containment: a job record that cannot be read or placed never stops anyone else's jobs.

Such a record is *quarantined*: it is replaced by a readable record of the same id whose
status is ``failed`` and whose ``error`` names the cause in one line (``quarantined: ...``);
the original text is kept under ``nbrunner:quarantine:<id>`` for an administrator. A listing
then shows the job as failed, a cancel answers like for any finished job, and the scheduler's
pass goes on with the other jobs.
"""
from __future__ import annotations

import json
import logging
import time
from typing import Any

import redis

from .errors import one_line
from .indexes import index_status
from .keys import ACTIVE, EVENTS, EVENTS_MAXLEN, JOBS, PREFIX, job_key
from .models import JobRecord, parse_time, utcnow

QUARANTINE = PREFIX + "quarantine:"
log = logging.getLogger("nbrunner.quarantine")


def quarantine_key(job_id: str) -> str:
    return QUARANTINE + job_id


def _cause(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()
    detail = " ".join(first[:3]) if first else ""
    return one_line(f"{exc.__class__.__name__}: {detail}" if detail else exc.__class__.__name__, 160)


def _salvage(raw: str) -> dict[str, Any]:
    """The plain string fields of a broken record, when its JSON can still be read."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    out = {}
    for key in ("name", "notebook", "owner", "created_at", "started_at", "sweep", "output"):
        v = data.get(key)
        if isinstance(v, str) and len(v) <= 4096:
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                continue
            out[key] = v
    return out


def replacement(job_id: str, raw: str, error: str) -> JobRecord:
    fields = _salvage(raw)
    rec = JobRecord(id=job_id, name=fields.get("name") or job_id, notebook=fields.get("notebook") or "")
    for key in ("owner", "started_at", "sweep", "output"):
        if key in fields:
            setattr(rec, key, fields[key])
    if "created_at" in fields:
        try:
            parse_time(fields["created_at"])
            rec.created_at = fields["created_at"]
        except ValueError:
            pass
    rec.status = "failed"
    rec.error = error
    rec.finished_at = utcnow()
    rec.note_status(None)
    rec.cancel_requested = True  # a worker still running it stops it
    rec.released = True
    return rec


def quarantine_unreadable(store: Any, job_id: str, raw: str, exc: BaseException) -> JobRecord:
    """Replace the unreadable record ``raw`` of ``job_id`` in ``store`` (a ``JobStore``), unless it changed meanwhile."""
    error = f"quarantined: the job record could not be read ({_cause(exc)})"
    rec = replacement(job_id, raw, error)
    key = job_key(job_id)
    try:
        with store.r.pipeline() as p:
            p.watch(key)
            if p.get(key) != raw:
                p.reset()
                return rec
            score = p.zscore(JOBS, job_id) or time.time()
            p.multi()
            p.set(quarantine_key(job_id), raw)
            p.set(key, rec.model_dump_json())
            index_status(p, rec, score)
            p.sadd(ACTIVE, job_id)  # the scheduler frees whatever it held
            p.xadd(EVENTS, {"type": "quarantined", "job": job_id, "status": rec.status},
                   maxlen=EVENTS_MAXLEN, approximate=True)
            p.execute()
        log.warning("job %s quarantined: %s", job_id, error)
    except redis.WatchError:
        pass
    return rec


def quarantine_job(store: Any, job_id: str, cause: str) -> JobRecord | None:
    """End a readable job that cannot be scheduled: ``failed`` with ``quarantined: <cause>``."""
    error = f"quarantined: {one_line(cause, 200)}"

    def change(rec: JobRecord) -> bool:
        if rec.finished:
            return False
        running = rec.status == "running"
        rec.status, rec.error, rec.finished_at = "failed", error, utcnow()
        rec.cancel_requested = True
        rec.dispatched = False
        if not running:
            rec.released = True
        return True

    try:
        rec = store.update(job_id, change, event="quarantined")
    except redis.RedisError:
        raise
    except Exception as exc:  # noqa: BLE001 - even the update failed: replace the record outright
        raw = store.r.get(job_key(job_id)) or "{}"
        rec = replacement(job_id, raw, f"{error} ({_cause(exc)})")
        store.r.set(quarantine_key(job_id), raw)
        with store.r.pipeline() as p:
            p.set(job_key(job_id), rec.model_dump_json())
            index_status(p, rec, store.r.zscore(JOBS, job_id) or time.time())
            p.execute()
    if rec is not None:
        log.warning("job %s quarantined: %s", job_id, error)
    return rec
