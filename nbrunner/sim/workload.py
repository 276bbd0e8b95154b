"""Workloads of the cluster simulator: the shipped Pollux workloads, CSV files, and generated ones.

A workload CSV has one job a row: ``name,time,application,num_replicas,batch_size``
(``time``: submission in seconds; ``num_replicas``: the GPUs the job asks for, what
a static scheduler gives it; ``batch_size``: its global batch).

:func:`generate_workload` draws a new workload from the shipped ones (the eight
workloads of the Pollux artifact, 160 jobs each over 8 hours) with a seed:

* jobs: ``jobs`` of them (default 160);
* arrival times (``arrivals``), over a window of ``duration_s`` (default 8 hours,
  the shipped workloads' window):

  - ``"pollux"`` (default): each job's hour of the window is drawn with the hourly
    frequencies of the 1,280 shipped submissions (pooled; busier hours stay
    busier), then its second uniformly within that hour (the window split into 8
    equal parts);
  - ``"uniform"``: every job's time uniformly over the window;
  - ``"bursty"``: :data:`BURSTS` bursts start at times drawn uniformly over the
    window, each lasting a 48th of it (10 minutes of 8 hours); every job joins
    one burst, drawn uniformly, at a uniform time within it (so most of the window
    is quiet and a burst brings 20-30 jobs at once);
* application, replicas and batch size: drawn together, as one shipped row chosen
  uniformly among the 1,280 (so each ``(application, num_replicas, batch_size)``
  keeps its frequency: about 39% ncf, 39% cifar10, 9% deepspeech2, 7% bert,
  5% yolov3, 2% imagenet);
* names: ``<application>-<index>`` in arrival order.

Every draw comes from one ``numpy.random.default_rng(seed)``, so a seed and an
arrival process always give the same workload.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

__all__ = ["Job", "load_workload", "write_workload", "generate_workload", "resolve_workload", "bundled_workloads",
           "DATA_DIR", "TRACES_DIR", "WORKLOADS_DIR", "ARRIVALS", "BURSTS"]

DATA_DIR = Path(__file__).resolve().parent / "data" / "pollux"
TRACES_DIR = DATA_DIR / "traces"
WORKLOADS_DIR = DATA_DIR / "workloads"
WINDOW_PARTS = 8  # the shipped workloads' 8 hours, one part an hour
SOURCE_WINDOW_S = 8 * 3600.0
ARRIVALS = ("pollux", "uniform", "bursty")
"""Arrival processes of :func:`generate_workload`."""
BURSTS = 6
"""Bursts of a ``bursty`` workload."""
_COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")


@dataclass
class Job:
    """One workload row plus its simulation state."""

    idx: int
    name: str
    submit: float
    app: str
    replicas: int
    batch: int
    work: float = 0.0  # units to finish: steps of its batch, or steps of the initial batch if it adapts
    done: float = 0.0
    gpus: int = 0
    unit_time: float = float("inf")  # seconds per unit of work on its current GPUs
    boundary: float = 0.0  # work at which its rate changes next (its end, or an epoch's if it adapts)
    epoch: int = 0  # current epoch (batch adaptation)
    run_batch: int = 0  # the global batch it runs now
    paused_until: float = 0.0
    start: float | None = None
    finish: float | None = None
    resizes: int = 0
    max_gpus: int = 1
    restarts: int = 0
    attained: float = 0.0  # GPU-seconds held so far
    queue: int = 0  # tiresias queue
    queued_at: float = 0.0  # arrival in the current tiresias queue
    measured: dict = field(default_factory=dict)  # gpus -> samples/s seen (goodput)
    efficiency: dict = field(default_factory=dict)  # gpus -> statistical efficiency there (adapting, goodput)
    owner: str = ""  # who submitted it (optional column): with an accounts tree, it decides its account
    groups: tuple[str, ...] = ()  # the owner's groups (optional column, separated by ";")

    def fresh(self) -> Job:
        """The same workload row with no simulation state."""
        return Job(self.idx, self.name, self.submit, self.app, self.replicas, self.batch, owner=self.owner,
                   groups=self.groups)


def load_workload(path: str | os.PathLike) -> list[Job]:
    """Jobs of a workload CSV (``name,time,application,num_replicas,batch_size``, and optionally
    ``owner`` and ``groups``: ``;``-separated)."""
    jobs = []
    with open(path, newline="") as f:
        for i, row in enumerate(csv.DictReader(f)):
            missing = [c for c in _COLUMNS if c not in row or row[c] is None]
            if missing:
                raise ValueError(f"{path}: row {i + 2} lacks {', '.join(missing)}")
            try:
                jobs.append(Job(i, row["name"], float(row["time"]), row["application"].strip(),
                                int(row["num_replicas"]), int(row["batch_size"]),
                                owner=(row.get("owner") or "").strip(),
                                groups=tuple(g for g in (row.get("groups") or "").split(";") if g.strip())))
            except ValueError:
                raise ValueError(f"{path}: row {i + 2} is not name,time,application,num_replicas,batch_size") from None
    return jobs


def write_workload(path: str | os.PathLike, jobs: list[Job]) -> None:
    """Write jobs as a workload CSV (times rounded to whole seconds; ``owner`` and ``groups`` when
    a job has them)."""
    owned = any(j.owner or j.groups for j in jobs)
    with open(path, "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(_COLUMNS + (("owner", "groups") if owned else ()))
        for j in jobs:
            row = (j.name, f"{j.submit:.0f}", j.app, j.replicas, j.batch)
            out.writerow(row + ((j.owner, ";".join(j.groups)) if owned else ()))


def bundled_workloads() -> list[Path]:
    """The shipped Pollux workloads, ``workload-1.csv`` .. ``workload-8.csv``, in order."""
    return sorted(WORKLOADS_DIR.glob("workload-*.csv"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))


def resolve_workload(name: str | os.PathLike) -> Path:
    """A workload CSV path, or the name of a shipped workload (``workload-3`` or ``workload-3.csv``)."""
    path = Path(name)
    if path.exists():
        return path
    shipped = WORKLOADS_DIR / (path.name if path.suffix == ".csv" else f"{path.name}.csv")
    if path.parent == Path(".") and shipped.exists():
        return shipped
    names = ", ".join(p.stem for p in bundled_workloads())
    raise ValueError(f"no workload {str(name)!r}: give a CSV path or one of {names}")


@lru_cache(maxsize=1)
def _source_mix() -> tuple[np.ndarray, list[tuple[str, int, int]]]:
    """Hourly frequencies of the shipped submissions, and their (application, replicas, batch) rows."""
    rows = [j for p in bundled_workloads() for j in load_workload(p)]
    if not rows:
        raise ValueError(f"no shipped workloads under {WORKLOADS_DIR}")
    times = np.array([j.submit for j in rows])
    parts = np.clip((times / SOURCE_WINDOW_S * WINDOW_PARTS).astype(int), 0, WINDOW_PARTS - 1)
    freq = np.bincount(parts, minlength=WINDOW_PARTS) / len(rows)
    return freq, [(j.app, j.replicas, j.batch) for j in rows]


def generate_workload(seed: int, jobs: int = 160, duration_s: float = SOURCE_WINDOW_S,
                      arrivals: str = "pollux") -> list[Job]:
    """A workload drawn from the shipped workloads' job mix, arriving as ``arrivals`` says (see the module
    docstring)."""
    if jobs < 0:
        raise ValueError(f"jobs must be >= 0, got {jobs}")
    if not duration_s > 0:
        raise ValueError(f"duration_s must be > 0, got {duration_s}")
    if arrivals not in ARRIVALS:
        raise ValueError(f"unknown arrival process {arrivals!r}; expected one of {', '.join(ARRIVALS)}")
    freq, mix = _source_mix()
    rng = np.random.default_rng(seed)
    if arrivals == "pollux":
        part = rng.choice(WINDOW_PARTS, size=jobs, p=freq)
        times = (part + rng.random(jobs)) * duration_s / WINDOW_PARTS
    elif arrivals == "uniform":
        times = rng.random(jobs) * duration_s
    else:
        width = duration_s / 48
        starts = rng.random(BURSTS) * (duration_s - width)
        times = starts[rng.integers(0, BURSTS, size=jobs)] + rng.random(jobs) * width
    times = np.sort(times)
    picks = rng.integers(0, len(mix), size=jobs)
    out = []
    for i, (t, k) in enumerate(zip(times.tolist(), picks.tolist())):
        app, replicas, batch = mix[k]
        out.append(Job(i, f"{app}-{i}", float(round(t)), app, replicas, batch))
    return out
