"""The sweep record and its trials: immutable, changed only by :mod:`.lifecycle` (the sweep) and
:mod:`.trial_lifecycle` (one trial).

Stored as JSON at ``nbrunner:sweep:<id>``::

    {id, notebook, name, spec, trials: [{parameters, state: pending|submitting|submitted|skipped|cancelled,
     job, error, values, values_final, decisions}], options, owner, groups, from_content, created_at,
     finished_at, status: running|completed|cancelled}
"""
from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..models import utcnow
from .spec import SweepSpec


class SweepStatus(str, Enum):
    """``running`` until every trial is settled and every trial job has ended (``completed``), or
    the sweep is cancelled (``cancelled``)."""

    RUNNING = "running"
    COMPLETED = "completed"
    CANCELLED = "cancelled"

    __str__ = str.__str__

    @property
    def finished(self) -> bool:
        return self is not SweepStatus.RUNNING


class TrialState(str, Enum):
    """``pending`` (not submitted yet), ``submitting`` (its job is being made: marked before the job
    exists, so a crash in between is recovered, never submitted twice), ``submitted`` (it has its
    job), ``skipped`` (its job could not be made) or ``cancelled`` (the sweep was, before it ran)."""

    PENDING = "pending"
    SUBMITTING = "submitting"
    SUBMITTED = "submitted"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"

    __str__ = str.__str__

    @property
    def settled(self) -> bool:
        """Nothing more will be submitted for the trial."""
        return self in (TrialState.SUBMITTED, TrialState.SKIPPED, TrialState.CANCELLED)


class Trial(BaseModel):
    """One trial: its parameters, what became of it, and its objective values for early stopping."""

    model_config = ConfigDict(frozen=True)

    parameters: dict[str, Any]
    state: TrialState = TrialState.PENDING
    job: str | None = None
    error: str | None = None
    values: list[float | None] = Field(default_factory=list)  # objective per report, up to the last rung
    values_final: bool = False  # read after the job finished: nothing more will come
    decisions: dict[str, str] = Field(default_factory=dict)  # rung -> "continue" | "stopped"


class SweepRecord(BaseModel):
    """A sweep: what it runs (the notebook, the validated ``spec``, the job ``options`` of every
    trial), its trials and its status."""

    model_config = ConfigDict(frozen=True)

    id: str
    notebook: str  # relative to the workspace (as given, when it came as content)
    name: str
    spec: dict[str, Any]
    trials: list[Trial]
    options: dict[str, Any] = Field(default_factory=dict)  # job fields given to every trial
    owner: str = ""
    groups: list[str] = Field(default_factory=list)  # the owner's groups (a hub's), given to each trial
    from_content: bool = False  # the notebook came with the request: trials run the snapshot, ``notebook`` names it
    created_at: str = Field(default_factory=utcnow)
    finished_at: str | None = None
    status: SweepStatus = SweepStatus.RUNNING

    @property
    def parsed(self) -> SweepSpec:
        return SweepSpec.model_validate(self.spec)

    @property
    def finished(self) -> bool:
        return self.status.finished

    def job_ids(self) -> list[str]:
        return [t.job for t in self.trials if t.job]


__all__ = ["SweepRecord", "SweepStatus", "Trial", "TrialState"]
