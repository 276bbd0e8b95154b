"""What a job's own processes may do in Redis when they run as their owner: the job's credential.

With ``nbrunner worker --run-as-owner`` a job's kernel and learners run as the owner's Unix
account and never see the cluster's Redis password.  Each running job gets a Redis ACL user of
its own (``nbrunner-job-<id>``, a random password), made when the job starts and deleted when it
ends (:mod:`nbrunner.control.job_access`).  Redis 6.2 cannot tie a command to some keys only
(every allowed command works on every allowed key), so the user may only *read* its own keys,
and everything else a job does goes through its work horse, which checks it
(:mod:`nbrunner.control.job_channel`).  What the job's processes do, read off the code:

=====================================  ==================  =============================================
key or channel                         commands            used by
=====================================  ==================  =============================================
``nbrunner:job:<id>`` (its record)     GET                 ``cluster_slot_source`` (its ``max_gpus``)
``nbrunner:grant:<id>`` (its grant)    GET                 ``GrantClient.grant`` / ``wait``
channel ``nbrunner:grant:<id>``        SUBSCRIBE           ``GrantClient.wait`` (woken on a new grant)
``nbrunner:channel:<id>``              RPUSH               every request to the work horse: progress and
                                                           metrics (``nbrunner.record``), the trainer's
                                                           declarations, releases and held slots, the
                                                           hosts' devices, learners on other hosts (start,
                                                           status, cancel, signal) and their workers' life
``nbrunner:channel:<id>:<request>``    BLPOP               the work horse's answer to one request
(none)                                 PING                redis-py's health checks
=====================================  ==================  =============================================

Both keys it reads exist as strings before any process of the job starts (the horse makes sure
of the grant's), so the RPUSH and BLPOP it holds for its channel fail on them (WRONGTYPE) and
cannot turn them into lists.  Everything else is out of reach: other jobs' records, the event
stream, the slot holdings, the worker registrations, rq's queues and jobs, ACL and CONFIG.
"""
from __future__ import annotations

from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from .keys import channel_key, grant_key, job_key

USER_PREFIX = "nbrunner-job-"


def job_user(job_id: str) -> str:
    """The Redis ACL user of job ``job_id``."""
    check_job_id(job_id)
    return USER_PREFIX + job_id


def check_job_id(job_id: str) -> str:
    """Job ids go into ACL key patterns: only letters and digits (no glob or space)."""
    if not (isinstance(job_id, str) and job_id.isascii() and job_id.isalnum()):
        raise ValueError(f"not a job id: {job_id!r}")
    return job_id


def acl_rules(job_id: str, password: str) -> list[str]:
    """The ``ACL SETUSER`` rules of job ``job_id``'s user (Redis 6.2 syntax), as the table above."""
    check_job_id(job_id)
    keys = [job_key(job_id), grant_key(job_id), channel_key(job_id), channel_key(job_id) + ":*"]
    return ["reset", "on", f">{password}", "resetchannels", f"&{grant_key(job_id)}",
            *(f"~{k}" for k in keys), "-@all", "+get", "+rpush", "+blpop", "+subscribe", "+unsubscribe", "+ping"]


def url_with_user(url: str, user: str, password: str) -> str:
    """``url`` (``redis://``, ``rediss://`` or ``unix://``) logging in as ``user`` with ``password``
    instead of its own credentials (any in its query string are dropped too)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    if parts.port:
        host = f"{host}:{parts.port}"
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k not in ("username", "password")])
    netloc = f"{quote(user, safe='')}:{quote(password, safe='')}@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
