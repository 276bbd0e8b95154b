"""GET /metrics and GET /usage of the Jupyter server extension in multi-user mode: admins read the
metrics (others 403), each user reads their own usage, requests counted by route pattern."""
from __future__ import annotations

import pytest

from support import rest_api, rest_fetch, server_fixtures, wait_status

pytestmark = pytest.mark.slow

pytest_plugins = ["pytest_jupyter.jupyter_server"]


root, jp_root_dir, jp_server_config = server_fixtures({"quick.ipynb": "import time\ntime.sleep(1)"}, gpus=2, workers=1)


def header(user: str) -> dict:
    return {"Authorization": f"token user:{user}"}


def parse(text: str) -> dict[str, float]:
    """Prometheus text: {'name{labels}': value} of every sample."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, number = line.rpartition(" ")
            out[key] = float(number)
    return out


async def test_metrics_for_admins_and_usage_for_each_user(jp_fetch):
    alice, bob = rest_api(jp_fetch, header("alice")), rest_api(jp_fetch, header("bob"))
    admin_raw = rest_fetch(jp_fetch, header("root-admin"))
    jobs = {}
    for user, api in (("alice", alice), ("alice", alice), ("bob", bob)):
        code, job = await api("POST", "jobs", body={"notebook": "quick.ipynb", "min_gpus": 1, "max_gpus": 1})
        assert code == 201
        jobs[job["id"]] = user
    for job_id, user in jobs.items():
        assert (await wait_status(alice if user == "alice" else bob, job_id))["status"] == "completed"

    code, refused = await alice("GET", "metrics")
    assert code == 403 and "only an admin" in refused["message"]
    resp = await admin_raw("GET", "metrics")
    assert resp.code == 200 and resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    got = parse(resp.body.decode())
    assert got["nbrunner_up"] == 1 and got["nbrunner_gpus"] == 2
    assert got['nbrunner_jobs_finished_total{account="default",status="completed"}'] >= 3
    assert got['nbrunner_api_requests_total{code="201",method="POST",route="/jobs"}'] == 3
    assert got['nbrunner_api_requests_total{code="403",method="GET",route="/metrics"}'] == 1
    assert any(k.startswith('nbrunner_api_requests_total{code="200",method="GET",route="/jobs/{job_id}"}')
               for k in got)

    code, mine = await alice("GET", "usage", by="user")
    assert code == 200 and set(mine["totals"]) == {"alice"} and mine["totals"]["alice"] > 0
    assert {r["user"] for r in mine["rows"]} == {"alice"}
    code, everyone = await rest_api(jp_fetch, header("root-admin"))("GET", "usage", by="user", since="1d")
    assert code == 200 and set(everyone["totals"]) == {"alice", "bob"}
    assert everyone["totals"]["alice"] == pytest.approx(mine["totals"]["alice"], rel=0.01)
    code, by_account = await bob("GET", "usage")
    assert code == 200 and by_account["by"] == "account" and set(by_account["totals"]) == {"default"}
    for params, words in (({"by": "team"}, "by must be one of"), ({"since": "soon"}, "since must be like")):
        code, err = await bob("GET", "usage", **params)
        assert code == 400 and words in err["message"]
