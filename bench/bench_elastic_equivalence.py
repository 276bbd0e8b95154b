"""(d) Same trajectory whatever happens: max |parameter difference| against a 1-learner run.

Digits MLP (scikit-learn's load_digits, global batch 32, SGD momentum, 6 epochs = 276
steps): 2 learners; resized 2 -> 1 -> 2 mid-epoch; 2 learners with one SIGKILLed mid-run
(recovery from the in-memory snapshot).  CNN with BatchNorm, ``sync_batchnorm=True``:
1 vs 2 learners.  Goal: <= 1e-4 (float summation order only)."""
from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from bench_elastic_common import print_rows, tmpdir  # noqa: E402

EPOCHS, BATCH = 6, 32


def _digits_npz() -> str:
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    p = tmpdir() / "digits.npz"
    np.savez(p, X=(X / 16.0).astype(np.float32), y=y.astype(np.int64))
    return str(p)


def _get_datasets(npz, image=False):
    def get_datasets():
        from torch.utils.data import TensorDataset

        d = np.load(npz)
        X, y = torch.from_numpy(d["X"]), torch.from_numpy(d["y"])
        if image:
            X = X.reshape(-1, 1, 8, 8)
        return TensorDataset(X[:1500], y[:1500]), TensorDataset(X[1500:], y[1500:])

    return get_datasets


class _Loss(nn.Module):
    def __init__(self, delay=0.0):
        super().__init__()
        self.delay = delay

    def forward(self, out, y):
        if self.delay and out.requires_grad:
            time.sleep(self.delay)  # stands in for a heavier model: leaves time to resize
        return nn.functional.cross_entropy(out, y)


def _mlp():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    return m, torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)


def _bn_cnn():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(),
                      nn.Linear(8 * 64, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 10))
    return m, torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)


def _train(npz, make=_mlp, image=False, delay=0.0, callbacks=None, holder=None, epochs=EPOCHS, **kw):
    from nbrunner.elastic import ElasticTrainer

    model, opt = make()
    tr = ElasticTrainer(model, _get_datasets(npz, image), _Loss(delay), opt, callbacks=callbacks)
    if holder is not None:
        holder["trainer"] = tr
    h = tr.train(epochs=epochs, effective_batch_size=BATCH, seed=0, verbose=0, **kw)
    return {k: v.detach().clone() for k, v in tr.model.state_dict().items()}, h


def _diff(a, b, params_only=False):
    keys = [k for k in a if not (params_only and ("running" in k or "num_batches" in k))]
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in keys)


def run() -> list[dict]:
    from nbrunner.elastic import Callback, LocalSlots, ScriptedSlots

    npz = _digits_npz()
    ref, h_ref = _train(npz, max_gpus=1)
    two, h_two = _train(npz, max_gpus=2)
    resized, h_res = _train(npz, delay=0.004, slots=ScriptedSlots([(0, 2), (12, 1), (60, 2)]), max_gpus=2,
                            prestart=1)
    holder = {}

    class Killer(Callback):
        done = False

        def on_step(self, step, logs):
            if not self.done and step >= 40 and logs["learners"] == 2:
                pids = holder["trainer"].learner_pids()
                os.kill(pids[sorted(pids)[-1]], signal.SIGKILL)
                self.done = True

    killed, h_kill = _train(npz, delay=0.004, slots=LocalSlots(2), max_gpus=2, callbacks=[Killer()], holder=holder,
                            snapshot_every=5)
    bn1, _ = _train(npz, make=_bn_cnn, image=True, epochs=2, max_gpus=1, sync_batchnorm=True)
    bn2, _ = _train(npz, make=_bn_cnn, image=True, epochs=2, max_gpus=2, sync_batchnorm=True)
    print(f"resizes: {[(r['from'], r['to'], r['step']) for r in h_res.rescales]}; kill run: "
          f"{[(r['from'], r['to'], r['reason'], r.get('replayed_steps')) for r in h_kill.rescales]}", file=sys.stderr)
    tol = 1e-4
    rows = []
    for name, sd, h, po in (
        ("2 learners", two, h_two, False),
        (f"resized {'->'.join(str(x) for x in [2] + [r['to'] for r in h_res.rescales])} mid-epoch", resized, h_res,
         False),
        ("2 learners, one SIGKILLed mid-run", killed, h_kill, False),
        ("BatchNorm CNN, sync_batchnorm, 2 learners", bn2, None, True),
    ):
        d = _diff(sd, bn1 if po else ref, params_only=po)
        same_steps = h is None or h.steps == h_ref.steps
        rows.append({"benchmark": f"max abs param diff vs 1 learner: {name}", "value": d, "baseline": tol,
                     "ratio": d / tol, "goal": "<= 1e-4, same steps", "ok": d <= tol and same_steps})
    return rows


if __name__ == "__main__":
    print_rows(run())
