"""A job's Unix account when it runs as its owner: who it is, its environment, its directory.

Pure: :mod:`nbrunner.execution.as_owner` looks the account up and starts processes as it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Mapping

from .config import ELASTIC_CPUS, ELASTIC_KEEP_LOGS, ELASTIC_THREADS, HOST, HOST_ADDR

# what a job's processes keep of the worker's environment: locale, search paths, GPU and network
# settings, the trainer's tuning.  Nothing else passes (no Redis URL, password, token, cloud key).
KEPT = frozenset({"PATH", "LANG", "LANGUAGE", "TZ", "PYTHONPATH", "LD_LIBRARY_PATH", "CUDA_HOME",
                  HOST.name, HOST_ADDR.name, "GLOO_SOCKET_IFNAME",
                  *(v.name for v in (ELASTIC_THREADS, ELASTIC_CPUS, ELASTIC_KEEP_LOGS))})
KEPT_PREFIXES = ("LC_", "NCCL_")
JOB_UMASK = 0o027  # files a job makes: its owner's, readable by the group of its directory (the service)


@dataclass(frozen=True)
class Account:
    """A Unix account as a job runs as it (like Slurm: uid, primary gid, supplementary groups)."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    home: str
    shell: str


def no_account_error(owner: str) -> str:
    """The one-line error of a job whose owner has no Unix account."""
    return f"no Unix account for owner {owner!r}"


def refusal(owner: str, account: Account | None, min_uid: int) -> str | None:
    """Why a job of ``owner`` may not run as ``account`` (None: it may)."""
    if account is None:
        return no_account_error(owner)
    if account.uid < min_uid:
        return (f"owner {owner!r} is a system account (uid {account.uid} < {min_uid}): "
                "jobs run only as user accounts")
    return None


def kept(name: str) -> bool:
    """Does a job's process keep the worker's variable ``name``?"""
    return name in KEPT or name.startswith(KEPT_PREFIXES)


def owner_environment(account: Account, inherited: Mapping[str, str], job_env: Mapping[str, str]) -> dict[str, str]:
    """The whole environment of a job's process: what it keeps of ``inherited`` (the worker's),
    the account's ``HOME``, ``USER``, ``LOGNAME`` and ``SHELL``, then ``job_env``."""
    env = {k: v for k, v in inherited.items() if kept(k)}
    env.update(HOME=account.home, USER=account.name, LOGNAME=account.name, SHELL=account.shell or "/bin/sh")
    env.update(job_env)
    return env


def workdir_candidates(home: str, notebook: str, cwd: str | None = None) -> list[str]:
    """Where a job's kernel may start, best first: its ``cwd``, else its notebook's directory,
    each taken relative to the owner's home (home directories shared with the workers); the
    caller takes the first that exists, else the job directory.  Absolute paths and paths that
    leave the home are not candidates."""
    out = []
    for rel in ([cwd] if cwd else []) + [str(PurePosixPath(notebook).parent)]:
        path = PurePosixPath(rel)
        if path.is_absolute() or ".." in path.parts:
            continue
        out.append(str(PurePosixPath(home) / path))
    return out
