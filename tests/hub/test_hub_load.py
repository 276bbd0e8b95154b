"""Load through the hub: 10 users submit concurrently through the hub's proxy to nbrunner service;
every job runs exactly once, owned by the user who submitted it.  (The 10 x 50 run, with latencies
against the Jupyter extension's, is bench/bench_hub_load.py.)"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest

from support import wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from loadgen import drive  # noqa: E402

pytestmark = pytest.mark.slow

USERS, PER_USER = 10, 5


def test_concurrent_users_through_the_hub_each_job_runs_once_as_its_user(hub, hub_cluster, hub_workspace):
    users = [f"load{k:02d}" for k in range(USERS)]
    for name in users:
        hub.add_user(name)
    res = drive(hub.service_api, [hub.token(name) for name in users], PER_USER)
    assert res["errors"] == [] and sum(map(len, res["ids"])) == USERS * PER_USER
    store = hub_cluster.store
    ids = {i for mine in res["ids"] for i in mine}
    wait_for(lambda: all(store.get(i).finished for i in ids), 600, interval=1, what="the load's jobs")
    for user, mine in zip(users, res["ids"]):
        assert {(store.get(i).owner, store.get(i).status) for i in mine} == {(user, "completed")}
    executed = (hub_workspace / "executions.log").read_text().split()
    assert sorted(executed) == sorted(ids)  # each exactly once
    p99 = statistics.quantiles(res["post"], n=100)[98]
    print(f"\n{USERS} users x {PER_USER} jobs through the hub: POST p99 {p99 * 1000:.0f} ms")
