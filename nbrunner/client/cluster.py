"""The Python face of nbrunner: :func:`setup_cluster`, :func:`connect`, :class:`Cluster`, :class:`Job`."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence


from ..control.api import ClusterAPI
from ..control.registration import live_capacity
from ..core.config import SETUP_READY_TIMEOUT_S, WAIT_READY_TIMEOUT_S, Settings
from ..core.discovery import resolve
from ..core.errors import NoCluster
from ..core.keys import LEASE
from ..core.models import PRIORITY_DEFAULT
from ..core.store import JobStore, reachable
from . import session
from .job import Job

if TYPE_CHECKING:  # imported on use: the CLI's read commands need neither submissions (pydantic) nor sweeps
    from .schedule import Schedule
    from .sweep import Sweep


class Cluster:
    """A connection to a running cluster; it also owns the processes if it started them."""

    def __init__(self, settings: Settings, store: JobStore, supervisor=None):
        self.settings = settings
        self.store = store
        self.supervisor = supervisor

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        return f"<Cluster {self.settings.workspace} {'owner' if self.supervisor else 'attached'}>"

    def submit(self, notebook: str | os.PathLike, parameters: dict[str, Any] | None = None, *,
               name: str | None = None, min_gpus: int = 0, max_gpus: int | None = None, priority: int = PRIORITY_DEFAULT,
               timeout: float | None = None, kernel: str | None = None, owner: str | None = None,
               groups: Sequence[str] = (), **extra: Any) -> Job:
        """Queue ``notebook`` with ``parameters``; returns its :class:`Job`.  ``owner`` and ``groups``:
        whose job it is (default: this process's user), and their groups (which may decide its account)."""
        request = {"notebook": str(notebook), "parameters": parameters if parameters is not None else {},
                   "name": name, "min_gpus": min_gpus, "max_gpus": max_gpus, "priority": priority,
                   "timeout": timeout, "kernel": kernel, **extra}
        from ..control import submit

        rec = submit.submit(self.store, self.settings, request, owner=owner, base=Path.cwd(), groups=groups)
        return Job(self, rec)

    def job(self, job_id: str) -> Job:
        return Job(self, self.store.get(job_id))

    def jobs(self, status: str | None = None, limit: int | None = None) -> list[Job]:
        """The jobs (in ``status``), oldest first; with ``limit``, only the newest ``limit`` of them."""
        if limit is None:
            return [Job(self, r) for r in self.store.all(status)]
        records, _ = self.store.page(status, limit)
        return [Job(self, r) for r in reversed(records)]

    def monitor(self, status: str | None = None, *, owner: str | None = None, sweep: Any = None,
                mine: bool = False, interval: float = 1.0):
        """A live ipywidgets table of this cluster's jobs (:class:`nbrunner.JobsMonitor`),
        filtered by ``status``, ``owner`` (``mine=True``: yours) and ``sweep``."""
        from .widgets import JobsMonitor

        return JobsMonitor(self, interval=interval, status=status, owner=owner, sweep=sweep, mine=mine)

    def status(self) -> dict[str, Any]:
        """Hosts, slots and who holds each, free GPUs and policy (the ``GET /cluster`` object)."""
        return ClusterAPI(self.settings, self.store).status()

    def accounts(self) -> dict[str, Any]:
        """The accounts sharing the GPUs, as ``GET /accounts`` answers (see ``nbrunner share``)."""
        return ClusterAPI(self.settings, self.store).accounts()

    def reload_accounts(self) -> dict[str, Any]:
        """Read the accounts file again (a bad file is refused, naming its line); the accounts."""
        from ..control.accounts import reload

        reload(self.store)
        return self.accounts()

    def sweep(self, notebook: str | os.PathLike, spec: Any, **kwargs: Any) -> Sweep:
        """Start a sweep of ``notebook`` over ``spec`` (see :mod:`nbrunner.core.sweeps.spec`)."""
        from .sweep import submit_sweep

        return submit_sweep(self, notebook, spec, **kwargs)

    def schedule(self, notebook: str | os.PathLike, parameters: dict[str, Any] | None = None, *,
                 cron: str | None = None, every: int | None = None, timezone: str = "UTC", overlap: str = "skip",
                 owner: str | None = None, **job_options: Any) -> Schedule:
        """Run ``notebook`` on a clock: ``cron`` (5 fields or @hourly/@daily/@weekly, in ``timezone``)
        or ``every`` seconds; each run is a job.  ``overlap="skip"``: no new run while the previous
        one is queued or running; ``"queue"``: run anyway.  ``job_options``: ``name``, ``min_gpus``,
        ``max_gpus``, ``priority``, ``timeout``."""
        from ..control.schedules import create_schedule
        from .schedule import Schedule

        request = {"notebook": str(notebook), "parameters": parameters if parameters is not None else {},
                   "cron": cron, "every": every, "timezone": timezone, "overlap": overlap,
                   **{k: v for k, v in job_options.items() if v is not None}}
        rec = create_schedule(self.store, self.settings, request, owner=owner, base=Path.cwd())
        return Schedule(self, rec.id, rec)

    def schedules(self) -> list[Schedule]:
        """Every schedule of the cluster, oldest first."""
        from ..control.schedules import list_schedules
        from .schedule import Schedule

        return [Schedule(self, r.id, r) for r in list_schedules(self.store)]

    def wait_ready(self, workers: int = 1, timeout: float = WAIT_READY_TIMEOUT_S) -> None:
        """Block until a scheduler is active and ``workers`` workers are registered."""
        deadline = time.monotonic() + timeout
        while len(live_capacity(self.store).workers) < workers or not self.store.r.exists(LEASE):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no scheduler or fewer than {workers} workers after {timeout} s")
            time.sleep(0.1)

    def shutdown(self) -> None:
        """Stop the processes this cluster started (nothing if it only attached)."""
        if self.supervisor is not None:
            self.supervisor.stop()
            self.supervisor = None
        session.forget(self)


def connect(workspace: str | os.PathLike | None = None) -> Cluster:
    """Attach to the cluster running in ``workspace`` (or ``NBRUNNER_REDIS_URL``)."""
    settings = resolve(workspace)  # NBRUNNER_REDIS_URL, --dir, the cluster around the cwd, the only one running
    cluster = Cluster(settings, reachable(settings))
    session.remember(cluster, replace=False)
    return cluster


def setup_cluster(gpus: int | str | None = None, workers: int = 1, workspace: str | os.PathLike | None = None,
                  policy: str | None = None, host: str | None = None, wait: bool = True,
                  accounts: str | os.PathLike | None = None) -> Cluster:
    """Start a local cluster (embedded Redis, scheduler, ``workers`` workers sharing ``gpus``
    slots; ``gpus="auto"`` finds GPUs), or join the one already running in the workspace.
    ``accounts``: an accounts file (see README, "Accounts") the GPUs are shared by.
    Use as a context manager, or call ``.shutdown()``."""
    from ..execution.supervisor import Supervisor

    settings = Settings.load(workspace)
    try:
        store = reachable(settings)
        if store.r.exists(LEASE):
            if accounts is not None:
                from ..control.accounts import publish

                publish(store, str(accounts))
            cluster = Cluster(settings, store)
            session.remember(cluster)
            return cluster
    except NoCluster:
        pass
    if gpus == "auto":
        slots = None
    else:
        slots = int(gpus or 0)
        if slots < 0:
            raise ValueError("gpus must be >= 0 or 'auto'")
    if workers < 1:
        raise ValueError("workers must be >= 1")
    sup = Supervisor(settings, gpus=slots, workers=workers, policy=policy, host=host,
                     accounts=None if accounts is None else str(accounts)).start()
    try:
        cluster = Cluster(settings, reachable(settings), sup)
        if wait:
            cluster.wait_ready(workers, timeout=SETUP_READY_TIMEOUT_S)
    except BaseException:
        sup.stop()
        raise
    session.remember(cluster)
    return cluster


def default_cluster() -> Cluster:
    """The cluster this process connected to or set up first, else a new connection."""
    return session.default_cluster()


def print_jobs_summary(cluster: Cluster | None = None, status: str | None = None, limit: int | None = None) -> None:
    """Print a table of the cluster's jobs (the newest ``limit``; None: all) and a totals line."""
    from .render import jobs_table, totals_line
    from rich.console import Console

    cluster = cluster or default_cluster()
    records = [j.record for j in cluster.jobs(status, limit=limit)]
    console = Console()
    console.print(jobs_table(records))
    console.print(totals_line(records))

