"""A pipeline's life, pure: ``transition(record, event) -> Transition(record, actions)``.

Every change of a pipeline record goes through :func:`transition` (a
:class:`~nbrunner.core.machine.Machine`): it returns the new record and the actions that
:mod:`nbrunner.control.pipelines` carries out (submit a step's job or sweep, cancel one, say that
the pipeline ended).  An event that is not legal in the record's state raises
:class:`~nbrunner.core.lifecycle.Refused` and changes nothing.  Events carry their time.

States.  The pipeline: ``queued`` -> ``running`` (a step started or ended) -> ``completed``,
``failed`` or ``cancelled``.  A step::

    pending --(its needs settled)--> queued --StepSubmitted--> queued --StepStarted--> running
       |                               |  StepEnded / StepNotSubmitted                  | StepEnded
       +--(a need failed, stop)--> skipped    +--> completed | failed | cancelled <------+
       +--Cancel--> skipped            queued/running --Cancel--> cancelled

A need is *settled* when it completed, or, with ``on_failure: continue``, when it finished in any
way (a failed need's dependents still run; a template naming an output it did not record fails
the dependent).  With ``on_failure: stop`` a step that failed or was cancelled skips every step
that needs it, directly or not; the other steps go on.

Invariants (tests/core/test_pipeline_lifecycle.py checks them over random event sequences):

- a step is never queued, running or completed by its own job before its needs settled (with
  ``stop``: completed);
- every step that needs a skipped step is skipped;
- a pipeline is finished exactly when every step is, and then has ``finished_at`` (an unfinished
  one has none); the :class:`Ended` action comes once, with the transition that finishes it;
- a pending step says why it waits (``waiting``: code ``needs``), no other step does.
"""
from __future__ import annotations

from typing import Any

import msgspec

from ..lifecycle import Refused
from ..machine import Machine, Transition, replace
from .record import PipelineRecord, PipelineStatus, StepState, StepStatus
from .spec import MissingOutput, PipelineSpec, fill

P, S = PipelineStatus, StepStatus


# ---- events --------------------------------------------------------------------------------------

class Event(msgspec.Struct, frozen=True, kw_only=True):
    """Something that happened to a pipeline."""


class Begin(Event, frozen=True):
    """The pipeline was stored: submit the steps whose needs are settled (a rerun's reused steps
    are)."""

    at: str


class StepSubmitted(Event, frozen=True):
    """The job (or sweep) of a queued step exists."""

    step: str
    job: str | None = None
    sweep: str | None = None


class StepNotSubmitted(Event, frozen=True):
    """A queued step's job could not be made (``error``: why, in one line)."""

    step: str
    error: str
    at: str


class StepStarted(Event, frozen=True):
    """The job of a queued step (a sweep step: a trial) started."""

    step: str


class StepEnded(Event, frozen=True):
    """A step's job (or sweep) ended: ``completed`` with its ``outputs``, ``failed`` or
    ``cancelled`` with ``error``; ``job``: the job that stands for it (a sweep's best trial)."""

    step: str
    status: StepStatus
    at: str
    outputs: dict[str, Any] = {}
    error: str | None = None
    job: str | None = None


class Cancel(Event, frozen=True):
    """Cancel the pipeline: running steps are cancelled, pending ones skipped."""

    at: str


# ---- actions -------------------------------------------------------------------------------------

class SubmitStep(msgspec.Struct, frozen=True, kw_only=True):
    """Make the job (or sweep) of ``step`` with ``parameters`` (its templates filled)."""

    step: str
    parameters: dict[str, Any]


class CancelJob(msgspec.Struct, frozen=True, kw_only=True):
    job: str


class CancelSweep(msgspec.Struct, frozen=True, kw_only=True):
    sweep: str


class Ended(msgspec.Struct, frozen=True, kw_only=True):
    """The pipeline finished with ``status``: tell whoever waits for it."""

    status: PipelineStatus


# ---- the transitions -------------------------------------------------------------------------------

def created(rec: PipelineRecord) -> PipelineRecord:
    """A new pipeline as it is stored: queued, its unreused steps pending and saying what they wait for."""
    if rec.status is not P.QUEUED or any(s.status not in (S.PENDING, S.COMPLETED) for s in rec.steps.values()):
        raise Refused("a new pipeline must be queued with pending (or reused, completed) steps")
    return replace(rec, steps=_waiting(rec, dict(rec.steps)))


def spec_of(rec: PipelineRecord) -> PipelineSpec:
    return msgspec.convert(rec.spec, PipelineSpec)


def _settled(rec: PipelineRecord, steps: dict[str, StepState], need: str) -> bool:
    status = steps[need].status
    return status is S.COMPLETED or (rec.on_failure == "continue" and status.finished and status is not S.SKIPPED)


def _waiting(rec: PipelineRecord, steps: dict[str, StepState]) -> dict[str, StepState]:
    """Every pending step's ``waiting`` (the needs it waits for), None on the others."""
    out = {}
    for name, st in steps.items():
        wait = None
        if st.status is S.PENDING:
            left = [n for n in st.needs if not _settled(rec, steps, n)]
            if left:
                wait = {"code": "needs", "message": f"waits for {', '.join(left)}"}
        out[name] = st if st.waiting == wait else replace(st, waiting=wait)
    return out


def _propagate(rec: PipelineRecord, steps: dict[str, StepState], at: str) -> tuple[PipelineRecord, tuple]:
    """After a change of ``steps``: skip what a failure stops, queue what is ready (with its
    templates filled; a missing output fails the step), finish the pipeline when every step has."""
    spec = spec_of(rec)
    actions: list[Any] = []
    changed = True
    while changed:  # a step failed for a missing output may skip others, and so on
        changed = False
        if rec.on_failure == "stop":
            for name, st in steps.items():
                if st.status in (S.FAILED, S.CANCELLED):
                    for dep in spec.dependents(name):
                        if steps[dep].status is S.PENDING:
                            steps[dep] = replace(steps[dep], status=S.SKIPPED, waiting=None,
                                                 error=f"skipped: {name} {st.status.value}")
                            changed = True
        for name, st in steps.items():
            if st.status is not S.PENDING or not all(_settled(rec, steps, n) for n in st.needs):
                continue
            try:
                params = step_parameters(spec, steps, name)
            except MissingOutput as exc:
                steps[name] = replace(st, status=S.FAILED, waiting=None, error=f"cannot start: {exc}")
                changed = True
                continue
            steps[name] = replace(st, status=S.QUEUED, waiting=None)
            actions.append(SubmitStep(step=name, parameters=params))
    steps = _waiting(rec, steps)
    changes: dict[str, Any] = {"steps": steps}
    if all(st.status.finished for st in steps.values()) and not rec.finished:
        status = _outcome(steps)
        changes.update(status=status, finished_at=at)
        actions.append(Ended(status=status))
    elif rec.status is P.QUEUED and any(st.status is not S.PENDING and st.status is not S.QUEUED and not st.reused
                                        for st in steps.values()):
        changes["status"] = P.RUNNING
    return replace(rec, **changes), tuple(actions)


def step_parameters(spec: PipelineSpec, steps: dict[str, StepState], name: str) -> dict[str, Any]:
    """The parameters of step ``name`` with its templates filled from the outputs of the steps it
    needs (directly or not); raises MissingOutput."""
    return fill(spec.steps[name].parameters, {n: steps[n].outputs for n in spec.ancestors(name)})


def _outcome(steps: dict[str, StepState]) -> PipelineStatus:
    statuses = {st.status for st in steps.values()}
    if S.FAILED in statuses:
        return P.FAILED
    if S.CANCELLED in statuses or S.SKIPPED in statuses:
        return P.CANCELLED
    return P.COMPLETED


def _unfinished(rec: PipelineRecord) -> None:
    if rec.finished:
        raise Refused(f"pipeline {rec.id} is already {rec.status}")


def _step(rec: PipelineRecord, name: str, *statuses: StepStatus) -> StepState:
    _unfinished(rec)
    st = rec.steps.get(name)
    if st is None:
        raise Refused(f"pipeline {rec.id} has no step {name!r}")
    if statuses and st.status not in statuses:
        raise Refused(f"step {name!r} of pipeline {rec.id} is {st.status}")
    return st


def _begin(rec: PipelineRecord, e: Begin) -> Transition[PipelineRecord]:
    _unfinished(rec)
    if rec.status is not P.QUEUED or any(s.status not in (S.PENDING, S.COMPLETED) or (s.status is S.COMPLETED and
                                         not s.reused) for s in rec.steps.values()):
        raise Refused(f"pipeline {rec.id} has begun already")
    new, actions = _propagate(rec, dict(rec.steps), e.at)
    return Transition(new, actions, "pipeline")


def _submitted(rec: PipelineRecord, e: StepSubmitted) -> Transition[PipelineRecord]:
    st = _step(rec, e.step, S.QUEUED)
    if st.submitted:
        raise Refused(f"step {e.step!r} of pipeline {rec.id} was submitted already")
    if (e.job is None) == (e.sweep is None):
        raise Refused("a step is submitted as one job or one sweep")
    steps = {**rec.steps, e.step: replace(st, job=e.job, sweep=e.sweep, submitted=True)}
    return Transition(replace(rec, steps=steps), (), "pipeline")


def _not_submitted(rec: PipelineRecord, e: StepNotSubmitted) -> Transition[PipelineRecord]:
    st = _step(rec, e.step, S.QUEUED)
    if st.submitted:
        raise Refused(f"step {e.step!r} of pipeline {rec.id} was submitted")
    steps = {**rec.steps, e.step: replace(st, status=S.FAILED, error=e.error)}
    new, actions = _propagate(rec, steps, e.at)
    return Transition(new, actions, "pipeline")


def _started(rec: PipelineRecord, e: StepStarted) -> Transition[PipelineRecord]:
    st = _step(rec, e.step, S.QUEUED)
    if not st.submitted:
        raise Refused(f"step {e.step!r} of pipeline {rec.id} has no job yet")
    steps = {**rec.steps, e.step: replace(st, status=S.RUNNING)}
    return Transition(replace(rec, steps=steps, status=P.RUNNING), (), "pipeline")


def _ended(rec: PipelineRecord, e: StepEnded) -> Transition[PipelineRecord]:
    st = _step(rec, e.step, S.QUEUED, S.RUNNING)
    if not st.submitted:
        raise Refused(f"step {e.step!r} of pipeline {rec.id} has no job yet")
    if e.status not in (S.COMPLETED, S.FAILED, S.CANCELLED):
        raise Refused(f"a step's job ends completed, failed or cancelled, not {e.status}")
    done = replace(st, status=e.status, outputs=dict(e.outputs), error=e.error, job=e.job or st.job)
    new, actions = _propagate(rec, {**rec.steps, e.step: done}, e.at)
    if new.status is P.QUEUED:
        new = replace(new, status=P.RUNNING)
    return Transition(new, actions, "pipeline")


def _cancel(rec: PipelineRecord, e: Cancel) -> Transition[PipelineRecord]:
    _unfinished(rec)
    steps, actions = {}, []
    for name, st in rec.steps.items():
        if st.status.finished:
            steps[name] = st
        elif st.submitted and st.status in (S.QUEUED, S.RUNNING):
            steps[name] = replace(st, status=S.CANCELLED, error="cancelled", waiting=None)
            actions.append(CancelSweep(sweep=st.sweep) if st.sweep else CancelJob(job=st.job))
        else:
            steps[name] = replace(st, status=S.SKIPPED, error="skipped: the pipeline was cancelled", waiting=None)
    new = replace(rec, steps=steps, status=P.CANCELLED, finished_at=e.at, cancel_requested=True)
    return Transition(new, (*actions, Ended(status=P.CANCELLED)), "pipeline")


transition: Machine[PipelineRecord] = Machine("pipeline", {
    Begin: _begin, StepSubmitted: _submitted, StepNotSubmitted: _not_submitted, StepStarted: _started,
    StepEnded: _ended, Cancel: _cancel,
})


def rerun_steps(spec: PipelineSpec, old: PipelineRecord, from_step: str | None) -> dict[str, StepState]:
    """The steps of a rerun of ``old``: every step that completed is reused (its job and outputs,
    not run again) except ``from_step`` and every step that needs it, or needs a step run again."""
    if from_step is not None and from_step not in spec.steps:
        raise KeyError(from_step)
    again = {n for n, st in old.steps.items() if st.status is not S.COMPLETED}
    if from_step is not None:
        again.add(from_step)
    for n in list(again):
        again |= spec.dependents(n)
    out = {}
    for name, step in spec.steps.items():
        base = StepState(needs=list(step.needs), notebook=step.notebook, kind=step.kind)
        prev = old.steps.get(name)
        if name not in again and prev is not None:
            out[name] = replace(base, status=S.COMPLETED, job=prev.job, sweep=prev.sweep, outputs=dict(prev.outputs),
                                reused=True, submitted=True)
        else:
            out[name] = base
    return out


__all__ = ["transition", "created", "rerun_steps", "spec_of", "step_parameters", "Begin", "StepSubmitted", "StepNotSubmitted",
           "StepStarted", "StepEnded", "Cancel", "SubmitStep", "CancelJob", "CancelSweep", "Ended"]
