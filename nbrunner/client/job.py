"""The handle on one job: :class:`Job` (what :meth:`nbrunner.Cluster.submit` returns)."""
from __future__ import annotations

import json
import os
import re
import time
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..control import grants
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


class JobMetrics(dict):
    """A job's latest metrics; calling it reads every row of ``metrics.jsonl``."""

    def __init__(self, latest: dict[str, Any], job_dir: Path):
        super().__init__(latest)
        self.job_dir = job_dir

    def __call__(self) -> list[dict[str, Any]]:
        return read_metrics(self.job_dir)


def read_metrics(job_dir: Path) -> list[dict[str, Any]]:
    """The rows of ``metrics.jsonl`` in order; a line that is not a JSON object is skipped."""
    rows: list[dict[str, Any]] = []
    try:
        with open(job_dir / "metrics.jsonl", "rb") as f:
            for line in f:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict):
                    rows.append(row)
    except FileNotFoundError:
        pass
    return rows


DOWNLOAD_SUFFIX = {"ipynb": ".ipynb", "html": ".html", "zip": ".zip"}


def download_name(rec: JobRecord, fmt: str) -> str:
    """The file name of a download: the job's name (safe characters only) and id."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", rec.name).strip("._")[:80]
    return f"{stem}-{rec.id}{DOWNLOAD_SUFFIX[fmt]}" if stem else f"{rec.id}{DOWNLOAD_SUFFIX[fmt]}"


def zip_dir(job_dir: Path, out) -> None:
    """Write a zip of ``job_dir`` (paths relative to it) to the binary file ``out``.  Symbolic
    links are left out: a notebook could link to files its owner may read and others may not."""
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True) as zf:
        for top, dirs, files in os.walk(job_dir):
            dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(top, d)))
            for name in sorted(files):
                path = Path(top) / name
                if path.is_symlink() or not path.is_file() or name.startswith(".output.html."):
                    continue
                zf.write(path, path.relative_to(job_dir).as_posix())


def download(job: "Job", fmt: str, out) -> None:
    """Write the job's output notebook (``ipynb``), its HTML (``html``) or a zip of its
    directory (``zip``) to the binary file ``out``; NotFound if that output does not exist yet."""
    if fmt not in DOWNLOAD_SUFFIX:
        from ..core.errors import InvalidRequest

        raise InvalidRequest(f"format must be one of {', '.join(DOWNLOAD_SUFFIX)}, got {fmt!r}")
    if fmt == "zip":
        if not job.dir.is_dir():
            raise NotFound(f"job {job.id} has no directory")
        zip_dir(job.dir, out)
        return
    path = job.dir / ("output.ipynb" if fmt == "ipynb" else "output.html")
    if not path.is_file():
        raise NotFound(f"job {job.id} has no {'output notebook' if fmt == 'ipynb' else 'HTML output'} yet")
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            out.write(chunk)
