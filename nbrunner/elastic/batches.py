"""Batches on a learner: which samples each step takes (:class:`StepBatches`), fetched from a
dataset, split into input and target, and moved to the learner's device."""
from __future__ import annotations

from typing import Iterator

import torch

from .protocol import epoch_permutation, split_bounds


def fetch(ds, idx: torch.Tensor):
    """The samples ``idx`` of ``ds`` as a collated batch."""
    from torch.utils.data import Subset, TensorDataset, default_collate

    if isinstance(ds, TensorDataset):
        return tuple(t[idx] for t in ds.tensors)
    if isinstance(ds, Subset) and isinstance(ds.dataset, TensorDataset):
        inner = torch.as_tensor(ds.indices)[idx]
        return tuple(t[inner] for t in ds.dataset.tensors)
    return default_collate([ds[i] for i in idx.tolist()])


def split_batch(batch):
    if isinstance(batch, (tuple, list)) and len(batch) == 2:
        return batch[0], batch[1]
    if isinstance(batch, dict) and {"x", "y"} <= set(batch):
        return batch["x"], batch["y"]
    raise TypeError("dataset items must be (input, target) pairs")


def to_device(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device, non_blocking=True)
    if isinstance(obj, (tuple, list)):
        return type(obj)(to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: to_device(v, device) for k, v in obj.items()}
    return obj


def batch_len(x) -> int:
    if isinstance(x, torch.Tensor):
        return int(x.shape[0])
    if isinstance(x, (tuple, list)):
        return batch_len(x[0])
    if isinstance(x, dict):
        return batch_len(next(iter(x.values())))
    return len(x)


class StepBatches:
    """The datasets of a run and the samples every step takes: step ``s`` of epoch ``e``
    consumes the next ``batch_size`` samples of the epoch's permutation (seeded by ``seed``
    and ``e``), of which learner ``rank`` of ``W`` takes the ``rank``-th contiguous chunk.
    An epoch is ``len(train) // batch_size`` steps.  The test set is split the same way
    for validation."""

    def __init__(self, train_ds, test_ds, batch_size: int, seed: int, epochs: int):
        self.train_ds, self.test_ds = train_ds, test_ds
        self.n_train = len(train_ds)
        self.n_test = len(test_ds) if test_ds is not None else 0
        self.batch_size = batch_size
        self.seed = seed
        self.steps_per_epoch = self.n_train // batch_size
        if self.steps_per_epoch < 1:
            raise ValueError(f"the training set has {self.n_train} samples, fewer than "
                             f"effective_batch_size={batch_size}")
        self.total = self.steps_per_epoch * epochs
        self._perm_epoch = -1
        self._perm = None

    def train_batch(self, step: int, W: int, rank: int, device) -> tuple:
        """``(x, y, share)``: learner ``rank``'s chunk of step ``step``'s global batch on
        ``device``, and ``W`` times the chunk's share of the global batch."""
        B = self.batch_size
        epoch, pos = divmod(step, self.steps_per_epoch)
        lo, hi = split_bounds(B, W, rank)
        x, y = self._samples(epoch, pos * B + lo, pos * B + hi, device)
        return x, y, (hi - lo) / B * W

    def chunks_at(self, epoch: int, start: int, B: int, W: int, rank: int, device, parts: int = 1) -> list[tuple]:
        """Learner ``rank``'s chunk of the ``B`` samples of epoch ``epoch``'s permutation from
        ``start`` on (a batch-adapting run's step), in ``parts`` contiguous pieces: ``(x, y, n)`` each."""
        lo, hi = split_bounds(B, W, rank)
        out = []
        for p in range(parts):
            a, b = split_bounds(hi - lo, parts, p)
            out.append((*self._samples(epoch, start + lo + a, start + lo + b, device), b - a))
        return out

    def _samples(self, epoch: int, start: int, stop: int, device) -> tuple:
        """``(x, y)`` of samples ``start:stop`` of epoch ``epoch``'s permutation, on ``device``."""
        if self._perm_epoch != epoch:
            self._perm = epoch_permutation(self.n_train, self.seed, epoch)
            self._perm_epoch = epoch
        x, y = split_batch(fetch(self.train_ds, self._perm[start:stop]))
        return to_device(x, device), to_device(y, device)

    def test_batches(self, W: int, rank: int, batch_size: int, device) -> Iterator[tuple]:
        """``(x, y)`` batches of learner ``rank``'s chunk of the test set, on ``device``."""
        lo, hi = split_bounds(self.n_test, W, rank)
        for b in range(lo, hi, batch_size):
            x, y = split_batch(fetch(self.test_ds, torch.arange(b, min(b + batch_size, hi))))
            yield to_device(x, device), to_device(y, device)
