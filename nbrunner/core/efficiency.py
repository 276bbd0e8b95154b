"""Goodput of a job that adapts its batch to its GPUs: throughput x statistical efficiency. Pure, no I/O.

A job that scales its global batch with its GPU count (``ElasticTrainer(adaptive_batch=True)``)
makes less progress per sample at a larger batch: its *statistical efficiency* ``E(n)`` at the
batch it runs on ``n`` GPUs is the progress one sample makes there relative to one sample at its
base batch (AdaptDL/Pollux: ``E = (phi + B0) / (phi + B)`` from the gradient noise scale
``phi``; 1 at the base batch, falling as the batch grows).  Its *goodput* on ``n`` GPUs is
``X(n) * E(n)``: base-batch samples of progress per second.

A demand may carry ``"efficiency": {gpus: E}`` next to its measured ``"throughput"`` (same key
conventions; values in ``(0, 1]``).  :func:`goodput_points` turns the two into the points the
goodput policy fits its model to (``nbrunner.core.throughput``): at each measured size the
measured throughput times that size's efficiency (1 where the map has none), and at each size of
the map the job has not run, up to ``2 x`` its largest measured size (the policy's exploration
bound), the throughput the measured points predict there (fitted as the policy fits them) times
its efficiency.  So the policy sees the efficiency falling at sizes the job has not run yet.
"""
from __future__ import annotations

import math
from numbers import Real
from typing import Any

from .limits import gpu_count

__all__ = ["check_efficiency", "goodput_points"]


def check_efficiency(efficiency: Any, ident: Any = None) -> dict[int, float]:
    """``{gpus: efficiency}`` validated (int keys); ``ValueError`` names the first bad entry."""
    if not isinstance(efficiency, dict):
        raise ValueError(f"demand {ident!r}: efficiency must be a dict {{gpus: statistical efficiency}}")
    out: dict[int, float] = {}
    for k, v in efficiency.items():
        n = gpu_count(k, "efficiency", ident)
        if isinstance(v, bool) or not isinstance(v, Real) or not math.isfinite(v) or not 0 < v <= 1:
            raise ValueError(f"demand {ident!r}: efficiency at {k!r} must be a number in (0, 1], got {v!r}")
        out[n] = float(v)
    return out


def goodput_points(throughput: dict, efficiency: Any, explore: int, ident: Any = None) -> dict[int, float]:
    """``{gpus: goodput}`` of a job with measured ``throughput`` and ``efficiency`` (see the module
    docstring); sizes of the map past ``explore`` times the largest measured size are left out."""
    # numpy is imported here, not with the module: the job record's checks (lifecycle) use this
    # module, and every command imports those
    from .throughput import fit_arrays, points

    eff = check_efficiency(efficiency, ident)
    ns, y = points(throughput, ident)
    if not len(ns):
        return {}
    out = {int(n): float(1.0 / s) * eff.get(int(n), 1.0) for n, s in zip(ns, y)}
    extra = sorted(n for n in eff if n not in out and n <= explore * int(ns[-1]))
    if extra:
        coef, _ = fit_arrays([(ns, y)])
        b, a, c = coef[0]
        for n in extra:
            out[n] = eff[n] / (a + b / n + c * (n - 1))
    return out
