"""Pre-warmed single-use kernels: each worker starts the next job's kernel ahead; every job still
gets a fresh kernel, in its own working directory and environment; a dead spare is started again;
none is left when the worker stops."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import time

import psutil
import pytest

import nbrunner
from nbrunner.core.keys import WORKERS, worker_key

from support import make_notebook, wait_for

pytestmark = pytest.mark.slow

PROBE = """
import json, os, random, sys
print("PROBE", json.dumps({"pid": os.getpid(), "cwd": os.getcwd(), "job": os.environ.get("NBRUNNER_JOB_ID"),
                           "spare_env": "NBRUNNER_SPARE_KERNEL" in os.environ, "leak": "LEAK" in globals(),
                           "ppid": os.getppid(), "leader": os.getpgid(0) == os.getpid(), "random": random.random(),
                           "argv0": os.path.basename(sys.argv[0]), "nbrunner": "nbrunner" in sys.modules}))
LEAK = 1
"""


def probe(job) -> dict:
    line = [ln for ln in job.logs().splitlines() if ln.startswith("PROBE ")][-1]
    return json.loads(line[len("PROBE "):])


def spare(cluster) -> dict:
    """The one worker's registration: its pre-warmed kernel's pid (None while there is none)."""
    names = cluster.store.r.smembers(WORKERS)
    regs = [json.loads(cluster.store.r.get(worker_key(n)) or "{}") for n in names]
    assert len(regs) == 1
    return regs[0]


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.fixture
def one_worker(workspace):
    make_notebook(workspace / "sub" / "probe.ipynb", PROBE, parameters="N = 0")
    with nbrunner.setup_cluster(gpus=0, workers=1, workspace=workspace) as cluster:
        yield cluster


def test_each_job_gets_the_spare_kernel_fresh_in_its_own_directory_and_environment(one_worker, workspace):
    cluster = one_worker
    first_spare = wait_for(lambda: spare(cluster).get("spare_kernel"), 30, what="a pre-warmed kernel")
    a = cluster.submit("sub/probe.ipynb", {"N": 1}).wait(60)
    assert a.record.status == "completed", a.record.error
    seen_a = probe(a)
    assert seen_a["pid"] == first_spare  # the job ran on the kernel started ahead
    assert seen_a["cwd"] == str(workspace / "sub") and seen_a["job"] == a.id and not seen_a["spare_env"]
    second_spare = wait_for(lambda: (lambda p: p if p and p != first_spare else None)(spare(cluster).get("spare_kernel")),
                            30, what="a new pre-warmed kernel")
    assert not alive(first_spare)  # single use: gone with its job
    b = cluster.submit("sub/probe.ipynb", {"N": 2}).wait(60)
    assert b.record.status == "completed", b.record.error
    seen_b = probe(b)
    assert seen_b["pid"] == second_spare and seen_b["job"] == b.id, b.logs()
    assert seen_b["leak"] is False  # nothing of the first job's namespace


def test_kernels_forked_from_the_fork_server_are_like_launched_ones(one_worker):
    """Each kernel is forked from the worker's fork server, yet is the worker's child, leads its
    own process group, has its own random state, shows as ipykernel_launcher, and has nothing
    of nbrunner imported."""
    cluster = one_worker
    wait_for(lambda: spare(cluster).get("spare_kernel"), 30, what="a pre-warmed kernel")  # the server is up
    worker_pid = spare(cluster)["pid"]
    forkserver = [p for p in psutil.Process(worker_pid).children() if "kernel_forkserver" in " ".join(p.cmdline())]
    assert len(forkserver) == 1
    seen = []
    for n in range(2):
        job = cluster.submit("sub/probe.ipynb", {"N": n}).wait(60)
        assert job.record.status == "completed", job.record.error
        seen.append(probe(job))
    for s in seen:
        assert s["ppid"] == worker_pid and s["leader"] and s["argv0"] == "ipykernel_launcher.py", s
        assert s["nbrunner"] is False
    assert seen[0]["pid"] != seen[1]["pid"] and seen[0]["random"] != seen[1]["random"]
    assert forkserver[0].is_running()  # one server for every kernel


def test_a_spare_kernel_that_dies_is_started_again(one_worker):
    cluster = one_worker
    dead = wait_for(lambda: spare(cluster).get("spare_kernel"), 30, what="a pre-warmed kernel")
    os.kill(dead, signal.SIGKILL)
    fresh = wait_for(lambda: (lambda p: p if p and p != dead else None)(spare(cluster).get("spare_kernel")),
                     30, what="the dead spare to be replaced")
    assert alive(fresh)
    job = cluster.submit("sub/probe.ipynb").wait(60)
    assert job.record.status == "completed", job.record.error
    assert probe(job)["pid"] == fresh


def test_a_timeout_interrupts_the_pre_warmed_kernel(one_worker, workspace):
    make_notebook(workspace / "slow.ipynb", "import time\nfor _ in range(100):\n    time.sleep(0.1)")
    cluster = one_worker
    kernel = wait_for(lambda: spare(cluster).get("spare_kernel"), 30, what="a pre-warmed kernel")
    job = cluster.submit("slow.ipynb", timeout=2).wait(60)
    pm_log = (cluster.settings.job_dir(job.id) / "logs" / "papermill.log").read_text()
    assert job.record.status == "failed" and job.record.error.startswith("timeout"), job.logs() + pm_log
    # the kernel is asked to shut down as the job's end is recorded, and exits just after (or is
    # killed by its work horse): gone within its manager's shutdown wait, not with the record
    wait_for(lambda: not alive(kernel), 15, what="the interrupted kernel to exit")


def test_a_killed_pre_warmed_kernel_is_told_apart_and_the_job_retried(one_worker, workspace):
    make_notebook(workspace / "die.ipynb", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    cluster = one_worker
    wait_for(lambda: spare(cluster).get("spare_kernel"), 30, what="a pre-warmed kernel")
    job = cluster.submit("die.ipynb").wait(120)
    assert job.record.status == "failed" and "SIGKILL" in job.record.error, job.record.error
    # killed from outside: the worker runs it again
    wait_for(lambda: job.refresh().record.attempt > 1, 60, what="the job to be run again")


def test_no_kernel_is_left_when_the_worker_stops(workspace):
    with nbrunner.setup_cluster(gpus=0, workers=1, workspace=workspace) as cluster:
        pid = wait_for(lambda: spare(cluster).get("spare_kernel"), 30, what="a pre-warmed kernel")
        assert alive(pid)
        files = {p for p in psutil.Process(pid).cmdline() if p.endswith(".json")}  # as ps shows it
        assert files and all(os.path.exists(f) for f in files)
    wait_for(lambda: not alive(pid), 15, what="the spare kernel to be gone")
    assert not any(os.path.exists(f) for f in files)


def test_a_stop_as_a_job_ends_stops_the_worker_while_it_starts_the_next_kernel(one_worker):
    """The supervisor's stop (SIGTERM twice) while the worker, its job done, asks its fork server
    for the next spare kernel: rq's handler raises there (the worker is idle), and the fork-server
    client's fallback used to swallow it, leaving a worker listening until it was killed."""
    cluster = one_worker
    worker = next(c for c in cluster.supervisor.children if c.name.startswith("worker"))
    wait_for(lambda: spare(cluster).get("spare_kernel"), 30, what="a pre-warmed kernel")
    server = next(p for p in psutil.Process(worker.proc.pid).children() if "kernel_forkserver" in " ".join(p.cmdline()))
    job = cluster.submit("sub/probe.ipynb")  # runs on the spare kernel started before
    wait_for(lambda: job.refresh().record.status == "running", 60, 0.01, what="the job to start")
    server.suspend()  # the worker's next request for a kernel waits for it

    def asking_the_server() -> bool:  # job ended, and the worker waits in a select() (before it settles the job:
        with open(f"/proc/{worker.proc.pid}/wchan") as f:  # the next kernel starts during the bookkeeping)
            wchan = f.read()
        rec = job.refresh().record
        return rec.finished and ("poll" in wchan or "select" in wchan)

    try:
        wait_for(asking_the_server, 60, 0.01, what="the worker to ask for the next kernel")
        for _ in range(2):
            worker.proc.send_signal(signal.SIGTERM)
            time.sleep(0.2)
    finally:
        with contextlib.suppress(psutil.NoSuchProcess):
            server.resume()
    assert worker.proc.wait(20) == 0
    assert not cluster.store.r.smembers(WORKERS)
    assert job.refresh().record.released  # the job was settled before the worker stopped
