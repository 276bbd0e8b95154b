"""Shared fixtures: short-path workspaces (unix sockets) and real clusters."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support import REPO, rest_api, short_tmpdir

# clusters started by the tests register in a runtime directory of their own, not the user's
os.environ["NBRUNNER_RUNTIME_DIR"] = str(short_tmpdir("nbrrt"))

# Fixtures that start processes or connect to a server: a test using one belongs to the slow tier.
PROCESS_FIXTURES = {"cluster", "jp_fetch", "jp_serverapp", "api", "lab", "page", "redis_url", "hub", "hub_cluster"}


class StartedProcess(AssertionError):
    """A test of the fast tier started a process or opened a connection."""


def _refuse(what: str):
    def call(*args, **kwargs):
        raise StartedProcess(f"a test of the fast tier {what}: mark it slow (pytest.mark.slow)")
    return call


def pytest_configure(config) -> None:
    if (config.option.markexpr or "").strip() == "not slow":
        # the fast tier may start no process and open no connection, in a test or a fixture of any scope
        import socket
        import subprocess

        subprocess.Popen._execute_child = _refuse("started a process")
        os.fork = _refuse("forked")
        os.posix_spawn = _refuse("spawned a process")
        socket.socket.connect = _refuse("opened a connection")


@pytest.fixture(autouse=True)
def fast_tier_guard(request):
    """A test not marked ``slow`` uses none of the fixtures that start processes."""
    if request.node.get_closest_marker("slow") is None:
        used = PROCESS_FIXTURES.intersection(request.fixturenames)
        if used:
            raise StartedProcess(f"{request.node.nodeid} uses {sorted(used)}: mark it slow")


@pytest.fixture
def workspace(monkeypatch) -> Path:
    ws = short_tmpdir()
    for name in ("hello.ipynb", "digits.ipynb"):
        shutil.copy(REPO / "notebooks" / name, ws / name)
    monkeypatch.delenv("NBRUNNER_REDIS_URL", raising=False)
    monkeypatch.delenv("NBRUNNER_STORAGE", raising=False)
    monkeypatch.setenv("NBRUNNER_WORKSPACE", str(ws))
    yield ws
    shutil.rmtree(ws, ignore_errors=True)


@pytest.fixture(scope="module")
def shared_workspace() -> Path:
    ws = short_tmpdir()
    for name in ("hello.ipynb", "digits.ipynb"):
        shutil.copy(REPO / "notebooks" / name, ws / name)
    yield ws
    shutil.rmtree(ws, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(shared_workspace):
    """A real local cluster (embedded Redis, scheduler, 2 workers, no GPU slots) for a test module."""
    import nbrunner

    saved = {k: os.environ.pop(k) for k in ("NBRUNNER_REDIS_URL", "NBRUNNER_STORAGE") if k in os.environ}
    c = nbrunner.setup_cluster(gpus=0, workers=2, workspace=shared_workspace)
    yield c
    c.shutdown()
    os.environ.update(saved)


@pytest.fixture
def jp_server_config():
    """The Jupyter server of pytest_jupyter's ``jp_*`` fixtures, with the nbrunner extension on (a module
    may override it; each module points ``jp_root_dir`` at its own workspace)."""
    return {"ServerApp": {"jpserver_extensions": {"nbrunner.server": True}}}


@pytest.fixture
def api(jp_fetch):
    """The nbrunner REST API through ``jp_fetch``: ``await api(method, *path, body=..., **params)``
    returns ``(status code, JSON body)``."""
    return rest_api(jp_fetch)
