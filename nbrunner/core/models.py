"""The job record and the request that creates one (validated: pydantic; the constants and the
read-only view that need no pydantic are in :mod:`.records`, the request's checks in :mod:`.requests`)."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import InvalidRequest
from .limits import check_request
from .records import (FINISHED, PRIORITY_DEFAULT, PRIORITY_MAX, PRIORITY_MIN, PUBLIC_FIELDS, SHOWN_EXTRA,  # noqa: F401
                      STATUSES, duration, parse_time, utcnow)
from .requests import (check_bounds, check_count, check_name, check_notebook, check_parameters, check_priority,
                       check_timeout)

Status = Literal["queued", "running", "completed", "failed", "cancelled"]


class JobRequest(BaseModel):
    """What a user asks for: validated before anything is queued."""

    model_config = ConfigDict(extra="forbid", strict=True)

    notebook: str
    parameters: dict[str, Any] = Field(default_factory=dict)
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

    @field_validator("notebook")
    @classmethod
    def _notebook(cls, v: str) -> str:
        return check_notebook(v)

    @field_validator("parameters")
    @classmethod
    def _parameters(cls, v: dict) -> dict:
        return check_parameters(v)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str | None) -> str | None:
        return check_name(v)

    @field_validator("min_gpus", "max_gpus", "retries")
    @classmethod
    def _non_negative(cls, v: int | None, info) -> int | None:
        return check_count(v, info.field_name)

    @field_validator("priority")
    @classmethod
    def _priority(cls, v: int) -> int:
        return check_priority(v)

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, v: Any) -> Any:
        return check_timeout(v)

    @model_validator(mode="after")
    def _bounds(self) -> "JobRequest":
        self.max_gpus = check_bounds(self.min_gpus, self.max_gpus)
        return self

    @classmethod
    def parse(cls, data: Any) -> "JobRequest":
        """Validate a request, raising InvalidRequest with a one-line message."""
        if not isinstance(data, dict):
            raise InvalidRequest("a job request must be a JSON object")
        check_request(data)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise InvalidRequest(validation_message(exc)) from None


def validation_message(exc: ValidationError) -> str:
    """The first error of a pydantic ValidationError as one line naming the field."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    if err["type"] == "extra_forbidden":
        return f"unknown field {loc!r}"
    if err["type"] == "missing":
        return f"missing field {loc!r}"
    return f"{loc}: {msg}" if loc and loc not in msg else msg


class JobRecord(BaseModel):
    """The job record kept in Redis (the public fields plus bookkeeping)."""

    model_config = ConfigDict(extra="ignore")

    id: str
    name: str
    notebook: str
    parameters: dict[str, Any] = Field(default_factory=dict)
    status: Status = "queued"
    priority: int = PRIORITY_DEFAULT
    min_gpus: int = 0
    max_gpus: int = 0
    gpus: int = 0
    owner: str = ""
    created_at: str = Field(default_factory=utcnow)
    started_at: str | None = None
    finished_at: str | None = None
    output: str | None = None
    error: str | None = None
    progress: float | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    sweep: str | None = None
    schedule: str | None = None  # the id of the schedule this job is a run of
    history: list[dict[str, str]] = Field(default_factory=list)  # [{"status", "at"}], oldest first
    # bookkeeping
    timeout: float | None = None
    kernel: str | None = None
    language: str | None = None
    cwd: str | None = None
    report_mode: bool = False
    retries: int = 2
    attempt: int = 0  # number of times handed to a worker
    lost: int = 0  # times re-queued after its worker was lost
    dispatched: bool = False  # handed to rq for the current attempt
    worker: str | None = None
    host: str | None = None
    slots: list[list[Any]] = Field(default_factory=list)  # [[host, index], ...] held now
    elastic: bool = False
    training_over: bool = False  # an elastic job whose trainer closed: it wants no GPU until it trains again
    released: bool = True  # the worker confirmed nothing of the job runs anymore
    cancel_requested: bool = False
    queue_position: int | None = None
    throughput: dict[str, float] = Field(default_factory=dict)  # elastic: samples/s by learner count (goodput)
    pause_s: float | None = None  # elastic: the last resize's measured pause (goodput)

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    def note_status(self, before: str | None) -> None:
        """Append a ``history`` entry if the status differs from ``before`` (None: a new record)."""
        if self.status == before:
            return
        at = {"queued": self.created_at if before is None else None, "running": self.started_at}.get(
            self.status, self.finished_at)
        self.history.append({"status": self.status, "at": at or utcnow()})

    def to_dict(self) -> dict[str, Any]:
        d = self.model_dump()
        return {**{k: d[k] for k in PUBLIC_FIELDS}, **{k: d[k] for k in SHOWN_EXTRA}}

    def duration(self) -> float | None:
        return duration(self.started_at, self.finished_at)
