"""Reclaim, pure: what taking GPUs back from running jobs means for each of them, and why.

With an accounts tree (:mod:`nbrunner.core.shares`) a running job's share may fall below what
it holds: a lender account asks for the GPUs it lent, or a new user of its account arrives.
:func:`reclaim_plan` says, job by job:

* an elastic job whose share is still at least its minimum shrinks to it at its next step
  boundary (the scheduler cuts its grant; the job gives the GPUs back itself): ``shrunk``;
* a job that would go below what it can run with (an elastic job below its minimum, any
  other job below the GPUs it holds) is preempted: it keeps what it holds (at least its
  minimum) until ``reclaim_after`` seconds have passed since it was first asked, then its
  worker stops it and it waits in the queue again, with its checkpoint: ``preempt``.

The reason names the account that asks (``reclaimed by account vision``): of the accounts that
hold less than their fair share, the one given the most GPUs above what it holds; else ``fair
share`` (the GPUs go to other work of the same account).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from .accounts import held_by_account
from .placement import started

if TYPE_CHECKING:
    from .models import JobRecord


class Reclaims(NamedTuple):
    """``shares``: the shares to place (preempted jobs keep theirs until stopped); ``shrunk`` and
    ``preempt``: ``{job id: reason}``."""

    shares: dict[str, int]
    shrunk: dict[str, str]
    preempt: dict[str, str]


def asking_account(rows: list[dict], held: dict[str, int]) -> str | None:
    """The account that asks its GPUs back: it holds less than its fair share and is given more
    than it holds (the most such GPUs, if several).  ``held``: what each account holds, a parent
    what its sub-accounts hold (:func:`~nbrunner.core.accounts.held_by_account`)."""
    best, gap = None, 0
    for row in rows:
        have = held.get(row["path"], 0)
        want = row["allocated"] - have
        if want > gap and have < row["share"]:
            best, gap = row["path"], want
    return best


def reclaim_plan(live: list[JobRecord], shares: dict[str, int], rows: list[dict], account_of: dict[str, str]
                 ) -> Reclaims:
    """See the module docstring.  ``live``: the unfinished jobs; ``shares``: their GPUs under the
    accounts; ``rows``: the accounts' rows (``path``, ``allocated``, ``share``); ``account_of``:
    each job's account."""
    held = held_by_account((account_of.get(rec.id, ""), len(rec.slots)) for rec in live)
    asker = asking_account(rows, held)
    reason = f"reclaimed by account {asker}" if asker else "fair share"
    out = dict(shares)
    shrunk: dict[str, str] = {}
    preempt: dict[str, str] = {}
    for rec in live:
        have, want = len(rec.slots), shares.get(rec.id, 0)
        if not started(rec) or want >= have or (rec.elastic and rec.training_over):
            continue  # (a trainer that closed gives its GPUs back by itself)
        if rec.elastic and want >= max(rec.min_gpus, 1):
            shrunk[rec.id] = reason
            continue
        preempt[rec.id] = reason
        out[rec.id] = max(rec.min_gpus, 1) if rec.elastic else have
    return Reclaims(out, shrunk, preempt)
