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

from ..core.errors import one_line
from ..core.keys import JOBS, PREFIX
from ..core.lifecycle import Quarantine, Refused, Transition, submitted, transition
from ..core.models import JobRecord, parse_time, utcnow
from .job_write import JobWrite, write_job

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


def replacement(job_id: str, raw: str, error: str, at: str) -> JobRecord:
    """A readable, failed record for the unreadable ``raw``, with what can be salvaged of it."""
    fields = _salvage(raw)
    created = fields.pop("created_at", None)
    try:
        if created is not None:
            parse_time(created)
    except ValueError:
        created = None
    rec = JobRecord(id=job_id, name=fields.get("name") or job_id, notebook=fields.get("notebook") or "",
                    **{k: fields[k] for k in ("owner", "started_at", "sweep", "output") if k in fields},
                    **({"created_at": created} if created else {}))
    # not a transition of a record (there is none that can be read): a new one, already quarantined
    return transition(submitted(rec), Quarantine(cause=error.removeprefix("quarantined: "), at=at)).record


def quarantine_unreadable(store: Any, job_id: str, raw: str, exc: BaseException) -> JobRecord:
    """Replace the unreadable record ``raw`` of ``job_id`` in ``store`` (a ``JobStore``), unless it changed meanwhile."""
    error = f"quarantined: the job record could not be read ({_cause(exc)})"
    rec = replacement(job_id, raw, error, utcnow())

    def decide(p: Any, now: str | None) -> tuple[bool, JobWrite | None]:
        if now != raw:
            return False, None
        return True, JobWrite(job_id, rec, entries=[{"type": "quarantined", "job": job_id, "status": rec.status.value}],
                              score=p.zscore(JOBS, job_id) or time.time(),
                              active=True,  # the scheduler frees whatever it held
                              keep={quarantine_key(job_id): raw})

    if write_job(store.r, job_id, decide):
        log.warning("job %s quarantined: %s", job_id, error)
    return rec


def quarantine_job(store: Any, job_id: str, cause: str) -> Transition | None:
    """End a readable job that cannot be scheduled: ``failed`` with ``quarantined: <cause>``.
    Returns the transition (its actions are the caller's), None if the job had finished."""
    cause = one_line(cause, 200)
    try:
        done = store.transition(job_id, Quarantine(cause=cause, at=utcnow()))
    except Refused:
        return None
    except redis.RedisError:
        raise
    except Exception as exc:  # noqa: BLE001 - even the transition failed: replace the record outright

        def decide(p: Any, raw: str | None) -> tuple[JobRecord, JobWrite]:
            raw = raw or "{}"
            rec = replacement(job_id, raw, f"quarantined: {cause} ({_cause(exc)})", utcnow())
            return rec, JobWrite(job_id, rec, score=p.zscore(JOBS, job_id) or time.time(),
                                 keep={quarantine_key(job_id): raw})

        done = Transition(write_job(store.r, job_id, decide))
    log.warning("job %s quarantined: %s", job_id, cause)
    return done
