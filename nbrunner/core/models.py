"""The job record and the request that creates one, each one model (msgspec: validated in
microseconds and imported in milliseconds, so the CLI needs no lighter twin), with the job's
statuses, priority bounds and times.

A record is immutable (``frozen``): it changes only through :mod:`nbrunner.core.lifecycle`,
which returns a new record for each event.
"""
from __future__ import annotations

import json
import keyword
import math
import operator
from datetime import datetime, timezone
from enum import Enum
from typing import Any

import msgspec

from .config import MAX_TIMEOUT_S, RETRIES_DEFAULT
from .errors import InvalidRequest
from .inputs import InputRef, check_paths
from .limits import MAX_INT64, check_request


class JobStatus(str, Enum):
    """What a user sees of a job's life: ``queued`` -> ``running`` -> one of the finished ones
    (a job re-queued after its worker was lost goes back to ``queued``)."""

    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    __str__ = str.__str__  # "queued", in messages and f-strings too

    @property
    def finished(self) -> bool:
        return self in _FINISHED


class JobPhase(str, Enum):
    """Where a job is between the scheduler and its worker (bookkeeping; the status is what
    users see): ``waiting`` and ``dispatched`` are queued (not yet / handed to a worker for the
    current attempt); ``running``, and ``preempting``: running, but its worker is asked to stop
    it and give its GPUs back (an account reclaims them), after which it waits again;
    ``stopping``: finished, but its worker has not yet confirmed that nothing of it runs;
    ``ended``: finished and released."""

    WAITING = "waiting"
    DISPATCHED = "dispatched"
    RUNNING = "running"
    PREEMPTING = "preempting"
    STOPPING = "stopping"
    ENDED = "ended"

    __str__ = str.__str__


_FINISHED = frozenset({JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED})
STATUSES = tuple(s.value for s in JobStatus)
FINISHED = tuple(s.value for s in JobStatus if s.finished)
PRIORITY_MIN, PRIORITY_MAX, PRIORITY_DEFAULT = 1, 10000, 5000
# The job options: what a request names beside the notebook and its parameters (JobRequest's fields of these
# names, which declare their types and defaults).  Declared here only: a sweep passes them to every trial, a
# schedule to every run (all but the kernel), a pipeline step to its job (all but the name, which is the step's).
JOB_OPTIONS = ("name", "min_gpus", "max_gpus", "priority", "timeout", "kernel")

# Fields of the public job record (the README's job record), in display order.
PUBLIC_FIELDS = (
    "id", "name", "notebook", "parameters", "status", "priority", "min_gpus", "max_gpus", "gpus",
    "owner", "created_at", "started_at", "finished_at", "output", "error", "progress", "metrics", "sweep",
    "schedule",
    "history",
)
# Bookkeeping fields that ``to_dict()`` (the REST and ``--json`` job) shows after the public ones.
SHOWN_EXTRA = ("timeout", "kernel", "attempt", "worker", "host", "queue_position", "groups", "account", "reclaimed",
               "pipeline", "step", "waiting", "expected_start", "expected_end",
               "inputs")
_SHOWN = (*PUBLIC_FIELDS, *SHOWN_EXTRA)
_shown_values = operator.attrgetter(*_SHOWN)

# Why a queued job waits (``waiting["code"]``; the rules: nbrunner.core.waiting).
WAITING_CODES = ("capacity", "no_workers", "gpus_busy", "account_limit", "account_share", "reclaiming", "needs")
OUTLOOK_FIELDS = ("waiting", "expected_start", "expected_end",
               "inputs")  # set by the scheduler each pass (Position)


def utcnow() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def duration(started_at: str | None, finished_at: str | None) -> float | None:
    """Seconds from start to finish (to now while running); None before the start."""
    start = parse_time(started_at)
    if start is None:
        return None
    end = parse_time(finished_at) or datetime.now(timezone.utc)
    return max(0.0, (end - start).total_seconds())


# ---- the checks of a request's fields (JobRequest runs them; messages are the user's) ----------

def check_notebook(v: str) -> str:
    if not v.strip():
        raise ValueError("notebook path is empty")
    if "\x00" in v:
        raise ValueError("notebook path contains a NUL byte")
    return v


def check_content_name(v: str) -> str:
    """The ``notebook`` of a request that carries the notebook's content: a relative path of a
    ``.ipynb`` file, kept as given (it names the job, and the job's working directory relative to
    the owner's home).  Raises InvalidRequest."""
    if not isinstance(v, str):
        raise InvalidRequest("notebook must be a path relative to the owner's home")
    try:
        check_notebook(v)
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from None
    parts = v.replace("\\", "/").split("/")
    if v.startswith(("/", "\\", "~")) or ".." in parts:
        raise InvalidRequest(f"notebook path must be relative and stay inside the owner's home: {v}")
    if not parts[-1].endswith(".ipynb") or parts[-1] == ".ipynb":
        raise InvalidRequest(f"not a notebook (expected a .ipynb file): {v}")
    return v


def check_parameters(v: dict) -> dict:
    """Python identifiers, not keywords, mapped to JSON values; returns a copy made of JSON."""
    for key in v:
        if not key.isidentifier():
            raise ValueError(f"parameter name {key!r} is not a Python identifier")
        if keyword.iskeyword(key):
            raise ValueError(f"parameter name {key!r} is a Python keyword")
    try:
        text = json.dumps(v, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"parameters must be JSON values ({exc})") from None
    return json.loads(text)


def check_name(v: str | None) -> str | None:
    if v is not None:
        v = v.strip()
        if not v or len(v) > 200 or any(ord(c) < 32 for c in v):
            raise ValueError("name must be 1..200 printable characters")
    return v


def check_count(v: int | None, field: str) -> int | None:
    """min_gpus, max_gpus, retries."""
    if v is not None and v < 0:
        raise ValueError(f"{field} must be >= 0, got {v}")
    if v is not None and v > MAX_INT64:
        raise ValueError(f"{field} must be at most 2**63-1")
    return v


def check_priority(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise InvalidRequest("priority must be an integer")
    if not PRIORITY_MIN <= v <= PRIORITY_MAX:
        raise InvalidRequest(f"priority must be between {PRIORITY_MIN} and {PRIORITY_MAX}, got {v}")
    return v


def check_timeout(v: Any) -> float | None:
    if v is None:
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError("timeout must be a number of seconds")
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {v}")
    if v > MAX_TIMEOUT_S:
        raise ValueError(f"timeout must be at most {MAX_TIMEOUT_S} s (30 days), got {v:g}")
    return float(v)


def check_bounds(min_gpus: int, max_gpus: int | None) -> int:
    """``max_gpus``, which defaults to ``min_gpus``; no less than it."""
    if max_gpus is None:
        max_gpus = min_gpus
    if min_gpus > max_gpus:
        raise ValueError(f"min_gpus ({min_gpus}) is greater than max_gpus ({max_gpus})")
    return max_gpus


class JobRecord(msgspec.Struct, kw_only=True, frozen=True):
    """The job record kept in Redis: the public fields, then bookkeeping."""

    id: str
    name: str
    notebook: str
    parameters: dict[str, Any] = {}
    status: JobStatus = JobStatus.QUEUED
    priority: int = PRIORITY_DEFAULT
    min_gpus: int = 0
    max_gpus: int = 0
    gpus: int = 0
    owner: str = ""
    created_at: str = msgspec.field(default_factory=utcnow)
    started_at: str | None = None
    finished_at: str | None = None
    output: str | None = None
    error: str | None = None
    progress: float | None = None
    metrics: dict[str, Any] = {}
    sweep: str | None = None
    schedule: str | None = None  # the id of the schedule this job is a run of
    history: list[dict[str, str]] = []  # [{"status", "at"}], oldest first
    # bookkeeping
    groups: list[str] = []  # the owner's groups when they submitted (a hub's groups, which may decide the account)
    timeout: float | None = None
    kernel: str | None = None
    language: str | None = None
    cwd: str | None = None
    report_mode: bool = False
    retries: int = RETRIES_DEFAULT
    attempt: int = 0  # number of times handed to a worker
    lost: int = 0  # times re-queued after its worker was lost (or its kernel killed)
    preempted: int = 0  # times re-queued because its account's GPUs were reclaimed
    phase: JobPhase | None = None  # None only in records written before phases existed: see __post_init__
    worker: str | None = None
    host: str | None = None
    slots: list[list[Any]] = []  # [[host, index], ...] held now
    elastic: bool = False
    training_over: bool = False  # an elastic job whose trainer closed: it wants no GPU until it trains again
    cancel_requested: bool = False  # ended by a decision from outside (cancel, quarantine): its worker stops it
    queue_position: int | None = None
    account: str | None = None  # the path of its account, with an accounts tree
    reclaimed: str | None = None  # why its GPUs were last taken back ("reclaimed by account vision")
    preempt_reason: str | None = None  # why it is being stopped to be re-queued (reclaimed once it is)
    waiting: dict[str, str] | None = None  # why it waits, {"code", "message"} (nbrunner.core.waiting), or None
    expected_start: str | None = None  # queued: when it should start (nbrunner.core.outlook), ISO 8601 UTC
    expected_end: str | None = None  # when it should end, ISO 8601 UTC
    throughput: dict[str, float] = {}  # elastic: samples/s by learner count (goodput)
    pause_s: float | None = None  # elastic: the last resize's measured pause (goodput)
    efficiency: dict[str, float] = {}  # elastic, adaptive batch: statistical efficiency by learner count (goodput)
    setup: str | None = None  # elastic: its trainer's set-up (model, batch rule), for its kind (core.kinds)
    pipeline: str | None = None  # the pipeline this job is a step of
    step: str | None = None  # and the step's name
    inputs: list[str] = []  # files and folders beside the notebook, copied into its working directory (core.inputs)
    input_refs: list[InputRef] = []  # what each input is in the input store
    notify: dict[str, list[str]] | None = None  # the job's own notification settings (core.notify_targets)

    def __post_init__(self) -> None:
        if type(self.status) is not JobStatus:  # made in code with a plain string (decoding gives the enum)
            msgspec.structs.force_setattr(self, "status", JobStatus(self.status))
        if self.phase is None:  # an older record: its phase from its status
            phase = {JobStatus.QUEUED: JobPhase.WAITING, JobStatus.RUNNING: JobPhase.RUNNING}.get(
                self.status, JobPhase.ENDED)
            msgspec.structs.force_setattr(self, "phase", phase)
        elif type(self.phase) is not JobPhase:
            msgspec.structs.force_setattr(self, "phase", JobPhase(self.phase))

    @property
    def finished(self) -> bool:
        return self.status in _FINISHED

    @property
    def dispatched(self) -> bool:
        """Handed to rq for the current attempt, not started yet."""
        return self.phase is JobPhase.DISPATCHED

    @property
    def released(self) -> bool:
        """Nothing of the job runs on any worker (never started, or its worker confirmed)."""
        return self.phase not in (JobPhase.RUNNING, JobPhase.PREEMPTING, JobPhase.STOPPING)

    def outlook_changes(self, position: int | None, outlook: dict[str, Any] | None) -> dict[str, Any] | None:
        """The changes of a ``Position`` event: the queue position and, from ``outlook``, any of ``waiting``,
        ``expected_start`` and ``expected_end`` it names (the others stay).  None when the job may not take
        them: it has ended, or it is not queued and they say it waits."""
        changes = {"queue_position": position, **{k: v for k, v in (outlook or {}).items() if k in OUTLOOK_FIELDS}}
        if self.finished or (self.status is not JobStatus.QUEUED and any(
                changes.get(k) is not None for k in ("queue_position", "waiting", "expected_start"))):
            return None
        return {k: v for k, v in changes.items() if v != getattr(self, k)}

    def to_dict(self) -> dict[str, Any]:
        """The public record (REST, ``--json``, ``Job.to_dict()``)."""
        d = msgspec.to_builtins(self)
        return {**{k: d[k] for k in PUBLIC_FIELDS}, **{k: d[k] for k in SHOWN_EXTRA}}

    def public_view(self) -> dict[str, Any]:
        """The fields of :meth:`to_dict`, in its order, as they are (enums, structs): a msgspec encoder
        makes the same JSON of it as of ``to_dict()``, without the built-in copy (REST replies)."""
        return dict(zip(_SHOWN, _shown_values(self)))

    def to_json(self, indent: int = 0) -> str:
        """The record as the store keeps it (``indent``: for ``job.json``)."""
        raw = msgspec.json.encode(self)
        return (msgspec.json.format(raw, indent=indent) if indent else raw).decode()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobRecord:
        """A record from its public dict (a REST answer: ``to_dict()``; fields it lacks take their
        defaults, fields it has that this version does not know are left out)."""
        return msgspec.convert(data, cls)

    @classmethod
    def from_json(cls, raw: str | bytes) -> JobRecord:
        """A stored record, validated (msgspec.ValidationError or DecodeError if it is not one)."""
        return msgspec.json.decode(raw, type=cls)

    def duration(self) -> float | None:
        return duration(self.started_at, self.finished_at)


class JobRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What a user asks for: validated before anything is queued."""

    notebook: str
    parameters: dict[str, Any] = {}
    name: str | None = None
    min_gpus: int = 0
    max_gpus: int | None = None
    priority: int = PRIORITY_DEFAULT
    timeout: float | None = None
    kernel: str | None = None
    language: str | None = None  # papermill -l: the kernel language, when no kernel is named
    cwd: str | None = None  # the notebook's working directory (relative to the workspace)
    report_mode: bool = False  # papermill --report-mode: hide the input of code cells in the output
    sweep: str | None = None
    schedule: str | None = None  # the schedule this job is a run of
    retries: int | None = None
    pipeline: str | None = None  # the pipeline this job is a step of (made by nbrunner.control.pipelines)
    step: str | None = None
    inputs: list[str] = []  # paths relative to the notebook's directory (core.inputs)
    notify: Any = None  # {"targets", "on"} or a list of targets: overrides the owner's settings for this job

    def __post_init__(self) -> None:
        self.notebook = check_notebook(self.notebook)
        self.inputs = check_paths(self.inputs)
        if self.notify is not None:
            from .notify_targets import check_job_notify

            self.notify = check_job_notify(self.notify)
        self.parameters = check_parameters(self.parameters)
        self.name = check_name(self.name)
        for field in ("min_gpus", "max_gpus", "retries"):
            check_count(getattr(self, field), field)
        check_priority(self.priority)
        self.timeout = check_timeout(self.timeout)
        self.max_gpus = check_bounds(self.min_gpus, self.max_gpus)

    @classmethod
    def parse(cls, data: Any) -> JobRequest:
        """Validate a request, raising InvalidRequest with a one-line message."""
        if not isinstance(data, dict):
            raise InvalidRequest("a job request must be a JSON object")
        check_request(data)
        try:
            return msgspec.convert(data, cls)
        except msgspec.ValidationError as exc:
            raise InvalidRequest(validation_message(exc)) from None


_TYPE_NAMES = {"int": "an integer", "float": "a number", "str": "a string", "bool": "a boolean",
               "object": "an object", "array": "a list", "null": "null"}


def validation_message(exc: msgspec.ValidationError) -> str:
    """A msgspec validation error as one line naming the field, e.g. ``min_gpus: expected an
    integer, got a string`` or ``unknown field 'colour'``."""
    text = str(exc)
    for prefix, shown in (("Object contains unknown field ", "unknown field"),
                          ("Object missing required field ", "missing field")):
        if text.startswith(prefix):
            return f"{shown} {text[len(prefix):].strip('`')!r}"
    message, _, where = text.partition(" - at `$")
    field = where.rstrip("`").lstrip(".")
    if message.startswith("Expected `"):
        wanted, _, got = message[len("Expected "):].partition(", got ")
        names = [_TYPE_NAMES.get(t.strip("` "), t.strip("` ")) for t in wanted.split(" | ")]
        message = f"expected {' or '.join(names)}, got {_TYPE_NAMES.get(got.strip('`'), got.strip('`'))}"
    return f"{field}: {message}" if field and field not in message else message
