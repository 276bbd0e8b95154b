"""Pipelines through the REST API of the Jupyter server extension (real server, real cluster): a
pipeline file under the root (the Lab's "Run pipeline"), the record, cancel, rerun, one-line 400s
that make nothing, 404 and 409; its changes on the event stream and the push channel's feed."""
from __future__ import annotations

import pytest

from nbrunner.control.changes import ChangeFeed
from nbrunner.control.store import JobStore

from support import make_notebook, own_cluster, poll, short_tmpdir

pytestmark = pytest.mark.slow

pytest_plugins = ["pytest_jupyter.jupyter_server"]


@pytest.fixture(scope="module")
def cluster_and_root():
    ws = short_tmpdir()
    make_notebook(ws / "flow" / "one.ipynb", "import nbrunner\nnbrunner.record('v', [1, 2])")
    make_notebook(ws / "flow" / "two.ipynb", "import nbrunner\nassert v == [1, 2]\nnbrunner.record('n', len(v))",
                  parameters="v = []")
    make_notebook(ws / "slow.ipynb", "import time\ntime.sleep(300)")
    (ws / "flow" / "f.pipeline.yaml").write_text(
        "steps:\n  one: {notebook: one.ipynb}\n  two: {notebook: two.ipynb, needs: [one], "
        "parameters: {v: '{{ steps.one.outputs.v }}'}}\n")
    with own_cluster(ws, gpus=0, workers=2) as cluster:
        yield cluster, ws


@pytest.fixture
def jp_root_dir(cluster_and_root):
    return cluster_and_root[1]


async def finished(api, pid: str) -> dict:
    async def done():
        code, rec = await api("GET", "pipelines", pid)
        assert code == 200, rec
        return rec if rec["status"] in ("completed", "failed", "cancelled") else None
    return await poll(done, 180, f"pipeline {pid} to finish")


async def test_a_pipeline_file_under_the_root_runs_and_its_changes_are_pushed(api, cluster_and_root):
    cluster, _ = cluster_and_root
    feed = ChangeFeed(JobStore.from_url(cluster.settings.url))
    position = feed.position()
    code, rec = await api("POST", "pipelines", body={"file": "flow/f.pipeline.yaml"})
    assert code == 201, rec
    assert rec["name"] == "f" and rec["steps"]["two"]["waiting"]["code"] == "needs"
    assert rec["steps"]["one"]["notebook"] == "flow/one.ipynb"
    rec = await finished(api, rec["id"])
    assert rec["status"] == "completed" and rec["steps"]["two"]["outputs"] == {"n": 2}
    code, listed = await api("GET", "pipelines")
    assert code == 200 and listed["pipelines"][0]["id"] == rec["id"]
    _, changes = feed.read(position)
    mine = [c for c in changes if c.kind == "pipeline" and c.key == rec["id"]]
    assert mine and mine[-1].data["pipeline"]["status"] == "completed" and mine[-1].owner == rec["owner"]
    code, again = await api("DELETE", "pipelines", rec["id"])
    assert code == 409 and again["message"] == f"pipeline {rec['id']} is already completed"
    code, rerun = await api("POST", "pipelines", rec["id"], "rerun", body={"from": "two"})
    assert code == 201 and rerun["rerun_of"] == rec["id"] and rerun["steps"]["one"]["reused"]
    assert (await finished(api, rerun["id"]))["status"] == "completed"


async def test_cancel_and_the_refusals(api, cluster_and_root):
    code, rec = await api("POST", "pipelines", body={"steps": {"s": {"notebook": "slow.ipynb"},
                                                               "t": {"notebook": "slow.ipynb", "needs": ["s"]}}})
    assert code == 201, rec
    code, busy = await api("POST", "pipelines", rec["id"], "rerun", body={})
    assert code == 409 and "cancel it or wait for it to end" in busy["message"]
    code, cancelled = await api("DELETE", "pipelines", rec["id"])
    assert code == 200 and cancelled["status"] == "cancelled" and cancelled["steps"]["t"]["status"] == "skipped"
    code, before = await api("GET", "pipelines")
    for body, message in (
            ({"steps": {"a": {"notebook": "../x.ipynb"}}}, "notebook path must stay inside the server root"),
            ({"steps": {"a": {"notebook": "slow.ipynb", "needs": ["a"]}}}, "the steps' needs form a cycle: a -> a"),
            ({"file": "flow/f.pipeline.yaml", "steps": {}}, "unknown field 'steps'"),
            ({"file": "nope.pipeline.yaml"}, "pipeline file not found: "),
            ({"steps": {"a": {"notebook": "slow.ipynb", "timeout": -1}}}, "step 'a': timeout must be a positive")):
        code, answer = await api("POST", "pipelines", body=body)
        assert code == 400 and message in answer["message"] and "\n" not in answer["message"], (body, answer)
    assert (await api("GET", "pipelines"))[1] == before
    code, answer = await api("GET", "pipelines", "zzzz9999")
    assert code == 404 and answer["message"] == "no pipeline 'zzzz9999'"
    code, answer = await api("POST", "pipelines", rec["id"], "rerun", body={"from": "nope"})
    assert code == 400 and answer["message"] == f"pipeline {rec['id']} has no step 'nope'"
