"""Files a privileged process writes into, or reads from, a directory another user controls.

A job that runs as its owner owns ``runs/<id>/``: a worker (root) or the service writing
``output.html`` or ``job.json`` there must not follow a link the job left in their place (it
would write, as root, wherever the link points), nor read a notebook through one (it would
render someone else's file into the job's output).  So: a new file made under a random name
(``O_EXCL``: never a link), given to the directory's owner and group, then renamed over the
target (a rename replaces a link, it does not follow it); reads refuse a link.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import IO


def write_into(directory: Path, name: str, data: bytes) -> Path:
    """Write ``data`` to ``directory/name`` atomically, as the directory's owner's file when this
    process runs as root; readable by others only if the directory is."""
    st = os.stat(directory)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            os.fchmod(f.fileno(), 0o644 if st.st_mode & 0o005 else 0o640)
            if os.geteuid() == 0 and st.st_uid != 0:
                os.fchown(f.fileno(), st.st_uid, st.st_gid)
        os.replace(tmp, directory / name)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return directory / name


def open_no_link(path: Path, mode: str = "rb") -> IO:
    """``path`` opened for reading, refusing a symbolic link in its place (OSError ELOOP)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    return os.fdopen(fd, mode)
