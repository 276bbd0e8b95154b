"""Schedules in Redis: create, edit, delete, and :func:`fire_due` on every scheduler pass.

A schedule record is JSON at ``nbrunner:schedule:<id>``, listed in the sorted set
``nbrunner:schedules`` (by creation time); like job records they never expire and persist
with Redis.  Each run is an ordinary job (:func:`nbrunner.control.submit.submit`) with
``schedule`` set, owned by the schedule's owner.

What changes and when is decided by the schedule's machine
(:mod:`nbrunner.core.schedule_lifecycle`); this module loads the record, applies the transition in
a WATCH/MULTI compare-and-set and carries out the actions.  At most one run per fire time,
whatever number of schedulers call :func:`fire_due`: a fire time is claimed by the ``Fire``
transition, which is legal only for the current ``next_run_at``, and only the process whose
transaction moved it submits the run.  ``next_run_at`` moves to the first
fire time after now, so fire times missed while no scheduler ran give one run.  A crash
between the claim and the submit loses that one run (never doubles it).
"""
from __future__ import annotations

import getpass
import logging
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import redis

from ..core.config import EVENTS_MAXLEN, Settings
from ..core.errors import Conflict, InvalidRequest, NbrunnerError, NotFound, one_line
from ..core.fence import Refused
from ..core.keys import EVENTS, SCHEDULES, schedule_key
from ..core.machine import Transition
from ..core.models import check_content_name, parse_time
from ..core.schedule_lifecycle import Delete, Edit, Fire, Ran, Removed, SubmitRun, created, transition
from ..core.schedules import EDITABLE, ScheduleRecord, ScheduleSpec, is_due
from .store import JobStore
from . import submit
from .record_lock import optimistic

log = logging.getLogger("nbrunner.schedules")


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _emit(store: JobStore, kind: str, schedule_id: str, **extra: str) -> None:
    store.r.xadd(EVENTS, {"type": kind, "schedule": schedule_id, **extra}, maxlen=EVENTS_MAXLEN, approximate=True)


def _check_notebook(settings: Settings, notebook: str, base: Path | None, content: Any = None) -> tuple[str, str | None]:
    """The notebook's workspace-relative path (with ``content``: ``notebook`` as given) and the
    text of its snapshot (None without content), after the checks a job submit makes."""
    if content is None:
        path = submit.resolve_notebook(settings, notebook, base)
        shown = submit.relative_to_workspace(settings, path)
        checked = submit.check_notebook(path, shown)
    else:
        shown = check_content_name(notebook)
        checked = submit.check_content(content, shown)
    submit.check_notebook_kernel(checked.nb, shown)
    return shown, None if content is None else checked.text


def snapshot_path(settings: Settings, schedule_id: str) -> Path:
    """Where the notebook of a schedule made with ``content`` is kept: every run runs it."""
    return settings.storage / "schedules" / schedule_id / "input.ipynb"


def _write_snapshot(settings: Settings, schedule_id: str, text: str) -> None:
    path = snapshot_path(settings, schedule_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".input.ipynb.{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _snapshot_text(settings: Settings, rec: ScheduleRecord) -> str:
    try:
        return snapshot_path(settings, rec.id).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"the notebook snapshot of schedule {rec.id} cannot be read "
                             f"({exc.__class__.__name__})") from None


def create_schedule(store: JobStore, settings: Settings, request: dict[str, Any], owner: str | None = None,
                    base: Path | None = None, groups: Sequence[str] = ()) -> ScheduleRecord:
    """Validate ``request`` (``{notebook, cron or every, timezone?, overlap?, parameters?, name?,
    min_gpus?, max_gpus?, priority?, timeout?, content?}``) and store the schedule.  With
    ``content`` (the notebook's JSON object or text) every run runs that content, kept as the
    schedule's snapshot, and ``notebook`` names it.

    Raises:
        InvalidRequest: a bad field, a notebook that cannot run; nothing is stored."""
    if isinstance(request, dict) and "paused" in request:
        raise InvalidRequest("unknown field 'paused' (pause a schedule after creating it)")
    pipeline = None
    if isinstance(request, dict) and "pipeline" in request:  # a schedule of a pipeline
        from . import pipeline_schedules

        pipeline_schedules.check_request(request)
        pipeline = pipeline_schedules.prepare(settings, request["pipeline"], base)
        request = {**{k: v for k, v in request.items() if k != "pipeline"}, "notebook": f"pipeline {pipeline[0]}"}
        request.setdefault("name", pipeline[0])
    request, content = submit.split_content(request)
    spec = ScheduleSpec.parse(request)
    notebook, snapshot = (spec.notebook, None) if pipeline else _check_notebook(settings, spec.notebook, base, content)
    now = _now()
    for _ in range(10):
        rec = created(spec, submit.new_id(), now, notebook=notebook, owner=owner or getpass.getuser(), groups=list(groups),
                      from_content=snapshot is not None, pipeline=pipeline[0] if pipeline else None)
        if store.r.exists(schedule_key(rec.id)):
            continue
        if pipeline:
            from .pipeline_schedules import keep

            keep(settings, rec.id, pipeline[1])
        if snapshot is not None:  # before the record: a run may be due at once
            _write_snapshot(settings, rec.id, snapshot)
        if _apply(store, rec.id, None, new=(rec, now.timestamp())) is not None:
            break
    else:  # pragma: no cover - 36^8 ids
        raise Conflict("could not allocate a schedule id")
    _emit(store, "schedule", rec.id)  # wakes the scheduler: its next pass knows the new fire time
    return rec


def _load(schedule_id: str, raw: str | None) -> ScheduleRecord:
    if raw is None:
        raise NotFound(f"no schedule {schedule_id!r}")
    try:
        return ScheduleRecord.model_validate_json(raw)
    except Exception as exc:  # noqa: BLE001 - an unreadable record: reported as missing, never a 500
        raise NotFound(f"schedule {schedule_id!r} has a record that cannot be read ({exc.__class__.__name__})") from None


def get_schedule(store: JobStore, schedule_id: str) -> ScheduleRecord:
    if not isinstance(schedule_id, str):
        raise NotFound(f"no schedule {schedule_id!r}")
    return _load(schedule_id, store.r.get(schedule_key(schedule_id)))


def list_schedules(store: JobStore) -> list[ScheduleRecord]:
    """Every readable schedule, oldest first."""
    ids = store.r.zrange(SCHEDULES, 0, -1)
    out = []
    for sid, raw in zip(ids, store.r.mget([schedule_key(i) for i in ids]) if ids else []):
        try:
            out.append(_load(sid, raw))
        except NotFound:
            if raw is None:
                _apply(store, sid, None)
            else:
                log.warning("schedule %s: its record cannot be read", sid)
    return out


def _apply(store: JobStore, schedule_id: str, event: Any,
           new: tuple[ScheduleRecord, float] | None = None) -> Transition[ScheduleRecord] | None:
    """The one write of a schedule's keys: apply ``event`` to the stored record in one
    compare-and-set (:func:`~nbrunner.control.record_lock.optimistic`): the record is written
    (removed, for a Delete) only if nobody changed it meanwhile, else read and tried again.
    Raises NotFound, Refused (nothing written) or the transition's InvalidRequest.

    With ``new`` (a record and its listing score): store that new schedule, None if its id is
    taken.  With neither: drop the schedule from the listing if its record is gone (None)."""
    key = schedule_key(schedule_id)

    def step(p: Any) -> tuple[Transition[ScheduleRecord] | None, Any]:
        raw = p.get(key)
        if new is not None or event is None:
            if raw is not None:
                return None, None
            if new is None:
                return None, lambda q: q.zrem(SCHEDULES, schedule_id)

            def store_new(q: Any) -> None:
                q.set(key, new[0].model_dump_json())
                q.zadd(SCHEDULES, {schedule_id: new[1]})

            return Transition(new[0]), store_new
        done = transition(_load(schedule_id, raw), event)

        def writes(q: Any) -> None:
            if done.record is None:
                q.delete(key)
                q.zrem(SCHEDULES, schedule_id)
            else:
                q.set(key, done.record.model_dump_json())

        return done, writes

    return optimistic(store.r, [key], step)


def update_schedule(store: JobStore, settings: Settings, schedule_id: str, changes: dict[str, Any],
                    base: Path | None = None) -> ScheduleRecord:
    """Change some of :data:`nbrunner.core.schedules.EDITABLE`; a new clock (or a resume)
    starts counting from now.  Setting ``cron`` clears ``every`` and the other way round.

    A new ``notebook`` may come with its ``content``, as in :func:`create_schedule`.

    Raises:
        InvalidRequest: an unknown field or a bad value; nothing is changed.
        NotFound: no such schedule."""
    if not isinstance(changes, dict):
        raise InvalidRequest("a schedule change must be a JSON object")
    changes, content = submit.split_content(changes)
    if content is not None and "notebook" not in changes:
        raise InvalidRequest("content comes with the notebook it names: give both")
    for key in changes:
        if key not in EDITABLE:
            raise InvalidRequest(f"unknown field {key!r} (editable: {', '.join(EDITABLE)})")
    if "paused" in changes and not isinstance(changes["paused"], bool):
        raise InvalidRequest("paused must be true or false")
    changes = dict(changes)
    if changes.get("cron") is not None and "every" not in changes:
        changes["every"] = None
    if changes.get("every") is not None and "cron" not in changes:
        changes["cron"] = None
    snapshot = None
    if "notebook" in changes:
        if get_schedule(store, schedule_id).pipeline:
            raise InvalidRequest("a schedule of a pipeline has no notebook to change")
        if not isinstance(changes["notebook"], str):
            raise InvalidRequest("notebook must be a path")
        changes["notebook"], snapshot = _check_notebook(settings, changes["notebook"], base, content)
        get_schedule(store, schedule_id)
        if snapshot is not None:
            _write_snapshot(settings, schedule_id, snapshot)

    rec = _apply(store, schedule_id, Edit(changes=changes, at=_now(), from_content=snapshot is not None)).record
    _emit(store, "schedule", schedule_id)
    return rec


def delete_schedule(store: JobStore, schedule_id: str, settings: Settings | None = None) -> None:
    """Remove the schedule (its runs stay, as jobs) and, with ``settings``, its notebook snapshot.
    Raises NotFound."""
    for action in _apply(store, schedule_id, Delete()).actions:
        if isinstance(action, Removed):
            if settings is not None:
                shutil.rmtree(snapshot_path(settings, schedule_id).parent, ignore_errors=True)
            _emit(store, "schedule", schedule_id, owner=action.owner)  # the record is gone: its owner is told


def runs_of(store: JobStore, schedule_id: str) -> list:
    """The job records of a schedule's runs, newest first."""
    return store.page(where=lambda r: r.schedule == schedule_id)[0]


# ---------------------------------------------------------------------------------------------
# firing


def _claim(store: JobStore, rec: ScheduleRecord, now: datetime) -> Transition[ScheduleRecord] | None:
    """Fire the due time ``next_run_at`` of ``rec``, if it is still the one we read; None if another
    scheduler claimed it (or the schedule changed) first."""
    active = rec.overlap == "skip" and _previous_run_active(store, rec)
    try:
        return _apply(store, rec.id, Fire(due=rec.next_run_at, at=now, previous_active=active, last_job=rec.last_job))
    except (NotFound, Refused):  # deleted, claimed or changed meanwhile
        return None


def _previous_run_active(store: JobStore, rec: ScheduleRecord) -> bool:
    if not rec.last_job:
        return False
    if rec.pipeline:
        from .pipeline_schedules import run_active

        return run_active(store, rec.last_job)
    job = store.find(rec.last_job)
    return job is not None and not job.finished


def _fire(store: JobStore, settings: Settings, claimed: Transition[ScheduleRecord]) -> str | None:
    """Carry out a claimed fire time: submit its run (or note the skip); returns the job id or None."""
    rec = claimed.record
    if not any(isinstance(a, SubmitRun) for a in claimed.actions):
        log.info("schedule %s: %s", rec.id, rec.last_error)
        _emit(store, "schedule", rec.id)
        return None
    try:
        if rec.pipeline:
            from .pipeline_schedules import fire

            job_id, error = fire(store, settings, rec.id, rec.owner, rec.groups), None
        else:
            request = {**rec.spec().job_request(), "schedule": rec.id, "name": rec.name}
            if rec.from_content:
                request["content"] = _snapshot_text(settings, rec)
            job_id, error = submit.submit(store, settings, request, owner=rec.owner, groups=rec.groups).id, None
    except NbrunnerError as exc:  # the notebook was removed or broken since: say why, keep the schedule
        job_id, error = None, one_line(exc)
        log.warning("schedule %s: no run: %s", rec.id, error)
    try:
        _apply(store, rec.id, Ran(job=job_id, error=error))
    except NotFound:
        return job_id
    _emit(store, "schedule", rec.id)  # its next and last run moved: the views of schedules follow
    return job_id


def fire_due(store: JobStore, settings: Settings, now: datetime | None = None) -> tuple[list[str], datetime | None]:
    """Run every due schedule once; returns (the jobs submitted, the earliest next fire time).

    Safe to call from several schedulers at once (see the module docstring)."""
    now = now or _now()
    submitted: list[str] = []
    earliest: datetime | None = None
    for rec in list_schedules(store):
        try:
            if is_due(rec, now):
                claimed = _claim(store, rec, now)
                if claimed is not None:
                    job_id = _fire(store, settings, claimed)
                    if job_id:
                        submitted.append(job_id)
                    rec = claimed.record
                else:
                    rec = get_schedule(store, rec.id)
            at = None if rec.paused else parse_time(rec.next_run_at)
            if at is not None and (earliest is None or at < earliest):
                earliest = at
        except redis.RedisError:
            raise
        except Exception as exc:  # noqa: BLE001 - one bad schedule must never stop the pass
            log.warning("schedule %s: %s: %s", rec.id, exc.__class__.__name__, exc)
    return submitted, earliest
