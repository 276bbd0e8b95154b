"""The handle on one job: :class:`Job` (what :meth:`nbrunner.Cluster.submit` returns)."""
from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..core.config import WAIT_RECHECK_S
from ..core.models import FINISHED

if TYPE_CHECKING:  # imported on use: the CLI's read commands need neither nbformat nor pydantic
    import nbformat

    from ..core.models import JobRecord


class Job:
    """A handle on one job; attributes read the latest record (call :meth:`refresh`).  Its
    cluster's backend (:attr:`nbrunner.Cluster.backend`) does the work: over Redis, or over the
    REST API of an nbrunner service."""

    def __init__(self, cluster, record: JobRecord):
        self.cluster = cluster
        self.record = record

    def __repr__(self) -> str:
        return f"<Job {self.id} {self.record.name!r} {self.record.status}>"

    @property
    def id(self) -> str:
        return self.record.id

    def refresh(self) -> "Job":
        self.record = self.cluster.backend.job(self.id)
        return self

    @property
    def status(self) -> str:
        return self.refresh().record.status

    @property
    def error(self) -> str | None:
        return self.refresh().record.error

    @property
    def metrics(self) -> "JobMetrics":
        """The latest scalar metrics (a dict); call it, ``job.metrics()``, for every row of
        ``metrics.jsonl`` in order."""
        return JobMetrics(self.refresh().record.metrics, functools.partial(self.cluster.backend.metrics, self.id))

    def to_dict(self) -> dict[str, Any]:
        return self.refresh().record.to_dict()

    @property
    def dir(self) -> Path:
        """The job's directory (``runs/<id>/``), on a cluster reached over Redis."""
        return self.cluster.backend.job_dir(self.id)

    def wait(self, timeout: float | None = None, poll: float = 0.2) -> "Job":
        """Block until the job has finished; TimeoutError after ``timeout`` seconds.

        The job's changes on the cluster's event stream wake it (the record is read again then, and
        at least every ``WAIT_RECHECK_S``); a backend without that stream is asked every ``poll`` s."""
        deadline = None if timeout is None else time.monotonic() + timeout
        changes = _job_changes(self.cluster.backend)  # before the first read: no change is missed
        try:
            while self.refresh().record.status not in FINISHED:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError(f"job {self.id} still {self.record.status} after {timeout} s")
                step = poll if changes is None else max(poll, WAIT_RECHECK_S)
                step = step if left is None else min(step, left)
                if changes is None:
                    time.sleep(step)
                else:
                    self._until_changed(changes, step)
        finally:
            if changes is not None:
                changes.close()
        return self

    def _until_changed(self, changes, wait_s: float) -> None:
        """Return once ``changes`` names this job (or asks for a reload), or after ``wait_s`` s."""
        end = time.monotonic() + wait_s
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            for change in changes.read(max(left, 0.001)):
                if change.get("reload") or change.get("id") == self.id or (change.get("job") or {}).get("id") == self.id:
                    return

    def logs(self, offset: int = 0) -> str:
        """The job's log (what the notebook printed, and learners' logs) from ``offset``."""
        return self.cluster.backend.log(self.id, offset)[0]

    def output_notebook(self) -> nbformat.NotebookNode:
        from ..core.notebooks import load_nbformat

        return load_nbformat().reads(self.cluster.backend.output_text(self.id), as_version=4)

    def cancel(self) -> "Job":
        self.record = self.cluster.backend.cancel(self.id)
        return self

    def set_priority(self, priority: int) -> "Job":
        self.record = self.cluster.backend.set_priority(self.id, priority)
        return self

    def rerun(self, parameters: dict[str, Any] | None = None) -> "Job":
        """A new job from this job's input snapshot and options, with ``parameters`` merged in."""
        return Job(self.cluster, self.cluster.backend.rerun(self.id, parameters))

    def delete(self) -> None:
        """Remove this finished job: its record and its directory (Conflict if it has not finished)."""
        self.cluster.backend.purge(self.id)

    def timeline(self) -> list[dict]:
        """GPUs held over time: ``[{"t", "gpus"}, ...]``."""
        return self.cluster.backend.timeline(self.id)

    def widget(self):
        """An ipywidgets view of this job, updated live."""
        from .widgets import JobWidget

        return JobWidget(self)


def _job_changes(backend):
    """The backend's feed of job changes from now on, or None if it has none (it is then polled)."""
    from ..core.errors import NbrunnerError

    opener = getattr(backend, "job_changes", None)
    if opener is None:
        return None
    try:
        return opener()
    except (NbrunnerError, OSError):
        return None


class JobMetrics(dict):
    """A job's latest metrics; calling it reads every row of ``metrics.jsonl``."""

    def __init__(self, latest: dict[str, Any], rows: Callable[[], list[dict[str, Any]]]):
        super().__init__(latest)
        self._rows = rows

    def __call__(self) -> list[dict[str, Any]]:
        return self._rows()


def download(job: "Job", fmt: str, out) -> None:
    """Write the job's output notebook (``ipynb``), its HTML (``html``) or a zip of its
    directory (``zip``) to the binary file ``out``; NotFound if that output does not exist yet."""
    job.cluster.backend.download(job.id, fmt, out)
