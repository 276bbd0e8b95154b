"""``nbrunner jobs --watch``: the newest jobs as a live table, until Ctrl-C.

It follows the cluster's event stream (read from its Redis, or through an nbrunner service's push
channel, ``GET /events``), so a change shows as soon as it is recorded and an idle cluster costs
one blocked read.  On a terminal the table is redrawn in place (at most ``WATCH_REDRAW_S``
apart); into a pipe or a file the table is printed once and then one line per change, with its
time.
"""
from __future__ import annotations

import signal
import sys
import time
from datetime import datetime
from typing import Any, Callable, TextIO

import msgspec

from ..core.config import WATCH_REDRAW_S, WATCH_WAIT_S
from ..core.models import JobRecord
from . import render


class JobsView:
    """The jobs shown: the newest ``limit`` of those ``keep`` accepts, by id, kept up to date."""

    def __init__(self, records: list[JobRecord], limit: int, keep: Callable[[JobRecord], bool]):
        self.limit = limit
        self.keep = keep
        self.rows = {r.id: r for r in records}

    def apply(self, data: dict[str, Any]) -> JobRecord | None:
        """Apply one job change (``{"job": record}`` or ``{"id", "deleted": true}``); the record
        if it is (still) shown."""
        if data.get("deleted"):
            self.rows.pop(data["id"], None)
            return None
        rec = msgspec.convert(data["job"], JobRecord)
        if not self.keep(rec):
            self.rows.pop(rec.id, None)
            return None
        self.rows[rec.id] = rec
        if len(self.rows) > self.limit:
            for old in self.newest_first()[self.limit:]:
                del self.rows[old.id]
        return self.rows.get(rec.id)

    def newest_first(self) -> list[JobRecord]:
        return sorted(self.rows.values(), key=lambda r: (r.created_at, r.id), reverse=True)


def watch(backend: Any, status: str | None, schedule: str | None, limit: int, width: int | None, color: bool,
          out: TextIO = sys.stdout) -> None:
    """Show the jobs live until interrupted (KeyboardInterrupt reaches the caller); ``backend`` is
    a cluster's (:mod:`.local` or :mod:`.remote`)."""
    # Ctrl-C stops it even when started where SIGINT is ignored (a script's background job)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    changes = backend.job_changes()  # before the first page: no change falls between the two

    def keep(r: JobRecord) -> bool:
        return (status is None or r.status == status) and (schedule is None or r.schedule == schedule)

    def first_page() -> JobsView:
        return JobsView(backend.jobs(status, limit, schedule=schedule)[0], limit, keep)

    view = first_page()
    terminal = out.isatty()
    _draw(view, out, width, color, clear=terminal)
    drawn, dirty = time.monotonic(), False
    try:
        while True:
            wait = max(0.0, WATCH_REDRAW_S - (time.monotonic() - drawn)) if dirty else WATCH_WAIT_S
            got = changes.read(wait)
            if any(c.get("reload") for c in got):  # the channel lost its place: read the page again
                view, got, dirty = first_page(), [], True
            shown = [view.apply(c) for c in got]
            if not terminal:
                stamp = datetime.now().strftime("%H:%M:%S")
                out.write("".join(f"{stamp}  " + "  ".join(render.job_cells(r)) + "\n" for r in shown if r is not None))
                out.flush()
                continue
            dirty = dirty or bool(shown)
            if dirty and time.monotonic() - drawn >= WATCH_REDRAW_S:
                _draw(view, out, width, color, clear=True)
                drawn, dirty = time.monotonic(), False
    finally:
        changes.close()


def _draw(view: JobsView, out: TextIO, width: int | None, color: bool, clear: bool) -> None:
    rows = view.newest_first()  # newest first, as `nbrunner jobs` prints them (and GET /jobs lists them)
    text = render.jobs_text(rows, width=width, color=color)
    footer = render.totals_line(rows) + " (live; Ctrl-C to stop)"
    out.write(("\x1b[H\x1b[2J" if clear else "") + text + "\n" + footer + "\n")
    out.flush()
