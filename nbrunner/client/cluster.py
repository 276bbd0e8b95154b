"""The Python face of nbrunner: :func:`setup_cluster`, :func:`connect`, :class:`Cluster`, :class:`Job`.

A :class:`Cluster` does its work through a backend: :class:`~.local.LocalBackend` over the
cluster's Redis, or, with ``NBRUNNER_SERVICE_URL`` set, :class:`~.remote.RemoteBackend` over the
REST API of an nbrunner service (no Redis in this process).  Both implement one protocol,
:class:`~.backend.Backend`, so ``Cluster``, ``Job``, ``Sweep`` and ``Schedule`` behave alike on either.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Sequence

from ..core.config import SETUP_READY_TIMEOUT_S, SERVICE_URL, WAIT_READY_TIMEOUT_S, Settings, service_token
from ..core.errors import InvalidRequest, NbrunnerError, NoCluster
from ..core.models import PRIORITY_DEFAULT
from . import session
from .job import Job

if TYPE_CHECKING:  # imported on use: the CLI's read commands need neither submissions (pydantic) nor sweeps
    from ..control.store import JobStore
    from .backend import Backend
    from .schedule import Schedule
    from .sweep import Sweep


class Cluster:
    """A connection to a running cluster; it also owns the processes if it started them.

    ``Cluster(settings, store)`` works over Redis; ``Cluster(backend=...)`` over any backend
    (what :func:`connect` makes from ``NBRUNNER_SERVICE_URL``)."""

    def __init__(self, settings: Settings | None = None, store: JobStore | None = None, supervisor=None, *,
                 backend: Backend | None = None):
        if backend is None:
            from .local import LocalBackend

            backend = LocalBackend(settings, store)
        self.backend = backend
        self.supervisor = supervisor

    @property
    def settings(self) -> Settings:
        """Where the cluster lives (a cluster reached over Redis)."""
        return self.backend.settings

    @property
    def store(self) -> JobStore:
        """The cluster's job records in Redis (a cluster reached over Redis)."""
        return self.backend.store

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        return f"<Cluster {self.backend.where} {'owner' if self.supervisor else 'attached'}>"

    def submit(self, notebook: str | os.PathLike, parameters: dict[str, Any] | None = None, *,
               name: str | None = None, min_gpus: int = 0, max_gpus: int | None = None, priority: int = PRIORITY_DEFAULT,
               timeout: float | None = None, kernel: str | None = None, owner: str | None = None,
               groups: Sequence[str] = (), **extra: Any) -> Job:
        """Queue ``notebook`` with ``parameters``; returns its :class:`Job`.  ``owner`` and ``groups``:
        whose job it is (default: this process's user), and their groups (which may decide its account).
        ``max_gpus`` defaults to ``min_gpus`` (0: no GPU); a notebook that trains with ElasticTrainer
        and may hold at most one GPU gets a :class:`~nbrunner.client.advice.SingleLearnerWarning`.
        ``extra``: the other job options (``language``, ``cwd``, ``report_mode``, ``retries``, ...), e.g.
        ``inputs=["data/"]`` (files or folders beside the notebook, copied into the job's working
        directory) or ``notify=["mailto:me@example.org"]``."""
        request = _request(notebook, parameters, name=name, min_gpus=min_gpus, max_gpus=max_gpus, priority=priority,
                           timeout=timeout, kernel=kernel, **extra)
        job = Job(self, self.backend.submit(request, owner, groups))
        from .advice import warn_single_learner

        try:
            roots = [self.backend.settings.workspace]
        except NbrunnerError:  # through a service: no local workspace
            roots = []
        warn_single_learner(notebook, job.record.max_gpus, roots)  # ElasticTrainer with max_gpus <= 1: one learner
        return job

    def submit_many(self, jobs: Sequence[dict[str, Any] | str | os.PathLike], *, owner: str | None = None,
                    groups: Sequence[str] = ()) -> list[Job]:
        """Queue several jobs at once, all or none; returns their :class:`Job` handles, in order.  Each
        item is a notebook path, or a dict of :meth:`submit`'s arguments (``{"notebook": ...,
        "parameters": {...}, "max_gpus": ...}``).  One bad item raises (its message names it,
        ``jobs[i]: ...``) and none is queued."""
        requests = []
        for i, item in enumerate(jobs):
            if isinstance(item, (str, os.PathLike)):
                item = {"notebook": item}
            if not isinstance(item, dict) or "notebook" not in item:
                raise InvalidRequest(f"jobs[{i}]: a job is a notebook path or a dict with 'notebook'")
            requests.append(_request(**item))
        return [Job(self, r) for r in self.backend.submit_many(requests, owner, groups)]

    def job(self, job_id: str) -> Job:
        return Job(self, self.backend.job(job_id))

    def jobs(self, status: str | None = None, limit: int | None = None, *, sweep: Any = None) -> list[Job]:
        """The jobs (in ``status``), oldest first; with ``limit``, only the newest ``limit`` of them;
        with ``sweep`` (a :class:`Sweep` or its id), only that sweep's trials."""
        sweep_id = getattr(sweep, "id", sweep)
        records, _ = self.backend.jobs(status, limit, sweep=sweep_id)
        return [Job(self, r) for r in reversed(records)]

    def monitor(self, status: str | None = None, *, owner: str | None = None, sweep: Any = None,
                mine: bool = False, interval: float = 1.0):
        """A live ipywidgets table of this cluster's jobs (:class:`nbrunner.JobsMonitor`),
        filtered by ``status``, ``owner`` (``mine=True``: yours) and ``sweep``."""
        from .widgets import JobsMonitor

        return JobsMonitor(self, interval=interval, status=status, owner=owner, sweep=sweep, mine=mine)

    def status(self) -> dict[str, Any]:
        """Hosts, slots and who holds each, free GPUs and policy (the ``GET /cluster`` object)."""
        return self.backend.status()

    def accounts(self) -> dict[str, Any]:
        """The accounts sharing the GPUs, as ``GET /accounts`` answers (see ``nbrunner share``)."""
        return self.backend.accounts()

    def reload_accounts(self) -> dict[str, Any]:
        """Read the accounts file again (a bad file is refused, naming its line); the accounts."""
        return self.backend.reload_accounts()

    def sweep(self, notebook: str | os.PathLike, spec: Any = None, *, owner: str | None = None,
              **options: Any) -> Sweep:
        """Start a sweep of ``notebook`` over ``spec`` (see :mod:`nbrunner.core.sweeps.spec`);
        ``options``: job fields for every trial (``name``, ``min_gpus``, ``max_gpus``, ``priority``,
        ``timeout``, ``kernel``).  Without ``spec``, the first argument is a sweep's id and the
        existing sweep is returned (``cluster.sweep("3f9a...")``); an unknown id is NotFound."""
        from .sweep import Sweep

        if spec is None:
            if owner is not None or options:
                raise TypeError("cluster.sweep(ID) takes no options; to start a sweep pass a spec")
            return Sweep(self, str(notebook))
        state = self.backend.create_sweep(notebook, spec, owner, **options)
        return Sweep(self, state.id, state)

    def sweeps(self) -> list[Sweep]:
        """Every sweep the caller sees, oldest first."""
        from .sweep import list_sweeps

        return list_sweeps(self)

    def pipeline(self, source: str | os.PathLike | dict[str, Any], parameters: dict[str, Any] | None = None):
        """Run a pipeline (a file path or a dict; docs/pipelines.md); ``parameters`` override the
        file's, ``{"STEP.NAME": value}``.  Returns a :class:`~nbrunner.client.pipeline.Pipeline`."""
        from .pipeline import Pipeline, load_source

        data, base, name = load_source(source)
        return Pipeline(self, self.backend.create_pipeline(data, base, parameters, name))

    def pipelines(self) -> list:
        """Every pipeline of the cluster the caller sees, newest first."""
        from .pipeline import Pipeline

        return [Pipeline(self, rec) for rec in self.backend.pipelines()]

    def schedule(self, notebook: str | os.PathLike | None = None, parameters: dict[str, Any] | None = None, *,
                 cron: str | None = None, every: int | None = None, timezone: str = "UTC", overlap: str = "skip",
                 owner: str | None = None, **job_options: Any) -> Schedule:
        """Run ``notebook`` on a clock: ``cron`` (5 fields or @hourly/@daily/@weekly, in ``timezone``)
        or ``every`` seconds; each run is a job.  ``overlap="skip"``: no new run while the previous
        one is queued or running; ``"queue"``: run anyway.  ``job_options``: ``name``, ``min_gpus``,
        ``max_gpus``, ``priority``, ``timeout``.  ``pipeline=PATH_OR_DICT`` instead of ``notebook``:
        each run is a pipeline (docs/pipelines.md)."""
        from .schedule import Schedule

        if notebook is None and "pipeline" in job_options:  # a schedule of a pipeline (a path or a dict)
            from .pipeline import pipeline_request

            request = {"pipeline": pipeline_request(job_options.pop("pipeline")), "cron": cron, "every": every,
                       "timezone": timezone, "overlap": overlap, **{k: v for k, v in job_options.items() if v is not None}}
            rec = self.backend.create_schedule(request, owner)
            return Schedule(self, rec.id, rec)
        request = {"notebook": str(notebook), "parameters": parameters if parameters is not None else {},
                   "cron": cron, "every": every, "timezone": timezone, "overlap": overlap,
                   **{k: v for k, v in job_options.items() if v is not None}}
        rec = self.backend.create_schedule(request, owner)
        return Schedule(self, rec.id, rec)

    def schedules(self) -> list[Schedule]:
        """Every schedule of the cluster, oldest first."""
        from .schedule import Schedule

        return [Schedule(self, r.id, r) for r in self.backend.schedules()]

    def wait_ready(self, workers: int = 1, timeout: float = WAIT_READY_TIMEOUT_S) -> None:
        """Block until a scheduler is active and ``workers`` workers are registered."""
        self.backend.wait_ready(workers, timeout)

    def shutdown(self) -> None:
        """Stop the processes this cluster started (nothing if it only attached)."""
        if self.supervisor is not None:
            self.supervisor.stop()
            self.supervisor = None
        session.forget(self)


def _request(notebook: str | os.PathLike, parameters: dict[str, Any] | None = None, *, name: str | None = None,
             min_gpus: int = 0, max_gpus: int | None = None, priority: int = PRIORITY_DEFAULT,
             timeout: float | None = None, kernel: str | None = None, **extra: Any) -> dict[str, Any]:
    """The job request :meth:`Cluster.submit` makes of its arguments."""
    return {"notebook": str(notebook), "parameters": parameters if parameters is not None else {},
            "name": name, "min_gpus": min_gpus, "max_gpus": max_gpus, "priority": priority,
            "timeout": timeout, "kernel": kernel, **extra}


def connect(workspace: str | os.PathLike | None = None) -> Cluster:
    """Attach to the nbrunner service at ``NBRUNNER_SERVICE_URL`` if it is set (over REST, with
    ``NBRUNNER_TOKEN`` or ``JUPYTERHUB_API_TOKEN``), else to the cluster running in ``workspace``
    (or at ``NBRUNNER_REDIS_URL``)."""
    service = SERVICE_URL.text()
    if service:
        from .remote import RemoteBackend

        cluster = Cluster(backend=RemoteBackend(service, service_token()))
    else:
        from .local import LocalBackend

        cluster = Cluster(backend=LocalBackend.attach(workspace))
    session.remember(cluster, replace=False)
    return cluster


def setup_cluster(gpus: int | str | None = None, workers: int = 1, workspace: str | os.PathLike | None = None,
                  policy: str | None = None, host: str | None = None, wait: bool = True,
                  accounts: str | os.PathLike | None = None) -> Cluster:
    """Start a local cluster (embedded Redis, scheduler, ``workers`` workers sharing ``gpus``
    slots; ``gpus="auto"`` finds GPUs), or join the one already running in the workspace.
    ``accounts``: an accounts file (docs/howto/accounts.md) the GPUs are shared by.
    Use as a context manager, or call ``.shutdown()``."""
    from ..core.keys import LEASE
    from ..control.store import reachable
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
