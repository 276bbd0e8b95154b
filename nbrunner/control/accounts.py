"""Accounts in Redis: the published tree, the GPU-hours each account used, its GPUs over time.

The file given to ``nbrunner up --accounts``, ``nbrunner service --accounts`` or
``setup_cluster(accounts=...)`` is checked (a bad file is refused with the line of the
problem) and published to ``nbrunner:accounts`` (its text and where it came from): the
scheduler divides GPUs down it (:func:`nbrunner.core.shares.account_shares`), ``nbrunner
share`` and ``GET /accounts`` show it.  :func:`reload` reads the file again (``nbrunner share
--reload``, SIGHUP to ``nbrunner up`` or ``nbrunner service``); a file that is now bad is refused
and the published tree stays.

Usage: every scheduler pass adds the GPU-seconds each account held since the previous pass
to its total (``nbrunner:usage``) and to the bucket of the current hour
(``nbrunner:usage:<hour>``, kept 25 hours); "the last 24 h" is the sum of the current hour's
bucket and the 23 before it.  Each change of an account's held GPUs is appended to
``nbrunner:accounts:timeline`` (the newest 10,000 kept), for the cluster view's chart.
"""
from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from ..core.accounts import AccountTree, parse_accounts
from .local_files import read_accounts
from ..core.errors import InvalidRequest
from ..core.config import ACCOUNTS_TIMELINE_KEPT, USAGE_BUCKETS_KEPT_S, USAGE_MAX_PASS_GAP_S
from ..core.keys import ACCOUNTS, ACCOUNTS_TIMELINE, RECLAIM, USAGE, USAGE_LAST
from ..core.models import utcnow

if TYPE_CHECKING:
    from .store import JobStore


_parsed: dict[str, AccountTree] = {}  # text -> tree: a pass parses the published file once


def hour_key(t: float) -> str:
    return f"{USAGE}:{int(t // 3600)}"


def publish(store: JobStore, path: str) -> AccountTree:
    """Check the accounts file at ``path`` and make it the cluster's (InvalidRequest, naming the
    line, if it is bad: then nothing changes)."""
    tree = read_accounts(path)
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")
    store.r.hset(ACCOUNTS, mapping={"text": text, "source": str(path), "loaded_at": utcnow()})
    store.emit("accounts", source=str(path))
    return tree


def reload(store: JobStore) -> AccountTree:
    """Read the published accounts file again from where it came from."""
    source = store.r.hget(ACCOUNTS, "source")
    if not source:
        raise InvalidRequest("this cluster has no accounts: start it with --accounts ACCOUNTS.yaml")
    return publish(store, source)


def current(store: JobStore) -> AccountTree | None:
    """The published tree, or None when the cluster has no accounts."""
    text = store.r.hget(ACCOUNTS, "text")
    if not text:
        return None
    tree = _parsed.get(text)
    if tree is None:
        tree = parse_accounts(text, store.r.hget(ACCOUNTS, "source") or "accounts.yaml")
        _parsed.clear()
        _parsed[text] = tree
    return tree


def source(store: JobStore) -> dict[str, str]:
    """Where the published file came from and when: ``{"source", "loaded_at"}`` (empty: none)."""
    got = store.r.hmget(ACCOUNTS, ["source", "loaded_at"])
    return {"source": got[0], "loaded_at": got[1]} if got[0] else {}


def record_usage(store: JobStore, held: dict[str, int], now: float | None = None) -> None:
    """Add what each account held (``{path: GPUs}``) since the last call to its usage; note a
    change of the held GPUs in the timeline.  Called by the active scheduler every pass."""
    now = time.time() if now is None else now
    last = store.r.getset(USAGE_LAST, repr(now))
    gap = now - float(last) if last else 0.0
    with store.r.pipeline(transaction=False) as p:
        if 0 < gap <= USAGE_MAX_PASS_GAP_S:
            bucket = hour_key(now)
            for path, gpus in held.items():
                if gpus:
                    p.hincrbyfloat(USAGE, path, gpus * gap)
                    p.hincrbyfloat(bucket, path, gpus * gap)
            p.expire(bucket, USAGE_BUCKETS_KEPT_S)
        p.execute()
    newest = store.r.lindex(ACCOUNTS_TIMELINE, -1)
    if newest is None or json.loads(newest)["gpus"] != held:
        store.r.rpush(ACCOUNTS_TIMELINE, json.dumps({"t": utcnow(), "gpus": held}))
        store.r.ltrim(ACCOUNTS_TIMELINE, -ACCOUNTS_TIMELINE_KEPT, -1)


def usage(store: JobStore, now: float | None = None) -> dict[str, tuple[float, float]]:
    """GPU-hours per account: ``{path: (last 24 h, in total)}``."""
    now = time.time() if now is None else now
    hours = [hour_key(now - 3600 * h) for h in range(24)]
    with store.r.pipeline(transaction=False) as p:
        p.hgetall(USAGE)
        for key in hours:
            p.hgetall(key)
        total, *buckets = p.execute()
    recent: dict[str, float] = {}
    for bucket in buckets:
        for path, seconds in bucket.items():
            recent[path] = recent.get(path, 0.0) + float(seconds)
    return {path: (recent.get(path, 0.0) / 3600, float(seconds) / 3600)
            for path, seconds in {**{p: 0 for p in recent}, **total}.items()}


def timeline(store: JobStore, limit: int = 1000) -> list[dict[str, Any]]:
    """The newest ``limit`` changes of the accounts' held GPUs, oldest first."""
    return [json.loads(x) for x in store.r.lrange(ACCOUNTS_TIMELINE, -limit, -1)]


def due_preemptions(store: JobStore, asked: dict[str, str], reclaim_after: float, now: float | None = None
                    ) -> list[str]:
    """The jobs of ``asked`` (``{id: reason}``: to preempt once ``reclaim_after`` seconds have passed
    since their GPUs were first asked back) whose time is up.  Remembers when each was first
    asked (in Redis: a standby scheduler that takes over keeps the clock), forgets the others."""
    now = time.time() if now is None else now
    first = store.r.hgetall(RECLAIM)
    gone = [j for j in first if j not in asked]
    new = {j: repr(now) for j in asked if j not in first}
    with store.r.pipeline(transaction=False) as p:
        if gone:
            p.hdel(RECLAIM, *gone)
        if new:
            p.hset(RECLAIM, mapping=new)
        p.execute()
    return sorted(j for j, t in first.items() if j in asked and now - float(t) >= reclaim_after)
