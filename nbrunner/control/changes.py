"""The event stream read as changes: :class:`ChangeFeed` reads ``nbrunner:events`` and loads the
records the entries name, once for every subscriber (what is sent, and to whom, is decided in
:mod:`nbrunner.core.changes`).

A server reads the stream with one feed, whatever the number of its subscribers
(:mod:`nbrunner.server.push`); ``nbrunner jobs --watch`` reads it with its own::

    feed = ChangeFeed(store)
    position = feed.position()
    position, changes = feed.read(position, block_s=15)   # the changes after position, when some come
"""
from __future__ import annotations

from typing import Any, Callable

import msgspec

from ..core.changes import CLUSTER, JOB, PIPELINE, SCHEDULE, SWEEP, Change, Order, Plan, build, plan, replay_from
from ..core.config import EVENTS_MAX_BLOCK_S, EVENTS_MAXLEN, EVENTS_READ_BATCH, PUSH_REPLAY_MAX
from ..core.keys import EVENTS, job_key, schedule_key
from .store import JobStore
from .pipelines import pipeline_key
from .sweeps import sweep_key



class _Owner(msgspec.Struct):
    owner: str = ""


def sweep_summary(raw: str) -> tuple[str, dict[str, Any]] | None:
    """A stored sweep record's owner and what the channel says of it (its trials' jobs arrive as
    job changes; the leaderboard is ``GET /sweeps/{id}``)."""
    from ..core.sweeps.trials import SweepRecord

    try:
        rec = SweepRecord.model_validate_json(raw)
    except ValueError:
        return None
    return rec.owner, {"id": rec.id, "name": rec.name, "notebook": rec.notebook, "status": rec.status,
                       "owner": rec.owner, "created_at": rec.created_at, "finished_at": rec.finished_at,
                       "trials": len(rec.trials)}


def pipeline_public(raw: str) -> tuple[str, dict[str, Any]] | None:
    from ..core.pipelines.record import PipelineRecord

    try:
        rec = PipelineRecord.from_json(raw)
    except (msgspec.DecodeError, ValueError):
        return None
    return rec.owner, rec.to_dict()


def schedule_public(raw: str) -> tuple[str, dict[str, Any]] | None:
    from ..core.schedules import ScheduleRecord

    try:
        rec = ScheduleRecord.model_validate_json(raw)
    except ValueError:
        return None
    return rec.owner, rec.to_dict()


class ChangeFeed:
    """Changes from the event stream of ``store``.  ``status`` gives the ``GET /cluster`` object
    for cluster changes (without it, the feed makes none)."""

    def __init__(self, store: JobStore, status: Callable[[], dict[str, Any]] | None = None):
        self.store = store
        self.r = store.r
        self.status = status

    def position(self) -> str:
        """The id of the stream's newest entry ("0-0" for none): changes come after it."""
        return self.store.last_event_id()

    def read(self, after: str, block_s: float | None = None) -> tuple[str, list[Change]]:
        """The changes of the entries after the stream id ``after`` (waiting up to ``block_s``
        seconds for one, at most ``EVENTS_MAX_BLOCK_S``; None: not waiting), and the id of the last
        entry read."""
        block = None if block_s is None else max(1, int(min(block_s, EVENTS_MAX_BLOCK_S) * 1000))
        got = self.r.xread({EVENTS: after}, block=block, count=EVENTS_READ_BATCH)
        entries = [entry for _stream, batch in got or [] for entry in batch]
        if not entries:
            return after, []
        return entries[-1][0], self.changes(entries)

    def replay(self, last: Order, upto: str) -> list[Change] | None:
        """The changes a subscriber that saw ``last`` missed, up to the entry ``upto`` (included);
        None when there are more than ``PUSH_REPLAY_MAX`` entries to read again (it reloads)."""
        entries = self.r.xrange(EVENTS, replay_from(last), upto, count=PUSH_REPLAY_MAX + 1)
        if len(entries) > PUSH_REPLAY_MAX:
            return None
        return self.changes(entries) if entries else []

    def bounds(self) -> tuple[str | None, str, bool]:
        """The stream's first entry id (None: empty), its newest id, and whether it was trimmed."""
        if not self.r.exists(EVENTS):
            return None, "0-0", False
        info = self.r.xinfo_stream(EVENTS)
        first = info.get("first-entry")
        return (first[0] if first else None), info["last-generated-id"], info["length"] >= EVENTS_MAXLEN

    def changes(self, entries: list[tuple[str, dict[str, str]]]) -> list[Change]:
        """The changes of ``entries`` (in stream order), with the records as they are now."""
        p = plan(entries)
        loaded = self._load(p)
        cluster, owners = None, None
        if p.cluster is not None and self.status is not None:
            cluster = self.status()
            owners = self._owners(cluster)
        return build(p, loaded, cluster, owners)

    def _load(self, p: Plan) -> dict[tuple[str, str], tuple[str, dict[str, Any]] | None]:
        keys = list(p.objects)
        if not keys:
            return {}
        names = {JOB: job_key, SWEEP: sweep_key, SCHEDULE: schedule_key, PIPELINE: pipeline_key}
        readers = {SWEEP: sweep_summary, SCHEDULE: schedule_public, PIPELINE: pipeline_public}
        raws = self.r.mget([names[kind](key) for kind, key in keys])
        out: dict[tuple[str, str], tuple[str, dict[str, Any]] | None] = {}
        for (kind, key), raw in zip(keys, raws):
            if raw is None:
                out[(kind, key)] = None
            elif kind == JOB:
                rec = self.store.load(key, raw)
                out[(kind, key)] = (rec.owner, rec.to_dict())
            else:
                out[(kind, key)] = readers[kind](raw)
        return out

    def _owners(self, cluster: dict[str, Any]) -> dict[str, str]:
        """The owners of the jobs holding the slots of ``cluster``."""
        held = sorted({s["job"] for h in cluster.get("hosts", []) for s in h.get("slots", []) if s.get("job")})
        if not held:
            return {}
        owners = {}
        for job_id, raw in zip(held, self.r.mget([job_key(j) for j in held])):
            if raw is not None:
                try:
                    owners[job_id] = msgspec.json.decode(raw, type=_Owner).owner
                except msgspec.DecodeError:
                    continue
        return owners


__all__ = ["ChangeFeed", "CLUSTER"]
