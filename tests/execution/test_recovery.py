"""Lost workers and a lost Redis: jobs are re-run, never lost, never run twice at once."""
from __future__ import annotations

import pytest

import json
import os
import signal
import time

import nbrunner
from nbrunner.control.registration import live_capacity

from support import make_notebook, wait_for

pytestmark = pytest.mark.slow

STAMP = """import os, time, json
start = time.time()
time.sleep(SECONDS)
with open('attempts.jsonl', 'a') as f:
    f.write(json.dumps({'job': os.environ['NBRUNNER_JOB_ID'], 'start': start, 'end': time.time()}) + '\\n')"""


def test_sigkilled_worker_job_is_rerun_on_another_worker(workspace):
    make_notebook(workspace / "slow.ipynb", STAMP, parameters="SECONDS = 6")
    with nbrunner.setup_cluster(gpus=0, workers=2, workspace=workspace) as cluster:
        job = cluster.submit("slow.ipynb")
        wait_for(lambda: job.refresh().record.status == "running", 60, what="the job to start")
        first = job.record.worker
        pid = cluster.store.r.get(f"nbrunner:worker:{first}")
        worker_pid = json.loads(pid)["pid"]
        killed_at = time.monotonic()
        os.kill(worker_pid, signal.SIGKILL)
        wait_for(lambda: job.refresh().record.attempt == 2, 60, what="the job to be re-queued")
        detected = time.monotonic() - killed_at
        assert detected < 60
        job.wait(120)
        rec = job.record
        assert rec.status == "completed", rec.error
        assert rec.lost == 1 and rec.worker != first
        assert [h["status"] for h in rec.history] == ["queued", "running", "queued", "running", "completed"]
        runs = [json.loads(line) for line in (workspace / "attempts.jsonl").read_text().splitlines()]
        # the first attempt died with its worker: only the re-run finished
        assert len(runs) == 1
        print(f"lost worker detected and job re-queued after {detected:.1f} s")


def test_worker_lost_when_retries_are_spent(workspace):
    make_notebook(workspace / "slow.ipynb", STAMP, parameters="SECONDS = 30")
    with nbrunner.setup_cluster(gpus=0, workers=1, workspace=workspace) as cluster:
        job = cluster.submit("slow.ipynb", retries=0)
        wait_for(lambda: job.refresh().record.status == "running", 60, what="the job to start")
        worker_pid = json.loads(cluster.store.r.get(f"nbrunner:worker:{job.record.worker}"))["pid"]
        os.kill(worker_pid, signal.SIGKILL)
        job.wait(60)
        assert job.record.status == "failed" and job.record.error == "worker lost"
        assert [h["status"] for h in job.record.history] == ["queued", "running", "failed"]
        assert (job.dir / "output.html").is_file()  # rendered by the scheduler before it wrote "failed"


def test_embedded_redis_killed_with_jobs_queued_loses_nothing(workspace):
    make_notebook(workspace / "quick.ipynb", "print('done', NAME)", parameters="NAME = ''")
    with nbrunner.setup_cluster(gpus=0, workers=1, workspace=workspace) as cluster:
        # one worker: most of these are still queued when Redis dies
        jobs = [cluster.submit("quick.ipynb", {"NAME": f"q{i}"}) for i in range(5)]
        ids = [j.id for j in jobs]
        assert sum(cluster.job(i).record.status == "queued" for i in ids) >= 3
        redis_pid = cluster.supervisor.redis.pid()
        os.kill(redis_pid, signal.SIGKILL)
        wait_for(lambda: cluster.supervisor.redis.pid() not in (None, redis_pid) and cluster.supervisor.redis.running(),
                 10, what="the embedded Redis to be restarted")
        for j in jobs:
            j.wait(120)
        assert [cluster.job(i).record.status for i in ids] == ["completed"] * 5
        assert sorted(r.id for r in cluster.store.all()) == sorted(ids)


def test_capacity_follows_live_workers(workspace):
    with nbrunner.setup_cluster(gpus=4, workers=2, workspace=workspace) as cluster:
        status = cluster.status()
        assert status["gpus_total"] == 4 and status["gpus_free"] == 4
        victim = sorted(live_capacity(cluster.store).workers.values(), key=lambda w: w["slots"])[0]
        for child in cluster.supervisor.children:  # keep it dead for this test
            child.restart = False
        os.kill(victim["pid"], signal.SIGKILL)
        wait_for(lambda: cluster.status()["gpus_total"] == 2, 30, what="the dead worker's slots to leave")


def test_a_job_its_worker_took_but_never_started_is_dispatched_again(workspace):
    from rq.job import Job as RqJob
    from rq.queue import Queue as RqQueue

    from nbrunner.control.queues import rq_connection, rq_job_id
    from nbrunner.core.config import STRANDED_AFTER_S

    make_notebook(workspace / "stamp.ipynb", STAMP, parameters="SECONDS = 0")
    with nbrunner.setup_cluster(gpus=0, workers=1, workspace=workspace) as cluster:
        child = next(c for c in cluster.supervisor.children if c.name.startswith("worker"))
        child.restart = False
        child.proc.terminate()  # no worker for a while: the job waits in rq's queue
        child.proc.wait(30)
        job = cluster.submit("stamp.ipynb")
        wait_for(lambda: job.refresh().record.dispatched, 30, what="the job to be handed to rq")
        # what a worker that dies (or loses Redis) right after taking the job leaves behind
        conn = rq_connection(cluster.store)
        queue = RqQueue(RqJob.fetch(rq_job_id(job.id, 1), connection=conn).origin, connection=conn)
        assert conn.lmove(queue.key, queue.intermediate_queue_key) == rq_job_id(job.id, 1).encode()
        t = time.monotonic()
        wait_for(lambda: job.refresh().record.attempt == 2, STRANDED_AFTER_S + 20, what="the job to be re-dispatched")
        assert time.monotonic() - t >= STRANDED_AFTER_S - 2  # not before a worker could have started it
        assert conn.lpos(queue.intermediate_queue_key, rq_job_id(job.id, 1)) is None
        cluster.supervisor._spawn(child)
        job.wait(60)
        assert job.record.status == "completed", job.record.error
        assert len((workspace / "attempts.jsonl").read_text().splitlines()) == 1
