"""Sweeps in Redis: creating one, advancing it on every scheduler pass, cancelling it.

Each trial of a sweep (see :mod:`nbrunner.core.sweeps`) is an ordinary job with ``sweep``
set.  The sweep record lives in Redis (``nbrunner:sweep:<id>``, listed in the sorted set
``nbrunner:sweeps``; unfinished ones also in ``nbrunner:sweeps:active``).  Only the first
``max_parallel`` trials are submitted at once; :func:`advance_sweeps`, called by the
scheduler on every pass, submits the next ones as earlier trials finish and applies early
stopping (:mod:`nbrunner.core.sweeps.asha`).  What changes and when is decided by the sweep's
machine (:mod:`nbrunner.core.sweeps.lifecycle`); this module loads the record, gives it what it
reads of the trial jobs, writes the new record (one function, :func:`_write`: a compare-and-set,
so a writer whose read is stale never overwrites) and carries out the actions.  The sweep's lock
key (``nbrunner:sweep:<id>:lock``) is held across a step so that several processes may call it
and a trial is never submitted twice.  The jobs of the trials a transition asks for are made
before its one write, which records them; each trial is marked in
``nbrunner:sweep:<id>:submitting`` before its job is made, and a job left behind by a crash in
between is adopted rather than submitted again.

The notebook is snapshotted when the sweep is created (``<storage>/sweeps/<id>/input.ipynb``);
every trial runs that snapshot, even if the notebook is edited while the sweep runs.
"""
from __future__ import annotations

import getpass
import logging
import os
import secrets
import tempfile
import time
from pathlib import Path, PurePath, PurePosixPath
from typing import Any, Iterable, Sequence

from ..core.config import EVENTS_MAXLEN, SWEEP_LOCK_TTL_S, SWEEP_LOCK_WAIT_S, Settings
from ..core.errors import Conflict, InvalidRequest, NbrunnerError, NotFound
from ..core.keys import EVENTS, PREFIX, job_key
from ..core.lifecycle import Refused, StoppedEarly
from ..core.machine import Transition
from ..core.models import JOB_OPTIONS, JobRecord, JobRequest, check_content_name, utcnow
from .store import JobStore
from .local_files import reported_values, spec_source
from ..core.sweeps.lifecycle import (Advance, Cancel, CancelJob, Ended, JobSeen, Recover, StopTrial, SubmitTrials,
                                     TrialNotSubmitted, TrialsSubmitted, seen, to_read, transition)
from ..core.sweeps.record import SweepRecord, Trial, TrialState
from ..core.sweeps.spec import parse_spec
from ..core.sweeps.trial_lifecycle import Reported
from ..core.sweeps.trials import generate_trials
from . import submit
from .actions import advance
from .active_records import advance_each
from .record_lock import RecordLock, optimistic

log = logging.getLogger("nbrunner.sweeps")

SWEEPS = PREFIX + "sweeps"                 # sorted set: sweep id -> creation time
ACTIVE_SWEEPS = PREFIX + "sweeps:active"   # sweeps advance_sweeps still looks after


def sweep_key(sweep_id: str) -> str:
    return f"{PREFIX}sweep:{sweep_id}"


def lock_key(sweep_id: str) -> str:
    return f"{PREFIX}sweep:{sweep_id}:lock"


# ---------------------------------------------------------------------------------------------
# record


def get_record(store: JobStore, sweep_id: str) -> SweepRecord:
    raw = store.r.get(sweep_key(sweep_id)) if isinstance(sweep_id, str) else None
    if raw is None:
        raise NotFound(f"no sweep {sweep_id!r}")
    try:
        return SweepRecord.model_validate_json(raw)
    except Exception as exc:  # noqa: BLE001 - an unreadable record: listed as missing, never a 500
        log.warning("sweep %s: its record cannot be read (%s)", sweep_id, exc.__class__.__name__)
        raise NotFound(f"sweep {sweep_id!r} has a record that cannot be read ({exc.__class__.__name__})") from None


def submitting_key(sweep_id: str) -> str:
    """The trials whose jobs are being made now (a hash: index -> 1), cleared by the write that records them."""
    return f"{PREFIX}sweep:{sweep_id}:submitting"


def _write(store: JobStore, sweep_id: str, event: Any = None, new: SweepRecord | None = None,
           more: Sequence[Any] = (), submitted: Sequence[int] = ()) -> Transition[SweepRecord] | None:
    """The one write of a sweep's keys (:func:`~nbrunner.control.record_lock.optimistic`): read the
    record, apply ``event`` then ``more`` to what was read, write in one MULTI the record (if it
    changed), its indexes and its event-stream entries, and clear the ``submitted`` trials' marks;
    again from the read if the record changed meanwhile, so a writer whose read is stale never
    overwrites.  Returns the record written with every action of the transitions.  With ``new``: store that new sweep (Conflict
    if its id exists).  With neither: drop the sweep from the active ones if it is gone, finished
    or unreadable (then raises what reading it raised); returns its transition, or None if gone."""
    key = sweep_key(sweep_id)

    def step(p: Any) -> tuple[Any, Any]:
        raw = p.get(key)
        if new is not None:
            if raw is not None:
                raise Conflict(f"sweep id {sweep_id} already exists")
            done, before = Transition(new), None
        elif raw is None:
            if event is not None:
                raise NotFound(f"no sweep {sweep_id!r}")
            return None, lambda q: q.srem(ACTIVE_SWEEPS, sweep_id)
        else:
            try:
                before = SweepRecord.model_validate_json(raw)
            except Exception as exc:  # noqa: BLE001 - unreadable: no longer advanced (its jobs run on as jobs)
                if event is not None:
                    raise
                return exc, lambda q: q.srem(ACTIVE_SWEEPS, sweep_id)
            if event is None:
                return Transition(before), (lambda q: q.srem(ACTIVE_SWEEPS, sweep_id)) if before.finished else None
            dones = [transition(before, event)]
            for e in more:
                dones.append(transition(dones[-1].record, e))
            done = Transition(dones[-1].record, tuple(a for d in dones for a in d.actions))
        rec = done.record
        changed = before is None or rec.model_dump_json() != before.model_dump_json()
        ended = any(isinstance(a, Ended) for a in done.actions)
        events = [d for d in dones if d.event] if new is None else []
        if not (changed or ended or events or submitted):
            return done, None

        def writes(q: Any) -> None:
            if changed:
                q.set(key, rec.model_dump_json())
            if before is None:
                q.zadd(SWEEPS, {sweep_id: time.time()})
                q.sadd(ACTIVE_SWEEPS, sweep_id)
            if ended:
                q.srem(ACTIVE_SWEEPS, sweep_id)
            for d in events:
                q.xadd(EVENTS, {"type": d.event, "sweep": sweep_id, "status": d.record.status.value},
                       maxlen=EVENTS_MAXLEN, approximate=True)
            if submitted:
                q.hdel(submitting_key(sweep_id), *map(str, submitted))

        return done, writes

    out = optimistic(store.r, [key], step)
    if isinstance(out, Exception):
        raise out
    return out


def snapshot_path(settings: Settings, sweep_id: str) -> Path:
    return settings.storage / "sweeps" / sweep_id / "input.ipynb"


def _lock(store: JobStore, sweep_id: str) -> RecordLock:
    return RecordLock(store.r, lock_key(sweep_id), SWEEP_LOCK_TTL_S)


# ---------------------------------------------------------------------------------------------
# creating a sweep


def _notebook_parameters(path: Path | None, text: str) -> dict:
    """The parameters cell of the notebook at ``path`` (None: of the notebook ``text``)."""
    import papermill

    try:
        if path is not None:
            return papermill.inspect_notebook(str(path))
        with tempfile.TemporaryDirectory(prefix="nbrunner-sweep-") as tmp:  # papermill reads a file
            copy = Path(tmp) / "input.ipynb"
            copy.write_text(text, encoding="utf-8")
            return papermill.inspect_notebook(str(copy))
    except Exception:  # no parameters cell, or one papermill cannot parse: nothing to check against
        return {}


def _sweep_notebook(settings: Settings, notebook: str | os.PathLike, base: Path | None,
                    content: Any) -> tuple[PurePath, str, Any, str]:
    """The notebook of a sweep: (its path, as shown, its node, its text) from the file
    ``notebook`` names or, with ``content``, from that content, which ``notebook`` names."""
    if content is None:
        path = submit.resolve_notebook(settings, str(notebook), base)
        shown = submit.relative_to_workspace(settings, path)
        checked = submit.check_notebook(path, shown)
        return path, shown, checked.nb, checked.text
    shown = check_content_name(str(notebook))
    checked = submit.check_content(content, shown)
    return PurePosixPath(shown.replace("\\", "/")), shown, checked.nb, checked.text


def prepare(settings: Settings, notebook: str | os.PathLike, spec: Any, *, base: Path | None = None,
            allow_file: bool = True, options: dict[str, Any] | None = None, content: Any = None):
    """Validate everything a sweep needs before anything is written (the notebook: the file
    ``notebook`` names, or ``content``, see :func:`nbrunner.control.submit.submit`).

    Returns (spec, trials, notebook path, notebook node, job options)."""
    parsed = parse_spec(*spec_source(spec)) if allow_file else parse_spec(spec)
    if parsed.seed is None:
        parsed.seed = secrets.randbelow(2**32)
    trials = generate_trials(parsed)
    options = {k: v for k, v in (options or {}).items() if v is not None}
    for key in options:
        if key not in JOB_OPTIONS:
            raise InvalidRequest(f"unknown field {key!r}")
    JobRequest.parse({"notebook": str(notebook), **options})  # options alone, with one-line errors
    path, shown, nb, text = _sweep_notebook(settings, notebook, base, content)
    if options.get("kernel"):
        submit.check_kernel(options["kernel"])
    declared = _notebook_parameters(path if content is None else None, text)
    for i, params in enumerate(trials):
        if declared:
            for name in params:
                if name not in declared:
                    raise InvalidRequest(f"parameter {name!r} is not in the parameters cell of {shown} "
                                         f"(it has {', '.join(declared)})")
        try:
            JobRequest.parse({"notebook": shown, "parameters": params, "sweep": "x", **options})
        except InvalidRequest as exc:
            raise InvalidRequest(f"trial {i + 1}: {exc}") from None
    return parsed, trials, path, nb, options


def create_sweep(store: JobStore, settings: Settings, notebook: str | os.PathLike, spec: Any, *,
                 owner: str | None = None, groups: Sequence[str] = (), base: Path | None = None,
                 allow_file: bool = True, content: Any = None, **options: Any) -> SweepRecord:
    """Validate, record the sweep and submit its first trials (at most ``max_parallel``), owned by
    ``owner`` (in ``groups``), as the sweep is.  With ``content`` (the notebook's JSON object or
    text) the trials run that, and ``notebook`` names it."""
    from ..core.notebooks import load_nbformat

    nbformat = load_nbformat()

    parsed, trials, path, nb, options = prepare(settings, notebook, spec, base=base, allow_file=allow_file,
                                                options=options, content=content)
    shown = submit.relative_to_workspace(settings, path) if content is None else str(notebook)
    for _ in range(10):
        sweep_id = submit.new_id()
        if store.r.zscore(SWEEPS, sweep_id) is None and not store.r.exists(sweep_key(sweep_id)):
            break
    rec = SweepRecord(id=sweep_id, notebook=shown, name=options.pop("name", None) or path.stem,
                      spec=parsed.to_dict(), trials=[Trial(parameters=p) for p in trials], options=options,
                      owner=owner or getpass.getuser(), groups=list(groups), from_content=content is not None)
    snap = snapshot_path(settings, sweep_id)
    snap.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(snap))
    lock = _lock(store, sweep_id)
    lock.acquire()  # a fresh id: nobody else holds it; the scheduler skips the sweep until we are done
    try:
        _write(store, sweep_id, new=rec)
        rec = _advance(store, settings, rec)
    finally:
        lock.release()
    store.emit("sweep", sweep=sweep_id, status=rec.status.value)
    return rec


# ---------------------------------------------------------------------------------------------
# advancing


def advance_sweeps(store: JobStore, settings: Settings) -> None:
    """Submit the next trials of every unfinished sweep, apply early stopping, finish sweeps.

    Called by the scheduler on every pass; safe to call from several processes at once and
    as often as wanted (a sweep another process is advancing is skipped); never raises."""
    advance_each(store, ACTIVE_SWEEPS, lambda sid: advance_sweep(store, settings, sid), "sweep", log)


def advance_sweep(store: JobStore, settings: Settings, sweep_id: str, wait: float = 0.0) -> SweepRecord | None:
    """Advance one sweep under its lock; None if another process holds the lock."""
    lock = _lock(store, sweep_id)
    if not lock.acquire(wait):
        return None
    try:
        done = _write(store, sweep_id)  # gone, unreadable or finished: no longer advanced
        if done is None or done.record.finished:
            return None if done is None else done.record
        return _advance(store, settings, done.record)
    finally:
        lock.release()


def jobs_of(store: JobStore, ids: Iterable[str]) -> dict[str, JobRecord]:
    """The records of the jobs ``ids`` that still exist, by id (one round trip)."""
    ids = list(ids)
    if not ids:
        return {}
    out = {}
    for jid, raw in zip(ids, store.r.mget([job_key(i) for i in ids])):
        if raw is not None:
            out[jid] = store.load(jid, raw)  # an unreadable trial is quarantined, the sweep goes on
    return out


def _seen(store: JobStore, rec: SweepRecord) -> dict[str, JobSeen]:
    return {jid: seen(job) for jid, job in jobs_of(store, rec.job_ids()).items()}


def _advance(store: JobStore, settings: Settings, rec: SweepRecord) -> SweepRecord:
    """One step of a sweep (the caller holds its lock): recover trials a dead submitter left,
    read what early stopping needs, then :class:`Advance` until no skipped trial leaves room."""
    if any(t.state is TrialState.SUBMITTING for t in rec.trials):
        rec = _apply(store, settings, rec, Recover(found=_orphans(store, rec)))
    jobs = _seen(store, rec)
    reports = {}
    if to_read(rec, jobs):
        spec = rec.parsed
        top = max(spec.early_stopping.rungs)
        for i in to_read(rec, jobs):
            job = rec.trials[i].job
            values = reported_values(settings.job_dir(job), spec.objective.metric, top)
            reports[i] = Reported(values=tuple(values), final=jobs[job].finished)
    while True:
        before = rec
        rec = _apply(store, settings, rec, Advance(at=utcnow(), jobs=jobs, reports=reports))
        skipped = any(t.state is TrialState.SKIPPED and b.state is not TrialState.SKIPPED
                      for t, b in zip(rec.trials, before.trials))
        if rec.finished or not skipped:  # a skipped trial made room for another
            return rec
        jobs, reports = _seen(store, rec), {}


def _apply(store: JobStore, settings: Settings, rec: SweepRecord, event: Any) -> SweepRecord:
    """Apply ``event`` to the stored record of ``rec`` in one write (:func:`_write`): the jobs of the
    trials it asks for are made first (the caller holds the sweep's lock, so never twice) and the
    write carries what became of them; then its other actions are carried out.  Returns the
    record written."""
    more, submitted = _submit_first(store, settings, rec, event)
    done = _write(store, rec.id, event, more=more, submitted=submitted)
    new = done.record
    for action in done.actions:
        if isinstance(action, StopTrial):
            stop_trial(store, settings, action.job, action.rung, action.metric)
        elif isinstance(action, CancelJob):
            try:
                submit.cancel(store, action.job, settings)
            except Conflict:  # it finished meanwhile
                pass
    return new


def trial_name(rec: SweepRecord, index: int) -> str:
    return f"{rec.name} #{index + 1}"[:200]


def _orphans(store: JobStore, rec: SweepRecord) -> dict[int, str]:
    """The jobs that trials left ``submitting`` by a dead submitter made (same sweep, name and
    parameters), by trial index."""
    known = set(rec.job_ids())
    orphans = [r for r in store.all() if r.sweep == rec.id and r.id not in known]
    found = {}
    for i, trial in enumerate(rec.trials):
        if trial.state is not TrialState.SUBMITTING:
            continue
        match = next((r for r in orphans if r.name == trial_name(rec, i) and r.parameters == trial.parameters), None)
        if match is not None:
            found[i] = match.id
            orphans.remove(match)
    return found


def _submit_first(store: JobStore, settings: Settings, rec: SweepRecord, event: Any) -> tuple[list[Any], list[int]]:
    """The events that say what became of the trials ``event`` asks to submit, whose jobs are made
    here, and those trials.  Each is marked in :func:`submitting_key` before its job is made:
    after a crash in between, the job found for it (same sweep, name and parameters) is adopted."""
    done = transition(rec, event)
    indexes = [i for a in done.actions if isinstance(a, SubmitTrials) for i in a.indexes]
    if not indexes:
        return [], []
    marks = submitting_key(rec.id)
    left = {int(i) for i in store.r.hkeys(marks)} & set(indexes)
    found = {i: job for i, job in _orphans(store, done.record).items() if i in left} if left else {}
    todo = [i for i in indexes if i not in found]
    if todo:
        store.r.hset(marks, mapping={str(i): 1 for i in todo})
    more = [TrialsSubmitted(jobs=found)] if found else []
    return more + _submit_trials(store, settings, done.record, todo), indexes


def _submit_trials(store: JobStore, settings: Settings, rec: SweepRecord, indexes: list[int]) -> list[Any]:
    """Make the jobs of the trials ``indexes`` (marked: a crash now is recovered, never a double
    submit) in one step (:func:`nbrunner.control.submit.submit_many`); if one of them cannot run,
    each is submitted alone, so that only that one is skipped.  The events saying what became of them."""
    if len(indexes) >= 2:
        try:
            created = submit.submit_many(store, settings, [_trial_request(settings, rec, i) for i in indexes],
                                         owner=rec.owner, groups=rec.groups)
        except NbrunnerError:
            created = None
        if created is not None:
            for job in created:
                _use_snapshot(settings, rec.id, job.id)
            return [TrialsSubmitted(jobs={i: j.id for i, j in zip(indexes, created)})]
    out: list[Any] = []
    for i in indexes:
        try:
            job = submit.submit(store, settings, _trial_request(settings, rec, i), owner=rec.owner, groups=rec.groups)
        except NbrunnerError as exc:  # e.g. the notebook was deleted meanwhile: this trial cannot run
            out.append(TrialNotSubmitted(index=i, error=str(exc)))
            continue
        # any other error (Redis went away) leaves the trial marked: the next pass adopts its job
        _use_snapshot(settings, rec.id, job.id)
        out.append(TrialsSubmitted(jobs={i: job.id}))
    return out


def _trial_request(settings: Settings, rec: SweepRecord, index: int) -> dict[str, Any]:
    """The job request of trial ``index``."""
    request = {"notebook": str(settings.workspace / rec.notebook), "parameters": rec.trials[index].parameters,
               "name": trial_name(rec, index), "sweep": rec.id, **rec.options}
    if rec.from_content:
        request.update(notebook=rec.notebook, content=_snapshot_text(settings, rec.id))
    return request


def _snapshot_text(settings: Settings, sweep_id: str) -> str:
    try:
        return snapshot_path(settings, sweep_id).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"the notebook snapshot of sweep {sweep_id} cannot be read ({exc.__class__.__name__})") \
            from None


def _use_snapshot(settings: Settings, sweep_id: str, job_id: str) -> None:
    """Run the notebook as it was when the sweep was created, even if it was edited since."""
    snap = snapshot_path(settings, sweep_id)
    target = settings.job_dir(job_id) / "input.ipynb"
    try:
        data = snap.read_bytes()
        if target.read_bytes() == data:
            return
        tmp = target.with_name(".input.ipynb.sweep")
        tmp.write_bytes(data)
        os.replace(tmp, target)
    except OSError:
        pass


# ---------------------------------------------------------------------------------------------
# early stopping, cancelling


def stop_trial(store: JobStore, settings: Settings, job_id: str, rung: int, metric: str | None = None) -> None:
    """Cancel a trial's job with the error ``stopped early at rung N``.

    The job's record also gets the last value of ``metric`` it wrote to ``metrics.jsonl``:
    ``nbrunner.record`` writes the file before the record, and a record update arriving after
    the cancel is dropped, so the record could miss the very value the decision was made on."""
    try:
        submit.cancel(store, job_id, settings, reason=f"stopped early at rung {rung}")
    except Conflict:  # it finished meanwhile
        return
    reported = reported_values(settings.job_dir(job_id), metric) if metric else []
    try:
        advance(store, job_id, StoppedEarly(rung=rung, metric=metric, value=reported[-1] if reported else None))
    except Refused:
        pass


def cancel_sweep(store: JobStore, sweep_id: str, settings: Settings | None = None) -> SweepRecord:
    """Cancel the trials not submitted yet and every unfinished trial job."""
    lock = _lock(store, sweep_id)
    if not lock.acquire(wait=SWEEP_LOCK_WAIT_S):
        raise Conflict(f"sweep {sweep_id} is busy, try again")
    try:
        rec = get_record(store, sweep_id)
        if rec.finished:
            raise Conflict(f"sweep {sweep_id} is already {rec.status.value}")
        return _apply(store, settings, rec, Cancel(at=utcnow(), jobs=_seen(store, rec)))
    finally:
        lock.release()


def sweep_ids(store: JobStore) -> list[str]:
    return store.r.zrange(SWEEPS, 0, -1)
