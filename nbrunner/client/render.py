"""Jobs, clusters and schedules as text for people (the CLI and :func:`print_jobs_summary`).

The CLI's read commands (`nbrunner jobs`, `cluster`, `show`) print plain text (:func:`text_table`,
:func:`job_detail`): rich's import and its table layout (about 0.7 ms a row) cost more than the
commands' own work.  Notebooks and the other commands get rich's tables, imported when one is made."""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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


JOB_COLUMNS = ("id", "name", "status", "waiting", "gpus", "priority", "duration", "error / metric")
ANSI = {"yellow": "33", "cyan": "36", "green": "32", "red": "31", "magenta": "35", "bold": "1"}


def job_cells(r: JobRecord) -> tuple[str, ...]:
    """A job's row under :data:`JOB_COLUMNS`."""
    status = r.status + (f" #{r.queue_position}" if r.status == "queued" and r.queue_position else "")
    return (r.id, r.name, status, waiting_cell(r), f"{r.gpus}/{r.max_gpus}", str(r.priority), duration(r.duration()),
            r.error or latest_metric(r))


def waiting_cell(r: JobRecord) -> str:
    """Why a queued job waits (its code) and when it should start (UTC time of day), else ''."""
    if r.status != "queued":
        return ""
    code = (r.waiting or {}).get("code", "")
    start = f"starts ~{r.expected_start[11:16]}" if r.expected_start else ""
    return " ".join(x for x in (code, start) if x)


def jobs_table(records: list[JobRecord]) -> Table:
    """A rich table of jobs (for notebooks: :func:`print_jobs_summary`)."""
    from rich.table import Table

    t = Table(box=None, header_style="bold")
    shown = shown_columns(records)
    for i in shown:
        t.add_column(JOB_COLUMNS[i])
    for r in records:
        cells = list(job_cells(r))
        cells[2] = f"[{STATUS_STYLE[r.status]}]{cells[2]}[/]"
        t.add_row(*(cells[i] for i in shown))
    return t


def shown_columns(records: list[JobRecord]) -> list[int]:
    """The indices of :data:`JOB_COLUMNS` worth showing: ``waiting`` only when a job waits."""
    waiting = JOB_COLUMNS.index("waiting")
    return [i for i in range(len(JOB_COLUMNS)) if i != waiting or any(waiting_cell(r) for r in records)]


def jobs_text(records: list[JobRecord], width: int | None = None, color: bool = False) -> str:
    """Jobs as a :func:`text_table`, each status in its colour if ``color``."""
    shown = shown_columns(records)
    rows = [[(c, STATUS_STYLE[r.status]) if i == 2 else c for i, c in enumerate(job_cells(r)) if i in shown]
            for r in records]
    return text_table([JOB_COLUMNS[i] for i in shown], rows, width=width, color=color)


def text_table(header, rows, title: str | None = None, width: int | None = None, color: bool = False) -> str:
    """``rows`` under ``header`` as plain lines, each column as wide as its widest cell (in
    characters), two spaces apart.  A cell is a string or ``(string, style)`` (a colour of :data:`ANSI`, used if ``color``,
    as bold is for the header).  Lines are cut to ``width`` characters if given (a terminal's:
    ``nbrunner show`` prints a job in full); a cell's own line breaks become spaces."""
    def text(cell) -> str:
        return " ".join(str(cell[0] if isinstance(cell, tuple) else cell).split("\n"))

    table = [[text(c) for c in header]] + [[text(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    styles = [["bold"] * len(header)] + [[c[1] if isinstance(c, tuple) else None for c in row] for row in rows]
    lines = [title] if title else []
    for cells, row_styles in zip(table, styles):
        line, shown = "", 0
        for i, (cell, style) in enumerate(zip(cells, row_styles)):
            pad = "" if i == len(cells) - 1 else " " * (widths[i] - len(cell) + 2)
            if width is not None:
                room = max(0, width - shown)
                cell = cell[:room]
                pad = pad[:room - len(cell)]
            shown += len(cell) + len(pad)
            line += (f"\x1b[{ANSI[style]}m{cell}\x1b[0m" if color and style and cell else cell) + pad
        lines.append(line.rstrip())
    return "\n".join(lines)


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
        elif k == "waiting" and v:  # gpus_busy: needs 4 GPUs; the 2 jobs ahead of it need 6 of the 8
            v = f"{v.get('code')}: {v.get('message')}"
        rows.append((k, "" if v is None else str(v)))
    width = max(len(k) for k, _ in rows) + 2
    return "\n".join(f"{k:<{width}}{v}".rstrip().replace("\n", "\n" + " " * width) for k, v in rows)


def cluster_text(status: dict, width: int | None = None, color: bool = False) -> str:
    """The policy, free GPUs and each slot's job (:meth:`Cluster.status`), as a :func:`text_table`."""
    rows = [(h["name"], str(s["index"]), s["job"] or "-") for h in status["hosts"] for s in h["slots"]]
    return text_table(("host", "slot", "job"), rows, width=width, color=color,
                      title=f"policy {status['policy']}: {status['gpus_free']} of {status['gpus_total']} GPUs free")


SHARE_COLUMNS = ("account", "weight", "guaranteed", "limit", "demand", "held", "share", "borrowed", "lent",
                 "GPU-h 24h", "GPU-h total")


def share_text(view: dict, width: int | None = None, color: bool = False) -> str:
    """The accounts (:meth:`Cluster.accounts`, ``GET /accounts``) as a :func:`text_table`, each
    account indented under its parent."""
    if not view["accounts"]:
        return "this cluster has no accounts (start it with --accounts ACCOUNTS.yaml)"
    rows = [("  " * a["path"].count("/") + a["name"], f"{a['weight']:g}", str(a["guaranteed"]),
             "-" if a["limit"] is None else str(a["limit"]), str(a["demand"]), str(a["held"]), str(a["share"]),
             (str(a["borrowed"]), "yellow") if a["borrowed"] else "0", str(a["lent"]),
             f"{a['gpu_hours_24h']:.2f}", f"{a['gpu_hours_total']:.2f}") for a in view["accounts"]]
    title = f"policy {view['policy']}, {view['gpus_total']} GPUs; accounts from {view['source']}"
    return text_table(SHARE_COLUMNS, rows, title=title, width=width, color=color)


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


def _objective(value) -> str:
    return "" if value is None else f"{value:.6g}" if isinstance(value, float) else str(value)


def leaderboard_text(state) -> str:
    """A sweep (:class:`~nbrunner.client.sweep.SweepState`) as a title line and its leaderboard:
    rank, objective, status, job id and parameters, best first."""
    rows = [[str(r["rank"] or "-"), _objective(r["objective"]), r["status"], r["job"] or "",
             " ".join(f"{k}={_fmt(v)}" for k, v in r["parameters"].items())] for r in state.leaderboard]
    title = f"sweep {state.id} {state.name!r} {state.status}: {len(state.leaderboard)} trials"
    return text_table(("rank", "objective", "status", "job", "parameters"), rows, title=title)


def sweeps_text(states: list) -> str:
    """Sweeps as a table: id, name, status, trials finished / all, best objective."""
    from ..core.models import FINISHED

    rows = []
    for st in states:
        done = sum(r["status"] in FINISHED for r in st.leaderboard)
        best = next((r["objective"] for r in st.leaderboard if r["rank"] == 1), None)
        rows.append([st.id, st.name, st.status, f"{done}/{len(st.leaderboard)}", _objective(best)])
    return text_table(("id", "name", "status", "trials", "best"), rows, title=f"{len(states)} sweep(s)")
