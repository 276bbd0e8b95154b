"""The Python handle on a sweep: :meth:`nbrunner.Cluster.sweep` returns a :class:`Sweep`."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ..control.sweeps import cancel_sweep, create_sweep, get_record, jobs_of, sweep_ids
from ..core.errors import NotFound
from ..core.sweeps.leaderboard import leaderboard
from ..core.sweeps.trials import SweepRecord
from .job import Job


def submit_sweep(cluster, notebook: str | os.PathLike, spec: Any, *, owner: str | None = None,
                 base: Path | None = None, allow_file: bool = True, **options: Any) -> "Sweep":
    """What :meth:`nbrunner.Cluster.sweep` does: validate, submit the first trials, return a :class:`Sweep`.

    ``options``: job fields for every trial (``name``, ``min_gpus``, ``max_gpus``, ``priority``,
    ``timeout``, ``kernel``)."""
    rec = create_sweep(cluster.store, cluster.settings, notebook, spec, owner=owner,
                       base=Path.cwd() if base is None else base, allow_file=allow_file, **options)
    return Sweep(cluster, rec.id, rec)


class Sweep:
    """A handle on a sweep: ``.id``, ``.jobs``, ``.wait()``, ``.leaderboard()``, ``.to_dict()``."""

    def __init__(self, cluster, sweep_id: str, record: SweepRecord | None = None):
        self.cluster = cluster
        self.id = sweep_id
        self.record = record or get_record(cluster.store, sweep_id)

    def __repr__(self) -> str:
        return f"<Sweep {self.id} {self.record.name!r} {self.record.status} {len(self.record.trials)} trials>"

    def refresh(self) -> "Sweep":
        self.record = get_record(self.cluster.store, self.id)
        return self

    @property
    def status(self) -> str:
        return self.refresh().record.status

    @property
    def trials(self) -> list[dict[str, Any]]:
        """``[{"parameters": {...}}, ...]``: every trial, in order."""
        return [{"parameters": t.parameters} for t in self.record.trials]

    @property
    def jobs(self) -> list:
        """The trial jobs submitted so far, in trial order (refreshed on every access)."""
        self.refresh()
        records = jobs_of(self.cluster.store, self.record.job_ids())
        return [Job(self.cluster, records[j]) for j in self.record.job_ids() if j in records]

    def wait(self, timeout: float | None = None, poll: float = 0.3) -> "Sweep":
        """Block until every trial has finished (or the sweep was cancelled); TimeoutError after ``timeout`` s."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.refresh().record.finished:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"sweep {self.id} still running after {timeout} s")
            time.sleep(poll)
        return self

    def leaderboard(self) -> list[dict[str, Any]]:
        self.refresh()
        return leaderboard(self.record, jobs_of(self.cluster.store, self.record.job_ids()))

    def best(self) -> dict[str, Any] | None:
        board = self.leaderboard()
        return board[0] if board and board[0]["rank"] is not None else None

    def cancel(self) -> "Sweep":
        self.record = cancel_sweep(self.cluster.store, self.id, self.cluster.settings)
        return self

    def to_dict(self) -> dict[str, Any]:
        """``{"id", "jobs", "leaderboard"}`` (what ``GET /sweeps/{id}`` returns)."""
        self.refresh()
        jobs = jobs_of(self.cluster.store, self.record.job_ids())
        return {"id": self.id, "jobs": [jobs[j].to_dict() for j in self.record.job_ids() if j in jobs],
                "leaderboard": leaderboard(self.record, jobs)}


def get_sweep(cluster, sweep_id: str) -> Sweep:
    return Sweep(cluster, sweep_id)


def list_sweeps(cluster) -> list[Sweep]:
    out = []
    for sid in sweep_ids(cluster.store):
        try:
            out.append(Sweep(cluster, sid))
        except NotFound:
            continue
    return out
