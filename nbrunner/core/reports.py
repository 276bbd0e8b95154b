"""What an elastic job's progress reports carry for the goodput policy. Pure, no I/O.

Its trainer reports, with its metrics, its samples per second at its learner count, the pause
of its last resize, its training set-up (``nbrunner.core.kinds``) and, adapting its batch, its
statistical efficiency at every learner count. They are kept in fields of the job's record of
their own (``throughput``, ``pause_s``, ``setup``, ``efficiency``), not among its metrics; a
malformed one is dropped.
"""
from __future__ import annotations

from typing import Any

from .efficiency import check_efficiency
from .kinds import SETUP_MAX_CHARS

__all__ = ["goodput_inputs", "NOT_METRICS"]

NOT_METRICS = ("efficiency", "setup")
"""Reported with the metrics, kept apart from them (a map, a digest)."""


def goodput_inputs(throughput: dict[str, float], metrics: dict[str, Any]) -> dict[str, Any]:
    """The record's fields a report's ``metrics`` changes: ``throughput`` (the job's ``throughput`` with the
    reported point), ``pause_s``, ``setup`` and ``efficiency``, each only if reported and well formed."""
    out: dict[str, Any] = {}
    sps, n, pause = metrics.get("samples_per_s"), metrics.get("learners"), metrics.get("resize_pause_s")
    if isinstance(sps, (int, float)) and sps > 0 and isinstance(n, int) and not isinstance(n, bool) and n > 0:
        out["throughput"] = {**throughput, str(n): float(sps)}
    if isinstance(pause, (int, float)) and not isinstance(pause, bool) and pause >= 0:
        out["pause_s"] = float(pause)
    setup = metrics.get("setup")
    if isinstance(setup, str) and 0 < len(setup) <= SETUP_MAX_CHARS:
        out["setup"] = setup
    if "efficiency" in metrics:
        try:
            out["efficiency"] = {str(k): v for k, v in check_efficiency(metrics["efficiency"]).items()}
        except ValueError:
            pass  # malformed: dropped
    return out
