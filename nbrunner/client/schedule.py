"""The Python handle on a schedule: :meth:`nbrunner.Cluster.schedule` returns a :class:`Schedule`."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .job import Job

if TYPE_CHECKING:
    from ..core.schedules import ScheduleRecord


class Schedule:
    """A handle on a schedule: ``.id``, ``.record``, ``.pause()``, ``.resume()``, ``.update(**changes)``,
    ``.delete()``, ``.runs()``, ``.to_dict()``."""

    def __init__(self, cluster, schedule_id: str, record: ScheduleRecord | None = None):
        self.cluster = cluster
        self.id = schedule_id
        self.record = record or cluster.backend.schedule(schedule_id)

    def __repr__(self) -> str:
        clock = self.record.cron or f"every {self.record.every} s"
        return f"<Schedule {self.id} {self.record.name!r} {clock}{' paused' if self.record.paused else ''}>"

    def refresh(self) -> "Schedule":
        self.record = self.cluster.backend.schedule(self.id)
        return self

    def update(self, **changes: Any) -> "Schedule":
        """Change fields (``cron``, ``every``, ``timezone``, ``overlap``, ``parameters``, ``paused``, job options)."""
        self.record = self.cluster.backend.update_schedule(self.id, changes)
        return self

    def pause(self) -> "Schedule":
        """No new runs until :meth:`resume` (a running one goes on)."""
        return self.update(paused=True)

    def resume(self) -> "Schedule":
        """Fire again, from the next fire time after now (paused fire times are not made up)."""
        return self.update(paused=False)

    def delete(self) -> None:
        """Remove the schedule; its runs stay, as jobs."""
        self.cluster.backend.delete_schedule(self.id)

    def runs(self) -> list[Job]:
        """The jobs this schedule started, newest first."""
        return [Job(self.cluster, r) for r in self.cluster.backend.jobs(schedule=self.id)[0]]

    def to_dict(self) -> dict[str, Any]:
        """The schedule record (what ``GET /schedules/{id}`` returns)."""
        return self.record.to_dict()
