"""Live ipywidgets views of nbrunner jobs, for notebooks.

- :class:`JobsMonitor` — a table with one row per job (name, status, GPUs, progress bar,
  editable priority, Cancel button), refreshed every ``interval`` seconds.
- :class:`JobWidget` — the same controls for one job, plus its details
  (what :meth:`nbrunner.Job.widget` returns).

Threading: a daemon thread only *reads* job records from Redis.  The widget changes are
applied on the kernel's event loop (``kernel.io_loop.add_callback``, i.e. in the main
thread, between cell executions) when the widget lives in an IPython kernel; elsewhere
(plain Python, tests) they are applied directly, under a lock.  ``close()`` stops the
thread.

Saved notebooks: besides the live widget view, both objects give a ``text/html`` table and
a ``text/plain`` table of the jobs at display time, so a notebook executed by papermill and
viewed without a widget manager (nbconvert, GitHub, a reopened notebook) still shows the
jobs instead of "Loading widget...".
"""
from __future__ import annotations

import html
import threading
import time
import weakref
from typing import Any, Callable

import ipywidgets as widgets

from ..core.config import MONITOR_JOBS_SHOWN
from ..core.errors import NbrunnerError
from ..core.models import FINISHED, PRIORITY_MAX, PRIORITY_MIN, JobRecord, parse_time
from .render import duration, latest_metric, totals_line
from .session import default_cluster

# The job handle (:mod:`.job`) opens these views, so they never import it or the cluster
# module: a cluster and a job are taken as given (any :class:`nbrunner.Cluster` and
# :class:`nbrunner.Job`), and the default cluster comes from :mod:`.session`.
Cluster = Job = Any

STATUS_COLORS = {"queued": "#b26b00", "running": "#1565c0", "completed": "#2e7d32", "failed": "#c62828",
                 "cancelled": "#616161"}
BAR_STYLES = {"queued": "", "running": "info", "completed": "success", "failed": "danger", "cancelled": "warning"}
COLUMNS = (("Job", "18em"), ("Status", "7em"), ("GPUs", "4.5em"), ("Progress", "11em"), ("Priority", "7.5em"),
           ("", "6.5em"), ("Info", "16em"))


def _kernel_loop():
    """The event loop of the IPython kernel we run in (its main thread), or None."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return None
    shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    loop = getattr(kernel, "io_loop", None)
    return loop if loop is not None and hasattr(loop, "add_callback") else None


def _progress(rec: JobRecord) -> float:
    if rec.progress is not None:
        return max(0.0, min(1.0, float(rec.progress)))
    return 1.0 if rec.status == "completed" else 0.0


def _info(rec: JobRecord) -> str:
    if rec.error:
        return rec.error
    if rec.status == "queued" and rec.queue_position:
        return f"queue position {rec.queue_position}"
    return latest_metric(rec)


def _badge(status: str) -> str:
    color = STATUS_COLORS.get(status, "#616161")
    return (f'<span style="display:inline-block;padding:0 6px;border-radius:8px;color:#fff;'
            f'background:{color};font-size:90%">{html.escape(status)}</span>')


def _created(rec: JobRecord) -> float:
    t = parse_time(rec.created_at)
    return t.timestamp() if t else 0.0


# --- static renderings (saved notebooks, text consoles) ---------------------------------------

def jobs_text(records: list[JobRecord]) -> str:
    """A plain-text table of ``records`` and a totals line."""
    header = ("id", "name", "status", "gpus", "priority", "progress", "duration", "info")
    rows = [header] + [(r.id, r.name, r.status, f"{r.gpus}/{r.max_gpus}", str(r.priority),
                        f"{_progress(r):.0%}", duration(r.duration()), _info(r)) for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines + [totals_line(records)])


def jobs_html(records: list[JobRecord], title: str = "nbrunner jobs") -> str:
    """A static HTML table of ``records`` (what a saved notebook shows without widgets)."""
    e = html.escape
    head = "".join(f'<th style="text-align:left;padding:2px 8px">{e(h)}</th>' for h in
                   ("Job", "Id", "Status", "GPUs", "Priority", "Progress", "Duration", "Info"))
    body = []
    for r in records:
        pct = _progress(r)
        bar = (f'<div style="width:8em;height:0.8em;background:#e0e0e0;border-radius:3px" title="{pct:.0%}">'
               f'<div style="width:{pct * 100:.0f}%;height:100%;background:{STATUS_COLORS[r.status]};'
               f'border-radius:3px"></div></div>')
        cells = [f"<b>{e(r.name)}</b>", f"<code>{e(r.id)}</code>", _badge(r.status), f"{r.gpus}/{r.max_gpus}",
                 str(r.priority), f'{bar}<span style="font-size:85%">{pct:.0%}</span>', e(duration(r.duration())),
                 e(_info(r))]
        body.append(f'<tr data-job-id="{e(r.id)}" data-status="{e(r.status)}">'
                    + "".join(f'<td style="text-align:left;padding:2px 8px">{c}</td>' for c in cells) + "</tr>")
    if not body:
        body.append('<tr><td colspan="8" style="text-align:left;padding:2px 8px"><i>no jobs</i></td></tr>')
    return (f'<table class="nbrunner-jobs" style="border-collapse:collapse">'
            f'<caption style="text-align:left;caption-side:top"><b>{e(title)}</b>: {e(totals_line(records))}'
            f'</caption><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>')


# --- live widgets ---------------------------------------------------------------------------

class _LiveWidget(widgets.VBox):
    """A VBox refreshed from job records by a daemon thread (see the module docstring)."""

    def __init__(self, cluster: Cluster, interval: float, **kwargs: Any):
        super().__init__(**kwargs)
        if interval <= 0:
            raise ValueError("interval must be > 0 seconds")
        self.cluster = cluster
        self.interval = float(interval)
        self.updates = 0  # number of refreshes applied
        self.applied_on_main_thread: bool | None = None  # where the last refresh was applied
        self._lock = threading.RLock()
        self._local = threading.local()  # .applying: this thread is showing records, not the user
        self._seq = 0  # bumped by each user action: records fetched before it are stale
        self._closed = False
        self._stop = threading.Event()
        self._loop = _kernel_loop()
        self._thread: threading.Thread | None = None
        self._last: list[JobRecord] = []  # records of the last fetch
        self.message = widgets.HTML(layout=widgets.Layout(min_height="0"))

    # -- data (subclasses) --
    def _fetch(self) -> list[JobRecord]:
        raise TypeError(f"{type(self).__name__} must define _fetch()")

    def _apply(self, records: list[JobRecord]) -> None:
        raise TypeError(f"{type(self).__name__} must define _apply()")

    def _title(self) -> str:
        return "nbrunner jobs"

    # -- refresh machinery --
    def _start(self) -> None:
        self._thread = threading.Thread(target=_poll, args=(weakref.ref(self), self._stop, self.interval),
                                        name=f"nbrunner-{type(self).__name__}", daemon=True)
        self._thread.start()

    def refresh(self) -> None:
        """Fetch the records now and update the widget (from the calling thread)."""
        self._apply_records(self._fetch())

    @property
    def _updating(self) -> bool:
        """True while this thread sets values from records (so observers ignore them)."""
        return getattr(self._local, "applying", False)

    def _showing(self, fn: Callable, *args: Any) -> None:
        with self._lock:
            self._local.applying = True
            try:
                fn(*args)
            finally:
                self._local.applying = False

    def _apply_records(self, records: list[JobRecord], seq: int | None = None) -> None:
        if self._closed:
            return
        with self._lock:
            if seq is not None and seq != self._seq:
                return  # fetched before a user action: the next poll brings the new state
            self._showing(self._apply, records)
            self.updates += 1
            self.applied_on_main_thread = threading.current_thread() is threading.main_thread()

    def _call_soon(self, fn: Callable, *args: Any) -> bool:
        """Run ``fn(*args)`` on the kernel's loop if there is one, else now; False once that loop is gone."""
        if self._loop is None:
            fn(*args)
            return True
        try:
            self._loop.add_callback(fn, *args)
        except RuntimeError:  # the loop was closed: the kernel is shutting down
            return False
        return True

    def _say(self, text: str | None, error: bool = True) -> None:
        with self._lock:
            color = "#c62828" if error else "inherit"
            self.message.value = "" if not text else f'<span style="color:{color}">{html.escape(text)}</span>'

    @property
    def running(self) -> bool:
        """True while the refresh thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def stop(self) -> None:
        """Stop refreshing (the widget stays displayed, frozen)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=self.interval + 5)

    def close(self) -> None:
        """Stop the refresh thread and close the widget and its parts."""
        self._closed = True
        self.stop()
        for child in self._parts():
            child.close()
        super().close()

    def _parts(self) -> list[widgets.Widget]:
        return [self.message]

    # -- static fallbacks --
    def _snapshot(self) -> list[JobRecord]:
        try:
            return self._fetch()
        except Exception:  # noqa: BLE001 - a rendering must not raise; show the last state
            return list(self._last)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        try:
            bundle = super()._repr_mimebundle_(**kwargs) or {}
        except Exception:  # noqa: BLE001 - a closed widget has no view
            bundle = {}
        records = self._snapshot()
        bundle["text/plain"] = f"{self._title()}\n{jobs_text(records)}"
        bundle["text/html"] = jobs_html(records, self._title())
        return bundle


def _poll(ref: "weakref.ref[_LiveWidget]", stop: threading.Event, interval: float) -> None:
    """The refresh thread: fetch records, hand them to the widget's loop; never touch widgets."""
    while not stop.wait(interval):
        widget = ref()
        if widget is None or widget._closed:
            return
        seq = widget._seq
        try:
            records = widget._fetch()
        except Exception as exc:  # noqa: BLE001 - Redis gone for a moment: say so, keep polling
            ok = widget._call_soon(widget._say, f"cannot refresh: {exc.__class__.__name__}: {exc}")
        else:
            ok = widget._call_soon(widget._apply_records, records, seq)
        del widget
        if not ok:
            return


class _JobRow:
    """The controls of one job: name, status, GPUs, progress bar, priority, Cancel."""

    def __init__(self, owner: _LiveWidget, rec: JobRecord):
        self.owner = owner
        self.record = rec
        w = dict(COLUMNS)
        lay = lambda width: widgets.Layout(width=width, flex="0 0 auto")  # noqa: E731
        self.name = widgets.HTML(layout=lay(w["Job"]))
        self.status = widgets.HTML(layout=lay(w["Status"]))
        self.gpus = widgets.Label(layout=lay(w["GPUs"]))
        self.progress = widgets.FloatProgress(value=0.0, min=0.0, max=1.0, layout=lay(w["Progress"]))
        self.priority = widgets.BoundedIntText(value=rec.priority, min=PRIORITY_MIN, max=PRIORITY_MAX, step=1,
                                               continuous_update=False, layout=lay(w["Priority"]))
        self.cancel = widgets.Button(description="Cancel", button_style="warning", icon="stop",
                                     layout=lay(w[""]))
        self.info = widgets.HTML(layout=widgets.Layout(width=w["Info"], flex="1 1 auto"))
        self.box = widgets.HBox([self.name, self.status, self.gpus, self.progress, self.priority, self.cancel,
                                 self.info], layout=widgets.Layout(align_items="center"))
        self.priority.observe(self._on_priority, names="value")
        self.cancel.on_click(self._on_cancel)
        self.update(rec)

    @property
    def parts(self) -> list[widgets.Widget]:
        return [self.name, self.status, self.gpus, self.progress, self.priority, self.cancel, self.info, self.box]

    def job(self) -> Job:
        return self.owner.cluster.job(self.record.id)

    def update(self, rec: JobRecord) -> None:
        """Show ``rec`` (called with the owner's lock held and ``_updating`` set)."""
        self.record = rec
        label = f"{rec.name} ({rec.id})"
        self.name.value = f"<b>{html.escape(rec.name)}</b> <code>{html.escape(rec.id)}</code>"
        self.name.tooltip = f"{rec.notebook}"
        self.status.value = _badge(rec.status)
        self.gpus.value = f"{rec.gpus}/{rec.max_gpus}"
        self.gpus.tooltip = f"GPUs held now / max (min {rec.min_gpus})"
        pct = _progress(rec)
        self.progress.value = pct
        self.progress.bar_style = BAR_STYLES.get(rec.status, "")
        self.progress.tooltip = f"Progress of job {label}: {pct:.0%}"
        if self.priority.value != rec.priority:
            self.priority.value = rec.priority
        self.priority.disabled = rec.finished
        self.priority.tooltip = f"Priority of job {label} ({PRIORITY_MIN}-{PRIORITY_MAX}); Enter applies"
        self.cancel.disabled = rec.finished
        self.cancel.tooltip = f"Cancel job {label}" if not rec.finished else f"Job {label} is {rec.status}"
        info = _info(rec)
        color = STATUS_COLORS["failed"] if rec.error and rec.status == "failed" else "inherit"
        self.info.value = f'<span style="color:{color}" title="{html.escape(info)}">{html.escape(info)}</span>'

    def _show(self, rec: JobRecord) -> None:
        self.owner._showing(self.update, rec)

    def _on_priority(self, change: dict) -> None:
        owner = self.owner
        if owner._updating or change["new"] == self.record.priority:
            return
        owner._seq += 1
        try:
            job = self.job().set_priority(int(change["new"]))
        except NbrunnerError as exc:
            owner._say(f"job {self.record.id}: {exc}")
            self._show(self.record)  # back to the recorded value
            return
        owner._say(None)
        self._show(job.record)

    def _on_cancel(self, _button: widgets.Button) -> None:
        owner = self.owner
        owner._seq += 1
        try:
            job = self.job().cancel()
        except NbrunnerError as exc:
            owner._say(f"job {self.record.id}: {exc}")
            return
        owner._say(None)
        self._show(job.record)


def _header() -> widgets.HBox:
    cells = [widgets.HTML(f"<b>{html.escape(name)}</b>", layout=widgets.Layout(width=width, flex="0 0 auto"))
             for name, width in COLUMNS]
    return widgets.HBox(cells)


class JobsMonitor(_LiveWidget):
    """A live table of the cluster's jobs (newest first), refreshed every ``interval`` seconds.

    Each row has the job's name and id, status, GPUs held/max, a progress bar, its priority
    (editable: a new value calls :meth:`Job.set_priority`) and a Cancel button
    (:meth:`Job.cancel`).  Filters (combined): ``status`` shows only jobs in that state,
    ``owner`` only that user's jobs (``mine=True``: the current user's), ``sweep`` only the
    trials of that sweep (an id, or a :class:`nbrunner.client.sweep.Sweep`).  Call :meth:`close`
    to stop it.  ``cluster.monitor(...)`` makes one for a cluster.
    """

    def __init__(self, cluster: Cluster | None = None, interval: float = 1.0, status: str | None = None,
                 owner: str | None = None, sweep: Any = None, mine: bool = False, **kwargs: Any):
        super().__init__(cluster or default_cluster(), interval, **kwargs)
        if status is not None and status not in STATUS_COLORS:
            raise ValueError(f"status must be one of {', '.join(STATUS_COLORS)}, got {status!r}")
        if mine:
            import getpass

            owner = owner or getpass.getuser()
        self.status_filter = status
        self.owner_filter = owner
        self.sweep_filter = getattr(sweep, "id", sweep)
        self.rows: dict[str, _JobRow] = {}
        self.summary = widgets.HTML()
        self._header = _header()
        self._table = widgets.VBox()
        self.children = (self.summary, self._header, self._table, self.message)
        self.refresh()
        self._start()

    def _title(self) -> str:
        filters = [f for f in (self.status_filter, self.owner_filter and f"owner {self.owner_filter}",
                               self.sweep_filter and f"sweep {self.sweep_filter}") if f]
        return "nbrunner jobs" + (f" ({', '.join(filters)})" if filters else "")

    def _fetch(self) -> list[JobRecord]:
        owner, sweep = self.owner_filter, self.sweep_filter
        keep = None if owner is None and sweep is None else (
            lambda r: (owner is None or r.owner == owner) and (sweep is None or r.sweep == sweep))
        records, _ = self.cluster.store.page(self.status_filter, MONITOR_JOBS_SHOWN, where=keep)
        records.sort(key=lambda r: (_created(r), r.id), reverse=True)
        self._last = records
        return records

    def _apply(self, records: list[JobRecord]) -> None:
        seen = set()
        for rec in records:
            seen.add(rec.id)
            row = self.rows.get(rec.id)
            if row is None:
                self.rows[rec.id] = _JobRow(self, rec)
            else:
                row.update(rec)
        for gone in [i for i in self.rows if i not in seen]:
            for part in self.rows.pop(gone).parts:
                part.close()
        boxes = tuple(self.rows[r.id].box for r in records)
        if self._table.children != boxes:
            self._table.children = boxes
        stamp = time.strftime("%H:%M:%S")
        self.summary.value = (f"<b>{html.escape(self._title())}</b>: {html.escape(totals_line(records))}"
                              f' <span style="color:#888">— updated {stamp}</span>')

    def _parts(self) -> list[widgets.Widget]:
        parts = [self.summary, self._table, self._header, *self._header.children, self.message]
        for row in self.rows.values():
            parts += row.parts
        return parts

    def __repr__(self) -> str:
        return f"<JobsMonitor {len(self.rows)} jobs, {'live' if self.running else 'stopped'}>"


class JobWidget(_LiveWidget):
    """One job, live: its row of controls (status, GPUs, progress, priority, Cancel) and details.

    It stops refreshing by itself once the job has finished (and when closed)."""

    def __init__(self, job: Job, interval: float = 1.0, **kwargs: Any):
        super().__init__(job.cluster, interval, **kwargs)
        self.job = job
        self.row = _JobRow(self, job.record)
        self.details = widgets.HTML()
        self.children = (self.row.box, self.details, self.message)
        self.refresh()
        if not self.row.record.finished:
            self._start()

    def _title(self) -> str:
        return f"nbrunner job {self.job.id}"

    def _fetch(self) -> list[JobRecord]:
        records = [self.cluster.store.get(self.job.id)]
        self._last = records
        return records

    def _apply(self, records: list[JobRecord]) -> None:
        rec = records[0]
        self.job.record = rec
        self.row.update(rec)
        e = html.escape
        bits = [f"notebook <code>{e(rec.notebook)}</code>"]
        if rec.parameters:
            bits.append("parameters " + ", ".join(f"<code>{e(k)}={e(repr(v))}</code>" for k, v in rec.parameters.items()))
        if rec.metrics:
            bits.append("metrics " + ", ".join(f"{e(k)}={e(str(v))}" for k, v in rec.metrics.items()))
        bits.append(f"duration {e(duration(rec.duration()))}")
        if rec.output and rec.status != "queued":
            bits.append(f"output <code>{e(rec.output)}</code>")
        self.details.value = '<span style="font-size:90%">' + " · ".join(bits) + "</span>"
        if rec.status in FINISHED:
            self._stop.set()  # nothing will change any more

    def _parts(self) -> list[widgets.Widget]:
        return [self.details, self.message, *self.row.parts]

    def __repr__(self) -> str:
        return f"<JobWidget {self.job.id} {self.row.record.status}>"
