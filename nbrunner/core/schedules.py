"""Schedules (job definitions): the record, its validation and its fire times.

A schedule runs a notebook on a clock: ``cron`` (5 fields, or ``@hourly``, ``@daily`` /
``@midnight``, ``@weekly``, ``@monthly``) read in the schedule's ``timezone``, or ``every``
N seconds (fire times ``created_at + k*N``).  Exactly one of the two is set.

Pure: no Redis here.  :func:`next_fire` gives the first fire time strictly after a moment;
firing a due schedule (:mod:`nbrunner.core.schedule_lifecycle`, carried out by
:mod:`nbrunner.control.schedules`) moves ``next_run_at`` to the next fire time after *now*, so
fire times missed while no scheduler ran give one run, not one per missed time.
"""
from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from enum import Enum
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .config import MAX_CRON_CHARS, MAX_EVERY_S
from .errors import InvalidRequest
from .limits import check_request
from .models import JOB_OPTIONS as _JOB_OPTIONS, PRIORITY_DEFAULT, JobRequest, parse_time, utcnow

Overlap = Literal["skip", "queue"]
CRON_ALIASES = ("@hourly", "@daily", "@midnight", "@weekly", "@monthly")
# the job options a schedule passes to each run: all but the kernel (its runs use the notebook's)
JOB_OPTIONS = tuple(k for k in _JOB_OPTIONS if k != "kernel")
# fields a PATCH may change
EDITABLE = ("paused", "cron", "every", "timezone", "overlap", "parameters", "notebook", *JOB_OPTIONS)
PUBLIC_FIELDS = (
    "id", "name", "notebook", "parameters", "cron", "every", "timezone", "overlap", "paused", "next_run_at",
    "last_run_at", "created_at", "owner", "min_gpus", "max_gpus", "priority", "timeout",
)


def pydantic_message(exc: ValidationError) -> str:
    """The first error of a pydantic ValidationError as one line naming the field."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        return f"unknown field {loc!r}"
    if err["type"] == "missing":
        return f"missing field {loc!r}"
    return f"{loc}: {msg}" if loc and loc not in msg else msg


def check_timezone(name: Any) -> ZoneInfo:
    """The IANA zone ``name``, or ValueError with a one-line message."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError("timezone must be an IANA zone name such as 'UTC' or 'Europe/Paris'")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError, OSError):
        raise ValueError(f"unknown timezone {name!r} (expected an IANA zone such as 'Europe/Paris')") from None


def check_cron(expr: Any) -> str:
    """A 5-field cron expression or one of :data:`CRON_ALIASES`, normalized; ValueError otherwise."""
    from croniter import croniter

    if not isinstance(expr, str) or not expr.strip():
        raise ValueError("cron must be a 5-field expression such as '0 3 * * *' or @hourly, @daily, @weekly")
    if len(expr) > MAX_CRON_CHARS:
        raise ValueError(f"cron is longer than {MAX_CRON_CHARS} characters")
    expr = " ".join(expr.split())
    if expr.startswith("@"):
        if expr.lower() not in CRON_ALIASES:
            raise ValueError(f"unknown cron alias {expr!r} (use {', '.join(CRON_ALIASES)})")
        return expr.lower()
    if len(expr.split(" ")) != 5:
        raise ValueError(f"cron {expr!r} must have 5 fields (minute hour day month weekday)")
    try:
        croniter(expr, datetime(2000, 1, 1)).get_next(datetime)
    except Exception as exc:  # croniter raises several error types, all "bad expression"
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        raise ValueError(f"invalid cron {expr!r}: {detail[:200]}") from None
    return expr


def _every(v: Any) -> int | None:
    if v is None:
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError("every must be a whole number of seconds")
    if not 1 <= v <= MAX_EVERY_S:
        raise ValueError(f"every must be between 1 and {MAX_EVERY_S} seconds, got {v}")
    return v


class ScheduleSpec(BaseModel):
    """What a user asks for (``POST /schedules``): validated before anything is stored."""

    model_config = ConfigDict(extra="forbid", strict=True)

    notebook: str
    parameters: dict[str, Any] = Field(default_factory=dict)
    cron: str | None = None
    every: int | None = None
    timezone: str = "UTC"
    overlap: Overlap = "skip"
    paused: bool = False
    name: str | None = None
    min_gpus: int = 0
    max_gpus: int | None = None
    priority: int = PRIORITY_DEFAULT
    timeout: float | None = None

    @field_validator("cron", mode="before")
    @classmethod
    def _cron(cls, v: Any) -> Any:
        return None if v is None else check_cron(v)

    @field_validator("every", mode="before")
    @classmethod
    def _every(cls, v: Any) -> Any:
        return _every(v)

    @field_validator("timezone", mode="before")
    @classmethod
    def _timezone(cls, v: Any) -> Any:
        check_timezone(v)
        return v

    @field_validator("overlap", mode="before")
    @classmethod
    def _overlap(cls, v: Any) -> Any:
        if v not in ("skip", "queue"):
            raise ValueError(f"overlap must be 'skip' or 'queue', got {v!r}")
        return v

    @model_validator(mode="after")
    def _one_clock(self) -> "ScheduleSpec":
        if (self.cron is None) == (self.every is None):
            raise ValueError("give exactly one of cron and every")
        return self

    def job_request(self) -> dict[str, Any]:
        """The job request of one run (without the schedule id)."""
        return {"notebook": self.notebook, "parameters": self.parameters,
                **{k: getattr(self, k) for k in JOB_OPTIONS}}

    @classmethod
    def parse(cls, data: Any) -> "ScheduleSpec":
        """Validate a schedule request (the job options as for a job), with one-line errors."""
        if not isinstance(data, dict):
            raise InvalidRequest("a schedule must be a JSON object")
        check_request(data)
        try:
            spec = cls.model_validate(data)
        except ValidationError as exc:
            raise InvalidRequest(pydantic_message(exc)) from None
        job = JobRequest.parse(spec.job_request())  # parameters and job options, checked like a job's
        spec.parameters, spec.max_gpus, spec.name = job.parameters, job.max_gpus, job.name
        spec.timeout = job.timeout
        return spec


class ScheduleState(str, Enum):
    """A schedule is ``active`` (it has a next fire time) or ``paused`` (it has none); not stored:
    the record's ``paused`` says which."""

    ACTIVE = "active"
    PAUSED = "paused"

    __str__ = str.__str__


class ScheduleRecord(BaseModel):
    """A schedule as stored in Redis (the public fields plus bookkeeping); immutable, changed only
    by :mod:`nbrunner.core.schedule_lifecycle`."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str
    name: str
    notebook: str
    parameters: dict[str, Any] = Field(default_factory=dict)
    cron: str | None = None
    every: int | None = None
    timezone: str = "UTC"
    overlap: Overlap = "skip"
    paused: bool = False
    next_run_at: str | None = None
    last_run_at: str | None = None
    created_at: str = Field(default_factory=utcnow)
    owner: str = ""
    min_gpus: int = 0
    max_gpus: int = 0
    priority: int = PRIORITY_DEFAULT
    timeout: float | None = None
    # bookkeeping
    groups: list[str] = Field(default_factory=list)  # the owner's groups (a hub's), given to each run
    from_content: bool = False  # the notebook came with the request: every run runs its snapshot
    last_job: str | None = None  # the id of the latest run (overlap=skip looks at it)
    last_error: str | None = None  # why the latest fire time gave no run, if it did not
    pipeline: str | None = None  # a schedule of a pipeline: its name (runs are pipelines, last_job the latest)

    @property
    def state(self) -> ScheduleState:
        return ScheduleState.PAUSED if self.paused else ScheduleState.ACTIVE

    def spec(self) -> ScheduleSpec:
        return ScheduleSpec.parse({k: getattr(self, k) for k in ScheduleSpec.model_fields})

    def to_dict(self) -> dict[str, Any]:
        d = self.model_dump()
        return {**{k: d[k] for k in PUBLIC_FIELDS}, **{k: d[k] for k in ("groups", "last_job", "last_error",
                                                                           "pipeline")}}


def iso(moment: datetime) -> str:
    """``moment`` as the records write times: UTC, milliseconds, ``Z``."""
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def next_fire(rec: ScheduleRecord | ScheduleSpec, after: datetime, anchor: datetime | None = None) -> datetime:
    """The first fire time strictly after ``after`` (aware, UTC).

    ``every``: fire times are ``anchor + k*every`` (``anchor``: the schedule's creation or its
    last edit of the clock); ``cron``: read in the schedule's timezone."""
    after = after.astimezone(timezone.utc)
    if rec.every is not None:
        anchor = (anchor or after).astimezone(timezone.utc)
        if after < anchor:
            return anchor
        k = math.floor((after - anchor).total_seconds() / rec.every) + 1
        fire = anchor + timedelta(seconds=k * rec.every)
        return fire if fire > after else fire + timedelta(seconds=rec.every)
    from croniter import croniter

    local = after.astimezone(check_timezone(rec.timezone))
    fire = croniter(rec.cron, local).get_next(datetime)
    return fire.astimezone(timezone.utc)


def is_due(rec: ScheduleRecord, now: datetime) -> bool:
    at = parse_time(rec.next_run_at)
    return not rec.paused and at is not None and at <= now
