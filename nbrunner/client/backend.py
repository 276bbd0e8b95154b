"""The one contract of a cluster's backend: :class:`Backend`.

A :class:`~nbrunner.client.cluster.Cluster` and its handles (jobs, sweeps, schedules, the CLI
and the widgets) do all their work through a backend, and there are two:
:class:`~.local.LocalBackend` over the cluster's Redis, and :class:`~.remote.RemoteBackend` over
an nbrunner service's REST API.  Both implement exactly this protocol, with the same parameters;
``tests/client/test_backend_contract.py`` holds them to it (the signatures, and the behaviour
against a real cluster directly and through a real service).  What only one side can do
(``LocalBackend.attach``, a local ``store`` and ``settings``) raises a one-line
:class:`~nbrunner.core.errors.NbrunnerError` on the other side, so callers need not ask which
backend they hold.

Conventions: records come back as the core's records (:class:`~nbrunner.core.models.JobRecord`,
:class:`~nbrunner.core.schedules.ScheduleRecord`) or :class:`~.sweep.SweepState`; errors are the
core's (``NotFound`` for an unknown id or another user's object, ``InvalidRequest`` for bad
input, ``Conflict``), never a transport's; ``owner``/``groups`` name whom a submission is made
for, which only a backend acting for an administrator (the local one) may choose.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol, Sequence, runtime_checkable

if TYPE_CHECKING:
    from ..core.config import Settings
    from ..core.models import JobRecord
    from ..core.schedules import ScheduleRecord
    from ..control.store import JobStore
    from .sweep import SweepState


@runtime_checkable
class JobChangeFeed(Protocol):
    """The job changes of a cluster from the moment the feed is made (``nbrunner jobs --watch``)."""

    def read(self, block_s: float) -> list[dict[str, Any]]:
        """The next changes (``{"job": record}`` or ``{"id", "deleted": true}``), waiting up to
        ``block_s`` seconds for one; ``[]`` if none came."""

    def close(self) -> None:
        """Stop following; the feed reads nothing more."""


@runtime_checkable
class Backend(Protocol):
    """What a cluster does for its client, whichever way it is reached (see the module docstring)."""

    @property
    def where(self) -> str:
        """Where the cluster is: its workspace, or the service's URL (for messages)."""

    @property
    def settings(self) -> Settings:
        """The cluster's settings (local only; a service holds its own)."""

    @property
    def store(self) -> JobStore:
        """The cluster's job store over Redis (local only)."""

    # ---- jobs
    def job(self, job_id: str) -> JobRecord:
        """One job's record. Raises: NotFound."""

    def jobs(self, status: str | None = None, limit: int | None = None, cursor: str | None = None, *,
             schedule: str | None = None, sweep: str | None = None,
             owner: str | None = None) -> tuple[list[JobRecord], str | None]:
        """A page of jobs, newest first (``limit`` None: all), and the cursor of the next page."""

    def count(self, status: str | None = None) -> int:
        """How many jobs the caller sees (in ``status``)."""

    def job_changes(self) -> JobChangeFeed:
        """The job changes from now on."""

    def submit(self, request: dict[str, Any], owner: str | None = None, groups: Sequence[str] = ()) -> JobRecord:
        """Validate and queue one job (``request``: the body of ``POST /jobs``). Raises:
        InvalidRequest, NotFound (the notebook)."""

    def submit_many(self, requests: list[dict[str, Any]], owner: str | None = None,
                    groups: Sequence[str] = ()) -> list[JobRecord]:
        """Validate and queue several jobs, all or none (the first bad one raises, its message
        naming it, ``jobs[i]: ...``); the records, in order."""

    def cancel(self, job_id: str) -> JobRecord:
        """Cancel a queued or running job. Raises: NotFound, Conflict (already finished)."""

    def set_priority(self, job_id: str, priority: int) -> JobRecord:
        """Change a job's priority (1..10000). Raises: NotFound, InvalidRequest."""

    def rerun(self, job_id: str, parameters: dict[str, Any] | None = None) -> JobRecord:
        """A new job from the job's input snapshot and options, ``parameters`` merged."""

    def purge(self, job_id: str) -> None:
        """Remove a finished job's record and directory. Raises: NotFound, Conflict (not finished)."""

    def job_dir(self, job_id: str) -> Path:
        """The job's directory (local only)."""

    def log(self, job_id: str, offset: int = 0) -> tuple[str, int]:
        """The job's log from byte ``offset`` on, and the offset to read from next."""

    def output_text(self, job_id: str) -> str:
        """The executed notebook, as JSON text."""

    def metrics(self, job_id: str) -> list[dict[str, Any]]:
        """Every row the job recorded (``metrics.jsonl``), in order."""

    def download(self, job_id: str, fmt: str, out: BinaryIO) -> None:
        """Write the job's download (``ipynb``, ``html`` or ``zip``) to ``out``."""

    def timeline(self, job_id: str) -> list[dict]:
        """The points of the job's GPU timeline (what it held, when), oldest first."""

    # ---- the cluster
    def status(self) -> dict[str, Any]:
        """The ``GET /cluster`` object."""

    def accounts(self) -> dict[str, Any]:
        """The ``GET /accounts`` object."""

    def reload_accounts(self) -> dict[str, Any]:
        """Read the accounts file again; the ``GET /accounts`` object after it."""

    def wait_ready(self, workers: int, timeout: float) -> None:
        """Block until ``workers`` workers serve the cluster. Raises: TimeoutError."""

    def usage(self, by: str | None = None, since: str | None = None) -> dict[str, Any]:
        """GPU-hours per account or user per day (the ``GET /usage`` object). Raises: InvalidRequest."""

    # ---- sweeps
    def create_sweep(self, notebook: str | os.PathLike, spec: Any, owner: str | None = None,
                     **options: Any) -> SweepState:
        """Expand ``spec`` into trials and submit them. Raises: InvalidRequest."""

    def sweep(self, sweep_id: str) -> SweepState:
        """One sweep, its trials and leaderboard. Raises: NotFound."""

    def sweeps(self) -> list[SweepState]:
        """Every sweep the caller sees."""

    def cancel_sweep(self, sweep_id: str) -> SweepState:
        """Cancel a sweep's unfinished trials."""

    # ---- pipelines
    def create_pipeline(self, source: Any, base: Path, parameters: dict[str, Any] | None = None,
                        default_name: str = "pipeline") -> dict[str, Any]:
        """Check a pipeline file's content (notebooks relative to ``base``) and start it; its
        record. Raises: InvalidRequest (nothing is created)."""

    def pipeline(self, pipeline_id: str) -> dict[str, Any]:
        """One pipeline's record. Raises: NotFound."""

    def pipelines(self) -> list[dict[str, Any]]:
        """Every pipeline the caller sees."""

    def cancel_pipeline(self, pipeline_id: str) -> dict[str, Any]:
        """Cancel running steps, skip pending ones."""

    def rerun_pipeline(self, pipeline_id: str, from_step: str | None = None) -> dict[str, Any]:
        """A new pipeline reusing the completed steps before ``from_step``."""

    # ---- schedules
    def create_schedule(self, request: dict[str, Any], owner: str | None = None) -> ScheduleRecord:
        """Record a schedule (``request``: the body of ``POST /schedules``). Raises: InvalidRequest."""

    def schedule(self, schedule_id: str) -> ScheduleRecord:
        """One schedule. Raises: NotFound."""

    def schedules(self) -> list[ScheduleRecord]:
        """Every schedule the caller sees."""

    def update_schedule(self, schedule_id: str, changes: dict[str, Any]) -> ScheduleRecord:
        """Pause, resume or change a schedule."""

    def delete_schedule(self, schedule_id: str) -> None:
        """Delete a schedule (its runs stay)."""

    # ---- notifications (the caller's own)
    def notifications(self) -> dict[str, Any]:
        """The caller's notification settings (``{"targets", "on"}``)."""

    def set_notifications(self, settings: dict[str, Any]) -> dict[str, Any]:
        """Replace the caller's notification settings. Raises: InvalidRequest (a target not allowed)."""

    def notification_log(self) -> list[dict[str, Any]]:
        """The caller's deliveries, newest first (targets' secrets masked)."""

    # ---- models
    def register_model(self, job_id: str, name: str) -> dict[str, Any]:
        """Give a job's saved model ``name`` and the next version."""

    def models(self) -> list[dict[str, Any]]:
        """Every registered model version."""


def operations() -> dict[str, Any]:
    """The protocol's members (name -> the attribute on :class:`Backend`), properties included."""
    skip = {"__init__", "__subclasshook__", "__class_getitem__", "__init_subclass__"}
    return {name: member for name, member in vars(Backend).items()
            if not name.startswith("_") and name not in skip}
