"""Weighted max-min split in whole units, for many groups at once: pure, no I/O.

``fair_split(target, lo, hi, w, w_is_int, starts)`` divides each group's target
between its items: item i of group g gets x_i = clamp(L_g * w_i, lo_i, hi_i), with
L_g chosen so that the group's x_i sum to min(target_g, sum hi) (weighted max-min
fairness with floors and caps). L_g is found exactly: f(L) = sum clamp(L*w_i, lo_i,
hi_i) is piecewise linear with breakpoints lo_i/w_i and hi_i/w_i; f is evaluated at
every breakpoint with prefix sums, the segment holding the target is picked, and on
it L = (T - C) / W. Whole units: floor every share, then hand the units left over
one each to the largest fractional parts, ties to the earlier item (items are given
in tie order within their group). With integer weights the shares and remainders
are computed in integers. A group whose target does not exceed the sum of its
floors gets its floors (callers that can be over-committed split the target within
the floors instead, see ``split_within``).

Groups are contiguous runs of items: ``starts`` holds the index of each group's
first item (every group non-empty); ``None`` means one group. The allocation policy
uses it for one group (fairshare across the admitted jobs), for every user at once
(each user's jobs) and for every level of an accounts tree.
"""

from __future__ import annotations

import numpy as np

__all__ = ["fair_split", "split_within", "group_of"]


def group_of(starts: np.ndarray, n: int) -> np.ndarray:
    """Group index of each of ``n`` items given the groups' first indices."""
    return np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))


def fair_split(target, lo: np.ndarray, hi: np.ndarray, w: np.ndarray, w_is_int: bool,
               starts: np.ndarray | None = None) -> np.ndarray:
    """Whole-unit weighted max-min split of each group's target (see the module docstring)."""
    n = len(lo)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    target, starts = _groups(target, starts)
    seg = group_of(starts, n)
    sum_lo, sum_hi = np.add.reduceat(lo, starts), np.add.reduceat(hi, starts)
    tgt = np.minimum(target, sum_hi)
    x = np.where((tgt >= sum_hi)[seg], hi, lo)
    open_ = (tgt > sum_lo) & (tgt < sum_hi)
    if not open_.any():
        return x.astype(np.int64)
    x = x.astype(np.int64)
    if open_.all():
        idx = np.arange(n)
        sub_starts = starts
    else:
        keep = open_[seg]
        idx = np.flatnonzero(keep)
        sizes = np.diff(np.append(starts, n))[open_]
        sub_starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    x[idx] = _water_fill(tgt[open_], sum_lo[open_], lo[idx], hi[idx], w[idx], w_is_int, sub_starts)
    return x


def split_within(target, lo: np.ndarray, hi: np.ndarray, w: np.ndarray, w_is_int: bool,
                 starts: np.ndarray | None = None) -> np.ndarray:
    """``fair_split``, except that a group whose floors exceed its target splits the target
    by weight within the floors (each item between 0 and its floor)."""
    n = len(lo)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    target, starts = _groups(target, starts)
    over = np.add.reduceat(lo, starts) > target
    if over.any():
        o = over[group_of(starts, n)]
        lo, hi = np.where(o, 0, lo), np.where(o, lo, hi)
    return fair_split(target, lo, hi, w, w_is_int, starts)


def _groups(target, starts: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Targets as an int64 array and the groups' starts (one group when None)."""
    if starts is None:
        starts = np.zeros(1, dtype=np.int64)
    return np.asarray(target, dtype=np.int64).reshape(-1), starts


def _water_fill(tgt: np.ndarray, sum_lo: np.ndarray, lo: np.ndarray, hi: np.ndarray, w: np.ndarray,
                w_is_int: bool, starts: np.ndarray) -> np.ndarray:
    """The split of groups whose target lies strictly between the sums of floors and caps."""
    n, k = len(lo), len(starts)
    seg = group_of(starts, n)
    b_lo, b_hi = lo / w, hi / w
    b = _level(tgt, sum_lo, lo, hi, w, b_lo, b_hi, seg, k)[seg]
    # On the open segment ending at b: at min iff lo/w >= b, at max iff hi/w < b.
    at_min = b_lo >= b
    at_max = b_hi < b
    active = ~(at_min | at_max)
    x = np.where(at_max, hi, lo).astype(np.int64)
    rest = tgt - np.add.reduceat(np.where(at_min, lo, 0) + np.where(at_max, hi, 0), starts)
    wa = np.where(active, w, 0)
    if k == 1:  # the same sum as a plain .sum() over the active weights
        W = np.array([w[active].sum()])
    else:
        W = np.add.reduceat(wa, starts)
    W = np.where(W == 0, 1, W)
    if w_is_int:
        num = rest[seg] * wa
        fl, frac = num // W[seg], num % W[seg]  # share = fl + frac / W, exactly
    else:
        # to 1e-9 of a unit: the weights' sum differs in its last bits between one group and
        # many (summation order), which must not decide a floor or a tie between remainders
        share = np.round(rest[seg] * wa / W[seg], 9)
        fl = np.floor(share)
        frac = share - fl
        fl = fl.astype(np.int64)
    fl = np.clip(fl, lo, hi)
    x = np.where(active, fl, x)
    left = tgt - np.add.reduceat(x, starts)
    if left.any():  # largest remainders first, ties to the earlier item
        ok = np.flatnonzero(active & (fl < hi))
        g = seg[ok]
        pick = ok[np.lexsort((ok, -frac[ok], g))]
        gs = seg[pick]
        first = np.searchsorted(gs, np.arange(k), side="left")
        rank = np.arange(len(pick)) - first[gs]
        x[pick[rank < left[gs]]] += 1
    return x


def _level(tgt, sum_lo, lo, hi, w, b_lo, b_hi, seg, k) -> np.ndarray:
    """Per group, the breakpoint b closing the segment of f(L) that holds the target."""
    n = len(lo)
    # Events per group sorted by value: breakpoints to evaluate (kind 0) come before the
    # floors and caps (kind 1) of the same value, so that sums count values < b only.
    val = np.concatenate((b_lo, b_hi, b_lo, b_hi))
    grp = np.tile(seg, 4)
    kind = np.repeat(np.array([0, 0, 1, 1], dtype=np.int8), n)
    order = np.lexsort((kind, val, grp))
    val, grp = val[order], grp[order]
    zero_w = np.zeros(n, dtype=w.dtype)
    zero_i = np.zeros(n, dtype=np.int64)
    cw_lo = _group_cumsum(np.concatenate((zero_w, zero_w, w, zero_w))[order], grp, k)
    cm_lo = _group_cumsum(np.concatenate((zero_i, zero_i, lo, zero_i))[order], grp, k)
    cw_hi = _group_cumsum(np.concatenate((zero_w, zero_w, zero_w, w))[order], grp, k)
    cM_hi = _group_cumsum(np.concatenate((zero_i, zero_i, zero_i, hi))[order], grp, k)
    is_b = kind[order] == 0
    val, grp = val[is_b], grp[is_b]
    f = (sum_lo[grp] - cm_lo[is_b]) + val * (cw_lo[is_b] - cw_hi[is_b]) + cM_hi[is_b]
    pos = np.arange(len(val))
    first = np.searchsorted(grp, np.arange(k), side="left")
    last = np.append(first[1:], len(val)) - 1
    hit = np.where(f >= tgt[grp], pos, len(val))
    j = np.minimum.reduceat(hit, first)
    j = np.where(j >= len(val), last, j)
    return val[j]


def _group_cumsum(v: np.ndarray, grp: np.ndarray, k: int) -> np.ndarray:
    """Inclusive running sum of ``v`` restarting at every group (rows sorted by group)."""
    c = np.cumsum(v)
    first = np.searchsorted(grp, np.arange(k), side="left")
    before = np.where(first > 0, c[np.maximum(first - 1, 0)], 0)
    return c - before[grp]
