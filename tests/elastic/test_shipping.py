"""User code defined in a script's ``__main__`` (and in a module that is not installed) is
shipped to learners by value; inside a job, checkpoints, metrics and the final model go to
``runs/<job-id>/``; the saved model loads in a process that has none of that source."""
from __future__ import annotations

import pytest

import json
import os
import subprocess
import sys
import textwrap

pytestmark = pytest.mark.slow

MODULE = textwrap.dedent("""
    from torch import nn

    class Body(nn.Module):
        def __init__(self, n_in, n_hidden):
            super().__init__()
            self.fc = nn.Linear(n_in, n_hidden)

        def forward(self, x):
            return nn.functional.relu(self.fc(x))
""")

SCRIPT = textwrap.dedent("""
    import json
    import numpy as np
    import torch
    from torch import nn

    import mymodels                      # next to this script, not installed anywhere
    from nbrunner.elastic import ElasticTrainer

    NPZ = {npz!r}

    class Head(nn.Module):               # defined in __main__
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(128, 10)

        def forward(self, x):
            return self.fc(x)

    def get_datasets():
        from torch.utils.data import TensorDataset
        d = np.load(NPZ)
        X, y = torch.from_numpy(d["X"]), torch.from_numpy(d["y"])
        return TensorDataset(X[:1500], y[:1500]), TensorDataset(X[1500:], y[1500:])

    def loss_fn(out, y):
        return nn.functional.cross_entropy(out, y)

    torch.manual_seed(0)
    model = nn.Sequential(mymodels.Body(64, 128), Head())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    trainer = ElasticTrainer(model, get_datasets, loss_fn, optimizer)
    h = trainer.train(epochs=8, effective_batch_size=32, max_gpus=2, seed=1)
    X = torch.from_numpy(np.load(NPZ)["X"][1500:]); y = np.load(NPZ)["y"][1500:]
    acc_here = float((trainer.model(X).argmax(1).numpy() == y).mean())
    print("RESULT", json.dumps({{"history": h.to_dict(), "acc_here": acc_here}}))
""")

LOAD = textwrap.dedent("""
    import json, sys
    import numpy as np, torch
    from nbrunner.elastic import load_model
    model = load_model(sys.argv[1])
    d = np.load(sys.argv[2])
    with torch.no_grad():
        pred = model(torch.from_numpy(d["X"][1500:])).argmax(1).numpy()
    print(json.dumps({"acc": float((pred == d["y"][1500:]).mean()), "training": model.training}))
""")


def test_main_defined_objects_job_dir_and_load_model(tmp_path, digits_npz):
    work = tmp_path / "nb"
    work.mkdir()
    (work / "mymodels.py").write_text(MODULE)
    (work / "train.py").write_text(SCRIPT.format(npz=digits_npz))
    job_dir = tmp_path / "runs" / "job123"
    job_dir.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NBRUNNER_")}
    env.update(NBRUNNER_JOB_ID="job123", NBRUNNER_JOB_DIR=str(job_dir))
    r = subprocess.run([sys.executable, "train.py"], cwd=work, env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout.split("RESULT ", 1)[1])
    hist = out["history"]
    assert hist["steps"] == 8 * (1500 // 32)
    assert all(e["world_sizes"] == [2] for e in hist["epochs"])   # default slots in a job: LocalSlots(max_gpus)
    assert hist["epochs"][-1]["val_accuracy"] >= 0.9
    assert abs(out["acc_here"] - hist["epochs"][-1]["val_accuracy"]) < 1e-9  # trainer.model = final weights

    # plain-text progress: one line per epoch, no carriage returns or widgets
    assert "\r" not in r.stdout
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("epoch ")]
    assert len(lines) == 8 and "val_accuracy" in lines[-1] and "100%" in lines[-1]

    # inside a job: checkpoints, metrics and the model under runs/<job-id>/
    assert sorted(p.name for p in (job_dir / "checkpoints").glob("ckpt-*.pt"))
    assert (job_dir / "model" / "model.pkl").exists() and (job_dir / "model" / "state_dict.pt").exists()
    metrics = [json.loads(ln) for ln in (job_dir / "metrics.jsonl").read_text().splitlines()]
    assert any("loss" in m and "samples_per_s" in m for m in metrics)
    epochs = [m for m in metrics if "val_accuracy" in m]
    assert [m["epoch"] for m in epochs] == list(range(1, 9))
    assert epochs[-1]["progress"] == 1.0

    # load the model in a process that has neither the script nor mymodels.py
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "load.py").write_text(LOAD)
    r2 = subprocess.run([sys.executable, "load.py", str(job_dir / "model"), digits_npz], cwd=elsewhere,
                        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
                        capture_output=True, text=True, timeout=120)
    assert r2.returncode == 0, r2.stderr
    loaded = json.loads(r2.stdout)
    assert loaded["acc"] == out["acc_here"] and loaded["training"] is False
