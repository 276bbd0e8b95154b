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
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import numpy as np

from .goodput import goodput_allocate

__all__ = ["allocate", "POLICIES", "MIN_PRIORITY", "MAX_PRIORITY"]

POLICIES = ("fairshare", "priority", "goodput")
MIN_PRIORITY = 1
MAX_PRIORITY = 10000
_FIELDS = ("id", "min_gpus", "max_gpus", "priority", "submitted_at")
_INT_TYPES = (int, np.integer)
_REAL_TYPES = (int, float, np.integer, np.floating)


def allocate(total_gpus: int, demands: list[dict], policy: str = "fairshare") -> dict[Any, int]:
    """Return ``{id: gpus}`` for every demand (0 = not admitted / queued).

    Order: running jobs first, then the rest; within each group fairshare sorts by
    ``(submitted_at, id)`` and priority by ``(-priority, submitted_at, id)``.
    Admission walks that order adding ``min_gpus`` and stops at the first job that
    does not fit (no backfill). ``fairshare`` splits ``min(total, sum max)`` by
    weighted max-min fairness (weights = priorities) and rounds by largest
    remainder (ties to the earlier job); ``priority`` gives every admitted job its
    min and the rest greedily in order up to each max; ``goodput`` (see
    ``nbrunner.core.goodput``) admits as fairshare and gives the GPUs above the
    minimums by weighted marginal speedup of each job's measured ``throughput``
    (``{gpus: samples_per_s}``), restart-aware via ``gpus``/``pause_s``. Raises ``ValueError`` on
    invalid input.
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; expected one of {POLICIES}")
    if isinstance(total_gpus, bool) or not isinstance(total_gpus, _INT_TYPES):
        raise ValueError(f"total_gpus must be an integer, got {total_gpus!r}")
    total = int(total_gpus)
    if total < 0:
        raise ValueError(f"total_gpus must be >= 0, got {total}")
    n = len(demands)
    if n == 0:
        return {}

    ids, mins, maxs, prios, subs, running = _columns(demands)
    id_key = _id_key(ids)
    m_all = _int_array(mins, "min_gpus")
    M_all = _int_array(maxs, "max_gpus")
    bad = M_all < m_all
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"demand {ids[i]!r}: min_gpus {mins[i]} > max_gpus {maxs[i]}")
    w_all, w_is_int = _priority_array(prios, ids)
    t_all = _time_array(subs, ids)
    not_running = ~_bool_array(running, ids)

    if policy != "priority":
        order = np.lexsort((id_key, t_all, not_running))
    else:
        order = np.lexsort((id_key, t_all, -w_all, not_running))

    # Clip to total + 1 (nobody can use more) so that the sums below cannot overflow.
    m = np.minimum(m_all[order], total + 1)
    cut = int(np.searchsorted(np.cumsum(m), total, side="right"))  # first job that doesn't fit
    adm = order[:cut]
    m = m[:cut]
    M = np.minimum(M_all[adm], total)

    if policy != "priority":
        x = _fairshare(total, m, M, w_all[adm], w_is_int)
        if policy == "goodput":  # nbrunner/core/goodput.py: measured speedups, restart-aware
            x = goodput_allocate(total, m, M, w_all[adm], x, [demands[i] for i in adm], [ids[i] for i in adm])
    else:
        cap = M - m
        before = np.cumsum(cap) - cap  # extra GPUs wanted by earlier admitted jobs
        x = m + np.clip(total - int(m.sum()) - before, 0, cap)

    alloc = np.zeros(n, dtype=np.int64)
    alloc[adm] = x
    return dict(zip(ids, alloc.tolist()))


def _fairshare(total: int, m: np.ndarray, M: np.ndarray, w: np.ndarray, w_is_int: bool) -> np.ndarray:
    """Weighted max-min split of ``min(total, sum M)`` with x_i = clamp(L*w_i, m_i, M_i).

    L is found exactly: f(L) = sum clamp(L*w_i, m_i, M_i) is piecewise linear with
    breakpoints m_i/w_i and M_i/w_i; f is evaluated at all breakpoints with prefix
    sums, the segment containing the target is picked, and on it L = (T - C) / W.
    With integer weights the shares and remainders are computed in integers.
    """
    sum_m, sum_M = int(m.sum()), int(M.sum())
    target = min(total, sum_M)
    if target <= sum_m:
        return m
    if target >= sum_M:
        return M

    lo, hi = m / w, M / w
    lo_order, hi_order = np.argsort(lo, kind="stable"), np.argsort(hi, kind="stable")
    lo_s, hi_s = lo[lo_order], hi[hi_order]
    zero = np.zeros(1, dtype=w.dtype)
    cw_lo = np.concatenate((zero, np.cumsum(w[lo_order])))
    cw_hi = np.concatenate((zero, np.cumsum(w[hi_order])))
    cm_lo = np.concatenate(([0], np.cumsum(m[lo_order])))
    cM_hi = np.concatenate(([0], np.cumsum(M[hi_order])))
    bps = np.unique(np.concatenate((lo_s, hi_s)))
    a = np.searchsorted(lo_s, bps, side="left")  # jobs with lo < b (above their min)
    c = np.searchsorted(hi_s, bps, side="left")  # jobs with hi < b (at their max)
    f = (sum_m - cm_lo[a]) + bps * (cw_lo[a] - cw_hi[c]) + cM_hi[c]
    j = min(max(int(np.searchsorted(f, target, side="left")), 1), len(bps) - 1)
    b = bps[j]
    # On the open segment (bps[j-1], bps[j]): at min iff lo >= b, at max iff hi < b.
    at_min = lo >= b
    at_max = hi < b
    active = ~(at_min | at_max)
    x = np.where(at_max, M, m)
    rest = target - int(m[at_min].sum()) - int(M[at_max].sum())
    wa = w[active]
    if w_is_int:
        W = int(wa.sum())
        num = rest * wa
        fl, frac = num // W, num % W  # share = fl + frac / W, exactly
    else:
        share = rest * wa / wa.sum()
        fl = np.floor(share)
        frac = share - fl
        fl = fl.astype(np.int64)
    fl = np.clip(fl, m[active], M[active])
    idx = np.flatnonzero(active)
    x[idx] = fl
    left = target - int(x.sum())
    if left > 0:  # largest remainders first, ties to the earlier job in the order
        ok = fl < M[idx]
        idx, frac = idx[ok], frac[ok]
        pick = np.lexsort((idx, -frac))[:left]
        x[idx[pick]] += 1
    return x


def _columns(demands: list[dict]) -> tuple[list, ...]:
    try:
        ids = [d["id"] for d in demands]
        mins = [d["min_gpus"] for d in demands]
        maxs = [d["max_gpus"] for d in demands]
        prios = [d["priority"] for d in demands]
        subs = [d["submitted_at"] for d in demands]
        running = [d.get("running", False) for d in demands]
    except (KeyError, TypeError, AttributeError):
        for i, d in enumerate(demands):
            if not isinstance(d, dict):
                raise ValueError(f"demand #{i} must be a dict, got {type(d).__name__}") from None
            missing = [k for k in _FIELDS if k not in d]
            if missing:
                raise ValueError(f"demand #{i} ({d.get('id')!r}) lacks {', '.join(missing)}") from None
        raise
    return ids, mins, maxs, prios, subs, running


def _id_key(ids: list) -> np.ndarray:
    """Integer sort key with the same order as the ids; checks type and uniqueness."""
    n = len(ids)
    types = set(map(type, ids))
    if all(issubclass(t, str) for t in types):
        kind = "str"
    elif all(issubclass(t, _INT_TYPES) and not issubclass(t, bool) for t in types):
        kind = "int"
    else:
        raise ValueError("ids must be all str or all int, got " + ", ".join(sorted(t.__name__ for t in types)))
    if len(set(ids)) != n:
        seen: set = set()
        dup = next(i for i in ids if i in seen or seen.add(i))
        raise ValueError(f"duplicate id {dup!r}")
    if kind == "int":
        try:
            return np.array(ids, dtype=np.int64)
        except OverflowError:
            pass
    else:
        uniq, inv = np.unique(np.array(ids), return_inverse=True)
        if len(uniq) == n:  # numpy drops trailing NULs; fall back if that merged ids
            return inv
    key = np.empty(n, dtype=np.int64)
    key[sorted(range(n), key=ids.__getitem__)] = np.arange(n)
    return key


def _int_array(values: list, name: str) -> np.ndarray:
    types = set(map(type, values))
    if not all(issubclass(t, _INT_TYPES) and not issubclass(t, bool) for t in types):
        bad = next(v for v in values if isinstance(v, bool) or not isinstance(v, _INT_TYPES))
        raise ValueError(f"{name} must be integers, got {bad!r}")
    try:
        arr = np.array(values, dtype=np.int64)
    except OverflowError:
        raise ValueError(f"{name} out of range") from None
    if (arr < 0).any():
        raise ValueError(f"{name} must be >= 0, got {int(arr.min())}")
    return arr


def _priority_array(values: list, ids: list) -> tuple[np.ndarray, bool]:
    types = set(map(type, values))
    if not all(issubclass(t, _REAL_TYPES) and not issubclass(t, bool) for t in types):
        i = next(i for i, v in enumerate(values) if isinstance(v, bool) or not isinstance(v, _REAL_TYPES))
        raise ValueError(f"demand {ids[i]!r}: priority must be a number, got {values[i]!r}")
    arr = np.array(values, dtype=np.float64)
    bad = ~((arr >= MIN_PRIORITY) & (arr <= MAX_PRIORITY))  # also catches NaN
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"demand {ids[i]!r}: priority must be in {MIN_PRIORITY}..{MAX_PRIORITY}, got {values[i]!r}"
        )
    if (arr == np.floor(arr)).all():
        return arr.astype(np.int64), True
    return arr, False


def _time_array(values: list, ids: list) -> np.ndarray:
    types = set(map(type, values))
    if all(issubclass(t, _REAL_TYPES) and not issubclass(t, bool) for t in types):
        arr = np.array(values, dtype=np.float64)
    else:
        arr = np.fromiter((_seconds(v, i) for v, i in zip(values, ids)), dtype=np.float64, count=len(values))
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"demand {ids[i]!r}: submitted_at must be finite, got {values[i]!r}")
    return arr


def _seconds(v: Any, ident: Any) -> float:
    """POSIX seconds of a number, ISO-8601 string or datetime (naive = UTC)."""
    if isinstance(v, _REAL_TYPES) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, str):
        try:
            dt = datetime.fromisoformat(v.strip())
        except ValueError:
            raise ValueError(f"demand {ident!r}: submitted_at {v!r} is not ISO-8601") from None
    elif isinstance(v, datetime):
        dt = v
    else:
        raise ValueError(f"demand {ident!r}: submitted_at must be a number, ISO-8601 string or datetime, got {v!r}")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def _bool_array(values: list, ids: list) -> np.ndarray:
    types = set(map(type, values))
    if not types <= {bool, np.bool_}:
        i = next(i for i, v in enumerate(values) if not isinstance(v, (bool, np.bool_)))
        raise ValueError(f"demand {ids[i]!r}: running must be a bool, got {values[i]!r}")
    return np.array(values, dtype=bool)
