"""The Python handle on a schedule: :meth:`nbrunner.Cluster.schedule` returns a :class:`Schedule`."""
from __future__ import annotations

from typing import Any

from ..control import schedules
from ..core.schedules import ScheduleRecord
from .job import Job


class Schedule:
    """A handle on a schedule: ``.id``, ``.record``, ``.pause()``, ``.resume()``, ``.update(**changes)``,
    ``.delete()``, ``.runs()``, ``.to_dict()``."""

    def __init__(self, cluster, schedule_id: str, record: ScheduleRecord | None = None):
        self.cluster = cluster
        self.id = schedule_id
        self.record = record or schedules.get_schedule(cluster.store, schedule_id)

    def __repr__(self) -> str:
        clock = self.record.cron or f"every {self.record.every} s"
        return f"<Schedule {self.id} {self.record.name!r} {clock}{' paused' if self.record.paused else ''}>"

    def refresh(self) -> "Schedule":
        self.record = schedules.get_schedule(self.cluster.store, self.id)
        return self

    def update(self, **changes: Any) -> "Schedule":
        """Change fields (``cron``, ``every``, ``timezone``, ``overlap``, ``parameters``, ``paused``, job options)."""
        self.record = schedules.update_schedule(self.cluster.store, self.cluster.settings, self.id, changes)
        return self

    def pause(self) -> "Schedule":
        """No new runs until :meth:`resume` (a running one goes on)."""
        return self.update(paused=True)

    def resume(self) -> "Schedule":
        """Fire again, from the next fire time after now (paused fire times are not made up)."""
        return self.update(paused=False)

    def delete(self) -> None:
        """Remove the schedule; its runs stay, as jobs."""
        schedules.delete_schedule(self.cluster.store, self.id)

    def runs(self) -> list[Job]:
        """The jobs this schedule started, newest first."""
        return [Job(self.cluster, r) for r in schedules.runs_of(self.cluster.store, self.id)]

    def to_dict(self) -> dict[str, Any]:
        """The schedule record (what ``GET /schedules/{id}`` returns)."""
        return self.record.to_dict()
