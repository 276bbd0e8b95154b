"""Running clusters are discoverable (like `jupyter server list`): a command run in, above or below
a running cluster's workspace finds it, `nbrunner list` shows them, stale records are cleaned."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

import nbrunner
from nbrunner.control import discovery
from nbrunner.core.config import Settings

from support import REPO, short_tmpdir

pytestmark = pytest.mark.slow


@pytest.fixture
def runtime(monkeypatch) -> Path:
    folder = short_tmpdir("nbrrt")
    monkeypatch.setenv("NBRUNNER_RUNTIME_DIR", str(folder))
    for name in ("NBRUNNER_WORKSPACE", "NBRUNNER_REDIS_URL", "NBRUNNER_STORAGE"):
        monkeypatch.delenv(name, raising=False)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def fake(runtime: Path, workspace: Path, pid: int | None = None, name: str = "x") -> Path:
    pid = pid or os.getpid()
    info = {"workspace": str(workspace), "storage": str(workspace / "runs"), "redis_url": "unix:///nowhere",
            "embedded": True, "pid": pid, "process_started": psutil.Process(os.getpid()).create_time()
            if pid == os.getpid() else 0, "started_at": "2026-01-01T00:00:00Z", "lab_url": None}
    path = runtime / f"cluster-{name}.json"
    path.write_text(json.dumps(info))
    return path


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NBRUNNER_WORKSPACE", "NBRUNNER_REDIS_URL")}
    return subprocess.run([sys.executable, "-m", "nbrunner", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=180)


def test_a_cluster_is_found_from_above_and_below_its_workspace_and_listed(runtime):
    top = short_tmpdir()
    ws = top / "notebooks"
    (ws / "deep").mkdir(parents=True)
    shutil.copy(REPO / "notebooks" / "hello.ipynb", ws / "hello.ipynb")
    cluster = nbrunner.setup_cluster(gpus=0, workers=1, workspace=ws)
    try:
        listed = cli("list", "--json", cwd=top)
        assert listed.returncode == 0, listed.stderr
        clusters = json.loads(listed.stdout)["clusters"]
        assert [c["workspace"] for c in clusters] == [str(ws)] and clusters[0]["pid"] == os.getpid()
        above = cli("submit", "notebooks/hello.ipynb", "--wait", cwd=top)  # from the directory above
        assert above.returncode == 0, above.stderr
        job_id = above.stdout.split()[0]
        assert cluster.job(job_id).status == "completed"
        below = cli("show", job_id, "--json", cwd=ws / "deep")  # from a directory inside it
        assert below.returncode == 0 and json.loads(below.stdout)["id"] == job_id, below.stderr
    finally:
        cluster.shutdown()
    assert list(runtime.glob("cluster-*.json")) == []  # removed at shutdown
    gone = cli("jobs", cwd=top)
    assert gone.returncode == 2 and "no nbrunner cluster is running" in gone.stderr
    assert "no nbrunner cluster is running" in cli("list", cwd=top).stdout


def test_resolution_order_stale_records_and_ambiguity(runtime, monkeypatch):
    a, b, elsewhere = short_tmpdir(), short_tmpdir(), short_tmpdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = fake(runtime, elsewhere, pid=dead.pid, name="stale")
    assert discovery.running() == [] and not stale.exists()  # a dead cluster's record is cleaned
    assert discovery.resolve(cwd=elsewhere).workspace == elsewhere  # none running: the cwd as before

    fake(runtime, a, name="a")
    assert discovery.resolve(cwd=elsewhere).workspace == a  # the only running cluster
    assert discovery.resolve(cwd=a / "sub").workspace == a

    fake(runtime, b, name="b")
    assert discovery.resolve(cwd=b).workspace == b  # in its workspace
    with pytest.raises(discovery.AmbiguousCluster) as info:
        discovery.resolve(cwd=elsewhere)
    assert str(a) in str(info.value) and str(b) in str(info.value) and "--dir" in str(info.value)

    assert discovery.resolve(workspace=elsewhere).workspace == elsewhere  # explicit --dir wins
    monkeypatch.setenv("NBRUNNER_WORKSPACE", str(elsewhere))
    assert discovery.resolve(cwd=a).workspace == elsewhere
    monkeypatch.delenv("NBRUNNER_WORKSPACE")
    monkeypatch.setenv("NBRUNNER_REDIS_URL", "redis://127.0.0.1:1/0")
    assert discovery.resolve(cwd=a) == Settings.load(None)

    ambiguous = cli("jobs", cwd=elsewhere)
    assert ambiguous.returncode == 2 and "several nbrunner clusters are running" in ambiguous.stderr
    assert len(ambiguous.stderr.strip().splitlines()) == 1
