"""Security model: Jupyter auth on every route, per-user jobs in multi-user mode, a private Redis,
no credentials in messages."""
from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest
from tornado.httpclient import HTTPClientError

from support import rest_api, server_fixtures, short_tmpdir

pytestmark = pytest.mark.slow

pytest_plugins = ["pytest_jupyter.jupyter_server"]


root, jp_root_dir, jp_server_config = server_fixtures({"hello.ipynb": "print('hi')"}, gpus=0, workers=1)


def as_user(jp_fetch, user):
    return rest_api(jp_fetch, headers={"Authorization": f"token user:{user}"})


async def test_users_see_and_change_only_their_own_jobs(jp_fetch):
    alice, bob, admin = (as_user(jp_fetch, u) for u in ("alice", "bob", "root-admin"))
    code, a = await alice("POST", "jobs", body={"notebook": "hello.ipynb", "name": "alice-job"})
    assert code == 201 and a["owner"] == "alice"
    code, b = await bob("POST", "jobs", body={"notebook": "hello.ipynb", "name": "bob-job",
                                                "min_gpus": 1, "max_gpus": 1})  # stays queued: no GPU here
    assert code == 201 and b["owner"] == "bob"
    _, seen = await alice("GET", "jobs")
    assert {j["owner"] for j in seen["jobs"]} == {"alice"}
    for method, path, body in (("GET", ("jobs", b["id"]), None), ("PATCH", ("jobs", b["id"]), {"priority": 1}),
                               ("DELETE", ("jobs", b["id"]), None), ("GET", ("jobs", b["id"], "log"), None),
                               ("GET", ("jobs", b["id"], "output"), None)):
        code, err = await alice(method, *path, body=body)
        assert code == 404 and "no job" in err["message"]
    _, everything = await admin("GET", "jobs")
    assert {"alice", "bob"} <= {j["owner"] for j in everything["jobs"]}
    code, changed = await admin("PATCH", "jobs", b["id"], body={"priority": 42})
    assert code == 200 and changed["priority"] == 42
    code, cancelled = await bob("DELETE", "jobs", b["id"])
    assert code == 200 and cancelled["status"] == "cancelled"
    _, timeline = await bob("GET", "cluster", "timeline")
    assert all(j["id"] != a["id"] for j in timeline["jobs"])


async def test_users_see_and_change_only_their_own_schedules(jp_fetch):
    alice, bob, admin = (as_user(jp_fetch, u) for u in ("alice", "bob", "root-admin"))
    code, a = await alice("POST", "schedules", body={"notebook": "hello.ipynb", "cron": "@daily"})
    assert code == 201 and a["owner"] == "alice"
    code, b = await bob("POST", "schedules", body={"notebook": "hello.ipynb", "cron": "@weekly"})
    assert code == 201 and b["owner"] == "bob"
    _, seen = await alice("GET", "schedules")
    assert [s["id"] for s in seen["schedules"]] == [a["id"]]
    for method, body in (("GET", None), ("PATCH", {"paused": True}), ("DELETE", None)):
        code, err = await alice(method, "schedules", b["id"], body=body)
        assert code == 404 and "no schedule" in err["message"]
    _, untouched = await bob("GET", "schedules", b["id"])
    assert untouched == b
    _, everything = await admin("GET", "schedules")
    assert {a["id"], b["id"]} <= {s["id"] for s in everything["schedules"]}
    code, paused = await admin("PATCH", "schedules", b["id"], body={"paused": True})
    assert code == 200 and paused["paused"] is True and paused["owner"] == "bob"
    for who, sid in ((alice, a["id"]), (bob, b["id"])):
        code, _ = await who("DELETE", "schedules", sid)
        assert code == 204


async def test_unauthenticated_requests_are_refused(jp_fetch):
    for path in (("jobs",), ("cluster",), ("jobs", "abc"), ("cluster", "timeline"), ("notebook-parameters",),
                 ("schedules",), ("schedules", "abc")):
        with pytest.raises(HTTPClientError) as info:
            await jp_fetch("nbrunner", "api", *path, headers={"Authorization": "token nobody-knows"})
        assert info.value.code in (401, 403)


def test_embedded_redis_listens_only_on_its_private_socket(root):
    state = root / ".nbrunner"
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o700
    sock = state / "redis.sock"
    assert stat.S_ISSOCK(os.stat(sock).st_mode) and stat.S_IMODE(os.stat(sock).st_mode) & 0o077 == 0
    conf = (state / "redis.conf").read_text()
    assert "port 0" in conf and "unixsocketperm 700" in conf


def test_credentials_never_appear_in_messages():
    ws = short_tmpdir()
    url = "redis://admin:s3cret-pw@127.0.0.1:1/0"
    p = subprocess.run([sys.executable, "-m", "nbrunner", "jobs", "--dir", str(ws)], capture_output=True, text=True,
                       env={**os.environ, "NBRUNNER_REDIS_URL": url})
    assert p.returncode == 2
    assert "s3cret-pw" not in p.stderr + p.stdout and "***" in p.stderr
    from nbrunner.core.config import redact

    assert redact(url) == "redis://admin:***@127.0.0.1:1/0"
    assert redact("unix:///tmp/x/redis.sock") == "unix:///tmp/x/redis.sock"


async def test_concurrent_submits_of_several_users_keep_each_owner(jp_fetch):
    """Single submits arriving together share a batch (server.submit_batch): each job is still its
    submitter's, and each submitter sees only their own."""
    import asyncio

    users = ["alice", "bob", "carol"] * 4
    answers = await asyncio.gather(*(as_user(jp_fetch, u)("POST", "jobs", body={"notebook": "hello.ipynb",
                                                                                 "name": f"{u}-{i}"})
                                     for i, u in enumerate(users)))
    assert [code for code, _ in answers] == [201] * len(users)
    assert [job["owner"] for _, job in answers] == users
    for user in ("alice", "bob", "carol"):
        _, seen = await as_user(jp_fetch, user)("GET", "jobs", limit="500")
        mine = {job["id"] for (_, job), u in zip(answers, users) if u == user}
        assert {j["owner"] for j in seen["jobs"]} == {user} and mine <= {j["id"] for j in seen["jobs"]}
