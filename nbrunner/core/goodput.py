"""Throughput model and the ``goodput`` allocation policy: pure, no I/O.

Throughput model. A data-parallel job keeps its global batch ``B`` whatever its
GPU count ``n``; one step costs compute on the local batch ``B / n`` plus a
gradient synchronisation that grows with ``n`` (Pollux's compute + sync split,
with its overlap exponent fixed at 1)::

    seconds per sample  y(n) = a + b / n + c * (n - 1)      a, b, c >= 0

``b`` is the perfectly parallel compute, ``a`` the per-step overhead that does
not shrink with ``n`` (fixed step cost, small-local-batch inefficiency, the
first all-reduce), ``c`` the synchronisation cost of each further replica.
Throughput is ``X(n) = 1 / y(n)`` and speedup ``S(n) = X(n) / X(1)``.

Fit (:func:`fit_throughput`, batched in :func:`fit_many`): non-negative least
squares of ``y = 1 / samples_per_s`` on the features ``(1/n, 1, n-1)``, solved
exactly by trying every subset of the three coefficients that contains ``a`` or
``b`` and that the number of distinct measured sizes can identify (1 size: ``b``
only, i.e. linear scaling from that point; 2 sizes: at most two coefficients;
3+: all) and keeping the
non-negative one with the least relative squared error (ties: fewer
coefficients). Residuals are relative (each point weighted by ``1/y^2``), so a
fast and a slow size count alike. Duplicate sizes are averaged first.

Extrapolation is bounded as in Pollux: a job is not predicted to gain from more
than ``2 x`` the largest size it has run (:data:`EXPLORE_FACTOR`) or the size it
holds now, so a job measured at one size grows step by step and is measured again
on the way.

Policy (:func:`goodput_allocate`, called by ``nbrunner.core.allocate.allocate``):

1. Admission, order and minimums exactly as fairshare; the fairshare split is
   computed for every admitted job.
2. Admitted jobs without measurements keep their fairshare share. The GPUs left
   (``min(total, sum max)`` minus those shares minus the measured jobs' minimums)
   go one at a time to the measured job whose weighted marginal gain
   ``priority * (1/S(x) - 1/S(x+1))`` is largest (ties: the earlier job in the
   order), never past its max, its peak or ``2 x`` its largest measured size
   (or its current size, if larger). That is the weighted sum of ``-1/S``,
   Pollux's fairness-weighted speedup (power mean with p = -1): it is concave
   in ``x`` for this model, so the greedy is optimal, and it favours jobs whose
   speedup is still low over adding to one that already has many GPUs. The
   plain sum of speedups is kept as ``UTILITY = "speedup"`` (measured worse in
   the simulator). Gains are made non-increasing per job (running minimum) so
   the greedy is one top-k selection. GPUs no measured job gains from stay free.
3. Restart-aware: a demand may carry ``"gpus"`` (its current GPU count, default
   0), ``"pause_s"`` (measured pause of one resize, seconds, default 0) and
   ``"horizon_s"`` (default :data:`HORIZON_S`, 300 s = five 60 s scheduling
   intervals). In the greedy, a running measured job's GPUs up to its current
   count are worth ``rho / (1 - rho)`` of its utility more (``rho = pause /
   horizon``, spread evenly over them), the utility it loses to a pause if it is
   resized, so small reshuffles do not happen. After the greedy, a job whose
   new count ``x`` differs from ``g = gpus`` (both within ``[min, max]``) only
   grows if ``(H - pause) * X(x) > H * X(g)``, i.e. the samples it gains over the
   horizon exceed what the pause costs; GPUs of growths that are not made undo
   shrinks that fed them (in the order above, while they last).

Conventions: ``throughput`` is ``{gpus: samples_per_s}`` with int or str keys
(``"2"``), positive sizes and positive finite rates; anything else raises
``ValueError``. An empty dict is "no measurements".
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["ThroughputModel", "fit_throughput", "fit_many", "goodput_allocate", "HORIZON_S", "EXPLORE_FACTOR"]

HORIZON_S = 300.0
UTILITY = "fair"
EXPLORE_FACTOR = 2
# Feature subsets (columns of (1/n, 1, n-1)); b (1/n) first so ties prefer it. Sync
# alone (c only) is left out: it would predict infinite throughput on one GPU.
_SUBSETS = ((0,), (1,), (0, 1), (0, 2), (1, 2), (0, 1, 2))


class ThroughputModel:
    """Fitted ``y(n) = a + b/n + c(n-1)`` seconds per sample (see module docstring)."""

    __slots__ = ("a", "b", "c", "max_seen")

    def __init__(self, a: float, b: float, c: float, max_seen: int):
        self.a, self.b, self.c, self.max_seen = float(a), float(b), float(c), int(max_seen)

    def samples_per_s(self, n) -> np.ndarray | float:
        n = np.asarray(n, dtype=np.float64)
        return 1.0 / (self.a + self.b / n + self.c * (n - 1))

    def speedup(self, n) -> np.ndarray | float:
        return self.samples_per_s(n) / self.samples_per_s(1)

    def __repr__(self) -> str:
        return f"ThroughputModel(a={self.a:.3g}, b={self.b:.3g}, c={self.c:.3g}, max_seen={self.max_seen})"


def _points(throughput: Any, ident: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Validated (sizes, seconds per sample) with duplicate sizes averaged."""
    if not isinstance(throughput, dict):
        raise ValueError(f"demand {ident!r}: throughput must be a dict {{gpus: samples_per_s}}")
    acc: dict[int, list[float]] = {}
    for k, v in throughput.items():
        try:
            n = int(k)
        except (TypeError, ValueError):
            raise ValueError(f"demand {ident!r}: throughput key {k!r} is not a GPU count") from None
        if isinstance(k, (bool, float)) or n < 1:
            raise ValueError(f"demand {ident!r}: throughput key {k!r} must be a positive integer")
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                or not math.isfinite(v) or v <= 0:
            raise ValueError(f"demand {ident!r}: throughput at {k!r} must be a positive number, got {v!r}")
        acc.setdefault(n, []).append(1.0 / float(v))
    ns = sorted(acc)
    return np.array(ns, dtype=np.float64), np.array([sum(acc[n]) / len(acc[n]) for n in ns])


def fit_throughput(throughput: dict) -> ThroughputModel | None:
    """Fit one job's ``{gpus: samples_per_s}``; None if it is empty."""
    return fit_many([throughput])[0]


def fit_many(throughputs: list[dict], ids: list | None = None) -> list[ThroughputModel | None]:
    """Fit many jobs at once (vectorised over jobs); None for empty measurements."""
    pts = [_points(t, None if ids is None else ids[i]) for i, t in enumerate(throughputs)]
    out: list[ThroughputModel | None] = [None] * len(pts)
    coef, max_seen = _fit_arrays(pts)
    for i, (n, _) in enumerate(pts):
        if len(n):
            out[i] = ThroughputModel(coef[i, 1], coef[i, 0], coef[i, 2], max_seen[i])
    return out


def _fit_arrays(pts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Coefficients (b, a, c) per job (rows of zeros for empty) and largest size seen."""
    J = len(pts)
    P = max((len(n) for n, _ in pts), default=0)
    coef = np.zeros((J, 3))
    max_seen = np.zeros(J, dtype=np.int64)
    if J == 0 or P == 0:
        return coef, max_seen
    N = np.ones((J, P))
    Y = np.ones((J, P))
    W = np.zeros((J, P))
    cnt = np.zeros(J, dtype=np.int64)
    for i, (n, y) in enumerate(pts):
        k = len(n)
        if k:
            N[i, :k], Y[i, :k], W[i, :k] = n, y, 1.0 / (y * y)
            cnt[i] = k
            max_seen[i] = int(n[-1])
    F = np.stack((1.0 / N, np.ones_like(N), N - 1.0), axis=2)  # J x P x 3
    best_err = np.full(J, np.inf)
    for S in _SUBSETS:
        k = len(S)
        ok = cnt >= k
        if not ok.any():
            continue
        Fs = F[:, :, S]  # J x P x k
        G = np.einsum("jpk,jp,jpl->jkl", Fs, W, Fs)
        r = np.einsum("jpk,jp,jp->jk", Fs, W, Y)
        G = G + np.eye(k) * (1e-12 * np.trace(G, axis1=1, axis2=2) + 1e-30)[:, None, None]
        G[~ok] = np.eye(k)
        r[~ok] = 1.0
        beta = np.linalg.solve(G, r[:, :, None])[:, :, 0]
        pred = np.einsum("jpk,jk->jp", Fs, beta)
        err = (W * (Y - pred) ** 2).sum(axis=1)
        feasible = ok & (beta >= 0).all(axis=1) & (beta[:, [S.index(s) for s in S if s < 2]].sum(axis=1) > 0)
        better = feasible & (err < best_err * (1 - 1e-9) - 1e-15)
        if better.any():
            best_err[better] = err[better]
            coef[better] = 0.0
            for col, s in enumerate(S):
                coef[better, s] = beta[better, col]
    return coef, max_seen


def goodput_allocate(total: int, m: np.ndarray, M: np.ndarray, w: np.ndarray, fair: np.ndarray,
                     adm_demands: list[dict], adm_ids: list) -> np.ndarray:
    """Goodput split for the admitted jobs (in order); ``fair`` is their fairshare split.

    ``m``/``M``/``w`` are the admitted jobs' min, max (capped at total) and
    priorities in order; returns their GPU counts.
    """
    thr = [d.get("throughput") or {} for d in adm_demands]
    measured = np.fromiter((len(t) > 0 for t in thr), dtype=bool, count=len(thr))
    x = fair.astype(np.int64).copy()
    if not measured.any():
        return x
    midx = np.flatnonzero(measured)
    for i in midx.tolist():
        _check_restart_fields(adm_demands[i], adm_ids[i])
    coef, max_seen = _fit_arrays([_points(thr[i], adm_ids[i]) for i in midx])
    b, a, c = coef[:, 0], coef[:, 1], coef[:, 2]
    mm, MM = m[midx], M[midx]
    x[midx] = mm
    pool = min(total, int(M.sum())) - int(x.sum())
    held = np.fromiter((d.get("gpus", 0) if d.get("running", False) else 0 for d in (adm_demands[i] for i in midx)),
                       dtype=np.int64, count=len(midx))
    # Most each job may reach: 2x its largest measured size, or what it holds now (measured soon).
    cap = np.minimum(MM, np.maximum(np.maximum(EXPLORE_FACTOR * max_seen, held), mm))
    ext = np.maximum(cap - mm, 0)
    if pool > 0 and ext.sum() > 0:
        # Flat candidates: job j's k-th extra GPU takes it from mm+k to mm+k+1.
        job = np.repeat(np.arange(len(midx)), ext)
        start = np.cumsum(ext) - ext
        k = np.arange(len(job)) - np.repeat(start, ext)
        lo = (mm[job] + k).astype(np.float64)
        y = lambda n: a[job] + b[job] / n + c[job] * (n - 1)  # noqa: E731
        y1 = (a + b)[job]  # seconds per sample on 1 GPU: S(n) = y1 / y(n)
        if UTILITY == "speedup":  # sum of speedups: S(x+1) - S(x)
            gain = y1 / y(lo + 1) - np.where(lo < 1, 0.0, y1 / y(np.maximum(lo, 1)))
        else:  # Pollux's p = -1 power mean: -1/S (concave here); from 0 GPUs the gain is 1
            gain = np.where(lo < 1, 1.0, (y(np.maximum(lo, 1)) - y(lo + 1)) / y1)
        gain = gain * w[midx][job]
        # Non-increasing per job (running minimum), so every job's picks are a prefix.
        gain = _segment_cummin(gain, start, ext)
        # Sticky: a running job at g loses its pause on any change, so the GPUs up to
        # its current count are worth the pause's share of its utility more (spread
        # evenly over them; still non-increasing).
        cur, rho = _current(adm_demands, midx, mm, cap)
        sticky = np.flatnonzero((cur > mm) & (rho > 0))
        if len(sticky):
            gc = cur[sticky].astype(np.float64)
            yg = a[sticky] + b[sticky] / gc + c[sticky] * (gc - 1)
            y1s = a[sticky] + b[sticky]
            r = rho[sticky]
            if UTILITY == "speedup":
                beta = y1s / yg * r
            else:
                beta = yg / y1s * r / (1 - r)
            beta = beta * w[midx][sticky] / (cur[sticky] - mm[sticky])
            bonus = np.zeros(len(midx))
            bonus[sticky] = beta
            gain = gain + np.where(lo < cur[job], bonus[job], 0.0)
        pos = gain > 0
        cand = np.flatnonzero(pos)
        if len(cand) > pool:
            g = gain[cand]
            thresh = np.partition(g, len(g) - pool)[len(g) - pool]
            above = cand[g > thresh]
            tie = cand[g == thresh]
            tie = tie[np.lexsort((k[tie], job[tie]))][: pool - len(above)]
            cand = np.concatenate((above, tie))
        np.add.at(x, midx, np.bincount(job[cand], minlength=len(midx)))
    _restart_aware(x, m, M, midx, coef, adm_demands)
    return x


def _check_restart_fields(d: dict, ident: Any) -> None:
    g = d.get("gpus", 0)
    if isinstance(g, bool) or not isinstance(g, (int, np.integer)) or g < 0:
        raise ValueError(f"demand {ident!r}: gpus must be an integer >= 0, got {g!r}")
    for key in ("pause_s", "horizon_s"):
        v = d.get(key, 0.0)
        if v is None and key == "pause_s":
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                or not math.isfinite(v) or v < 0:
            raise ValueError(f"demand {ident!r}: {key} must be a finite number >= 0, got {v!r}")


def _current(adm_demands: list[dict], midx: np.ndarray, mm: np.ndarray, cap: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """Current GPU count (0 if not running or outside ``[min, cap]``) and pause / horizon per measured job."""
    cur = np.zeros(len(midx), dtype=np.int64)
    rho = np.zeros(len(midx))
    for r, i in enumerate(midx.tolist()):
        d = adm_demands[i]
        g = d.get("gpus", 0)
        if g and d.get("running", False) and mm[r] <= g <= cap[r]:
            H = float(d.get("horizon_s", HORIZON_S))
            cur[r] = g
            rho[r] = min(max(float(d.get("pause_s", 0.0) or 0.0) / H, 0.0), 0.5) if H > 0 else 0.5
    return cur, rho


def _segment_cummin(v: np.ndarray, start: np.ndarray, ext: np.ndarray) -> np.ndarray:
    """Running minimum of ``v`` within each segment ``[start, start + ext)``."""
    out = v.copy()
    longest = int(ext.max()) if len(ext) else 0
    for step in range(1, longest):  # segments are short (at most max - min GPUs)
        has = ext > step
        idx = start[has] + step
        out[idx] = np.minimum(out[idx], out[idx - 1])
    return out


def _restart_aware(x: np.ndarray, m: np.ndarray, M: np.ndarray, midx: np.ndarray, coef: np.ndarray,
                   adm_demands: list[dict]) -> None:
    """Undo growths not worth their pause; their GPUs undo shrinks (in order)."""
    spare = 0
    shrinks = []
    for r, i in enumerate(midx.tolist()):
        d = adm_demands[i]
        g = d.get("gpus", 0)
        if not g or not d.get("running", False) or x[i] == g or not (m[i] <= g <= M[i]):
            continue
        b, a, c = coef[r]
        X = lambda n: 1.0 / (a + b / n + c * (n - 1))  # noqa: E731
        if x[i] > g:
            pause = float(d.get("pause_s", 0.0) or 0.0)
            H = float(d.get("horizon_s", HORIZON_S))
            if (H - pause) * X(x[i]) <= H * X(g):
                spare += int(x[i]) - g
                x[i] = g
        else:
            shrinks.append(i)
    for i in shrinks:
        need = adm_demands[i]["gpus"] - int(x[i])
        if need <= spare:
            spare -= need
            x[i] += need
