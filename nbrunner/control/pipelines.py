"""Pipelines in Redis: creating one, advancing it on every scheduler pass, cancelling and rerunning.

A pipeline's record (:mod:`nbrunner.core.pipelines.record`) lives at ``nbrunner:pipeline:<id>``,
listed in the sorted set ``nbrunner:pipelines``; unfinished ones also in
``nbrunner:pipelines:active``.  Each step is an ordinary job with ``pipeline`` and ``step`` set
(fair share, accounts, priorities, elastic GPUs, retries and timeouts apply to it), or a sweep.
Every change of a record is a transition of :mod:`nbrunner.core.pipelines.lifecycle`, written by
one function (:func:`_write`: a compare-and-set, so a writer whose read is stale never
overwrites), then its actions carried out here (cancel a job or sweep, :func:`pipeline_ended`).
The jobs (or sweeps) of the steps a transition queues are made before that write, which carries
what became of them: one write per change.  The pipeline's lock (``nbrunner:pipeline:<id>:lock``)
is held across it so that two processes never make a step's job twice; a step is marked in
``nbrunner:pipeline:<id>:submitting`` before its job is made, and after a crash in between the
job found (same pipeline and step) is adopted instead of a second one made.

Each step's notebook is snapshotted when the pipeline is made
(``<storage>/pipelines/<id>/<step>.ipynb``): its job runs that snapshot (sent as ``content``),
whatever happens to the file later; a rerun runs the same snapshots.
"""
from __future__ import annotations

import getpass
import logging
import shutil
import time
from pathlib import Path
from typing import Any, Sequence

from ..core.config import EVENTS_MAXLEN, PIPELINE_LOCK_TTL_S, PIPELINE_LOCK_WAIT_S, Settings
from ..core.errors import Conflict, InvalidRequest, NbrunnerError, NotFound
from ..core.keys import EVENTS, PREFIX
from ..core.lifecycle import Refused
from ..core.machine import Transition
from ..core.models import JobRecord, check_content_name, utcnow
from ..core.pipelines.lifecycle import (Begin, Cancel, CancelJob, CancelSweep, Ended, StepEnded, StepNotSubmitted,
                                        StepStarted, StepSubmitted, SubmitStep, created, rerun_steps, spec_of,
                                        step_parameters, transition)
from ..core.pipelines.record import PipelineRecord, StepState, StepStatus
from ..core.pipelines.spec import MissingOutput, PipelineSpec, parse_pipeline, read_pipeline, with_parameters
from .store import JobStore
from . import submit
from .active_records import advance_each
from .record_lock import RecordLock, optimistic

log = logging.getLogger("nbrunner.pipelines")

PIPELINES = PREFIX + "pipelines"                 # sorted set: pipeline id -> creation time
ACTIVE_PIPELINES = PREFIX + "pipelines:active"   # pipelines advance_pipelines looks after


def pipeline_key(pipeline_id: str) -> str:
    return f"{PREFIX}pipeline:{pipeline_id}"


def _lock(store: JobStore, pipeline_id: str) -> RecordLock:
    return RecordLock(store.r, f"{PREFIX}pipeline:{pipeline_id}:lock", PIPELINE_LOCK_TTL_S)


def snapshot_path(settings: Settings, pipeline_id: str, step: str) -> Path:
    return settings.storage / "pipelines" / pipeline_id / f"{step}.ipynb"


# ---- records --------------------------------------------------------------------------------------

def get_record(store: JobStore, pipeline_id: str) -> PipelineRecord:
    raw = store.r.get(pipeline_key(pipeline_id)) if isinstance(pipeline_id, str) else None
    if raw is None:
        raise NotFound(f"no pipeline {pipeline_id!r}")
    try:
        return PipelineRecord.from_json(raw)
    except Exception as exc:  # noqa: BLE001 - an unreadable record: missing, never a 500
        raise NotFound(f"pipeline {pipeline_id!r} has a record that cannot be read ({exc.__class__.__name__})") \
            from None


def pipeline_ids(store: JobStore) -> list[str]:
    """Every pipeline's id, oldest first."""
    return store.r.zrange(PIPELINES, 0, -1)


def submitting_key(pipeline_id: str) -> str:
    """The steps whose job is being made now (a hash: step -> 1), cleared by the write that records it."""
    return f"{PREFIX}pipeline:{pipeline_id}:submitting"


def _write(store: JobStore, pipeline_id: str, events: Sequence[Any] = (), new: PipelineRecord | None = None,
           submitted: Sequence[str] = ()) -> tuple[PipelineRecord, list[Transition]] | None:
    """The one write of a pipeline's keys (:func:`~nbrunner.control.record_lock.optimistic`): read
    the record, apply ``events`` in turn to what was read, write in one MULTI the record, its
    indexes and the transitions' event-stream entries, and clear the ``submitted`` steps' marks;
    again from the read if the record changed meanwhile (a writer whose read is stale never
    overwrites).  With ``new``: store that new pipeline first (Conflict if its id exists).  With
    no events: drop the pipeline from the active ones if it is gone, unreadable or finished.
    Returns the record written and the transitions; None if the pipeline is gone."""
    key = pipeline_key(pipeline_id)

    def step(p: Any) -> tuple[Any, Any]:
        raw = p.get(key)
        if new is not None:
            if raw is not None:
                raise Conflict(f"pipeline id {pipeline_id} already exists")
            rec = new
        elif raw is None and events:
            raise NotFound(f"no pipeline {pipeline_id!r}")
        else:
            try:
                rec = PipelineRecord.from_json(raw) if raw is not None else None
            except Exception as exc:  # noqa: BLE001 - an unreadable record: missing, never a 500
                if events:
                    raise NotFound(f"pipeline {pipeline_id!r} has a record that cannot be read "
                                   f"({exc.__class__.__name__})") from None
                rec = None
            if not events:
                return ((rec, []) if rec is not None else None), \
                    (lambda q: q.srem(ACTIVE_PIPELINES, pipeline_id)) if rec is None or rec.finished else None
        dones = []
        for event in events:
            dones.append(transition(rec, event))
            rec = dones[-1].record

        def writes(q: Any) -> None:
            q.set(key, rec.to_json())
            if new is not None:
                q.zadd(PIPELINES, {pipeline_id: time.time()})
                q.sadd(ACTIVE_PIPELINES, pipeline_id)
            for done in dones:
                if done.event:
                    q.xadd(EVENTS, {"type": done.event, "pipeline": pipeline_id, "status": done.record.status.value},
                           maxlen=EVENTS_MAXLEN, approximate=True)
            if any(isinstance(a, Ended) for done in dones for a in done.actions):
                q.srem(ACTIVE_PIPELINES, pipeline_id)
            if submitted:
                q.hdel(submitting_key(pipeline_id), *submitted)

        return (rec, dones), writes

    return optimistic(store.r, [key], step)


# ---- creating -------------------------------------------------------------------------------------

def split_contents(source: Any) -> tuple[Any, dict[str, Any]]:
    """A pipeline file (dict) without its steps' ``content`` (a notebook sent through a service),
    and those contents by step."""
    if not isinstance(source, dict) or not isinstance(source.get("steps"), dict):
        return source, {}
    contents, steps = {}, {}
    for name, body in source["steps"].items():
        if isinstance(body, dict) and "content" in body:
            body = dict(body)
            contents[name] = body.pop("content")
        steps[name] = body
    return {**source, "steps": steps}, contents


def check_notebooks(settings: Settings, spec: PipelineSpec, contents: dict[str, Any], base: Path | None,
               allow_files: bool) -> dict[str, tuple[str, str]]:
    """Each step's notebook checked as a submit checks it: (its path as shown, its text)."""
    out = {}
    for name, step in spec.steps.items():
        try:
            if name in contents:
                shown = check_content_name(step.notebook)
                checked = submit.check_content(contents[name], shown)
            elif not allow_files:
                raise InvalidRequest(f"no content for notebook {step.notebook}")
            else:
                path = submit.resolve_notebook(settings, step.notebook, base)
                shown = submit.relative_to_workspace(settings, path)
                checked = submit.check_notebook(path, shown)
            if step.options.get("kernel"):
                submit.check_kernel(step.options["kernel"])
            else:
                submit.check_notebook_kernel(checked.nb, shown)
        except NbrunnerError as exc:
            raise InvalidRequest(f"step {name!r}: {exc}") from None
        out[name] = (shown, checked.text)
    return out


def _new_id(store: JobStore) -> str:
    for _ in range(10):
        pid = submit.new_id()
        if store.r.zscore(PIPELINES, pid) is None and not store.r.exists(pipeline_key(pid)):
            return pid
    raise Conflict("could not allocate a pipeline id")  # pragma: no cover - 36^8 ids


def create_pipeline(store: JobStore, settings: Settings, source: Any, *, owner: str | None = None,
                    groups: Sequence[str] = (), base: Path | None = None, parameters: dict[str, Any] | None = None,
                    default_name: str = "pipeline", allow_files: bool = True,
                    schedule: str | None = None) -> PipelineRecord:
    """Validate a pipeline file (dict or YAML text; a step may carry its notebook's ``content``),
    snapshot its notebooks, record it and submit the steps that need nothing; owned by ``owner``.
    ``parameters`` override the file's (``{"STEP.NAME": value}``).  Relative notebook paths are
    taken from ``base`` first, then the workspace; with ``allow_files`` False every step must
    carry its content.  Refused with one line (nothing created) when anything is wrong."""
    raw, contents = split_contents(source)
    raw = with_parameters(read_pipeline(raw), parameters)
    spec = parse_pipeline(raw, default_name)
    for name in contents:
        if name not in spec.steps:
            raise InvalidRequest(f"content for unknown step {name!r}")
    snaps = check_notebooks(settings, spec, contents, base, allow_files)
    steps = {name: StepState(needs=list(s.needs), notebook=snaps[name][0], kind=s.kind) for name, s in spec.steps.items()}
    rec = created(PipelineRecord(id=_new_id(store), name=spec.name, owner=owner or getpass.getuser(),
                                 groups=list(groups), steps=steps, on_failure=spec.on_failure,
                                 spec=_stored_spec(spec, snaps), schedule=schedule))
    for name, (_, text) in snaps.items():
        path = snapshot_path(settings, rec.id, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return _store_and_begin(store, settings, rec)


def _stored_spec(spec: PipelineSpec, snaps: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """The validated file as stored, each notebook as shown (relative to the workspace)."""
    import msgspec

    steps = {n: msgspec.structs.replace(s, notebook=snaps[n][0]) for n, s in spec.steps.items()}
    return msgspec.to_builtins(msgspec.structs.replace(spec, steps=steps))


def _store_and_begin(store: JobStore, settings: Settings, rec: PipelineRecord) -> PipelineRecord:
    lock = _lock(store, rec.id)
    lock.acquire()  # a fresh id: nobody else holds it; the scheduler skips the pipeline until we are done
    try:
        _write(store, rec.id, new=rec)  # stored first: a crash while its first jobs are made is recovered
        rec = _apply(store, settings, rec, Begin(at=utcnow()))
    finally:
        lock.release()
    return rec


# ---- carrying out transitions ----------------------------------------------------------------------

def _apply(store: JobStore, settings: Settings, rec: PipelineRecord, event: Any) -> PipelineRecord:
    """Apply ``event`` to ``rec`` in one write: the jobs of the
    steps it queues are made first (the caller holds the pipeline's lock, so never twice), and the
    write carries the event and what became of them (:func:`_write`, which applies them to the
    record as stored); then the other actions are carried out.  Returns the record written."""
    chain, submitted, actions = _submit_queued(store, settings, rec, event)
    rec, _ = _write(store, rec.id, chain, submitted=submitted)
    for action in actions:
        if isinstance(action, CancelJob):
            _quietly(lambda: submit.cancel(store, action.job, settings, reason="cancelled with its pipeline"))
        elif isinstance(action, CancelSweep):
            from .sweeps import cancel_sweep

            _quietly(lambda: cancel_sweep(store, action.sweep, settings))
        elif isinstance(action, Ended):
            pipeline_ended(store, settings, rec)
    return rec


def _submit_queued(store: JobStore, settings: Settings, rec: PipelineRecord, event: Any
                   ) -> tuple[list[Any], list[str], list[Any]]:
    """The events one write applies: ``event``, then what became of each step it (or a later one
    of them) queued, whose job is made here; the steps submitted; the actions left to carry out.

    Each step is marked in :func:`submitting_key` before its job is made: after a crash in
    between, the job found for that step is adopted instead of a second one made."""
    chain, submitted, actions = [event], [], []
    done = transition(rec, event)
    rec, pending = done.record, list(done.actions)
    while pending:
        action = pending.pop(0)
        if not isinstance(action, SubmitStep):
            actions.append(action)
            continue
        marks = submitting_key(rec.id)
        found = _made(store, rec, action.step) if store.r.hexists(marks, action.step) else None
        if found is None:
            store.r.hset(marks, action.step, 1)
        result = found or _submit_step(store, settings, rec, action)
        chain.append(result)
        submitted.append(action.step)
        done = transition(rec, result)
        rec, pending = done.record, [*done.actions, *pending]
    return chain, submitted, actions


def _made(store: JobStore, rec: PipelineRecord, name: str) -> Any:
    """A step's job that an earlier submitter made and died before recording, as an event; or None."""
    found = next((j for j in store.all() if j.pipeline == rec.id and j.step == name), None)
    return None if found is None else StepSubmitted(step=name, job=found.id)


def _quietly(fn) -> None:
    try:
        fn()
    except (Conflict, NotFound):  # it ended or vanished meanwhile
        pass


def pipeline_ended(store: JobStore, settings: Settings, rec: PipelineRecord) -> None:
    """Called once when a pipeline finishes (any status), after its final record is written: the
    pipeline's terminal event on the event stream (``pipeline_ended``, with its status and owner),
    and its owner's notifications queued (sent by the scheduler's sender, never waited on here)."""
    from .notifications import notify_pipeline_ended

    store.emit("pipeline_ended", pipeline=rec.id, status=rec.status.value, owner=rec.owner)
    notify_pipeline_ended(store, rec)
    log.info("pipeline %s %s", rec.id, rec.status.value)


def _submit_step(store: JobStore, settings: Settings, rec: PipelineRecord, action: SubmitStep) -> Any:
    """Make the job (or sweep) of a step; the event saying what became of it."""
    spec = spec_of(rec)
    step = spec.steps[action.step]
    try:
        text = snapshot_path(settings, rec.id, action.step).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return StepNotSubmitted(step=action.step, error=f"its notebook snapshot cannot be read "
                                f"({exc.__class__.__name__})", at=utcnow())
    try:
        if step.sweep is not None:
            from .sweeps import create_sweep

            sweep = create_sweep(store, settings, step.notebook, {**step.sweep, "parameters": action.parameters},
                                 owner=rec.owner, groups=rec.groups, allow_file=False, content=text,
                                 name=f"{rec.name}/{action.step}"[:200], **step.options)
            return StepSubmitted(step=action.step, sweep=sweep.id)
        request = {"notebook": step.notebook, "content": text, "parameters": action.parameters,
                   "name": f"{rec.name}/{action.step}"[:200], "pipeline": rec.id, "step": action.step, **step.options}
        job = submit.submit(store, settings, request, owner=rec.owner, groups=rec.groups)
    except NbrunnerError as exc:  # e.g. a filled parameter a job refuses
        return StepNotSubmitted(step=action.step, error=f"cannot start: {exc}", at=utcnow())
    return StepSubmitted(step=action.step, job=job.id)


# ---- advancing --------------------------------------------------------------------------------------

def advance_pipelines(store: JobStore, settings: Settings) -> None:
    """Move every unfinished pipeline on from its steps' jobs: steps that started or ended, the
    next steps submitted.  Called by the scheduler on every pass; safe from several processes (a
    pipeline another process holds is skipped); never raises."""
    advance_each(store, ACTIVE_PIPELINES, lambda pid: advance_pipeline(store, settings, pid), "pipeline", log)


def advance_pipeline(store: JobStore, settings: Settings, pipeline_id: str, wait: float = 0.0
                     ) -> PipelineRecord | None:
    """Advance one pipeline under its lock; None if another process holds it or it is gone."""
    lock = _lock(store, pipeline_id)
    if not lock.acquire(wait):
        return None
    try:
        found = _write(store, pipeline_id)  # gone, unreadable or finished: no longer advanced
        if found is None or found[0].finished:
            return None if found is None else found[0]
        rec = found[0]
        try:  # its creator died before it began (it holds the lock until then)
            rec = _apply(store, settings, rec, Begin(at=utcnow()))
        except Refused:  # begun, as nearly always
            pass
        for name in list(rec.steps):
            st = rec.steps[name]
            if rec.finished or st.status not in (StepStatus.QUEUED, StepStatus.RUNNING):
                continue
            event = _unsubmitted(store, settings, rec, name) if not st.submitted else _observe(store, name, st)
            if event is not None:
                try:
                    rec = _apply(store, settings, rec, event)
                except Refused:
                    pass
        return rec
    finally:
        lock.release()


def _observe(store: JobStore, name: str, st: StepState) -> Any:
    """The event a submitted step's job (or sweep) calls for now, or None."""
    if st.sweep:
        return _observe_sweep(store, name, st)
    job = store.find(st.job) if st.job else None
    if job is None:
        return StepEnded(step=name, status=StepStatus.FAILED, at=utcnow(), error="its job was deleted")
    if job.finished:
        return StepEnded(step=name, status=StepStatus(job.status.value), at=job.finished_at or utcnow(),
                         outputs=outputs_of(job), error=job.error)
    if job.status == "running" and st.status is StepStatus.QUEUED:
        return StepStarted(step=name)
    return None


def outputs_of(job: JobRecord) -> dict[str, Any]:
    """What a job recorded with ``nbrunner.record`` (the last value per name)."""
    return dict(job.metrics)


def _observe_sweep(store: JobStore, name: str, st: StepState) -> Any:
    from ..core.sweeps.leaderboard import leaderboard
    from .sweeps import get_record as get_sweep, jobs_of

    try:
        sweep = get_sweep(store, st.sweep)
    except NotFound:
        return StepEnded(step=name, status=StepStatus.FAILED, at=utcnow(), error="its sweep was deleted")
    jobs = jobs_of(store, sweep.job_ids())
    if not sweep.finished:
        started = any(j.status != "queued" for j in jobs.values())
        return StepStarted(step=name) if started and st.status is StepStatus.QUEUED else None
    if sweep.status == "cancelled":
        return StepEnded(step=name, status=StepStatus.CANCELLED, at=sweep.finished_at or utcnow(), error="cancelled")
    best = next((row for row in leaderboard(sweep, jobs) if row["rank"] is not None and row["status"] == "completed"
                 and row["job"] in jobs), None)
    if best is None:
        return StepEnded(step=name, status=StepStatus.FAILED, at=sweep.finished_at or utcnow(),
                         error="no trial of its sweep completed with the objective")
    job = jobs[best["job"]]
    return StepEnded(step=name, status=StepStatus.COMPLETED, at=sweep.finished_at or utcnow(),
                     outputs=outputs_of(job), job=job.id)


def _unsubmitted(store: JobStore, settings: Settings, rec: PipelineRecord, name: str) -> Any:
    """A step left queued and not submitted (its submitter died): the job it made, else a submit now."""
    found = _made(store, rec, name)
    if found is not None:
        return found
    try:
        params = step_parameters(spec_of(rec), dict(rec.steps), name)
    except MissingOutput as exc:
        return StepNotSubmitted(step=name, error=f"cannot start: {exc}", at=utcnow())
    return _submit_step(store, settings, rec, SubmitStep(step=name, parameters=params))


# ---- cancel, rerun --------------------------------------------------------------------------------

def cancel_pipeline(store: JobStore, pipeline_id: str, settings: Settings | None = None) -> PipelineRecord:
    """Cancel a pipeline: its running steps' jobs are cancelled, its pending steps skipped;
    Conflict if it has finished."""
    lock = _lock(store, pipeline_id)
    if not lock.acquire(wait=PIPELINE_LOCK_WAIT_S):
        raise Conflict(f"pipeline {pipeline_id} is busy, try again")
    try:
        rec = get_record(store, pipeline_id)
        if rec.finished:
            raise Conflict(f"pipeline {pipeline_id} is already {rec.status}")
        return _apply(store, settings, rec, Cancel(at=utcnow()))
    finally:
        lock.release()


def rerun_pipeline(store: JobStore, settings: Settings, pipeline_id: str, from_step: str | None = None, *,
                   owner: str | None = None, groups: Sequence[str] = ()) -> PipelineRecord:
    """A new pipeline from a finished one's file and snapshots: its completed steps are reused
    (their jobs and outputs, not run again) except ``from_step`` and the steps after it."""
    old = get_record(store, pipeline_id)
    if not old.finished:
        raise Conflict(f"pipeline {pipeline_id} is {old.status}: cancel it or wait for it to end")
    spec = spec_of(old)
    if from_step is not None and (not isinstance(from_step, str) or from_step not in spec.steps):
        raise InvalidRequest(f"pipeline {pipeline_id} has no step {str(from_step)[:64]!r}")
    rec = created(PipelineRecord(id=_new_id(store), name=old.name, owner=owner or old.owner,
                                 groups=list(groups) or list(old.groups), steps=rerun_steps(spec, old, from_step),
                                 on_failure=old.on_failure, spec=old.spec, rerun_of=old.id, schedule=old.schedule))
    for name in spec.steps:
        src, dst = snapshot_path(settings, old.id, name), snapshot_path(settings, rec.id, name)
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(src, dst)
        except OSError:
            raise Conflict(f"pipeline {pipeline_id} has no snapshot of step {name!r} to run again") from None
    return _store_and_begin(store, settings, rec)


__all__ = ["create_pipeline", "advance_pipelines", "advance_pipeline", "cancel_pipeline", "rerun_pipeline",
           "get_record", "pipeline_ids", "pipeline_ended", "pipeline_key", "outputs_of", "split_contents"]
