"""Schedules through the REST API (real Jupyter server, real cluster, real clock)."""
from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest

from nbrunner.core.models import parse_time

from support import make_notebook, own_cluster, poll, short_tmpdir

pytestmark = pytest.mark.slow

pytest_plugins = ["pytest_jupyter.jupyter_server"]


@pytest.fixture(scope="module")
def root():
    ws = short_tmpdir()
    make_notebook(ws / "tick.ipynb", "print('tick', N)", parameters="N = 0")
    (ws / "notes.txt").write_text("not a notebook")
    with own_cluster(ws, gpus=0, workers=2):
        yield ws


@pytest.fixture
def jp_root_dir(root):
    return root


FIELDS = {"id", "name", "notebook", "parameters", "cron", "every", "timezone", "overlap", "paused", "next_run_at",
          "last_run_at", "created_at", "owner", "min_gpus", "max_gpus", "priority", "timeout"}


async def test_every_two_seconds_runs_as_jobs_then_delete(api):
    code, s = await api("POST", "schedules", body={"notebook": "tick.ipynb", "every": 2, "overlap": "queue",
                                                   "parameters": {"N": 7}, "name": "ticker"})
    assert code == 201, s
    assert FIELDS <= set(s)
    assert (s["every"], s["cron"], s["overlap"], s["paused"], s["timezone"]) == (2, None, "queue", False, "UTC")
    assert s["name"] == "ticker" and s["notebook"] == "tick.ipynb" and s["parameters"] == {"N": 7}
    assert s["owner"] and s["last_run_at"] is None
    gap = (parse_time(s["next_run_at"]) - parse_time(s["created_at"])).total_seconds()
    assert abs(gap - 2) < 0.01
    code, listed = await api("GET", "schedules")
    assert code == 200 and s["id"] in [x["id"] for x in listed["schedules"]]

    async def three_runs():
        code, got = await api("GET", "jobs", schedule=s["id"])
        assert code == 200
        return got["jobs"] if len(got["jobs"]) >= 3 else None

    runs = await poll(three_runs, 30, "three runs")
    assert all(j["schedule"] == s["id"] and j["parameters"] == {"N": 7} and j["name"] == "ticker" for j in runs)
    created = [parse_time(j["created_at"]) for j in runs]
    assert created == sorted(created, reverse=True)  # newest first
    gaps = [(a - b).total_seconds() for a, b in zip(created, created[1:])]
    assert all(1.0 < g < 3.5 for g in gaps), gaps
    code, fresh = await api("GET", "schedules", s["id"])
    assert code == 200 and fresh["last_run_at"] and fresh["next_run_at"] > fresh["last_run_at"]
    code, plain = await api("GET", "jobs")
    assert all(j["schedule"] in (None, s["id"]) for j in plain["jobs"])

    code, body = await api("DELETE", "schedules", s["id"])
    assert code == 204 and body is None
    code, err = await api("GET", "schedules", s["id"])
    assert code == 404 and "no schedule" in err["message"]
    _, left = await api("GET", "jobs", schedule=s["id"])
    count = len(left["jobs"])
    assert count >= 3  # the runs stay, as jobs
    await asyncio.sleep(4.5)  # two more periods: a live schedule would have fired twice
    _, after = await api("GET", "jobs", schedule=s["id"])
    assert len(after["jobs"]) == count
    code, err = await api("DELETE", "schedules", s["id"])
    assert code == 404


BAD = [
    ({"notebook": "tick.ipynb", "cron": "61 * * * *"}, "cron"),
    ({"notebook": "tick.ipynb", "cron": "* * * * * *"}, "5 fields"),
    ({"notebook": "tick.ipynb", "cron": "@sometimes"}, "cron alias"),
    ({"notebook": "tick.ipynb", "cron": "0 3 * * *", "every": 60}, "exactly one of cron and every"),
    ({"notebook": "tick.ipynb"}, "exactly one of cron and every"),
    ({"notebook": "tick.ipynb", "every": 0}, "every must be between 1"),
    ({"notebook": "tick.ipynb", "every": 1.5}, "whole number"),
    ({"notebook": "tick.ipynb", "every": "10"}, "whole number"),
    ({"notebook": "tick.ipynb", "every": 10, "timezone": "Mars/Olympus"}, "unknown timezone"),
    ({"notebook": "tick.ipynb", "every": 10, "timezone": "../../etc/passwd"}, "unknown timezone"),
    ({"notebook": "tick.ipynb", "every": 10, "overlap": "sometimes"}, "overlap must be"),
    ({"notebook": "tick.ipynb", "every": 10, "colour": "red"}, "unknown field 'colour'"),
    ({"notebook": "tick.ipynb", "every": 10, "paused": True}, "unknown field 'paused'"),
    ({"notebook": "tick.ipynb", "every": 10, "min_gpus": 3, "max_gpus": 1}, "min_gpus"),
    ({"notebook": "tick.ipynb", "every": 10, "priority": 0}, "priority"),
    ({"notebook": "tick.ipynb", "every": 10, "parameters": {"not valid": 1}}, "identifier"),
    ({"notebook": "missing.ipynb", "every": 10}, "notebook not found"),
    ({"notebook": "notes.txt", "every": 10}, "not a notebook"),
    ({"notebook": "../x.ipynb", "every": 10}, "inside the server root"),
    ({"every": 10}, "notebook"),
]


@pytest.mark.parametrize("body,message", BAD, ids=[m for _, m in BAD])
async def test_bad_schedules_are_refused_with_one_line(api, body, message):
    _, before = await api("GET", "schedules")
    code, err = await api("POST", "schedules", body=body)
    assert code == 400, err
    assert message in err["message"] and "\n" not in err["message"]
    _, after = await api("GET", "schedules")
    assert after == before


async def test_patch_edits_pauses_and_resumes(api):
    code, s = await api("POST", "schedules", body={"notebook": "tick.ipynb", "cron": "0 3 * * *",
                                                   "timezone": "Europe/Paris"})
    assert code == 201
    at = parse_time(s["next_run_at"])
    assert (at.hour, at.minute) in ((1, 0), (2, 0))  # 03:00 in Paris is 01:00 or 02:00 UTC
    code, p = await api("PATCH", "schedules", s["id"], body={"paused": True})
    assert code == 200 and p["paused"] is True and p["next_run_at"] is None
    code, r = await api("PATCH", "schedules", s["id"], body={"paused": False})
    assert code == 200 and r["paused"] is False and r["next_run_at"] == s["next_run_at"]
    code, e = await api("PATCH", "schedules", s["id"], body={"every": 3600, "parameters": {"N": 2},
                                                             "priority": 9000})
    assert code == 200, e
    assert (e["every"], e["cron"], e["parameters"], e["priority"]) == (3600, None, {"N": 2}, 9000)
    assert abs((parse_time(e["next_run_at"]) - datetime.now(timezone.utc)).total_seconds() - 3600) < 10
    code, c = await api("PATCH", "schedules", s["id"], body={"cron": "@hourly", "timezone": "UTC"})
    assert code == 200 and (c["cron"], c["every"]) == ("@hourly", None)
    at = parse_time(c["next_run_at"])
    assert (at.minute, at.second) == (0, 0)
    for body, message in (({"every": 0}, "every must be between 1"), ({"cron": "bad"}, "cron"),
                          ({"cron": "@daily", "every": 5}, "exactly one"), ({"timezone": "Nowhere"}, "timezone"),
                          ({"paused": "yes"}, "paused must be"), ({"owner": "eve"}, "unknown field 'owner'"),
                          ({"overlap": "maybe"}, "overlap"), ({"min_gpus": -1}, "min_gpus")):
        code, err = await api("PATCH", "schedules", s["id"], body=body)
        assert code == 400 and message in err["message"], (body, err)
        _, same = await api("GET", "schedules", s["id"])
        assert same == c
    code, err = await api("PATCH", "schedules", "nosuch1", body={"paused": True})
    assert code == 404
    code, _ = await api("DELETE", "schedules", s["id"])
    assert code == 204


async def test_jobs_endpoint_refuses_a_schedule_field(api):
    code, err = await api("POST", "jobs", body={"notebook": "tick.ipynb", "schedule": "abc"})
    assert code == 400 and "schedule" in err["message"]
    code, got = await api("GET", "jobs", schedule="nosuch1")
    assert code == 200 and got == {"jobs": [], "next": None}
