"""Batch-size adaptation (``ElasticTrainer(adaptive_batch=True)``): the batch rule, the gradient
noise scale and AdaScale's gain.  Plain arithmetic (no torch): the driver and the learners share it.

Batch rule.  On ``W`` learners a step takes ``batch_for(W) = min(base * W, max_batch, n_train)``
samples (``base`` = ``effective_batch_size``): each learner keeps a local batch of ``base`` until
the global batch reaches ``max_batch``.  The allocator, which picks ``W``, thereby picks the batch,
by goodput (the job reports its statistical efficiency at every learner count).

Gradient statistics.  Every step, the global batch of ``B`` samples is split in ``k >= 2``
chunks (the learners' chunks, or the two halves of a lone learner's batch) of ``n_i`` samples
with mean gradients ``g_i``; the step's gradient is ``G = sum(n_i g_i) / B``.  With
``L = sum(n_i |g_i|^2) / B``, unbiased estimates of the per-sample gradient variance
``tr(Sigma)`` and of the true gradient's squared norm ``|mu|^2`` are
``tr = B (L - |G|^2) / (k - 1)`` and ``sqr = |G|^2 - tr / B`` (AdaptDL estimates them so).  Both
are smoothed by an exponential moving average (:data:`SMOOTHING` per step, corrected for its
start), kept in the train state (``ts["gns"]``) so snapshots, checkpoints and new learners
carry them.

Gain and efficiency (AdaScale, as AdaptDL/Pollux use it).  A step at batch ``B`` makes
``gain(B) = (tr/B0 + sqr) / (tr/B + sqr)`` steps' worth of progress at the base batch ``B0``
(between 1 and ``B / B0``); the learning rate is multiplied by it.  Statistical efficiency is
``gain(B) * B0 / B`` (1 at the base batch), i.e. ``(phi + B0) / (phi + B)`` with the gradient
noise scale ``phi = tr / sqr``.  Before any estimate, gain and efficiency are 1.
"""
from __future__ import annotations

import math
from typing import Optional

SMOOTHING = 0.95
"""Weight of the previous estimate in the moving average of the gradient statistics, per step."""
EFFICIENCY_SIZES = 64
"""Most learner counts the job's efficiency map (reported for the allocator) covers."""


def batch_for(base: int, max_batch: Optional[int], world: int, n_train: Optional[int] = None) -> int:
    """The global batch on ``world`` learners (see the module docstring)."""
    b = base * max(1, int(world))
    if max_batch:
        b = min(b, int(max_batch))
    if n_train:
        b = min(b, int(n_train))
    return max(1, b)


def estimate(local_sum: float, total_sqr: float, chunks: int, batch: int) -> tuple[float, float]:
    """``(tr, sqr)`` of one step from ``L`` (``local_sum``), ``|G|^2``, ``k`` chunks and ``B``."""
    tr = batch * (local_sum - total_sqr) / (chunks - 1)
    return tr, total_sqr - tr / batch


def smoothed(gns: Optional[dict], tr: float, sqr: float) -> dict:
    """The moving averages ``gns`` (``{"tr", "sqr", "w"}``, sums weighted for the start correction)
    after one more step's estimates; a non-finite estimate is skipped."""
    gns = dict(gns or {"tr": 0.0, "sqr": 0.0, "w": 0.0})
    if math.isfinite(tr) and math.isfinite(sqr):
        a = SMOOTHING
        gns.update(tr=a * gns["tr"] + (1 - a) * tr, sqr=a * gns["sqr"] + (1 - a) * sqr, w=a * gns["w"] + (1 - a))
    return gns


def averages(gns: Optional[dict]) -> tuple[float, float] | None:
    """The smoothed ``(tr, sqr)``, or None before the first estimate."""
    if not gns or gns.get("w", 0.0) <= 0:
        return None
    return gns["tr"] / gns["w"], gns["sqr"] / gns["w"]


def gain(gns: Optional[dict], base: int, batch: int) -> float:
    """AdaScale's gain of a step at ``batch`` over one at ``base`` (1 before any estimate)."""
    avg = averages(gns)
    if avg is None or batch <= base:
        return 1.0
    tr, sqr = max(avg[0], 0.0), max(avg[1], 0.0)
    scale = max(tr, sqr)
    if not 0 < scale < math.inf:
        return 1.0
    tr, sqr = tr / scale, sqr / scale  # the larger is 1: tiny (subnormal) statistics keep their ratio
    return (tr / base + sqr) / (tr / batch + sqr)


def efficiency(gns: Optional[dict], base: int, batch: int) -> float:
    """Statistical efficiency of ``batch``: progress per sample relative to the base batch."""
    return min(1.0, gain(gns, base, batch) * base / max(batch, base))


def noise_scale(gns: Optional[dict]) -> Optional[float]:
    """The gradient noise scale ``tr / sqr`` in samples (None before an estimate or while ``sqr <= 0``)."""
    avg = averages(gns)
    if avg is None or avg[1] <= 0:
        return None
    return max(avg[0], 0.0) / avg[1]


def efficiency_map(gns: Optional[dict], base: int, max_batch: Optional[int], n_train: Optional[int],
                   most: int) -> dict[str, float]:
    """``{learner count: statistical efficiency}`` for 1..``most`` learners (at most
    :data:`EFFICIENCY_SIZES`), the allocator's view of the job's goodput; ``{}`` before an estimate."""
    if averages(gns) is None:
        return {}
    top = max(1, min(int(most), EFFICIENCY_SIZES))
    return {str(n): efficiency(gns, base, batch_for(base, max_batch, n, n_train)) for n in range(1, top + 1)}
