"""Every Redis key nbrunner writes, named once: jobs, the scheduler's lease, workers, learners.

All keys live under ``nbrunner:`` so a shared Redis can hold other data.  The modules that
read and write a key import its name from here.  A job's record and what is written with it
(indexes, event-stream entries, its GPU timeline) are written only by
:mod:`nbrunner.control.job_write`; the holdings and slot log belong to
:mod:`nbrunner.control.grants` (the job write path only reads the holdings).
"""
from __future__ import annotations

from .config import LEARNER_STATUS_TTL_S  # noqa: F401 - the learner agent and cluster_slots import it from here

PREFIX = "nbrunner:"
JOBS = PREFIX + "jobs"  # sorted set of job ids by creation time
EVENTS = PREFIX + "events"  # stream of job and cluster events
ACTIVE = PREFIX + "active"  # jobs the scheduler still looks after
FINISHED_AT = PREFIX + "finished"  # sorted set of finished job ids by finish time (for retention)
INDEXED = PREFIX + "jobs:indexed"  # version of the status indexes the records were indexed into
LEASE = PREFIX + "scheduler"  # the active scheduler's lease ("<host>.<pid>", with a TTL)
POLICY = PREFIX + "policy"  # the allocation policy the active scheduler applies
WORKERS = PREFIX + "workers"  # names of registered workers (each with a heartbeat key)
ACCOUNTS = PREFIX + "accounts"  # hash: the published accounts file (text, source, loaded_at)
USAGE = PREFIX + "usage"  # hash: account path -> GPU-seconds used in total (and per hour: usage:<hour>)
USAGE_LAST = PREFIX + "usage:last"  # the time (Unix s) usage was last added up to
ACCOUNTS_TIMELINE = PREFIX + "accounts:timeline"  # list of {"t", "gpus": {path: held}}, oldest first
RECLAIM = PREFIX + "reclaim"  # hash: job id -> when its GPUs were first asked back (Unix s)
COUNTERS = PREFIX + "counters"  # hash: the Prometheus counters and histograms (see core.counters)
RUN_AS_OWNER = PREFIX + "run_as_owner"  # set by the first worker that runs jobs as their owners: then all must
HOLDINGS = PREFIX + "slots"  # hash "host/index" -> the id of the job holding that slot


def runs_key(owner: str, notebook: str) -> str:
    """List of the wall times (seconds, newest first) of an owner's last completed runs of a notebook."""
    return f"{PREFIX}runs:{owner}:{notebook}"


def job_key(job_id: str) -> str:
    """The JSON record of one job."""
    return f"{PREFIX}job:{job_id}"


def timeline_key(job_id: str) -> str:
    """A job's GPU count over time: a list of ``{"t", "gpus"}`` (JSON), oldest first."""
    return f"{PREFIX}timeline:{job_id}"


def grant_key(job_id: str) -> str:
    """A job's grant: ``{"generation", "slots"}`` (also the channel a new grant is published on)."""
    return f"{PREFIX}grant:{job_id}"


def channel_key(job_id: str) -> str:
    """The list a job's processes push their requests to when they run as their owner (its work
    horse pops them: :mod:`nbrunner.control.job_channel`)."""
    return f"{PREFIX}channel:{job_id}"


def reply_key(job_id: str, request: str) -> str:
    """The list the work horse pushes its answer to a job's request ``request`` to."""
    return f"{channel_key(job_id)}:{request}"


def status_index(status: str) -> str:
    """The sorted set of the ids of the jobs in ``status``, by creation time (like ``JOBS``)."""
    return f"{PREFIX}jobs:{status}"


def worker_key(name: str) -> str:
    """A worker's registration (host, slots, device), kept alive by its heartbeat."""
    return f"{PREFIX}worker:{name}"


def learner_requests(host: str) -> str:
    """The list of learner start requests for the workers of ``host``."""
    return f"{PREFIX}learners:{host}"


def agent_control(worker: str) -> str:
    """The list of signals for the learners one worker started."""
    return f"{PREFIX}agent:{worker}"


def learner_status(learner: str) -> str:
    """A remote learner's status: ``{"pid", "worker", "rc"}``."""
    return f"{PREFIX}learner:{learner}"
SCHEDULES = PREFIX + "schedules"  # sorted set of schedule ids by creation time


def schedule_key(schedule_id: str) -> str:
    """The JSON record of one schedule."""
    return f"{PREFIX}schedule:{schedule_id}"
NOTIFY_DUE = PREFIX + "notify:due"  # sorted set of notifications to send, by when (Unix s)
NOTIFY_SENDING = PREFIX + "notify:sending"  # sorted set of notifications being sent, by when their claim lapses
NOTIFY_GROUP = "nbrunner-notify"  # the consumer group of the event stream that turns ends into notifications


def notify_settings_key(user: str) -> str:
    """A user's notification settings: ``{"targets", "on"}`` (JSON)."""
    return f"{PREFIX}notify:user:{user}"


def notify_log_key(user: str) -> str:
    """A user's notification deliveries, newest first (a capped list of JSON entries)."""
    return f"{PREFIX}notify:log:{user}"


def notify_once_key(kind: str, ident: str) -> str:
    """Set once the end of job, sweep or pipeline ``ident`` has been turned into notifications."""
    return f"{PREFIX}notify:once:{kind}:{ident}"
