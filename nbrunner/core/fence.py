"""The attempt fence: every write on behalf of one run of a job (an *attempt*: its start, its end,
its release, and what its kernel, learners and work horse send while it runs) names the attempt,
and is refused once the job's record has moved on.  A worker cut off by a partition that comes
back cannot complete, fail, report for or give away the slots of the job re-queued and running
elsewhere.  Pure; :mod:`nbrunner.core.lifecycle` applies it to every job event that carries an
attempt, :func:`nbrunner.control.grants.release` to slot releases.
"""
from __future__ import annotations

from .errors import Conflict
from .models import JobPhase, JobRecord, JobStatus

# the phases in which the record's attempt still owns the job (dispatched, running, being stopped)
OWNED = (JobPhase.DISPATCHED, JobPhase.RUNNING, JobPhase.PREEMPTING, JobPhase.STOPPING)


class Refused(Conflict):
    """The event is not legal in the record's state (nothing changed); the message says why."""


def same_attempt(rec: JobRecord, attempt: int, *statuses: JobStatus) -> None:
    """Refused unless ``attempt`` is the record's (and its status one of ``statuses``, if given)."""
    if rec.attempt != attempt:
        raise Refused(f"job {rec.id}: attempt {attempt} is stale (now {rec.attempt})")
    if statuses and rec.status not in statuses:
        raise Refused(f"job {rec.id} is {rec.status}")


def fence(rec: JobRecord, attempt: int | None) -> None:
    """Refused if ``attempt`` no longer owns ``rec``: a later attempt, or the job back in the queue
    or released.  ``None`` (a write of the scheduler or of a user, on no attempt's behalf) passes."""
    if attempt is None:
        return
    if rec.attempt != attempt or rec.phase not in OWNED:
        raise Refused(f"job {rec.id}: attempt {attempt} is stale (now attempt {rec.attempt}, {rec.phase})")


def fence_files(current: str | None, attempt: int) -> None:
    """Refused if the job directory's attempt mark ``current`` (the text its newest attempt wrote
    there when it started; None: no mark) names another attempt than ``attempt``: a stale
    attempt's output must not overwrite the output of the attempt run after it."""
    if current is None:
        return
    if current.strip() != str(attempt):
        raise Refused(f"attempt {attempt} is stale (the job directory belongs to attempt {current.strip() or '?'})")


__all__ = ["Refused", "fence", "fence_files", "same_attempt", "OWNED"]
