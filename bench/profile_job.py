"""Where one trivial job's time goes, submit to completed: a table of its phases, from a real cluster.

``python bench/profile_job.py [RUNS]`` starts a local cluster (``setup_cluster(gpus=0, workers=2)``),
submits one two-cell notebook ``RUNS`` times (default 5), each after the workers were idle for
``IDLE_S`` (as a user's job usually finds them: the spare kernel is up), and prints, per phase, the
median time since the submit call and the median length of the phase.  The timestamps are what the
cluster leaves anyway, all on this machine's clock (nothing is instrumented for the profile):

- the client: the submit call, its return, and when ``job.wait()`` returned;
- the event stream (``nbrunner:events``: Redis stamps each entry, in ms): the record written
  (``submitted``), the scheduler's grant and hand-over to rq (``dispatched``), the work horse's
  start (``started``), the final status (``completed``), the worker's release (``released``);
- rq's job hash: enqueued, taken by a worker (its work horse's start), ended;
- ``logs/papermill.log`` (ms): papermill called (after the pre-warmed kernel was adopted: connected,
  ready, moved into the job's directory), the kernel handed to nbclient, each cell's start and end;
- the output notebook's papermill metadata (each cell's start and end, the notebook's end);
- the files' modification times: ``input.ipynb`` (the snapshot), ``output.ipynb`` (last save),
  ``output.html`` (when it is rendered) and ``job.json`` (the record's copy, the horse's last act).
"""
from __future__ import annotations

import json
import os
import re
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

IDLE_S = 2.0
LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \w+ (.*)$")


def _iso(value) -> float | None:
    """Seconds since the epoch of an ISO 8601 time (naive: UTC), or None."""
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, datetime):
        dt = value
    else:
        dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    if dt.tzinfo is None:
        from datetime import timezone

        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def _papermill_log(path: Path) -> list[tuple[float, str]]:
    """(time, message) of each line of papermill's log (local time, as logging writes it)."""
    out = []
    for line in path.read_text().splitlines():
        m = LOG_TIME.match(line)
        if m:
            stamp = time.mktime(time.strptime(m.group(1)[:19], "%Y-%m-%d %H:%M:%S")) + int(m.group(1)[20:]) / 1000
            out.append((stamp, m.group(2)))
    return out


def _first(lines: list[tuple[float, str]], prefix: str) -> float | None:
    return next((t for t, msg in lines if msg.startswith(prefix)), None)


def _last(lines: list[tuple[float, str]], prefix: str) -> float | None:
    return next((t for t, msg in reversed(lines) if msg.startswith(prefix)), None)


def _events(store, job_id: str, after: str) -> dict[str, float]:
    """The first stream entry of each kind for the job: its Redis time (s)."""
    from nbrunner.core.keys import EVENTS

    out: dict[str, float] = {}
    for eid, fields in store.r.xrange(EVENTS, after, "+"):
        if fields.get("job") == job_id:
            out.setdefault(fields.get("type", "?"), int(eid.split("-")[0]) / 1000)
    return out


def _rq_times(store, job_id: str, attempt: int) -> dict[str, float | None]:
    from nbrunner.control.queues import rq_connection, rq_job_id

    raw = rq_connection(store).hgetall(f"rq:job:{rq_job_id(job_id, attempt)}")
    return {k: _iso(raw.get(k.encode())) if raw.get(k.encode()) else None for k in ("enqueued_at", "started_at", "ended_at")}


def timeline(cluster, job, t_submit: float, t_returned: float, t_noticed: float, after: str) -> list[tuple[str, float]]:
    """The job's phases as (what, time since the submit call), in time order."""
    rec = job.refresh().record
    d = cluster.settings.job_dir(job.id)
    ev = _events(cluster.store, job.id, after)
    rq = _rq_times(cluster.store, job.id, rec.attempt)
    pm = _papermill_log(d / "logs" / "papermill.log")
    nb = json.loads((d / "output.ipynb").read_text())
    cells = [c.get("metadata", {}).get("papermill", {}) for c in nb["cells"]]
    points = {
        "submit called": t_submit,
        "input.ipynb snapshot written": (d / "input.ipynb").stat().st_mtime,
        "record written (submitted)": ev.get("submitted"),
        "submit returned": t_returned,
        "scheduler granted, record dispatched": ev.get("dispatched"),
        "rq job enqueued": rq["enqueued_at"],
        "rq job taken: work horse started": rq["started_at"],
        "attempt started (running)": ev.get("started"),
        "kernel adopted, papermill called": _first(pm, "Input Notebook"),
        "kernel handed to nbclient": _first(pm, "Executing notebook with kernel"),
        "first cell started": _iso(cells[0].get("start_time")) if cells else None,
        "last cell ended": _iso(cells[-1].get("end_time")) if cells else None,
        "papermill ended (output.ipynb saved)": (d / "output.ipynb").stat().st_mtime,
        "output.html rendered": (d / "output.html").stat().st_mtime if (d / "output.html").exists() else None,
        "record written (completed)": ev.get("completed"),
        "job.json written": (d / "job.json").stat().st_mtime,
        "rq job ended": rq["ended_at"],
        "client noticed (wait returned)": t_noticed,
        "worker released the slots (released)": ev.get("released"),
    }
    return sorted(((k, v - t_submit) for k, v in points.items() if v is not None), key=lambda kv: kv[1])


def profile(runs: int = 5, poll: float | None = None) -> list[list[tuple[str, float]]]:
    """``runs`` timelines of one trivial job on a fresh 2-worker cluster (``poll``: passed to wait)."""
    import nbrunner
    from bench_jobs import trivial_notebook

    ws = Path(tempfile.mkdtemp(prefix="nbprof", dir="/tmp"))
    nb = trivial_notebook(ws / "one.ipynb")
    out = []
    saved = {k: os.environ.pop(k) for k in ("NBRUNNER_REDIS_URL", "NBRUNNER_STORAGE") if k in os.environ}
    try:
        with nbrunner.setup_cluster(gpus=0, workers=2, workspace=ws) as cluster:
            cluster.submit(nb, {"X": -1}).wait(120)  # warm-up: caches filled, spare kernels started
            for i in range(runs):
                time.sleep(IDLE_S)
                after = cluster.store.last_event_id()
                t0 = time.time()
                job = cluster.submit(nb, {"X": i})
                t1 = time.time()
                job.wait(120, **({"poll": poll} if poll is not None else {}))
                t2 = time.time()
                assert job.record.status == "completed", job.record.error
                cluster.store.r.xread({"nbrunner:events": after}, block=2000)  # the release comes just after
                deadline = time.monotonic() + 5
                while job.refresh().record.phase.value != "ended" and time.monotonic() < deadline:
                    time.sleep(0.02)
                out.append(timeline(cluster, job, t0, t1, t2, after))
    finally:
        os.environ.update(saved)
    return out


def table(timelines: list[list[tuple[str, float]]]) -> str:
    """Median time since the submit call of each phase's end, and the median phase length."""
    order = [k for k, _ in timelines[0]]
    at = {k: statistics.median(dict(t)[k] for t in timelines if k in dict(t)) for k in order}
    rows = ["| phase (ends at) | since submit (ms) | phase (ms) |", "|---|---:|---:|"]
    prev = 0.0
    for k in sorted(order, key=lambda k: at[k]):
        rows.append(f"| {k} | {at[k] * 1000:.0f} | {(at[k] - prev) * 1000:.0f} |")
        prev = at[k]
    return "\n".join(rows)


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    got = profile(n)
    print(f"one trivial job, {n} runs, medians (load {os.getloadavg()[0]:.1f}):")
    print(table(got))
