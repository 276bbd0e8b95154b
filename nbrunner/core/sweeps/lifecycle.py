"""A sweep's life, pure: ``transition(record, event) -> Transition(record, actions)``.

Every change of a sweep record goes through :func:`transition` (a
:class:`~nbrunner.core.machine.Machine`); each of its trials changes only through
:mod:`.trial_lifecycle`.  :mod:`nbrunner.control.sweeps` loads the record under the sweep's lock,
gives it what it saw of the trial jobs (:class:`JobSeen`) and what they reported, writes the new
record and carries out the actions (submit trials, stop one early, cancel a job, end the sweep).
An event that is not legal in the sweep's state raises :class:`~nbrunner.core.fence.Refused` and
changes nothing.  Events carry their time.

States (:class:`~.record.SweepStatus`): ``running`` --Advance (every trial settled, every trial
job ended)--> ``completed``; ``running`` --Cancel--> ``cancelled`` (refused once every trial is
settled and its job ended: the sweep is complete, whether or not an Advance wrote it yet).  While
running:

- ``Advance`` applies the reported values, early stopping (:mod:`.asha`: a :class:`StopTrial` per
  trial stopped), then marks the next pending trials ``submitting`` (so many that at most
  ``max_parallel`` are submitting or have an unfinished job) with one :class:`SubmitTrials`;
- ``TrialsSubmitted`` / ``TrialNotSubmitted`` say what became of them (a skipped trial makes room:
  the next ``Advance`` submits another);
- ``Recover``: trials left ``submitting`` by a submitter that died take the job it made, if any,
  else wait again (never submitted twice).

Invariants (tests/core/test_sweep_lifecycle.py checks them over random event sequences):

- a finished sweep has ``finished_at`` and no pending or submitting trial; an unfinished one has
  no ``finished_at``; a finished sweep takes no event;
- a trial has a job exactly when it is ``submitted`` (and keeps it);
- after ``Advance``, at most ``max_parallel`` trials are submitting or have a job it saw unfinished;
- a trial is stopped early (one :class:`StopTrial`) at most once, each rung decided at most once;
- :class:`Ended` comes once, with the transition that finishes the sweep.
"""
from __future__ import annotations

from typing import Any, Sequence

import msgspec

from ..fence import Refused
from ..machine import Machine, Transition, replace
from . import trial_lifecycle as tl
from .asha import rung_decision
from .record import SweepRecord, SweepStatus, Trial, TrialState

RUNNING, COMPLETED, CANCELLED = SweepStatus.RUNNING, SweepStatus.COMPLETED, SweepStatus.CANCELLED
JOB_FINISHED = ("completed", "failed", "cancelled")


class JobSeen(msgspec.Struct, frozen=True):
    """What the control side read of a trial's job: its status and whether a cancel is asked."""

    status: str
    cancel_requested: bool = False

    @property
    def finished(self) -> bool:
        return self.status in JOB_FINISHED


# ---- events --------------------------------------------------------------------------------------

class Event(msgspec.Struct, frozen=True, kw_only=True):
    """Something that happened to a sweep."""


class Advance(Event, frozen=True):
    """A look at the sweep: ``jobs`` (its trial jobs that exist, by id; a job missing has ended)
    and ``reports`` (trial index -> the objective values its job reported so far)."""

    at: str
    jobs: dict[str, JobSeen] = {}
    reports: dict[int, tl.Reported] = {}


class Recover(Event, frozen=True):
    """The trials left ``submitting``: ``found`` (index -> job) the jobs their dead submitter made;
    the others wait again."""

    found: dict[int, str] = {}


class TrialsSubmitted(Event, frozen=True):
    """The jobs of submitting trials exist (index -> job)."""

    jobs: dict[int, str]


class TrialNotSubmitted(Event, frozen=True):
    """A submitting trial's job could not be made (``error``: why, in one line)."""

    index: int
    error: str


class Cancel(Event, frozen=True):
    """Cancel the sweep: trials without a job are cancelled, the unfinished ``jobs`` too."""

    at: str
    jobs: dict[str, JobSeen] = {}


# ---- actions -------------------------------------------------------------------------------------

class SubmitTrials(msgspec.Struct, frozen=True, kw_only=True):
    """Make the jobs of the trials ``indexes`` (marked submitting in the record written first)."""

    indexes: tuple[int, ...]


class StopTrial(msgspec.Struct, frozen=True, kw_only=True):
    """Cancel trial ``index``'s job ``job``: stopped early at ``rung`` on ``metric``."""

    index: int
    job: str
    rung: int
    metric: str


class CancelJob(msgspec.Struct, frozen=True, kw_only=True):
    job: str


class Ended(msgspec.Struct, frozen=True, kw_only=True):
    """The sweep finished with ``status``: it is no longer advanced; tell whoever waits for it."""

    status: SweepStatus


# ---- the transitions -------------------------------------------------------------------------------

def _running(rec: SweepRecord) -> None:
    if rec.finished:
        raise Refused(f"sweep {rec.id} is already {rec.status.value}")


def _trial(rec: SweepRecord, index: int) -> Trial:
    if not 0 <= index < len(rec.trials):
        raise Refused(f"sweep {rec.id} has no trial {index}")
    return rec.trials[index]


def to_read(rec: SweepRecord, jobs: dict[str, JobSeen]) -> list[int]:
    """The trials whose reported values early stopping needs read now (their jobs may still
    report, up to the last rung)."""
    spec = rec.parsed
    if spec.early_stopping is None or rec.finished:
        return []
    top = max(spec.early_stopping.rungs)
    return [i for i, t in enumerate(rec.trials)
            if t.state is TrialState.SUBMITTED and t.job in jobs and len(t.values) < top and not t.values_final
            and jobs[t.job].status != "queued"]


def _early_stopping(rec: SweepRecord, trials: list[Trial], jobs: dict[str, JobSeen]) -> list[StopTrial]:
    """Decide every rung a running trial reached that is not decided yet (``trials`` changed in place)."""
    spec = rec.parsed
    es = spec.early_stopping
    stops = []
    for i, t in enumerate(trials):
        job = jobs.get(t.job) if t.job else None
        if job is None or job.status not in ("queued", "running") or job.cancel_requested:
            continue
        reached = [r for r in es.rungs if len(t.values) >= r]
        if not reached or str(reached[-1]) in t.decisions or "stopped" in t.decisions.values():
            continue
        rung = reached[-1]
        peers = [o.values[rung - 1] for o in trials if len(o.values) >= rung]
        decision = rung_decision(t.values[rung - 1], peers, es.reduction_factor, spec.objective.mode)
        if decision is None:
            continue  # not enough trials at this rung yet: keep running
        trials[i] = tl.step(t, tl.Decided(rung=rung, decision=decision))
        if decision == "stopped":
            stops.append(StopTrial(index=i, job=t.job, rung=rung, metric=spec.objective.metric))
    return stops


def _advance(rec: SweepRecord, e: Advance) -> Transition[SweepRecord]:
    _running(rec)
    trials = list(rec.trials)
    for i, report in e.reports.items():
        trials[i] = tl.step(_trial(rec, i), report)
    actions: list[Any] = []
    if rec.parsed.early_stopping is not None:
        actions += _early_stopping(rec, trials, e.jobs)
    limit = rec.parsed.max_parallel or len(trials)
    busy = sum(1 for t in trials if t.state is TrialState.SUBMITTING
               or (t.job in e.jobs and not e.jobs[t.job].finished))  # a trial stopped now runs until its job ends
    due = [i for i, t in enumerate(trials) if t.state is TrialState.PENDING][:max(0, limit - busy)]
    for i in due:
        trials[i] = tl.step(trials[i], tl.Submitting())
    if due:
        actions.append(SubmitTrials(indexes=tuple(due)))
    changes: dict[str, Any] = {"trials": trials}
    done = _ended(trials, e.jobs)
    if done:
        changes.update(status=COMPLETED, finished_at=e.at)
        actions.append(Ended(status=COMPLETED))
    return Transition(replace(rec, **changes), tuple(actions), "sweep" if done else "")


def _recover(rec: SweepRecord, e: Recover) -> Transition[SweepRecord]:
    _running(rec)
    stuck = [i for i, t in enumerate(rec.trials) if t.state is TrialState.SUBMITTING]
    if not stuck:
        raise Refused(f"sweep {rec.id} has no trial being submitted")
    trials = list(rec.trials)
    for i in e.found:
        _trial(rec, i)
    for i in stuck:
        trials[i] = tl.step(trials[i], tl.Submitted(job=e.found[i]) if i in e.found else tl.Reset())
    if set(e.found) - set(stuck):
        raise Refused("only a trial being submitted takes a job it was not given")
    return Transition(replace(rec, trials=trials))


def _trials_submitted(rec: SweepRecord, e: TrialsSubmitted) -> Transition[SweepRecord]:
    _running(rec)
    trials = list(rec.trials)
    for i, job in e.jobs.items():
        trials[i] = tl.step(_trial(rec, i), tl.Submitted(job=job))
    return Transition(replace(rec, trials=trials))


def _trial_not_submitted(rec: SweepRecord, e: TrialNotSubmitted) -> Transition[SweepRecord]:
    _running(rec)
    trials = list(rec.trials)
    trials[e.index] = tl.step(_trial(rec, e.index), tl.Skipped(error=e.error))
    return Transition(replace(rec, trials=trials))


def _ended(trials: Sequence[Trial], jobs: dict[str, JobSeen]) -> bool:
    """Nothing more to submit and every trial's job ended (one no longer stored counts as ended)."""
    return all(t.state.settled for t in trials) and all(t.job not in jobs or jobs[t.job].finished for t in trials if t.job)


def _cancel(rec: SweepRecord, e: Cancel) -> Transition[SweepRecord]:
    _running(rec)
    if _ended(rec.trials, e.jobs):  # the next Advance completes it: a cancel would say otherwise
        raise Refused(f"sweep {rec.id} is already completed: its trials have ended")
    trials = [tl.step(t, tl.Withdrawn()) if t.state in (TrialState.PENDING, TrialState.SUBMITTING) else t
              for t in rec.trials]
    cancels = [CancelJob(job=t.job) for t in rec.trials if t.job in e.jobs and not e.jobs[t.job].finished]
    new = replace(rec, trials=trials, status=CANCELLED, finished_at=e.at)
    return Transition(new, (*cancels, Ended(status=CANCELLED)), "sweep")


transition: Machine[SweepRecord] = Machine("sweep", {
    Advance: _advance, Recover: _recover, TrialsSubmitted: _trials_submitted, TrialNotSubmitted: _trial_not_submitted,
    Cancel: _cancel,
})


def seen(job: Any) -> JobSeen:
    """What a sweep looks at of a job record: its status and whether a cancel is asked."""
    status = getattr(job.status, "value", job.status)
    return JobSeen(status=status, cancel_requested=bool(job.cancel_requested))


__all__ = ["transition", "to_read", "seen", "JobSeen", "Advance", "Recover", "TrialsSubmitted",
           "TrialNotSubmitted", "Cancel", "SubmitTrials", "StopTrial", "CancelJob", "Ended"]
