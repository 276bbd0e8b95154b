"""Every setting of nbrunner, named once: the ``NBRUNNER_*`` environment variables, the timing
and size constants, the input limits, and :class:`Settings` (where a cluster lives).

An environment variable is a :class:`Variable`, read when it is used and never at import, so a
process (or a test) that sets one sees it at the next read.  :data:`VARIABLES` lists them all:
those users set are the README's configuration table (a test keeps the two equal); the others
nbrunner sets for its own child processes.  A bad value is refused with a one-line
:class:`~nbrunner.core.errors.InvalidRequest` naming the variable; :func:`check` reads them all at
a command's start so that it stops there.

The constants after the variables are not read from the environment: change them here.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping
from urllib.parse import quote

from .errors import InvalidRequest

Environ = Mapping[str, str]


class Variable:
    """One ``NBRUNNER_*`` environment variable: its name, its meaning in one line, its default.

    ``kind`` names the getter that reads it (``text``, ``seconds``, ``days``, ``count`` or
    ``flag``); ``shown`` is the default as the README says it when it is not a plain value (a path
    made from others, a random token); ``internal``: nbrunner sets it for its own child processes.
    Every getter reads ``environ`` (``os.environ`` when None); an empty value counts as unset.
    (A plain class, not a dataclass: every command imports this module, and a dataclass costs a
    millisecond to make.)"""

    __slots__ = ("name", "doc", "default", "kind", "shown", "internal")

    def __init__(self, name: str, doc: str, default: str | int | float | None = None, kind: str = "text",
                 shown: str | None = None, internal: bool = False):
        self.name, self.doc, self.default, self.kind, self.shown, self.internal = \
            name, doc, default, kind, shown, internal

    def __repr__(self) -> str:
        return f"Variable({self.name!r})"

    @property
    def default_text(self) -> str:
        """The default as the README's configuration table states it."""
        return self.shown if self.shown is not None else str(self.default)

    def raw(self, environ: Environ | None = None) -> str | None:
        """The value as set, or None when it is unset or empty."""
        return (os.environ if environ is None else environ).get(self.name) or None

    def text(self, environ: Environ | None = None) -> str | None:
        """The value, else the default."""
        raw = self.raw(environ)
        return raw if raw is not None else self.default

    def required(self, environ: Environ | None = None) -> str:
        """The value; InvalidRequest when it is unset and has no default."""
        value = self.text(environ)
        if value is None:
            raise InvalidRequest(f"{self.name} is not set ({self.doc})")
        return value

    def seconds(self, environ: Environ | None = None) -> float:
        """A number of seconds > 0."""
        return self._positive(environ, "seconds")

    def days(self, environ: Environ | None = None) -> float | None:
        """A number of days > 0, or None when unset without a default."""
        return self._positive(environ, "days")

    def count(self, environ: Environ | None = None) -> int | None:
        """A whole number >= 0, or None when unset without a default."""
        raw = (self.raw(environ) or "").strip()
        if not raw:
            return None if self.default is None else int(self.default)
        if not (raw.isascii() and raw.isdigit()):
            raise InvalidRequest(f"{self.name} must be a whole number >= 0{self._or_unset()}, got {raw!r}")
        return int(raw)

    def flag(self, environ: Environ | None = None) -> bool:
        """Whether it is set (to any value)."""
        return self.raw(environ) is not None

    def _positive(self, environ: Environ | None, unit: str) -> float | None:
        raw = (self.raw(environ) or "").strip()
        if not raw:
            return None if self.default is None else float(self.default)
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value <= 0:
            raise InvalidRequest(f"{self.name} must be a number of {unit} > 0{self._or_unset()}, got {raw!r}")
        return value

    def _or_unset(self) -> str:
        return f" (or unset: {self.shown})" if self.default is None and self.shown else ""


# ---- variables users set (the README's configuration table) ------------------------------------

WORKSPACE = Variable("NBRUNNER_WORKSPACE", "the directory nbrunner serves (also JupyterLab's root); `--dir`",
                     shown="current directory")
REDIS_URL = Variable("NBRUNNER_REDIS_URL",
                     "`redis://`, `rediss://` or `unix://` URL of an external Redis; then none is started",
                     shown="embedded Redis at `<workspace>/.nbrunner/redis.sock`")
STORAGE = Variable("NBRUNNER_STORAGE", "where job directories go (a shared mount on several hosts)",
                   shown="`<workspace>/runs`")
#: Re-runs of a job after a lost worker or a killed kernel, when neither it nor ``NBRUNNER_RETRIES`` says.
RETRIES_DEFAULT = 2
RETRIES = Variable("NBRUNNER_RETRIES",
                   "re-runs of a job whose worker was lost or whose kernel was killed from outside", RETRIES_DEFAULT,
                   "count")
WORKER_TTL = Variable("NBRUNNER_WORKER_TTL", "seconds without heartbeat before a worker is declared dead",
                      15, "seconds")
LEASE_TTL = Variable("NBRUNNER_LEASE_TTL", "seconds without renewal before a standby scheduler takes over "
                     "the active one's lease", 5, "seconds")
GOODPUT_QUEUE = Variable("NBRUNNER_GOODPUT_QUEUE_S",
                         "attained GPU-seconds after which the goodput policy serves a job in its second queue "
                         "(after the jobs that received less)", 16 * 3600, "seconds")
KEEP_DAYS = Variable("NBRUNNER_KEEP_DAYS",
                     "remove finished jobs (record and run directory) this many days after they ended",
                     kind="days", shown="keep every job")
RUNTIME_DIR = Variable("NBRUNNER_RUNTIME_DIR", "where running clusters record themselves (`nbrunner list`, discovery)",
                       shown="`$XDG_RUNTIME_DIR/nbrunner` or `~/.local/share/nbrunner/runtime`")
WARM_KERNEL = Variable("NBRUNNER_WARM_KERNEL", "the kernel each worker starts ahead for its next job (a job whose "
                       "kernel, or its notebook's, is that one adopts it)", "python3", shown="`python3`")
LAB_TOKEN = Variable("NBRUNNER_LAB_TOKEN", "the token of the JupyterLab `nbrunner up` starts",
                     shown="a new random token (printed in the lab's URL)")
ELASTIC_THREADS = Variable("NBRUNNER_ELASTIC_THREADS",
                           "torch threads of an ElasticTrainer learner (on a CPU slot: until it gets its share "
                           "of the CPUs)", 1, "count")
ELASTIC_CPUS = Variable("NBRUNNER_ELASTIC_CPUS",
                        "CPUs the learners on CPU slots of one host share out as torch threads", kind="count",
                        shown="the CPUs the learner may run on")
ELASTIC_KEEP_LOGS = Variable("NBRUNNER_ELASTIC_KEEP_LOGS",
                             "keep the learners' logs of an ElasticTrainer run outside a job (any value)",
                             kind="flag", shown="removed after a successful run")
SERVICE_URL = Variable("NBRUNNER_SERVICE_URL",
                       "URL of an nbrunner service (e.g. `http://hub:8000/services/nbrunner/`): the Python API, "
                       "the CLI and the server extension speak REST to it, with no Redis", shown="unset: Redis")
TOKEN = Variable("NBRUNNER_TOKEN", "the API token sent to `NBRUNNER_SERVICE_URL`",
                 shown="`$JUPYTERHUB_API_TOKEN`")

MAX_INPUT_BYTES = Variable("NBRUNNER_MAX_INPUT_BYTES", "bytes of one job's `inputs` in all (past it: a 413)",
                          64 * 1024 * 1024, "count", shown="67108864 (64 MiB)")
SMTP_URL = Variable("NBRUNNER_SMTP_URL", "the SMTP server `mailto:` notifications go through: `smtp://host:port` "
                    "(`smtps://` for TLS; `user:password@` and `?from=ADDRESS` optional)", shown="unset: no e-mail")
NOTIFY_ALLOW = Variable("NBRUNNER_NOTIFY_ALLOW", "the notification targets users may name: schemes (`mailto`, "
                        "`slack`) and `scheme://host` entries, comma-separated", "mailto", shown="`mailto`")
NOTIFY_RETRIES = Variable("NBRUNNER_NOTIFY_RETRIES", "times a failed notification is sent again (with back-off)",
                          5, "count")
NOTIFY_BACKOFF = Variable("NBRUNNER_NOTIFY_BACKOFF_S", "seconds before a failed notification's first retry "
                          "(doubling for each next one, at most an hour)", 30, "seconds")
NOTIFY_PAGE_URL = Variable("NBRUNNER_NOTIFY_PAGE_URL", "the JupyterLab URL notifications link a job's page to "
                           "(`<URL>?nbrunner-job=<id>`)", shown="unset: no link")

#: The variable holding a JupyterHub user's API token in their server (``NBRUNNER_TOKEN`` overrides it).
HUB_TOKEN_NAME = "JUPYTERHUB_API_TOKEN"
#: The variable naming the JupyterHub user in their server (whose jobs ``mine=True`` shows).
HUB_USER_NAME = "JUPYTERHUB_USER"


def service_token(environ: Environ | None = None) -> str | None:
    """The token for ``NBRUNNER_SERVICE_URL``: ``NBRUNNER_TOKEN``, else ``JUPYTERHUB_API_TOKEN``."""
    return TOKEN.raw(environ) or (os.environ if environ is None else environ).get(HUB_TOKEN_NAME) or None

#: Below this uid (system accounts, Debian's UID_MIN) no job runs as its owner.
MIN_UID_DEFAULT = 1000
MIN_UID = Variable("NBRUNNER_MIN_UID", "with `--run-as-owner`: owners whose uid is lower (system accounts, root) "
                   "are refused", MIN_UID_DEFAULT, "count")

# ---- variables nbrunner sets for its own child processes ---------------------------------------

HOST = Variable("NBRUNNER_HOST", "the host name of the worker that started the process (`--host`)",
                shown="the machine's host name", internal=True)
HOST_ADDR = Variable("NBRUNNER_HOST_ADDR", "the address other hosts reach this worker's host at (`--addr`)",
                     shown="127.0.0.1", internal=True)
JOB_ID = Variable("NBRUNNER_JOB_ID", "the job a kernel or a learner belongs to", internal=True)
JOB_DIR = Variable("NBRUNNER_JOB_DIR", "that job's directory (`runs/<job-id>/`)", internal=True)
ATTEMPT = Variable("NBRUNNER_ATTEMPT", "the attempt of that job the process belongs to (its writes are fenced by it)",
                   kind="count", internal=True)
GPUS = Variable("NBRUNNER_GPUS", "the slot indices a job's kernel was granted, comma-separated", internal=True)
SLOT_SOURCE = Variable("NBRUNNER_SLOT_SOURCE", "the `module:factory` that gives an ElasticTrainer in a job its "
                       "slots (the cluster's grant)", internal=True)
SPARE_KERNEL = Variable("NBRUNNER_SPARE_KERNEL", "the spare kernel a worker offers its work horse (JSON)",
                        internal=True)
WARM_IMPORTS = Variable("NBRUNNER_WARM_IMPORTS", "the file listing the modules a warm learner interpreter imports",
                        internal=True)
LEARNER_LOADED = Variable("NBRUNNER_LEARNER_LOADED", "the file a learner started by a learner agent writes once "
                          "it has loaded its job (the agent's warm interpreters import those modules ahead)",
                          internal=True)
ELASTIC_SYSPATH = Variable("NBRUNNER_ELASTIC_SYSPATH", "the trainer's sys.path, for its learners", internal=True)
ELASTIC_DEVICE = Variable("NBRUNNER_ELASTIC_DEVICE", "the device kind of a learner's slot", "cpu", internal=True)
ELASTIC_STORE_TIMEOUT = Variable("NBRUNNER_ELASTIC_STORE_TIMEOUT", "seconds a learner waits for the trainer's store",
                                 60, "seconds", internal=True)
ELASTIC_STANDBY = Variable("NBRUNNER_ELASTIC_STANDBY", "the learner starts ahead and picks its GPU once assigned",
                           kind="flag", internal=True)
RUN_AS_OWNER = Variable("NBRUNNER_RUN_AS_OWNER", "set in a worker that runs jobs as their owners (its work horses "
                        "read it)", kind="flag", internal=True)
JOB_CHANNEL = Variable("NBRUNNER_JOB_CHANNEL", "`worker`: a job's processes ask their work horse for every change",
                       internal=True)

#: Every variable, users' first.
VARIABLES = (WORKSPACE, REDIS_URL, STORAGE, RETRIES, WORKER_TTL, LEASE_TTL, GOODPUT_QUEUE, KEEP_DAYS, RUNTIME_DIR,
             WARM_KERNEL, LAB_TOKEN, ELASTIC_THREADS, ELASTIC_CPUS, ELASTIC_KEEP_LOGS, SERVICE_URL, TOKEN,
             MAX_INPUT_BYTES, SMTP_URL, NOTIFY_ALLOW, NOTIFY_RETRIES, NOTIFY_BACKOFF, NOTIFY_PAGE_URL,
             HOST, HOST_ADDR, JOB_ID, JOB_DIR, ATTEMPT, GPUS, SLOT_SOURCE, SPARE_KERNEL, WARM_IMPORTS, LEARNER_LOADED,
             ELASTIC_SYSPATH, ELASTIC_DEVICE, ELASTIC_STORE_TIMEOUT, ELASTIC_STANDBY, MIN_UID, RUN_AS_OWNER, JOB_CHANNEL)
#: The variables users set (the README's configuration table).
USER_VARIABLES = tuple(v for v in VARIABLES if not v.internal)

#: The name the learner agent and the learner import (they move to the variables later).
ENV_LEARNER_LOADED = LEARNER_LOADED.name


def check(variables: Iterable[Variable] = USER_VARIABLES, environ: Environ | None = None) -> None:
    """Read each of ``variables`` with its getter, so that a bad value stops a command at its
    start with its one-line error instead of failing later in a loop."""
    for v in variables:
        getattr(v, v.kind)(environ)


# ---- timing ------------------------------------------------------------------------------------

#: A worker renews its registration, and a standby scheduler tries the lease, this many times per TTL.
RENEWALS_PER_TTL = 5
#: Seconds between the scheduler's passes when no event wakes it sooner.
SCHEDULER_INTERVAL_S = 1.0
#: A pass of d seconds is followed by at least this times d before the next, however many events
#: come (a pass reads every active job: back-to-back passes over a long queue would take a core
#: from the API filling it). At 3 the scheduler is busy at most a quarter of the time.
PASS_REST_FACTOR = 3.0
#: Seconds between the scheduler's replays of the queue for expected starts and ends (sooner when jobs come or go).
ESTIMATE_EVERY_S = 5.0
#: Seconds an expected start or end must move before the record is written again (no event storm).
ESTIMATE_SLACK_S = 3.0
#: Past completed runs per (owner, notebook) whose wall times give a queued job's expected duration.
ESTIMATE_RUNS = 10
#: Unfinished jobs the replay of the queue takes (running first, then by submission): later ones get no estimate.
ESTIMATE_MAX_JOBS = 400
#: Seconds a dispatched rq job may sit "queued" in no queue before it counts as dropped by its worker.
STRANDED_AFTER_S = 10.0
#: Seconds rq lets a job's work horse run past the job's own timeout before it kills it.
JOB_GRACE_S = 30
#: Seconds rq keeps the result of a job's rq job (nbrunner's own record is what lasts).
RQ_RESULT_TTL_S = 3600
#: Seconds rq keeps the failure of a job's rq job.
RQ_FAILURE_TTL_S = 24 * 3600
#: Seconds between a worker's heartbeats while they fail (Redis out of reach): back at once when it returns.
HEARTBEAT_RETRY_S = 0.2
#: Seconds a worker (or its work horse) retries the record of a job's end while Redis is out of reach
#: (restarting from its AOF, a link down): the end is not lost to an outage, and the worker does not die of it.
OUTAGE_RETRY_S = 120.0
#: Seconds a worker's Redis connection waits on its socket: a heartbeat over a cut link fails fast.
WORKER_SOCKET_TIMEOUT_S = 5
#: Seconds a Redis client of nbrunner waits to connect.
REDIS_CONNECT_TIMEOUT_S = 5
#: Seconds an idle Redis connection may go unchecked before its next use pings it first.
REDIS_HEALTH_CHECK_S = 10
#: Seconds ``nvidia-smi`` has to list a worker's GPUs (``--gpus auto``).
GPU_DETECT_TIMEOUT_S = 20
#: Seconds a worker waits for a job's killed leftovers (kernel, learners) to exit.
LEFTOVERS_WAIT_S = 5
#: Times a kernel that dies before running a cell is started, in all, before the job fails.
KERNEL_START_TRIES = 3
#: Seconds a kernel (a spare one adopted, or one forked by the fork server) has to start.
KERNEL_START_TIMEOUT_S = 60
#: Seconds after the SIGINT of a job's deadline before its kernel is killed (a cell ignoring interrupts).
KERNEL_KILL_AFTER_S = 3.0
#: Seconds a learner leaving a generation gets to exit on its own before it is stopped.
LEARNER_LEAVE_GRACE_S = 2.0
#: Seconds between terminating a learner that does not exit and killing it.
LEARNER_KILL_AFTER_S = 3.0
#: Seconds without a step in an abandoned generation before a learner takes its collective as stuck.
LEARNER_STALLED_S = 0.5
#: Seconds a learner request on another host may wait for a worker to claim it before it is cancelled.
LEARNER_START_TIMEOUT_S = 30.0
#: Seconds ``nbrunner service`` reuses the hub's answer for a token (a revoked token works at most this long).
HUB_AUTH_CACHE_S = 60
#: The port of ``nbrunner service`` when neither ``--port`` nor the service's url in the hub config gives one.
SERVICE_PORT = 10101
#: Changes of the accounts' held GPUs kept for the cluster view's chart.
ACCOUNTS_TIMELINE_KEPT = 10_000
#: Seconds an hour's bucket of account usage is kept (the last 24 h are summed from them).
USAGE_BUCKETS_KEPT_S = 25 * 3600
#: A longer gap between two scheduler passes (no scheduler ran) is not counted as GPU use.
USAGE_MAX_PASS_GAP_S = 300.0
#: Seconds a server process keeps its count of API requests before adding it to Redis (at the most).
REQUEST_COUNTS_FLUSH_S = 1.0
#: The port of ``nbrunner metrics`` (the Prometheus exporter) without ``--port``.
METRICS_PORT = 9470
#: Days ``nbrunner usage`` and ``GET /usage`` cover without ``since``.
USAGE_SINCE_DAYS = 7
#: The most days back ``since`` may reach.
USAGE_MAX_DAYS = 366
#: Seconds a worker's learner agent waits before starting warm learner interpreters again.
WARM_LEARNER_REFILL_S = 10.0
#: Seconds papermill's per-cell limit adds to a job's timeout (a backstop: the deadline ends the job first).
CELL_TIMEOUT_MARGIN_S = 60
#: Seconds between papermill's saves of ``output.ipynb`` while a cell runs.
OUTPUT_AUTOSAVE_S = 10
#: Seconds a purge waits for a just-finished job's worker to confirm its release.
PURGE_WAIT_S = 10.0
#: Seconds between the scheduler's retention passes (``NBRUNNER_KEEP_DAYS``).
RETENTION_EVERY_S = 10.0
#: Seconds a sweep's lock lives unless its holder releases it (a holder that died).
SWEEP_LOCK_TTL_S = 30.0
#: Seconds a cancel of a sweep waits for the sweep's lock.
SWEEP_LOCK_WAIT_S = 10.0
#: Seconds a learner's status key outlives its last change.
LEARNER_STATUS_TTL_S = 3600
#: Seconds between the supervisor's checks for a dead Redis or scheduler (restarted).
SUPERVISOR_CHECK_S = 0.5
#: Seconds the supervisor gives its processes to stop before it kills them.
SUPERVISOR_STOP_TIMEOUT_S = 15.0
#: Seconds the embedded Redis has to start.
REDIS_START_TIMEOUT_S = 15.0
#: Seconds the embedded Redis has to stop before it is killed.
REDIS_STOP_TIMEOUT_S = 10.0
#: Seconds ``setup_cluster`` waits for its scheduler and workers.
SETUP_READY_TIMEOUT_S = 60.0
#: Seconds ``Cluster.wait_ready`` waits by default.
WAIT_READY_TIMEOUT_S = 30.0
#: Seconds `job.wait()` waits for the job's change on the event stream before it reads the record anyway.
WAIT_RECHECK_S = 1.0
#: Seconds a model server has to start (torch and the model in a fresh interpreter).
MODEL_SERVER_START_TIMEOUT_S = 120.0
#: Seconds a model server has to stop before it is killed.
MODEL_SERVER_STOP_TIMEOUT_S = 10.0
#: Seconds a non-elastic borrower keeps lent GPUs once asked for them (an accounts file's ``reclaim_after``).
RECLAIM_AFTER_S = 30.0
#: Seconds a client of an nbrunner service waits on its connection (to connect, for each read).
SERVICE_TIMEOUT_S = 60.0
#: Seconds the server extension waits to connect to the nbrunner service it forwards to.
FORWARD_CONNECT_TIMEOUT_S = 10.0
#: Seconds one forwarded request may last in all (a download, a stream of events).
FORWARD_REQUEST_TIMEOUT_S = 24 * 3600.0
#: Seconds between the polls of ``nbrunner logs --follow``.
FOLLOW_POLL_S = 0.5
#: Seconds between two redraws of ``nbrunner jobs --watch``'s table, at the quickest.
WATCH_REDRAW_S = 0.2
#: Seconds one read of ``nbrunner jobs --watch`` waits for a change.
WATCH_WAIT_S = 4.0
#: Seconds one blocked read of the event stream waits at most (redis-py times a read out after 5).
EVENTS_MAX_BLOCK_S = 4.0
#: Seconds without a change after which the push channel sends a heartbeat (and its position).
PUSH_HEARTBEAT_S = 15.0

#: Seconds between the notification sender's looks for notifications that are due.
NOTIFY_POLL_S = 0.25
#: Seconds a sender holds a notification it took; one not sent by then (its sender died) is sent again.
NOTIFY_CLAIM_S = 120.0
#: Seconds one delivery (an SMTP session, an Apprise post) may take.
NOTIFY_SEND_TIMEOUT_S = 30.0
#: The longest wait before a failed notification's next retry, in seconds.
NOTIFY_BACKOFF_MAX_S = 3600.0
#: Seconds an entry of the event stream may wait, taken by a dead reader, before another takes it over.
NOTIFY_STALE_ENTRY_S = 30.0
#: Seconds the mark that an end was turned into notifications is kept (against telling it twice).
NOTIFY_ONCE_TTL_S = 7 * 24 * 3600

# ---- sizes and batches ---------------------------------------------------------------------------

#: Events kept in the event stream (approximately).
EVENTS_MAXLEN = 20000
#: Entries kept in the slot log (approximately).
SLOTLOG_MAXLEN = 100_000
#: Events one read of the event stream returns at most.
EVENTS_READ_BATCH = 1000
#: Records one read of a job index returns at most.
PAGE_READ_BATCH = 1000
#: Bytes waiting for one push-channel subscriber before it is disconnected (it resumes).
PUSH_MAX_PENDING = 16 << 20
#: Entries a reconnecting push-channel subscriber may be sent again; past that it reloads.
PUSH_REPLAY_MAX = 5000
#: Records one filtered page may read before it returns what it found (with a cursor).
PAGE_SCAN_MAX = 20000
#: Finished jobs one retention pass may remove.
RETENTION_BATCH = 200
#: Jobs `nbrunner jobs` lists without --limit or --all.
JOBS_SHOWN = 50
#: Jobs a monitor widget lists (the newest).
MONITOR_JOBS_SHOWN = 1000
#: Jobs a page of GET /jobs holds without ``limit``.
JOBS_PAGE_DEFAULT = 1000
#: The largest ``limit`` of GET /jobs.
JOBS_PAGE_MAX = 10000
#: Bytes of notebook files whose checks are kept for the next submit of the same file.
CHECKED_NOTEBOOKS_BYTES = 16 * 1024 * 1024
#: Bytes a download streams, or a model server reads away, at a time.
IO_CHUNK_BYTES = 1 << 20

#: Deliveries a user's notification log keeps (the newest).
NOTIFY_LOG_KEPT = 200

# ---- input limits (the README's "Limits") -------------------------------------------------------

#: Nesting of a parameter value (lists and objects inside each other).
MAX_DEPTH = 32
#: Bytes of one job's parameters, as JSON.
MAX_PARAMETERS_BYTES = 256 * 1024
#: Bytes of a REST request body.
MAX_BODY = 1024 * 1024
#: Characters of a listing's text filter (GET /jobs's owner, q, schedule and sweep).
MAX_FILTER = 200
#: Job ids one GET /models?jobs= checks.
MAX_MODEL_JOBS = 500
#: Nesting of a REST request body.
MAX_BODY_DEPTH = 64
#: Seconds of a job's wall time: 30 days.
MAX_TIMEOUT_S = 30 * 24 * 3600
#: Bytes of a YAML parameters file or sweep spec.
MAX_YAML_BYTES = 64 * 1024
#: Nesting of a YAML document.
MAX_YAML_DEPTH = 64
#: Characters of a notebook path, name or kernel.
MAX_STRING_CHARS = 4096
#: Bytes of a notebook a job is submitted with.
MAX_NOTEBOOK_BYTES = 50 * 1024 * 1024
#: Bytes of a REST request body that carries a notebook's ``content`` (as JSON text, escaping can double it).
MAX_CONTENT_BODY = 2 * MAX_NOTEBOOK_BYTES
#: Trials of one sweep.
MAX_TRIALS = 1000
#: Bytes of a pipeline file (YAML, or the JSON of ``POST /pipelines`` without the notebooks' content).
MAX_PIPELINE_BYTES = 64 * 1024
#: Steps of one pipeline.
MAX_PIPELINE_STEPS = 100
#: Seconds a pipeline's lock lives unless its holder releases it (a holder that died).
PIPELINE_LOCK_TTL_S = 30.0
#: Seconds a cancel or rerun of a pipeline waits for the pipeline's lock.
PIPELINE_LOCK_WAIT_S = 10.0
#: Job requests one ``POST /jobs`` (or ``cluster.submit_many``) may carry.
MAX_BULK_JOBS = 1000
#: A schedule's ``every``, in seconds (a leap year).
MAX_EVERY_S = 366 * 24 * 3600
#: Characters of a schedule's ``cron``.
MAX_CRON_CHARS = 200
#: The lowest port a model server may be asked to listen on (no privileged port).
MODEL_SERVER_MIN_PORT = 1024
#: An account's weight in an accounts file.
MAX_WEIGHT = 1_000_000
#: GPUs of an account's ``guaranteed`` and ``limit`` in an accounts file.
MAX_ACCOUNT_GPUS = 2**31 - 1
#: Bytes of a body a model server's ``POST /predict`` reads (a larger one gets a 400).
MODEL_MAX_BODY = 16 * 1024 * 1024
#: Bytes of a refused body a model server still reads away, so that the client sees the 400, not a reset.
MODEL_DRAIN_BYTES = 64 * 1024 * 1024

# ---- where a cluster lives -----------------------------------------------------------------------

#: The workspace's directory of nbrunner's own state (the embedded Redis, logs).
STATE_DIR = ".nbrunner"
#: With jobs run as their owners, the embedded Redis's password (in the 0700 state directory: only
#: nbrunner's own processes read it).
PASSWORD_FILE = "redis.password"
#: With jobs run as their owners, the directory (in the workspace) of the socket jobs reach Redis on.
SOCKET_DIR = ".nbrunner-socket"


@dataclass(frozen=True)
class Settings:
    """Resolved configuration of one nbrunner workspace."""

    workspace: Path
    storage: Path
    redis_url: str | None  # None: the embedded Redis of the workspace

    @classmethod
    def load(cls, workspace: str | os.PathLike | None = None) -> "Settings":
        ws = Path(workspace or WORKSPACE.text() or os.getcwd()).expanduser().resolve()
        storage = STORAGE.text()
        return cls(
            workspace=ws,
            storage=Path(storage).expanduser().resolve() if storage else ws / "runs",
            redis_url=REDIS_URL.text(),
        )

    @property
    def state_dir(self) -> Path:
        return self.workspace / STATE_DIR

    @property
    def socket_path(self) -> Path:
        return embedded_socket(self.state_dir, embedded_password(self.state_dir) is not None)

    @property
    def embedded(self) -> bool:
        return self.redis_url is None

    @property
    def url(self) -> str:
        """The Redis URL clients use (the embedded server's unix socket when none is set)."""
        return self.redis_url or embedded_url(self.state_dir)

    def job_dir(self, job_id: str) -> Path:
        return self.storage / job_id

    def env(self) -> dict[str, str]:
        """Environment that makes a child process see this same cluster."""
        return {WORKSPACE.name: str(self.workspace), STORAGE.name: str(self.storage), REDIS_URL.name: self.url}


def embedded_password(state_dir: Path) -> str | None:
    """The password of the workspace's embedded Redis (None: it wants none, or this process may
    not know it)."""
    try:
        return (state_dir / PASSWORD_FILE).read_text().strip() or None
    except OSError:
        return None


def embedded_socket(state_dir: Path, shared: bool) -> Path:
    """The embedded Redis's socket: in the private state directory, or, when it is shared with the
    jobs' own processes (password-protected), in a directory beside it that they can reach."""
    return state_dir.parent / SOCKET_DIR / "redis.sock" if shared else state_dir / "redis.sock"


def embedded_url(state_dir: Path) -> str:
    """The URL of the workspace's embedded Redis, with its password if it has one."""
    password = embedded_password(state_dir)
    auth = f":{quote(password, safe='')}@" if password else ""
    return f"unix://{auth}{embedded_socket(state_dir, password is not None)}"


def redact(url: str) -> str:
    """A Redis URL with any password removed, for messages and logs."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None and "@" not in parts.netloc:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}:***@" if parts.username else "***@"
    return urlunsplit((parts.scheme, user + host, parts.path, parts.query, parts.fragment))
