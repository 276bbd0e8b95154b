"""Batch-size adaptation in the simulator: each job picks the global batch of the highest goodput.

Statistical efficiency, as AdaptDL/Pollux define it. A job's progress is counted in
steps of the application's initial batch ``B0`` (its smallest validated batch); the
``progress`` column of ``validation-<B>.csv`` is that count at the end of each
epoch of a run at batch ``B``, and ``iteration`` the steps that run took. One step
at batch ``B`` in epoch ``e`` makes ``gain(B, e)`` such steps of progress: the
measured ``Δprogress / Δiteration`` of epoch ``e`` in the validation file of ``B``,
interpolated linearly in the batch between the two validated batches around ``B``
(held outside them) and at most ``s = B / B0`` (a step cannot make more than ``s``
initial-batch steps). Measured, so a job that keeps a validated batch needs exactly
that run's steps, the work ``nbrunner.sim.apps`` gives fixed-batch jobs: adapting
and fixed jobs are measured with one ruler. (The Pollux simulator computes the gain
from the epoch's ``grad_sqr``/``grad_var`` instead, ``(var + sqr) / (var / s +
sqr)``; in the first epoch their averages are dominated by the first steps'
gradients and give a gain near 1 at every batch, where the runs measured up to 11:
yolov3 at its largest batch would then need 58% more steps than its run took.)
Statistical efficiency is ``gain / s`` (1 at ``B0``, falling as ``B`` grows, less so
later in training, when larger batches pay off), and goodput, in ``B0``-samples per
second, is ``B0 * gain / step_time(r, B)``: throughput times statistical efficiency.

Choice. On ``r`` GPUs in epoch ``e`` a job runs the batch of the highest goodput
among :data:`GRID_PER_DOUBLING` sizes a doubling (plus every validated batch)
between its application's smallest and largest validated batch, with the step time
of ``nbrunner.sim.apps`` (gradient accumulation above the largest measured local
batch). It chooses again whenever its GPU count changes and at every epoch
boundary (a new batch costs no pause; a new GPU count does). The job knows its
true step time and efficiency (an ideal AdaptDL agent; a live one fits them from
what it measures).

Work. Epoch ``e`` ends when progress reaches the smallest ``progress`` of row
``e`` over the validation files (Pollux's simulator counts epochs so); a job
finishes after :data:`nbrunner.sim.apps.EPOCHS` epochs.
"""

from __future__ import annotations

import math

import numpy as np

from .apps import EPOCHS, AppModel

__all__ = ["BatchAdaptation", "GRID_PER_DOUBLING"]

GRID_PER_DOUBLING = 4
_PROGRESS, _ITERATION = 0, 1  # columns of AppModel.validation rows


class BatchAdaptation:
    """Statistical efficiency, epochs and the goodput-optimal batch of one application."""

    def __init__(self, app: AppModel):
        self.app = app
        self.batches = np.array(sorted(app.validation), dtype=np.float64)
        self.init_batch = int(self.batches[0])
        self.max_batch = int(self.batches[-1])
        rows = min(len(v) for v in app.validation.values())
        stack = np.stack([app.validation[int(b)][:rows] for b in self.batches])  # batch x epoch x column
        with np.errstate(divide="ignore", invalid="ignore"):  # batch x epoch: progress per step, measured
            steps = np.diff(stack[:, :, _ITERATION], axis=1, prepend=0.0)
            self.gains = np.diff(stack[:, :, _PROGRESS], axis=1, prepend=0.0) / steps
        self.gains = np.clip(np.nan_to_num(self.gains, nan=1.0, posinf=1.0), 1e-9, None)
        ends = stack[:, :, _PROGRESS].min(axis=0)  # progress at the end of each measured epoch
        epochs = EPOCHS.get(app.name, rows)
        if epochs > rows:  # more epochs than measured: at their mean pace (as AppModel.total_steps)
            ends = np.concatenate((ends, ends[-1] / rows * np.arange(rows + 1, epochs + 1)))
        self.epoch_ends = ends[:epochs]
        self.work = float(self.epoch_ends[-1])
        doublings = math.log2(self.max_batch / self.init_batch)
        grid = np.geomspace(self.init_batch, self.max_batch, max(2, int(doublings * GRID_PER_DOUBLING) + 1))
        self.grid = np.unique(np.concatenate((np.round(grid), self.batches))).astype(np.int64)
        self._best: dict[tuple[int, int], tuple[int, float]] = {}

    def gain(self, batch: float, epoch: int) -> float:
        """Progress (steps of the initial batch) one step of ``batch`` makes in ``epoch``."""
        e = min(epoch, self.gains.shape[1] - 1)
        return min(float(np.interp(batch, self.batches, self.gains[:, e])), batch / self.init_batch)

    def efficiency(self, batch: float, epoch: int) -> float:
        """Statistical efficiency of ``batch`` in ``epoch``: 1 at the initial batch."""
        return self.gain(batch, epoch) * self.init_batch / batch

    def best(self, gpus: int, epoch: int) -> tuple[int, float]:
        """(batch, progress per second) of the highest goodput on ``gpus`` GPUs in ``epoch``."""
        key = (gpus, min(epoch, len(self.epoch_ends) - 1))
        got = self._best.get(key)
        if got is None:
            rates = [self.gain(b, key[1]) / self.app.step_time(gpus, int(b)) for b in self.grid]
            i = int(np.argmax(rates))
            got = self._best[key] = (int(self.grid[i]), float(rates[i]))
        return got

    def goodput(self, gpus: int, epoch: int) -> float:
        """Initial-batch samples per second at the best batch: throughput x statistical efficiency."""
        return self.init_batch * self.best(gpus, epoch)[1]

    def measure(self, gpus: int, epoch: int) -> tuple[float, float]:
        """(throughput in samples/s, statistical efficiency) at the best batch on ``gpus`` GPUs in ``epoch``:
        what a live job reports; their product is :meth:`goodput`."""
        batch = self.best(gpus, epoch)[0]
        return batch / self.app.step_time(gpus, batch), self.efficiency(batch, epoch)

    def epoch_of(self, progress: float) -> int:
        """The epoch a job with this much progress is in."""
        return int(np.searchsorted(self.epoch_ends, progress, side="right"))

    def best_replicas(self, limit: int) -> int:
        """Fewest GPUs (<= limit) reaching the highest goodput of the last epoch (when large batches pay most)."""
        last = len(self.epoch_ends) - 1
        limit = max(1, min(limit, self.app.max_replicas))
        rates = [self.best(r, last)[1] for r in range(1, limit + 1)]
        return int(np.argmax(rates)) + 1
