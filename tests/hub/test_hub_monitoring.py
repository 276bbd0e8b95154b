"""Metrics and usage through nbrunner service: hub admins (and the --admin-group) read GET /metrics,
users get 403; each user's GET /usage (and `nbrunner usage` with their token) holds only their own
jobs, by account from their hub groups; admins see everyone's."""
from __future__ import annotations

import json

import pytest

from harness import request
from support import short_tmpdir, wait_for

from .test_hub_clients import nbrunner

pytestmark = pytest.mark.slow


def ran(svc, notebook: str) -> dict:
    code, job = svc("POST", "jobs", body={"notebook": notebook, "min_gpus": 1, "max_gpus": 1})
    assert code == 201, job
    return job


def test_metrics_for_admins_and_usage_for_each_user(hub, tokens, as_user):
    alice, bob, admin, dora = (as_user(u) for u in ("alice", "bob", "hubadmin", "dora"))
    jobs = {"alice": ran(alice, "hello.ipynb"), "bob": ran(bob, "hello.ipynb")}
    for user, job in jobs.items():
        svc = as_user(user)
        done = wait_for(lambda: (r := svc("GET", "jobs", job["id"])[1])["status"] in ("completed", "failed") and r,
                        180, 0.3, f"{user}'s job")
        assert done["status"] == "completed", done["error"]
        # its slot given back: its GPU timeline is closed
        wait_for(lambda: svc("GET", "usage", params="by=user")[1]["totals"].get(user), 60, 0.3, f"{user}'s usage")

    code, mine = alice("GET", "usage", params="by=user")
    assert code == 200 and set(mine["totals"]) == {"alice"}
    code, his = bob("GET", "usage", params="by=account&since=1d")
    assert code == 200 and set(his["totals"]) == {"vision"}  # bob is in the hub group vision
    code, accounts = alice("GET", "usage")
    assert code == 200 and set(accounts["totals"]) == {"ml"}
    for who in (admin, dora):
        code, everyone = who("GET", "usage", params="by=user")
        assert code == 200 and {"alice", "bob"} <= set(everyone["totals"])
        assert everyone["totals"]["alice"] >= mine["totals"]["alice"]
    code, err = alice("GET", "usage", params="since=forever")
    assert code == 400 and "since must be like" in err["message"]

    home = short_tmpdir("nbmu")
    cli = nbrunner(hub, tokens["alice"], home, "usage", "--by", "user", "--json")
    assert cli.returncode == 0, cli.stderr
    assert set(json.loads(cli.stdout)["totals"]) == {"alice"}

    for user in ("alice", "bob"):
        code, refused = as_user(user)("GET", "metrics")
        assert code == 403 and "only an admin" in refused["message"]
    for who in ("hubadmin", "dora"):
        status, text, headers = request("GET", f"{hub.service_api}/metrics", tokens[who])
        assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
        lines = text.decode().splitlines()
        assert "nbrunner_up 1.0" in lines and "nbrunner_gpus 2.0" in lines
        assert any(line.startswith('nbrunner_api_requests_total{code="403",method="GET",route="/metrics"}')
                   for line in lines)
        assert any(line.startswith('nbrunner_jobs_finished_total{account="vision",status="completed"}')
                   for line in lines)
