"""A history that scales: pages of jobs (store, REST, CLI, Python), status indexes, retention."""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone

import pytest

import nbrunner
from nbrunner.control.submit import new_id
from nbrunner.core.config import KEEP_DAYS
from nbrunner.core.errors import InvalidRequest
from nbrunner.core.keys import FINISHED_AT, INDEXED, JOBS, job_key, status_index
from nbrunner.core.models import JobRecord

from support import make_notebook, own_cluster, short_tmpdir, wait_for

pytestmark = pytest.mark.slow

pytest_plugins = ["pytest_jupyter.jupyter_server"]


def iso(days_ago: float) -> str:
    when = datetime.now(timezone.utc) - timedelta(days=days_ago)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def finished(store, status: str = "completed", days_ago: float = 0.0, owner: str = "someone") -> JobRecord:
    """A finished job record written through the store (nothing runs)."""
    start, end = iso(days_ago + 0.01), iso(days_ago)
    rec = JobRecord(id=new_id(), name=f"old-{status}", notebook="hello.ipynb", status=status, owner=owner,
                    created_at=start, started_at=start, finished_at=end,
                    history=[{"status": "queued", "at": start}, {"status": "running", "at": start},
                             {"status": status, "at": end}])
    assert store.create(rec)
    return rec


def newest_first(store, key: str = JOBS) -> list[str]:
    return [i for i, _ in sorted(store.r.zrange(key, 0, -1, withscores=True), key=lambda x: (x[1], x[0]), reverse=True)]


def walk(store, size: int, status=None, between=None, oldest_first: bool = False) -> list[str]:
    seen, cursor = [], None
    while True:
        page, cursor = store.page(status, size, cursor, oldest_first=oldest_first)
        assert len(page) <= size
        seen += [r.id for r in page]
        if cursor is None:
            return seen
        if between:
            between()


@pytest.fixture(scope="module")
def ws():
    ws = short_tmpdir()
    make_notebook(ws / "hello.ipynb", "print('hello')")
    make_notebook(ws / "slow.ipynb", "import time\ntime.sleep(120)")
    os.environ["NBRUNNER_KEEP_DAYS"] = "1"  # the scheduler expires jobs that finished over a day ago
    try:
        with own_cluster(ws, gpus=0, workers=1):
            del os.environ["NBRUNNER_KEEP_DAYS"]
            yield ws
    finally:
        os.environ.pop("NBRUNNER_KEEP_DAYS", None)


@pytest.fixture(scope="module")
def cluster(ws):
    return nbrunner.connect(ws)


def test_pages_walk_every_job_once_newest_first(cluster):
    store = cluster.store
    made = [finished(store, ("completed", "failed", "cancelled")[i % 3]) for i in range(23)]
    tied = [finished(store) for _ in range(4)]  # the same creation time: ordered by id
    score = store.r.zscore(JOBS, tied[0].id)
    for rec in tied:
        store.r.zadd(JOBS, {rec.id: score})
        store.r.zadd(status_index("completed"), {rec.id: score})
    expected = newest_first(store)
    assert {r.id for r in made + tied} <= set(expected)
    for size in (1, 4, 7, 1000):
        assert walk(store, size) == expected
        assert walk(store, size, oldest_first=True) == expected[::-1]  # ties too, by id
    assert walk(store, 3, "completed", oldest_first=True) == newest_first(store, status_index("completed"))[::-1]
    assert store.page(limit=2, cursor=store.cursor_after(expected[5]))[0][0].id == expected[6]
    everything, cursor = store.page()
    assert [r.id for r in everything] == expected and cursor is None

    added = []  # jobs created while a client pages come before its cursor: nothing repeats, nothing is skipped
    assert walk(store, 5, between=lambda: added.append(finished(store).id)) == expected
    assert added and newest_first(store)[:len(added)] == added[::-1]


def test_status_pages_use_the_status_and_follow_changes(cluster):
    store = cluster.store
    for i in range(9):
        finished(store, "failed" if i % 3 == 0 else "completed")
    for status in ("completed", "failed", "cancelled"):
        ids = walk(store, 2, status)
        assert ids == newest_first(store, status_index(status))
        assert [r.id for r in store.all(status)] == ids[::-1]  # all() keeps its order: oldest first
        assert all(store.get(i).status == status for i in ids)
        assert set(ids) == {r.id for r in store.all() if r.status == status}
    job = cluster.submit(cluster.settings.workspace / "hello.ipynb")
    assert job.id in walk(store, 3, "queued") + walk(store, 3, "running")
    job.wait(120)
    assert job.record.status == "completed"
    assert job.id in walk(store, 3, "completed")
    assert job.id not in walk(store, 3, "queued") + walk(store, 3, "running")
    assert store.page("completed", 1)[0][0].id == job.id  # the newest completed
    assert store.r.zscore(FINISHED_AT, job.id) is not None


def test_filtered_pages_stop_after_a_bounded_scan_and_go_on_from_there(cluster, monkeypatch):
    import nbrunner.control.store as store_module

    store = cluster.store
    mine = [finished(store, owner="zoe").id for _ in range(3)]
    for _ in range(12):
        finished(store, owner="someone")
    mine.append(finished(store, owner="zoe").id)
    monkeypatch.setattr(store_module, "PAGE_SCAN_MAX", 5)
    seen, cursor, pages = [], None, 0
    while True:
        page, cursor = store.page(limit=2, cursor=cursor, where=lambda r: r.owner == "zoe")
        seen += [r.id for r in page]
        pages += 1
        if cursor is None:
            break
    assert seen == mine[::-1] and pages > 2  # some pages came back short, none lost a job


def test_records_of_an_older_version_are_indexed_once(cluster):
    store = cluster.store
    rec = JobRecord(id=new_id(), name="from-before", notebook="hello.ipynb", status="cancelled", finished_at=iso(0))
    store.r.set(job_key(rec.id), rec.to_json())  # as written before the status indexes
    store.r.zadd(JOBS, {rec.id: time.time()})
    assert rec.id not in walk(store, 50, "cancelled")
    store.r.delete(INDEXED)
    assert store.reindex() >= 1 and store.reindex() == 0  # the second time: nothing to do
    assert rec.id in walk(store, 50, "cancelled")


def test_bad_page_arguments_are_refused(cluster):
    store = cluster.store
    for limit in (0, -1, True, "5"):
        with pytest.raises(InvalidRequest, match="limit"):
            store.page(limit=limit)
    for cursor in ("", "zzz", "!!", base64.urlsafe_b64encode(b"nan abc").decode(), "x" * 300,
                   base64.urlsafe_b64encode(b"1.5 a/b").decode()):
        with pytest.raises(InvalidRequest, match="cursor"):
            store.page(cursor=cursor)
    with pytest.raises(InvalidRequest, match="status"):
        store.page("done")


def test_python_jobs_limit(cluster):
    for _ in range(3):
        finished(cluster.store)
    newest = newest_first(cluster.store)
    assert [j.id for j in cluster.jobs(limit=3)] == newest[:3][::-1]  # the newest 3, oldest first as jobs()
    assert [j.id for j in cluster.jobs()] == newest[::-1]
    assert [j.id for j in cluster.jobs("completed", limit=2)] == newest_first(cluster.store, status_index("completed"))[:2][::-1]
    assert [j.id for j in cluster.jobs(status="failed")] == newest_first(cluster.store, status_index("failed"))[::-1]


def run(*args: str, ws) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NBRUNNER_REDIS_URL", "NBRUNNER_WORKSPACE")}
    return subprocess.run([sys.executable, "-m", "nbrunner", *args, "--dir", str(ws)], capture_output=True,
                          text=True, env=env, timeout=120)


def test_cli_shows_the_newest_50_or_limit_or_all(cluster, ws):
    store = cluster.store
    while store.count() <= 60:
        finished(store)
    newest = newest_first(store)
    out = json.loads(run("jobs", "--json", ws=ws).stdout)
    assert [j["id"] for j in out["jobs"]] == newest[:50] and out["next"]
    out = json.loads(run("jobs", "--json", "--limit", "3", ws=ws).stdout)
    assert [j["id"] for j in out["jobs"]] == newest[:3] and out["next"]
    out = json.loads(run("jobs", "--json", "--all", ws=ws).stdout)
    assert [j["id"] for j in out["jobs"]] == newest and out["next"] is None
    out = json.loads(run("jobs", "--json", "--status", "failed", "--limit", "2", ws=ws).stdout)
    assert [j["id"] for j in out["jobs"]] == newest_first(store, status_index("failed"))[:2]
    table = run("jobs", ws=ws).stdout
    assert newest[0] in table and newest[49] in table and newest[50] not in table
    assert f"(the newest 50 of {len(newest)}; --all lists them all)" in " ".join(table.split()[-20:])
    for args, word in ((["--limit", "0"], "--limit"), (["--limit", "3", "--all"], "--all"), (["--limit", "x"], "--limit")):
        bad = run("jobs", *args, ws=ws)
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and word in bad.stderr, bad.stderr


def test_retention_removes_old_finished_jobs_and_their_directories(cluster):
    store, settings = cluster.store, cluster.settings
    running = cluster.submit(settings.workspace / "slow.ipynb")
    wait_for(lambda: running.refresh().status == "running", 120, what="the slow job to run")
    old = [finished(store, s, days_ago=3) for s in ("completed", "failed", "cancelled")]
    recent = finished(store, days_ago=0.5)
    for rec in old + [recent]:
        (settings.job_dir(rec.id)).mkdir(parents=True, exist_ok=True)
        (settings.job_dir(rec.id) / "output.ipynb").write_text("{}")
    store.r.zadd(FINISHED_AT, {running.id: time.time() - 5 * 86400})  # an out-of-date entry must not remove it
    wait_for(lambda: not any(store.find(r.id) for r in old), 60, what="the old jobs to expire")
    assert not any(settings.job_dir(r.id).exists() for r in old)
    assert not any(r.id in walk(store, 100, r.status) for r in old) and not any(r.id in store.ids() for r in old)
    assert store.find(recent.id) is not None and settings.job_dir(recent.id).exists()
    assert running.refresh().status == "running" and settings.job_dir(running.id).exists()
    assert store.r.zscore(FINISHED_AT, running.id) is None  # dropped; filed again when the job ends
    running.cancel()


def test_keep_days_setting():
    assert KEEP_DAYS.days({}) is None and KEEP_DAYS.days({"NBRUNNER_KEEP_DAYS": " "}) is None
    assert KEEP_DAYS.days({"NBRUNNER_KEEP_DAYS": "30"}) == 30 and KEEP_DAYS.days({"NBRUNNER_KEEP_DAYS": "0.5"}) == 0.5
    for bad in ("0", "-1", "soon", "nan", "inf"):
        with pytest.raises(InvalidRequest, match="NBRUNNER_KEEP_DAYS"):
            KEEP_DAYS.days({"NBRUNNER_KEEP_DAYS": bad})
    ws = short_tmpdir()
    env = {**{k: v for k, v in os.environ.items() if k != "NBRUNNER_REDIS_URL"}, "NBRUNNER_KEEP_DAYS": "soon"}
    p = subprocess.run([sys.executable, "-m", "nbrunner", "up", "--no-lab", "--dir", str(ws)], capture_output=True,
                       text=True, env=env, timeout=120)
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and "NBRUNNER_KEEP_DAYS" in p.stderr, p.stderr
    assert not (ws / ".nbrunner" / "redis.sock").exists()  # nothing was started


# ---- REST --------------------------------------------------------------------------


@pytest.fixture
def jp_root_dir(ws):
    return ws


@pytest.fixture
def api(jp_fetch):
    async def call(*path: str, **params):
        resp = await jp_fetch("nbrunner", "api", *path, method="GET", raise_error=False, params=params)
        return resp.code, json.loads(resp.body)

    return call


async def test_rest_pages(api, cluster):
    store = cluster.store
    for _ in range(3):
        finished(store, "failed")
    expected = newest_first(store)
    code, first = await api("jobs")
    assert code == 200 and set(first) == {"jobs", "next"}
    assert [j["id"] for j in first["jobs"]] == expected[:1000] and first["next"] is None
    seen, params = [], {"limit": "7"}
    while True:
        code, page = await api("jobs", **params)
        assert code == 200 and len(page["jobs"]) <= 7
        seen += [j["id"] for j in page["jobs"]]
        if page["next"] is None:
            break
        params = {"limit": "7", "cursor": page["next"]}
    assert seen == expected
    seen, params = [], {"limit": "2", "status": "failed"}
    while True:
        code, page = await api("jobs", **params)
        assert code == 200 and all(j["status"] == "failed" for j in page["jobs"])
        seen += [j["id"] for j in page["jobs"]]
        if page["next"] is None:
            break
        params = {**params, "cursor": page["next"]}
    assert seen == newest_first(store, status_index("failed"))


async def test_rest_bad_limit_or_cursor_is_400(api, cluster):
    store = cluster.store
    before = store.r.zcard(JOBS)
    for params, word in (({"limit": "0"}, "limit"), ({"limit": "x"}, "limit"), ({"limit": "-3"}, "limit"),
                         ({"limit": "10001"}, "limit"), ({"limit": "9" * 40}, "limit"), ({"cursor": "zzz"}, "cursor"),
                         ({"cursor": "%%"}, "cursor"), ({"cursor": "x" * 5000}, "cursor"),
                         ({"status": "done", "limit": "2"}, "status")):
        code, body = await api("jobs", **params)
        assert code == 400 and word in body["message"] and "\n" not in body["message"], (params, body)
    assert store.r.zcard(JOBS) == before
