"""A schedule's life, pure: ``transition(record, event) -> Transition(record, actions)``.

Every change of a schedule record goes through :func:`transition` (a
:class:`~nbrunner.core.machine.Machine`); :mod:`nbrunner.control.schedules` applies it in a
compare-and-set of the record (so of several schedulers, only one has its transition written)
and carries out the actions.  An event that is not legal in the record's state raises
:class:`~nbrunner.core.fence.Refused` and changes nothing; events carry their time.

States (:class:`~nbrunner.core.schedules.ScheduleState`, from ``paused``)::

    active --Edit(paused)--> paused --Edit(resumed)--> active     (Edit: any other change, in both)
    active, due --Fire(the due time)--> active (next_run_at: the next fire time after now)
    active, paused --Ran (what became of the latest fire)--> the same state
    active, paused --Delete--> (removed)

``Fire`` claims the due fire time ``next_run_at``: it moves ``next_run_at`` past the firing moment
and gives :class:`SubmitRun`, or, with ``overlap: skip`` while the previous run has not finished,
no run and ``last_error`` saying so.  ``Ran`` notes the run (``last_job``) or why there was none.

Invariants (tests/core/test_schedule_lifecycle.py checks them over random event sequences):

- a schedule fires each fire time at most once: a ``Fire`` is legal only for the record's current
  ``next_run_at``, which it moves strictly past; the fire times fired only increase;
- a paused schedule has no ``next_run_at`` and never fires; an active one has one;
- a ``Fire`` gives either one :class:`SubmitRun` or a skip noted in ``last_error``, never both;
- ``last_run_at`` is the moment of the latest ``Fire``; ``last_job`` only changes by ``Ran``.
"""
from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from .fence import Refused
from .machine import Machine, Transition, replace
from .models import parse_time
from .schedules import ScheduleRecord, ScheduleSpec, iso, next_fire

CLOCK = ("cron", "every", "timezone")


# ---- events --------------------------------------------------------------------------------------

class Event(msgspec.Struct, frozen=True, kw_only=True):
    """Something that happened to a schedule."""


class Edit(Event, frozen=True):
    """A change of some editable fields (checked: ``ScheduleSpec``'s one-line errors), at ``at``;
    ``from_content``: a new ``notebook`` came with its content."""

    changes: dict[str, Any]
    at: datetime
    from_content: bool = False


class Fire(Event, frozen=True):
    """Fire the due time ``due`` at ``at``; ``previous_active``: the run ``last_job`` names has not
    finished (the caller looked; refused if ``last_job`` changed since)."""

    due: str
    at: datetime
    previous_active: bool = False
    last_job: str | None = None


class Ran(Event, frozen=True):
    """The latest fire time's run: its ``job`` (or pipeline), or ``error``: why there is none."""

    job: str | None = None
    error: str | None = None


class Delete(Event, frozen=True):
    """Remove the schedule (its runs stay, as jobs)."""


# ---- actions -------------------------------------------------------------------------------------

class SubmitRun(msgspec.Struct, frozen=True, kw_only=True):
    """Make the run of the fire time ``due`` (then apply :class:`Ran`)."""

    due: str


class Removed(msgspec.Struct, frozen=True, kw_only=True):
    """The schedule is gone: remove its kept notebook; tell ``owner``."""

    owner: str


# ---- the transitions -------------------------------------------------------------------------------

def created(spec: ScheduleSpec, schedule_id: str, at: datetime, *, notebook: str, owner: str, groups: list[str],
            from_content: bool = False, pipeline: str | None = None) -> ScheduleRecord:
    """A new schedule as it is stored: active, its first fire time the first after ``at`` (with
    ``every``: counted from ``at``)."""
    return ScheduleRecord(
        id=schedule_id, name=spec.name or Path(notebook).stem, notebook=notebook, parameters=spec.parameters,
        cron=spec.cron, every=spec.every, timezone=spec.timezone, overlap=spec.overlap, created_at=iso(at),
        owner=owner, groups=list(groups), min_gpus=spec.min_gpus, max_gpus=spec.max_gpus, priority=spec.priority,
        timeout=spec.timeout, next_run_at=iso(next_fire(spec, at, anchor=at if spec.every else None)),
        from_content=from_content, pipeline=pipeline)


def _edit(rec: ScheduleRecord, e: Edit) -> Transition[ScheduleRecord]:
    fields = {k: getattr(rec, k) for k in ScheduleSpec.model_fields}
    fields.update(e.changes)
    spec = ScheduleSpec.parse(fields)
    clock = any(getattr(spec, k) != getattr(rec, k) for k in CLOCK)
    resumed = rec.paused and not spec.paused
    changes: dict[str, Any] = {k: getattr(spec, k) for k in ScheduleSpec.model_fields}
    changes["name"] = spec.name or rec.name
    if "notebook" in e.changes:
        changes["from_content"] = e.from_content
    if spec.paused:
        changes["next_run_at"] = None
    elif clock or resumed or rec.next_run_at is None:
        changes["next_run_at"] = iso(next_fire(spec, e.at, anchor=e.at if spec.every else None))
    return Transition(replace(rec, **changes), (), "schedule")


def _fire(rec: ScheduleRecord, e: Fire) -> Transition[ScheduleRecord]:
    if rec.paused:
        raise Refused(f"schedule {rec.id} is paused")
    if rec.next_run_at != e.due:
        raise Refused(f"schedule {rec.id}: fire time {e.due} was claimed already (next: {rec.next_run_at})")
    if parse_time(rec.next_run_at) > e.at:
        raise Refused(f"schedule {rec.id} is not due before {rec.next_run_at}")
    if rec.last_job != e.last_job:
        raise Refused(f"schedule {rec.id}: its latest run changed meanwhile")
    changes: dict[str, Any] = {"next_run_at": iso(next_fire(rec, e.at, anchor=parse_time(rec.next_run_at))),
                               "last_run_at": iso(e.at)}
    if rec.overlap == "skip" and e.previous_active and rec.last_job:
        changes["last_error"] = f"skipped: the previous run {rec.last_job} has not finished"
        return Transition(replace(rec, **changes), (), "schedule")
    return Transition(replace(rec, **changes), (SubmitRun(due=e.due),))


def _ran(rec: ScheduleRecord, e: Ran) -> Transition[ScheduleRecord]:
    if (e.job is None) == (e.error is None):
        raise Refused("a fire time gives one run or one error")
    changes: dict[str, Any] = {"last_error": e.error}
    if e.job is not None:
        changes["last_job"] = e.job
    return Transition(replace(rec, **changes), (), "schedule")


def _delete(rec: ScheduleRecord, e: Delete) -> Transition[ScheduleRecord]:
    return Transition(None, (Removed(owner=rec.owner),), "schedule")


transition: Machine[ScheduleRecord] = Machine("schedule", {Edit: _edit, Fire: _fire, Ran: _ran, Delete: _delete})


__all__ = ["transition", "created", "Edit", "Fire", "Ran", "Delete", "SubmitRun", "Removed"]
