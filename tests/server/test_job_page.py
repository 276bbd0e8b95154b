"""The job page's backend through the REST API (real Jupyter server, real cluster): status history,
output.html at every end, metrics rows, downloads, rerun, purge, the OpenAPI document."""
from __future__ import annotations

import asyncio
import io
import json
import time
import zipfile

import pytest

import nbrunner

from support import make_notebook, own_cluster, rest_fetch, short_tmpdir, wait_status

pytestmark = pytest.mark.slow

pytest_plugins = ["pytest_jupyter.jupyter_server"]


@pytest.fixture(scope="module")
def root():
    ws = short_tmpdir()
    make_notebook(ws / "hello.ipynb", "import nbrunner\nfor i in range(3):\n    nbrunner.record('loss', 1.0 / (i + 1))",
                  "print('hello', NAME, TIMES)", parameters="NAME = 'world'\nTIMES = 3")
    make_notebook(ws / "boom.ipynb", "print('before the error')", "raise ValueError('kaboom')")
    make_notebook(ws / "slow.ipynb", "print('first cell done')", "import time\ntime.sleep(120)")
    with own_cluster(ws, gpus=2, workers=2):
        yield ws


@pytest.fixture
def jp_root_dir(root):
    return root


@pytest.fixture
def fetch(jp_fetch):
    """The raw response (status code, headers, body bytes) of an API call."""
    return rest_fetch(jp_fetch)


async def wait_file(path, text: str, timeout=60) -> str:
    """The file's text once it contains ``text``."""
    deadline = time.monotonic() + timeout
    while True:
        body = path.read_text() if path.exists() else ""
        if text in body:
            return body
        assert time.monotonic() < deadline, f"{path} never contained {text!r}"
        await asyncio.sleep(0.2)


def job_dir(root, job_id):
    return root / "runs" / job_id


def statuses(job: dict) -> list[str]:
    return [h["status"] for h in job["history"]]


def assert_html_at_final_status(root, job: dict, *texts: str) -> str:
    """output.html exists as soon as the final status is visible (written before it)."""
    path = job_dir(root, job["id"]) / "output.html"
    assert path.is_file(), f"no output.html for {job['status']} job {job['id']}"
    body = path.read_text()
    assert body.lstrip().lower().startswith("<!doctype html")
    for t in texts:
        assert t in body, t
    return body


async def test_completed_job_history_html_metrics_and_downloads(api, fetch, root):
    code, job = await api("POST", "jobs", body={"notebook": "hello.ipynb", "parameters": {"NAME": "page"}})
    assert code == 201 and statuses(job) == ["queued"] and job["history"][0]["at"] == job["created_at"]
    done = await wait_status(api, job["id"])
    assert done["status"] == "completed", done["error"]
    assert statuses(done) == ["queued", "running", "completed"]
    assert [h["at"] for h in done["history"]] == [done["created_at"], done["started_at"], done["finished_at"]]
    assert_html_at_final_status(root, done, "hello page 3")

    code, metrics = await api("GET", "jobs", job["id"], "metrics")
    assert code == 200 and [row["loss"] for row in metrics["metrics"]] == [1.0, 0.5, 1 / 3]
    with open(job_dir(root, job["id"]) / "metrics.jsonl", "a") as f:
        f.write("{not json\n[1, 2]\n" + json.dumps({"loss": 0.25}) + "\n")
    code, metrics = await api("GET", "jobs", job["id"], "metrics")
    assert code == 200 and [row["loss"] for row in metrics["metrics"]] == [1.0, 0.5, 1 / 3, 0.25]

    resp = await fetch("GET", "jobs", job["id"], "download", format="ipynb")
    assert resp.code == 200 and resp.headers["Content-Type"].startswith("application/x-ipynb+json")
    assert resp.headers["Content-Disposition"] == f'attachment; filename="hello-{job["id"]}.ipynb"'
    assert json.loads(resp.body)["nbformat"] == 4
    resp = await fetch("GET", "jobs", job["id"], "download", format="html")
    assert resp.code == 200 and resp.headers["Content-Type"].startswith("text/html")
    assert resp.headers["Content-Disposition"] == f'attachment; filename="hello-{job["id"]}.html"'
    assert b"hello page 3" in resp.body
    resp = await fetch("GET", "jobs", job["id"], "download", format="zip")
    assert resp.code == 200 and resp.headers["Content-Type"] == "application/zip"
    assert resp.headers["Content-Disposition"] == f'attachment; filename="hello-{job["id"]}.zip"'
    names = zipfile.ZipFile(io.BytesIO(resp.body)).namelist()
    for name in ("input.ipynb", "output.ipynb", "output.html", "job.json", "metrics.jsonl", "logs/driver.log"):
        assert name in names, names


async def test_failed_job_history_and_html(api, root):
    _, job = await api("POST", "jobs", body={"notebook": "boom.ipynb"})
    done = await wait_status(api, job["id"])
    assert done["status"] == "failed" and "kaboom" in done["error"]
    assert statuses(done) == ["queued", "running", "failed"]
    assert_html_at_final_status(root, done, "before the error", "kaboom")


async def test_cancelled_while_running_and_while_queued(api, root):
    _, job = await api("POST", "jobs", body={"notebook": "slow.ipynb"})
    await wait_status(api, job["id"], ("running",), 60)
    await wait_file(job_dir(root, job["id"]) / "output.ipynb", "first cell done")
    code, cancelled = await api("DELETE", "jobs", job["id"])
    assert code == 200 and cancelled["status"] == "cancelled"
    assert statuses(cancelled) == ["queued", "running", "cancelled"]
    assert_html_at_final_status(root, cancelled, "first cell done")

    # min 3 GPUs on a 2-slot cluster: it stays queued; its HTML is the input snapshot
    _, queued = await api("POST", "jobs", body={"notebook": "hello.ipynb", "min_gpus": 3, "max_gpus": 3})
    await asyncio.sleep(0.5)
    code, cancelled = await api("DELETE", "jobs", queued["id"])
    assert code == 200 and statuses(cancelled) == ["queued", "cancelled"]
    body = assert_html_at_final_status(root, cancelled, "hello")
    assert "hello world 3" not in body  # it never ran


async def test_rerun_merges_parameters_and_runs(api, root):
    _, first = await api("POST", "jobs", body={"notebook": "hello.ipynb", "parameters": {"NAME": "one"},
                                               "name": "greeter", "priority": 7000, "timeout": 300})
    await wait_status(api, first["id"])
    code, again = await api("POST", "jobs", first["id"], "rerun", body={"parameters": {"NAME": "two"}})
    assert code == 201 and again["id"] != first["id"]
    assert again["parameters"] == {"NAME": "two"} and again["name"] == "greeter"
    assert (again["priority"], again["timeout"], again["max_gpus"]) == (7000, 300.0, 0)
    assert again["owner"] == first["owner"] and again["notebook"] == first["notebook"]
    done = await wait_status(api, again["id"])
    assert done["status"] == "completed", done["error"]
    assert "hello two 3" in (job_dir(root, again["id"]) / "output.html").read_text()
    code, log = await api("GET", "jobs", again["id"], "log")
    assert "hello two 3" in log["text"]
    # the snapshot is what runs, not the notebook as it is now
    code, plain = await api("POST", "jobs", first["id"], "rerun")
    assert code == 201 and plain["parameters"] == {"NAME": "one"}
    await wait_status(api, plain["id"])


async def test_purge(api, root):
    _, slow = await api("POST", "jobs", body={"notebook": "slow.ipynb"})
    await wait_status(api, slow["id"], ("running",), 60)
    code, data = await api("DELETE", "jobs", slow["id"], purge="true")
    assert code == 409 and "running" in data["message"]
    assert job_dir(root, slow["id"]).is_dir()
    await api("DELETE", "jobs", slow["id"])

    _, job = await api("POST", "jobs", body={"notebook": "hello.ipynb"})
    await wait_status(api, job["id"])
    code, data = await api("DELETE", "jobs", job["id"], purge="true")
    assert code == 204 and data is None
    code, data = await api("GET", "jobs", job["id"])
    assert code == 404
    assert not job_dir(root, job["id"]).exists()
    _, listed = await api("GET", "jobs")
    assert job["id"] not in [j["id"] for j in listed["jobs"]]
    store = nbrunner.connect(root).store
    assert store.r.zscore("nbrunner:jobs", job["id"]) is None and not store.r.sismember("nbrunner:active", job["id"])
    assert not [k for k in store.r.keys(f"nbrunner:*{job['id']}*")]

    # the cancelled slow job can be purged once its worker has let it go
    deadline = time.monotonic() + 30
    while (code := (await api("DELETE", "jobs", slow["id"], purge="true"))[0]) == 409:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.2)
    assert code == 204 and not job_dir(root, slow["id"]).exists()


async def test_download_of_an_output_that_does_not_exist_yet(api, fetch):
    _, queued = await api("POST", "jobs", body={"notebook": "hello.ipynb", "min_gpus": 3, "max_gpus": 3})
    for fmt in ("ipynb", "html"):
        code, data = await api("GET", "jobs", queued["id"], "download", format=fmt)
        assert code == 404 and "yet" in data["message"]
    resp = await fetch("GET", "jobs", queued["id"], "download", format="zip")
    assert resp.code == 200 and "input.ipynb" in zipfile.ZipFile(io.BytesIO(resp.body)).namelist()
    code, metrics = await api("GET", "jobs", queued["id"], "metrics")
    assert code == 200 and metrics == {"metrics": []}
    await api("DELETE", "jobs", queued["id"])


async def test_openapi_document_is_served(api):
    code, doc = await api("GET", "openapi.json")
    assert code == 200 and doc["openapi"].startswith("3.")
    assert {"get", "post"} <= set(doc["paths"]["/jobs"]) and "post" in doc["paths"]["/jobs/{job_id}/rerun"]
    assert doc["servers"][0]["url"].endswith("/nbrunner/api")


BAD = [
    ("GET", ("jobs", "nosuchjob", "metrics"), {}, 404, "no job"),
    ("GET", ("jobs", "nosuchjob", "download"), {"params": {"format": "zip"}}, 404, "no job"),
    ("POST", ("jobs", "nosuchjob", "rerun"), {}, 404, "no job"),
    ("DELETE", ("jobs", "nosuchjob"), {"params": {"purge": "true"}}, 404, "no job"),
    ("GET", ("jobs", "{done}", "download"), {"params": {"format": "pdf"}}, 400, "format must be one of"),
    ("POST", ("jobs", "{done}", "rerun"), {"body": {"parameters": "NAME=x"}}, 400, "parameters must be"),
    ("POST", ("jobs", "{done}", "rerun"), {"body": {"parameters": {"not valid": 1}}}, 400, "identifier"),
    ("POST", ("jobs", "{done}", "rerun"), {"body": {"priority": 3}}, 400, "unknown field 'priority'"),
    ("POST", ("jobs", "{done}", "rerun"), {"raw": b"{nope"}, 400, "JSON"),
    ("DELETE", ("jobs", "{done}"), {"params": {"purge": "maybe"}}, 400, "purge must be"),
]


@pytest.fixture(scope="module")
def done_job(root):
    cluster = nbrunner.connect(root)
    return cluster.submit(root / "hello.ipynb").wait(90).id


@pytest.mark.parametrize("method, path, kw, code, words", BAD, ids=[f"{b[0]}-{b[1][-1]}-{b[4]}" for b in BAD])
async def test_bad_input_is_a_json_4xx_and_changes_nothing(api, root, done_job, method, path, kw, code, words):
    path = tuple(p.replace("{done}", done_job) for p in path)
    _, before = await api("GET", "jobs")
    got, data = await api(method, *path, body=kw.get("body"), raw=kw.get("raw"), **kw.get("params", {}))
    assert got == code and words in data["message"], (got, data)
    _, after = await api("GET", "jobs")
    assert [(j["id"], j["status"]) for j in after["jobs"]] == [(j["id"], j["status"]) for j in before["jobs"]]
    assert job_dir(root, done_job).is_dir()


async def test_the_new_routes_need_authentication(jp_fetch):
    from tornado.httpclient import HTTPClientError

    for method, path in (("GET", ("jobs", "abc", "metrics")), ("GET", ("jobs", "abc", "download")),
                         ("POST", ("jobs", "abc", "rerun")), ("DELETE", ("jobs", "abc")), ("GET", ("openapi.json",))):
        with pytest.raises(HTTPClientError) as info:
            await jp_fetch("nbrunner", "api", *path, method=method, body="{}" if method == "POST" else None,
                           params={"purge": "true"} if method == "DELETE" else None,
                           headers={"Authorization": "token wrong"})
        assert info.value.code in (401, 403), (method, path)
