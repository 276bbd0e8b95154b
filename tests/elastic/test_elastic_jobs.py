"""ElasticTrainer inside jobs on real CPU slots: the allocator moves slots between jobs and the
learners follow at step boundaries, ending on the same parameters as a static run."""
from __future__ import annotations

import pytest

import json
import os

import papermill
import torch

import nbrunner

from support import make_notebook, no_slot_ever_held_twice, released_timeline, wait_for

pytestmark = pytest.mark.slow

SETUP = '''import json, os, time
import torch
from torch import nn
from nbrunner.elastic import ElasticTrainer

def get_datasets():
    from sklearn.datasets import load_digits
    from torch.utils.data import TensorDataset
    X, y = load_digits(return_X_y=True)
    X = torch.tensor(X / 16.0, dtype=torch.float32)
    y = torch.tensor(y, dtype=torch.long)
    perm = torch.randperm(len(X), generator=torch.Generator().manual_seed(0))
    return TensorDataset(X[perm[:1500]], y[perm[:1500]]), TensorDataset(X[perm[1500:]], y[perm[1500:]])

class GatedLoss(nn.CrossEntropyLoss):
    """Cross-entropy that takes DELAY seconds longer while the file GATE exists: the test
    holds a job's training open through each stage of the choreography, then lets it end."""
    def __init__(self, gate, delay):
        super().__init__()
        self.gate, self.delay = gate, delay

    def forward(self, out, y):
        if self.gate and os.path.exists(self.gate):
            time.sleep(self.delay)
        return super().forward(out, y)

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
'''
TRAIN = '''history = ElasticTrainer(model, get_datasets, GatedLoss(GATE, DELAY), optimizer).train(
    epochs=EPOCHS, effective_batch_size=BATCH, max_gpus=MAX_GPUS, min_gpus=1, verbose=VERBOSE)
torch.save({k: v.detach().clone() for k, v in model.state_dict().items()}, OUT + ".pt")
with open(OUT + ".json", "w") as f:
    json.dump({"steps": history.steps, "rescales": history.rescales, "epochs": history.epochs}, f)
'''
PARAMS = ("EPOCHS = 2\nBATCH = 64\nLR = 0.05\nHIDDEN = 32\nMAX_GPUS = 2\nOUT = 'result'\nVERBOSE = 1\n"
          "GATE = ''\nDELAY = 0.05")
HOLD = "import time, pathlib\nwhile not pathlib.Path(STOP).exists():\n    time.sleep(0.1)"


def result(ws, name):
    return json.loads((ws / f"{name}.json").read_text()), torch.load(ws / f"{name}.pt")


def ends_releasing(points: list[int], head: list[int]) -> bool:
    """The GPU timeline starts with ``head`` and then only falls to 0: at the end of training the
    learners exit, and their slots are released, one after another."""
    tail = points[len(head) - 1:]
    return points[:len(head)] == head and tail == sorted(tail, reverse=True) and tail[-1] == 0


def learners(job) -> int:
    return int(job.refresh().record.metrics.get("learners") or 0)


def progress(job) -> float:
    return job.refresh().record.progress or 0.0


def test_a_job_shrinks_for_a_newcomer_and_grows_back_matching_a_static_run(workspace):
    nb = make_notebook(workspace / "train.ipynb", SETUP, TRAIN, parameters=PARAMS)
    make_notebook(workspace / "hold.ipynb", HOLD, parameters="STOP = 'stop'")
    gate = workspace / "gate-a"
    gate.touch()
    params = {"EPOCHS": 40, "OUT": "elastic", "GATE": str(gate), "DELAY": 0.2}
    with nbrunner.setup_cluster(gpus=2, workers=2, workspace=workspace) as cluster:
        a = cluster.submit("train.ipynb", params, min_gpus=1, max_gpus=2)
        wait_for(lambda: a.refresh().record.status == "running" and learners(a) == 2, 120, what="A training on 2 learners")
        assert a.record.gpus == 2
        b = cluster.submit("hold.ipynb", {"STOP": "stop-b"}, min_gpus=1, max_gpus=1)
        wait_for(lambda: b.refresh().record.status == "running", 60, what="B to start once A released a slot")
        assert a.refresh().record.gpus == 1 and a.record.status == "running"
        wait_for(lambda: learners(a) == 1, 30, what="A training on 1 learner")
        at = progress(a)
        wait_for(lambda: progress(a) > at + 0.01, 60, what="A to keep training while B runs")
        (workspace / "stop-b").touch()
        b.wait(60)
        assert b.record.status == "completed", b.record.error
        wait_for(lambda: a.refresh().record.gpus == 2 and learners(a) == 2, 120, what="A to grow back to 2 learners")
        gate.unlink()  # let A finish
        a.wait(300)
        assert a.record.status == "completed", a.record.error
        points = released_timeline(a)
        assert ends_releasing(points, [2, 1, 2]), points
        assert no_slot_ever_held_twice(cluster.store.r) > 0
    history, elastic = result(workspace, "elastic")
    sizes = [(r["from"], r["to"]) for r in history["rescales"]]
    assert sizes == [(2, 1), (1, 2)], sizes
    assert all(r["pause_s"] >= 0 for r in history["rescales"])
    assert history["epochs"][-1]["val_accuracy"] >= 0.9
    # the same training, static on 2 local learners, outside any job
    env = {k: os.environ.pop(k) for k in ("NBRUNNER_WORKSPACE",) if k in os.environ}
    try:
        papermill.execute_notebook(str(nb), str(workspace / "static-out.ipynb"),
                                   parameters={**params, "OUT": "static", "GATE": ""},
                                   cwd=str(workspace), progress_bar=False)
    finally:
        os.environ.update(env)
    static_history, static = result(workspace, "static")
    assert history["steps"] == static_history["steps"] == 40 * (1500 // 64)
    diff = max((elastic[k] - static[k]).abs().max().item() for k in static)
    assert diff <= 1e-4, diff


def test_seeds_scenario_priorities_split_8_slots_3_5_then_the_second_grows_to_8(workspace):
    make_notebook(workspace / "train.ipynb", SETUP, TRAIN, parameters=PARAMS)
    gates = {name: workspace / f"gate-{name}" for name in ("first", "second")}
    for g in gates.values():
        g.touch()

    def params(name):  # a tiny model: what is tested is the choreography
        return {"EPOCHS": 60, "MAX_GPUS": 8, "HIDDEN": 8, "BATCH": 256, "OUT": name, "GATE": str(gates[name]),
                "DELAY": 1.0}

    # DESIGN's fairshare example (priorities 5000 and 10000: 3 and 5); goodput would size them by throughput
    with nbrunner.setup_cluster(gpus=8, workers=2, workspace=workspace, policy="fairshare") as cluster:
        first = cluster.submit("train.ipynb", params("first"), min_gpus=1, max_gpus=8, priority=5000)
        wait_for(lambda: first.refresh().record.gpus == 8 and first.record.status == "running", 120,
                 what="the first job on 8 slots")
        second = cluster.submit("train.ipynb", params("second"), min_gpus=1, max_gpus=8, priority=5000)
        wait_for(lambda: first.refresh().record.gpus == 4 and second.refresh().record.gpus == 4, 180, what="4/4")
        second.set_priority(10000)
        wait_for(lambda: first.refresh().record.gpus == 3 and second.refresh().record.gpus == 5, 180, what="3/5")
        wait_for(lambda: learners(first) == 3 and learners(second) == 5, 180, what="3 and 5 learners training")
        gates["first"].unlink()  # the first one finishes: the second grows to all 8
        first.wait(300)
        assert first.record.status == "completed", first.record.error
        wait_for(lambda: second.refresh().record.gpus == 8, 120, what="the second job on 8 slots")
        wait_for(lambda: learners(second) == 8, 180, what="8 learners training")
        gates["second"].unlink()
        second.wait(300)
        assert second.record.status == "completed", second.record.error
        points = released_timeline(first)
        assert ends_releasing(points, [8, 4, 3]), points
        grown = released_timeline(second)
        top = grown.index(8)
        # it only grew, through 4 (fair share) and 5 (its priority), up to 8; slots arrive one
        # learner at a time, so it may start below 4 (e.g. [3, 4, 5, 8])
        rising = grown[:top]
        assert {4, 5} <= set(rising) and rising == sorted(set(rising)), grown
        assert ends_releasing(grown[top:], [8]), grown
        assert no_slot_ever_held_twice(cluster.store.r) > 0
    for name in ("first", "second"):
        history, _ = result(workspace, name)
        assert history["steps"] == 60 * (1500 // 256)


def test_a_job_submitted_without_gpus_trains_on_one_local_cpu_learner(workspace):
    make_notebook(workspace / "train.ipynb", SETUP, TRAIN, parameters=PARAMS)
    with nbrunner.setup_cluster(gpus=2, workers=1, workspace=workspace) as cluster:
        job = cluster.submit("train.ipynb", {"OUT": "cpu"})  # max_gpus 0, the default
        job.wait(180)
        assert job.record.status == "completed", job.record.error
        assert all(p["gpus"] == 0 for p in job.timeline())
    history, _ = result(workspace, "cpu")
    assert history["steps"] == 2 * (1500 // 64)
    assert {w for e in history["epochs"] for w in e["world_sizes"]} == {1}
