"""The Python API, the widgets and the CLI without Redis: with NBRUNNER_SERVICE_URL they speak REST.

The "service" is a real Jupyter server with the nbrunner extension on a real cluster (token
authentication).  Commands run in a directory of the user's own, in an environment that names no
Redis and finds no cluster to discover; each prints what the same command prints over Redis for
the same records.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile

import pytest

from support import assert_one_line_error, jupyter_server, make_notebook, short_tmpdir, wait_for

pytestmark = pytest.mark.slow

TOKEN = "service-token"
HEAVY = ("pydantic", "nbformat", "jsonschema", "nbconvert", "papermill", "torch", "IPython", "rich", "redis")


@pytest.fixture(scope="module")
def service(cluster, shared_workspace):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("NBRUNNER_", "PYTEST_"))}
    env = {**clean, **cluster.settings.env()}
    logs = short_tmpdir("nbl")
    with jupyter_server(shared_workspace, TOKEN, env, logs / "service.log") as (url, _proc):
        yield url


@pytest.fixture(scope="module")
def home(service):
    """The user's directory, with notebooks the service's workspace does not have."""
    d = short_tmpdir("nbh")
    make_notebook(d / "greet.ipynb", "import nbrunner\nprint('greetings', WHO)\nnbrunner.record('score', 3)",
                  parameters="WHO = 'you'")
    make_notebook(d / "ticker.ipynb", "import time\nfor i in range(12):\n    print('tick', i, flush=True)\n"
                                      "    time.sleep(0.2)")
    make_notebook(d / "broken.ipynb", "raise ValueError('no good')")
    (d / "spec.yaml").write_text("parameters:\n  WHO: [a, b]\nobjective: {metric: score, mode: max}\n")
    return d


def remote_env(service: str, token: str = TOKEN) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NBRUNNER_")}
    return {**env, "NBRUNNER_SERVICE_URL": f"{service}nbrunner/", "NBRUNNER_TOKEN": token,
            "NBRUNNER_RUNTIME_DIR": str(short_tmpdir("nbrt"))}  # no cluster to discover either


def remote(service, home, *args, token: str = TOKEN, env=None):
    return subprocess.run([sys.executable, "-m", "nbrunner", *args], capture_output=True, text=True, cwd=home,
                          env={**remote_env(service, token), **(env or {})}, timeout=120)


def local(workspace, *args):
    return subprocess.run([sys.executable, "-m", "nbrunner", *args, "--dir", str(workspace)], capture_output=True,
                          text=True, cwd=workspace, env={**os.environ}, timeout=120)


def settled(cluster) -> None:
    """Wait until no job of the cluster is queued or running (listings then stay as they are)."""
    wait_for(lambda: not cluster.store.count("queued") and not cluster.store.count("running"), 180, 0.2,
             "every job to finish")


def ok(p) -> str:
    assert p.returncode == 0, (p.args, p.stdout, p.stderr)
    return p.stdout


def test_commands_over_rest_print_what_they_print_over_redis(service, home, shared_workspace, cluster):
    done = json.loads(ok(remote(service, home, "submit", "greet.ipynb", "-p", "WHO", "rest", "--wait", "--json")))
    assert done["status"] == "completed" and done["notebook"] == "greet.ipynb" and done["parameters"] == {"WHO": "rest"}
    assert not (shared_workspace / "greet.ipynb").exists()  # it travelled as content
    failed = remote(service, home, "submit", "broken.ipynb", "--wait")
    assert failed.returncode == 1 and "ValueError: no good" in failed.stdout
    settled(cluster)
    for args in (["jobs"], ["jobs", "--json"], ["jobs", "--limit", "1"], ["jobs", "--status", "completed", "--json"],
                 ["show", done["id"]], ["show", done["id"], "--json"], ["logs", done["id"]], ["cluster"],
                 ["cluster", "--json"], ["schedule", "list", "--json"], ["model", "list", "--json"]):
        over_rest = ok(remote(service, home, *args))
        assert over_rest == ok(local(shared_workspace, *args)), args
    assert "greetings rest" in ok(remote(service, home, "logs", done["id"]))
    assert "the newest 1 of" in ok(remote(service, home, "jobs", "--limit", "1"))


def test_job_commands_over_rest(service, home, shared_workspace, tmp_path):
    queued = ok(remote(service, home, "submit", "greet.ipynb", "--min-gpus", "1")).strip()  # no GPU: stays queued
    assert ok(remote(service, home, "priority", queued, "9000")) == f"{queued} priority 9000\n"
    assert ok(remote(service, home, "cancel", queued)) == f"{queued} cancelled\n"
    first = json.loads(ok(remote(service, home, "submit", "greet.ipynb", "--wait", "--json")))
    again = ok(remote(service, home, "rerun", first["id"], "-p", "WHO", "twice")).strip()
    assert json.loads(ok(local(shared_workspace, "show", again, "--json")))["parameters"] == {"WHO": "twice"}
    for fmt in ("ipynb", "html", "zip"):
        mine, theirs = tmp_path / f"remote.{fmt}", tmp_path / f"local.{fmt}"
        assert ok(remote(service, home, "download", first["id"], "--format", fmt, "-o", str(mine))) == f"{mine}\n"
        ok(local(shared_workspace, "download", first["id"], "--format", fmt, "-o", str(theirs)))
        if fmt == "zip":
            assert zipfile.ZipFile(mine).namelist() == zipfile.ZipFile(theirs).namelist()
        else:
            assert mine.read_bytes() == theirs.read_bytes()
    named = remote(service, home, "download", first["id"])
    assert ok(named) == f"greet-{first['id']}.ipynb\n" and (home / f"greet-{first['id']}.ipynb").is_file()
    assert ok(remote(service, home, "delete", first["id"])) == f"{first['id']} deleted\n"
    assert_one_line_error(local(shared_workspace, "show", first["id"]), 1, f"no job '{first['id']}'")


def test_logs_follow_over_rest(service, home):
    job_id = ok(remote(service, home, "submit", "ticker.ipynb")).strip()
    followed = ok(remote(service, home, "logs", job_id, "--follow"))
    assert [line for line in followed.splitlines() if line.startswith("tick")] == [f"tick {i}" for i in range(12)]
    assert json.loads(ok(remote(service, home, "show", job_id, "--json")))["status"] == "completed"


def test_refusals_over_rest_are_one_line(service, home, shared_workspace):
    done = json.loads(ok(remote(service, home, "submit", "greet.ipynb", "--wait", "--json")))
    for args, code, words in ((["show", "nosuchjob"], 1, ["no job 'nosuchjob'"]),
                              (["show", "NoSuch/../x"], 1, ["no job"]),
                              (["cancel", done["id"]], 1, ["already completed"]),
                              (["priority", done["id"], "0"], 1, ["priority"]),
                              (["submit", "nope.ipynb"], 1, ["notebook not found: nope.ipynb"]),
                              (["submit", "spec.yaml"], 1, ["not a notebook"]),
                              (["schedule", "show", "nosuchsched"], 1, ["no schedule"]),
                              (["model", "register", done["id"], "m"], 1, [])):
        over_rest = remote(service, home, *args)
        assert_one_line_error(over_rest, code, *words)
        if args[0] not in ("submit",):  # the same refusal as over Redis
            assert over_rest.stderr == local(shared_workspace, *args).stderr, args
    assert_one_line_error(remote(service, home, "jobs", token="forged"), 1, "refused the request (403)")
    unreachable = remote(service, home, "jobs", env={"NBRUNNER_SERVICE_URL": "http://127.0.0.1:9/nbrunner/"})
    assert_one_line_error(unreachable, 2, "cannot reach the nbrunner service at http://127.0.0.1:9/nbrunner/")
    assert_one_line_error(remote(service, home, "jobs", env={"NBRUNNER_SERVICE_URL": "ftp://x/"}), 1,
                          "NBRUNNER_SERVICE_URL must be an http:// or https:// URL")


def test_schedule_and_sweep_commands_over_rest(service, home, shared_workspace):
    sid = ok(remote(service, home, "schedule", "add", "greet.ipynb", "--every", "3600", "-p", "WHO", "clock")).strip()
    shown = json.loads(ok(remote(service, home, "schedule", "show", sid)))
    assert shown["notebook"] == "greet.ipynb" and shown["parameters"] == {"WHO": "clock"}
    assert ok(remote(service, home, "schedule", "show", sid)) == ok(local(shared_workspace, "schedule", "show", sid))
    assert ok(remote(service, home, "schedule", "pause", sid)) == f"{sid} paused\n"
    assert ok(remote(service, home, "schedule", "resume", sid)).startswith(f"{sid} resumed, next run at 20")
    assert ok(remote(service, home, "schedule", "delete", sid)) == f"{sid} deleted\n"
    sweep_id = ok(remote(service, home, "sweep", "greet.ipynb", "spec.yaml")).strip()
    board = json.loads(ok(local(shared_workspace, "jobs", "--json")))["jobs"]
    trials = [j for j in board if j["sweep"] == sweep_id]
    assert sorted(j["parameters"]["WHO"] for j in trials) == ["a", "b"]
    assert all(j["notebook"] == "greet.ipynb" for j in trials)


PYTHON_API = textwrap.dedent("""
    import json, sys
    import nbrunner
    from nbrunner.client.widgets import JobsMonitor

    cluster = nbrunner.connect()
    job = cluster.submit("greet.ipynb", {"WHO": "python"}, name="py")
    job.wait(timeout=120)
    again = job.rerun({"WHO": "rerun"}).wait(timeout=120)
    sweep = cluster.sweep("greet.ipynb", "spec.yaml", name="swept").wait(timeout=180)
    schedule = cluster.schedule("greet.ipynb", {"WHO": "tick"}, every=3600)
    paused = schedule.pause().record.paused
    monitor = JobsMonitor(cluster, interval=60)
    rows = sorted((i, row.record.status) for i, row in monitor.rows.items())
    monitor.close()
    out = {"cluster": repr(cluster), "job": job.to_dict(), "status": job.status, "logs": job.logs(),
           "metrics": dict(job.metrics), "rows": job.metrics(), "cells": len(job.output_notebook().cells),
           "again": again.to_dict(), "sweep": sweep.to_dict(), "sweep_status": sweep.status,
           "best": sweep.best(), "schedule": schedule.to_dict(), "paused": paused,
           "runs": [j.id for j in schedule.runs()], "monitor": rows, "listed": [j.id for j in cluster.jobs()],
           "state": cluster.status()}
    schedule.delete()
    again.delete()
    print(json.dumps(out))
    print("LOADED", "redis" in sys.modules)
""")


def test_the_python_api_over_rest(service, home, cluster):
    p = subprocess.run([sys.executable, "-c", PYTHON_API], capture_output=True, text=True, cwd=home,
                       env=remote_env(service), timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stdout.splitlines()
    out = json.loads(lines[-2])
    assert lines[-1] == "LOADED False"  # no Redis client in the process
    assert out["cluster"] == f"<Cluster {service}nbrunner/ attached>"
    job = cluster.job(out["job"]["id"])  # the same records, over Redis
    assert out["job"] == job.to_dict() and out["status"] == "completed" and job.record.notebook == "greet.ipynb"
    assert out["logs"] == job.logs() and "greetings python" in out["logs"]
    assert out["metrics"] == dict(job.metrics) == {"score": 3} and out["rows"] == job.metrics()
    assert out["cells"] == len(job.output_notebook().cells)
    assert out["again"]["parameters"] == {"WHO": "rerun"} and cluster.store.find(out["again"]["id"]) is None
    from nbrunner.client.sweep import Sweep

    sweep = Sweep(cluster, out["sweep"]["id"])
    assert out["sweep"] == sweep.to_dict() and out["sweep_status"] == sweep.status == "completed"
    assert out["best"] == sweep.best() and out["best"]["objective"] == 3
    assert out["schedule"]["notebook"] == "greet.ipynb" and out["paused"] is True and out["runs"] == []
    assert out["schedule"]["id"] not in [s.id for s in cluster.schedules()]  # deleted over REST
    assert (out["job"]["id"], "completed") in [tuple(r) for r in out["monitor"]]
    assert out["job"]["id"] in out["listed"] and out["state"] == cluster.status()


def test_print_jobs_summary_over_rest_prints_the_local_table(service, home, cluster):
    settled(cluster)
    code = "import nbrunner\nnbrunner.print_jobs_summary(limit=5)\n"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=home,
                       env={**remote_env(service), "COLUMNS": "200"}, timeout=120)
    assert p.returncode == 0, p.stderr
    local_code = f"import nbrunner\nnbrunner.print_jobs_summary(nbrunner.connect({str(cluster.settings.workspace)!r}), limit=5)\n"
    q = subprocess.run([sys.executable, "-c", local_code], capture_output=True, text=True, env={**os.environ,
                       "COLUMNS": "200"}, timeout=120)
    assert q.returncode == 0, q.stderr
    assert p.stdout == q.stdout and "5 jobs" in p.stdout


def test_read_commands_over_rest_stay_light(service, home):
    done = json.loads(ok(remote(service, home, "jobs", "--json", "--limit", "1")))["jobs"][0]
    code = ("import atexit, sys\n"
            f"heavy = {HEAVY!r}\n"
            "atexit.register(lambda: print('LOADED', [m for m in heavy if m in sys.modules]))\n"
            "from nbrunner.client.cli import main\nmain(sys.argv[1:])\n")
    for args in (["show", done["id"]], ["show", done["id"], "--json"], ["jobs"], ["jobs", "--json"],
                 ["logs", done["id"]], ["cluster", "--json"], ["cluster"]):
        p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=home,
                           env=remote_env(service), timeout=60)
        assert p.returncode == 0 and "LOADED []" in p.stdout, (args, p.stdout[-500:], p.stderr)


BULK = textwrap.dedent("""
    import json
    import nbrunner
    from nbrunner.core.errors import InvalidRequest

    cluster = nbrunner.connect()
    before = len(cluster.jobs())
    try:
        cluster.submit_many([{"notebook": "greet.ipynb"}, {"notebook": "greet.ipynb", "max_gpus": -1}])
    except InvalidRequest as exc:
        refused = str(exc)
    after_refusal = len(cluster.jobs())
    jobs = cluster.submit_many([{"notebook": "greet.ipynb", "parameters": {"WHO": w}} for w in ("x", "y")])
    print(json.dumps({"refused": refused, "unchanged": after_refusal == before,
                      "jobs": [j.wait(timeout=120).to_dict() for j in jobs]}))
""")


def test_submit_many_over_rest_all_or_none(service, home, cluster):
    """``cluster.submit_many`` through the service: one POST /jobs, the first bad entry named, nothing
    created for it; then both jobs of a good list run from the notebook sent as content."""
    p = subprocess.run([sys.executable, "-c", BULK], capture_output=True, text=True, cwd=home,
                       env=remote_env(service), timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.splitlines()[-1])
    assert out["refused"].startswith("jobs[1]: ") and "max_gpus" in out["refused"] and out["unchanged"]
    assert [j["parameters"] for j in out["jobs"]] == [{"WHO": "x"}, {"WHO": "y"}]
    for job in out["jobs"]:
        assert job["status"] == "completed" and job["notebook"] == "greet.ipynb"
        assert "greetings " + job["parameters"]["WHO"] in cluster.job(job["id"]).logs()
