"""Shared small workload for the elastic tests: scikit-learn's digits, a small MLP/CNN.

Everything here is shipped to learner processes by value (this module is not installed),
exactly like code defined in a notebook would be."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch
from torch import nn


def write_digits(path: Path) -> Path:
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    np.savez(path, X=(X / 16.0).astype(np.float32), y=y.astype(np.int64))
    return path


def make_get_datasets(npz_path: str, image: bool = False, n_train: int = 1500):
    def get_datasets():
        from torch.utils.data import TensorDataset

        d = np.load(npz_path)
        X, y = torch.from_numpy(d["X"]), torch.from_numpy(d["y"])
        if image:
            X = X.reshape(-1, 1, 8, 8)
        return TensorDataset(X[:n_train], y[:n_train]), TensorDataset(X[n_train:], y[n_train:])

    return get_datasets


class SlowCrossEntropy(nn.Module):
    """Cross-entropy plus a fixed delay per call: stands in for a heavier model so that
    runs last long enough for resizes to happen, without changing any number."""

    def __init__(self, delay: float = 0.0):
        super().__init__()
        self.delay = delay

    def forward(self, out, y):
        if self.delay and out.requires_grad:
            time.sleep(self.delay)
        return nn.functional.cross_entropy(out, y)


def make_mlp(seed: int = 0, lr: float = 0.05):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    return model, torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)


def make_bn_cnn(seed: int = 0, lr: float = 0.05):
    torch.manual_seed(seed)
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.Flatten(), nn.Linear(8 * 64, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 10))
    return model, torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)


def max_abs_diff(a: dict, b: dict) -> float:
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)


EPOCHS = 6
BATCH = 32          # 1500 training samples -> 46 steps per epoch, 276 steps
DELAY = 0.004       # per training step, so that resizes happen well before the end


def train_digits(digits_npz, slots=None, max_gpus=None, delay=DELAY, make=make_mlp, image=False, **kw):
    from nbrunner.elastic import ElasticTrainer

    model, opt = make()
    trainer = ElasticTrainer(model, make_get_datasets(digits_npz, image=image), SlowCrossEntropy(delay), opt,
                             callbacks=kw.pop("callbacks", None))
    hist = trainer.train(epochs=kw.pop("epochs", EPOCHS), effective_batch_size=kw.pop("effective_batch_size", BATCH),
                         max_gpus=max_gpus, slots=slots, seed=0, verbose=kw.pop("verbose", 0), **kw)
    return {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}, hist, trainer
