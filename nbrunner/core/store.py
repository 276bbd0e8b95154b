"""Job records, events, workers and grants in Redis, under nbrunner's own keys.

Records are JSON strings at ``nbrunner:job:<id>``, listed in the sorted set
``nbrunner:jobs`` (by creation time); events go to the stream ``nbrunner:events``.
Nothing here expires: rq's result TTLs never touch these keys.
"""
from __future__ import annotations

import json
import time
from typing import Any, Callable, Iterable

import redis

from .config import redact
from .errors import NoCluster, NotFound
from .models import JobRecord

from .keys import ACTIVE, EVENTS, EVENTS_MAXLEN, JOBS, job_key


def connect(url: str, **kwargs: Any) -> redis.Redis:
    """A redis-py client for a ``redis://``, ``rediss://`` or ``unix://`` URL."""
    kwargs.setdefault("decode_responses", True)
    kwargs.setdefault("health_check_interval", 10)
    kwargs.setdefault("socket_connect_timeout", 5)
    try:
        return redis.Redis.from_url(url, **kwargs)
    except ValueError as exc:
        raise NoCluster(f"invalid NBRUNNER_REDIS_URL {redact(url)!r}: {exc}") from None


class JobStore:
    """Reads and changes job records atomically (optimistic WATCH/MULTI transactions)."""

    def __init__(self, client: redis.Redis, url: str):
        self.r = client
        self.url = url

    @classmethod
    def from_url(cls, url: str) -> "JobStore":
        return cls(connect(url), url)

    # ---- records -------------------------------------------------------------
    def create(self, record: JobRecord) -> bool:
        """Store a new record; False if the id is taken."""
        if not record.history:
            record.note_status(None)
        if not self.r.set(job_key(record.id), record.model_dump_json(), nx=True):
            return False
        with self.r.pipeline() as p:
            p.zadd(JOBS, {record.id: time.time()})
            p.sadd(ACTIVE, record.id)
            p.xadd(EVENTS, {"type": "submitted", "job": record.id}, maxlen=EVENTS_MAXLEN, approximate=True)
            p.execute()
        return True

    def get(self, job_id: str) -> JobRecord:
        raw = self.r.get(job_key(job_id))
        if raw is None:
            raise NotFound(f"no job {job_id!r}")
        return self.load(job_id, raw)

    def load(self, job_id: str, raw: str) -> JobRecord:
        """Parse a stored record; one that cannot be read is quarantined (see :mod:`nbrunner.core.quarantine`)."""
        try:
            return JobRecord.model_validate_json(raw)
        except Exception as exc:  # noqa: BLE001 - a corrupt record must not break a listing or a pass
            from .quarantine import quarantine_unreadable

            return quarantine_unreadable(self, job_id, raw, exc)

    def find(self, job_id: str) -> JobRecord | None:
        try:
            return self.get(job_id)
        except NotFound:
            return None

    def ids(self) -> list[str]:
        return self.r.zrange(JOBS, 0, -1)

    def all(self, status: str | Iterable[str] | None = None) -> list[JobRecord]:
        ids = self.ids()
        if not ids:
            return []
        wanted = {status} if isinstance(status, str) else set(status) if status else None
        out = []
        for job_id, raw in zip(ids, self.r.mget([job_key(i) for i in ids])):
            if raw is None:
                continue
            rec = self.load(job_id, raw)
            if wanted is None or rec.status in wanted:
                out.append(rec)
        return out

    def update(self, job_id: str, change: Callable[[JobRecord], bool | None], event: str | None = None) -> JobRecord | None:
        """Apply ``change`` to the record atomically.

        ``change`` mutates the record and returns False to abort (nothing written);
        returns the written record, or None if aborted.
        """
        key = job_key(job_id)
        with self.r.pipeline() as p:
            while True:
                try:
                    p.watch(key)
                    raw = p.get(key)
                    if raw is None:
                        p.reset()
                        raise NotFound(f"no job {job_id!r}")
                    try:
                        rec = JobRecord.model_validate_json(raw)
                    except Exception as exc:  # noqa: BLE001 - quarantined, then changed like any record
                        p.reset()
                        from .quarantine import quarantine_unreadable

                        quarantine_unreadable(self, job_id, raw, exc)
                        continue
                    before = rec.status
                    if change(rec) is False:
                        p.reset()
                        return None
                    rec.note_status(before)  # every status change of a job goes through here
                    p.multi()
                    p.set(key, rec.model_dump_json())
                    if event:
                        p.xadd(EVENTS, {"type": event, "job": job_id, "status": rec.status}, maxlen=EVENTS_MAXLEN, approximate=True)
                    p.execute()
                    return rec
                except redis.WatchError:
                    continue

    def delete(self, job_id: str, extra_keys: Iterable[str] = ()) -> None:
        """Remove a job's record and every index of it (and ``extra_keys``: keys of other layers)."""
        from .quarantine import quarantine_key

        with self.r.pipeline() as p:
            p.delete(job_key(job_id), quarantine_key(job_id), *extra_keys)
            p.zrem(JOBS, job_id)
            p.srem(ACTIVE, job_id)
            p.xadd(EVENTS, {"type": "deleted", "job": job_id}, maxlen=EVENTS_MAXLEN, approximate=True)
            p.execute()

    def update_progress(self, job_id: str, progress: float | None = None, metrics: dict[str, Any] | None = None) -> None:
        def change(rec: JobRecord) -> bool:
            if rec.finished:
                return False
            if progress is not None:
                rec.progress = max(0.0, min(1.0, float(progress)))
            if metrics:
                rec.metrics.update(metrics)
                _record_throughput(rec, metrics)
            return True

        self.update(job_id, change, event="progress")

    # ---- events ----------------------------------------------------------------
    def emit(self, kind: str, **data: Any) -> None:
        fields = {"type": kind, **{k: v if isinstance(v, str) else json.dumps(v) for k, v in data.items()}}
        self.r.xadd(EVENTS, fields, maxlen=EVENTS_MAXLEN, approximate=True)

    def last_event_id(self) -> str:
        info = self.r.xinfo_stream(EVENTS) if self.r.exists(EVENTS) else None
        return info["last-generated-id"] if info else "0-0"

    def wait_events(self, after: str, timeout: float) -> tuple[str, list[dict[str, str]]]:
        """Block up to ``timeout`` seconds for events after ``after``; returns (last id, events)."""
        got = self.r.xread({EVENTS: after}, block=max(1, int(timeout * 1000)), count=1000)
        events: list[dict[str, str]] = []
        for _stream, entries in got or []:
            for eid, fields in entries:
                after = eid
                events.append(fields)
        return after, events


def _record_throughput(rec: JobRecord, metrics: dict[str, Any]) -> None:
    """Keep an elastic job's samples/s per learner count and last resize pause (goodput policy inputs)."""
    sps, n, pause = metrics.get("samples_per_s"), metrics.get("learners"), metrics.get("resize_pause_s")
    if isinstance(sps, (int, float)) and sps > 0 and isinstance(n, int) and not isinstance(n, bool) and n > 0:
        rec.throughput[str(n)] = float(sps)
    if isinstance(pause, (int, float)) and pause >= 0:
        rec.pause_s = float(pause)
