"""A job's notebook run as its owner: ``python -m nbrunner.execution.owner_runner FD``.

The work horse (:mod:`.owner_job`) starts this process as the owner's account, with the job's
environment and umask, in the job directory.  It reads the job (``{"record", "job_dir"}``, JSON)
from stdin, runs papermill as :func:`nbrunner.execution.execute.run_notebook` does (a fresh
kernel, its own child; the job's wall-time deadline; ``output.ipynb`` and the logs written as
the owner), and writes ``{"error", "timed_out"}`` as one JSON line to the file descriptor FD.

The kernel starts in the job's own working directory ``work/`` when it has inputs; else in its
``cwd``, else its notebook's directory, each relative to the owner's home, if that exists (home
directories shared with the workers); else in the job directory.  Its sockets and connection file are in a directory of the owner's alone.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from ..core.inputs import WORK_DIR
from ..core.models import JobRecord
from ..core.unix_account import workdir_candidates
from .execute import run_notebook


def working_directory(rec: JobRecord, job_dir: Path) -> Path:
    """The job's own working directory if it has inputs; else the first candidate directory that
    exists (as the owner sees it), else the job directory."""
    if rec.input_refs:
        return job_dir / WORK_DIR
    home = os.environ.get("HOME") or "/nonexistent"
    return next((Path(p) for p in workdir_candidates(home, rec.notebook, rec.cwd) if os.path.isdir(p)), job_dir)


def main(reply_fd: int) -> None:
    job = json.loads(sys.stdin.read())
    rec, job_dir = JobRecord.from_json(job["record"]), Path(job["job_dir"])
    runtime = tempfile.mkdtemp(prefix="nbrunner-kernel-")
    os.environ["JUPYTER_RUNTIME_DIR"] = runtime
    try:
        error, timed_out = run_notebook(rec, job_dir, working_directory(rec, job_dir), dict(os.environ))
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
    os.write(reply_fd, (json.dumps({"error": error, "timed_out": timed_out}) + "\n").encode())


if __name__ == "__main__":
    main(int(sys.argv[1]))
