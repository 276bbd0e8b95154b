"""Why a job waits: one reason per job the allocator leaves waiting, pure.

A reason is ``{"code": CODE, "message": one line naming the numbers}``.  Codes:

* ``capacity``: its ``min_gpus`` exceed what the live workers can ever place (the cluster's
  GPUs; for a job that needs all its GPUs on one host, the largest host's);
* ``no_workers``: no live worker;
* ``gpus_busy``: the GPUs are held by jobs ahead of it (higher priority, or earlier);
* ``account_limit``: its account (or one above it) holds its ``limit``;
* ``account_share``: its account, or its user within it, is at its share while others with
  demand are below theirs;
* ``reclaiming``: GPUs are being taken back for it from borrowers;
* ``needs``: a pipeline step waiting for the steps it needs.

A job is *left waiting* by an allocation when it is not running, asks for a GPU
(``max_gpus`` > 0) and gets none.  :func:`flat_reasons` explains the flat policy's walk and
:func:`account_reasons` the division down an accounts tree (``nbrunner.core.shares``); both
are called by :func:`nbrunner.core.allocate.allocate_explained` in the same pass as the
allocation.  :func:`unplaced_reason` explains a job the allocator serves but the scheduler
cannot place yet (its slots are still held, or not on one host).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .models import WAITING_CODES as CODES

__all__ = ["CODES", "reason", "flat_reasons", "account_reasons", "unplaced_reason", "left_waiting"]



def reason(code: str, message: str) -> dict[str, str]:
    """A reason dict (``code`` must be one of :data:`CODES`)."""
    if code not in CODES:
        raise ValueError(f"unknown waiting code {code!r}")
    return {"code": code, "message": message}


def _gpus(n: int) -> str:
    return f"{n} GPU" if n == 1 else f"{n} GPUs"


def _jobs(n: int) -> str:
    return f"{n} job" if n == 1 else f"{n} jobs"


def left_waiting(m: np.ndarray, M: np.ndarray, running: np.ndarray, alloc: np.ndarray
                 ) -> np.ndarray:
    """Indices of the demands left waiting: not running, asking for a GPU, given none."""
    return np.flatnonzero((alloc == 0) & (M > 0) & ~running)


def _cluster_reason(total: int, hosts: Sequence[int] | None, need: int, gang: bool) -> dict | None:
    """``no_workers`` or ``capacity`` when no placement could ever fit the job, else None."""
    if (hosts is not None and len(hosts) == 0) or (hosts is None and total == 0):
        return reason("no_workers", f"no live worker; it needs {_gpus(need)}")
    if need > total:
        return reason("capacity", f"needs {_gpus(need)}; the live workers have {total}")
    if gang and hosts is not None and need > max(hosts):
        return reason("capacity", f"needs {_gpus(need)} on one host; the largest host has {max(hosts)}")
    return None


def _gang(items: list[dict], i: int) -> bool:
    return bool(items[i].get("gang", False))


def flat_reasons(total: int, ids: list, items: list[dict], m: np.ndarray, M: np.ndarray, running: np.ndarray,
                 order: np.ndarray, cut: int, alloc: np.ndarray, hosts: Sequence[int] | None = None
                 ) -> dict[Any, dict]:
    """Reasons of the flat policy's waiting jobs: ``order`` is the admission walk, ``cut`` the
    first job whose minimum did not fit (``len(order)`` if every one did).  Jobs with the same
    reason share one dict (do not change it)."""
    waiting = left_waiting(m, M, running, alloc)
    if len(waiting) == 0:
        return {}
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    ahead = int(np.minimum(m[order[:cut]], total + 1).sum())  # what the jobs before the cut need
    behind = None  # the reason of every job behind the cut that could fit
    if cut < len(order):
        b = int(order[cut])
        bneed = _gpus(int(m[b]))
        what = (f"which needs {bneed}; the live workers have {total}" if _cluster_reason(total, hosts, int(m[b]),
                _gang(items, b)) else f"which needs {bneed}; {ahead} of the {total} go to the {_jobs(cut)} ahead of it")
        behind = reason("gpus_busy", f"behind job {ids[b]}, {what}")
    out: dict[Any, dict] = {}
    seen: dict[tuple, dict | None] = {}
    for i, r in zip(waiting.tolist(), rank[waiting].tolist()):
        need, gang = int(m[i]), _gang(items, i)
        key = (need, gang)
        if key not in seen:
            seen[key] = _cluster_reason(total, hosts, need, gang)
        why = seen[key]
        if why is None:
            if r < cut:  # admitted, but the split left it nothing
                why = reason("gpus_busy", f"gets none of the {total} GPUs: the {_jobs(r)} ahead of it share them")
            elif r == cut:
                why = reason("gpus_busy", f"needs {_gpus(need)}; {ahead} of the {total} go to the {_jobs(r)} ahead of it")
            else:
                why = behind
        out[ids[i]] = why
    return out


def account_reasons(total: int, ids: list, items: list[dict], m: np.ndarray, M: np.ndarray, running: np.ndarray,
                    alloc: np.ndarray, job_user: np.ndarray, user_used: np.ndarray, user_leaf: np.ndarray,
                    user_owner: list[str], accounts: list, parent: np.ndarray, acc_used: np.ndarray,
                    hosts: Sequence[int] | None = None) -> dict[Any, dict]:
    """Reasons of the waiting jobs under an accounts tree.  Per job its user (``job_user``);
    per user the GPUs given (``user_used``), leaf account index and owner; per account (tree
    order, ``parent`` -1 at the top) the account itself (``path``, ``limit``) and GPUs given.
    Jobs with the same reason share one dict (do not change it)."""
    waiting = left_waiting(m, M, running, alloc)
    out: dict[Any, dict] = {}
    given = int(user_used.sum())
    serving = np.bincount(user_leaf[user_used > 0], minlength=len(accounts))  # users given GPUs, per leaf
    seen: dict[tuple, dict] = {}
    for i in waiting.tolist():
        key = (int(job_user[i]), int(m[i]), _gang(items, i))
        if key not in seen:
            seen[key] = _account_reason(total, hosts, key, user_used, user_leaf, user_owner, accounts, parent,
                                        acc_used, given, serving)
        out[ids[i]] = seen[key]
    return out


def _account_reason(total: int, hosts: Sequence[int] | None, key: tuple, user_used: np.ndarray,
                    user_leaf: np.ndarray, user_owner: list[str], accounts: list, parent: np.ndarray,
                    acc_used: np.ndarray, given: int, serving: np.ndarray) -> dict:
    """One reason under accounts: the cluster, else a limit on the way up, else the shares."""
    u, need, gang = key
    why = _cluster_reason(total, hosts, need, gang)
    a = leaf = int(user_leaf[u])
    while why is None and a >= 0:
        acc = accounts[a]
        held = int(acc_used[a])
        if acc.limit is not None and acc.limit < total and held + need > acc.limit:  # (else the cluster binds)
            if need > acc.limit:
                why = reason("account_limit", f"needs {_gpus(need)}; account {acc.path} has a limit of {acc.limit}")
            elif held >= acc.limit:
                why = reason("account_limit", f"account {acc.path} holds its limit of {_gpus(acc.limit)}")
            else:
                why = reason("account_limit", f"account {acc.path} holds {held} of its limit of "
                                              f"{_gpus(acc.limit)}; this job needs {need} more")
        a = int(parent[a])
    if why is not None:
        return why
    mine = int(user_used[u])
    others = given - mine
    if others == 0:
        return reason("gpus_busy", f"needs {_gpus(need)}; the jobs ahead of it hold {mine} of the {total}")
    path = accounts[leaf].path
    if serving[leaf] - (mine > 0) > 0:  # other users of its account hold GPUs
        return reason("account_share", f"user {user_owner[u]} is at their share of account {path}: "
                                       f"{mine} of its {int(acc_used[leaf])} GPUs")
    return reason("account_share", f"account {path} is at its share: {int(acc_used[leaf])} of "
                                   f"{total} GPUs; other accounts hold {others}")


def unplaced_reason(need: int, gang: bool, free: Sequence[tuple[str, int]], reclaiming_for: str | None = None
                    ) -> dict[str, str]:
    """Why a job the allocator serves (``need`` GPUs) is not placed this pass: GPUs being taken
    back for its account (``reclaiming_for``), or held by jobs that still have to release them."""
    if reclaiming_for:
        return reason("reclaiming", f"{_gpus(need)} are being taken back for account {reclaiming_for} from borrowers")
    if gang:
        per_host: dict[str, int] = {}
        for h, _ in free:
            per_host[h] = per_host.get(h, 0) + 1
        most = max(per_host.values(), default=0)
        if len(free) >= need:
            return reason("gpus_busy", f"needs {_gpus(need)} on one host; the most free on a host is {most}")
    return reason("gpus_busy", f"needs {_gpus(need)}; {len(free)} free, the rest still held by other jobs")
