"""The Python handle on a sweep: :meth:`nbrunner.Cluster.sweep` returns a :class:`Sweep`."""
from __future__ import annotations

import re
import time
from typing import Any, NamedTuple

from ..core.models import FINISHED, JobRecord
from .job import Job

_TRIAL_NUMBER = re.compile(r" #\d+$")  # a trial job's name is the sweep's name and " #N"


class SweepState(NamedTuple):
    """A sweep as its handle shows it: the ``GET /sweeps/{id}`` object (``id``, trial ``jobs`` in
    trial order, ``leaderboard``: one row per trial) with the sweep's ``name`` and ``status``
    (``running``, ``completed`` or ``cancelled``)."""

    id: str
    name: str
    status: str
    jobs: list[JobRecord]
    leaderboard: list[dict[str, Any]]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SweepState":
        """The state of a ``GET /sweeps/{id}`` object, which names neither the sweep nor its status:
        the name is that of its trials, and it is running while a trial has not finished (or not
        started), else cancelled if a trial was cancelled before it started, else completed."""
        jobs = [JobRecord.from_dict(j) for j in data["jobs"]]
        rows = data["leaderboard"]
        if any(row["status"] not in FINISHED for row in rows):
            status = "running"
        elif any(row["job"] is None and row["status"] == "cancelled" for row in rows):
            status = "cancelled"
        else:
            status = "completed"
        name = _TRIAL_NUMBER.sub("", jobs[0].name) if jobs else data["id"]
        return cls(data["id"], name, status, jobs, rows)

    @property
    def finished(self) -> bool:
        return self.status in ("completed", "cancelled")

    @property
    def trials(self) -> list[dict[str, Any]]:
        """``[{"parameters": {...}}, ...]``: every trial, in order."""
        return [{"parameters": row["parameters"]} for row in sorted(self.leaderboard, key=lambda r: r["trial"])]

    def job_ids(self) -> list[str]:
        return [j.id for j in self.jobs]

    def to_dict(self) -> dict[str, Any]:
        """``{"id", "jobs", "leaderboard"}`` (what ``GET /sweeps/{id}`` returns)."""
        return {"id": self.id, "jobs": [j.to_dict() for j in self.jobs], "leaderboard": self.leaderboard}


class Sweep:
    """A handle on a sweep: ``.id``, ``.jobs``, ``.wait()``, ``.leaderboard()``, ``.to_dict()``;
    ``.record`` is its latest :class:`SweepState`."""

    def __init__(self, cluster, sweep_id: str, record: SweepState | None = None):
        self.cluster = cluster
        self.id = sweep_id
        self.record = record or cluster.backend.sweep(sweep_id)

    def __repr__(self) -> str:
        return f"<Sweep {self.id} {self.record.name!r} {self.record.status} {len(self.record.leaderboard)} trials>"

    def refresh(self) -> "Sweep":
        self.record = self.cluster.backend.sweep(self.id)
        return self

    @property
    def status(self) -> str:
        return self.refresh().record.status

    @property
    def trials(self) -> list[dict[str, Any]]:
        """``[{"parameters": {...}}, ...]``: every trial, in order."""
        return self.record.trials

    @property
    def jobs(self) -> list[Job]:
        """The trial jobs submitted so far, in trial order (refreshed on every access)."""
        return [Job(self.cluster, r) for r in self.refresh().record.jobs]

    def wait(self, timeout: float | None = None, poll: float = 0.3) -> "Sweep":
        """Block until every trial has finished (or the sweep was cancelled); TimeoutError after ``timeout`` s."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.refresh().record.finished:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"sweep {self.id} still running after {timeout} s")
            time.sleep(poll)
        return self

    def leaderboard(self) -> list[dict[str, Any]]:
        return self.refresh().record.leaderboard

    def best(self) -> dict[str, Any] | None:
        board = self.leaderboard()
        return board[0] if board and board[0]["rank"] is not None else None

    def cancel(self) -> "Sweep":
        self.record = self.cluster.backend.cancel_sweep(self.id)
        return self

    def to_dict(self) -> dict[str, Any]:
        """``{"id", "jobs", "leaderboard"}`` (what ``GET /sweeps/{id}`` returns)."""
        return self.refresh().record.to_dict()


def get_sweep(cluster, sweep_id: str) -> Sweep:
    return Sweep(cluster, sweep_id)


def list_sweeps(cluster) -> list[Sweep]:
    """Every sweep of the cluster the caller sees, oldest first."""
    return [Sweep(cluster, s.id, s) for s in cluster.backend.sweeps()]
