"""Files a privileged process writes into, or reads from, a directory another user controls.

A job that runs as its owner owns ``runs/<id>/``: a worker (root) or the service writing
``output.html`` or ``job.json`` there must not follow a link the job left in their place (it
would write, as root, wherever the link points), nor read a notebook through one (it would
render someone else's file into the job's output).  So: a new file made under a random name
(``O_EXCL``: never a link), given to the directory's owner and group, then renamed over the
target (a rename replaces a link, it does not follow it); reads follow no link below the job
directory (``runs/<id>/`` itself is made by the service, in its storage directory).
"""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import IO


def write_into(directory: Path, name: str, data: bytes) -> Path:
    """Write ``data`` to ``directory/name`` atomically, as the directory's owner's file when this
    process runs as root.  In a private directory (nothing for others) the file is private too if
    it is the directory owner's; else others may read it (the directory decides who gets in)."""
    st = os.stat(directory)
    give = os.geteuid() == 0 and st.st_uid != 0
    private = not st.st_mode & 0o005 and (give or st.st_uid == os.geteuid())
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            os.fchmod(f.fileno(), 0o640 if private else 0o644)
            if give:
                os.fchown(f.fileno(), st.st_uid, st.st_gid)
        os.replace(tmp, directory / name)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return directory / name


def open_beneath(directory: Path, *parts: str, mode: str = "rb") -> IO:
    """``directory/part/...`` opened for reading, following no link below ``directory`` (a link at
    any step: OSError ELOOP or ENOTDIR)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            sub = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = sub
        found = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
    finally:
        os.close(fd)
    return os.fdopen(found, mode)


def list_beneath(directory: Path, *parts: str) -> dict[str, os.stat_result]:
    """The regular files of ``directory/part/...`` (reached following no link) and their stats."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts:
            sub = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = sub
        found = {name: os.stat(name, dir_fd=fd, follow_symlinks=False) for name in os.listdir(fd)}
    finally:
        os.close(fd)
    return {name: st for name, st in found.items() if stat.S_ISREG(st.st_mode)}
