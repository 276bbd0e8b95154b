"""Notebook jobs end to end on a real cluster: parameters, failures, cancel, logs, concurrency."""
from __future__ import annotations

import json
import threading

import psutil
import pytest

import nbrunner
from nbrunner.core.errors import Conflict, NotFound

from support import make_notebook, wait_for


@pytest.mark.slow
def test_parameters_are_injected_and_visible_in_the_output(cluster):
    job = cluster.submit("hello.ipynb", {"NAME": "Ada", "TIMES": 2}).wait(60)
    assert job.record.status == "completed", job.record.error
    out = job.output_notebook()
    injected = [c for c in out.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected and 'NAME = "Ada"' in injected[0].source
    printed = "".join(o.get("text", "") for c in out.cells for o in c.get("outputs", []))
    assert "hello Ada #1" in printed and "hello Ada #2" in printed and "#3" not in printed
    assert "hello Ada #2" in job.logs()
    rec = job.record
    assert rec.started_at and rec.finished_at and rec.created_at <= rec.started_at <= rec.finished_at
    assert rec.metrics == {"greetings": 2}
    assert (job.dir / "input.ipynb").exists() and (job.dir / "logs" / "papermill.log").exists()
    assert json.loads((job.dir / "job.json").read_text())["status"] == "completed"


@pytest.mark.slow
def test_input_is_snapshotted_at_submit(cluster, shared_workspace):
    nb = make_notebook(shared_workspace / "snap.ipynb", "print(VALUE)", parameters="VALUE = 'before'")
    job = cluster.submit("snap.ipynb")
    make_notebook(nb, "print('changed after submit')", parameters="VALUE = 'after'")
    job.wait(60)
    assert "before" in job.logs() and "changed after submit" not in job.logs()


@pytest.mark.parametrize(
    "code, timeout, expected",
    [
        ("raise ValueError('boom')", None, "ValueError: boom"),
        ("import sys\nsys.exit(3)", None, "SystemExit"),
        ("import time\ntime.sleep(60)", 3, "timeout"),
        ("import os\nos._exit(1)", None, "kernel died"),
    ],
    ids=["exception", "sys.exit", "timeout", "dead-kernel"],
)
@pytest.mark.slow
def test_each_failure_mode_ends_failed_with_a_one_line_error(cluster, shared_workspace, code, timeout, expected):
    name = f"fail_{abs(hash(code))}.ipynb"
    make_notebook(shared_workspace / name, "print('first cell ran')", code, "print('never')")
    job = cluster.submit(name, timeout=timeout).wait(90)
    rec = job.record
    assert rec.status == "failed"
    assert expected in rec.error and "\n" not in rec.error
    out = job.output_notebook()
    texts = "".join(o.get("text", "") for c in out.cells for o in c.get("outputs", []))
    assert "first cell ran" in texts and "never" not in texts
    # the output shows where it stopped: papermill's error mark, or nbrunner's note
    marked = any(c.metadata.get("papermill", {}).get("exception") for c in out.cells) or any(
        "nbrunner-error" in c.metadata.get("tags", []) for c in out.cells)
    assert marked
    assert "job failed" in job.logs()


@pytest.mark.slow
def test_cancel_a_queued_job(cluster, shared_workspace):
    # one GPU is asked for and the cluster has none: the job stays queued
    job = cluster.submit("hello.ipynb", min_gpus=1, max_gpus=1)
    wait_for(lambda: job.refresh().record.queue_position, what="a queue position")
    assert job.record.status == "queued"
    job.cancel()
    assert job.status == "cancelled" and job.record.finished_at and job.record.error == "cancelled"
    with pytest.raises(Conflict):
        job.cancel()
    assert not (job.dir / "output.ipynb").exists()


@pytest.mark.slow
def test_cancel_a_running_job_stops_its_kernel(cluster, shared_workspace):
    make_notebook(shared_workspace / "sleepy.ipynb",
                  "import os, pathlib\npathlib.Path(os.environ['NBRUNNER_JOB_DIR'], 'kernel.pid').write_text(str(os.getpid()))",
                  "import time\ntime.sleep(120)")
    job = cluster.submit("sleepy.ipynb")
    pid_file = job.dir / "kernel.pid"
    wait_for(pid_file.exists, 60, what="the kernel to start")
    kernel = int(pid_file.read_text())
    assert psutil.pid_exists(kernel)
    job.cancel()
    assert job.status == "cancelled"
    wait_for(lambda: not psutil.pid_exists(kernel) or psutil.Process(kernel).status() == psutil.STATUS_ZOMBIE,
             15, what="the kernel to exit")
    wait_for(lambda: job.refresh().record.released, 15, what="the worker to confirm the release")
    assert job.record.status == "cancelled"


def test_record_is_harmless_outside_a_job():
    nbrunner.record("accuracy", 0.5)  # no job, no cluster: nothing happens, nothing raises


@pytest.mark.slow
def test_fifty_jobs_from_five_threads_each_run_exactly_once(cluster, shared_workspace):
    make_notebook(shared_workspace / "once.ipynb",
                  "import os\nwith open('ran.txt', 'a') as f:\n    f.write(os.environ['NBRUNNER_JOB_ID'] + '\\n')")
    ids: list[str] = []
    lock = threading.Lock()

    def client(n: int) -> None:
        for _ in range(n):
            j = cluster.submit("once.ipynb")
            with lock:
                ids.append(j.id)

    threads = [threading.Thread(target=client, args=(10,)) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == 50
    for jid in ids:
        cluster.job(jid).wait(240)
    records = [cluster.job(j).record for j in ids]
    assert all(r.status == "completed" for r in records), [r.error for r in records if r.status != "completed"]
    assert all(r.attempt == 1 for r in records)
    ran = (shared_workspace / "ran.txt").read_text().split()
    assert sorted(ran) == sorted(ids)


@pytest.mark.slow
def test_unknown_job_id(cluster):
    with pytest.raises(NotFound, match="no job"):
        cluster.job("nosuchjob")


@pytest.mark.slow
def test_print_jobs_summary(cluster, capsys):
    nbrunner.print_jobs_summary(cluster)
    out = capsys.readouterr().out
    assert "hello" in out
    last = out.strip().splitlines()[-1]
    assert last.startswith(f"{len(cluster.jobs())} jobs: ") and "completed" in last
