"""A learner on another host is followed through Redis: while Redis restarts, the trainer's polls
of it answer "no news" instead of raising (the soak's Redis faults failed training jobs with
``ConnectionError: ... Connection refused`` from ``RemoteLearner.poll``), and its exit is seen
once Redis is back from its AOF; a signal asked for during the outage is sent by the first poll
that reaches Redis again (a stop lost to a restart left the learner running)."""
from __future__ import annotations

import json
import signal

import pytest
import redis

from nbrunner.control.job_channel import Direct
from nbrunner.control.store import JobStore
from nbrunner.core.keys import agent_control, learner_requests, learner_status, worker_key
from nbrunner.elastic.cluster_slots import RemoteLearner
from nbrunner.elastic.launcher import LearnerSpec
from nbrunner.elastic.slots import Slot

from support import short_tmpdir, wait_for
from tests.control.test_outage import _ping, _server

pytestmark = pytest.mark.slow


def test_polling_a_remote_learner_rides_out_a_redis_restart():
    d = short_tmpdir("nbrl")
    sock = d / "r.sock"
    procs = [_server(sock, d)]
    store = JobStore(redis.Redis(unix_socket_path=str(sock), decode_responses=True, socket_timeout=5), f"unix://{sock}")
    try:
        wait_for(lambda: _ping(store.r), 30, 0.1, "Redis")
        spec = LearnerSpec(learner_id="L1", slot=Slot("host2", 0, None), master_addr="10.0.0.1", master_port=1234)
        learner = RemoteLearner.start(Direct(store, "job1", attempt=1), spec, timeout=600)
        request = json.loads(store.r.lpop(learner_requests("host2")))  # what the host's agent would claim
        assert request["learner"] == learner.learner
        store.r.set(learner_status(learner.learner), json.dumps({"pid": 4242, "worker": "host2.1", "rc": None}))
        store.r.set(worker_key("host2.1"), "{}")  # its worker is alive
        assert learner.poll() is None and learner.pid == 4242 and learner.worker == "host2.1"  # running
        procs[0].kill()
        procs[0].wait()
        assert learner.poll() is None  # Redis is gone: no news, no exception
        learner.terminate()            # a signal that cannot be sent now is not an error either
        procs.append(_server(sock, d))
        wait_for(lambda: _ping(store.r), 30, 0.1, "Redis back from its AOF")
        assert store.r.llen(agent_control("host2.1")) == 0  # the terminate never reached the host
        assert learner.poll() is None
        sent = [json.loads(m) for m in store.r.lrange(agent_control("host2.1"), 0, -1)]
        assert sent == [{"learner": learner.learner, "signal": int(signal.SIGTERM)}]  # sent now, once
        assert learner.poll() is None and store.r.llen(agent_control("host2.1")) == 1
        store.r.set(learner_status(learner.learner),
                    json.dumps({"pid": 4242, "worker": "host2.1", "rc": -int(signal.SIGKILL)}))
        assert learner.poll() == -int(signal.SIGKILL)
    finally:
        for p in procs:
            p.kill()
            p.wait()
