"""Helpers for tests: notebooks written from code, short-path temp dirs, polling with a deadline."""
from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Callable

import nbformat

REPO = Path(__file__).resolve().parents[1]


def make_notebook(path: Path, *cells: str, parameters: str | None = None) -> Path:
    """Write a notebook: an optional ``parameters`` cell, then one code cell per string."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    if parameters is not None:
        cell = nbformat.v4.new_code_cell(parameters)
        cell.metadata["tags"] = ["parameters"]
        nb.cells.append(cell)
    nb.cells += [nbformat.v4.new_code_cell(src) for src in cells]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def short_tmpdir(prefix: str = "nbr") -> Path:
    """A fresh directory with a short path (a unix socket path must stay under 108 bytes)."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp")).resolve()


def wait_for(condition: Callable[[], object], timeout: float = 30.0, interval: float = 0.1, what: str = "condition"):
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def released_timeline(job, timeout: float = 30.0) -> list[int]:
    """The GPU counts of an ended job's timeline, once its worker has written the final release
    (that point lands just after the job's final status)."""
    points = wait_for(lambda: (lambda p: p if p and p[-1] == 0 else None)([q["gpus"] for q in job.timeline()]),
                      timeout, what=f"job {job.id}'s release point")
    return points


def no_slot_ever_held_twice(r) -> int:
    """Replay the grant/release log: a slot is granted only while nobody holds it."""
    holder: dict[str, str] = {}
    from nbrunner.control import grants

    events = r.xrange(grants.SLOTLOG)
    for _id, e in events:
        if e["action"] == "grant":
            assert e["slot"] not in holder, f"slot {e['slot']} granted to {e['job']} while {holder[e['slot']]} holds it"
            holder[e["slot"]] = e["job"]
        else:
            assert holder.pop(e["slot"]) == e["job"]
    return len(events)


def elastic_digits_notebook(max_gpus: int, timeout: float) -> str:
    """Source of a cell that trains a small digits MLP with ElasticTrainer for ``EPOCHS`` epochs."""
    return f'''import torch
from torch import nn
from nbrunner.elastic import ElasticTrainer

def get_datasets():
    from sklearn.datasets import load_digits
    from torch.utils.data import TensorDataset
    X, y = load_digits(return_X_y=True)
    X = torch.tensor(X / 16.0, dtype=torch.float32)
    y = torch.tensor(y, dtype=torch.long)
    return TensorDataset(X[:1500], y[:1500]), TensorDataset(X[1500:], y[1500:])

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
history = ElasticTrainer(model, get_datasets, nn.CrossEntropyLoss(), optimizer).train(
    epochs=EPOCHS, effective_batch_size=32, max_gpus={max_gpus}, min_gpus=1, checkpoint_every=1, timeout={timeout})
print("final accuracy", history.epochs[-1]["val_accuracy"], "resumed from", history.resumed_from_step)
'''
