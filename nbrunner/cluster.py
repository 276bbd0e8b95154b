"""The Python face of nbrunner: :func:`setup_cluster`, :func:`connect`, :class:`Cluster`, :class:`Job`."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import nbformat
import redis

from . import grants, service
from .config import Settings, redact
from .errors import NoCluster, NotFound
from .models import FINISHED, JobRecord
from .redis_server import ping
from .store import JobStore

_default: "Cluster | None" = None


def _reachable(settings: Settings) -> JobStore:
    """A store on the workspace's Redis, or NoCluster with how to start one."""
    if settings.embedded and not ping(settings.socket_path):
        raise NoCluster(f"no nbrunner cluster is running in {settings.workspace}: start one with `nbrunner up`")
    store = JobStore.from_url(settings.url)
    try:
        store.r.ping()
    except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
        raise NoCluster(f"cannot reach Redis at {redact(settings.url)} ({exc.__class__.__name__}): "
                        "start a cluster with `nbrunner up` or fix NBRUNNER_REDIS_URL") from None
    except redis.AuthenticationError:
        raise NoCluster(f"Redis at {redact(settings.url)} refused the credentials") from None
    return store


class Job:
    """A handle on one job; attributes read the latest record (call :meth:`refresh`)."""

    def __init__(self, cluster: "Cluster", record: JobRecord):
        self.cluster = cluster
        self.record = record

    def __repr__(self) -> str:
        return f"<Job {self.id} {self.record.name!r} {self.record.status}>"

    @property
    def id(self) -> str:
        return self.record.id

    def refresh(self) -> "Job":
        self.record = self.cluster.store.get(self.id)
        return self

    @property
    def status(self) -> str:
        return self.refresh().record.status

    @property
    def error(self) -> str | None:
        return self.refresh().record.error

    @property
    def metrics(self) -> dict[str, Any]:
        return self.refresh().record.metrics

    def to_dict(self) -> dict[str, Any]:
        return self.refresh().record.to_dict()

    @property
    def dir(self) -> Path:
        return self.cluster.settings.job_dir(self.id)

    def wait(self, timeout: float | None = None, poll: float = 0.2) -> "Job":
        """Block until the job has finished; TimeoutError after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.refresh().record.status not in FINISHED:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"job {self.id} still {self.record.status} after {timeout} s")
            time.sleep(poll)
        return self

    def logs(self, offset: int = 0) -> str:
        """The job's log (what the notebook printed, and learners' logs) from ``offset``."""
        return read_log(self.dir, offset, finished=self.record.finished)[0]

    def output_notebook(self) -> nbformat.NotebookNode:
        path = self.dir / "output.ipynb"
        if not path.exists():
            raise NotFound(f"job {self.id} has no output notebook yet")
        return nbformat.read(str(path), as_version=4)

    def cancel(self) -> "Job":
        self.record = service.cancel(self.cluster.store, self.id)
        return self

    def set_priority(self, priority: int) -> "Job":
        self.record = service.set_priority(self.cluster.store, self.id, priority)
        return self

    def timeline(self) -> list[dict]:
        """GPUs held over time: ``[{"t", "gpus"}, ...]``."""
        return grants.timeline(self.cluster.store.r, self.id)

    def widget(self):
        """An ipywidgets view of this job, updated live."""
        from .widgets import JobWidget

        return JobWidget(self)


def read_log(job_dir: Path, offset: int = 0, finished: bool = False) -> tuple[str, int]:
    """Text of the job's log from byte ``offset``, and the offset after it.

    The log is ``logs/driver.log`` (what the notebook prints), and, once the job has
    ``finished``, the logs of its learners (``logs/learner-*.log``) after it, each under a
    ``--- learner log NAME ---`` header.  Offsets count bytes of that whole text, so the
    text while the job runs is a prefix of the final one: a reader that tails with the
    returned offset gets every byte once.
    """
    offset = max(0, offset)
    logs = job_dir / "logs"
    driver = logs / "driver.log"
    parts: list[bytes] = []
    if driver.exists():
        with open(driver, "rb") as f:
            parts.append(f.read())
    if finished:
        for path in sorted(logs.glob("learner-*.log"), key=lambda p: (p.stat().st_mtime, p.name)):
            body = path.read_bytes()
            if body:
                head = b"" if not parts or parts[-1].endswith(b"\n") else b"\n"
                parts.append(head + f"--- learner log {path.name} ---\n".encode() + body)
    data = b"".join(parts)
    chunk = data[offset:]
    return chunk.decode("utf-8", errors="replace"), max(offset, len(data)) if chunk else offset


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
               name: str | None = None, min_gpus: int = 0, max_gpus: int | None = None, priority: int = 5000,
               timeout: float | None = None, kernel: str | None = None, owner: str | None = None,
               **extra: Any) -> Job:
        """Queue ``notebook`` with ``parameters``; returns its :class:`Job`."""
        request = {"notebook": str(notebook), "parameters": parameters if parameters is not None else {},
                   "name": name, "min_gpus": min_gpus, "max_gpus": max_gpus, "priority": priority,
                   "timeout": timeout, "kernel": kernel, **extra}
        rec = service.submit(self.store, self.settings, request, owner=owner, base=Path.cwd())
        return Job(self, rec)

    def job(self, job_id: str) -> Job:
        return Job(self, self.store.get(job_id))

    def jobs(self, status: str | None = None) -> list[Job]:
        return [Job(self, r) for r in self.store.all(status)]

    def monitor(self, status: str | None = None, *, owner: str | None = None, sweep: Any = None,
                mine: bool = False, interval: float = 1.0):
        """A live ipywidgets table of this cluster's jobs (:class:`nbrunner.JobsMonitor`),
        filtered by ``status``, ``owner`` (``mine=True``: yours) and ``sweep``."""
        from .widgets import JobsMonitor

        return JobsMonitor(self, interval=interval, status=status, owner=owner, sweep=sweep, mine=mine)

    def status(self) -> dict[str, Any]:
        """Hosts, slots and who holds each, free GPUs and policy (the ``GET /cluster`` object)."""
        from .scheduler import POLICY, live_capacity

        cap = live_capacity(self.store)
        held = grants.holdings(self.store.r)
        hosts = []
        for host in sorted(cap.hosts):
            slots = [{"index": i, "job": held.get((host, i))} for i in sorted(cap.hosts[host])]
            hosts.append({"name": host, "slots": slots})
        total = sum(len(h["slots"]) for h in hosts)
        busy = sum(1 for h in hosts for s in h["slots"] if s["job"])
        return {"policy": self.store.r.get(POLICY) or "fairshare", "gpus_total": total, "gpus_free": total - busy,
                "hosts": hosts, "workers": len(cap.workers)}

    def timeline(self) -> list[dict]:
        """GPU allocation over time of every job that held GPUs."""
        out = []
        for rec in self.store.all():
            points = grants.timeline(self.store.r, rec.id)
            if points:
                out.append({"id": rec.id, "name": rec.name, "points": points})
        return out

    def sweep(self, notebook: str | os.PathLike, spec: Any, **kwargs: Any):
        from .sweeps import submit_sweep

        return submit_sweep(self, notebook, spec, **kwargs)

    def wait_ready(self, workers: int = 1, timeout: float = 30.0) -> None:
        """Block until a scheduler is active and ``workers`` workers are registered."""
        from .scheduler import LEASE, live_capacity

        deadline = time.monotonic() + timeout
        while len(live_capacity(self.store).workers) < workers or not self.store.r.exists(LEASE):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no scheduler or fewer than {workers} workers after {timeout} s")
            time.sleep(0.1)

    def shutdown(self) -> None:
        """Stop the processes this cluster started (nothing if it only attached)."""
        global _default
        if self.supervisor is not None:
            self.supervisor.stop()
            self.supervisor = None
        if _default is self:
            _default = None


def connect(workspace: str | os.PathLike | None = None) -> Cluster:
    """Attach to the cluster running in ``workspace`` (or ``NBRUNNER_REDIS_URL``)."""
    global _default
    settings = Settings.load(workspace)
    cluster = Cluster(settings, _reachable(settings))
    _default = _default or cluster
    return cluster


def setup_cluster(gpus: int | str | None = None, workers: int = 1, workspace: str | os.PathLike | None = None,
                  policy: str | None = None, host: str | None = None, wait: bool = True) -> Cluster:
    """Start a local cluster (embedded Redis, scheduler, ``workers`` workers sharing ``gpus``
    slots; ``gpus="auto"`` finds GPUs), or join the one already running in the workspace.
    Use as a context manager, or call ``.shutdown()``."""
    from .supervisor import Supervisor

    global _default
    settings = Settings.load(workspace)
    try:
        store = _reachable(settings)
        from .scheduler import LEASE

        if store.r.exists(LEASE):
            cluster = Cluster(settings, store)
            _default = cluster
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
    sup = Supervisor(settings, gpus=slots, workers=workers, policy=policy, host=host).start()
    try:
        cluster = Cluster(settings, _reachable(settings), sup)
        if wait:
            cluster.wait_ready(workers, timeout=60)
    except BaseException:
        sup.stop()
        raise
    _default = cluster
    return cluster


def default_cluster() -> Cluster:
    return _default or connect()


def print_jobs_summary(cluster: Cluster | None = None, status: str | None = None) -> None:
    """Print a table of the cluster's jobs and a totals line."""
    from .render import jobs_table, totals_line
    from rich.console import Console

    cluster = cluster or default_cluster()
    records = [j.record for j in cluster.jobs(status)]
    console = Console()
    console.print(jobs_table(records))
    console.print(totals_line(records))

