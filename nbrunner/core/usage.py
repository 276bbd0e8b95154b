"""GPU-hours per account or user per day, from the jobs' GPU timelines. Pure, no I/O.

A job's GPU timeline (``[{"t": ISO-8601 time, "gpus": count}]``, oldest first) is integrated as
:mod:`nbrunner.core.attained` does: each point's count holds until the next point, the newest
one until ``now`` (a running job; an ended job's timeline ends with a point of 0), and a point
earlier than the one before it counts for no time.  The integral is cut at UTC midnights and at
the window's start, so the hours of a day are those held that day.  ``nbrunner usage`` and
``GET /usage`` show the result (``docs/usage.md``).
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Iterable

from .errors import InvalidRequest
from .models import parse_time

__all__ = ["BY", "daily_seconds", "parse_since", "usage_report"]

BY = ("account", "user")
_SINCE = re.compile(r"(\d{1,6})([dh])")
_DAY = 86400.0


def parse_since(text: str | None, now: datetime, default_days: int, max_days: int) -> datetime:
    """The window's start: ``Nd`` (days) or ``Nh`` (hours) before ``now``, or a UTC date
    ``YYYY-MM-DD`` (its midnight); at most ``max_days`` back.  Raises InvalidRequest."""
    if text is None or text == "":
        return now - timedelta(days=default_days)
    m = _SINCE.fullmatch(text.strip()) if isinstance(text, str) else None
    if m:
        n = int(m.group(1))
        start = now - (timedelta(days=n) if m.group(2) == "d" else timedelta(hours=n))
    else:
        try:
            start = datetime.strptime(str(text), "%Y-%m-%d").replace(tzinfo=timezone.utc)
        except ValueError:
            raise InvalidRequest(f"since must be like 7d, 24h or 2026-11-01, got {str(text)[:40]!r}") from None
    if start > now:
        raise InvalidRequest(f"since must be in the past, got {text!r}")
    if now - start > timedelta(days=max_days):
        raise InvalidRequest(f"since may go back at most {max_days} days, got {text!r}")
    return start


def daily_seconds(points: Iterable[dict], start: float, now: float) -> dict[str, float]:
    """GPU-seconds a job with GPU timeline ``points`` held within [``start``, ``now``] (POSIX
    seconds), per UTC day (``"YYYY-MM-DD"``)."""
    out: dict[str, float] = {}
    t: float | None = None
    gpus = 0
    for p in points:
        at = parse_time(p["t"]).timestamp()
        if t is not None and at > t:
            _add(out, gpus, t, at, start, now)
        t = at if t is None else max(t, at)
        gpus = max(0, int(p["gpus"]))
    if t is not None:
        _add(out, gpus, t, now, start, now)
    return out


def _add(out: dict[str, float], gpus: int, a: float, b: float, start: float, end: float) -> None:
    """Add ``gpus`` held over [a, b] (within [start, end]) to the days it falls on."""
    a, b = max(a, start), min(b, end)
    if gpus <= 0 or b <= a:
        return
    while a < b:
        midnight = (a // _DAY + 1) * _DAY
        upto = min(b, midnight)
        day = datetime.fromtimestamp(a, timezone.utc).strftime("%Y-%m-%d")
        out[day] = out.get(day, 0.0) + gpus * (upto - a)
        a = upto


def usage_report(jobs: Iterable[tuple[str, Iterable[dict]]], by: str, start: datetime, now: datetime) -> dict:
    """The usage report of ``jobs`` (pairs of the account or user a job counts for, and its GPU
    timeline): ``{"by", "since", "until", "rows": [{"day", by, "gpu_hours"}], "totals": {key:
    gpu_hours}}``, rows by day then key, only days with use."""
    if by not in BY:
        raise InvalidRequest(f"by must be one of {', '.join(BY)}, got {str(by)[:20]!r}")
    seconds: dict[tuple[str, str], float] = {}
    a, b = start.timestamp(), now.timestamp()
    for key, points in jobs:
        for day, s in daily_seconds(points, a, b).items():
            seconds[(day, key)] = seconds.get((day, key), 0.0) + s
    rows = [{"day": day, by: key, "gpu_hours": s / 3600} for (day, key), s in sorted(seconds.items())]
    totals: dict[str, float] = {}
    for row in rows:
        totals[row[by]] = totals.get(row[by], 0.0) + row["gpu_hours"]
    return {"by": by, "since": _iso(start), "until": _iso(now), "rows": rows, "totals": dict(sorted(totals.items()))}


def _iso(when: datetime) -> str:
    return when.astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
