"""Carry out what a job's transitions ask for: the I/O side of :mod:`nbrunner.core.lifecycle`.

:func:`advance` applies an event to a job's record (atomically, in the store) and then does
what the transition returned: render ``output.html`` (before the record is written), give back
or publish slots, hand the job to rq, stop or forget its rq job.  None of them writes the record:
what changes only the record (``SyncSlots``, ``AppendTimeline``) is done in the transition's own
write (:mod:`nbrunner.control.job_write`).  Every change of a job's
life in the control, execution and server layers goes through here.
"""
from __future__ import annotations

import logging
import shutil
from typing import TYPE_CHECKING, Callable

from ..core.config import RQ_FAILURE_TTL_S, RQ_RESULT_TTL_S
from .html import write_output_html
from .safe_write import write_into
from ..core.lifecycle import (Action, AppendTimeline, Enqueue, ForgetRun, FreeSlots, JobEvent, RemoveJob, RenderHtml,
                              StopRun, SyncSlots, Transition, WriteGrant)
from ..core.models import JobRecord
from . import grants

if TYPE_CHECKING:
    from ..core.config import Settings
    from .store import JobStore

log = logging.getLogger("nbrunner.actions")


def advance(store: JobStore, job_id: str, event: JobEvent | Callable[[JobRecord], JobEvent | None],
            settings: Settings | None = None) -> Transition | None:
    """Apply ``event`` to job ``job_id`` and carry out its actions; returns the transition (None if
    ``event``, a function of the record, picked nothing).  Raises Refused (nothing changed) if the
    event is not legal now.  Without ``settings`` (the job directory unknown) no HTML is rendered."""
    done = store.transition(job_id, event, prepare=lambda t: _before(job_id, t, settings))
    if done is not None:
        carry_out(store, job_id, done.actions, settings)
    return done


def _before(job_id: str, done: Transition, settings: Settings | None) -> None:
    for action in done.actions:
        if isinstance(action, RenderHtml) and settings is not None:
            write_output_html(settings.job_dir(job_id))
            if done.record is not None:  # the ended record's copy too: whoever sees the status finds both
                try:
                    write_into(settings.job_dir(job_id), "job.json", done.record.to_json(indent=1).encode())
                except OSError as exc:  # a copy: the store holds the record
                    log.warning("job %s: job.json not written: %s", job_id, exc)


def carry_out(store: JobStore, job_id: str, actions: tuple[Action, ...], settings: Settings | None = None) -> None:
    """Do the after-actions of a transition of job ``job_id``, in order."""
    for action in actions:
        if action.before:
            continue
        if isinstance(action, FreeSlots):
            grants.give_back(store, job_id, action.reason)
        elif isinstance(action, WriteGrant):
            grants.write_grant(store.r, job_id, action.slots)
        elif isinstance(action, (SyncSlots, AppendTimeline)):
            raise TypeError(f"{action!r} is done in the record's write (JobStore.transition), not after it")
        elif isinstance(action, Enqueue):
            _enqueue(store, job_id, action)
        elif isinstance(action, ForgetRun):
            _forget(store, job_id, action.attempt)
        elif isinstance(action, StopRun):
            _stop(store, job_id, action.attempt)
        elif isinstance(action, RemoveJob):
            _remove_dir(settings, job_id)
        else:
            raise TypeError(f"unknown action {action!r}")


def _enqueue(store: JobStore, job_id: str, action: Enqueue) -> None:
    from .queues import DEFAULT_QUEUE, host_queue, queue, rq_job_id

    queue(store, host_queue(action.host) if action.host else DEFAULT_QUEUE).enqueue_call(
        "nbrunner.execution.execute.run_job", args=(job_id, action.attempt),
        job_id=rq_job_id(job_id, action.attempt), timeout=action.timeout_s, result_ttl=RQ_RESULT_TTL_S,
        failure_ttl=RQ_FAILURE_TTL_S, description=f"nbrunner job {job_id}",
    )


def _forget(store: JobStore, job_id: str, attempt: int) -> None:
    """Cancel an attempt's rq job and take it out of rq's intermediate queue (a worker that died
    between taking it and starting it left it there)."""
    from rq.exceptions import InvalidJobOperation, NoSuchJobError
    from rq.job import Job as RqJob

    from .queues import queue, rq_connection, rq_job_id

    conn = rq_connection(store)
    try:
        job = RqJob.fetch(rq_job_id(job_id, attempt), connection=conn)
        job.cancel()
        conn.lrem(queue(store, job.origin).intermediate_queue_key, 0, job.id)
    except (NoSuchJobError, InvalidJobOperation):
        pass


def _stop(store: JobStore, job_id: str, attempt: int) -> None:
    """Ask the worker running the attempt to kill its work horse (rq's stop-job command); an
    attempt not started yet is taken out of its queue."""
    from rq.command import send_stop_job_command
    from rq.exceptions import InvalidJobOperation, NoSuchJobError
    from rq.job import Job as RqJob

    from .queues import rq_connection, rq_job_id

    conn = rq_connection(store)
    rq_id = rq_job_id(job_id, attempt)
    try:
        send_stop_job_command(conn, rq_id)
    except (InvalidJobOperation, NoSuchJobError):
        try:
            RqJob.fetch(rq_id, connection=conn).cancel()
        except (NoSuchJobError, InvalidJobOperation):
            pass


def _remove_dir(settings: Settings | None, job_id: str) -> None:
    if settings is None:
        return
    job_dir = settings.job_dir(job_id)
    if job_dir.name == job_id and job_dir.is_dir():
        shutil.rmtree(job_dir, ignore_errors=True)
