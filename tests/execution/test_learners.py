"""Learners on other hosts: a start request never blocks the trainer, one that no worker
claims in time is cancelled for good (a host that comes back does not start it), and a warm
interpreter takes a learner's start request in place of a fresh process, having imported what
the last learner imported to load its job."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from nbrunner.control.registration import heartbeat, live_capacity
from nbrunner.core.config import WORKER_TTL
from nbrunner.elastic.launcher import LearnerSpec
from nbrunner.elastic.slots import Slot
from nbrunner.core.keys import learner_requests, learner_status, worker_key
from nbrunner.elastic.cluster_slots import RemoteLearner
from nbrunner.execution.learner_agent import LearnerAgent
from nbrunner.execution.redis_server import EmbeddedRedis
from nbrunner.control.store import JobStore

from support import wait_for

pytestmark = pytest.mark.slow


def spec(lid: str, host: str) -> LearnerSpec:
    return LearnerSpec(learner_id=lid, slot=Slot(host, 0), master_addr="127.0.0.1", master_port=1)


@pytest.fixture
def store(workspace):
    """A JobStore on an embedded Redis of the test's own."""
    redis = EmbeddedRedis(workspace / ".nbrunner").ensure()
    yield JobStore.from_url(redis.url)
    redis.stop()


@pytest.fixture
def agents(store):
    """``agents(host, worker, ...)``: learner agents on ``store``; their learners, warm
    interpreters and files are gone after the test."""
    made: list[LearnerAgent] = []

    def make(*args, **kwargs) -> LearnerAgent:
        made.append(LearnerAgent(store, *args, **kwargs))
        return made[-1]

    yield make
    for agent in made:
        agent.stopping.set()
        for p in [*agent.procs.values(), *agent.spares]:
            p.kill()
        shutil.rmtree(agent._files or "", ignore_errors=True)


def test_an_unclaimed_learner_request_is_cancelled_and_never_started(store, agents):
    t = time.monotonic()
    handle = RemoteLearner.start(store, spec("L5", "hostC"), timeout=1.0)
    assert time.monotonic() - t < 0.5  # the request is queued, nobody waited for hostC
    assert handle.poll() is None and handle.worker is None
    assert wait_for(lambda: handle.poll(), 5, 0.05, "the request to time out") == -int(signal.SIGKILL)
    assert json.loads(store.r.get(learner_status(handle.learner)))["cancelled"] is True
    # hostC's worker comes back and takes the stale request: it must not start the learner
    agent = agents("hostC", "worker-c")
    agent._start(json.loads(store.r.lpop(learner_requests("hostC"))), None)
    assert agent.procs == {}
    handle.kill()  # nothing to signal, and no error


def test_a_claimed_learner_runs_and_is_signalled_through_its_worker(store, agents):
    handle = RemoteLearner.start(store, spec("L6", "hostB"), timeout=30.0)
    msg = json.loads(store.r.lpop(learner_requests("hostB")))
    msg["argv"] = ["-c", "import time; time.sleep(60)"]  # stands in for the learner's command line
    agent = agents("hostB", "worker-b")
    store.r.set(worker_key("worker-b"), "{}")  # the worker's heartbeat
    agent._start(msg, None)
    assert handle.poll() is None and handle.worker == "worker-b" and handle.pid == agent.procs[handle.learner].pid
    agent.start()
    handle.terminate()
    assert handle.wait(10) == -int(signal.SIGTERM)


def test_a_warm_interpreter_becomes_the_requested_learner(workspace, store, agents):
    agent = agents("hostB", "worker-b", warm=1)
    agent._refill_at = 0.0  # as after a remote learner ran on this host
    agent._refill()
    spare = agent.spares[0]
    log = workspace / "logs" / "learner-L7.log"
    # a learner whose driver does not answer: it fails to connect, in the warm process
    msg = {"learner": "L7-x", "argv": ["-u", "-m", "nbrunner.elastic.learner", "--addr", "127.0.0.1",
                                       "--port", "1", "--id", "L7"],
           "env": {"NBRUNNER_ELASTIC_STORE_TIMEOUT": "1"}, "log": str(log)}
    agent._start(msg, None)
    assert agent.procs["L7-x"] is spare and agent.spares == []
    assert spare.wait(120) == 1
    agent._reap()
    assert json.loads(store.r.get(learner_status("L7-x"))) == {"pid": spare.pid, "worker": "worker-b", "rc": 1}
    assert "trying to connect to (127.0.0.1, 1)" in log.read_text()
    # a request that does not run the learner module is never handed to a warm interpreter
    agent._refill_at = 0.0
    agent._refill()
    agent._start({"learner": "other", "argv": ["-c", "pass"], "env": {}, "log": None}, None)
    assert agent.procs["other"] is not agent.spares[0]


def test_a_heartbeat_says_when_the_worker_was_not_registered(store):
    assert heartbeat(store, "worker-b", {"host": "hostB", "slots": [0]}) is True
    assert heartbeat(store, "worker-b", {"host": "hostB", "slots": [0]}) is False
    store.r.delete(worker_key("worker-b"))  # its registration expired
    assert heartbeat(store, "worker-b", {"host": "hostB", "slots": [0]}) is True
    assert 0 < live_capacity(store).expires_in <= WORKER_TTL.seconds()


def test_warm_interpreters_import_what_the_last_learner_imported_to_load(store, agents):
    agent = agents("hostB", "worker-b", warm=1)
    # stands in for a learner that loaded its job, which imported colorsys
    loads = ("import json, os; p = os.environ['NBRUNNER_LEARNER_LOADED']; "
             "json.dump(['colorsys', 'no_such_module_here'], open(p + '.t', 'w')); os.replace(p + '.t', p)")
    agent._start({"learner": "L9-x", "argv": ["-c", loads], "env": {}, "log": None}, None)
    agent._refill()
    assert len(agent.spares) == 1  # the first learners start from scratch: the spares start with them
    imports = agent._dir() / "imports.json"
    wait_for(lambda: agent._refill() or imports.exists(), 30, 0.05, "the learner's loaded file")
    assert json.loads(imports.read_text()) == ["colorsys", "no_such_module_here"]
    assert agent._loading == {} and sorted(p.name for p in imports.parent.iterdir()) == ["imports.json"]
    # a warm interpreter imports them while it waits for its request (a missing one is skipped)
    probe = ("import sys; from nbrunner.execution.warm_learner import wait_request; "
             f"line = wait_request({str(imports)!r}); print('colorsys' in sys.modules, line.decode().strip())")
    out = subprocess.run([sys.executable, "-c", probe], input="go\n", capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["True", "go"], out.stderr


def test_an_agent_removes_the_files_of_agents_whose_worker_was_killed(store, agents, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    orphan = tmp_path / f"nbrunner-learners-{gone.pid}-ab12"  # its worker was SIGKILLed
    live = tmp_path / f"nbrunner-learners-{os.getpid()}-cd34"  # a running worker's
    other = tmp_path / "nbrunner-learners-notapid"
    for d in (orphan, live, other):
        d.mkdir()
        (d / "imports.json").write_text("[]")
    agent = agents("hostB", "worker-b", warm=1)
    mine = agent._dir()
    assert mine.parent == tmp_path and mine.name.startswith(f"nbrunner-learners-{os.getpid()}-")
    assert not orphan.exists() and live.exists() and other.exists()
