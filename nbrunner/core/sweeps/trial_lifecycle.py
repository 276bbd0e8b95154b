"""One trial's life, pure: ``transition(trial, event) -> Transition(trial)``.

The sweep's machine (:mod:`.lifecycle`) changes a trial only through :func:`transition`; an event
that is not legal in the trial's state raises :class:`~nbrunner.core.fence.Refused`.  States
(:class:`~.record.TrialState`)::

    pending --Submitting--> submitting --Submitted(job)--> submitted   (Reported, Decided: bookkeeping)
       ^                       |  |
       +-------Reset-----------+  +--Skipped(error)--> skipped
    pending, submitting --Withdrawn--> cancelled

``Reset``: a submitting trial whose submitter died before it recorded the job, and no job was made.

Invariants (tests/core/test_sweep_lifecycle.py): a trial has a job exactly when it is
``submitted``, and keeps it; ``error`` only on a skipped trial; a rung is decided at most once,
and only for a submitted trial, never after it was stopped; ``values`` stop changing once
``values_final``.
"""
from __future__ import annotations

import msgspec

from ..fence import Refused
from ..machine import Machine, Transition, replace
from .record import Trial, TrialState

PENDING, SUBMITTING, SUBMITTED, SKIPPED, CANCELLED = (TrialState.PENDING, TrialState.SUBMITTING,
                                                      TrialState.SUBMITTED, TrialState.SKIPPED, TrialState.CANCELLED)
DECISIONS = ("continue", "stopped")


class Event(msgspec.Struct, frozen=True, kw_only=True):
    """Something that happened to one trial."""


class Submitting(Event, frozen=True):
    """Its job is about to be made (written before the job exists)."""


class Submitted(Event, frozen=True):
    """Its job ``job`` exists (made now, or found after its submitter died)."""

    job: str


class Skipped(Event, frozen=True):
    """Its job could not be made (``error``: why, in one line)."""

    error: str


class Reset(Event, frozen=True):
    """Its submitter died before any job was made: it waits again."""


class Withdrawn(Event, frozen=True):
    """The sweep was cancelled before the trial had a job."""


class Reported(Event, frozen=True):
    """The objective values its job reported so far (``final``: the job has ended)."""

    values: tuple[float | None, ...]
    final: bool = False


class Decided(Event, frozen=True):
    """Early stopping's decision at ``rung``: ``continue`` or ``stopped``."""

    rung: int
    decision: str


def _in(trial: Trial, event: Event, *states: TrialState) -> None:
    if trial.state not in states:
        raise Refused(f"a {trial.state.value} trial cannot take {type(event).__name__}")


def _submitting(t: Trial, e: Submitting) -> Transition[Trial]:
    _in(t, e, PENDING)
    return Transition(replace(t, state=SUBMITTING))


def _submitted(t: Trial, e: Submitted) -> Transition[Trial]:
    _in(t, e, SUBMITTING)
    if not e.job:
        raise Refused("a submitted trial names its job")
    return Transition(replace(t, state=SUBMITTED, job=e.job, error=None))


def _skipped(t: Trial, e: Skipped) -> Transition[Trial]:
    _in(t, e, SUBMITTING)
    return Transition(replace(t, state=SKIPPED, error=e.error))


def _reset(t: Trial, e: Reset) -> Transition[Trial]:
    _in(t, e, SUBMITTING)
    return Transition(replace(t, state=PENDING))


def _withdrawn(t: Trial, e: Withdrawn) -> Transition[Trial]:
    _in(t, e, PENDING, SUBMITTING)
    return Transition(replace(t, state=CANCELLED))


def _reported(t: Trial, e: Reported) -> Transition[Trial]:
    _in(t, e, SUBMITTED)
    if t.values_final:
        raise Refused("the trial's job ended: its values are final")
    return Transition(replace(t, values=list(e.values), values_final=e.final))


def _decided(t: Trial, e: Decided) -> Transition[Trial]:
    _in(t, e, SUBMITTED)
    if e.decision not in DECISIONS:
        raise Refused(f"a rung's decision is continue or stopped, not {e.decision!r}")
    if str(e.rung) in t.decisions:
        raise Refused(f"rung {e.rung} of the trial was decided already")
    if "stopped" in t.decisions.values():
        raise Refused("the trial was stopped already")
    return Transition(replace(t, decisions={**t.decisions, str(e.rung): e.decision}))


transition: Machine[Trial] = Machine("trial", {
    Submitting: _submitting, Submitted: _submitted, Skipped: _skipped, Reset: _reset, Withdrawn: _withdrawn,
    Reported: _reported, Decided: _decided,
})


def step(trial: Trial, event: Event) -> Trial:
    """The trial after ``event`` (a trial's transitions have no actions)."""
    return transition(trial, event).record


__all__ = ["transition", "step", "Submitting", "Submitted", "Skipped", "Reset", "Withdrawn", "Reported", "Decided"]
