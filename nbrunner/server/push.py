"""The push channel, ``GET /events``: the changes of jobs, sweeps, schedules and the cluster that
the caller may see, as server-sent events, as they happen.

One :class:`Broadcaster` per server process (in the application's settings, made by the first
subscriber on either host) reads the event stream with one
:class:`~nbrunner.control.changes.ChangeFeed`, in a thread, whatever the number of subscribers:
each batch of entries is loaded once (records read once, each change encoded once) and handed
to the IOLoop, which writes to each subscriber the changes it sees
(:func:`nbrunner.core.changes.visible`).  With no subscriber, nothing is read.

What a subscriber receives (``text/event-stream``, one message per change; ids and resuming in
:mod:`nbrunner.core.changes`)::

    event: ready           first: {"resumed": true|false, "user", "admin"} (who the server
                           takes the caller for); a fresh subscription's id is the stream
                           position it starts from
    id: 1700000000000-3.0
    event: job             {"job": record} or {"id", "deleted": true}; likewise sweep, schedule, pipeline
    event: cluster         {"cluster": the GET /cluster object}
    event: reload          the stream no longer holds what was missed: read everything again, once
    id: <position>         every PUSH_HEARTBEAT_S without a change, with a comment (": ping"): the
                           connection stays open, a dead one is noticed, and the id moves past
                           changes of others

A subscriber sends the last id it saw as ``Last-Event-ID`` (or ``?last_event_id=``) when it
reconnects.  A subscriber that reads too slowly (more than ``PUSH_MAX_PENDING`` bytes waiting) is
disconnected; it reconnects and resumes.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

import msgspec
from tornado.iostream import StreamClosedError

from ..control.changes import ChangeFeed
from ..core.config import EVENTS_MAX_BLOCK_S, PUSH_HEARTBEAT_S, PUSH_MAX_PENDING
from ..core.changes import Change, Order, after, data_for, order, resumable, visible
from ..core.errors import InvalidRequest
from ..core.identity import Caller

log = logging.getLogger("nbrunner.push")
_json = msgspec.json.Encoder(enc_hook=str)


def frame(event: str, data: Any, event_id: str | None = None) -> bytes:
    """One server-sent event."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: ".encode() + _json.encode(data) + b"\n\n"


class Subscriber:
    """One open ``GET /events``: who asks, the last change id sent, and the bytes waiting."""

    def __init__(self, caller: Caller, last: Order | None):
        self.caller = caller
        self.last = last
        self.chunks: list[bytes] = []
        self.size = 0
        self.closed = False
        self.backlog: list[list[Change]] | None = []  # batches delivered while it catches up; None: live
        self._ready = asyncio.Event()

    def push(self, data: bytes) -> None:
        if self.closed or not data:
            return
        self.chunks.append(data)
        self.size += len(data)
        if self.size > PUSH_MAX_PENDING:  # it reads too slowly: it reconnects and resumes from its last id
            self.close()
        self._ready.set()

    def close(self) -> None:
        self.closed = True
        self.chunks.clear()
        self._ready.set()

    async def next(self, timeout: float) -> bytes | None:
        """What to write now (b"" after ``timeout`` seconds without anything), None once closed."""
        if not self.chunks and not self.closed:
            try:
                await asyncio.wait_for(self._ready.wait(), timeout)
            except asyncio.TimeoutError:
                pass
        if self.closed:
            return None
        out = b"".join(self.chunks)
        self.chunks.clear()
        self.size = 0
        self._ready.clear()
        return out


class Broadcaster:
    """Reads the event stream once for all the subscribers of a server process (see the module
    docstring).  Its subscribers live on the IOLoop; the reader is a thread."""

    def __init__(self, feed: ChangeFeed):
        self.feed = feed
        self.position: str | None = None  # the stream id through which batches were handed out
        self._subs: set[Subscriber] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()  # the reader's state below, shared with the loop
        self._generation = 0
        self._read_from = "0-0"
        self._wanted = threading.Event()
        self._closing = False
        self._thread: threading.Thread | None = None
        self._starting = asyncio.Lock()

    @property
    def subscribers(self) -> int:
        return len(self._subs)

    async def subscribe(self, caller: Caller, last: Order | None) -> Subscriber:
        """A new subscriber from the current position (``last`` None), or resuming after ``last``."""
        await self._start()
        sub = Subscriber(caller, last)
        self._subs.add(sub)
        start = self.position
        if last is None:
            sub.last = order(start)
            sub.backlog = None
            sub.push(frame("ready", _ready(caller, False), start))
        else:
            asyncio.ensure_future(self._catch_up(sub, last, start))
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        sub.close()
        self._subs.discard(sub)
        if not self._subs:  # nobody listens: the reader rests (its current read is dropped)
            with self._lock:
                self._generation += 1
                self._wanted.clear()

    def heartbeat(self, sub: Subscriber) -> bytes:
        """A comment, with the position as id when it is past what ``sub`` saw."""
        now = order(self.position) if self.position is not None else None
        if sub.backlog is None and now is not None and (sub.last is None or now > sub.last):
            sub.last = order(self.position)
            return f"id: {self.position}\n: ping\n\n".encode()
        return b": ping\n\n"

    def close(self) -> None:
        """Stop the reader (after its current read) and disconnect every subscriber."""
        self._closing = True
        for sub in list(self._subs):
            self.unsubscribe(sub)
        self._wanted.set()

    # ---- the loop side ------------------------------------------------------------------------
    async def _start(self) -> None:
        async with self._starting:
            if self._wanted.is_set():
                return
            self._loop = asyncio.get_running_loop()
            position = await self._loop.run_in_executor(None, self.feed.position)
            with self._lock:
                self._generation += 1
                self._read_from = position
                self.position = position
                self._wanted.set()
            if self._thread is None:
                self._thread = threading.Thread(target=self._read, name="nbrunner-push", daemon=True)
                self._thread.start()

    async def _catch_up(self, sub: Subscriber, last: Order, upto: str) -> None:
        """Send ``sub`` what it missed after ``last``, up to ``upto``, then what came meanwhile."""
        loop = asyncio.get_running_loop()
        try:
            first, newest, trimmed = await loop.run_in_executor(None, self.feed.bounds)
            missed = (await loop.run_in_executor(None, self.feed.replay, last, upto)
                      if resumable(last, first, newest, trimmed) else None)
        except Exception as exc:  # noqa: BLE001 - Redis away: the client reconnects and tries again
            log.warning("push: cannot resume a subscriber: %s: %s", exc.__class__.__name__, exc)
            sub.close()
            return
        if missed is None:
            sub.last = order(upto)
            sub.push(frame("reload", {}, upto))
        else:
            sub.push(frame("ready", _ready(sub.caller, True)))
            self._send(sub, missed)
        backlog, sub.backlog = sub.backlog or [], None
        for batch in backlog:
            self._send(sub, batch)

    def _deliver(self, generation: int, position: str, changes: list[Change]) -> None:
        if generation != self._generation:
            return
        self.position = position
        if not changes:
            return
        frames: dict[tuple[str, Caller | None], bytes] = {}
        for sub in list(self._subs):
            if sub.backlog is not None:
                sub.backlog.append(changes)
            else:
                self._send(sub, changes, frames)

    def _send(self, sub: Subscriber, changes: list[Change],
              frames: dict[tuple[str, Caller | None], bytes] | None = None) -> None:
        """The changes ``sub`` sees and has not had, as one write (frames shared by subscribers)."""
        frames = {} if frames is None else frames
        parts = []
        for change in changes:
            if not visible(change, sub.caller) or not after(change, sub.last):
                continue
            personal = change.kind == "cluster" and not sub.caller.admin
            key = (change.id, sub.caller if personal else None)
            encoded = frames.get(key)
            if encoded is None:
                encoded = frames[key] = frame(change.kind, data_for(change, sub.caller), change.id)
            parts.append(encoded)
            sub.last = order(change.id)
        if parts:
            sub.push(b"".join(parts))

    # ---- the reader thread ----------------------------------------------------------------------
    def _read(self) -> None:
        while not self._closing:
            self._wanted.wait()
            with self._lock:
                generation, start = self._generation, self._read_from
            if self._closing:
                return
            try:
                position, changes = self.feed.read(start, block_s=EVENTS_MAX_BLOCK_S)
            except Exception as exc:  # noqa: BLE001 - Redis restarting or away: read again soon
                log.warning("push: reading the event stream failed: %s: %s", exc.__class__.__name__, exc)
                time.sleep(1.0)
                continue
            with self._lock:
                if generation != self._generation:
                    continue  # restarted (or nobody listens) meanwhile: this read is stale
                self._read_from = position
            if position != start and self._loop is not None:
                self._loop.call_soon_threadsafe(self._deliver, generation, position, changes)


def _ready(caller: Caller, resumed: bool) -> dict[str, Any]:
    """The first message: whether the subscription resumed, and who the server takes the caller for."""
    return {"resumed": resumed, "user": caller.name, "admin": caller.admin}


def broadcaster(settings: dict[str, Any], api: Any) -> Broadcaster:
    """The server process's broadcaster (made on first use, in the application's ``settings``), on
    the cluster of ``api`` (a :class:`~nbrunner.control.api.ClusterAPI`)."""
    hub = settings.get("nbrunner_push")
    if hub is None:
        hub = settings["nbrunner_push"] = Broadcaster(ChangeFeed(api.store, status=api.status))
    return hub


def last_event_id(raw: str | None) -> Order | None:
    """The order of the id a reconnecting subscriber sent (None: a fresh subscription).

    Raises:
        InvalidRequest: not an id of this channel."""
    if raw is None:
        return None
    last = order(raw.strip())
    if last is None:
        raise InvalidRequest("Last-Event-ID must be an id this channel sent (like 1700000000000-0.0)")
    return last


async def stream(handler: Any, hub: Broadcaster, sub: Subscriber) -> None:
    """Write ``sub``'s changes to ``handler``'s response until either side stops."""
    try:
        while True:
            chunk = await sub.next(PUSH_HEARTBEAT_S)
            if chunk is None:
                break
            handler.write(chunk or hub.heartbeat(sub))
            await handler.flush()
    except StreamClosedError:
        pass
    finally:
        hub.unsubscribe(sub)
