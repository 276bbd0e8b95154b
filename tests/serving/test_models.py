"""Trained models: save_model in a real job, the registry (CLI), serving over HTTP."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

import nbrunner
from nbrunner.core.config import Settings
from nbrunner.core.errors import InvalidRequest, NotFound
from nbrunner.serving.registry import list_models, register_model, resolve
from nbrunner.serving.serve import make_server, serve_in_thread

from support import make_notebook, own_cluster, short_tmpdir, wait_for

TRAIN = '''
import torch
from torch import nn
from sklearn.datasets import load_digits
import nbrunner

X, y = load_digits(return_X_y=True)
X = torch.tensor(X / 16.0, dtype=torch.float32)
y = torch.tensor(y)


class DigitsMLP(nn.Module):  # defined only here: serving must not need this source
    def __init__(self, hidden):
        super().__init__()
        self.hidden = nn.Linear(64, hidden)
        self.out = nn.Linear(hidden, 10)

    def forward(self, x):
        return self.out(torch.relu(self.hidden(x)))


torch.manual_seed(0)
model = DigitsMLP(HIDDEN)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
for step in range(STEPS):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(X[:1500]), y[:1500])
    loss.backward()
    opt.step()
with torch.no_grad():
    accuracy = (model(X[1500:]).argmax(1) == y[1500:]).float().mean().item()
nbrunner.record("accuracy", accuracy)
print("saved to", nbrunner.save_model(model))
'''


def cli(*args: str, ws) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NBRUNNER_REDIS_URL", "NBRUNNER_STORAGE")}
    return subprocess.run([sys.executable, "-m", "nbrunner", *args, "--dir", str(ws)], capture_output=True, text=True,
                          env=env, timeout=120)


@pytest.fixture(scope="module")
def trained():
    """A real cluster, a job that trained a digits classifier and saved it, and one that saved nothing."""
    ws = short_tmpdir()
    make_notebook(ws / "train.ipynb", TRAIN, parameters="HIDDEN = 32\nSTEPS = 150")
    make_notebook(ws / "nomodel.ipynb", "print('no model here')")
    with own_cluster(ws, gpus=0, workers=2) as cluster:
        job = cluster.submit(ws / "train.ipynb")
        plain = cluster.submit(ws / "nomodel.ipynb")
        job.wait(120)
        plain.wait(60)
        assert job.record.status == "completed", job.record.error
        yield ws, job, plain


def digits():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return (X[1500:] / 16.0).tolist(), y[1500:].tolist()


def post(url: str, body: bytes, content_type="application/json"):
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def get(url: str):
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.status, json.loads(resp.read())


@pytest.mark.slow
def test_save_model_in_a_job(trained):
    ws, job, _ = trained
    model_dir = ws / "runs" / job.id / "model"
    assert {"model.pkl", "state_dict.pt", "meta.json"} <= {p.name for p in model_dir.iterdir()}
    meta = json.loads((model_dir / "meta.json").read_text())
    assert meta["framework"] == "pytorch" and meta["class_name"] == "DigitsMLP" and meta["job"] == job.id
    assert meta["input_shape"] == [None, 64] and meta["saved_at"]
    assert job.record.metrics["accuracy"] > 0.9


def test_save_model_outside_a_job(tmp_path):
    import torch

    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 2))
    with pytest.raises(ValueError, match="needs a path"):
        nbrunner.save_model(model)
    with pytest.raises(TypeError):
        nbrunner.save_model(object(), tmp_path / "x")
    d = nbrunner.save_model(model, tmp_path / "m")
    meta = json.loads((d / "meta.json").read_text())
    assert meta["input_shape"] is None and meta["job"] is None  # Flatten first: the shape is not known
    from nbrunner.serving.registry import load_model

    loaded = load_model(d)
    x = torch.randn(3, 4)
    assert torch.equal(loaded(x), model(x)) and not loaded.training


@pytest.mark.slow
def test_register_list_and_errors(trained):
    ws, job, plain = trained
    p = cli("model", "register", job.id, "digits", ws=ws)
    assert p.returncode == 0 and p.stdout.strip() == "digits:1", p.stderr
    p = cli("model", "register", job.id, "digits", ws=ws)
    assert p.stdout.strip() == "digits:2"
    p = cli("model", "list", "--json", ws=ws)
    listed = json.loads(p.stdout)["models"]
    assert [(m["name"], m["version"], m["job"]) for m in listed] == [("digits", 1, job.id), ("digits", 2, job.id)]
    assert all(set(m) == {"name", "version", "job", "created_at", "path"} for m in listed)
    assert (ws / ".nbrunner" / "models" / "digits" / "2" / "model.pkl").is_file()
    p = cli("model", "list", ws=ws)
    assert p.returncode == 0 and "digits" in p.stdout
    for args, words in [((plain.id, "other"), "has no saved model"), (("nosuchjob", "other"), "no job 'nosuchjob'"),
                        (("../etc", "other"), "no job"), ((job.id, "bad name!"), "invalid model name"),
                        ((job.id, "a:b"), "invalid model name")]:
        p = cli("model", "register", *args, ws=ws)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 1 and len(lines) == 1 and words in lines[0], p.stderr
    settings = Settings.load(ws)
    assert [m["version"] for m in list_models(settings) if m["name"] == "digits"] == [1, 2]
    assert resolve(settings, "digits")["version"] == 2 and resolve(settings, "digits:1")["version"] == 1
    with pytest.raises(NotFound, match="no version 7"):
        resolve(settings, "digits:7")
    with pytest.raises(InvalidRequest):
        resolve(settings, "digits:x")
    with pytest.raises(NotFound):
        register_model(settings, "zzzzzzzz", "digits")


@pytest.mark.slow
def test_serve_predicts_digits_and_survives_bad_requests(trained):
    ws, job, _ = trained
    settings = Settings.load(ws)
    if not list_models(settings):
        register_model(settings, job.id, "digits")
    server = make_server("digits:1", 0, ws)
    serve_in_thread(server)
    try:
        url = server.url
        assert get(url + "/health") == (200, {"status": "ok", "model": "digits:1"})
        X, y = digits()
        code, out = post(url + "/predict", json.dumps({"inputs": X}).encode())
        assert code == 200 and len(out["predictions"]) == len(y)
        accuracy = sum(int(p == t) for p, t in zip(out["predictions"], y)) / len(y)
        assert accuracy >= 0.9 and all(isinstance(p, int) for p in out["predictions"])
        code, out = post(url + "/predict", json.dumps({"inputs": X[:2], "raw": True}).encode())
        assert code == 200 and len(out["predictions"][0]) == 10
        bad = [b"{not json", b"[1, 2]", b'{"rows": [[1]]}', b'{"inputs": []}', b'{"inputs": 5}',
               json.dumps({"inputs": [[1.0] * 10]}).encode(),                       # wrong shape: the model raises
               json.dumps({"inputs": [["a"] * 64]}).encode(), json.dumps({"inputs": [[1] * 64, [1] * 3]}).encode(),
               json.dumps({"inputs": [[True] * 64]}).encode(), b'{"inputs": [[NaN]]}', b"\xff\xfe",
               json.dumps({"inputs": X[:1], "raw": "yes"}).encode()]
        for body in bad:
            code, out = post(url + "/predict", body)
            assert code == 400 and out["message"] and "\n" not in out["message"], (body[:40], code, out)
            assert get(url + "/health")[0] == 200
        code, out = post(url + "/predict", b"x" * (17 * 1024 * 1024))
        assert code == 400 and "larger than" in out["message"]
        code, out = post(url + "/nothing", b"{}")
        assert code == 404
        assert get(url + "/health")[0] == 200
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(NotFound):
        make_server("nosuchmodel", 0, ws)
    with pytest.raises(NotFound):
        make_server("digits:9", 0, ws)


@pytest.mark.slow
def test_serve_cli(trained):
    ws, job, _ = trained
    settings = Settings.load(ws)
    if not list_models(settings):
        register_model(settings, job.id, "digits")
    p = cli("serve", "nosuchmodel", ws=ws)
    assert p.returncode == 1 and "no model 'nosuchmodel'" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("NBRUNNER_REDIS_URL", "NBRUNNER_STORAGE")}
    proc = subprocess.Popen([sys.executable, "-m", "nbrunner", "serve", "digits", "--port", str(port), "--dir", str(ws)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        def health():
            try:
                return get(f"http://127.0.0.1:{port}/health")
            except OSError:
                return None

        code, data = wait_for(health, timeout=60, what="nbrunner serve")
        latest = max(m["version"] for m in list_models(settings) if m["name"] == "digits")
        assert code == 200 and data == {"status": "ok", "model": f"digits:{latest}"}
        X, y = digits()
        code, out = post(f"http://127.0.0.1:{port}/predict", json.dumps({"inputs": X[:20]}).encode())
        assert code == 200 and sum(int(p == t) for p, t in zip(out["predictions"], y[:20])) >= 17
    finally:
        proc.terminate()
        proc.wait(15)
    assert proc.returncode == 0, proc.stderr.read()
