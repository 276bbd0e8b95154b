"""When a job should start and end: a forward replay of the live queue, pure.

:func:`estimate` replays the cluster's unfinished jobs from ``now`` with the cluster's policy
(the engine of ``nbrunner.core.replay``, the one the simulator uses), each job taking its
remaining wall time whatever its GPU count:

* a running job: from its own progress, ``elapsed * (1 - p) / p``; without progress, the
  median of past runs minus what it has run (None once it has run longer than that);
* a queued job: :func:`median_duration` of its owner's last completed runs of the same
  notebook (None with no such run).

A job whose duration is unknown runs for ever in the replay: the jobs that start before it
would have to end still get a start, those behind it get None (never a made-up number).  A
job that asks for no GPU starts at once.  Restart pauses are not replayed (the durations
measured include them).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from .replay import Replay, ReplayState

__all__ = ["estimate", "median_duration", "remaining_s", "HORIZON_S"]

HORIZON_S = 7 * 86400.0  # estimates further than this are not given


def median_duration(durations: list[float]) -> float | None:
    """The median of past wall times (seconds), or None when there are none."""
    good = [d for d in durations if d is not None and d >= 0 and math.isfinite(d)]
    return statistics.median(good) if good else None


def remaining_s(elapsed: float, progress: float | None, typical: float | None) -> float | None:
    """A running job's remaining seconds: from its progress if it has some, else from the typical
    duration of its past runs; None when neither says."""
    if progress is not None and 0.0 < progress < 1.0 and elapsed > 0:
        return elapsed * (1.0 - progress) / progress
    if progress is not None and progress >= 1.0:
        return 0.0
    if typical is not None and typical >= elapsed:
        return typical - elapsed
    return None


@dataclass
class _Job(ReplayState):
    idx: Any
    submit: float
    demand: dict


class _Live(Replay):
    def demand(self, j: _Job) -> dict:
        return {**j.demand, "running": j.start is not None, "gpus": j.gpus}

    def set_pace(self, j: _Job) -> None:
        j.unit_time, j.boundary = 1.0, j.work


def estimate(now: float, gpus: int, policy: str, jobs: list[dict], tree: Any = None,
             horizon_s: float = HORIZON_S) -> dict[Any, tuple[float | None, float | None]]:
    """``{id: (expected start, expected end)}`` in POSIX seconds (None: unknown) of ``jobs``:
    each an allocator demand (``nbrunner.core.placement.demand_of``) plus ``remaining_s``
    (float or None) and, running, ``held`` (the GPUs it holds; a running job's start is None)."""
    out: dict[Any, tuple[float | None, float | None]] = {}
    replayed = []
    for d in jobs:
        rest = d.get("remaining_s")
        work = math.inf if rest is None else max(0.0, float(rest))
        demand = {k: v for k, v in d.items() if k not in ("remaining_s", "held")}
        if d["max_gpus"] == 0 or (d.get("running") and not d.get("held")):
            end = None if work == math.inf else now + work
            out[d["id"]] = (None if d.get("running") else now, end)  # needs no GPU: not held up by anyone
            continue
        j = _Job(d["id"], now, demand, work=work)  # work: remaining seconds (inf: unknown)
        if d.get("running"):
            j.start, j.gpus = now, int(d["held"])
        replayed.append(j)
    if not replayed or gpus <= 0:
        return {**out, **{j.idx: (None, None) for j in replayed}}
    live = _Live(replayed, gpus, policy, 0.0, 0.0, tree, horizon=now + horizon_s, stall_ok=True)
    for j in replayed:
        if j.gpus:
            live.set_pace(j)
    live.run()
    for j in replayed:
        started = j.demand.get("running")
        out[j.idx] = (None if started else j.start, j.finish)
    return out
