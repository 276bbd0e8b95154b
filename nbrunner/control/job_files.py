"""What a job leaves in its directory, read back: its log, its metrics rows, its downloads.

``runs/<job-id>/`` holds ``input.ipynb``, ``output.ipynb``, ``output.html``, ``job.json``,
``logs/`` (``driver.log``, ``papermill.log``, ``learner-*.log``), ``metrics.jsonl``,
``checkpoints/`` and ``model/``.
"""
from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import InvalidRequest, NotFound
from .html import OUTPUT_HTML
from .safe_write import list_beneath, open_beneath

if TYPE_CHECKING:
    from ..core.models import JobRecord

DOWNLOADS = {"ipynb": ("output.ipynb", "application/x-ipynb+json"), "html": (OUTPUT_HTML, "text/html; charset=utf-8"),
             "zip": (None, "application/zip")}


def read_log(job_dir: Path, offset: int = 0, finished: bool = False) -> tuple[str, int]:
    """Text of the job's log from byte ``offset``, and the offset after it.

    The log is ``logs/driver.log`` (what the notebook prints), and, once the job has
    ``finished``, the logs of its learners (``logs/learner-*.log``) after it, each under a
    ``--- learner log NAME ---`` header.  Offsets count bytes of that whole text, so the
    text while the job runs is a prefix of the final one: a reader that tails with the
    returned offset gets every byte once.  An offset past the end reads nothing.  No link in the
    job directory is followed (a job run as its owner could point one at anyone's file).
    """
    offset = max(0, offset)
    parts: list[bytes] = []
    driver = _read(job_dir, "logs", "driver.log")
    if driver is not None:
        parts.append(driver)
    if finished:
        try:
            found = list_beneath(job_dir, "logs")
        except OSError:
            found = {}
        for name in sorted((n for n in found if fnmatch.fnmatch(n, "learner-*.log")),
                           key=lambda n: (found[n].st_mtime, n)):
            body = _read(job_dir, "logs", name)
            if body:
                head = b"" if not parts or parts[-1].endswith(b"\n") else b"\n"
                parts.append(head + f"--- learner log {name} ---\n".encode() + body)
    data = b"".join(parts)
    chunk = data[offset:]
    return chunk.decode("utf-8", errors="replace"), max(offset, len(data)) if chunk else offset


def _read(job_dir: Path, *parts: str) -> bytes | None:
    try:
        with open_beneath(job_dir, *parts) as f:
            return f.read()
    except OSError:  # missing, or a link
        return None


def read_metrics(job_dir: Path) -> list[dict[str, Any]]:
    """The rows of ``metrics.jsonl`` in order; a line that is not a JSON object is skipped."""
    rows: list[dict[str, Any]] = []
    try:
        with open_beneath(job_dir, "metrics.jsonl") as f:
            for line in f:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict):
                    rows.append(row)
    except OSError:  # missing, or a link
        pass
    return rows


def read_output(job_dir: Path, job_id: str) -> dict[str, Any]:
    """The executed notebook (JSON); NotFound before it exists."""
    return json.loads(read_output_text(job_dir, job_id))


def read_output_text(job_dir: Path, job_id: str) -> str:
    """The executed notebook's file; NotFound before it exists."""
    body = _read(job_dir, "output.ipynb")
    if body is None:
        raise NotFound(f"job {job_id} has no output notebook yet")
    return body.decode("utf-8")


def copy_file(path: Path, out) -> None:
    """Copy a job's file (``path``, in its directory, as :func:`download_file` gives it) to the
    binary file ``out``, following no link."""
    with open_beneath(path.parent, path.name) as f:
        shutil.copyfileobj(f, out, 1 << 20)


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


def download_file(job_dir: Path, job_id: str, fmt: str) -> Path | None:
    """The file a download of format ``fmt`` sends (None for ``zip``: the directory, zipped);
    InvalidRequest for an unknown format, NotFound while that output does not exist yet."""
    if fmt not in DOWNLOADS:
        raise InvalidRequest(f"format must be one of {', '.join(DOWNLOADS)}, got {fmt!r}")
    name = DOWNLOADS[fmt][0]
    if name is None:
        if not job_dir.is_dir():
            raise NotFound(f"job {job_id} has no directory")
        return None
    if not (job_dir / name).is_file():
        raise NotFound(f"job {job_id} has no {'output notebook' if fmt == 'ipynb' else 'HTML output'} yet")
    return job_dir / name
