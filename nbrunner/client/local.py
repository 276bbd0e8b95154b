"""The backend of a cluster reached over its Redis: :class:`LocalBackend`.

What :class:`nbrunner.Cluster` and its handles ask of a cluster (the operations of
:class:`~nbrunner.control.api.ClusterAPI`, for this process's user, who sees and changes every
job of a cluster it can reach), carried out in this process.  :mod:`.remote` offers the same
methods over the REST API of an nbrunner service.
"""
from __future__ import annotations

import getpass
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from ..control import grants
from ..control.api import ClusterAPI
from ..control.job_files import copy_file, download_file, zip_dir
from ..control.registration import live_capacity
from ..core.config import Settings
from ..control.discovery import resolve
from ..core.identity import Caller, local_caller
from ..core.keys import LEASE
from ..control.store import JobStore, reachable
from .sweep import SweepState

if TYPE_CHECKING:
    from ..core.models import JobRecord
    from ..core.schedules import ScheduleRecord
    from ..core.sweeps.trials import SweepRecord


class LocalBackend:
    """A cluster's operations over its Redis: :class:`~.backend.Backend` (see the module docstring)."""

    def __init__(self, settings: Settings, store: JobStore | None):
        self.settings = settings
        self.api = ClusterAPI(settings, store)  # None: it connects on first use
        self.user = getpass.getuser()
        self.caller = local_caller(self.user)

    @classmethod
    def attach(cls, workspace: str | os.PathLike | None = None) -> "LocalBackend":
        """The cluster of ``workspace`` (``NBRUNNER_REDIS_URL``, ``--dir``, the cluster around the
        current directory, the only one running); NoCluster if none answers."""
        settings = resolve(workspace)
        return cls(settings, reachable(settings))

    @property
    def store(self) -> JobStore:
        return self.api.store

    @property
    def where(self) -> str:
        return str(self.settings.workspace)

    def _as(self, owner: str | None, groups: Sequence[str] = ()) -> Caller:
        """Whom a submission is made for: ``owner`` (default: this process's user) in ``groups``."""
        return Caller(name=owner or self.user, groups=tuple(groups), admin=True)

    # ---- jobs -----------------------------------------------------------------------------------
    def job(self, job_id: str) -> JobRecord:
        return self.store.get(job_id)

    def jobs(self, status: str | None = None, limit: int | None = None, cursor: str | None = None, *,
             schedule: str | None = None, sweep: str | None = None,
             owner: str | None = None) -> tuple[list[JobRecord], str | None]:
        """A page of jobs, newest first (``limit`` None: all), and the cursor of the next page."""
        caller = self.caller if owner is None else Caller(name=owner)  # a plain user: only theirs
        return self.api.jobs(caller, status, limit, cursor, schedule=schedule, sweep=sweep)

    def count(self, status: str | None = None) -> int:
        return self.api.count(self.caller, status)

    def job_changes(self) -> "JobChanges":
        """The job changes from now on (``nbrunner jobs --watch``), read from the event stream."""
        return JobChanges(self.store)

    def submit(self, request: dict[str, Any], owner: str | None = None, groups: Sequence[str] = ()) -> JobRecord:
        return self.api.submit(self._as(owner, groups), request, base=Path.cwd())

    def submit_many(self, requests: list[dict[str, Any]], owner: str | None = None,
                    groups: Sequence[str] = ()) -> list[JobRecord]:
        return self.api.submit_many(self._as(owner, groups), requests, base=Path.cwd())

    def cancel(self, job_id: str) -> JobRecord:
        return self.api.cancel(self.caller, job_id)

    def set_priority(self, job_id: str, priority: int) -> JobRecord:
        return self.api.set_priority(self.caller, job_id, priority)

    def rerun(self, job_id: str, parameters: dict[str, Any] | None = None) -> JobRecord:
        return self.api.rerun(self.caller, job_id, parameters)

    def purge(self, job_id: str) -> None:
        self.api.purge(self.caller, job_id)

    def job_dir(self, job_id: str) -> Path:
        return self.settings.job_dir(job_id)

    def log(self, job_id: str, offset: int = 0) -> tuple[str, int]:
        return self.api.log(self.caller, job_id, offset)

    def output_text(self, job_id: str) -> str:
        return self.api.output_text(self.caller, job_id)

    def metrics(self, job_id: str) -> list[dict[str, Any]]:
        return self.api.metrics(self.caller, job_id)

    def download(self, job_id: str, fmt: str, out) -> None:
        """Write the download of format ``fmt`` (see :func:`nbrunner.client.job.download`) to ``out``."""
        job_dir = self.job_dir(job_id)
        path = download_file(job_dir, job_id, fmt)
        if path is None:
            zip_dir(job_dir, out)
            return
        copy_file(path, out)

    def timeline(self, job_id: str) -> list[dict]:
        return grants.timeline(self.store.r, job_id)

    # ---- the cluster ----------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        return self.api.status()

    def accounts(self) -> dict[str, Any]:
        return self.api.accounts()

    def usage(self, by: str | None = None, since: str | None = None) -> dict[str, Any]:
        """GPU-hours per account or user per day (every job's: this user sees the whole cluster)."""
        return self.api.usage(self.caller, by, since)

    def reload_accounts(self) -> dict[str, Any]:
        from ..control.accounts import reload

        reload(self.store)
        return self.api.accounts()

    def wait_ready(self, workers: int, timeout: float) -> None:
        """Block until a scheduler is active and ``workers`` workers are registered."""
        deadline = time.monotonic() + timeout
        while len(live_capacity(self.store).workers) < workers or not self.store.r.exists(LEASE):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no scheduler or fewer than {workers} workers after {timeout} s")
            time.sleep(0.1)

    # ---- sweeps ---------------------------------------------------------------------------------
    def create_sweep(self, notebook: str | os.PathLike, spec: Any, owner: str | None = None,
                     **options: Any) -> SweepState:
        from ..control.sweeps import create_sweep

        return self._sweep_state(create_sweep(self.store, self.settings, notebook, spec, owner=owner,
                                              base=Path.cwd(), **options))

    def sweep(self, sweep_id: str) -> SweepState:
        return self._sweep_state(self.api.sweep_record(self.caller, sweep_id))

    def sweeps(self) -> list[SweepState]:
        return [self._sweep_state(rec) for rec in self.api.sweep_records(self.caller)]

    def cancel_sweep(self, sweep_id: str) -> SweepState:
        from ..control.sweeps import cancel_sweep

        return self._sweep_state(cancel_sweep(self.store, sweep_id, self.settings))

    def _sweep_state(self, rec: SweepRecord) -> SweepState:
        from ..control.sweeps import jobs_of
        from ..core.sweeps.leaderboard import leaderboard

        jobs = jobs_of(self.store, rec.job_ids())
        return SweepState(rec.id, rec.name, rec.status, [jobs[j] for j in rec.job_ids() if j in jobs],
                          leaderboard(rec, jobs))

    # ---- pipelines ------------------------------------------------------------------------------
    def create_pipeline(self, source: Any, base: Path, parameters: dict[str, Any] | None = None,
                        default_name: str = "pipeline") -> dict[str, Any]:
        return self.api.create_pipeline(self.caller, source, base=base, parameters=parameters,
                                        default_name=default_name)

    def pipeline(self, pipeline_id: str) -> dict[str, Any]:
        return self.api.pipeline(self.caller, pipeline_id)

    def pipelines(self) -> list[dict[str, Any]]:
        return self.api.pipelines(self.caller)

    def cancel_pipeline(self, pipeline_id: str) -> dict[str, Any]:
        return self.api.cancel_pipeline(self.caller, pipeline_id)

    def rerun_pipeline(self, pipeline_id: str, from_step: str | None = None) -> dict[str, Any]:
        return self.api.rerun_pipeline(self.caller, pipeline_id, from_step)

    # ---- schedules ------------------------------------------------------------------------------
    def create_schedule(self, request: dict[str, Any], owner: str | None = None) -> ScheduleRecord:
        return self.api.create_schedule(self._as(owner), request, base=Path.cwd())

    def schedule(self, schedule_id: str) -> ScheduleRecord:
        return self.api.schedule(self.caller, schedule_id)

    def schedules(self) -> list[ScheduleRecord]:
        return self.api.schedules(self.caller)

    def update_schedule(self, schedule_id: str, changes: dict[str, Any]) -> ScheduleRecord:
        return self.api.update_schedule(self.caller, schedule_id, changes)

    def delete_schedule(self, schedule_id: str) -> None:
        self.api.delete_schedule(self.caller, schedule_id)

    # ---- notifications --------------------------------------------------------------------------
    def notifications(self) -> dict[str, Any]:
        from ..control.notifications import user_settings

        return user_settings(self.store.r, self.user)

    def set_notifications(self, settings: dict[str, Any]) -> dict[str, Any]:
        from ..control.notifications import set_user_settings

        return set_user_settings(self.store.r, self.user, settings)

    def notification_log(self) -> list[dict[str, Any]]:
        from ..control.notifications import delivery_log

        return delivery_log(self.store.r, self.user)

    # ---- models ---------------------------------------------------------------------------------
    def register_model(self, job_id: str, name: str) -> dict[str, Any]:
        from ..serving.registry import register_model

        return register_model(self.settings, job_id, name)

    def models(self) -> list[dict[str, Any]]:
        from ..serving.registry import list_models

        return list_models(self.settings)


class JobChanges:
    """The job changes of a cluster's event stream after the moment it is made, in the push
    channel's form (``{"job": record}`` or ``{"id", "deleted": true}``)."""

    def __init__(self, store: JobStore):
        from ..control.changes import ChangeFeed

        self.feed = ChangeFeed(store)
        self.position = self.feed.position()

    def read(self, block_s: float) -> list[dict[str, Any]]:
        """The next changes, waiting up to ``block_s`` seconds for one ([] if none came)."""
        self.position, changes = self.feed.read(self.position, block_s=block_s or None)
        return [c.data for c in changes if c.kind == "job"]

    def close(self) -> None:
        pass
