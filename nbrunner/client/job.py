"""The handle on one job: :class:`Job` (what :meth:`nbrunner.Cluster.submit` returns)."""
from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..control import grants, submit
from ..core.errors import NotFound
from ..core.models import FINISHED, JobRecord
from ..core.notebooks import load_nbformat

if TYPE_CHECKING:  # imported in output_notebook(): the CLI's read commands never need it
    import nbformat


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
        return load_nbformat().read(str(path), as_version=4)

    def cancel(self) -> "Job":
        self.record = submit.cancel(self.cluster.store, self.id)
        return self

    def set_priority(self, priority: int) -> "Job":
        self.record = submit.set_priority(self.cluster.store, self.id, priority)
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
    returned offset gets every byte once.  An offset past the end reads nothing.
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
