"""Rerun, delete and download from the command line and from Python, against a real cluster."""
from __future__ import annotations

import json
import sys
import zipfile

import pytest

from support import assert_one_line_error, make_notebook
from .test_cli import run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ws(cluster, shared_workspace):
    return shared_workspace


@pytest.fixture(scope="module")
def done(ws):
    p = run("submit", "hello.ipynb", "-p", "NAME", "cli", "--name", "greet", "--wait", "--json", cwd=ws)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_rerun_with_changed_parameters(ws, done):
    p = run("rerun", done["id"], "-p", "TIMES", "2", cwd=ws)
    assert p.returncode == 0, p.stderr
    new_id = p.stdout.strip()
    assert new_id and new_id != done["id"] and "\n" not in new_id
    shown = json.loads(run("show", new_id, "--json", cwd=ws).stdout)
    assert shown["parameters"] == {"NAME": "cli", "TIMES": 2} and shown["name"] == "greet"
    from nbrunner import connect

    job = connect(ws).job(new_id).wait(90)
    assert job.status == "completed", job.error
    assert "hello cli #2" in job.logs() and "hello cli #3" not in job.logs()
    assert "hello cli #2" in (job.dir / "output.html").read_text()


def test_download_each_format(ws, done, tmp_path):
    p = run("download", done["id"], cwd=tmp_path, env={"NBRUNNER_WORKSPACE": str(ws)})
    assert p.returncode == 0, p.stderr
    path = tmp_path / f"greet-{done['id']}.ipynb"
    assert p.stdout.strip() == path.name and json.loads(path.read_text())["nbformat"] == 4
    out = tmp_path / "page.html"
    p = run("download", done["id"], "--format", "html", "-o", str(out), cwd=ws)
    assert p.returncode == 0 and "hello cli #3" in out.read_text()
    out = tmp_path / "all.zip"
    p = run("download", done["id"], "--format", "zip", "-o", str(out), cwd=ws)
    names = zipfile.ZipFile(out).namelist()
    assert p.returncode == 0 and {"input.ipynb", "output.ipynb", "output.html", "metrics.jsonl"} <= set(names)
    p = run("download", done["id"], "--format", "html", "-o", "-", cwd=ws)
    assert p.returncode == 0 and p.stdout.lower().lstrip().startswith("<!doctype html")
    assert_one_line_error(run("download", done["id"], "--format", "pdf", cwd=ws), 2, "--format")
    assert not list(tmp_path.glob(".*part"))


def test_delete_a_finished_job_and_refuse_a_running_one(ws):
    make_notebook(ws / "sleepy.ipynb", "import time\ntime.sleep(120)")
    running = run("submit", "sleepy.ipynb", cwd=ws).stdout.strip()
    from nbrunner import connect
    from support import wait_for

    cluster = connect(ws)
    wait_for(lambda: cluster.job(running).status == "running", 60, what="the job to run")
    assert_one_line_error(run("delete", running, cwd=ws), 1, "running", "cancel it")
    assert cluster.job(running).dir.is_dir()
    cluster.job(running).cancel()

    job_id = run("submit", "hello.ipynb", "--wait", cwd=ws).stdout.split()[0]
    job_dir = cluster.job(job_id).dir
    p = run("delete", job_id, cwd=ws)
    assert p.returncode == 0 and p.stdout.strip() == f"{job_id} deleted"
    assert not job_dir.exists()
    assert_one_line_error(run("show", job_id, cwd=ws), 1, "no job")
    assert_one_line_error(run("delete", job_id, cwd=ws), 1, "no job")


def test_unknown_jobs_one_line(ws):
    for args in (["rerun", "nosuchjob"], ["delete", "nosuchjob"], ["download", "nosuchjob"]):
        assert_one_line_error(run(*args, cwd=ws), 1, "no job 'nosuchjob'")
    assert_one_line_error(run("rerun", "nosuchjob", "-p", "A", cwd=ws), 2, "-p needs a name and a value")


def test_python_rerun_metrics_and_delete(ws, done):
    from nbrunner import connect

    cluster = connect(ws)
    job = cluster.job(done["id"])
    assert job.metrics["greetings"] == 3  # the latest values, as before
    rows = job.metrics()
    assert [r["greetings"] for r in rows] == [3] and "time" in rows[0]
    again = job.rerun({"NAME": "py"}).wait(90)
    assert again.status == "completed" and again.record.parameters == {"NAME": "py"}
    assert [h["status"] for h in again.to_dict()["history"]] == ["queued", "running", "completed"]
    again.delete()
    assert not again.dir.exists() and cluster.store.find(again.id) is None
    with pytest.raises(Exception, match="identifier"):
        job.rerun({"bad name": 1})


def test_read_commands_stay_light(ws, done):
    """The read commands import neither pydantic nor nbformat (nor papermill, torch) nor rich
    (`jobs`, `cluster` and `show` print plain text), and `list` (which reads no Redis) not even
    redis-py."""
    code = ("import atexit, sys\n"
            "heavy = ('pydantic', 'nbformat', 'jsonschema', 'nbconvert', 'papermill', 'torch', 'IPython', 'rich', 'redis')\n"
            "atexit.register(lambda: print('LOADED', [m for m in heavy if m in sys.modules]))\n"
            "from nbrunner.client.cli import main\nmain(sys.argv[1:])\n")
    import subprocess

    for args, loaded in [(["show", done["id"]], ["redis"]), (["show", done["id"], "--json"], ["redis"]),
                         (["jobs"], ["redis"]), (["jobs", "--json", "--status", "completed"], ["redis"]),
                         (["logs", done["id"]], ["redis"]), (["cluster", "--json"], ["redis"]), (["cluster"], ["redis"]),
                         (["list", "--json"], [])]:
        p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ws, timeout=60)
        assert p.returncode == 0 and f"LOADED {loaded}" in p.stdout, (args, p.stdout[-500:], p.stderr)
