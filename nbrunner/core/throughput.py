"""Throughput model of a data-parallel job, fitted from its measurements: pure, no I/O.

A data-parallel job keeps its global batch ``B`` whatever its GPU count ``n``; one
step costs compute on the local batch ``B / n`` plus a gradient synchronisation
that grows with ``n`` (Pollux's compute + sync split, with its overlap exponent
fixed at 1)::

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
3+: all) and keeping the non-negative one with the least relative squared error
(ties, errors within ``_EXACT`` of each other: fewer coefficients, then ``b``
first). Residuals are relative (each point weighted by ``1/y^2``), so a fast and
a slow size count alike. Duplicate sizes are averaged first.

Conventions: measurements are ``{gpus: samples_per_s}`` with int or str keys
(``"2"``), positive sizes and positive finite rates; anything else raises
``ValueError``. An empty dict is "no measurements".
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .limits import gpu_count

__all__ = ["ThroughputModel", "fit_throughput", "fit_many", "fit_arrays", "points"]

# Feature subsets (columns of (1/n, 1, n-1)); b (1/n) first so ties prefer it. Sync
# alone (c only) is left out: it would predict infinite throughput on one GPU.
_SUBSETS = ((0,), (1,), (0, 1), (0, 2), (1, 2), (0, 1, 2))
# Relative squared error below which two fits are equally exact: two sizes are fitted exactly by several
# pairs of coefficients, and the ridge's rounding must not pick among them (it picked a flat ``a + c(n-1)``
# over ``b/n + c(n-1)`` for a job slower at 25 GPUs than at 20, and the job was cut to one GPU).
_EXACT = 1e-10


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

    def efficient_size(self, floor: float, limit: int) -> int:
        """Largest ``n <= limit`` (at least 1) up to which the speedup still rises and ``S(n) / n >= floor``."""
        n = 1
        while n < limit and self.speedup(n + 1) > self.speedup(n) and self.speedup(n + 1) / (n + 1) >= floor:
            n += 1
        return n

    def __repr__(self) -> str:
        return f"ThroughputModel(a={self.a:.3g}, b={self.b:.3g}, c={self.c:.3g}, max_seen={self.max_seen})"


def points(throughput: Any, ident: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Validated (sizes, seconds per sample) with duplicate sizes averaged."""
    if not isinstance(throughput, dict):
        raise ValueError(f"demand {ident!r}: throughput must be a dict {{gpus: samples_per_s}}")
    acc: dict[int, list[float]] = {}
    for k, v in throughput.items():
        n = gpu_count(k, "throughput", ident)
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
    pts = [points(t, None if ids is None else ids[i]) for i, t in enumerate(throughputs)]
    out: list[ThroughputModel | None] = [None] * len(pts)
    coef, max_seen = fit_arrays(pts)
    for i, (n, _) in enumerate(pts):
        if len(n):
            out[i] = ThroughputModel(coef[i, 1], coef[i, 0], coef[i, 2], max_seen[i])
    return out


def fit_arrays(pts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
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
        better = feasible & (err < best_err * (1 - 1e-9) - _EXACT)
        if better.any():
            best_err[better] = err[better]
            coef[better] = 0.0
            for col, s in enumerate(S):
                coef[better, s] = beta[better, col]
    return coef, max_seen
