"""Early stopping, ASHA's "stop" variant, as pure decisions over reported values.

A trial's k-th report of the objective metric (``nbrunner.record(metric, v)``, or
ElasticTrainer's per-epoch ``val_*`` metrics: the lines of ``runs/<job>/metrics.jsonl`` that
contain the metric) is its value at rung k.  When a running trial has reached rung r (its
highest rung so far) and at least ``reduction_factor`` trials of the sweep have a value at r
(itself included, whether the others still run, finished or were stopped), it is kept only if
it is among the best ``max(1, floor(n / reduction_factor))`` of those n values; otherwise it
is stopped with the error ``stopped early at rung r``.  Until enough trials reached the rung it
keeps running (and is judged at its next rung instead if it gets there first).  A decision is
made once per trial and rung.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .spec import is_number


def numeric(value: Any) -> float | None:
    if is_number(value):
        return float(value)
    return None


def better(a: float | None, b: float | None, mode: str) -> bool:
    """a strictly better than b (a missing value is worst)."""
    if a is None:
        return False
    if b is None:
        return True
    return a > b if mode == "max" else a < b


def rung_decision(mine: float | None, peers: list[float | None], reduction_factor: float, mode: str) -> str | None:
    """ASHA at one rung: ``"continue"`` if ``mine`` is among the best ``max(1, floor(n / eta))``
    of the ``n`` values ``peers`` (which include ``mine``), ``"stopped"`` if not, None while
    ``n < eta``. A missing value is worst; ties count in the trial's favour."""
    if len(peers) < reduction_factor:
        return None
    keep = max(1, math.floor(len(peers) / reduction_factor))
    ahead = sum(1 for v in peers if better(v, mine, mode))
    return "continue" if ahead < keep else "stopped"
