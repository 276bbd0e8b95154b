"""GPU allocation policy: a pure function, no I/O (see docs/architecture.md).

``allocate(total_gpus, demands, policy)`` maps every demand id to a whole number
of GPUs. Demands are dicts ``{"id", "min_gpus", "max_gpus", "priority",
"submitted_at"}`` plus an optional ``"running": bool`` (default False).

Conventions:

* ``id`` is a ``str`` or an ``int``; all ids of one call must be of the same kind
  (they break ties in the order, so they must be comparable) and unique.
* ``min_gpus``/``max_gpus``/``total_gpus`` are non-negative integers (``bool`` is
  rejected); ``min_gpus <= max_gpus``.
* ``priority`` is a real number in ``1..10000`` (integers give exact rounding).
* ``submitted_at`` is a number (POSIX seconds), an ISO-8601 string or a
  ``datetime``. Everything is converted to POSIX seconds (float) before
  comparing; strings/datetimes without a timezone are taken as UTC. So
  ``"1970-01-01T00:01:40Z"`` and ``100`` compare equal (the id breaks the tie).

With ``accounts=TREE`` (an accounts file's content, see ``nbrunner.core.accounts``)
every demand also carries ``"owner"`` (and optionally ``"groups"``) and the GPUs are
divided down the accounts tree first, then between users, then by the policy between
each user's jobs: ``nbrunner.core.shares`` holds those rules. Without it the
function is the flat policy below. The validation, order and per-policy split live
in ``nbrunner.core.demands``, the weighted max-min split in ``nbrunner.core.fairsplit``.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

from .demands import MAX_PRIORITY, MIN_PRIORITY, POLICIES, check_call, policy_order, read_demands, split_admitted
from .shares import account_shares
from .waiting import flat_reasons, left_waiting

__all__ = ["allocate", "allocate_explained", "Allocation", "POLICIES", "MIN_PRIORITY", "MAX_PRIORITY"]


class Allocation(NamedTuple):
    """An allocation and why each job it leaves waiting waits (``nbrunner.core.waiting``)."""

    gpus: dict[Any, int]        # {id: gpus}, as allocate returns
    waiting: dict[Any, dict]    # {id: {"code", "message"}} for exactly the jobs left waiting


def allocate(total_gpus: int, demands: list[dict], policy: str = "fairshare", accounts=None, *,
             queue_thresholds: tuple[float, ...] | None = None) -> dict[Any, int]:
    """Return ``{id: gpus}`` for every demand (0 = not admitted / queued).

    Order: running jobs first, then the rest; within each group fairshare sorts by
    ``(submitted_at, id)`` and priority by ``(-priority, submitted_at, id)``.
    Admission walks that order adding ``min_gpus`` and stops at the first job that
    does not fit (no backfill). ``fairshare`` splits ``min(total, sum max)`` by
    weighted max-min fairness (weights = priorities) and rounds by largest
    remainder (ties to the earlier job); ``priority`` gives every admitted job its
    min and the rest greedily in order up to each max; ``goodput`` (see
    ``nbrunner.core.goodput``) admits as fairshare and gives the GPUs above the
    minimums short work first (queues by ``attained`` GPU-seconds), each queue's
    by the measured speedups of its jobs' ``throughput`` (``{gpus:
    samples_per_s}``, times ``efficiency`` when the job adapts its batch),
    restart-aware via ``gpus``/``pause_s``; ``queue_thresholds``: its queues'
    attained-service thresholds (default ``nbrunner.core.goodput.QUEUE_THRESHOLDS``).
    ``accounts``: an accounts tree (dict or ``AccountTree``) to divide by first
    (``nbrunner.core.shares``). Raises ``ValueError`` on invalid input.
    """
    return allocate_explained(total_gpus, demands, policy, accounts, queue_thresholds=queue_thresholds,
                              explain=False).gpus


def allocate_explained(total_gpus: int, demands: list[dict], policy: str = "fairshare", accounts=None, *,
                       queue_thresholds: tuple[float, ...] | None = None, hosts: Sequence[int] | None = None,
                       explain: bool = True) -> Allocation:
    """:func:`allocate` plus, for every job left waiting (not running, ``max_gpus`` > 0, given no
    GPU), why (``nbrunner.core.waiting``), computed in the same pass.  ``hosts``: the GPU slots
    of each live worker host, when known (a demand with ``"gang": true`` needs its ``min_gpus``
    on one host; an empty list means no live worker).  ``explain=False`` skips the reasons."""
    total = check_call(total_gpus, policy)
    if accounts is not None:
        s = account_shares(total, demands, policy, accounts, queue_thresholds=queue_thresholds,
                           hosts=hosts, explain=explain)
        return Allocation(s.jobs, s.waiting)
    if len(demands) == 0:
        return Allocation({}, {})
    d = read_demands(demands)
    order = policy_order(d, policy)
    # Clip to total + 1 (nobody can use more) so that the sums below cannot overflow.
    m = np.minimum(d.m[order], total + 1)
    cut = int(np.searchsorted(np.cumsum(m), total, side="right"))  # first job that doesn't fit
    adm = order[:cut]
    alloc = np.zeros(len(d.ids), dtype=np.int64)
    alloc[adm] = split_admitted(policy, total, adm, d, thresholds=queue_thresholds)
    gpus = dict(zip(d.ids, alloc.tolist()))
    if not explain or not left_waiting(d.m, d.M, d.running, alloc).size:
        return Allocation(gpus, {})
    return Allocation(gpus, flat_reasons(total, d.ids, d.items, d.m, d.M, d.running, order, cut, alloc, hosts))

