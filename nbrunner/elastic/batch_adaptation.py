"""A learner's side of batch-size adaptation (``ElasticTrainer(adaptive_batch=True)``): the step at
the batch of its world size, the gradient statistics it measures, the learning rate scaled by
AdaScale's gain, and epochs counted in samples.  The arithmetic is in :mod:`.adaptive`.

Train state.  Besides the fixed-batch run's fields, ``ts["pos"]`` counts the samples of the
running epoch consumed so far (each step takes the next ``batch_for(W)`` of the epoch's
permutation) and ``ts["gns"]`` holds the smoothed gradient statistics.  An epoch ends when the
next batch no longer fits in what is left of it (the rest is dropped, like the fixed run's), and
the run is done after ``epochs`` epochs.  All of it lives in the train state, so the learners of
a generation agree on it and snapshots, checkpoints and joining learners carry it.

Measuring.  The statistics need the step's gradient in ``k >= 2`` chunks.  With ``W >= 2``
learners these are the learners' own: a DDP communication hook adds up the squared norm of
the learner's local gradient before it averages the buckets (the default hook's arithmetic,
in Python: a small cost per bucket), and the control all-reduce the learners already run
after every step sums the terms.  A lone learner splits its batch in two halves and
backpropagates them one after the other (the gradients add up to the whole batch's).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import NamedTuple

import torch
import torch.distributed as dist

from . import adaptive


class StepGradients(NamedTuple):
    """What one adaptive step measured on a learner."""

    loss: torch.Tensor   # its weighted loss (summed over learners: W times the step's loss)
    local: float         # its chunks' share of L (summed over learners: L)
    total_sqr: float     # |G|^2 of the step's (averaged) gradient
    chunks: int          # k
    batch: int           # B


class BatchAdaptation:
    """A learner's batch rule, gradient statistics and scaled learning rate (see the module docstring)."""

    def __init__(self, cfg: dict, n_train: int):
        self.base = int(cfg["effective_batch_size"])
        self.max_batch = cfg.get("max_batch")
        self.epochs = int(cfg["epochs"])
        self.n_train = n_train
        self._local = None  # the squared norm of the learner's local gradient, added up by the hook

    def batch(self, world: int) -> int:
        return adaptive.batch_for(self.base, self.max_batch, world, self.n_train)

    @staticmethod
    def start(ts: dict) -> None:
        """Add the adaptive fields to a train state that lacks them."""
        ts.setdefault("pos", 0)
        ts.setdefault("gns", None)

    def epoch_over(self, ts: dict, world: int) -> bool:
        """The running epoch has no room for another step at ``world`` learners."""
        return ts["pos"] > 0 and ts["pos"] + self.batch(world) > self.n_train

    def done(self, ts: dict) -> bool:
        return len(ts["epochs"]) >= self.epochs

    def progress(self, ts: dict) -> float:
        """Fraction of the run done: whole epochs plus the running one's samples."""
        return min(1.0, (len(ts["epochs"]) + ts["pos"] / self.n_train) / max(1, self.epochs))

    def hook(self, world: int):
        """A DDP communication hook that averages the buckets and adds up the local squared norm."""
        def average(_, bucket):
            buf = bucket.buffer()
            sq = buf.detach().pow(2).sum()
            self._local = sq if self._local is None else self._local + sq
            buf.div_(world)
            return dist.all_reduce(buf, async_op=True).get_future().then(lambda f: f.value()[0])

        return average

    def backward(self, net, params: list, loss_fn, chunks: list, W: int, B: int) -> StepGradients:
        """Forward and backward of the learner's chunk(s) (``(x, y, n)``: one, or two halves when
        ``W`` is 1); every chunk's mean loss is weighted by ``W n / B`` (DDP averages over W)."""
        self._local = None
        loss_sum, local, first = None, 0.0, None
        for i, (x, y, n) in enumerate(chunks):
            loss = loss_fn(net(x), y) * (W * n / B)
            loss.backward()
            loss_sum = loss.detach() if loss_sum is None else loss_sum + loss.detach()
            if W == 1:  # the half's gradient is the growth of the accumulated one
                now = [p.grad.detach().clone() if p.grad is not None else None for p in params]
                part = now if first is None else [a - b if a is not None else None for a, b in zip(now, first)]
                local += _sqr(part) * B / n
                first = now
        if W > 1:
            local = (float(self._local) if self._local is not None else 0.0) * B / (W * W * chunks[0][2])
        return StepGradients(loss_sum, local, _sqr([p.grad for p in params]), W if W > 1 else len(chunks), B)

    @contextmanager
    def scaled_lr(self, opt, ts: dict, batch: int):
        """The optimizer's learning rates times the gain of ``batch`` while the step is taken."""
        factor = adaptive.gain(ts.get("gns"), self.base, batch)
        saved = [g.get("lr") for g in opt.param_groups]
        if factor != 1.0:
            for g in opt.param_groups:
                if "lr" in g:
                    g["lr"] = g["lr"] * factor
        try:
            yield factor
        finally:
            for g, lr in zip(opt.param_groups, saved):
                if lr is not None:
                    g["lr"] = lr

    @staticmethod
    def account(ts: dict, local_sum: float, total_sqr: float, chunks: int, batch: int) -> None:
        """Fold a finished step's summed measurements into the train state's statistics."""
        if chunks >= 2:
            ts["gns"] = adaptive.smoothed(ts.get("gns"), *adaptive.estimate(local_sum, total_sqr, chunks, batch))

    def report(self, ts: dict, batch: int) -> dict:
        """The adaptive fields of a step record and an epoch row."""
        gns = ts.get("gns")
        g = adaptive.gain(gns, self.base, batch)
        return {"batch_size": batch, "gain": g, "lr_factor": g,
                "statistical_efficiency": adaptive.efficiency(gns, self.base, batch),
                "noise_scale": adaptive.noise_scale(gns), "progress": self.progress(ts), "gns": gns}


def _sqr(tensors: list) -> float:
    total = None
    for t in tensors:
        if t is not None:
            s = t.detach().double().pow(2).sum()
            total = s if total is None else total + s
    return float(total) if total is not None else 0.0


def pieces(W: int, B: int) -> int:
    """Pieces of a learner's chunk: two halves for a lone learner (k = 2), else one."""
    return 2 if W == 1 and B >= 2 else 1
