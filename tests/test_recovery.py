"""Lost workers and a lost Redis: jobs are re-run, never lost, never run twice at once."""
from __future__ import annotations

import json
import os
import signal
import time

import nbrunner
from nbrunner.scheduler import live_capacity

from support import make_notebook, wait_for

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
