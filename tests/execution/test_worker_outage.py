"""A worker whose job runs while Redis restarts keeps going: rq's monitor loop beats for the job
every ``job_monitoring_interval``, and a beat that found Redis gone ended the worker ("found an
unhandled exception, quitting"), its work horse and the job with it (the soak's Redis faults
failed running jobs so, as "worker process died")."""
from __future__ import annotations

import threading

import pytest
import redis
from rq import Queue
from rq.executions import Execution
from rq.utils import now

from nbrunner.control.queues import rq_connection
from nbrunner.control.store import JobStore
from nbrunner.core.config import Settings
from nbrunner.execution.worker import NbrunnerWorker

from support import short_tmpdir, wait_for
from tests.control.test_outage import _ping, _server

pytestmark = pytest.mark.slow


def test_a_job_heartbeat_while_redis_restarts_does_not_end_the_worker():
    d = short_tmpdir("nbwo")
    sock = d / "r.sock"
    procs = [_server(sock, d)]
    store = JobStore(redis.Redis(unix_socket_path=str(sock), decode_responses=True, socket_timeout=5), f"unix://{sock}")
    try:
        wait_for(lambda: _ping(store.r), 30, 0.1, "Redis")
        conn = rq_connection(store)
        worker = NbrunnerWorker(["q"], connection=conn, name="host.1", store=store, host="host", slots=[],
                                settings=Settings.load())
        worker.birth_date = worker.last_heartbeat = now()  # as rq's register_birth sets them (not the rest of it)
        job = Queue("q", connection=conn).enqueue("builtins.print", "hello")
        job.started_at = now()
        execution = Execution("e1", job.id, connection=conn)
        worker.maintain_heartbeats(job, execution)  # Redis up: rq's own beat
        assert conn.hget(job.key, "last_heartbeat")
        procs[0].kill()
        procs[0].wait()
        worker.maintain_heartbeats(job, execution)  # Redis gone: no exception, the worker goes on
        procs.append(_server(sock, d))
        wait_for(lambda: _ping(store.r), 30, 0.1, "Redis back from its AOF")
        before = conn.hget(job.key, "last_heartbeat")
        job.started_at = now()
        wait_for(lambda: (worker.maintain_heartbeats(job, execution), conn.hget(job.key, "last_heartbeat") != before)[1],
                 30, 0.5, "a heartbeat once Redis is back")
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_the_beat_after_a_job_is_taken_waits_for_redis_to_come_back():
    """rq beats once it has taken a job from the queue; Redis restarting at that moment ended the
    worker with the job taken and never run (seen in a 20-minute soak). The beat now waits."""
    d = short_tmpdir("nbwb")
    sock = d / "r.sock"
    procs = [_server(sock, d)]
    store = JobStore(redis.Redis(unix_socket_path=str(sock), decode_responses=True, socket_timeout=5), f"unix://{sock}")
    try:
        wait_for(lambda: _ping(store.r), 30, 0.1, "Redis")
        conn = rq_connection(store)
        worker = NbrunnerWorker(["q"], connection=conn, name="host.2", store=store, host="host", slots=[],
                                settings=Settings.load())
        worker.heartbeat()
        first = conn.hget(worker.key, "last_heartbeat")
        procs[0].kill()
        procs[0].wait()
        restart = threading.Timer(1.5, lambda: procs.append(_server(sock, d)))
        restart.start()
        worker.heartbeat()  # Redis gone for 1.5 s: this returns once it is back, it does not raise
        restart.join()
        assert conn.hget(worker.key, "last_heartbeat") not in (None, first)
    finally:
        for p in procs:
            p.kill()
            p.wait()
