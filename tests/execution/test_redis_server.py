"""The embedded Redis: started, attached to, replaced after a crash, stopped cleanly."""
from __future__ import annotations

import pytest

import os
import signal
import stat

import redis

from nbrunner.execution.redis_server import EmbeddedRedis

pytestmark = pytest.mark.slow


def test_start_attach_and_stop(workspace):
    state = workspace / ".nbrunner"
    owner = EmbeddedRedis(state).ensure()
    assert owner.owned and owner.running()
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o700
    client = redis.Redis(unix_socket_path=str(owner.socket_path))
    client.set("k", "v")
    assert client.config_get("appendonly")["appendonly"] == "yes"
    assert client.config_get("port")["port"] == "0"  # no TCP listener
    other = EmbeddedRedis(state).ensure()
    assert not other.owned and other.pid() == owner.pid()
    owner.stop()
    assert not owner.socket_path.exists() and not owner.running()
    again = EmbeddedRedis(state).ensure()  # AOF brings the data back
    assert redis.Redis(unix_socket_path=str(again.socket_path)).get("k") == b"v"
    again.stop()


def test_stale_socket_and_pid_file_after_a_crash_are_replaced(workspace):
    state = workspace / ".nbrunner"
    first = EmbeddedRedis(state).ensure()
    pid = first.pid()
    os.kill(pid, signal.SIGKILL)
    first.process.wait()
    first.process = None
    assert first.socket_path.exists() and first.pid_path.exists()  # left behind by the crash
    second = EmbeddedRedis(state).ensure()
    assert second.owned and second.running() and second.pid() != pid
    second.stop()


def test_external_redis_url_starts_no_server(workspace, monkeypatch):
    import nbrunner
    from nbrunner.core.config import Settings

    server = EmbeddedRedis(workspace / "ext").ensure()
    monkeypatch.setenv("NBRUNNER_REDIS_URL", server.url)
    settings = Settings.load(workspace)
    assert not settings.embedded and settings.url == server.url
    with nbrunner.setup_cluster(gpus=0, workers=1, workspace=workspace) as cluster:
        assert cluster.supervisor.redis is None
        assert not (workspace / ".nbrunner" / "redis.sock").exists()
        job = cluster.submit("hello.ipynb").wait(60)
        assert job.record.status == "completed"
    server.stop()
