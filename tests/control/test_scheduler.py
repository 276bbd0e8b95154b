"""The allocator service on real CPU slots: gangs, elastic rebalancing, lost workers, standby."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

import nbrunner
from nbrunner.control import grants
from nbrunner.core.keys import LEASE

from support import GRANT_FOLLOWER, make_notebook, no_slot_ever_held_twice, released_timeline, wait_for

GANG = """import os, time
print('gpus', os.environ['NBRUNNER_GPUS'], 'cuda', os.environ['CUDA_VISIBLE_DEVICES'])
assert len(os.environ['NBRUNNER_GPUS'].split(',')) == 2
time.sleep(SECONDS)"""

# ElasticTrainer's slot source inside a job, driven by hand: it never looks at its grant (the
# way a trainer busy starting learners would miss a short-lived change), then closes while the
# notebook goes on.
SOURCE = """import pathlib, time
from nbrunner.elastic.cluster_slots import cluster_slot_source
source = cluster_slot_source()
source.start(1, 4)
while not pathlib.Path(STOP).exists():
    time.sleep(0.1)
source.close()
while not pathlib.Path(END).exists():
    time.sleep(0.1)
"""


def gpus(job) -> int:
    return job.refresh().record.gpus


@pytest.mark.slow
def test_gang_jobs_wait_for_whole_slots(workspace):
    make_notebook(workspace / "gang.ipynb", GANG, parameters="SECONDS = 4")
    with nbrunner.setup_cluster(gpus=4, workers=3, workspace=workspace) as cluster:
        jobs = [cluster.submit("gang.ipynb", max_gpus=2) for _ in range(3)]
        wait_for(lambda: sum(j.refresh().record.status == "running" for j in jobs) == 2, 60, what="two running")
        waiting = [j for j in jobs if j.record.status == "queued"]
        assert len(waiting) == 1 and waiting[0].refresh().record.queue_position == 1
        assert cluster.status()["gpus_free"] == 0
        for j in jobs:
            j.wait(120)
            assert j.record.status == "completed", j.record.error
        assert waiting[0].record.started_at >= min(j.record.finished_at for j in jobs if j is not waiting[0])
        # a job's record says completed before its worker confirmed the release of its slots
        wait_for(lambda: cluster.status()["gpus_free"] == 4, 30, what="all slots released")
        assert no_slot_ever_held_twice(cluster.store.r) >= 12
        assert released_timeline(waiting[0]) == [2, 0]


@pytest.mark.slow
def test_elastic_jobs_rebalance_by_fair_share_and_priority(workspace):
    make_notebook(workspace / "follow.ipynb", GRANT_FOLLOWER, parameters="MIN = 1\nMAX = 4\nSTOP = 'stop'")
    with nbrunner.setup_cluster(gpus=4, workers=2, workspace=workspace) as cluster:
        a = cluster.submit("follow.ipynb", {"STOP": "stop-a"}, min_gpus=1, max_gpus=4)
        wait_for(lambda: gpus(a) == 4, 60, what="A to hold 4")
        b = cluster.submit("follow.ipynb", {"STOP": "stop-b"}, min_gpus=1, max_gpus=4)
        wait_for(lambda: gpus(a) == 2 and gpus(b) == 2, 60, what="2/2")
        b.set_priority(10000)
        wait_for(lambda: gpus(a) == 1 and gpus(b) == 3, 30, what="1/3 after B's priority rose")
        (workspace / "stop-a").touch()
        a.wait(60)
        wait_for(lambda: gpus(b) == 4, 30, what="B to grow to 4")
        (workspace / "stop-b").touch()
        b.wait(60)
        assert a.record.status == b.record.status == "completed"
        # Slots move one learner at a time, so a step may pass through a size in between
        # (A 4 -> 3 -> 2, B starting on the first freed slot): A falls to 2 and then 1, B rises
        # to 2, then 3 (its priority), then 4 (A finished).
        a_sizes = released_timeline(a)
        b_sizes = released_timeline(b)
        a_falling = a_sizes[:a_sizes.index(1) + 1]
        b_rising = b_sizes[:b_sizes.index(4) + 1]
        assert a_falling[0] == 4 and 2 in a_falling and a_falling == sorted(set(a_falling), reverse=True), a_sizes
        assert b_rising[-3:] == [2, 3, 4] and b_rising == sorted(set(b_rising)), b_sizes
        no_slot_ever_held_twice(cluster.store.r)
        wait_for(lambda: cluster.status()["gpus_free"] == 4, 30, what="all slots free")


@pytest.mark.slow
def test_lost_worker_slots_leave_and_come_back(workspace):
    make_notebook(workspace / "follow.ipynb", GRANT_FOLLOWER, parameters="MIN = 1\nMAX = 4\nSTOP = 'stop'")
    with nbrunner.setup_cluster(gpus=4, workers=2, workspace=workspace) as cluster:
        a = cluster.submit("follow.ipynb", min_gpus=1, max_gpus=4)
        wait_for(lambda: gpus(a) == 4 and a.record.status == "running", 60, what="A to hold 4")
        from nbrunner.control.registration import live_capacity

        other = [w for w in live_capacity(cluster.store).workers.values() if w["name"] != a.record.worker][0]
        child = next(c for c in cluster.supervisor.children if c.proc and c.proc.pid == other["pid"])
        child.restart = False
        t = time.monotonic()
        os.kill(other["pid"], signal.SIGKILL)
        wait_for(lambda: gpus(a) == 2, 40, what="A to lose the dead worker's 2 slots")
        print(f"dead worker's slots left A's grant after {time.monotonic() - t:.1f} s")
        cluster.supervisor._spawn(child)  # the worker comes back: A grows back
        wait_for(lambda: gpus(a) == 4, 60, what="A to grow back when the worker is restarted")
        (workspace / "stop").touch()
        assert a.wait(60).record.status == "completed"
        no_slot_ever_held_twice(cluster.store.r)


@pytest.mark.slow
def test_standby_scheduler_takes_over(workspace):
    with nbrunner.setup_cluster(gpus=0, workers=1, workspace=workspace) as cluster:
        standby = subprocess.Popen([sys.executable, "-m", "nbrunner", "scheduler"], cwd=workspace,
                                   env={**os.environ, **cluster.settings.env()}, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        try:
            first = cluster.supervisor.child("scheduler")
            active = cluster.store.r.get(LEASE)
            assert active.endswith(f".{first.proc.pid}")
            first.restart = False
            first.proc.kill()
            t = time.monotonic()
            wait_for(lambda: cluster.store.r.get(LEASE) == f"{active.rsplit('.', 1)[0]}.{standby.pid}", 10,
                     what="the standby to take the lease")
            print(f"standby took over in {time.monotonic() - t:.1f} s")
            job = cluster.submit("hello.ipynb").wait(60)
            assert job.record.status == "completed"
        finally:
            standby.terminate()
            standby.wait(10)


@pytest.mark.slow
def test_priority_policy_cluster_reports_policy(workspace):
    with nbrunner.setup_cluster(gpus=2, workers=1, workspace=workspace, policy="priority") as cluster:
        st = cluster.status()
        assert st["policy"] == "priority" and st["gpus_total"] == 2
        assert st["hosts"][0]["slots"] == [{"index": 0, "job": None}, {"index": 1, "job": None}]


def test_admission_never_refuses_a_job_that_needs_no_gpu():
    from nbrunner.core.placement import admitted

    demands = [{"id": "big", "min_gpus": 2, "max_gpus": 2, "priority": 5000, "submitted_at": 1, "running": False},
               {"id": "small", "min_gpus": 1, "max_gpus": 1, "priority": 5000, "submitted_at": 2, "running": False},
               {"id": "cpu", "min_gpus": 0, "max_gpus": 0, "priority": 5000, "submitted_at": 3, "running": False}]
    assert admitted(1, demands, "fairshare") == {"cpu"}  # no backfill for 'small', but 'cpu' runs
    assert admitted(3, demands, "fairshare") == {"big", "small", "cpu"}


@pytest.mark.slow
def test_slots_revoked_unseen_are_released_and_a_closed_source_wants_none(workspace):
    make_notebook(workspace / "source.ipynb", SOURCE, parameters="STOP = 'stop'\nEND = 'end'")
    make_notebook(workspace / "follow.ipynb", GRANT_FOLLOWER, parameters="MIN = 1\nMAX = 4\nSTOP = 'stop'")
    with nbrunner.setup_cluster(gpus=4, workers=2, workspace=workspace) as cluster:
        a = cluster.submit("source.ipynb", {"STOP": "stop-a", "END": "end-a"}, min_gpus=1, max_gpus=4)
        wait_for(lambda: gpus(a) == 4 and a.record.status == "running", 60, what="A to hold 4")
        b = cluster.submit("follow.ipynb", {"STOP": "stop-b"}, min_gpus=1, max_gpus=4)
        wait_for(lambda: gpus(a) == 2 and gpus(b) == 2, 60, what="A to give B the 2 slots it never used")
        (workspace / "stop-a").touch()  # A's training is over; its notebook goes on
        wait_for(lambda: gpus(b) == 4, 30, what="B to grow to 4 once A withdrew")
        assert a.refresh().record.status == "running" and a.record.gpus == 0
        assert grants.read_grant(cluster.store.r, a.id)["slots"] == []
        (workspace / "end-a").touch()
        (workspace / "stop-b").touch()
        assert a.wait(60).record.status == b.wait(60).record.status == "completed"
        assert released_timeline(a) == [4, 2, 0]
        assert released_timeline(b)[:2] == [2, 4]
        no_slot_ever_held_twice(cluster.store.r)


# A follower that reports samples/s per learner count the way ElasticTrainer does (runtime.report
# with samples_per_s and learners): BASE + SLOPE * n at sizes 1 and 2 first, then at every size it is granted.
REPORTER = GRANT_FOLLOWER.replace("client.declare(MIN, MAX)\n", """client.declare(MIN, MAX)
from nbrunner.control import runtime
RATE = lambda n: BASE + SLOPE * n
for n in (1, 2):
    runtime.report(metrics={"samples_per_s": RATE(n), "learners": n})
""").replace("        client.release(extra)   # our 'learners' on those slots have exited\n", """        client.release(extra)   # our 'learners' on those slots have exited
    if slots:
        runtime.report(metrics={"samples_per_s": RATE(len(slots)), "learners": len(slots)})
""")


@pytest.mark.slow
def test_goodput_policy_gives_gpus_to_the_job_that_scales(workspace):
    make_notebook(workspace / "rep.ipynb", REPORTER,
                  parameters="MIN = 1\nMAX = 4\nSTOP = 'stop'\nBASE = 0.0\nSLOPE = 100.0")
    with nbrunner.setup_cluster(gpus=4, workers=2, workspace=workspace, policy="goodput") as cluster:
        assert cluster.status()["policy"] == "goodput"
        a = cluster.submit("rep.ipynb", {"STOP": "stop-a"}, min_gpus=1, max_gpus=4)
        wait_for(lambda: gpus(a) == 4 and a.record.throughput.get("4") == 400.0, 60, what="A to run on 4")
        b = cluster.submit("rep.ipynb", {"STOP": "stop-b", "BASE": 100.0, "SLOPE": 1.0}, min_gpus=1, max_gpus=4)
        # fairshare would split 2/2; b's measurements show it gains ~1% from a second GPU.
        # (B's kernel starts first: on a loaded machine that alone can take most of a minute)
        wait_for(lambda: gpus(b) == 1 and gpus(a) == 3 and "1" in b.refresh().record.throughput, 120,
                 what="3/1 by measured speedup")
        wait_for(lambda: a.refresh().record.throughput.get("3") == 300.0, 30, what="A's rate on 3")
        assert a.record.throughput == {"1": 100.0, "2": 200.0, "3": 300.0, "4": 400.0}
        assert b.record.throughput["1"] == 101.0
        for name, job in (("stop-a", a), ("stop-b", b)):
            (workspace / name).touch()
            job.wait(60)
            assert job.record.status == "completed", job.record.error
        no_slot_ever_held_twice(cluster.store.r)
