"""Notifications on the Redis side: a user's settings and delivery log, the queue of
notifications to send, and turning the end of a job, sweep or pipeline into notifications.

The targets, settings and messages are pure (:mod:`nbrunner.core.notify_targets`); sending is
:mod:`.notify_sender`'s.  Nothing here sends anything or waits on the network, so whatever calls
these functions (the scheduler's process, a pipeline's merge) is never held up by a target:

- a notification is one JSON member of the sorted set ``NOTIFY_DUE`` scored by when it is due;
  a sender takes due ones atomically into ``NOTIFY_SENDING`` (scored by when its claim lapses),
  so two senders never send the same one, and one whose sender died is due again after
  ``NOTIFY_CLAIM_S``: nothing is lost across restarts (at worst a target hears it twice);
- ends are read from the event stream through a consumer group (:class:`EndWatcher`): an entry
  is acknowledged once handled, one left by a dead reader is taken over, and each end is
  turned into notifications once (``notify_once_key``).
"""
from __future__ import annotations

import json
import logging
import secrets
import time
from typing import TYPE_CHECKING, Any

import redis

from ..core.config import (NOTIFY_CLAIM_S, NOTIFY_LOG_KEPT, NOTIFY_ONCE_TTL_S, NOTIFY_PAGE_URL, NOTIFY_STALE_ENTRY_S)
from ..core.keys import (EVENTS, NOTIFY_DUE, NOTIFY_GROUP, NOTIFY_SENDING, notify_log_key, notify_once_key,
                         notify_settings_key)
from ..core.models import FINISHED, JobPhase, utcnow
from ..core.notify_targets import check_settings, default_settings, effective, group_message, job_message, mask

if TYPE_CHECKING:
    from .store import JobStore

log = logging.getLogger("nbrunner.notify")

_CLAIM = """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, m in ipairs(due) do
  redis.call('ZREM', KEYS[1], m)
  redis.call('ZADD', KEYS[2], ARGV[3], m)
end
return due
"""
_LAPSED = """
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
for _, m in ipairs(gone) do
  redis.call('ZREM', KEYS[2], m)
  redis.call('ZADD', KEYS[1], ARGV[1], m)
end
return #gone
"""


# ---- a user's settings and log ----------------------------------------------------------------------

def user_settings(r: redis.Redis, user: str) -> dict[str, list[str]]:
    """``{"targets", "on"}`` of ``user`` (none set: no targets, every event)."""
    raw = r.get(notify_settings_key(user))
    if raw is None:
        return default_settings()
    try:
        data = json.loads(raw)
        return {"targets": list(data["targets"]), "on": list(data["on"])}
    except (ValueError, KeyError, TypeError):
        return default_settings()


def set_user_settings(r: redis.Redis, user: str, data: Any) -> dict[str, list[str]]:
    """Check (InvalidRequest in one line: malformed, not allowed) and keep ``user``'s settings."""
    settings = check_settings(data)
    r.set(notify_settings_key(user), json.dumps(settings))
    return settings


def delivery_log(r: redis.Redis, user: str) -> list[dict[str, Any]]:
    """``user``'s deliveries, newest first: ``{time, target (masked), event, subject, outcome,
    attempt, error}``."""
    out = []
    for raw in r.lrange(notify_log_key(user), 0, NOTIFY_LOG_KEPT - 1):
        try:
            out.append(json.loads(raw))
        except ValueError:
            continue
    return out


def record_delivery(r: redis.Redis, item: dict[str, Any], outcome: str, error: str | None = None) -> None:
    """Add a line to the log of the user ``item`` (a notification) was for; secrets masked."""
    shown = mask(item["target"])
    entry = {"time": utcnow(), "target": shown, "event": item["event"], "subject": item["subject"],
             "outcome": outcome, "attempt": item["attempt"] + 1,
             "error": None if error is None else error.replace(item["target"], shown)}
    with r.pipeline(transaction=False) as p:
        p.lpush(notify_log_key(item["user"]), json.dumps(entry))
        p.ltrim(notify_log_key(item["user"]), 0, NOTIFY_LOG_KEPT - 1)
        p.execute()


# ---- the queue ---------------------------------------------------------------------------------------

def enqueue(r: redis.Redis, user: str, targets: list[str], event: str, subject: str,
            message: tuple[str, str, str]) -> int:
    """Queue one notification per target, due now; how many."""
    title, body, kind = message
    now = time.time()
    items = {json.dumps({"id": secrets.token_hex(8), "user": user, "target": t, "event": event, "subject": subject,
                         "title": title, "body": body, "type": kind, "attempt": 0}): now for t in targets}
    if items:
        r.zadd(NOTIFY_DUE, items)
    return len(items)


def claim(r: redis.Redis, limit: int = 20) -> list[dict[str, Any]]:
    """Take up to ``limit`` due notifications (each to send, then :func:`done` or :func:`retry`);
    those whose sender died are due again first."""
    now = time.time()
    r.eval(_LAPSED, 2, NOTIFY_DUE, NOTIFY_SENDING, now)
    taken = r.eval(_CLAIM, 2, NOTIFY_DUE, NOTIFY_SENDING, now, limit, now + NOTIFY_CLAIM_S)
    out = []
    for raw in taken:
        item = json.loads(raw)
        item["_raw"] = raw
        out.append(item)
    return out


def done(r: redis.Redis, item: dict[str, Any]) -> None:
    r.zrem(NOTIFY_SENDING, item["_raw"])


def retry(r: redis.Redis, item: dict[str, Any], delay_s: float) -> None:
    """Send ``item`` again in ``delay_s`` seconds (its attempt counted)."""
    again = {k: v for k, v in item.items() if k != "_raw"}
    again["attempt"] = item["attempt"] + 1
    with r.pipeline() as p:
        p.zrem(NOTIFY_SENDING, item["_raw"])
        p.zadd(NOTIFY_DUE, {json.dumps(again): time.time() + delay_s})
        p.execute()


def next_due(r: redis.Redis) -> float | None:
    """When the next queued notification is due (Unix s), or None."""
    first = r.zrange(NOTIFY_DUE, 0, 0, withscores=True)
    return first[0][1] if first else None


# ---- ends, turned into notifications -----------------------------------------------------------------

def _once(r: redis.Redis, kind: str, ident: str) -> bool:
    return bool(r.set(notify_once_key(kind, ident), "1", nx=True, ex=NOTIFY_ONCE_TTL_S))


def _tell(r: redis.Redis, owner: str, event: str, subject: str, message: tuple[str, str, str],
          own: dict[str, list[str]] | None = None) -> int:
    settings = effective(user_settings(r, owner), own)
    if event not in settings["on"] or not settings["targets"]:
        return 0
    return enqueue(r, owner, settings["targets"], event, subject, message)


def job_ended(store: JobStore, job_id: str) -> int:
    """Queue the notifications of job ``job_id``'s end, once, when it has ended for good (finished
    and released: a job re-run after its kernel was killed has not); a sweep's trial or a
    pipeline's step is told by its sweep or pipeline instead.  How many were queued."""
    rec = store.find(job_id)
    if rec is None or not rec.finished or rec.phase is not JobPhase.ENDED or rec.sweep:
        return 0
    if getattr(rec, "pipeline", None):  # a step: its pipeline's end is what its owner hears about
        return 0
    if not _once(store.r, "job", job_id):
        return 0
    message = job_message(rec.to_dict(), NOTIFY_PAGE_URL.text())
    return _tell(store.r, rec.owner, rec.status.value, f"job {job_id}", message, rec.notify)


def sweep_ended(store: JobStore, sweep_id: str) -> int:
    """Queue the notifications of sweep ``sweep_id``'s end, once."""
    from .sweeps import get_record, jobs_of

    try:
        rec = get_record(store, sweep_id)
    except Exception:  # noqa: BLE001 - removed meanwhile, or unreadable: nobody to tell
        return 0
    if not rec.finished or not _once(store.r, "sweep", sweep_id):
        return 0
    jobs = jobs_of(store, rec.job_ids())
    failed = sum(1 for j in jobs.values() if j.status.value == "failed")
    detail = f"{len(rec.trials)} trials" + (f", {failed} failed" if failed else "") + "."
    data = {"id": rec.id, "name": rec.name, "status": rec.status}
    return _tell(store.r, rec.owner, "sweep", f"sweep {sweep_id}", group_message("sweep", data, NOTIFY_PAGE_URL.text(),
                                                                                 detail))


def notify_pipeline_ended(store: JobStore, record: Any) -> int:
    """Queue the notifications of a pipeline's end, once: call it when the pipeline's record
    (``record``: its dict or an object with ``id``, ``name``, ``owner``, ``status`` and ``steps``)
    has reached its final status.  Never waits on a target.  How many were queued."""
    data = record if isinstance(record, dict) else (
        record.to_dict() if hasattr(record, "to_dict") else {k: getattr(record, k, None)
                                                             for k in ("id", "name", "owner", "status", "steps")})
    ident, status = str(data.get("id")), data.get("status")
    if status not in FINISHED or not _once(store.r, "pipeline", ident):
        return 0
    steps = data.get("steps") or {}
    counts: dict[str, int] = {}
    for step in steps.values() if isinstance(steps, dict) else ():
        state = step.get("status") if isinstance(step, dict) else getattr(step, "status", None)
        counts[str(state)] = counts.get(str(state), 0) + 1
    detail = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + "." if counts else ""
    message = group_message("pipeline", data, NOTIFY_PAGE_URL.text(), f"Steps: {detail}" if detail else "")
    return _tell(store.r, str(data.get("owner") or ""), "pipeline", f"pipeline {ident}", message)


class EndWatcher:
    """Reads the event stream through the consumer group ``NOTIFY_GROUP`` and turns each end of a
    job or sweep into notifications (see the module docstring).  Created at the stream's end: ends
    from before the first watcher ever ran are not told."""

    def __init__(self, store: JobStore, name: str):
        self.store, self.r, self.name = store, store.r, name
        try:
            self.r.xgroup_create(EVENTS, NOTIFY_GROUP, id="$", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    def step(self, block_s: float) -> int:
        """Handle the entries a dead reader left, then new ones (waiting up to ``block_s``);
        returns how many entries were handled."""
        entries = []
        stale = self.r.xautoclaim(EVENTS, NOTIFY_GROUP, self.name, int(NOTIFY_STALE_ENTRY_S * 1000), "0-0", count=100)
        entries += stale[1] if stale and len(stale) > 1 else []
        got = self.r.xreadgroup(NOTIFY_GROUP, self.name, {EVENTS: ">"}, count=100, block=max(1, int(block_s * 1000)))
        for _stream, items in got or []:
            entries += items
        for entry_id, fields in entries:
            if fields:  # a trimmed entry comes back empty
                self.handle(fields)
            self.r.xack(EVENTS, NOTIFY_GROUP, entry_id)
        return len(entries)

    def handle(self, fields: dict[str, str]) -> None:
        if fields.get("job") and fields.get("status") in FINISHED:
            job_ended(self.store, fields["job"])
        elif fields.get("type") == "sweep" and fields.get("sweep") and fields.get("status") in FINISHED:
            sweep_ended(self.store, fields["sweep"])
