"""The pipeline record: immutable, changed only by :mod:`.lifecycle`.

Public shape (``GET /pipelines/{id}``, ``nbrunner pipeline show --json``, ``Pipeline.to_dict()``)::

    {id, name, owner, status: queued|running|completed|failed|cancelled,
     steps: {NAME: {status: pending|queued|running|completed|failed|skipped|cancelled, job, outputs,
                    needs, notebook, kind, sweep, waiting, error, reused}},
     on_failure, created_at, finished_at, rerun_of, schedule}
"""
from __future__ import annotations

from enum import Enum
from typing import Any

import msgspec

from ..models import utcnow


class PipelineStatus(str, Enum):
    """``queued`` until a step runs, ``running``, then one of the finished ones once every step has
    finished: ``failed`` if a step failed, else ``cancelled`` if one was cancelled (or the pipeline
    was), else ``completed``."""

    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    __str__ = str.__str__

    @property
    def finished(self) -> bool:
        return self not in (PipelineStatus.QUEUED, PipelineStatus.RUNNING)


class StepStatus(str, Enum):
    """``pending`` (waits for its needs), ``queued`` (its job or sweep is submitted, or being
    submitted), ``running``, then ``completed``, ``failed``, ``skipped`` (never ran: a need failed,
    or the pipeline was cancelled) or ``cancelled`` (its job was)."""

    PENDING = "pending"
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"

    __str__ = str.__str__

    @property
    def finished(self) -> bool:
        return self in _STEP_FINISHED


_STEP_FINISHED = frozenset({StepStatus.COMPLETED, StepStatus.FAILED, StepStatus.SKIPPED, StepStatus.CANCELLED})
PIPELINE_STATUSES = tuple(s.value for s in PipelineStatus)
STEP_STATUSES = tuple(s.value for s in StepStatus)


class StepState(msgspec.Struct, frozen=True, kw_only=True):
    """One step of a pipeline record: its status, its job (a sweep step's: the best trial's, once
    the sweep ended) or sweep, the outputs it recorded, why it waits, why it failed, and whether
    its job and outputs were taken from an earlier run (``reused``)."""

    status: StepStatus = StepStatus.PENDING
    job: str | None = None
    sweep: str | None = None
    outputs: dict[str, Any] = {}
    needs: list[str] = []
    notebook: str = ""
    kind: str = "notebook"
    waiting: dict[str, str] | None = None
    error: str | None = None
    reused: bool = False
    submitted: bool = False  # its job or sweep exists (or is being made: ``queued`` and not submitted)

    def __post_init__(self) -> None:
        if type(self.status) is not StepStatus:
            msgspec.structs.force_setattr(self, "status", StepStatus(self.status))

    def to_dict(self) -> dict[str, Any]:
        d = msgspec.to_builtins(self)
        d.pop("submitted")
        return d


class PipelineRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A pipeline: the public fields, then what running it needs (the validated file ``spec``;
    each step's notebook is a snapshot taken when the pipeline was made)."""

    id: str
    name: str
    owner: str = ""
    status: PipelineStatus = PipelineStatus.QUEUED
    steps: dict[str, StepState] = {}
    on_failure: str = "stop"
    created_at: str = msgspec.field(default_factory=utcnow)
    finished_at: str | None = None
    rerun_of: str | None = None
    schedule: str | None = None
    # bookkeeping
    groups: list[str] = []
    spec: dict[str, Any] = {}
    cancel_requested: bool = False

    def __post_init__(self) -> None:
        if type(self.status) is not PipelineStatus:
            msgspec.structs.force_setattr(self, "status", PipelineStatus(self.status))

    @property
    def finished(self) -> bool:
        return self.status.finished

    def to_dict(self) -> dict[str, Any]:
        """The public record."""
        return {"id": self.id, "name": self.name, "owner": self.owner, "status": self.status.value,
                "steps": {k: s.to_dict() for k, s in self.steps.items()}, "on_failure": self.on_failure,
                "created_at": self.created_at, "finished_at": self.finished_at, "rerun_of": self.rerun_of,
                "schedule": self.schedule, "groups": list(self.groups)}

    def to_json(self) -> str:
        return msgspec.json.encode(self).decode()

    @classmethod
    def from_json(cls, raw: str | bytes) -> PipelineRecord:
        return msgspec.json.decode(raw, type=cls)


__all__ = ["PipelineRecord", "PipelineStatus", "StepState", "StepStatus", "PIPELINE_STATUSES", "STEP_STATUSES"]
