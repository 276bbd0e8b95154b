"""A running job's Redis credential: made when it starts, deleted when it ends.

What the credential allows is :func:`nbrunner.core.job_access.acl_rules` (the module's table
lists each key and why).  A cluster whose workers run jobs as their owners is marked
(:data:`nbrunner.core.keys.RUN_AS_OWNER`): a worker that would hand its jobs the cluster's own
credential refuses to join it.
"""
from __future__ import annotations

import json
import secrets
from dataclasses import dataclass

import redis

from ..core.config import REDIS_URL, redact
from ..core.errors import NbrunnerError
from ..core.job_access import acl_rules, job_user, url_with_user
from ..core.keys import RUN_AS_OWNER, grant_key
from .store import JobStore


@dataclass(frozen=True)
class JobCredential:
    """A job's ACL user, its password and the Redis URL that logs in with them."""

    job_id: str
    user: str
    password: str
    url: str


def grant_access(store: JobStore, job_id: str) -> JobCredential:
    """Make job ``job_id``'s ACL user with a new random password (an earlier attempt's user, and
    its connections, are gone first); its grant key is made too if the job has none yet (the
    user's rules rely on it, see :mod:`nbrunner.core.job_access`)."""
    user, password = job_user(job_id), secrets.token_urlsafe(32)
    cred = JobCredential(job_id, user, password, url_with_user(store.url, user, password))
    revoke_access(store, job_id)
    store.r.set(grant_key(job_id), json.dumps({"generation": 0, "slots": []}), nx=True)
    restore_access(store, cred)
    return cred


def restore_access(store: JobStore, cred: JobCredential) -> bool:
    """Make the credential's ACL user again if Redis lost it (a restarted server keeps no ACL user
    made at run time); True if it had to."""
    if store.r.execute_command("ACL", "GETUSER", cred.user) is not None:
        return False
    store.r.execute_command("ACL", "SETUSER", cred.user, *acl_rules(cred.job_id, cred.password))
    return True


def revoke_access(store: JobStore, job_id: str) -> None:
    """Delete job ``job_id``'s ACL user; Redis closes the connections logged in as it."""
    store.r.execute_command("ACL", "DELUSER", job_user(job_id))


def mark_run_as_owner(store: JobStore) -> None:
    store.r.set(RUN_AS_OWNER, "1")


def runs_as_owner(store: JobStore) -> bool:
    """Do the cluster's workers run jobs as their owners?"""
    return bool(store.r.exists(RUN_AS_OWNER))


def check_protected(store: JobStore) -> None:
    """NbrunnerError unless Redis refuses whoever has no password, and this connection may make
    ACL users: what a worker running jobs as their owners needs."""
    try:
        default = store.r.acl_getuser("default")
    except redis.ResponseError as exc:
        raise NbrunnerError(f"--run-as-owner: the worker's Redis user may not manage ACL users at "
                            f"{redact(store.url)} ({str(exc).split(':')[0]})") from None
    flags = set((default or {}).get("flags", []))
    if "on" in flags and "nopass" in flags:
        raise NbrunnerError("--run-as-owner needs a Redis that requires a password (jobs must not reach it "
                            "without one): start the cluster with `nbrunner up --run-as-owner`, or give "
                            f"the Redis of {REDIS_URL.name}'s default user a password")
