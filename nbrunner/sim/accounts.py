"""Per-account results of a replay with an accounts tree: how many jobs each account ran, their
JCTs, and the share of the GPU-seconds it received (against its weight among its siblings)."""

from __future__ import annotations

import numpy as np

from nbrunner.core.accounts import AccountTree

from .workload import Job

__all__ = ["account_results"]


def account_results(tree: AccountTree, jobs: list[Job]) -> list[dict]:
    """One row per account that had jobs (its sub-accounts' included), parents first in file
    order: ``account``, ``weight``, ``jobs``, ``avg_jct_s``, ``p99_jct_s``, ``gpu_seconds`` and
    ``gpu_share`` (of all the GPU-seconds the replay handed out)."""
    leaf = {j.idx: tree.account_of(j.owner or "-", j.groups) for j in jobs}
    total = sum(j.attained for j in jobs) or 1.0
    rows = []
    for account, _parent in tree.walk():
        mine = [j for j in jobs if leaf[j.idx] == account.path or leaf[j.idx].startswith(account.path + "/")]
        if not mine:
            continue
        jct = np.array([j.finish - j.submit for j in mine])
        used = sum(j.attained for j in mine)
        rows.append({"account": account.path, "weight": account.weight, "jobs": len(mine),
                     "avg_jct_s": float(jct.mean()), "p99_jct_s": float(np.percentile(jct, 99)),
                     "gpu_seconds": used, "gpu_share": used / total})
    return rows
