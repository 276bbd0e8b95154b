"""A job's life, pure: ``transition(record, event) -> Transition(record, actions)``.

Every change of a job record goes through :func:`transition`: it returns the new record
(records are immutable) and the instructions that other code carries out (release slots,
publish a grant, hand the job to rq, render ``output.html``, ...).  An event that is not
legal in the record's state raises :class:`Refused` and changes nothing.  No I/O, no clock:
events carry their time (``at``).  :meth:`nbrunner.control.store.JobStore.transition` applies
a transition atomically; :mod:`nbrunner.control.actions` carries out its actions.

States: the status users see (:class:`~nbrunner.core.models.JobStatus`) refined by the
phase (:class:`~nbrunner.core.models.JobPhase`)::

    queued/waiting --Dispatch--> queued/dispatched --Start--> running/running --Preempt--> running/preempting
          ^    <--Undispatch--                                  |  Finish, Fail, Timeout         |
          |                                                     v                               |
          +--WorkerLost, ReleaseConfirmed (a retry, or a preemption: waits again) --------------+
          |                                    {completed,failed,cancelled}/stopping
          +--WorkerLost, ReleaseConfirmed (retries left) ---------+  |  ReleaseConfirmed, Cancelled
                                                                     v
                                                               finished/ended --Purge--> (removed)

``CancelRequested`` and ``Quarantine`` end a job from any unfinished state (``stopping`` if a
worker runs it, else ``ended``).  Bookkeeping events (``Progress``, ``SetPriority``,
``Position``, ``SlotsHeld``, ``Declare``, ``TrainingOver``, ``Shrunk``, ``SetAccount``,
``StoppedEarly``) change a record within its state.  Invariants (tests/core/test_lifecycle.py
checks them over random event sequences): a finished job has ``finished_at``, an unfinished one
has none; a job in ``ended`` holds no slot; ``error`` is set only on failed or cancelled jobs;
``history`` has one entry per status change; a job starts at most ``retries + preempted + 1``
times (a preemption spends no retry).
"""
from __future__ import annotations

from typing import Any, Union

import msgspec

from .config import MAX_TIMEOUT_S
from .fence import Refused, fence
from .fence import same_attempt as _same_attempt
from .models import JobPhase, JobRecord, JobStatus, check_priority
from .reports import NOT_METRICS, goodput_inputs

QUEUED, RUNNING, COMPLETED, FAILED, CANCELLED = (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.COMPLETED,
                                                 JobStatus.FAILED, JobStatus.CANCELLED)
WAITING, DISPATCHED, STARTED, PREEMPTING, STOPPING, ENDED = (
    JobPhase.WAITING, JobPhase.DISPATCHED, JobPhase.RUNNING, JobPhase.PREEMPTING, JobPhase.STOPPING, JobPhase.ENDED)
RUNS = (STARTED, PREEMPTING)  # a worker runs the job
KERNEL_KILLED = "kernel killed"  # a kernel killed from outside (OOM killer, an admin) is run again, like a lost worker
WORKER_LOST = "worker lost"
HORSE_DIED = "worker process died: the job's process was killed"


# ---- events: what happened to a job -------------------------------------------------------------

class Event(msgspec.Struct, frozen=True, kw_only=True):
    """Something that happened to a job.  ``name`` is the kind written to the event stream."""

    name = "changed"


class Dispatch(Event, frozen=True):
    """The scheduler hands the job to rq on ``host`` with ``slots`` held for it."""

    name = "dispatched"
    host: str | None = None
    slots: tuple[tuple[str, int], ...] = ()
    timeout_grace_s: float = 30.0  # rq's own limit stays above the job's wall time by this much


class Undispatch(Event, frozen=True):
    """The rq job of ``attempt`` was lost before it started (its worker died or dropped it)."""

    name = "undispatched"
    attempt: int


class Start(Event, frozen=True):
    """A worker's work horse begins attempt ``attempt``."""

    name = "started"
    attempt: int
    worker: str
    host: str
    at: str


class Progress(Event, frozen=True):
    """The running notebook reports progress (0..1) and/or metrics."""

    name = "progress"
    progress: float | None = None
    metrics: dict[str, Any] | None = None
    attempt: int | None = None  # whose processes report it: see fence()


class Finish(Event, frozen=True):
    """The notebook of ``attempt`` ran to its end."""

    name = "completed"
    attempt: int
    at: str


class Fail(Event, frozen=True):
    """The notebook of ``attempt`` failed; ``error`` is the one-line cause."""

    name = "failed"
    attempt: int
    error: str
    at: str


class Timeout(Event, frozen=True):
    """The notebook of ``attempt`` ran past its wall-time limit."""

    name = "failed"
    attempt: int
    at: str


class CancelRequested(Event, frozen=True):
    """A user (or a sweep's early stopping) cancels the job."""

    name = "cancelled"
    at: str
    reason: str = "cancelled"


class Cancelled(Event, frozen=True):
    """The worker of a cancelled job confirms that its execution stopped."""

    name = "released"
    attempt: int
    worker: str


class ReleaseConfirmed(Event, frozen=True):
    """The worker of ``attempt`` confirms that nothing of the job runs any more (its work horse
    is gone); a job still ``running`` then died without recording its end."""

    name = "released"
    attempt: int
    worker: str
    at: str


class WorkerLost(Event, frozen=True):
    """The worker running ``attempt`` stopped heart-beating."""

    name = "requeued"
    attempt: int
    at: str


class Quarantine(Event, frozen=True):
    """The job cannot be scheduled (``cause``): it fails, and a worker running it stops it."""

    name = "quarantined"
    cause: str
    at: str


class Preempt(Event, frozen=True):
    """Take a running job's GPUs back (``reason``: "reclaimed by account vision"): its worker stops
    it, then it waits in the queue again, its checkpoint kept."""

    name = "preempted"
    attempt: int
    reason: str


class Shrunk(Event, frozen=True):
    """An elastic job's grant was cut for ``reason`` (it gives the GPUs back at its next step)."""

    name = "reclaimed"
    reason: str


class SetAccount(Event, frozen=True):
    """The job's account (its path in the accounts tree)."""

    name = ""
    account: str | None


class Purge(Event, frozen=True):
    """Remove a finished, released job (record and directory)."""

    name = "deleted"


class SetPriority(Event, frozen=True):
    name = "priority"
    priority: Any


class Position(Event, frozen=True):
    """The job's place in the queue (None: behind nobody) and ``outlook`` (see ``JobRecord.outlook_changes``)."""

    name = "waiting"
    position: int | None
    outlook: dict[str, Any] | None = None


class SlotsHeld(Event, frozen=True):
    """The slots the job holds right now (read from the holdings)."""

    name = "gpus"
    slots: tuple[tuple[str, int], ...]


class Declare(Event, frozen=True):
    """The job's trainer is elastic, between ``min_gpus`` and ``max_gpus`` when given."""

    name = "elastic"
    min_gpus: int | None = None
    max_gpus: int | None = None
    attempt: int | None = None  # fenced as Progress's


class TrainingOver(Event, frozen=True):
    """The job's trainer closed: it wants no GPU until it trains again."""

    name = "training_over"
    attempt: int | None = None  # fenced as Progress's


class StoppedEarly(Event, frozen=True):
    """A sweep stopped this (cancelled) trial at a rung; ``value`` of ``metric`` was decisive."""

    name = "stopped"
    rung: int
    metric: str | None = None
    value: Any = None


JobEvent = Union[Dispatch, Undispatch, Start, Progress, Finish, Fail, Timeout, CancelRequested, Cancelled,
                 ReleaseConfirmed, WorkerLost, Quarantine, Preempt, Shrunk, SetAccount, Purge, SetPriority, Position,
                 SlotsHeld, Declare, TrainingOver, StoppedEarly]


# ---- actions: what other code must do ------------------------------------------------------------

class Action(msgspec.Struct, frozen=True, kw_only=True):
    """An instruction of a transition.  ``before`` ones are carried out before the new record is
    written (whoever sees a finished job finds its ``output.html``); the others after."""

    before = False


class RenderHtml(Action, frozen=True):
    """Write ``runs/<id>/output.html`` from the job's output (or input) notebook."""

    before = True


class FreeSlots(Action, frozen=True):
    """Give back every slot the job holds, publish an empty grant and note it in the record."""

    reason: str


class WriteGrant(Action, frozen=True):
    """Publish the slots the job should hold."""

    slots: tuple[tuple[str, int], ...]


class SyncSlots(Action, frozen=True):
    """Copy the job's held slots into its record (``SlotsHeld``)."""


class Enqueue(Action, frozen=True):
    """Hand attempt ``attempt`` to rq on ``host``'s queue (any worker's when None)."""

    attempt: int
    host: str | None
    timeout_s: int  # rq's limit; -1: none


class ForgetRun(Action, frozen=True):
    """Cancel attempt ``attempt``'s rq job, wherever it waits."""

    attempt: int


class StopRun(Action, frozen=True):
    """Stop attempt ``attempt``: its worker kills the work horse, or rq drops it if not started."""

    attempt: int


class AppendTimeline(Action, frozen=True):
    """Add the job's GPU count now to its GPU timeline."""

    gpus: int


class RemoveJob(Action, frozen=True):
    """Delete the record, every index entry and the job directory."""


class Transition(msgspec.Struct, frozen=True):
    """The new record (None when the job is removed), what to carry out, and the kind of the
    event-stream entry to write ("": none)."""

    record: JobRecord | None
    actions: tuple[Action, ...] = ()
    event: str = ""


# ---- the transitions ---------------------------------------------------------------------------------

def submitted(record: JobRecord) -> JobRecord:
    """A new job as it is stored: queued, waiting, its history starting at ``created_at``."""
    if record.status is not QUEUED or record.history:
        raise Refused(f"a new job must be queued with no history, got {record.status}")
    return _with(record, phase=WAITING, history=[{"status": QUEUED.value, "at": record.created_at}])


def timeout_error(limit_s: float | None) -> str:
    return f"timeout: the job ran longer than its {limit_s:g} s limit" if limit_s else "timeout"


def transition(rec: JobRecord, event: JobEvent) -> Transition:
    """The record after ``event`` and the actions it asks for; :class:`Refused` if ``event`` is not
    legal in ``rec``'s state."""
    handler = _HANDLERS.get(type(event))
    if handler is None:
        raise TypeError(f"not a job event: {event!r}")
    return handler(rec, event)


def _with(rec: JobRecord, **changes: Any) -> JobRecord:
    """``rec`` with ``changes``; a status change is appended to the history (at the new
    ``started_at`` or ``finished_at``, or at ``at`` for a return to the queue)."""
    at = changes.pop("at", None)
    status = changes.get("status", rec.status)
    if status != rec.status:
        when = {RUNNING: changes.get("started_at"), QUEUED: at}.get(status, changes.get("finished_at"))
        changes["history"] = [*rec.history, {"status": status.value, "at": when or rec.created_at}]
    return msgspec.structs.replace(rec, **changes)


def _unfinished(rec: JobRecord) -> None:
    if rec.finished:
        raise Refused(f"job {rec.id} is already {rec.status}")


def _dispatch(rec: JobRecord, e: Dispatch) -> Transition:
    if rec.phase is not WAITING or rec.cancel_requested:
        raise Refused(f"job {rec.id} is not waiting to be dispatched ({rec.status}, {rec.phase})")
    new = _with(rec, attempt=rec.attempt + 1, phase=DISPATCHED, training_over=False, host=e.host,
                queue_position=None, waiting=None, expected_start=None)
    timeout = -1 if not new.timeout else int(min(new.timeout, MAX_TIMEOUT_S) + e.timeout_grace_s)
    return Transition(new, (WriteGrant(slots=e.slots), SyncSlots(), Enqueue(attempt=new.attempt, host=e.host,
                                                                            timeout_s=timeout)), e.name)


def _undispatch(rec: JobRecord, e: Undispatch) -> Transition:
    _same_attempt(rec, e.attempt, QUEUED)
    if rec.phase is not DISPATCHED:
        raise Refused(f"job {rec.id} is not dispatched")
    return Transition(_with(rec, phase=WAITING), (ForgetRun(attempt=e.attempt), FreeSlots(reason="undispatched")),
                      e.name)


def _start(rec: JobRecord, e: Start) -> Transition:
    _same_attempt(rec, e.attempt, QUEUED)
    if rec.phase is not DISPATCHED or rec.cancel_requested:
        raise Refused(f"job {rec.id} was taken back before it started")
    return Transition(_with(rec, status=RUNNING, phase=STARTED, started_at=e.at, worker=e.worker, host=e.host,
                            queue_position=None), (), e.name)


def _progress(rec: JobRecord, e: Progress) -> Transition:
    fence(rec, e.attempt)
    _unfinished(rec)
    changes: dict[str, Any] = {}
    if e.progress is not None:
        changes["progress"] = max(0.0, min(1.0, float(e.progress)))
    if e.metrics:
        scalars = {k: v for k, v in e.metrics.items() if k not in NOT_METRICS}  # kept apart (goodput's)
        changes["metrics"] = {**rec.metrics, **scalars}
        changes.update(goodput_inputs(rec.throughput, e.metrics))
    return Transition(_with(rec, **changes), (), e.name)


def _end(rec: JobRecord, status: JobStatus, error: str | None, at: str, event: str) -> Transition:
    """A running job ended by itself: its worker confirms the release later."""
    changes: dict[str, Any] = {"status": status, "error": error, "finished_at": at, "phase": STOPPING, "expected_end": None}
    if status is COMPLETED:
        changes["progress"] = 1.0
    return Transition(_with(rec, **changes), (RenderHtml(),), event)


def _finish(rec: JobRecord, e: Finish) -> Transition:
    _same_attempt(rec, e.attempt, RUNNING)
    return _end(rec, COMPLETED, None, e.at, e.name)


def _fail(rec: JobRecord, e: Fail) -> Transition:
    _same_attempt(rec, e.attempt, RUNNING)
    if e.error.startswith(KERNEL_KILLED) and rec.lost < rec.retries and rec.phase is STARTED:
        # run again once its worker confirms the release: never a terminal status it comes back from
        return Transition(_with(rec, phase=PREEMPTING, preempt_reason=e.error), (), "")
    return _end(rec, FAILED, e.error, e.at, e.name)


def _timeout(rec: JobRecord, e: Timeout) -> Transition:
    _same_attempt(rec, e.attempt, RUNNING)
    return _end(rec, FAILED, timeout_error(rec.timeout), e.at, e.name)


def _cancel(rec: JobRecord, e: CancelRequested) -> Transition:
    _unfinished(rec)
    changes: dict[str, Any] = {"status": CANCELLED, "error": e.reason, "finished_at": e.at, "cancel_requested": True}
    actions: tuple[Action, ...] = (RenderHtml(),)
    if rec.phase in (DISPATCHED, *RUNS):
        actions += (StopRun(attempt=rec.attempt),)
    if rec.phase in RUNS:  # its worker stops it and confirms
        return Transition(_with(rec, phase=STOPPING, **changes), actions, e.name)
    gone, free = _slots_freed(rec, "cancelled")  # nothing of it ever ran: nobody else gives its slots back
    return Transition(_with(rec, phase=ENDED, **changes, **gone), actions + free, e.name)


def _slots_freed(rec: JobRecord, reason: str) -> tuple[dict[str, Any], tuple[Action, ...]]:
    """The record's changes and the actions of giving back every slot the job holds."""
    point = (AppendTimeline(gpus=0),) if rec.slots else ()
    return {"slots": [], "gpus": 0}, (FreeSlots(reason=reason),) + point


def _requeue(rec: JobRecord, why: str, event: str, at: str) -> Transition:
    """Run the job again: back to queued/waiting, its last attempt's outcome cleared; the history
    entry of the return to the queue says ``why`` (``reason``).  A retry (lost worker, killed
    kernel) counts against ``retries``; a preemption does not."""
    gone, free = _slots_freed(rec, "requeued")
    retry = rec.phase is not PREEMPTING or (rec.preempt_reason or "").startswith(KERNEL_KILLED)
    count = {"lost": rec.lost + 1} if retry else {"preempted": rec.preempted + 1, "reclaimed": why}
    new = _with(rec, status=QUEUED, phase=WAITING, worker=None, error=None, progress=None, finished_at=None,
                at=at, **count, **gone)
    new = msgspec.structs.replace(new, history=[*new.history[:-1], {**new.history[-1], "reason": why}])
    return Transition(new, (ForgetRun(attempt=rec.attempt),) + free, event)


def _ended(rec: JobRecord, changes: dict[str, Any], reason: str, event: str, html: bool) -> Transition:
    """Finished and released: no slot held any more."""
    gone, free = _slots_freed(rec, reason)
    return Transition(_with(rec, phase=ENDED, **changes, **gone), ((RenderHtml(),) if html else ()) + free, event)


def _release(rec: JobRecord, e: ReleaseConfirmed) -> Transition:
    _same_attempt(rec, e.attempt)
    if rec.worker != e.worker or rec.phase not in (*RUNS, STOPPING):
        raise Refused(f"job {rec.id} is not run by {e.worker}")
    if rec.status is CANCELLED:
        raise Refused(f"job {rec.id} was cancelled: its worker confirms with Cancelled")
    if rec.phase is PREEMPTING:  # stopped to give its GPUs back: it waits again
        return _requeue(rec, rec.preempt_reason or "preempted", e.name, e.at)
    if rec.status is RUNNING:  # the work horse died without recording the end
        return _ended(rec, {"status": FAILED, "error": HORSE_DIED, "finished_at": e.at}, "finished", e.name, True)
    if rec.status is FAILED and (rec.error or "").startswith(KERNEL_KILLED) and rec.lost < rec.retries:
        return _requeue(rec, rec.error, e.name, e.at)
    return _ended(rec, {}, "finished", e.name, False)


def _cancelled(rec: JobRecord, e: Cancelled) -> Transition:
    _same_attempt(rec, e.attempt, CANCELLED)
    if rec.worker != e.worker or rec.phase is not STOPPING:
        raise Refused(f"job {rec.id} is not stopping on {e.worker}")
    return _ended(rec, {}, "cancelled", e.name, True)  # its last output, now that it stopped


def _lost(rec: JobRecord, e: WorkerLost) -> Transition:
    _same_attempt(rec, e.attempt)
    if rec.finished and rec.phase is STOPPING:  # it had ended; its worker died before confirming
        return _ended(rec, {}, WORKER_LOST, "released", False)
    if rec.status is not RUNNING:
        raise Refused(f"job {rec.id} is {rec.status}")
    if rec.phase is PREEMPTING:  # it was being stopped anyway
        return _requeue(rec, rec.preempt_reason or "preempted", e.name, e.at)
    if rec.lost < rec.retries:
        return _requeue(rec, WORKER_LOST, e.name, e.at)
    failed = _ended(rec, {"status": FAILED, "error": WORKER_LOST, "finished_at": e.at}, WORKER_LOST, e.name, True)
    return Transition(failed.record, failed.actions + (ForgetRun(attempt=rec.attempt),), e.name)


def _quarantine(rec: JobRecord, e: Quarantine) -> Transition:
    _unfinished(rec)
    changes = {"status": FAILED, "error": f"quarantined: {e.cause}", "finished_at": e.at, "cancel_requested": True}
    if rec.phase in RUNS:  # its worker stops it (cancel_requested) and confirms
        return Transition(_with(rec, phase=STOPPING, **changes), (), e.name)
    gone, free = _slots_freed(rec, "quarantined")
    return Transition(_with(rec, phase=ENDED, **changes, **gone), free, e.name)


def _preempt(rec: JobRecord, e: Preempt) -> Transition:
    _same_attempt(rec, e.attempt, RUNNING)
    if rec.phase is not STARTED:
        raise Refused(f"job {rec.id} is already being stopped")
    return Transition(_with(rec, phase=PREEMPTING, preempt_reason=e.reason), (StopRun(attempt=rec.attempt),), e.name)


def _shrunk(rec: JobRecord, e: Shrunk) -> Transition:
    if rec.phase not in (DISPATCHED, *RUNS):
        raise Refused(f"job {rec.id} is not running")
    return Transition(_with(rec, reclaimed=e.reason), (), e.name if rec.reclaimed != e.reason else "")


def _set_account(rec: JobRecord, e: SetAccount) -> Transition:
    return Transition(_with(rec, account=e.account))


def _purge(rec: JobRecord, e: Purge) -> Transition:
    if not rec.finished:
        raise Refused(f"job {rec.id} is {rec.status}: cancel it before deleting it")
    if rec.phase is not ENDED:
        raise Refused(f"job {rec.id} is still stopping: try again in a moment")
    return Transition(None, (RemoveJob(),), e.name)


def _priority(rec: JobRecord, e: SetPriority) -> Transition:
    priority = check_priority(e.priority)
    _unfinished(rec)
    return Transition(_with(rec, priority=priority), (), e.name)


def _position(rec: JobRecord, e: Position) -> Transition:
    if (changes := rec.outlook_changes(e.position, e.outlook)) is None:
        raise Refused(f"job {rec.id} is not queued")
    return Transition(_with(rec, **changes), (), e.name if set(changes) - {"queue_position"} else "")


def _slots_held(rec: JobRecord, e: SlotsHeld) -> Transition:
    slots = [list(s) for s in sorted(e.slots)]
    if rec.slots == slots and rec.gpus == len(slots):
        return Transition(rec)
    if slots and rec.phase is ENDED:
        raise Refused(f"job {rec.id} has ended: it holds no slot")
    return Transition(_with(rec, slots=slots, gpus=len(slots)), (AppendTimeline(gpus=len(slots)),), e.name)


def _declare(rec: JobRecord, e: Declare) -> Transition:
    fence(rec, e.attempt)
    _unfinished(rec)
    changes: dict[str, Any] = {"elastic": True, "training_over": False}
    if e.min_gpus is not None and e.max_gpus is not None and 0 <= e.min_gpus <= e.max_gpus:
        changes.update(min_gpus=e.min_gpus, max_gpus=e.max_gpus)
    return Transition(_with(rec, **changes), (), e.name)


def _training_over(rec: JobRecord, e: TrainingOver) -> Transition:
    fence(rec, e.attempt)
    if rec.training_over:
        return Transition(rec)
    return Transition(_with(rec, training_over=True), (), e.name)


def _stopped_early(rec: JobRecord, e: StoppedEarly) -> Transition:
    if rec.status is not CANCELLED:
        raise Refused(f"job {rec.id} is {rec.status}, not cancelled")
    metrics = {**rec.metrics, e.metric: e.value} if e.metric and e.value is not None else rec.metrics
    return Transition(_with(rec, error=f"stopped early at rung {e.rung}", metrics=metrics), (), e.name)


_HANDLERS = {
    Dispatch: _dispatch, Undispatch: _undispatch, Start: _start, Progress: _progress, Finish: _finish,
    Fail: _fail, Timeout: _timeout, CancelRequested: _cancel, Cancelled: _cancelled, ReleaseConfirmed: _release,
    WorkerLost: _lost, Quarantine: _quarantine, Preempt: _preempt, Shrunk: _shrunk, SetAccount: _set_account,
    Purge: _purge, SetPriority: _priority, Position: _position,
    SlotsHeld: _slots_held, Declare: _declare, TrainingOver: _training_over, StoppedEarly: _stopped_early,
}


def settle_event(rec: JobRecord, attempt: int, worker: str, at: str) -> JobEvent:
    """What a worker's confirmation that attempt ``attempt`` left nothing running means for ``rec``."""
    if rec.status is CANCELLED and rec.phase is STOPPING:
        return Cancelled(attempt=attempt, worker=worker)
    return ReleaseConfirmed(attempt=attempt, worker=worker, at=at)


__all__ = ["transition", "submitted", "settle_event", "fence", "timeout_error", "Refused", "Transition", "JobEvent"]
