"""Applications of the cluster simulator: step time and work of each, read from measured traces.

A traces directory holds one directory per application (as in the Pollux
artifact): ``placements.csv`` (``placement,local_bsz,step_time,sync_time``: step
time on one node; ``placement`` is a string of per-node GPU counts, "22" = 2 + 2
on two nodes), ``scalability.csv`` (``num_nodes,num_replicas,local_bsz,
step_time,sync_time``: step time across nodes) and ``validation-<batch>.csv``
(``progress,iteration,metric,grad_sqr,grad_var``: training progress per epoch at
that global batch).

Performance. A job keeps its global batch ``B`` whatever its GPU count ``r``; the
local batch is ``B / r``. For every replica count the traces measure, the rows
with the fewest nodes are used (best packing: ``placements.csv`` for 1..16 GPUs,
``scalability.csv`` above; duplicate points are averaged). Step time at a local
batch between measured points is interpolated linearly in the local batch; below
the smallest measured local batch it is held at that point (no speedup is
assumed that the traces do not show); above the largest, gradient accumulation is
used: ``k = ceil(b / b_max)`` micro-batches of ``b / k`` cost ``k * step - (k - 1)
* sync`` (gradients are synchronised once). Replica counts between measured ones
are interpolated linearly in ``r``; the largest measured count (64) is the most a
job can use. Placement/fragmentation is not modelled.

Work. Steps to finish = the ``iteration`` of row ``epochs`` (:data:`EPOCHS`: bert
2, cifar10 100, ncf 10, imagenet 90, deepspeech2 80, yolov3 50; other apps: all
rows) in ``validation-<B>.csv``: the measured number of steps at batch ``B`` to
reach that many epochs' worth of training progress, so large batches' lower
statistical efficiency is included. Batch sizes without a file use the
samples-to-finish (``iteration * B``) interpolated linearly in log(B), held
constant outside.
"""

from __future__ import annotations

import csv
import glob
import math
import os
from functools import lru_cache
from pathlib import Path

import numpy as np

__all__ = ["AppModel", "load_apps", "EPOCHS"]

EPOCHS = {"bert": 2, "cifar10": 100, "ncf": 10, "imagenet": 90, "deepspeech2": 80, "yolov3": 50}
"""Epochs each application trains for (the Pollux study's figures)."""


class AppModel:
    """Step time and work of one application, from its measured traces."""

    def __init__(self, name: str, trace_dir: str | os.PathLike):
        self.name = name
        d = Path(trace_dir)
        self.tables = _read_step_times(d)
        self.replicas = np.array(sorted(self.tables), dtype=np.int64)
        self.max_replicas = int(self.replicas[-1])
        self.validation = _read_validation(d)
        self.samples: dict[int, float] = {}  # global batch -> samples to finish
        for bsz, rows in self.validation.items():
            iters = rows[:, 1]
            epochs = EPOCHS.get(name, len(iters))
            steps = iters[epochs - 1] if epochs <= len(iters) else iters[-1] * epochs / len(iters)
            self.samples[bsz] = float(steps) * bsz
        self._cache: dict[tuple[int, int], float] = {}

    def total_steps(self, batch: int) -> float:
        """Steps of global batch ``batch`` needed to finish training."""
        if batch in self.samples:
            return self.samples[batch] / batch
        bs = sorted(self.samples)
        samples = float(np.interp(math.log(batch), np.log(bs), [self.samples[b] for b in bs]))
        return samples / batch

    def _measured(self, r: int, local: float) -> float:
        bs, step, sync = self.tables[r]
        if local <= bs[-1]:
            return float(np.interp(local, bs, step))  # held at bs[0] below the measured range
        k = math.ceil(local / bs[-1] - 1e-12)
        micro = local / k
        t, s = float(np.interp(micro, bs, step)), float(np.interp(micro, bs, sync))
        return k * t - (k - 1) * min(s, t)

    def step_time(self, r: int, batch: int) -> float:
        """Seconds per step on ``r`` GPUs at global batch ``batch``."""
        key = (r, batch)
        t = self._cache.get(key)
        if t is None:
            if r < 1:
                raise ValueError("need at least one GPU")
            r_eff = min(r, self.max_replicas)
            i = int(np.searchsorted(self.replicas, r_eff))
            r_hi = int(self.replicas[i])
            if r_hi == r_eff:
                t = self._measured(r_hi, batch / r_hi)
            elif i == 0:  # fewer GPUs than any measurement: scale the smallest one up
                t = self._measured(r_hi, batch / r_hi) * r_hi / r_eff
            else:
                r_lo = int(self.replicas[i - 1])
                t_lo, t_hi = self._measured(r_lo, batch / r_lo), self._measured(r_hi, batch / r_hi)
                t = t_lo + (t_hi - t_lo) * (r_eff - r_lo) / (r_hi - r_lo)
            self._cache[key] = t
        return t

    def best_replicas(self, batch: int, limit: int) -> int:
        """Fewest GPUs (<= limit) reaching the highest measured throughput at ``batch``."""
        limit = max(1, min(limit, self.max_replicas))
        times = [self.step_time(r, batch) for r in range(1, limit + 1)]
        return int(np.argmin(times)) + 1  # argmin returns the first (fewest GPUs) optimum


@lru_cache(maxsize=8)
def _load_apps_cached(traces: str) -> dict[str, AppModel]:
    apps = {}
    for sub in sorted(Path(traces).iterdir()):
        if sub.is_dir() and (sub / "placements.csv").exists():
            apps[sub.name] = AppModel(sub.name, sub)
    if not apps:
        raise ValueError(f"no application traces under {traces}")
    return apps


def load_apps(traces: str | os.PathLike) -> dict[str, AppModel]:
    """All applications under a traces directory (cached per directory)."""
    return _load_apps_cached(str(Path(traces).resolve()))


def _read_step_times(d: Path) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """{GPUs: (local batches, step times, sync times)} of the best-packed measurement of each GPU count."""
    points: dict[int, dict[int, dict[int, list[tuple[float, float]]]]] = {}  # r -> nodes -> bsz -> [(t, s)]

    def add(r: int, nodes: int, bsz: int, step: float, sync: float) -> None:
        points.setdefault(r, {}).setdefault(nodes, {}).setdefault(bsz, []).append((step, sync))

    with open(d / "placements.csv", newline="") as f:
        for row in csv.DictReader(f):
            p = row["placement"].strip()
            add(sum(int(c) for c in p), len(p), int(row["local_bsz"]), float(row["step_time"]),
                float(row["sync_time"]))
    scal = d / "scalability.csv"
    if scal.exists():
        with open(scal, newline="") as f:
            for row in csv.DictReader(f):
                add(int(row["num_replicas"]), int(row["num_nodes"]), int(row["local_bsz"]),
                    float(row["step_time"]), float(row["sync_time"]))
    if not points:
        raise ValueError(f"no step-time measurements in {d}")
    tables = {}
    for r, by_nodes in points.items():
        rows = by_nodes[min(by_nodes)]  # best-packed measurement of this GPU count
        bs = sorted(rows)
        tables[r] = (np.array(bs, dtype=np.float64), np.array([np.mean([t for t, _ in rows[b]]) for b in bs]),
                     np.array([np.mean([s for _, s in rows[b]]) for b in bs]))
    return tables


def _read_validation(d: Path) -> dict[int, np.ndarray]:
    """{global batch: rows (progress, iteration, metric, grad_sqr, grad_var), one an epoch}."""
    out = {}
    for path in glob.glob(str(d / "validation-*.csv")):
        bsz = int(Path(path).stem.rsplit("-", 1)[1])
        with open(path, newline="") as f:
            rows = [[float(row[k]) for k in ("progress", "iteration", "metric", "grad_sqr", "grad_var")]
                    for row in csv.DictReader(f)]
        if rows:
            out[bsz] = np.array(rows)
    if not out:
        raise ValueError(f"no validation-<batch>.csv in {d}")
    return dict(sorted(out.items()))

