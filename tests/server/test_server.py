"""The REST API (Jupyter server extension) against a real cluster, through jp_fetch."""
from __future__ import annotations

import asyncio
import os
import time

import pytest
from tornado.httpclient import HTTPClientError

from support import make_notebook, own_cluster, short_tmpdir, wait_status

pytestmark = pytest.mark.slow

pytest_plugins = ["pytest_jupyter.jupyter_server"]


@pytest.fixture(scope="module")
def root():
    ws = short_tmpdir()
    make_notebook(ws / "hello.ipynb", "print('hello', NAME, TIMES)",
                  parameters="NAME = 'world'  # who to greet\nTIMES = 3\nRATE = 0.5\nFLAG = True\nITEMS = [1, 2]")
    make_notebook(ws / "sub" / "slow.ipynb", "import time\ntime.sleep(60)")
    outside = short_tmpdir()
    make_notebook(outside / "secret.ipynb", "print('secret')")
    os.symlink(outside / "secret.ipynb", ws / "escape.ipynb")
    (ws / "notes.txt").write_text("not a notebook")
    with own_cluster(ws, gpus=2, workers=2):
        yield ws


@pytest.fixture
def jp_root_dir(root):
    return root


async def test_submit_run_and_browse(api):
    code, job = await api("POST", "jobs", body={"notebook": "hello.ipynb", "parameters": {"NAME": "REST"},
                                                "name": "from-rest", "priority": 7000})
    assert code == 201 and job["status"] == "queued" and job["name"] == "from-rest" and job["priority"] == 7000
    assert job["owner"]  # from the Jupyter identity
    done = await wait_status(api, job["id"])
    assert done["status"] == "completed", done["error"]
    code, listed = await api("GET", "jobs")
    assert code == 200 and job["id"] in [j["id"] for j in listed["jobs"]]
    code, listed = await api("GET", "jobs", status="completed")
    assert all(j["status"] == "completed" for j in listed["jobs"])
    code, log = await api("GET", "jobs", job["id"], "log")
    assert code == 200 and "hello REST 3" in log["text"] and log["offset"] == len(log["text"].encode())
    code, rest = await api("GET", "jobs", job["id"], "log", offset=str(log["offset"]))
    assert rest == {"text": "", "offset": log["offset"]}
    code, nb = await api("GET", "jobs", job["id"], "output")
    assert code == 200 and nb["nbformat"] == 4
    assert any("REST" in "".join(c["source"]) for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", []))
    code, conflict = await api("DELETE", "jobs", job["id"])
    assert code == 409 and "already completed" in conflict["message"]
    code, _ = await api("PATCH", "jobs", job["id"], body={"priority": 10})
    assert code == 409


async def test_priority_change_and_cancel_of_a_running_job(api):
    code, job = await api("POST", "jobs", body={"notebook": "sub/slow.ipynb"})
    assert code == 201
    await wait_status(api, job["id"], ("running",), 60)
    code, changed = await api("PATCH", "jobs", job["id"], body={"priority": 9999})
    assert code == 200 and changed["priority"] == 9999
    code, cancelled = await api("DELETE", "jobs", job["id"])
    assert code == 200 and cancelled["status"] == "cancelled"


async def test_cluster_timeline_and_parameters(api):
    code, status = await api("GET", "cluster")
    assert code == 200 and status["gpus_total"] == 2 and status["policy"] == "goodput"
    assert [s["index"] for s in status["hosts"][0]["slots"]] == [0, 1]
    code, job = await api("POST", "jobs", body={"notebook": "hello.ipynb", "max_gpus": 2})
    await wait_status(api, job["id"])
    # The worker writes the release point just after the job's final status: wait for it (bounded).
    deadline = time.monotonic() + 30
    while True:
        code, timeline = await api("GET", "cluster", "timeline")
        mine = [j for j in timeline["jobs"] if j["id"] == job["id"]][0]
        gpus = [p["gpus"] for p in mine["points"]]
        if gpus[-1:] == [0] or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    assert gpus == [2, 0]
    code, params = await api("GET", "notebook-parameters", path="hello.ipynb")
    assert code == 200
    assert params["parameters"] == [
        {"name": "NAME", "value": "world", "type": "str", "help": "who to greet"},
        {"name": "TIMES", "value": 3, "type": "int", "help": ""},
        {"name": "RATE", "value": 0.5, "type": "float", "help": ""},
        {"name": "FLAG", "value": True, "type": "bool", "help": ""},
        {"name": "ITEMS", "value": [1, 2], "type": "list", "help": ""},
    ]


BAD = [
    ("POST", ("jobs",), {"raw": b"{not json"}, 400, "not valid JSON"),
    ("POST", ("jobs",), {"raw": b"[1, 2]"}, 400, "JSON object"),
    ("POST", ("jobs",), {"body": {"notebook": "../etc/passwd"}}, 400, "inside the server root"),
    ("POST", ("jobs",), {"body": {"notebook": "/etc/passwd"}}, 400, "inside the server root"),
    ("POST", ("jobs",), {"body": {"notebook": "escape.ipynb"}}, 400, "outside the workspace"),
    ("POST", ("jobs",), {"body": {"notebook": "notes.txt"}}, 400, "not a notebook"),
    ("POST", ("jobs",), {"body": {"notebook": "missing.ipynb"}}, 400, "not found"),
    ("POST", ("jobs",), {"body": {"notebook": "hello.ipynb", "min_gpus": 2, "max_gpus": 1}}, 400, "greater than"),
    ("POST", ("jobs",), {"body": {"notebook": "hello.ipynb", "priority": 0}}, 400, "priority"),
    ("POST", ("jobs",), {"body": {"notebook": "hello.ipynb", "parameters": "x=1"}}, 400, "parameters"),
    ("POST", ("jobs",), {"body": {"notebook": "hello.ipynb", "max_gpus": "two"}}, 400, "max_gpus"),
    ("POST", ("jobs",), {"body": {"notebook": 5}}, 400, "notebook"),
    ("POST", ("jobs",), {"body": {"notebook": "hello.ipynb", "sweep": "x"}}, 400, "sweep"),
    ("POST", ("jobs",), {"raw": b" " * (1024 * 1024 + 1)}, 400, "larger than"),
    ("GET", ("jobs",), {"params": {"status": "done"}}, 400, "status must be one of"),
    ("GET", ("jobs", "nosuchjob"), {}, 404, "no job"),
    ("PATCH", ("jobs", "nosuchjob"), {"body": {"priority": 3}}, 404, "no job"),
    ("DELETE", ("jobs", "nosuchjob"), {}, 404, "no job"),
    ("GET", ("jobs", "nosuchjob", "log"), {}, 404, "no job"),
    ("GET", ("jobs", "nosuchjob", "output"), {}, 404, "no job"),
    ("GET", ("notebook-parameters",), {"params": {"path": "../x.ipynb"}}, 400, "inside the server root"),
    ("GET", ("notebook-parameters",), {"params": {"path": "notes.txt"}}, 400, "not a notebook"),
]


@pytest.mark.parametrize("method, path, kw, code, words", BAD, ids=[f"{b[0]}-{b[4]}" for b in BAD])
async def test_bad_input_gets_a_json_4xx_and_changes_nothing(api, method, path, kw, code, words):
    _, before = await api("GET", "jobs")
    params = kw.get("params", {})
    got, data = await api(method, *path, body=kw.get("body"), raw=kw.get("raw"), **params)
    assert got == code and words in data["message"], (got, data)
    _, after = await api("GET", "jobs")
    assert len(after["jobs"]) == len(before["jobs"])


async def test_patch_validation(api):
    _, job = await api("POST", "jobs", body={"notebook": "hello.ipynb"})
    for body, words in [({"priority": 0}, "between"), ({"priority": "high"}, "integer"), ({"name": "x"}, "priority")]:
        code, data = await api("PATCH", "jobs", job["id"], body=body)
        assert code == 400 and words in data["message"]
    code, data = await api("GET", "jobs", job["id"], "log", offset="-3")
    assert code == 400 and "offset" in data["message"]


async def test_every_route_needs_authentication(jp_fetch, jp_serverapp):
    for path in (("jobs",), ("jobs", "abc"), ("cluster",), ("cluster", "timeline"), ("jobs", "abc", "log")):
        with pytest.raises(HTTPClientError) as info:
            await jp_fetch("nbrunner", "api", *path, headers={"Authorization": "token wrong"})
        assert info.value.code in (401, 403)


async def test_the_servers_own_user_reads_the_metrics_and_the_usage(jp_fetch, api):
    """Not multi-user: the server's user is the admin of their own cluster (as for every route)."""
    from support import rest_fetch

    resp = await rest_fetch(jp_fetch)("GET", "metrics")
    assert resp.code == 200 and resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    lines = resp.body.decode().splitlines()
    assert "nbrunner_up 1.0" in lines and "nbrunner_gpus 2.0" in lines
    code, usage = await api("GET", "usage", by="user", since="1d")
    assert code == 200 and usage["by"] == "user" and isinstance(usage["rows"], list)
