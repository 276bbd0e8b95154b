"""What one scheduler pass costs with a long queue: each rq queue read once, records parsed only
when they changed, and a rest after each pass while events keep coming."""
from __future__ import annotations

import threading
import time

import pytest
from rq.job import Job as RqJob

import nbrunner
from nbrunner.control.queues import rq_connection, rq_job_id
from nbrunner.control.scheduler import Scheduler
from nbrunner.core.config import PASS_REST_FACTOR
from nbrunner.core.counters import parse_field
from nbrunner.core.keys import COUNTERS, LEASE

from support import wait_for


def stop_children(cluster, *names: str) -> None:
    """Stop the cluster's own worker and scheduler: the test's Scheduler is the only one, and jobs
    handed to rq stay in its queue."""
    for child in cluster.supervisor.children:
        if child.name.startswith(names):
            child.restart = False
            child.proc.terminate()
            child.proc.wait(30)


def queued_jobs(cluster, n: int) -> list:
    return [j for k in range(0, n, 100) for j in cluster.submit_many(["hello.ipynb"] * min(100, n - k))]


def pass_totals(r) -> tuple[int, float]:
    """The scheduler passes counted so far: how many, and their seconds."""
    count, seconds = 0, 0.0
    for name, value in r.hgetall(COUNTERS).items():
        parts = parse_field(name)
        if parts and parts[0] == "pass":
            if parts[1] == "b":
                count += int(float(value))
            elif parts[1] == "s":
                seconds += float(value)
    return count, seconds


@pytest.mark.slow
def test_a_pass_reads_each_queue_once_and_parses_only_changed_records(workspace):
    with nbrunner.setup_cluster(gpus=0, workers=1, workspace=workspace) as cluster:
        stop_children(cluster, "worker", "scheduler")
        jobs = queued_jobs(cluster, 60)
        # goodput (the default) also reads the new GPU-timeline entries of each dispatched job whose record
        # changed (its attained service; the next test); what is counted here is the pass's own reads
        scheduler = Scheduler(cluster.settings, "fairshare")
        scheduler.step()
        assert all(j.refresh().record.dispatched for j in jobs)
        r = cluster.store.r

        r.config_resetstat()
        scheduler.step()
        stats = r.info("commandstats")
        assert "cmdstat_lpos" not in stats  # no search of the queue per job
        assert stats["cmdstat_lrange"]["calls"] == 2  # the one queue, read once; the notebook's past runs
        assert stats["cmdstat_hmget"]["calls"] == len(jobs)  # each rq job's state, in one pipeline
        assert all(j.refresh().record.attempt == 1 for j in jobs)  # every dispatch still alive

        before = {rec.id: rec for rec in scheduler.active_jobs()}
        jobs[0].set_priority(7)
        after = {rec.id: rec for rec in scheduler.active_jobs()}
        assert after[jobs[0].id] is not before[jobs[0].id] and after[jobs[0].id].priority == 7
        assert all(after[j.id] is before[j.id] for j in jobs[1:])

        lost = jobs[1]  # its rq job gone (a Redis restored from an older file): dispatched again
        rq_connection(cluster.store).delete(RqJob.key_for(rq_job_id(lost.id, 1)))
        scheduler.step()
        assert lost.refresh().record.attempt == 2 and lost.record.dispatched
        assert [j.refresh().record.attempt for j in jobs if j is not lost] == [1] * (len(jobs) - 1)


@pytest.mark.slow
def test_a_goodput_pass_reads_the_timelines_of_changed_jobs_only(workspace):
    with nbrunner.setup_cluster(gpus=0, workers=1, workspace=workspace) as cluster:
        stop_children(cluster, "worker", "scheduler")
        jobs = queued_jobs(cluster, 60)
        scheduler = Scheduler(cluster.settings, "goodput")
        scheduler.step()  # dispatched: their records change
        r = cluster.store.r
        r.config_resetstat()
        scheduler.step()  # each dispatched job's record is new to the ledger: its timeline is read
        assert r.info("commandstats")["cmdstat_lrange"]["calls"] == 2 + len(jobs)
        r.config_resetstat()
        scheduler.step()  # nothing changed: the pass's own reads (at most the queue and the past runs), no timeline
        assert r.info("commandstats")["cmdstat_lrange"]["calls"] <= 2
        assert all(j.refresh().record.attempt == 1 for j in jobs)


@pytest.mark.slow
def test_passes_rest_while_events_keep_coming(workspace):
    with nbrunner.setup_cluster(gpus=0, workers=1, workspace=workspace) as cluster:
        stop_children(cluster, "worker", "scheduler")
        queued_jobs(cluster, 300)
        r = cluster.store.r
        scheduler = Scheduler(cluster.settings)
        runner = threading.Thread(target=scheduler.run, daemon=True)
        runner.start()
        try:
            wait_for(lambda: r.get(LEASE) == scheduler.name, 30, what="the scheduler to take the lease")
            wait_for(lambda: pass_totals(r)[0] >= 2, 60, what="the first passes")
            count0, seconds0 = pass_totals(r)
            t0 = time.monotonic()
            while time.monotonic() - t0 < 3:  # a stream of events: each would wake the scheduler at once
                cluster.store.emit("test")
                time.sleep(0.002)
            count, seconds = pass_totals(r)
            elapsed = time.monotonic() - t0
        finally:
            scheduler.stop()
            runner.join(30)
        assert count - count0 >= 3
        busy = (seconds - seconds0) / elapsed
        print(f"{count - count0} passes in {elapsed:.1f} s, busy {busy:.2f}")
        assert busy <= 1 / (1 + PASS_REST_FACTOR) + 0.1
