"""The attempt fence for a job's files: its output notebook is written only while the attempt
that writes it is still the job directory's.

An attempt that starts writes its number into ``<job dir>/.attempt`` (:func:`claim`).  Every
save of ``output.ipynb`` -- papermill's, through the I/O handler registered here, and the
failure note added after the run -- first reads that mark (:func:`nbrunner.core.fence.fence_files`)
and writes through a temporary file and a rename, so a reader never sees half a notebook.  An
attempt cut off by a partition keeps running on its host; when the link is back, its saves are
refused instead of overwriting the output of the attempt re-run elsewhere.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from ..core.fence import Refused, fence_files

MARK = ".attempt"
SCHEME = "nbrunner-attempt://"


def claim(job_dir: Path, attempt: int) -> None:
    """Attempt ``attempt`` owns the job directory from now on (its output, see :func:`write`)."""
    if not job_dir.is_dir():  # made at submission, with its owner's permissions: never here
        return
    _replace(job_dir / MARK, str(attempt))
    os.chmod(job_dir / MARK, 0o644)  # the owner's runner reads it (written by the work horse)


def owner(job_dir: Path) -> str | None:
    """The attempt mark of ``job_dir`` (None: no attempt claimed it)."""
    try:
        return (job_dir / MARK).read_text()
    except FileNotFoundError:
        return None


def write(path: Path, text: str, attempt: int | None) -> bool:
    """Write ``path`` (in a job directory) for ``attempt`` (None: unfenced); False, with nothing
    written and a line on stderr, if a later attempt owns the directory."""
    if attempt is not None:
        try:
            fence_files(owner(path.parent), attempt)
        except Refused as exc:
            print(f"[nbrunner] {path.name} not written: {exc}", file=sys.stderr, flush=True)
            return False
    _replace(path, text)
    return True


def fenced_path(path: Path, attempt: int | None) -> str:
    """What papermill is given as its output path: ``path``, saved for ``attempt`` only."""
    if attempt is None:
        return str(path)
    _register()
    return f"{SCHEME}{attempt}/{path}"


def _split(url: str) -> tuple[int, Path]:
    attempt, _, path = url[len(SCHEME):].partition("/")
    return int(attempt), Path("/" + path.lstrip("/"))


def _replace(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_UMASK: list[int] = []


def _umask() -> int:
    """The process's umask (read once: reading it means setting it)."""
    if not _UMASK:
        mask = os.umask(0o022)
        os.umask(mask)
        _UMASK.append(mask)
    return _UMASK[0]


class FencedFiles:
    """papermill's I/O handler for :data:`SCHEME` paths (``nbrunner-attempt://N/<absolute path>``)."""

    @classmethod
    def read(cls, url: str) -> str:
        return _split(url)[1].read_text(encoding="utf-8")

    @classmethod
    def listdir(cls, url: str) -> list[str]:
        return os.listdir(_split(url)[1])

    @classmethod
    def write(cls, buf: str, url: str) -> None:
        attempt, path = _split(url)
        write(path, buf, attempt)

    @classmethod
    def pretty_path(cls, url: str) -> str:
        return str(_split(url)[1])


_registered = False


def _register() -> None:
    global _registered
    if not _registered:
        from papermill.iorw import papermill_io

        papermill_io.register(SCHEME, FencedFiles)
        _registered = True
