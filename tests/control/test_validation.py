"""Bad requests are refused before anything is queued, with a message naming the problem."""
from __future__ import annotations

import json
import os

import pytest

from nbrunner.control import submit as service
from nbrunner.core.config import Settings
from nbrunner.core.errors import InvalidRequest
from nbrunner.execution.redis_server import EmbeddedRedis
from nbrunner.control.store import JobStore

from support import make_notebook

pytestmark = pytest.mark.slow


@pytest.fixture
def store(workspace):
    server = EmbeddedRedis(workspace / ".nbrunner").ensure()
    yield JobStore.from_url(server.url)
    server.stop()


CASES = [
    ({"notebook": "missing.ipynb"}, "notebook not found"),
    ({"notebook": "data.txt"}, "not a notebook"),
    ({"notebook": "broken.ipynb"}, "invalid JSON"),
    ({"notebook": "badformat.ipynb"}, "invalid notebook format"),
    ({"notebook": "../outside.ipynb"}, "outside the workspace"),
    ({"notebook": "/etc/passwd"}, "outside the workspace"),
    ({"notebook": "link.ipynb"}, "outside the workspace"),
    ({"notebook": "sub"}, "not a file"),
    ({"notebook": "hello.ipynb", "min_gpus": 3, "max_gpus": 1}, "min_gpus (3) is greater than max_gpus (1)"),
    ({"notebook": "hello.ipynb", "min_gpus": -1}, "min_gpus must be >= 0"),
    ({"notebook": "hello.ipynb", "max_gpus": -2}, "max_gpus must be >= 0"),
    ({"notebook": "hello.ipynb", "priority": 0}, "priority must be between 1 and 10000"),
    ({"notebook": "hello.ipynb", "priority": 10001}, "priority must be between 1 and 10000"),
    ({"notebook": "hello.ipynb", "parameters": {"x": float("nan")}}, "parameters must be JSON values"),
    ({"notebook": "hello.ipynb", "parameters": {"x": object()}}, "parameters must be JSON values"),
    ({"notebook": "hello.ipynb", "parameters": {"not valid": 1}}, "not a Python identifier"),
    ({"notebook": "hello.ipynb", "parameters": [1, 2]}, "parameters"),
    ({"notebook": "hello.ipynb", "timeout": -5}, "timeout must be a positive number"),
    ({"notebook": "hello.ipynb", "kernel": "no-such-kernel"}, "unknown kernel"),
    ({"notebook": "hello.ipynb", "min_gpus": "2"}, "min_gpus"),
    ({"notebook": "hello.ipynb", "colour": "blue"}, "unknown field 'colour'"),
    ({}, "missing field 'notebook'"),
    ("not a dict", "must be a JSON object"),
]


@pytest.mark.parametrize("request_, message", CASES, ids=[m for _, m in CASES])
def test_bad_requests_are_refused_and_change_nothing(workspace, store, request_, message):
    (workspace / "data.txt").write_text("hello")
    (workspace / "broken.ipynb").write_text("{not json")
    (workspace / "badformat.ipynb").write_text('{"cells": 5, "nbformat": 4, "nbformat_minor": 5, "metadata": {}}')
    make_notebook(workspace.parent / f"{workspace.name}-outside.ipynb", "print(1)")
    (workspace / "sub").mkdir()
    os.symlink(workspace.parent / f"{workspace.name}-outside.ipynb", workspace / "link.ipynb")
    (workspace.parent / "outside.ipynb").write_text("{}") if not (workspace.parent / "outside.ipynb").exists() else None
    settings = Settings.load(workspace)
    with pytest.raises(InvalidRequest) as info:
        service.submit(store, settings, request_)
    text = str(info.value)
    assert message in text and "\n" not in text
    assert store.all() == []
    assert not (workspace / "runs").exists() or list((workspace / "runs").iterdir()) == []


def test_a_good_request_is_recorded_and_snapshotted(workspace, store):
    settings = Settings.load(workspace)
    rec = service.submit(store, settings, {"notebook": "hello.ipynb", "parameters": {"NAME": "x"}, "max_gpus": 2})
    assert rec.status == "queued" and rec.min_gpus == 0 and rec.max_gpus == 2 and rec.priority == 5000
    assert rec.name == "hello" and rec.notebook == "hello.ipynb" and rec.output == f"runs/{rec.id}/output.ipynb"
    assert (workspace / "runs" / rec.id / "input.ipynb").read_bytes()
    assert store.get(rec.id).to_dict()["parameters"] == {"NAME": "x"}
    assert set(rec.to_dict()) >= {"id", "name", "notebook", "parameters", "status", "priority", "min_gpus", "max_gpus",
                                  "gpus", "owner", "created_at", "started_at", "finished_at", "output", "error",
                                  "progress", "metrics", "sweep", "schedule"}
    assert rec.to_dict()["schedule"] is None  # not a run of a schedule
    named = service.submit(store, settings, {"notebook": "hello.ipynb", "name": "été ☃", "parameters": {"F": 1e16}})
    assert json.loads((workspace / "runs" / named.id / "job.json").read_bytes()) == named.to_dict()


def test_a_changed_notebook_is_checked_and_snapshotted_again(workspace, store):
    """Submits reuse the check of an unchanged notebook file, never that of a changed one."""
    import nbformat

    settings = Settings.load(workspace)
    path = make_notebook(workspace / "nb.ipynb", "print('one')")
    snapshot = lambda rec: (workspace / "runs" / rec.id / "input.ipynb").read_text()  # noqa: E731
    first = service.submit(store, settings, {"notebook": "nb.ipynb"})
    assert snapshot(first) == snapshot(service.submit(store, settings, {"notebook": "nb.ipynb"}))
    assert nbformat.reads(snapshot(first), as_version=4) == nbformat.read(str(path), as_version=4)
    before = path.stat()
    make_notebook(path, "print('two')")  # same size: only the times tell it changed
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
    assert "two" in snapshot(service.submit(store, settings, {"notebook": "nb.ipynb"}))
    path.write_text('{"cells": 5, "nbformat": 4, "nbformat_minor": 5, "metadata": {}}')
    with pytest.raises(InvalidRequest, match="invalid notebook format"):
        service.submit(store, settings, {"notebook": "nb.ipynb"})
    assert len(store.all()) == 3


def test_a_kernel_removed_after_a_submit_is_unknown_again(workspace, store, monkeypatch):
    import json
    import shutil
    import sys

    spec = workspace.parent / f"{workspace.name}-jp" / "kernels" / "nbr-passing"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f",
                                                           "{connection_file}"], "display_name": "x", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(spec.parent.parent))
    settings = Settings.load(workspace)
    service.submit(store, settings, {"notebook": "hello.ipynb", "kernel": "nbr-passing"})
    shutil.rmtree(spec)
    with pytest.raises(InvalidRequest, match="unknown kernel"):
        service.submit(store, settings, {"notebook": "hello.ipynb", "kernel": "nbr-passing"})


def test_create_refuses_a_taken_id_and_files_nothing(store):
    from nbrunner.core.keys import EVENTS
    from nbrunner.core.models import JobRecord

    assert store.create(JobRecord(id="dup1", name="first", notebook="a.ipynb", owner="u"))
    assert not store.create(JobRecord(id="dup1", name="second", notebook="b.ipynb", owner="u"))
    assert store.get("dup1").name == "first" and store.count() == 1
    assert [r.id for r in store.page("queued")[0]] == ["dup1"] and store.page("running")[0] == []
    assert [f["type"] for _, f in store.r.xrange(EVENTS)] == ["submitted"]
