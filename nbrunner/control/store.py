"""Job records, events, workers and grants in Redis, under nbrunner's own keys.

Records are JSON strings at ``nbrunner:job:<id>``, listed in the sorted set
``nbrunner:jobs`` (by creation time) and in one sorted set per status
(``nbrunner:jobs:<status>``, same scores), so a page of the newest jobs, with or without a
status, costs the same with 100 or 100,000 records; finished jobs are also in
``nbrunner:finished`` by finish time (for retention).  Events go to the stream
``nbrunner:events``.  Nothing here expires by itself: rq's result TTLs never touch these keys
(old finished jobs are removed by the scheduler's retention, if set).
"""
from __future__ import annotations

import base64
import binascii
import json
import math
import time
from typing import Any, Callable, Iterable

from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ..core.config import (EVENTS_MAXLEN, EVENTS_READ_BATCH, PAGE_READ_BATCH, PAGE_SCAN_MAX, REDIS_CONNECT_TIMEOUT_S,
                     REDIS_HEALTH_CHECK_S, REDIS_URL, Settings, redact)
from ..core.errors import InvalidRequest, NoCluster, NotFound
from ..core.keys import EVENTS, INDEXED, JOBS, job_key, status_index
from ..core.lifecycle import JobEvent, Purge, Transition, submitted, transition
from ..core.models import STATUSES, JobRecord
from . import job_write
from .job_write import JobWrite, transition_write, write_job

INDEX_VERSION = "1"

# Up to ARGV[1] members of the sorted set KEYS[1] in the order of ARGV[4] ('zrevrange': newest
# first; 'zrange': oldest first), with their scores and records (ARGV[3] .. id), as a flat list.
# With a cursor score ARGV[2], the members of that very score come first, all of them (the caller
# keeps those whose id sorts after the cursor's), then the following ones (up to ARGV[5]: -inf or
# +inf).
_PAGE = """
local n = tonumber(ARGV[1])
local items
if ARGV[2] == '' then
  items = redis.call(ARGV[4], KEYS[1], 0, n - 1, 'WITHSCORES')
else
  local by = ARGV[4] .. 'byscore'
  items = redis.call(by, KEYS[1], ARGV[2], ARGV[2], 'WITHSCORES')
  local rest = redis.call(by, KEYS[1], '(' .. ARGV[2], ARGV[5], 'WITHSCORES', 'LIMIT', 0, n)
  for i = 1, #rest do items[#items + 1] = rest[i] end
end
local out = {}
for i = 1, #items, 2 do
  out[#out + 1] = items[i]
  out[#out + 1] = items[i + 1]
  out[#out + 1] = redis.call('get', ARGV[3] .. items[i])
end
return out
"""


def encode_cursor(score: float, job_id: str) -> str:
    """An opaque position in a listing: just after the job ``job_id`` created at ``score``."""
    return base64.urlsafe_b64encode(f"{score!r} {job_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[float, str]:
    bad = InvalidRequest("cursor is not one this server returned (pass the 'next' of the previous page)")
    if not isinstance(cursor, str) or not 0 < len(cursor) <= 200:
        raise bad
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        score_text, job_id = text.split(" ")
        score = float(score_text)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise bad from None
    if not math.isfinite(score) or not job_id or not job_id.isascii() or not job_id.isalnum():
        raise bad
    return score, job_id


def _driver_info() -> dict[str, Any]:
    """redis-py >= 7.1 looks its own version up in the installed packages' metadata for every new
    client (about 10 ms, twice in a CLI command); give it the version it knows, once per process
    (the same CLIENT SETINFO values).  Older versions do that once, at import."""
    try:
        from redis.driver_info import DriverInfo
    except ImportError:
        return {}
    return {"driver_info": DriverInfo(lib_version=redis.__version__)}


DRIVER_INFO = _driver_info()  # keyword arguments of redis.Redis for every client nbrunner makes


def connect(url: str, **kwargs: Any) -> redis.Redis:
    """A redis-py client for a ``redis://``, ``rediss://`` or ``unix://`` URL."""
    kwargs = {**DRIVER_INFO, **kwargs}
    kwargs.setdefault("decode_responses", True)
    kwargs.setdefault("health_check_interval", REDIS_HEALTH_CHECK_S)
    kwargs.setdefault("socket_connect_timeout", REDIS_CONNECT_TIMEOUT_S)
    try:
        return redis.Redis.from_url(url, **kwargs)
    except ValueError as exc:
        raise NoCluster(f"invalid {REDIS_URL.name} {redact(url)!r}: {exc}") from None


def ping(socket_path: Path, timeout: float = 0.5) -> bool:
    """True if a Redis server answers on this unix socket."""
    if not socket_path.exists():
        return False
    client = redis.Redis(unix_socket_path=str(socket_path), socket_timeout=timeout, socket_connect_timeout=timeout,
                         retry=Retry(NoBackoff(), 0), **DRIVER_INFO)  # redis-py retries with backoff by default: seconds
    try:
        return bool(client.ping())
    except redis.AuthenticationError:
        return True  # a server answers; it wants a password (a workspace whose jobs run as their owners)
    except (redis.ConnectionError, redis.TimeoutError, OSError):
        return False
    finally:
        client.close()


def reachable(settings: Settings) -> JobStore:
    """A store on the workspace's Redis, or NoCluster saying how to start one."""
    if settings.embedded and not ping(settings.socket_path):
        raise NoCluster(f"no nbrunner cluster is running in {settings.workspace}: start one with `nbrunner up`")
    store = JobStore.from_url(settings.url)
    try:
        store.r.ping()
    except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
        raise NoCluster(f"cannot reach Redis at {redact(settings.url)} ({exc.__class__.__name__}): "
                        f"start a cluster with `nbrunner up` or fix {REDIS_URL.name}") from None
    except redis.AuthenticationError:
        raise NoCluster(f"Redis at {redact(settings.url)} refused the credentials") from None
    return store


class JobStore:
    """Reads and changes job records atomically (optimistic WATCH/MULTI transactions)."""

    def __init__(self, client: redis.Redis, url: str):
        self.r = client
        self.url = url
        self._page_script = client.register_script(_PAGE)
        self._insert_script = client.register_script(job_write.INSERT)

    @classmethod
    def from_url(cls, url: str) -> "JobStore":
        return cls(connect(url), url)

    # ---- records -------------------------------------------------------------
    def create(self, record: JobRecord) -> JobRecord | None:
        """Store a new job (made by :func:`~nbrunner.core.lifecycle.submitted` if it is not yet);
        None if the id is taken."""
        if not record.history:
            record = submitted(record)
        return record if self._insert([record]) else None

    def create_many(self, records: list[JobRecord]) -> bool:
        """Store new jobs (each as :meth:`create` stores one) in one atomic step, all or none; False
        (nothing written) if an id is taken."""
        return self._insert([r if r.history else submitted(r) for r in records])

    def _insert(self, records: list[JobRecord]) -> bool:
        score = time.time()
        return job_write.insert(self._insert_script, [  # listed in the order given
            JobWrite(rec.id, rec, entries=[{"type": "submitted", "job": rec.id}], score=score + i * 1e-6, new=True,
                     active=True) for i, rec in enumerate(records)])

    def get(self, job_id: str) -> JobRecord:
        """The record of ``job_id``; NotFound if there is none."""
        raw = self.r.get(job_key(job_id))
        if raw is None:
            raise NotFound(f"no job {job_id!r}")
        return self.load(job_id, raw)

    def load(self, job_id: str, raw: str) -> JobRecord:
        """Parse a stored record; one that cannot be read is quarantined (see :mod:`nbrunner.control.quarantine`)."""
        try:
            return JobRecord.from_json(raw)
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
        """Every record (of ``status``: one or several), oldest first.  Reads the whole history:
        listings use :meth:`page`."""
        wanted = {status} if isinstance(status, str) else set(status) if status else None
        if wanted is None:
            ids = self.ids()
        else:
            scored = [(score, job_id) for s in wanted if s in STATUSES
                      for job_id, score in self.r.zrange(status_index(s), 0, -1, withscores=True)]
            ids = [job_id for _, job_id in sorted(scored)]
        out = []
        for start in range(0, len(ids), 1000):
            chunk = ids[start:start + 1000]
            for job_id, raw in zip(chunk, self.r.mget([job_key(i) for i in chunk])):
                if raw is None:
                    continue
                rec = self.load(job_id, raw)
                if wanted is None or rec.status in wanted:
                    out.append(rec)
        return out

    def count(self, status: str | None = None) -> int:
        """How many jobs there are (in ``status``), without reading them."""
        return self.r.zcard(JOBS if status is None else status_index(status))

    def page(self, status: str | None = None, limit: int | None = None, cursor: str | None = None,
             where: Callable[[JobRecord], bool] | None = None,
             oldest_first: bool = False) -> tuple[list[JobRecord], str | None]:
        """Up to ``limit`` records (None: all), newest first (or ``oldest_first``), after ``cursor``;
        returns them and the cursor of the next page (None at the end).

        ``status`` reads that status's index; ``where`` filters further (owner, schedule...): a
        page that reads ``PAGE_SCAN_MAX`` records without filling up returns early, with a cursor.
        Jobs created after the first page do not shift later pages (they come before the cursor)."""
        if status is not None and status not in STATUSES:
            raise InvalidRequest(f"status must be one of {', '.join(STATUSES)}")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise InvalidRequest(f"limit must be a positive integer, got {limit!r}")
        key = JOBS if status is None else status_index(status)
        pos = decode_cursor(cursor) if cursor is not None else None
        need = None if limit is None else limit + 1  # one more tells whether there is a next page
        out: list[tuple[JobRecord, tuple[float, str]]] = []
        scanned = 0
        while need is None or len(out) < need:
            if need is None:
                size = PAGE_READ_BATCH
            elif where is None:
                size = min(PAGE_READ_BATCH, need - len(out))
            else:  # filtered: read ahead, but never past the scan budget
                size = min(PAGE_READ_BATCH, PAGE_SCAN_MAX - scanned)
            batch = self._after(key, pos, size, oldest_first)
            if not batch:
                break
            for job_id, score, raw in batch:
                pos = (score, job_id)
                scanned += 1
                if raw is None:
                    continue
                rec = self.load(job_id, raw)
                if (status is None or rec.status == status) and (where is None or where(rec)):
                    out.append((rec, pos))
                    if need is not None and len(out) == need:
                        break
            if len(batch) < size:
                break
            if where is not None and limit is not None and scanned >= PAGE_SCAN_MAX and len(out) < need:
                return [rec for rec, _ in out], encode_cursor(*pos)  # a page of what was found so far
        if need is not None and len(out) == need:
            return [rec for rec, _ in out[:limit]], encode_cursor(*out[limit - 1][1])
        return [rec for rec, _ in out], None

    def cursor_after(self, job_id: str) -> str | None:
        """The cursor of the listing position just after the job ``job_id`` (None: no such job)."""
        score = self.r.zscore(JOBS, job_id)
        return None if score is None else encode_cursor(score, job_id)

    def _after(self, key: str, pos: tuple[float, str] | None, n: int,
               oldest_first: bool = False) -> list[tuple[str, float, str | None]]:
        """Up to ``n`` (id, score, record text) of sorted set ``key``, newest (oldest) first, after
        ``pos`` (one round trip)."""
        score, last = pos if pos is not None else ("", "")
        order = ("zrange", "+inf") if oldest_first else ("zrevrange", "-inf")
        flat = self._page_script(keys=[key], args=[n, repr(score) if pos is not None else "", job_key(""), *order])
        rows = [(flat[i], float(flat[i + 1]), flat[i + 2]) for i in range(0, len(flat), 3)]
        if pos is not None:  # the first rows share the cursor's creation time: keep those after it (by id)
            rows = [row for row in rows if row[1] != score or (row[0] > last if oldest_first else row[0] < last)]
        return rows[:n]

    def reindex(self, chunk: int = 1000) -> int:
        """File every record under its status (records written before the status indexes
        existed); once per Redis, the first time a scheduler starts.  Returns the records read."""
        if self.r.get(INDEXED) == INDEX_VERSION:
            return 0
        ids = self.r.zrange(JOBS, 0, -1, withscores=True)
        for start in range(0, len(ids), chunk):
            part = ids[start:start + chunk]
            with self.r.pipeline(transaction=False) as p:
                for (job_id, score), raw in zip(part, self.r.mget([job_key(i) for i, _ in part])):
                    if raw is not None:  # only adds: a concurrent status change is never undone
                        job_write.refile(p, self.load(job_id, raw), score)
                p.execute()
        self.r.set(INDEXED, INDEX_VERSION)
        return len(ids)

    def remove(self, job_id: str, extra_keys: Iterable[str] = ()) -> Transition:
        """Delete a finished, released job's record, every index entry of it and ``extra_keys``
        (keys of other layers: its grant, its timeline), as the :class:`~nbrunner.core.lifecycle.Purge`
        transition allows (Refused otherwise, nothing changed); returns that transition (its
        actions: the job directory).  An unreadable record is left to the quarantine."""
        from .quarantine import quarantine_key

        def decide(p: Any, raw: str | None) -> tuple[Transition, JobWrite]:
            if raw is None:
                raise NotFound(f"no job {job_id!r}")
            rec = self.load(job_id, raw)
            done = transition(rec, Purge())
            # the owner: whoever follows the stream learns of the removal (the record is gone)
            return done, JobWrite(job_id, None, entries=[{"type": done.event, "job": job_id, "owner": rec.owner}],
                                  drop=(quarantine_key(job_id), *extra_keys))

        return write_job(self.r, job_id, decide)

    def transition(self, job_id: str, event: JobEvent | Callable[[JobRecord], JobEvent | None],
                   prepare: Callable[[Transition], None] | None = None) -> Transition | None:
        """Apply ``event`` (or the event ``event(record)`` picks, None: nothing) to the job atomically
        (:func:`~nbrunner.control.job_write.write_job`, retried on a concurrent change), with the
        actions that change only the record done in the same write (``SyncSlots``, ``AppendTimeline``).

        Returns the transition, whose after-actions the caller carries out; None if ``event``
        picked nothing.  Raises :class:`~nbrunner.core.lifecycle.Refused` (nothing written) when the
        event is not legal in the record's state, NotFound when there is no record.  ``prepare``
        carries out the transition's before-actions (``output.html``) before the record is written,
        once even if the write is retried."""
        prepared = False

        def decide(p: Any, raw: str | None) -> tuple[Transition | None, JobWrite | None]:
            nonlocal prepared
            if raw is None:
                raise NotFound(f"no job {job_id!r}")
            try:
                rec = JobRecord.from_json(raw)
            except Exception as exc:  # noqa: BLE001 - quarantined, then changed like any record
                from .quarantine import quarantine_unreadable

                quarantine_unreadable(self, job_id, raw, exc)
                raise redis.WatchError("quarantined: read it again")
            picked = event(rec) if callable(event) else event
            if picked is None:
                return None, None
            done, w = transition_write(rec, transition(rec, picked), held=lambda: job_write.held_slots(p, job_id),
                                       score=lambda: p.zscore(JOBS, job_id) or time.time())
            if w is not None and prepare is not None and not prepared and any(a.before for a in done.actions):
                prepare(done)
                prepared = True
            return done, w

        return write_job(self.r, job_id, decide)

    # ---- events ----------------------------------------------------------------
    def emit(self, kind: str, **data: Any) -> None:
        fields = {"type": kind, **{k: v if isinstance(v, str) else json.dumps(v) for k, v in data.items()}}
        self.r.xadd(EVENTS, fields, maxlen=EVENTS_MAXLEN, approximate=True)

    def last_event_id(self) -> str:
        info = self.r.xinfo_stream(EVENTS) if self.r.exists(EVENTS) else None
        return info["last-generated-id"] if info else "0-0"

    def wait_events(self, after: str, timeout: float) -> tuple[str, list[dict[str, str]]]:
        """Block up to ``timeout`` seconds for events after ``after``; returns (last id, events)."""
        got = self.r.xread({EVENTS: after}, block=max(1, int(timeout * 1000)), count=EVENTS_READ_BATCH)
        events: list[dict[str, str]] = []
        for _stream, entries in got or []:
            for eid, fields in entries:
                after = eid
                events.append(fields)
        return after, events

