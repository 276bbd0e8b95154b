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


class Restartable:
    """An embedded Redis on a socket of its own, killed and started again from its AOF, and a
    worker on it (only constructed: the test calls its beats)."""

    def __init__(self):
        self.dir = short_tmpdir("nbwo")
        self.sock = self.dir / "r.sock"
        self.procs = [_server(self.sock, self.dir)]
        self.store = JobStore(redis.Redis(unix_socket_path=str(self.sock), decode_responses=True, socket_timeout=5),
                              f"unix://{self.sock}")
        wait_for(lambda: _ping(self.store.r), 30, 0.1, "Redis")
        self.conn = rq_connection(self.store)
        self.worker = NbrunnerWorker(["q"], connection=self.conn, name="host.1", store=self.store, host="host",
                                     slots=[], settings=Settings.load())

    def kill(self) -> None:
        self.procs[-1].kill()
        self.procs[-1].wait()

    def start(self) -> None:
        self.procs.append(_server(self.sock, self.dir))


@pytest.fixture
def redis_and_worker():
    r = Restartable()
    try:
        yield r
    finally:
        for proc in r.procs:
            proc.kill()
            proc.wait()


def test_a_job_heartbeat_while_redis_restarts_does_not_end_the_worker(redis_and_worker):
    r = redis_and_worker
    conn, worker = r.conn, r.worker
    worker.birth_date = worker.last_heartbeat = now()  # as rq's register_birth sets them (not the rest of it)
    job = Queue("q", connection=conn).enqueue("builtins.print", "hello")
    job.started_at = now()
    execution = Execution("e1", job.id, connection=conn)
    worker.maintain_heartbeats(job, execution)  # Redis up: rq's own beat
    assert conn.hget(job.key, "last_heartbeat")
    r.kill()
    worker.maintain_heartbeats(job, execution)  # Redis gone: no exception, the worker goes on
    r.start()
    wait_for(lambda: _ping(r.store.r), 30, 0.1, "Redis back from its AOF")
    before = conn.hget(job.key, "last_heartbeat")
    job.started_at = now()
    wait_for(lambda: (worker.maintain_heartbeats(job, execution), conn.hget(job.key, "last_heartbeat") != before)[1],
             30, 0.5, "a heartbeat once Redis is back")


def test_the_beat_after_a_job_is_taken_waits_for_redis_to_come_back(redis_and_worker):
    """rq beats once it has taken a job from the queue; Redis restarting at that moment ended the
    worker with the job taken and never run (seen in a 20-minute soak). The beat now waits."""
    r = redis_and_worker
    r.worker.heartbeat()
    first = r.conn.hget(r.worker.key, "last_heartbeat")
    r.kill()
    restart = threading.Timer(1.5, r.start)
    restart.start()
    r.worker.heartbeat()  # Redis gone for 1.5 s: this returns once it is back, it does not raise
    restart.join()
    assert r.conn.hget(r.worker.key, "last_heartbeat") not in (None, first)
