"""The handle on one job: :class:`Job` (what :meth:`nbrunner.Cluster.submit` returns)."""
from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..control import grants
from ..control.job_files import copy_file, download_file, download_name, read_log, read_metrics, zip_dir  # noqa: F401
from ..core.errors import NotFound
from ..core.notebooks import load_nbformat
from ..core.models import FINISHED

if TYPE_CHECKING:  # imported on use: the CLI's read commands need neither nbformat nor pydantic
    import nbformat

    from ..core.models import JobRecord


class Job:
    """A handle on one job; attributes read the latest record (call :meth:`refresh`)."""

    def __init__(self, cluster, record: JobRecord):
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
    def metrics(self) -> "JobMetrics":
        """The latest scalar metrics (a dict); call it, ``job.metrics()``, for every row of
        ``metrics.jsonl`` in order."""
        return JobMetrics(self.refresh().record.metrics, self.dir)

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
        return load_nbformat().read(str(path), as_version=4)

    def cancel(self) -> "Job":
        from ..control import submit

        self.record = submit.cancel(self.cluster.store, self.id, self.cluster.settings)
        return self

    def set_priority(self, priority: int) -> "Job":
        from ..control import submit

        self.record = submit.set_priority(self.cluster.store, self.id, priority)
        return self

    def rerun(self, parameters: dict[str, Any] | None = None) -> "Job":
        """A new job from this job's input snapshot and options, with ``parameters`` merged in."""
        from ..control import submit

        rec = submit.rerun(self.cluster.store, self.cluster.settings, self.id, parameters)
        return Job(self.cluster, rec)

    def delete(self) -> None:
        """Remove this finished job: its record and its directory (Conflict if it has not finished)."""
        from ..control import submit

        submit.purge(self.cluster.store, self.cluster.settings, self.id)

    def timeline(self) -> list[dict]:
        """GPUs held over time: ``[{"t", "gpus"}, ...]``."""
        return grants.timeline(self.cluster.store.r, self.id)

    def widget(self):
        """An ipywidgets view of this job, updated live."""
        from .widgets import JobWidget

        return JobWidget(self)


class JobMetrics(dict):
    """A job's latest metrics; calling it reads every row of ``metrics.jsonl``."""

    def __init__(self, latest: dict[str, Any], job_dir: Path):
        super().__init__(latest)
        self.job_dir = job_dir

    def __call__(self) -> list[dict[str, Any]]:
        return read_metrics(self.job_dir)


def download(job: "Job", fmt: str, out) -> None:
    """Write the job's output notebook (``ipynb``), its HTML (``html``) or a zip of its
    directory (``zip``) to the binary file ``out``; NotFound if that output does not exist yet."""
    path = download_file(job.dir, job.id, fmt)
    if path is None:
        zip_dir(job.dir, out)
        return
    copy_file(path, out)
