"""Jobs, clusters and schedules as text for people (the CLI and :func:`print_jobs_summary`).

Tables are rich's, imported when one is made: `nbrunner show` prints plain lines and imports no
rich (its import costs more than the command's own work)."""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # records or their read-only views (RecordView): both have these attributes
    from rich.table import Table

    from ..core.models import JobRecord

STATUS_STYLE = {"queued": "yellow", "running": "cyan", "completed": "green", "failed": "red", "cancelled": "magenta"}


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def latest_metric(rec: JobRecord) -> str:
    if not rec.metrics:
        return ""
    for key in ("accuracy", "val_accuracy", "val_loss", "loss", "train_loss"):
        if key in rec.metrics:
            return f"{key}={_fmt(rec.metrics[key])}"
    key, value = next(iter(rec.metrics.items()))
    return f"{key}={_fmt(value)}"


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def jobs_table(records: list[JobRecord]) -> Table:
    from rich.table import Table

    t = Table(box=None, header_style="bold")
    for col in ("id", "name", "status", "gpus", "priority", "duration", "error / metric"):
        t.add_column(col)
    for r in records:
        status = r.status + (f" #{r.queue_position}" if r.status == "queued" and r.queue_position else "")
        t.add_row(r.id, r.name, f"[{STATUS_STYLE[r.status]}]{status}[/]", f"{r.gpus}/{r.max_gpus}", str(r.priority),
                  duration(r.duration()), r.error or latest_metric(r))
    return t


def totals_line(records: list[JobRecord]) -> str:
    counts = Counter(r.status for r in records)
    order = ["completed", "failed", "running", "queued", "cancelled"]
    parts = [f"{counts[s]} {s}" for s in order if counts[s]]
    n = len(records)
    return f"{n} job{'s' if n != 1 else ''}" + (": " + ", ".join(parts) if parts else "")


def job_detail(rec: JobRecord) -> str:
    """The record's fields, one ``name  value`` line each, values aligned (a value's own line
    breaks are indented to the value column)."""
    rows = []
    for k, v in rec.to_dict().items():
        if k == "history":  # queued 2026-01-01T10:00:00.000Z -> running ... -> completed ...
            v = " -> ".join(f"{h.get('status')} {h.get('at')}" for h in v)
        rows.append((k, "" if v is None else str(v)))
    width = max(len(k) for k, _ in rows) + 2
    return "\n".join(f"{k:<{width}}{v}".rstrip().replace("\n", "\n" + " " * width) for k, v in rows)


def cluster_table(status: dict) -> Table:
    from rich.table import Table

    t = Table(box=None, header_style="bold",
              title=f"policy {status['policy']}: {status['gpus_free']} of {status['gpus_total']} GPUs free")
    t.add_column("host")
    t.add_column("slot")
    t.add_column("job")
    for h in status["hosts"]:
        for s in h["slots"]:
            t.add_row(h["name"], str(s["index"]), s["job"] or "-")
    return t


def schedules_table(records: list) -> Table:
    """Schedules (:class:`nbrunner.core.schedules.ScheduleRecord`) one per row."""
    from rich.table import Table

    t = Table(box=None, header_style="bold", title=f"{len(records)} schedule(s)")
    for col in ("id", "name", "notebook", "when", "overlap", "state", "next run", "last run", "owner"):
        t.add_column(col, overflow="fold")
    for r in records:
        when = r.cron if r.cron else f"every {r.every} s"
        if r.cron and r.timezone != "UTC":
            when += f" ({r.timezone})"
        state = "[yellow]paused[/]" if r.paused else "[green]active[/]"
        t.add_row(r.id, r.name, r.notebook, when, r.overlap, state, r.next_run_at or "-", r.last_run_at or "-",
                  r.owner)
    return t
