"""The models REST routes (registry and model servers) against a real cluster and real `nbrunner serve` processes."""
from __future__ import annotations

import os
import socket

import pytest

from support import http, make_notebook, own_cluster, refused, short_tmpdir, wait_for

pytestmark = pytest.mark.slow

pytest_plugins = ["pytest_jupyter.jupyter_server"]

TRAIN = '''
import torch
from torch import nn
import nbrunner

torch.manual_seed(0)


class Tiny(nn.Module):  # defined only in the notebook
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)


model = Tiny()
with torch.no_grad():
    model.fc.weight.zero_()
    model.fc.bias.copy_(torch.tensor([0.0, 5.0, 1.0]))  # always class 1
print("saved to", nbrunner.save_model(model))
'''


@pytest.fixture(scope="module")
def trained():
    """A workspace whose cluster ran a job that saved a model and one that saved nothing."""
    ws = short_tmpdir()
    make_notebook(ws / "train.ipynb", TRAIN)
    make_notebook(ws / "plain.ipynb", "print('no model')")
    with own_cluster(ws, gpus=0, workers=2) as cluster:
        job = cluster.submit(ws / "train.ipynb")
        plain = cluster.submit(ws / "plain.ipynb")
        job.wait(120)
        plain.wait(60)
        assert job.record.status == "completed", job.record.error
        assert plain.record.status == "completed", plain.record.error
        yield ws, job.id, plain.id


@pytest.fixture
def jp_root_dir(trained):
    return trained[0]


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_register_list_and_bad_input(api, trained):
    _, job, plain = trained
    code, data = await api("GET", "models")
    assert code == 200
    assert job in data["jobs_with_model"] and plain not in data["jobs_with_model"]
    before = data["models"]

    bad = [
        ({"job": job}, 400, "missing field 'name'"),
        ({"name": "tiny"}, 400, "missing field 'job'"),
        ({"job": job, "name": "no spaces"}, 400, "invalid model name"),
        ({"job": job, "name": "../up"}, 400, "invalid model name"),
        ({"job": job, "name": 7}, 400, "missing field 'name'"),
        ({"job": job, "name": "tiny", "extra": 1}, 400, "unknown field 'extra'"),
        ({"job": plain, "name": "tiny"}, 400, "has no saved model"),
        ({"job": "nosuchjob", "name": "tiny"}, 404, "no job 'nosuchjob'"),
        ({"job": "../../etc", "name": "tiny"}, 404, "no job"),
    ]
    for body, status, words in bad:
        code, err = await api("POST", "models", body=body)
        assert code == status, (body, code, err)
        assert words in err["message"], (body, err)
    code, err = await api("POST", "models", body=[1])
    assert code == 400 and "JSON object" in err["message"]
    assert (await api("GET", "models"))[1]["models"] == before  # nothing registered

    code, first = await api("POST", "models", body={"job": job, "name": "tiny"})
    assert code == 201, first
    assert first["name"] == "tiny" and first["job"] == job and first["framework"] == "pytorch"
    assert first["class_name"] == "Tiny" and first["saved_at"] and first["input_shape"] == [None, 4]
    code, second = await api("POST", "models", body={"job": job, "name": "tiny"})
    assert code == 201 and second["version"] == first["version"] + 1
    code, data = await api("GET", "models")
    listed = [(m["name"], m["version"], m["job"]) for m in data["models"] if m["name"] == "tiny"]
    assert (first["name"], first["version"], job) in listed and ("tiny", second["version"], job) in listed
    assert all(m["framework"] == "pytorch" for m in data["models"] if m["name"] == "tiny")


async def test_serve_predict_and_stop(api, trained):
    _, job, _ = trained
    code, entry = await api("POST", "models", body={"job": job, "name": "served"})
    assert code == 201
    code, server = await api("POST", "models/serving", body={"model": "served:1"})
    assert code == 201, server
    assert server["name"] == "served" and server["version"] == 1 and server["model"] == "served:1"
    assert server["url"] == f"http://127.0.0.1:{server['port']}"
    assert http("GET", server["url"] + "/health") == (200, {"status": "ok", "model": "served:1"})
    assert http("POST", server["url"] + "/predict", {"inputs": [[1, 2, 3, 4], [0, 0, 0, 0]]}) == (
        200, {"predictions": [1, 1]})
    code, listed = await api("GET", "models/serving")
    assert code == 200 and [s["name"] for s in listed["servers"]] == ["served"]
    assert listed["servers"][0]["pid"] == server["pid"]

    code, err = await api("POST", "models/serving", body={"model": "served"})  # one server per name
    assert code == 409 and "already served" in err["message"]

    code, _ = await api("DELETE", "models/serving", "served")
    assert code == 204
    assert gone(server["pid"])
    assert refused(server["url"])
    assert (await api("GET", "models/serving"))[1]["servers"] == []
    code, err = await api("DELETE", "models/serving", "served")
    assert code == 404 and "not being served" in err["message"]


async def test_serving_bad_input(api, trained):
    _, job, _ = trained
    assert (await api("POST", "models", body={"job": job, "name": "ports"}))[0] == 201
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    taken = busy.getsockname()[1]
    try:
        bad = [
            ({}, 400, "missing field 'model'"),
            ({"model": "nosuch"}, 404, "no model 'nosuch'"),
            ({"model": "ports:9"}, 404, "has no version 9"),
            ({"model": "ports:x"}, 400, "positive integer"),
            ({"model": 5}, 400, "NAME or NAME:VERSION"),
            ({"model": "bad name"}, 400, "invalid model name"),
            ({"model": "ports", "port": "8080"}, 400, "port must be an integer"),
            ({"model": "ports", "port": 80}, 400, "port must be an integer"),
            ({"model": "ports", "port": 70000}, 400, "port must be an integer"),
            ({"model": "ports", "port": True}, 400, "port must be an integer"),
            ({"model": "ports", "host": "0.0.0.0"}, 400, "unknown field 'host'"),
            ({"model": "ports", "port": taken}, 409, f"port {taken} is already in use"),
        ]
        for body, status, words in bad:
            code, err = await api("POST", "models/serving", body=body)
            assert code == status, (body, code, err)
            assert words in err["message"], (body, err)
    finally:
        busy.close()
    assert (await api("GET", "models/serving"))[1]["servers"] == []  # nothing started
    code, err = await api("DELETE", "models/serving", "nosuch")
    assert code == 404
    code, err = await api("DELETE", "models/serving", "bad%20name")
    assert code == 400 and "invalid model name" in err["message"]


async def test_servers_stop_with_the_jupyter_server(api, trained, jp_serverapp):
    _, job, _ = trained
    assert (await api("POST", "models", body={"job": job, "name": "owned"}))[0] == 201
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    code, server = await api("POST", "models/serving", body={"model": "owned", "port": port})
    assert code == 201 and server["port"] == port
    assert http("GET", f"http://127.0.0.1:{port}/health")[0] == 200
    for app in jp_serverapp.extension_manager.extension_apps["nbrunner.server"]:
        await app.stop_extension()  # what the Jupyter server does when it stops
    wait_for(lambda: gone(server["pid"]), timeout=15, what="the model server to exit")
    assert refused(server["url"])


async def test_model_routes_need_authentication(jp_fetch):
    from tornado.httpclient import HTTPClientError

    for method, path in (("GET", ("models",)), ("POST", ("models",)), ("GET", ("models", "serving")),
                         ("POST", ("models", "serving")), ("DELETE", ("models", "serving", "x"))):
        with pytest.raises(HTTPClientError) as info:
            await jp_fetch("nbrunner", "api", *path, method=method, body="{}" if method == "POST" else None,
                           headers={"Authorization": "token wrong"})
        assert info.value.code in (401, 403), (method, path)


def test_a_model_server_dies_with_a_killed_jupyter_server(trained):
    """Even a SIGKILLed owner (no cleanup runs) takes its model servers with it."""
    import signal
    import subprocess
    import sys

    ws, job, _ = trained
    from nbrunner.core.config import Settings
    from nbrunner.serving.registry import register_model

    register_model(Settings.load(ws), job, "orphan")
    owner = subprocess.Popen([sys.executable, "-c", (
        "import asyncio, sys, time\n"
        "from nbrunner.core.config import Settings\n"
        "from nbrunner.server.model_servers import ModelServers\n"
        f"s = asyncio.run(ModelServers().start(Settings.load({str(ws)!r}), 'orphan'))\n"
        "print(s.process.pid, s.url, flush=True)\n"
        "time.sleep(300)\n")], stdout=subprocess.PIPE, text=True)
    try:
        pid, url = owner.stdout.readline().split()
        assert http("GET", url + "/health")[0] == 200
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
    wait_for(lambda: gone(int(pid)) or _zombie(int(pid)), timeout=15, what="the orphaned model server to exit")
    assert refused(url)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1].startswith("Z")
    except OSError:
        return True
