"""Demands of the allocation policy: their checks, their order and the per-policy split.

Pure, no I/O. ``read_demands`` validates a list of demand dicts into columns (the
conventions are in ``nbrunner.core.allocate``); ``policy_order`` sorts them as the
policy takes them; ``split_admitted`` divides GPUs between admitted jobs by the
policy, for one group of jobs (the whole cluster) or many at once (each user's jobs
under accounts). Raises ``ValueError`` with a one-line message on invalid input.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np

from .fairsplit import fair_split, group_of
from .goodput import goodput_allocate
from .models import PRIORITY_MAX as MAX_PRIORITY, PRIORITY_MIN as MIN_PRIORITY  # a job's bounds, declared there

__all__ = ["Demands", "read_demands", "policy_order", "split_admitted", "check_call", "POLICIES", "DEFAULT_POLICY",
           "MIN_PRIORITY", "MAX_PRIORITY"]

POLICIES = ("fairshare", "priority", "goodput")
DEFAULT_POLICY = "goodput"
"""A cluster's policy unless ``nbrunner up --policy`` (or ``setup_cluster(policy=...)``) says otherwise."""
_FIELDS = ("id", "min_gpus", "max_gpus", "priority", "submitted_at")
_INT_TYPES = (int, np.integer)
_REAL_TYPES = (int, float, np.integer, np.floating)


@dataclass(frozen=True)
class Demands:
    """Validated columns of a list of demands (``items``), index-aligned."""

    items: list
    ids: list
    id_key: np.ndarray   # int64 with the order of the ids
    m: np.ndarray        # min_gpus, int64
    M: np.ndarray        # max_gpus, int64
    w: np.ndarray        # priority, int64 when all are whole numbers, else float64
    w_is_int: bool
    t: np.ndarray        # submitted_at in POSIX seconds
    running: np.ndarray  # bool


def check_call(total_gpus: Any, policy: str) -> int:
    """The total as an int, after checking it and the policy name (``ValueError`` otherwise)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; expected one of {POLICIES}")
    if isinstance(total_gpus, bool) or not isinstance(total_gpus, _INT_TYPES):
        raise ValueError(f"total_gpus must be an integer, got {total_gpus!r}")
    total = int(total_gpus)
    if total < 0:
        raise ValueError(f"total_gpus must be >= 0, got {total}")
    return total


def read_demands(demands: list[dict]) -> Demands:
    """Validate ``demands`` into columns; ``ValueError`` names the first bad demand."""
    ids, mins, maxs, prios, subs, running = _columns(demands)
    id_key = _id_key(ids)
    m = _int_array(mins, "min_gpus")
    M = _int_array(maxs, "max_gpus")
    bad = M < m
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"demand {ids[i]!r}: min_gpus {mins[i]} > max_gpus {maxs[i]}")
    w, w_is_int = _priority_array(prios, ids)
    return Demands(demands, ids, id_key, m, M, w, w_is_int, _time_array(subs, ids), _bool_array(running, ids))


def policy_order(d: Demands, policy: str, group: np.ndarray | None = None) -> np.ndarray:
    """Indices in the policy's order: running jobs first, then fairshare and goodput by
    ``(submitted_at, id)``, priority by ``(-priority, submitted_at, id)``; with ``group``
    (one integer per demand), grouped by it first."""
    keys = [d.id_key, d.t] + ([-d.w] if policy == "priority" else []) + [~d.running]
    if group is not None:
        keys.append(group)
    return np.lexsort(tuple(keys))


def split_admitted(policy: str, shares, adm: np.ndarray, d: Demands, starts: np.ndarray | None = None,
                   thresholds: tuple[float, ...] | None = None) -> np.ndarray:
    """GPUs of the admitted jobs ``adm`` (in order, groups contiguous from ``starts``; None
    means one group) when each group divides its share by the policy. Every group's
    share covers its admitted minimums. ``thresholds``: goodput's queue thresholds (None: its default)."""
    shares = np.asarray(shares, dtype=np.int64).reshape(-1)
    n = len(adm)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    one = starts is None
    if one:
        starts = np.zeros(1, dtype=np.int64)
    seg = group_of(starts, n)
    m = d.m[adm]
    M = np.minimum(d.M[adm], shares[seg])  # nobody can use more than its group's share
    if policy == "priority":
        cap = M - m
        before = np.cumsum(cap) - cap  # extra GPUs wanted by earlier admitted jobs of the group
        if not one:
            before = before - before[starts][seg]
        free = shares - np.add.reduceat(m, starts)
        return m + np.clip(free[seg] - before, 0, cap)
    if policy == "goodput":  # nbrunner/core/goodput.py: short work first, measured speedups, restart-aware
        x = np.zeros(n, dtype=np.int64)
        ends = np.append(starts[1:], n)
        for g, (a, b) in enumerate(zip(starts.tolist(), ends.tolist())):
            part = adm[a:b]
            x[a:b] = goodput_allocate(int(shares[g]), m[a:b], M[a:b], d.w[part], d.w_is_int,
                                      [d.items[i] for i in part], [d.ids[i] for i in part], thresholds)
        return x
    return fair_split(shares, m, M, d.w[adm], d.w_is_int, None if one else starts)


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
