"""What the soak's hub users submit (notebooks that complete, fail or time out, ElasticTrainer
jobs, sweeps, a schedule), and the hostile requests of one more user; every call is timed."""
from __future__ import annotations

import json
import random
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import nbformat

ELASTIC_EPOCHS = 4
KINDS = (("complete", 50), ("fail", 10), ("timeout", 8), ("elastic", 14), ("sweep", 6))

QUICK = "import time\ntime.sleep(S)\nprint('done', S)"
FAIL = "raise ValueError(f'soak failure {S}')"
HANG = "import time\ntime.sleep(600)"
ELASTIC = f'''import os, torch
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
model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
trainer = ElasticTrainer(model, get_datasets, nn.CrossEntropyLoss(), optimizer)
trainer.train(epochs={ELASTIC_EPOCHS}, effective_batch_size=64, max_gpus=MAX, min_gpus=1, checkpoint_every=1,
              timeout=20)
torch.save({{k: v.detach().clone() for k, v in trainer.model.state_dict().items()}},
           os.path.join(os.environ["NBRUNNER_JOB_DIR"], "final.pt"))
'''


def notebook(source: str, parameters: str) -> dict:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    p = nbformat.v4.new_code_cell(parameters)
    p.metadata["tags"] = ["parameters"]
    nb.cells = [p, nbformat.v4.new_code_cell(source)]
    return json.loads(nbformat.writes(nb))


NOTEBOOKS = {"complete": notebook(QUICK, "S = 0"), "fail": notebook(FAIL, "S = 0"),
             "timeout": notebook(HANG, "S = 0"), "elastic": notebook(ELASTIC, "MAX = 1"),
             "sweep": notebook(QUICK + "\nimport nbrunner\nnbrunner.record('score', S)", "S = 0")}


class Api:
    """HTTP calls to the service through the hub's proxy; every latency is kept (ms)."""

    def __init__(self, base: str):
        self.base = base
        self.latencies: list[float] = []
        self.lock = threading.Lock()

    def call(self, token: str, method: str, path: str, body: Any = None, raw: bytes | None = None,
             timeout: float = 60) -> tuple[int, Any]:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
        t = time.perf_counter()
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                status, payload = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, payload = exc.code, exc.read()
        except (urllib.error.URLError, OSError) as exc:
            status, payload = 0, str(exc).encode()
        with self.lock:
            self.latencies.append((time.perf_counter() - t) * 1000)
        try:
            return status, json.loads(payload) if payload else None
        except ValueError:
            return status, payload


def request_for(kind: str, rng: random.Random) -> tuple[str, dict]:
    """(route, body) of one submission of ``kind``."""
    if kind == "sweep":
        return "/sweeps", {"notebook": "sweep.ipynb", "content": NOTEBOOKS["sweep"],
                           "spec": {"parameters": {"S": [0, 1, 2]}, "max_parallel": 2, "objective": {"metric": "score", "mode": "max"}}}
    body: dict[str, Any] = {"notebook": f"{kind}.ipynb", "content": NOTEBOOKS[kind]}
    if kind == "complete":
        body["parameters"] = {"S": rng.choice([0, 0, 1, 2, 4])}
    elif kind == "fail":
        body["parameters"] = {"S": rng.randint(0, 99)}
    elif kind == "timeout":
        body["timeout"] = 6
    elif kind == "elastic":
        top = rng.randint(1, 3)
        body.update(parameters={"MAX": top}, min_gpus=1, max_gpus=top)
    return "/jobs", body


def submit(api: Api, token: str, kind: str, rng: random.Random, attempts: int = 120) -> tuple[int, Any]:
    """POST one submission; a connection refused or a 502/503 (the service or Redis being restarted)
    is tried again, as a user's client would.  A 5xx answer after the service accepted may leave a
    job behind: the caller finds those from the records (``orphaned_accepts``)."""
    route, body = request_for(kind, rng)
    for _ in range(attempts):
        status, payload = api.call(token, "POST", route, body)
        if status not in (0, 502, 503, 504):
            return status, payload
        time.sleep(1.0)
    return status, payload


HOSTILE = [
    ("POST", "/jobs", json.dumps({"notebook": "x.ipynb", "content": NOTEBOOKS["complete"], "parameters": {"S": 0}})
     .replace('"S": 0', '"S": ' + "9" * 5000).encode()),  # a 5,000-digit integer, as raw JSON
    ("POST", "/jobs", {"notebook": "../../../etc/passwd"}),
    ("POST", "/jobs", {"notebook": "x.ipynb", "content": NOTEBOOKS["complete"], "priority": 0}),
    ("POST", "/jobs", {"notebook": "x.ipynb", "content": NOTEBOOKS["complete"], "min_gpus": 3, "max_gpus": 1}),
    ("POST", "/jobs", {"notebook": "x.ipynb", "content": {"cells": "nope"}}),
    ("POST", "/jobs", {"notebook": "x.ipynb", "content": NOTEBOOKS["complete"], "parameters": [[[[[]]]]] * 50}),
    ("POST", "/sweeps", {"notebook": "x.ipynb", "content": NOTEBOOKS["sweep"], "spec": "{{{"}),
    ("POST", "/schedules", {"notebook": "x.ipynb", "content": NOTEBOOKS["complete"], "every": -5}),
    ("POST", "/jobs", b"{not json"),
    ("GET", "/jobs/../../etc", None),
]


def hostile_round(api: Api, token: str, rng: random.Random, victims: list[str]) -> list[str]:
    """One hostile request (and a try at another user's job); returns the problems seen: a 5xx, a
    request accepted that should not be, another user's job visible or changed."""
    problems = []
    method, path, body = rng.choice(HOSTILE)
    if isinstance(body, bytes):
        status, payload = api.call(token, method, path, raw=body)
    else:
        status, payload = api.call(token, method, path, body)
    if status not in (0, 502, 503, 504) and (status >= 500 or 200 <= status < 300):  # not the service restarting
        problems.append(f"{method} {path}: {status} {str(payload)[:120]}")
    if victims:
        victim = rng.choice(victims)
        for method, path, body in (("GET", f"/jobs/{victim}", None), ("DELETE", f"/jobs/{victim}", None),
                                   ("PATCH", f"/jobs/{victim}", {"priority": 9999})):
            status, payload = api.call(token, method, path, body)
            if status not in (404, 0, 502, 503):
                problems.append(f"{method} another user's job: {status} {str(payload)[:120]}")
    return problems


def write_log(path: Path | None, lock: threading.Lock, entry: dict) -> None:
    if path is None:
        return
    with lock, open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")
