"""A job that runs as its owner changes the cluster only through its work horse: the horse applies
the job's own events to the job's own record, releases only slots the job holds, marks remote
learner requests with the job, answers only about the job's own learners, and drops what it
cannot read.  On a real (password-protected) embedded Redis, with the job's own credential."""
from __future__ import annotations

import json
import threading

import pytest
import redis

from nbrunner.control.channel_server import ChannelServer
from nbrunner.control.grants import HOLDINGS
from nbrunner.control.job_access import grant_access
from nbrunner.control.job_channel import ChannelError, WorkerChannel
from nbrunner.core.keys import agent_control, channel_key, learner_requests, learner_status
from nbrunner.core.lifecycle import Finish, Progress
from nbrunner.core.models import JobRecord
from nbrunner.control.store import JobStore
from nbrunner.execution.redis_server import EmbeddedRedis

pytestmark = pytest.mark.slow


@pytest.fixture
def horse(workspace):
    """Job ``jobA`` (and ``jobB``) on a shared embedded Redis; the horse of jobA serving in a thread;
    yields (the cluster's store, jobA's channel with jobA's credential)."""
    server = EmbeddedRedis(workspace / ".nbrunner", shared=True).ensure()
    store = JobStore.from_url(server.url)
    for job_id in ("jobA", "jobB"):
        store.create(JobRecord(id=job_id, name=job_id, notebook="x.ipynb", owner="alice"))
    cred = grant_access(store, "jobA")
    serving = ChannelServer(store, "jobA")
    stop = threading.Event()
    thread = threading.Thread(target=lambda: [serving.serve(0.05) for _ in iter(stop.is_set, True)], daemon=True)
    thread.start()
    yield store, WorkerChannel(JobStore.from_url(cred.url), "jobA")
    stop.set()
    thread.join(5)
    server.stop()


def test_the_job_changes_its_own_record_with_its_own_events_only(horse):
    store, channel = horse
    channel.transition(Progress(progress=0.5, metrics={"acc": 0.9}))
    assert store.get("jobA").metrics == {"acc": 0.9} and store.get("jobB").metrics == {}
    with pytest.raises(ChannelError, match="a job may not cause 'Finish'"):
        channel.transition(Finish(attempt=0, at="2026-01-01T00:00:00"))
    with pytest.raises(ChannelError, match="unknown request"):
        channel.ask("revoke_everything")
    assert store.get("jobA").status == "queued"
    with pytest.raises(redis.exceptions.NoPermissionError):  # nor can it write another job's channel
        channel.store.r.rpush(channel_key("jobB"), "{}")


def test_the_job_releases_only_what_it_holds(horse):
    store, channel = horse
    store.r.hset(HOLDINGS, mapping={"h/0": "jobA", "h/1": "jobB"})
    assert channel.held() == [("h", 0)]
    assert channel.release([("h", 1), ("h", 0)]) == [("h", 0)]
    assert store.r.hgetall(HOLDINGS) == {"h/1": "jobB"}
    with pytest.raises(ChannelError, match="bad request"):
        channel.ask("release", slots=[["h", "1"]])


def test_learner_requests_carry_the_horses_job_and_only_its_learners_are_answered(horse):
    store, channel = horse
    channel.start_learner("hostB", {"learner": "L1-aa", "argv": ["-m", "x"], "env": {"A": "1"}, "log": None,
                                    "job": "jobB"})
    pushed = json.loads(store.r.lpop(learner_requests("hostB")))
    assert pushed == {"learner": "L1-aa", "argv": ["-m", "x"], "env": {"A": "1"}, "log": None, "job": "jobA"}
    store.r.set(learner_status("L1-aa"), json.dumps({"pid": 7, "worker": "w1", "rc": None}))
    store.r.set(learner_status("L9-bb"), json.dumps({"pid": 8, "worker": "w1", "rc": None}))  # another job's
    assert channel.learner_status("L1-aa") == {"pid": 7, "worker": "w1", "rc": None}
    assert channel.learner_status("L9-bb") == {} and channel.cancel_learner("L9-bb") is False
    channel.signal_learner("L9-bb", 9)
    channel.signal_learner("L1-aa", 15)
    assert [json.loads(m) for m in store.r.lrange(agent_control("w1"), 0, -1)] == [{"learner": "L1-aa", "signal": 15}]
    with pytest.raises(ChannelError, match="bad request"):
        channel.start_learner("hostB", {"learner": "L2", "argv": "rm -rf /", "env": {}, "log": None})


def test_an_unreadable_request_is_dropped_without_an_answer(horse):
    store, channel = horse
    before = set(store.r.keys("*"))
    for raw in ("not json", json.dumps({"id": "rq:queue:default", "op": "held", "args": {}}), json.dumps([1])):
        channel.store.r.rpush(channel_key("jobA"), raw)
    assert channel.held() == []  # served after the three, in order
    assert set(store.r.keys("*")) == before
