"""``POST /jobs`` with a list (real Jupyter server, real cluster): every job or none, the first bad
entry named in a one-line 400."""
from __future__ import annotations

import pytest

from support import make_notebook, own_cluster, short_tmpdir, wait_status

pytestmark = pytest.mark.slow

pytest_plugins = ["pytest_jupyter.jupyter_server"]

CLUSTER: dict = {}


@pytest.fixture(scope="module")
def root():
    ws = short_tmpdir()
    make_notebook(ws / "hello.ipynb", "print('hello', NAME)", parameters="NAME = 'world'")
    with own_cluster(ws, gpus=0, workers=2) as cluster:
        CLUSTER["it"] = cluster
        yield ws


@pytest.fixture
def jp_root_dir(root):
    return root


async def test_a_list_creates_every_job_in_order(api, root):
    body = [{"notebook": "hello.ipynb", "parameters": {"NAME": n}} for n in ("a", "b", "c")]
    code, got = await api("POST", "jobs", body=body)
    assert code == 201 and list(got) == ["jobs"], got
    assert [j["parameters"]["NAME"] for j in got["jobs"]] == ["a", "b", "c"]
    assert all(j["status"] == "queued" and j["notebook"] == "hello.ipynb" for j in got["jobs"])
    code, wrapped = await api("POST", "jobs", body={"jobs": [{"notebook": "hello.ipynb", "parameters": {"NAME": "d"}}]})
    assert code == 201 and [j["parameters"] for j in wrapped["jobs"]] == [{"NAME": "d"}]
    for job in got["jobs"] + wrapped["jobs"]:
        done = await wait_status(api, job["id"])
        assert done["status"] == "completed", done["error"]
        assert done == {**done, "id": job["id"], "parameters": job["parameters"]}
    code, listing = await api("GET", "jobs", limit="4")
    assert [j["id"] for j in listing["jobs"]] == [j["id"] for j in reversed(got["jobs"] + wrapped["jobs"])]


@pytest.mark.parametrize("entry, words", [
    ({"notebook": "nope.ipynb"}, "nope.ipynb"),
    ({"notebook": "../outside.ipynb"}, "inside the server root"),
    ({"notebook": "hello.ipynb", "sweep": "x"}, "unknown field 'sweep'"),
    ({"notebook": "hello.ipynb", "priority": 0}, "priority"),
    ("hello.ipynb", "JSON object"),
], ids=["missing", "outside", "sweep", "priority", "not-an-object"])
async def test_one_bad_entry_creates_nothing(api, root, entry, words):
    before = (set(CLUSTER['it'].store.ids()), sorted(p.name for p in (root / "runs").iterdir()))
    code, got = await api("POST", "jobs", body=[{"notebook": "hello.ipynb"}, entry])
    assert code == 400 and got["message"].startswith("jobs[1]: ") and words in got["message"], got
    assert "\n" not in got["message"]
    assert (set(CLUSTER['it'].store.ids()), sorted(p.name for p in (root / "runs").iterdir())) == before


async def test_bad_lists_are_refused(api, root):
    for body, words in (([], "non-empty list"), ({"jobs": "hello.ipynb"}, "must be a list"),
                        ({"jobs": [{"notebook": "hello.ipynb"}], "name": "x"}, "alone")):
        code, got = await api("POST", "jobs", body=body)
        assert code == 400 and words in got["message"], (body, got)


async def test_concurrent_single_submits_each_get_their_own_answer(api, root):
    """Single ``POST /jobs`` arriving together are stored in shared batches (server.submit_batch):
    every good one gets its own job, every bad one its own one-line 400, none affects another."""
    import asyncio

    bad = {3: ({"notebook": "nope.ipynb"}, "nope.ipynb"), 7: ({"notebook": "hello.ipynb", "priority": 0}, "priority"),
           8: ({"notebook": "hello.ipynb", "bogus": 1}, "bogus")}
    bodies = [bad[i][0] if i in bad else {"notebook": "hello.ipynb", "parameters": {"NAME": f"n{i}"}}
              for i in range(12)]
    before = set(CLUSTER["it"].store.ids())
    answers = await asyncio.gather(*(api("POST", "jobs", body=b) for b in bodies))
    for i, (code, got) in enumerate(answers):
        if i in bad:
            assert code == 400 and bad[i][1] in got["message"] and "\n" not in got["message"], (i, got)
        else:
            assert code == 201 and got["parameters"] == {"NAME": f"n{i}"} and got["status"] == "queued", (i, got)
    created = {got["id"] for code, got in answers if code == 201}
    assert len(created) == 9 and set(CLUSTER["it"].store.ids()) - before == created
    for job_id in created:
        assert (root / "runs" / job_id / "input.ipynb").exists()
        done = await wait_status(api, job_id)
        assert done["status"] == "completed", done["error"]
