"""Owners hold through nbrunner service: alice's job, sweep, schedule and model server answer 404
to bob on every route and stay as they were; bob's listings never show them; hub admins and
members of the --admin-group see and cancel everyone's jobs; schedules fire as their owner; owner
and groups on every record are the hub's."""
from __future__ import annotations

import os

import pytest

from support import wait_for

pytestmark = pytest.mark.slow

SPEC = {"parameters": {"N": [1, 2]}, "objective": {"metric": "accuracy", "mode": "max"}}

FINAL = ("completed", "failed", "cancelled")


def finished(svc, job_id: str, timeout: float = 180) -> dict:
    def done():
        code, job = svc("GET", "jobs", job_id)
        assert code == 200, job
        return job if job["status"] in FINAL else None
    return wait_for(done, timeout, interval=0.3, what=f"job {job_id} to finish")


@pytest.fixture(scope="module")
def alices(as_user, hub_cluster):
    """What alice made through the service: a finished job that saved a model (registered and
    served), a running job holding a slot, a paused schedule with runs, a finished sweep."""
    alice = as_user("alice")
    code, running = alice("POST", "jobs", body={"notebook": "wait.ipynb", "min_gpus": 1, "max_gpus": 1})
    assert code == 201, running
    code, trained = alice("POST", "jobs", body={"notebook": "train.ipynb"})
    assert code == 201, trained
    code, schedule = alice("POST", "schedules", body={"notebook": "hello.ipynb", "every": 1})
    assert code == 201, schedule
    wait_for(lambda: alice("GET", "jobs", params=f"schedule={schedule['id']}")[1]["jobs"], 120, what="a run")
    code, schedule = alice("PATCH", "schedules", schedule["id"], body={"paused": True})
    assert code == 200 and schedule["paused"]
    code, sweep = alice("POST", "sweeps", body={"notebook": "hello.ipynb", "spec": SPEC})
    assert code == 201, sweep
    trained = finished(alice, trained["id"])
    assert trained["status"] == "completed", trained["error"]
    code, model = alice("POST", "models", body={"job": trained["id"], "name": "tiny"})
    assert code == 201, model
    code, server = alice("POST", "models/serving", body={"model": "tiny"})
    assert code == 201, server
    for job in sweep["jobs"]:
        finished(alice, job["id"])
    wait_for(lambda: alice("GET", "jobs", running["id"])[1]["status"] == "running", 120, what="the slot job to run")
    yield {"job": trained, "running": running, "schedule": schedule, "sweep": sweep, "server": server,
           "runs": alice("GET", "jobs", params=f"schedule={schedule['id']}")[1]["jobs"]}
    alice("DELETE", "models/serving", "tiny")
    alice("DELETE", "jobs", running["id"])


def test_alices_job_is_not_found_by_bob_on_any_route_and_stays_as_it_was(as_user, alices, hub_cluster):
    bob, job_id = as_user("bob"), alices["job"]["id"]
    before, count = hub_cluster.store.get(job_id), len(hub_cluster.store.ids())
    calls = [("GET", ("jobs", job_id), None, ""), ("GET", ("jobs", job_id, "log"), None, ""),
             ("GET", ("jobs", job_id, "output"), None, ""), ("GET", ("jobs", job_id, "metrics"), None, ""),
             *[("GET", ("jobs", job_id, "download"), None, f"format={f}") for f in ("ipynb", "html", "zip")],
             ("PATCH", ("jobs", job_id), {"priority": 9999}, ""), ("DELETE", ("jobs", job_id), None, ""),
             ("DELETE", ("jobs", job_id), None, "purge=true"), ("POST", ("jobs", job_id, "rerun"), None, ""),
             ("POST", ("models",), {"job": job_id, "name": "stolen"}, "")]
    for method, path, body, params in calls:
        code, err = bob(method, *path, body=body, params=params)
        assert code == 404 and err == {"message": f"no job {job_id!r}"}, (method, path, params, code, err)
    assert hub_cluster.store.get(job_id) == before and len(hub_cluster.store.ids()) == count
    assert (hub_cluster.settings.job_dir(job_id) / "output.ipynb").is_file()
    code, metrics = as_user("alice")("GET", "jobs", job_id, "metrics")  # what bob was refused exists
    assert code == 200 and metrics["metrics"][0]["accuracy"] == 0.5


def test_bobs_listings_never_show_alices_things(as_user, alices):
    bob = as_user("bob")
    code, mine = bob("POST", "jobs", body={"notebook": "hello.ipynb"})
    assert code == 201
    alice_ids = {alices["job"]["id"], alices["running"]["id"], *(r["id"] for r in alices["runs"]),
                 *(j["id"] for j in alices["sweep"]["jobs"])}
    for params in ("", "status=completed", "status=running", "limit=5"):
        code, page = bob("GET", "jobs", params=params)
        assert code == 200 and not alice_ids & {j["id"] for j in page["jobs"]}
        assert all(j["owner"] == "bob" for j in page["jobs"])
    assert mine["id"] in {j["id"] for j in bob("GET", "jobs")[1]["jobs"]}
    # her schedule's runs: the same answer as a schedule that does not exist (its existence not revealed)
    assert bob("GET", "jobs", params=f"schedule={alices['schedule']['id']}") == \
        bob("GET", "jobs", params="schedule=nosuch1") == (200, {"jobs": [], "next": None})
    assert bob("GET", "sweeps")[1]["sweeps"] == []
    assert bob("GET", "schedules")[1]["schedules"] == []
    assert bob("GET", "models/serving")[1]["servers"] == []
    assert alices["job"]["id"] not in bob("GET", "models")[1]["jobs_with_model"]
    assert not alice_ids & {j["id"] for j in bob("GET", "cluster", "timeline")[1]["jobs"]}


def test_the_cluster_view_hides_whose_job_holds_a_slot(as_user, alices):
    from nbrunner.control.api import HIDDEN_JOB

    running = alices["running"]["id"]
    held = lambda svc: [s["job"] for h in svc("GET", "cluster")[1]["hosts"] for s in h["slots"] if s["job"]]
    assert held(as_user("alice")) == [running] and held(as_user("hubadmin")) == [running]
    assert held(as_user("bob")) == [HIDDEN_JOB]


def test_alices_schedule_and_sweep_are_not_found_by_bob(as_user, alices, hub_cluster):
    from nbrunner.control.sweeps import get_record

    bob, alice = as_user("bob"), as_user("alice")
    sid, wid = alices["schedule"]["id"], alices["sweep"]["id"]
    schedule, sweep = alice("GET", "schedules", sid)[1], get_record(hub_cluster.store, wid)
    for method, path, body in [("GET", ("schedules", sid), None), ("PATCH", ("schedules", sid), {"paused": False}),
                               ("DELETE", ("schedules", sid), None), ("GET", ("sweeps", wid), None),
                               ("DELETE", ("sweeps", wid), None)]:
        code, err = bob(method, *path, body=body)
        assert code == 404 and err["message"] in (f"no schedule {sid!r}", f"no sweep {wid!r}"), (method, path, err)
    assert alice("GET", "schedules", sid) == (200, schedule)
    assert get_record(hub_cluster.store, wid) == sweep


def test_alices_model_server_is_not_found_by_bob(as_user, alices):
    bob, alice = as_user("bob"), as_user("alice")
    for method in ("GET", "DELETE"):
        code, err = bob(method, "models", "serving", "tiny")
        assert code == 404 and err == {"message": "model 'tiny' is not being served"}
    code, err = bob("POST", "models/serving", body={"model": "tiny"})
    assert code == 409 and err == {"message": "model tiny is already served, by another user"}
    code, server = alice("GET", "models", "serving", "tiny")
    assert code == 200 and server["pid"] == alices["server"]["pid"]
    os.kill(server["pid"], 0)  # still running
    assert server["owner"] == "alice" and server["groups"] == ["ml-team"]


@pytest.mark.parametrize("admin", ["hubadmin", "dora"])
def test_hub_admins_and_admin_group_members_see_and_cancel_everyones_jobs(as_user, alices, admin):
    alice, bob, boss = as_user("alice"), as_user("bob"), as_user(admin)
    queued = {"notebook": "hello.ipynb", "min_gpus": 3, "max_gpus": 3}  # more GPUs than the cluster has
    mine, theirs = alice("POST", "jobs", body=queued)[1], bob("POST", "jobs", body=queued)[1]
    listed = {j["id"]: j["owner"] for j in boss("GET", "jobs")[1]["jobs"]}
    assert listed[mine["id"]] == "alice" and listed[theirs["id"]] == "bob"
    assert listed[alices["job"]["id"]] == "alice"
    assert boss("GET", "jobs", alices["job"]["id"], "metrics")[0] == 200
    assert boss("GET", "schedules", alices["schedule"]["id"])[0] == 200
    assert boss("GET", "models", "serving", "tiny")[0] == 200
    for job in (mine, theirs):
        code, got = boss("DELETE", "jobs", job["id"])
        assert code == 200 and got["status"] == "cancelled" and got["owner"] == job["owner"]


def test_schedules_fire_as_their_owner(as_user, alices, hub_cluster):
    runs = alices["runs"]
    assert runs and all(r["schedule"] == alices["schedule"]["id"] for r in runs)
    for run in runs:
        rec = hub_cluster.store.get(run["id"])
        assert (rec.owner, rec.groups) == ("alice", ["ml-team"])


def test_owner_and_groups_on_the_records_are_the_hubs(as_user, alices, hub_cluster):
    from nbrunner.control.schedules import get_schedule
    from nbrunner.control.sweeps import get_record

    store = hub_cluster.store
    assert (store.get(alices["job"]["id"]).owner, store.get(alices["job"]["id"]).groups) == ("alice", ["ml-team"])
    assert alices["job"]["groups"] == ["ml-team"]  # the REST job shows them
    schedule = get_schedule(store, alices["schedule"]["id"])
    assert (schedule.owner, schedule.groups) == ("alice", ["ml-team"])
    sweep = get_record(store, alices["sweep"]["id"])
    assert (sweep.owner, sweep.groups) == ("alice", ["ml-team"])
    assert {(store.get(j).owner, tuple(store.get(j).groups)) for j in sweep.job_ids()} == {("alice", ("ml-team",))}
    for name, groups in (("bob", ["vision"]), ("dora", ["nbrunner-admins"]), ("hubadmin", [])):
        code, job = as_user(name)("POST", "jobs", body={"notebook": "hello.ipynb"})
        assert code == 201 and (job["owner"], job["groups"]) == (name, groups)
        assert store.get(job["id"]).groups == groups
    code, again = as_user("dora")("POST", "jobs", alices["job"]["id"], "rerun")  # an admin's re-run is the admin's
    assert code == 201 and (again["owner"], again["groups"]) == ("dora", ["nbrunner-admins"])
