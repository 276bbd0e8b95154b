"""What the push channel sends, pure: a run of event-stream entries as changes, who sees each,
and where a subscriber that reconnects resumes.

Every change of a job, sweep or schedule record appends an entry to the Redis stream
``nbrunner:events`` (:mod:`.keys`): its kind (``type``) and the object's id (``job``, ``sweep``,
``schedule`` or ``pipeline``), plus ``owner`` when the record is gone (a deleted job or schedule).  A reader of
the stream (:mod:`nbrunner.control.changes`) turns a run of entries into :class:`Change` s:

- one change per object, at the last entry that touched it, carrying the record as it is *now*
  (the object's earlier entries add nothing: its record already shows them);
- one ``cluster`` change, at the last entry that moved slots or workers, carrying the
  ``GET /cluster`` object.

Change ids.  A change is named by its entry's stream id and a rank: ``<ms>-<seq>.0`` for an
object's change, ``<ms>-<seq>.1`` for the cluster's, and a bare stream id stands for a reader's
position, everything up to and including that entry.  Ids order as ``(ms, seq, rank)``, a bare
id after both ranks (:func:`order`).  A subscriber that last saw id ``X`` gets, on reconnect,
the changes of the entries from ``X``'s on whose id is greater than ``X``, with their records as
they are then: nothing is missed, nothing is sent twice.  If the stream no longer holds the
entries after ``X`` (trimmed, or another Redis), it is told to reload instead (:func:`resumable`).
"""
from __future__ import annotations

import re
from typing import Any, Iterable, NamedTuple

from .identity import Caller

JOB, SWEEP, SCHEDULE, CLUSTER = "job", "sweep", "schedule", "cluster"
PIPELINE = "pipeline"
OBJECT_FIELDS = (JOB, SWEEP, SCHEDULE, PIPELINE)  # the entry field naming the object, which is also the change's kind
# Entry kinds that move slots or workers, or publish an accounts file: the cluster view changes (and reads the
# accounts again, so a reloaded file shows at once).
CLUSTER_KINDS = frozenset({"dispatched", "undispatched", "gpus", "released", "slots_freed", "requeued", "cancelled",
                           "quarantined", "deleted", "worker_joined", "worker_left", "scheduler", "accounts"})
OBJECT_RANK, CLUSTER_RANK, ENTRY_RANK = 0, 1, 9
HIDDEN_JOB = "(another user's job)"  # a slot held by a job the caller does not see
_ID = re.compile(r"(\d{1,20})-(\d{1,20})(?:\.([01]))?")

Order = tuple[int, int, int]


class Change(NamedTuple):
    """One message of the channel: ``kind`` of object, its ``key`` (its id; "" for the cluster),
    the ``owner`` who may see it (None: everyone), and the ``data`` sent (``{"job": record}``,
    ``{"id", "deleted": true}``, ...).  A cluster change also keeps the ``owners`` of the jobs
    holding slots, to hide the others' from each caller (never sent)."""

    id: str
    kind: str
    key: str
    owner: str | None
    data: dict[str, Any]
    owners: dict[str, str] | None = None


class Plan(NamedTuple):
    """What a run of entries asks to load: the last entry id per ``(kind, key)`` (with that
    entry's fields), and the last entry id that moved the cluster (None: none did)."""

    objects: dict[tuple[str, str], tuple[str, dict[str, str]]]
    cluster: str | None


def order(change_id: str) -> Order | None:
    """The sort key of a change id or a bare stream id (see the module docstring); None if
    ``change_id`` is neither."""
    m = _ID.fullmatch(change_id) if isinstance(change_id, str) else None
    if m is None:
        return None
    rank = ENTRY_RANK if m.group(3) is None else int(m.group(3))
    return int(m.group(1)), int(m.group(2)), rank


def entry_id(change_id: str) -> str:
    """The stream id a change id belongs to."""
    return change_id.partition(".")[0]


def plan(entries: Iterable[tuple[str, dict[str, str]]]) -> Plan:
    """Which objects ``entries`` (stream id, fields; in stream order) touched, each at its last
    entry, and the last entry that moved the cluster."""
    objects: dict[tuple[str, str], tuple[str, dict[str, str]]] = {}
    cluster = None
    for eid, fields in entries:
        for kind in OBJECT_FIELDS:
            key = fields.get(kind)
            if key:
                objects.pop((kind, key), None)  # re-inserted last: the dict keeps the entries' order
                objects[(kind, key)] = (eid, fields)
                break
        if fields.get("type") in CLUSTER_KINDS:
            cluster = eid
    return Plan(objects, cluster)


def build(p: Plan, loaded: dict[tuple[str, str], tuple[str, dict[str, Any]] | None],
          cluster: dict[str, Any] | None = None, owners: dict[str, str] | None = None) -> list[Change]:
    """The changes of a plan, in id order.  ``loaded`` maps each planned object to ``(owner,
    public dict)`` as it is now, or None when its record is gone (a deletion, for the owner the
    entry names; with none named, for admins only); ``cluster`` is the ``GET /cluster`` object
    (needed when the plan moved the cluster) and ``owners`` the owners of the jobs in its slots."""
    out: list[Change] = []
    for (kind, key), (eid, fields) in p.objects.items():
        found = loaded.get((kind, key))
        if found is None:
            out.append(Change(f"{eid}.{OBJECT_RANK}", kind, key, fields.get("owner", ""), {"id": key, "deleted": True}))
        else:
            owner, public = found
            out.append(Change(f"{eid}.{OBJECT_RANK}", kind, key, owner, {kind: public}))
    if p.cluster is not None and cluster is not None:
        out.append(Change(f"{p.cluster}.{CLUSTER_RANK}", CLUSTER, "", None, {CLUSTER: cluster}, owners or {}))
    out.sort(key=lambda c: order(c.id))
    return out


def visible(change: Change, caller: Caller) -> bool:
    """Whether ``caller`` gets ``change``: its owner's objects (an admin: all), the cluster to everyone."""
    return change.owner is None or caller.sees(change.owner)


def data_for(change: Change, caller: Caller) -> dict[str, Any]:
    """What ``caller`` is sent of ``change``: a cluster change names only the jobs the caller sees
    (the others' slots show :data:`HIDDEN_JOB`)."""
    if change.kind != CLUSTER or caller.admin:
        return change.data
    owners = change.owners or {}
    status = change.data[CLUSTER]
    hosts = [{**h, "slots": [{**s, "job": s["job"] if not s.get("job") or caller.sees(owners.get(s["job"]))
                              else HIDDEN_JOB} for s in h.get("slots", [])]} for h in status.get("hosts", [])]
    return {CLUSTER: {**status, "hosts": hosts}}


def after(change: Change, last: Order | None) -> bool:
    """Whether ``change`` comes after the subscriber's last id (``last`` None: it saw nothing yet)."""
    return last is None or order(change.id) > last


def resumable(last: Order, first: str | None, newest: str, trimmed: bool) -> bool:
    """Whether a subscriber that saw ``last`` can resume from the stream: ``last`` is not ahead of
    the ``newest`` id the stream gave (else it came from another history), and the stream still
    holds every entry after it: it was never ``trimmed`` (nbrunner only trims, to a length it
    then keeps), or its ``first`` entry is not past ``last`` (``first`` None: it is empty)."""
    newest_order = order(newest)
    if newest_order is None or last[:2] > newest_order[:2]:
        return False
    if not trimmed or first is None:
        return True
    first_order = order(first)
    return first_order is not None and last[:2] >= first_order[:2]


def replay_from(last: Order) -> str:
    """The ``XRANGE`` start for a subscriber that saw ``last``: its entry again (``ms-seq``) when it
    may have missed that entry's cluster change, else just after it (``(ms-seq``)."""
    ms, seq, rank = last
    return f"{ms}-{seq}" if rank < CLUSTER_RANK else f"({ms}-{seq}"
