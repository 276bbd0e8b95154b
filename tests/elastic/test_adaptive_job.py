"""A batch-adapting ElasticTrainer job on a live cluster under the goodput policy: its batch,
gain and statistical efficiency reach the job's metrics, and its efficiency map the record the
allocator reads."""
from __future__ import annotations

import pytest

import nbrunner
from torch import nn

from nbrunner.core.placement import demand_of
from nbrunner.elastic.options import TrainOptions
from nbrunner.elastic.trainer import setup_of

from support import make_notebook, wait_for

pytestmark = pytest.mark.slow

TRAIN = '''import time
import torch
from torch import nn
from nbrunner.elastic import ElasticTrainer

def get_datasets():
    from sklearn.datasets import load_digits
    from torch.utils.data import TensorDataset
    X, y = load_digits(return_X_y=True)
    X = torch.tensor(X / 16.0, dtype=torch.float32)
    y = torch.tensor(y, dtype=torch.long)
    return TensorDataset(X[:1500], y[:1500]), TensorDataset(X[1500:], y[1500:])

class SlowLoss(nn.CrossEntropyLoss):
    def forward(self, out, y):
        if out.requires_grad:
            time.sleep(0.02)
        return super().forward(out, y)

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
trainer = ElasticTrainer(model, get_datasets, SlowLoss(), optimizer, adaptive_batch=True, max_batch=64)
history = trainer.train(epochs=EPOCHS, effective_batch_size=32, max_gpus=2, min_gpus=1, verbose=0)
print("batches", [e["batch_size"] for e in history.epochs])
'''


def test_an_adaptive_job_reports_its_batch_and_efficiency(workspace):
    make_notebook(workspace / "adaptive.ipynb", TRAIN, parameters="EPOCHS = 1")
    with nbrunner.setup_cluster(gpus=2, workers=1, workspace=workspace, policy="goodput") as cluster:
        job = cluster.submit("adaptive.ipynb", {"EPOCHS": 6}, min_gpus=1, max_gpus=2)
        rec = wait_for(lambda: (lambda r: r if r.efficiency and r.metrics.get("learners") == 2 else None)(
            job.refresh().record), 180, what="the job's efficiency map on 2 learners")
        assert rec.efficiency["1"] == 1.0 and 0 < rec.efficiency["2"] <= 1.0
        assert demand_of(rec)["efficiency"] == rec.efficiency  # what the goodput policy reads
        # and its kind's set-up: this model with this batch rule (nbrunner.core.kinds)
        model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
        assert rec.setup == setup_of(model, TrainOptions(effective_batch_size=32, adaptive_batch=True, max_batch=64))
        job.wait(300)
        assert job.record.status == "completed", job.record.error
        m = job.record.metrics
        assert m["batch_size"] == 64 and m["learners"] == 2  # 32 a learner, up to max_batch
        assert m["lr_factor"] == m["gain"] and 1.0 <= m["gain"] <= 2.0
        assert m["statistical_efficiency"] == pytest.approx(m["gain"] * 32 / 64)
        assert "efficiency" not in m  # the map is kept apart from the scalar metrics
        assert job.record.throughput.get("2", 0) > 0
        rows = job.metrics()
        assert any(r.get("batch_size") == 64 and isinstance(r.get("efficiency"), dict) for r in rows)
        epochs = [r for r in rows if "epoch" in r]
        assert len(epochs) == 6 and all(r["batch_size"] in (32, 64) for r in epochs)
