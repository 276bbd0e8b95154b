"""GPU allocation down an accounts tree, then between users, then between a user's jobs.

Pure, no I/O. ``account_shares(total, demands, policy, accounts)`` returns a
:class:`Shares`: ``jobs`` (``{id: gpus}``, what ``allocate(..., accounts=TREE)``
returns), each job's account, and one row per account and per user for
``nbrunner share`` and ``GET /accounts``. Demands are those of
``nbrunner.core.allocate`` plus ``"owner"`` (the user name, required) and
``"groups"`` (hub group names, optional); ``nbrunner.core.accounts`` places each
job in a leaf account (a user by name, else their first listed group, else
``default``). A user is the pair (account, owner).

Rules, applied to whole GPUs:

1. Demand. A job asks for up to ``max_gpus`` (at most the cluster); a user for the
   sum over their jobs (at most the cluster); an account for the sum over its
   children, at most its ``limit``.
2. Shares, top down. At every level the parent's GPUs go to its children with
   demand by weighted max-min fairness (``nbrunner.core.fairsplit``): child c gets
   clamp(L * weight_c, floor_c, demand_c), floor_c = min(guaranteed_c, demand_c).
   Users of one account have weight 1 each. If the floors add up to more than the
   parent has (guarantees above the cluster), the parent's GPUs are split by weight
   within the floors. Whole GPUs by largest remainder; ties go to the earlier
   sibling: accounts in file order (``default`` after the top-level accounts),
   users by their first job in the policy's order (running jobs first).
3. Admission, per user. A user's jobs are taken in the policy's order (running
   first, then ``(submitted_at, id)``, or ``(-priority, submitted_at, id)`` for
   priority) and admitted while their minimums fit in the user's share; the first
   that does not fit waits and so do all after it (no backfill within a user's
   queue; other users are not held up).
4. Lending. A user whose admitted jobs, all at their max, use less than the share
   keeps what they use: the rest goes back to the level above and is divided again
   among the others (by weight, within limits), up to the top; repeated until every
   share is used. (So a share an account does not use is lent to its siblings.)
5. Idle GPUs. GPUs that then nobody can use at their share are lent to waiting
   jobs that fit in them, within every limit above: one job at a time, the next
   job of a user's queue, descending the tree to the account with the least GPUs
   per weight (ties in file order) and in it to the user with the fewest GPUs (ties
   as in 2), each job up to its max.
6. Within a user, the share is divided between the admitted jobs by the cluster's
   policy exactly as ``allocate`` divides the cluster (``split_admitted``). With
   goodput, GPUs a user's jobs do not gain from are returned as in 4.
7. Running jobs. A user's running jobs come first in their queue, so their own
   jobs never displace them. Across users and accounts a running job is kept
   (at least its minimum) while its leaf account's running minimums fit in the
   account's guarantee: each user's floor includes its running jobs' minimums,
   shared out within min(guaranteed, the account's share). Beyond its guarantee an
   account's running jobs are not protected: when its share falls (a lender asks
   for its GPUs back, another user of the account arrives), the jobs past the
   user's share in the user's order get 0 and the others shrink, each to at least
   its minimum. The function returns that target; carrying it out (shrinking
   elastic jobs at their next step, re-queuing non-elastic ones after
   ``reclaim_after``) is the service's.

A job gets 0 (waits) or between its min and max. Rows (``Shares.accounts``): per
account, parents first in file order, ``default`` last: ``name``, ``path``,
``weight``, ``guaranteed``, ``limit`` (None = none), ``members``, ``users`` and
``jobs`` (with demands), ``demand`` (sum of its jobs' ``max_gpus``, each at most
the cluster), ``allocated``, ``share`` (its fair share: the parent's share split
by weight among all sibling accounts, at least ``guaranteed``, at most ``limit``,
whether or not they have demand; ``default`` counts only while it has jobs or a
guarantee), ``borrowed`` = max(0, allocated - share) and ``lent`` = max(0, share -
allocated) (a share it does not hold: lent to others, or idle).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from .accounts import DEFAULT, AccountTree, accounts_tree
from .demands import Demands, check_call, policy_order, read_demands, split_admitted
from .fairsplit import fair_split, split_within
from .waiting import account_reasons

__all__ = ["Shares", "account_shares"]


@dataclass(frozen=True)
class Shares:
    """The allocation under accounts and its per-account and per-user view."""

    jobs: dict[Any, int]          # {id: gpus}
    account_of: dict[Any, str]    # {id: account path}
    accounts: list[dict]          # one row per account (see the module docstring)
    users: list[dict]             # {"account", "user", "jobs", "demand", "allocated"} per user with jobs
    waiting: dict[Any, dict] = field(default_factory=dict)  # {id: reason} of the jobs left waiting


def account_shares(total_gpus: int, demands: list[dict], policy: str, accounts: Any, *,
                   queue_thresholds: tuple[float, ...] | None = None, hosts: Sequence[int] | None = None,
                   explain: bool = False) -> Shares:
    """Allocate ``total_gpus`` between ``demands`` down the ``accounts`` tree (a dict as in the
    accounts file, or an ``AccountTree``); see the module docstring. ``queue_thresholds``: the
    goodput policy's (see ``allocate``); ``explain``: also say why each job left waiting waits
    (``hosts`` as in ``allocate_explained``). ``ValueError`` on bad input."""
    total = check_call(total_gpus, policy)
    tree = accounts_tree(accounts)
    acc = _Accounts(tree, total)
    if len(demands) == 0:
        return _report(total, acc, None, None, np.zeros(0, np.int64), np.zeros(0, np.int64))
    d = read_demands(demands)
    users = _Users(d, tree, acc, policy, total)
    alloc, used = _divide(total, policy, d, acc, users, queue_thresholds)
    out = _report(total, acc, d, users, alloc, used)
    if not explain:
        return out
    why = account_reasons(total, d.ids, d.items, d.m, d.M, d.running, alloc, users.user_of_job, used, users.leaf,
                          users.owner, acc.items, acc.parent, acc.up(used, users.leaf, cap_by_limit=False), hosts)
    return Shares(out.jobs, out.account_of, out.accounts, out.users, why)


class _Accounts:
    """The tree's accounts as arrays, parents first in file order, ``default`` last."""

    def __init__(self, tree: AccountTree, total: int):
        walk = list(tree.walk())
        self.items = [a for a, _ in walk]
        self.index = {a.path: i for i, a in enumerate(self.items)}
        n = len(walk)
        self.parent = np.array([-1 if p is None else self.index[p.path] for _, p in walk], dtype=np.int64)
        self.depth = np.zeros(n, dtype=np.int64)
        for i, p in enumerate(self.parent.tolist()):
            self.depth[i] = 1 if p < 0 else self.depth[p] + 1
        self.weight = np.array([a.weight for a in self.items], dtype=np.float64)
        self.g = np.array([min(a.guaranteed, total) for a in self.items], dtype=np.int64)
        self.limit = np.array([total if a.limit is None else min(a.limit, total) for a in self.items], dtype=np.int64)
        self.top = np.flatnonzero(self.parent < 0)
        self.children: list[list[int]] = [[] for _ in range(n)]
        for i, p in enumerate(self.parent.tolist()):
            if p >= 0:
                self.children[p].append(i)
        self.levels = []  # per depth: items, group starts, group parents, weights, integer weights?
        for dep in range(1, int(self.depth.max()) + 1):
            idx = np.flatnonzero(self.depth == dep)
            par = self.parent[idx]
            starts = np.flatnonzero(np.r_[True, par[1:] != par[:-1]])
            w = self.weight[idx]
            whole = bool((w == np.floor(w)).all())
            self.levels.append((idx, starts, par[starts], w.astype(np.int64) if whole else w, whole))

    def up(self, leaf_sums: np.ndarray, leaves: np.ndarray, cap_by_limit: bool) -> np.ndarray:
        """Per account, the sum over its leaves (``leaf_sums`` at ``leaves``), capped by limits if asked."""
        v = np.zeros(len(self.items), dtype=np.int64)
        np.add.at(v, leaves, leaf_sums)
        for idx, starts, par, _, _ in reversed(self.levels):
            if cap_by_limit:
                v[idx] = np.minimum(v[idx], self.limit[idx])
            if par[0] >= 0:
                np.add.at(v, par, np.add.reduceat(v[idx], starts))
        return v

    def down(self, total: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Each account's share: every level splits its parents' shares within ``lo``..``hi``."""
        s = np.zeros(len(self.items), dtype=np.int64)
        for idx, starts, par, w, whole in self.levels:
            tgt = np.where(par < 0, total, s[np.maximum(par, 0)])
            s[idx] = split_within(tgt, lo[idx], hi[idx], w, whole, starts)
        return s


class _Users:
    """Users (account, owner) with their jobs in queue order, grouped by leaf account."""

    def __init__(self, d: Demands, tree: AccountTree, acc: _Accounts, policy: str, total: int):
        leaf_of = np.fromiter((acc.index[p] for p in _placement(d, tree)), dtype=np.int64, count=len(d.ids))
        owners = [it["owner"] for it in d.items]
        keys: dict[tuple[int, str], int] = {}
        raw = np.fromiter((keys.setdefault((int(a), o), len(keys)) for a, o in zip(leaf_of, owners)),
                          dtype=np.int64, count=len(owners))
        go = policy_order(d, policy)
        rank = np.empty(len(go), dtype=np.int64)
        rank[go] = np.arange(len(go))
        first = np.full(len(keys), len(go), dtype=np.int64)
        np.minimum.at(first, raw, rank)
        key_leaf = np.array([k[0] for k in keys], dtype=np.int64)
        by = np.lexsort((first, key_leaf))  # users grouped by account, then by their first job
        renum = np.empty(len(keys), dtype=np.int64)
        renum[by] = np.arange(len(keys))
        self.leaf_of_job, self.user_of_job = leaf_of, renum[raw]
        listed = list(keys)
        self.owner = [listed[i][1] for i in by]
        self.leaf = key_leaf[by]
        self.gstart = np.flatnonzero(np.r_[True, self.leaf[1:] != self.leaf[:-1]])  # users by leaf
        self.gleaf = self.leaf[self.gstart]
        self.jorder = go[np.argsort(self.user_of_job[go], kind="stable")]  # jobs by user, queue order
        self.juser = self.user_of_job[self.jorder]
        self.ustart = np.flatnonzero(np.r_[True, self.juser[1:] != self.juser[:-1]])
        self.uend = np.append(self.ustart[1:], len(self.jorder))
        self.mj = np.minimum(d.m[self.jorder], total + 1)
        self.Mj = np.minimum(d.M[self.jorder], total)
        self.C = _running_sum(self.mj, self.ustart, self.juser)   # minimums up to each job
        self.Mx = _running_sum(self.Mj, self.ustart, self.juser)  # maximums up to each job
        self.demand = np.minimum(np.add.reduceat(self.Mj, self.ustart), total)
        self.protect = np.add.reduceat(np.where(d.running[self.jorder], self.mj, 0), self.ustart)

    def shares(self, total: int, acc: _Accounts, cap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Account and user shares when each user can use at most ``cap`` (rules 1, 2 and 7)."""
        D = acc.up(cap, self.leaf, cap_by_limit=True)
        s_acc = acc.down(total, np.minimum(acc.g, D), D)
        s_leaf = s_acc[self.gleaf]
        q = np.minimum(np.minimum(acc.g[self.gleaf], s_leaf), np.add.reduceat(self.protect, self.gstart))
        ones = np.ones(len(cap), dtype=np.int64)
        floor = fair_split(q, np.zeros(len(cap), np.int64), self.protect, ones, True, self.gstart)
        return s_acc, split_within(s_leaf, np.minimum(floor, cap), cap, ones, True, self.gstart)

    def usable(self, s_user: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which jobs a share admits (queue order, no backfill) and the GPUs they can use."""
        adm = self.C <= s_user[self.juser]
        return adm, np.minimum(s_user, np.add.reduceat(np.where(adm, self.Mj, 0), self.ustart))


def _placement(d: Demands, tree: AccountTree) -> list[str]:
    """Each demand's leaf account path, after checking ``owner`` and ``groups``."""
    owners = [it.get("owner") for it in d.items]
    groups = [it.get("groups") for it in d.items]
    if not set(map(type, owners)) <= {str} or "" in owners:
        i = next(i for i, o in enumerate(owners) if not isinstance(o, str) or not o)
        raise ValueError(f"demand {d.ids[i]!r}: owner must be a user name (needed with accounts), got {owners[i]!r}")
    for ident, gs in zip(d.ids, groups):
        if gs is not None and (not isinstance(gs, (list, tuple)) or not all(isinstance(g, str) for g in gs)):
            raise ValueError(f"demand {ident!r}: groups must be a list of group names, got {gs!r}")
    seen: dict[tuple, str] = {}
    out = []
    for owner, gs in zip(owners, groups):
        path = tree.users.get(owner)
        if path is None:
            key = (owner, *gs) if gs else (owner,)
            path = seen.get(key)
            if path is None:
                path = seen[key] = tree.account_of(owner, gs)
        out.append(path)
    return out


def _running_sum(v: np.ndarray, starts: np.ndarray, grp: np.ndarray) -> np.ndarray:
    c = np.cumsum(v)
    return c - (c[starts] - v[starts])[grp]


def _divide(total: int, policy: str, d: Demands, acc: _Accounts, users: _Users,
            thresholds: tuple[float, ...] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """GPUs per demand and per user (rules 3 to 6)."""
    cap = users.demand.copy()
    while True:
        while True:  # rule 4: shares nobody can use at their size are returned and divided again
            s_acc, s_user = users.shares(total, acc, cap)
            adm, use = users.usable(s_user)
            short = use < s_user
            if not short.any():
                break
            cap = np.where(short, use, cap)
        _lend_idle(total, acc, users, s_acc, s_user)
        adm, _ = users.usable(s_user)
        pos = np.flatnonzero(adm)
        alloc = np.zeros(len(d.ids), dtype=np.int64)
        used = np.zeros(len(cap), dtype=np.int64)
        if len(pos):
            who = users.juser[pos]
            starts = np.flatnonzero(np.r_[True, who[1:] != who[:-1]])
            x = split_admitted(policy, s_user[who[starts]], users.jorder[pos], d, starts, thresholds)
            alloc[users.jorder[pos]] = x
            np.add.at(used, who, x)
        # Goodput left some of a share unused: lend it (rule 6). Caps only fall, so this ends.
        lower = np.where(used < s_user, np.minimum(used, cap), cap)
        if (lower == cap).all():
            return alloc, used
        cap = lower


def _lend_idle(total: int, acc: _Accounts, users: _Users, s_acc: np.ndarray, s_user: np.ndarray) -> None:
    """Rule 5, in place: idle GPUs to waiting jobs that fit, fairest account and user first."""
    idle = total - int(s_acc[acc.top].sum())
    if idle <= 0:
        return
    adm, _ = users.usable(s_user)
    k = np.add.reduceat(adm.astype(np.int64), users.ustart)
    waiting = k < users.uend - users.ustart
    if not waiting.any():
        return
    big = np.iinfo(np.int64).max
    members = [list(range(a, b)) for a, b in zip(users.gstart.tolist(), np.append(users.gstart[1:], len(s_user)).tolist())]
    leaf_users = dict(zip(users.gleaf.tolist(), members))
    while idle > 0:
        nxt = np.minimum(users.ustart + k, users.uend - 1)
        need = np.where(waiting, users.C[nxt] - s_user, big)
        fits = _fitting(acc, users, need, s_acc)
        u = _pick(acc, leaf_users, fits, need, s_acc, s_user, idle)
        if u is None:
            return
        room = idle
        a = int(users.leaf[u])
        chain = []
        while a >= 0:
            chain.append(a)
            room = min(room, int(acc.limit[a] - s_acc[a]))
            a = int(acc.parent[a])
        give = min(int(users.Mx[nxt[u]] - s_user[u]), room)
        s_user[u] += give
        s_acc[chain] += give
        idle -= give
        lo, hi = int(users.ustart[u]), int(users.uend[u])
        k[u] = int(np.searchsorted(users.C[lo:hi], s_user[u], side="right"))
        waiting[u] = k[u] < hi - lo


def _fitting(acc: _Accounts, users: _Users, need: np.ndarray, s_acc: np.ndarray) -> np.ndarray:
    """Per account, the smallest GPUs a waiting job below it needs that every limit on the way allows."""
    big = np.iinfo(np.int64).max
    fit = np.full(len(acc.items), big, dtype=np.int64)
    np.minimum.at(fit, users.gleaf, np.minimum.reduceat(need, users.gstart))
    for idx, starts, par, _, _ in reversed(acc.levels):
        fit[idx] = np.where(fit[idx] <= acc.limit[idx] - s_acc[idx], fit[idx], big)
        if par[0] >= 0:
            np.minimum.at(fit, par, np.minimum.reduceat(fit[idx], starts))
    return fit


def _pick(acc: _Accounts, leaf_users: dict, fits: np.ndarray, need: np.ndarray, s_acc: np.ndarray,
          s_user: np.ndarray, idle: int) -> int | None:
    """The user whose next job gets idle GPUs: down the tree by fewest GPUs per weight."""
    kids, room = acc.top.tolist(), idle
    while True:
        ok = [c for c in kids if fits[c] <= room]
        if not ok:
            return None
        a = min(ok, key=lambda c: (s_acc[c] / acc.weight[c], c))
        room = min(room, int(acc.limit[a] - s_acc[a]))
        if a in leaf_users:
            ok = [u for u in leaf_users[a] if need[u] <= room]
            return min(ok, key=lambda u: (s_user[u], u)) if ok else None
        kids = acc.children[a]


def _report(total: int, acc: _Accounts, d: Demands | None, users: _Users | None, alloc: np.ndarray,
            used: np.ndarray) -> Shares:
    """The per-account and per-user rows (see the module docstring)."""
    if users is None:
        leaves = np.zeros(0, np.int64)
        jobs_n = demand = np.zeros(0, np.int64)
    else:
        leaves = users.leaf
        jobs_n = users.uend - users.ustart
        demand = np.add.reduceat(users.Mj, users.ustart)
    allocated = acc.up(used, leaves, cap_by_limit=False)
    acc_demand = acc.up(demand, leaves, cap_by_limit=False)
    acc_jobs = acc.up(jobs_n, leaves, cap_by_limit=False)
    acc_users = acc.up(np.ones(len(leaves), np.int64), leaves, cap_by_limit=False)
    share = _entitlement(acc, acc_jobs, total)
    rows = []
    for i, a in enumerate(acc.items):
        rows.append({"name": a.name, "path": a.path, "weight": a.weight, "guaranteed": a.guaranteed,
                     "limit": a.limit, "members": list(a.members), "users": int(acc_users[i]),
                     "jobs": int(acc_jobs[i]), "demand": int(acc_demand[i]), "share": int(share[i]),
                     "allocated": int(allocated[i]), "borrowed": max(0, int(allocated[i] - share[i])),
                     "lent": max(0, int(share[i] - allocated[i]))})
    if users is None or d is None:
        return Shares({}, {}, rows, [])
    user_rows = [{"account": acc.items[int(a)].path, "user": o, "jobs": int(j), "demand": int(dm), "allocated": int(x)}
                 for a, o, j, dm, x in zip(users.leaf, users.owner, jobs_n, demand, used)]
    return Shares(dict(zip(d.ids, alloc.tolist())), dict(zip(d.ids, (acc.items[int(a)].path for a in users.leaf_of_job))),
                  rows, user_rows)


def _entitlement(acc: _Accounts, acc_jobs: np.ndarray, total: int) -> np.ndarray:
    """Each account's fair share whatever the demand (``default`` only with jobs or a guarantee)."""
    hi = acc.limit.copy()
    dflt = acc.index[DEFAULT]
    if acc_jobs[dflt] == 0 and acc.g[dflt] == 0:
        hi[dflt] = 0
    return acc.down(total, np.minimum(acc.g, hi), hi)
