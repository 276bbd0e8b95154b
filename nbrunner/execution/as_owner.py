"""Running a job's processes as its owner's Unix account (``nbrunner worker --run-as-owner``).

Like Slurm: the owner's uid, primary gid and supplementary groups (``os.getgrouplist``), their
``HOME``, ``USER`` and ``LOGNAME``, and a clean environment that keeps nothing secret of the
worker's (:func:`nbrunner.core.unix_account.owner_environment`); files made with umask 027.

The job directory ``runs/<id>/`` becomes the owner's, its group the storage directory's (the
group of the service and the scheduler, root's or a dedicated account's), mode ``2770``
(setgid: what the job makes there keeps that group): the owner and that group only, nobody else
may even look inside.  When the job ends, the owner's own process gives that group read access
to everything in it and write access to its directories (so that a service that is not root can
delete the job later); no root process walks a tree the job could have laid links in.
"""
from __future__ import annotations

import os
import pwd
import stat
import subprocess
import sys
from pathlib import Path

from ..core.config import MIN_UID, RUN_AS_OWNER
from ..core.unix_account import JOB_UMASK, Account, owner_environment, refusal

JOB_DIR_MODE = 0o2770


def enabled() -> bool:
    """Does this worker (or its work horse) run jobs as their owners?"""
    return RUN_AS_OWNER.raw() == "1"


def lookup(name: str) -> Account | None:
    """The Unix account ``name`` (None if there is none)."""
    try:
        pw = pwd.getpwnam(name)
    except (KeyError, TypeError, ValueError):  # ValueError: a name with a NUL byte
        return None
    return Account(name=pw.pw_name, uid=pw.pw_uid, gid=pw.pw_gid, groups=tuple(os.getgrouplist(pw.pw_name, pw.pw_gid)),
                   home=pw.pw_dir, shell=pw.pw_shell)


def min_uid() -> int:
    """The lowest uid a job may run as (``NBRUNNER_MIN_UID``)."""
    return MIN_UID.count()


def resolve(owner: str) -> tuple[Account | None, str | None]:
    """The account a job of ``owner`` runs as, or the one-line error why it cannot run."""
    account = lookup(owner)
    why = refusal(owner, account, min_uid())
    return (None, why) if why else (account, None)


def identity(account: Account) -> dict:
    """``subprocess.Popen`` arguments that start a process as ``account``."""
    return {"user": account.uid, "group": account.gid, "extra_groups": list(account.groups), "umask": JOB_UMASK}


def environment(account: Account, job_env: dict[str, str]) -> dict[str, str]:
    """A job process's whole environment (nothing of the worker's but what a job may keep)."""
    return {**owner_environment(account, os.environ, job_env), "PYTHONUNBUFFERED": "1"}


def service_group(storage: Path) -> int:
    """The group that may read every job directory: the storage directory's."""
    return os.stat(storage).st_gid


def give_job_dir(job_dir: Path, account: Account | None, group: int) -> None:
    """Make ``job_dir`` the owner's (``account``; None: the service's alone), mode ``2770``, and what
    the service made in it (the input snapshot, ``logs/``) the owner's too.  Only entries of the
    directory itself are changed, never through a link: ``lchown`` on directories and single-link
    files."""
    uid = account.uid if account is not None else os.stat(job_dir.parent).st_uid
    fd = os.open(job_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        os.fchown(fd, uid, group)
        os.fchmod(fd, JOB_DIR_MODE)
        for name in os.listdir(fd):
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if st.st_uid == uid:
                continue
            if stat.S_ISDIR(st.st_mode):
                sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                try:
                    os.fchown(sub, uid, group)
                    os.fchmod(sub, JOB_DIR_MODE)
                finally:
                    os.close(sub)
            elif stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
                os.chown(name, uid, group, dir_fd=fd, follow_symlinks=False)
    finally:
        os.close(fd)


# run as the owner: group read on every file, group access to every directory, nothing for others
_HAND_OVER = """import os, stat, sys
for top, dirs, files in os.walk(sys.argv[1]):
    for name in dirs + files:
        path = os.path.join(top, name)
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode) or st.st_uid != os.getuid():
            continue
        extra = 0o070 if stat.S_ISDIR(st.st_mode) else 0o040
        os.chmod(path, (stat.S_IMODE(st.st_mode) | extra) & ~0o007)
"""


def hand_over(job_dir: Path, account: Account) -> None:
    """Once the job's processes are gone: its files readable, its directories writable, by the job
    directory's group (done by a process of the owner's: it can touch nothing but the owner's)."""
    if job_dir.is_dir():
        subprocess.run([sys.executable, "-I", "-S", "-c", _HAND_OVER, str(job_dir)], env={}, cwd="/",
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=120, check=False,
                       **{k: v for k, v in identity(account).items() if k != "umask"})
