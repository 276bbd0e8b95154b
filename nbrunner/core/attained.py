"""Attained service: the GPU-seconds a job has received, integrated from its GPU timeline. Pure, no I/O.

A job's GPU timeline is the list of ``{"t": ISO-8601 time, "gpus": count}`` points written at
every change of the slots it holds (``nbrunner.control.grants``), over its whole life: a job
re-queued after a lost worker or a preemption keeps what it received before.  Its attained
service at time ``now`` is the integral of its GPU count: each point's count times the time to
the next point, plus the newest count times the time since it.  A point earlier than the one
before it (clocks of different hosts) counts for no time.  The ``goodput`` policy serves jobs
with less attained service first (see ``nbrunner.core.goodput``).

:class:`Attained` is the running sum, so a caller that sees a timeline grow folds in only the
new points (:func:`fold`) and reads the service at any later time (:func:`service_at`).
"""
from __future__ import annotations

from typing import Iterable, NamedTuple

from .models import parse_time

__all__ = ["Attained", "fold", "service_at", "attained_service"]


class Attained(NamedTuple):
    """The integral of a job's GPU timeline up to its newest point."""

    seen: int = 0             # timeline points folded in
    closed: float = 0.0       # GPU-seconds up to the newest point
    t: float | None = None    # the newest point's time (POSIX seconds)
    gpus: int = 0             # the GPU count since then
    resizes: int = 0          # changes of the GPU count since the first start (resizes, preemptions, restarts)
    started: bool = False     # some point had a GPU


def fold(acc: Attained, points: Iterable[dict]) -> Attained:
    """``acc`` with the timeline points that follow the ``acc.seen`` it has folded in."""
    seen, closed, t, gpus, resizes, started = acc
    for p in points:
        at = parse_time(p["t"]).timestamp()
        if t is not None and at > t:
            closed += gpus * (at - t)
        t = at if t is None else max(t, at)
        count = max(0, int(p["gpus"]))
        resizes += int(started and count != gpus)
        started = started or count > 0
        gpus = count
        seen += 1
    return Attained(seen, closed, t, gpus, resizes, started)


def service_at(acc: Attained, now: float) -> float:
    """GPU-seconds received up to ``now`` (POSIX seconds)."""
    if acc.t is None:
        return acc.closed
    return acc.closed + acc.gpus * max(0.0, now - acc.t)


def attained_service(points: Iterable[dict], now: float) -> float:
    """GPU-seconds a job with GPU timeline ``points`` (oldest first) has received up to ``now``."""
    return service_at(fold(Attained(), points), now)
