"""The input store, ``<storage>/inputs/<sha256>``: a job's inputs kept once by content, and
copied into the job's working directory before it runs (what they are: :mod:`nbrunner.core.inputs`).

A blob is written once (a temporary file renamed to its sha256: writers of the same bytes race
harmlessly), read-only, and never changed; every job naming the same bytes shares it.  A job's
copy is its own (``runs/<id>/work/``): what the notebook does to it never reaches the store.

:func:`place` makes that copy following no link below the job directory, every entry created
afresh (``O_EXCL``) and, for a job run as its owner, given to the owner as it is made: the
worker doing it as root never writes through a link the job could have left there (a re-run
after a lost worker finds the first attempt's files).
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import NbrunnerError, one_line
from ..core.inputs import WORK_DIR, Collected, InputRef, digest, manifest

if TYPE_CHECKING:
    from ..core.config import Settings
    from ..core.models import JobRecord

STORE_DIR = "inputs"
BLOB_MODE = 0o444


class InputsMissing(NbrunnerError):
    """A stored input the job names is not in the store (removed by hand)."""


def store_dir(settings: Settings) -> Path:
    return settings.storage / STORE_DIR


def blob_path(settings: Settings, sha: str) -> Path:
    return store_dir(settings) / sha


def _put(directory: Path, data: bytes) -> str:
    sha = digest(data)
    path = directory / sha
    if path.exists():
        return sha
    fd, tmp = tempfile.mkstemp(prefix=f".{sha[:12]}.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            os.fchmod(f.fileno(), BLOB_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return sha


def store(settings: Settings, collected: Collected) -> list[InputRef]:
    """Keep ``collected`` in the store (what is there already is not written again); the refs the
    job's record keeps."""
    directory = store_dir(settings)
    directory.mkdir(parents=True, exist_ok=True)
    refs = []
    for path, kind, files in collected.entries:
        size = sum(len(d) for d in files.values())
        if kind == "file":
            refs.append(InputRef(path, kind, _put(directory, files[""]), size))
            continue
        listing = {rel: _put(directory, data) for rel, data in files.items()}
        refs.append(InputRef(path, kind, _put(directory, manifest(listing)), size))
    return refs


def files_of(settings: Settings, ref: InputRef) -> list[tuple[str, str]]:
    """``(path relative to the working directory, sha256)`` of every file of the input ``ref``."""
    if ref.kind == "file":
        return [(ref.path, ref.sha256)]
    try:
        listing = json.loads(blob_path(settings, ref.sha256).read_bytes())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        raise InputsMissing(f"input {ref.path} is missing from the input store ({ref.sha256[:12]})") from None
    return [(f"{ref.path}/{rel}", sha) for rel, sha in sorted(listing.items())]


def place(settings: Settings, refs: list[InputRef], job_dir: Path, owner: tuple[int, int] | None = None) -> Path:
    """Copy the inputs ``refs`` into ``job_dir/work/`` at their paths; returns that directory.
    ``owner``: ``(uid, gid)`` each new entry is given to (a job run as its owner), with modes 2770
    (folders) and 0640 (files).  An input file already there is replaced; InputsMissing when the
    store lacks a blob."""
    wanted = [item for ref in refs for item in files_of(settings, ref)]
    top = os.open(job_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        work = _subdir(top, WORK_DIR, owner)
        try:
            for rel, sha in wanted:
                _copy(settings, work, rel.split("/"), sha, owner)
        finally:
            os.close(work)
    finally:
        os.close(top)
    return job_dir / WORK_DIR


def copy_for_job(settings: Settings, rec: JobRecord, owner: tuple[int, int] | None = None) -> str | None:
    """Place the job ``rec``'s inputs (:func:`place`) before it runs; the one-line error that fails
    the job when they cannot be, else None."""
    try:
        place(settings, rec.input_refs, settings.job_dir(rec.id), owner)
    except (NbrunnerError, OSError) as exc:
        return one_line(f"cannot copy the job's inputs into its working directory: {exc}")
    return None


def _subdir(parent: int, name: str, owner: tuple[int, int] | None) -> int:
    """The directory ``name`` in ``parent`` (made if missing), opened without following a link."""
    try:
        os.mkdir(name, 0o2770 if owner else 0o777, dir_fd=parent)
        made = True
    except FileExistsError:
        made = False
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    if made and owner:
        os.fchown(fd, *owner)
        os.fchmod(fd, 0o2770)
    return fd


def _copy(settings: Settings, work: int, parts: list[str], sha: str, owner: tuple[int, int] | None) -> None:
    fds = []
    try:
        where = work
        for part in parts[:-1]:
            where = _subdir(where, part, owner)
            fds.append(where)
        try:
            os.unlink(parts[-1], dir_fd=where)  # a file left by an earlier attempt (never followed)
        except FileNotFoundError:
            pass
        try:
            src = open(blob_path(settings, sha), "rb")
        except OSError:
            raise InputsMissing(f"input {'/'.join(parts)} is missing from the input store ({sha[:12]})") from None
        with src:
            fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o640 if owner else 0o666, dir_fd=where)
            with os.fdopen(fd, "wb") as dst:
                if owner:
                    os.fchown(dst.fileno(), *owner)
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
    finally:
        for fd in fds:
            os.close(fd)
