"""Where a REST request's time goes in the Jupyter server: ``python bench/profile_rest.py [PER [OUT]]``.

Starts a 2-worker cluster and a Jupyter server with the nbrunner extension on it, then sends
``POST /jobs`` (with the workers running the jobs, then with them suspended: the API alone) and
``GET /jobs?limit=50`` from 10 kept-alive clients (:mod:`keepalive`), each
``PER`` requests (default 100), while py-spy (when installed: ``pip install py-spy``) samples the
server process; the flame graphs go to ``OUT`` (default: a temporary directory) as
``post.svg``/``get.svg`` and their hottest functions as ``post.txt``/``get.txt``.  Without py-spy
it prints the rates and the server's CPU per request only.  Also prints the generator's own ceiling.

``python bench/profile_rest.py --rounds [ROUNDS [PER [alone]]]``: ``POST /jobs`` with the workers
running (``alone``: suspended), ``ROUNDS`` times (default 5) on one server, no profiler attached;
each run, the median and the worst.  Run it in a session of its own at the default priority
(``setsid -w``): the server is started in its own session, as ``nbrunner up`` starts Lab, and
the workers and kernels are in theirs, so where Linux shares the CPU by session (autogroups)
a shell given another priority would measure that priority.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_jobs import trivial_notebook  # noqa: E402
from keepalive import generator_ceiling, keepalive_load, process_cpu_s, workers_suspended  # noqa: E402
from loadgen import jupyter_server  # noqa: E402

CLIENTS = 10


def measured(pid: int, out: Path, name: str, url: str, token: str, method: str, body=None, per: int = 100) -> dict:
    """One route under load, sampled by py-spy if it is installed (the thread holding the GIL: where the CPU goes); adds the server's CPU per request."""
    spy = shutil.which("py-spy") or (str(Path(sys.executable).with_name("py-spy"))
                                     if Path(sys.executable).with_name("py-spy").exists() else None)
    proc = None
    if spy:
        proc = subprocess.Popen([spy, "record", "-p", str(pid), "-r", "200", "-o", str(out / f"{name}.txt"),
                                 "-f", "raw", "--nonblocking", "--gil"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # py-spy attached
    cpu = process_cpu_s(pid)
    got = keepalive_load(url, token, method, body, clients=CLIENTS, per=per)
    got["server_cpu_ms"] = (process_cpu_s(pid) - cpu) * 1000 / got["requests"]
    if proc is not None:
        proc.send_signal(2)
        proc.wait(60)
    return got


def top(raw: Path, n: int = 25) -> str:
    """The functions with the most samples (self + children) of py-spy's raw (collapsed) output."""
    inclusive: dict[str, int] = {}
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        total += int(count)
        for frame in set(stack.split(";")):
            inclusive[frame] = inclusive.get(frame, 0) + int(count)
    rows = sorted(inclusive.items(), key=lambda kv: -kv[1])[:n]
    return "\n".join(f"{100 * c / total:5.1f}%  {f}" for f, c in rows)


def main(per: int = 100, out: str | None = None) -> None:
    import nbrunner

    dest = Path(out or tempfile.mkdtemp(prefix="nbprof"))
    dest.mkdir(parents=True, exist_ok=True)
    ws = Path(tempfile.mkdtemp(prefix="nbr", dir="/tmp"))
    trivial_notebook(ws / "one.ipynb")
    for k in ("NBRUNNER_REDIS_URL", "NBRUNNER_STORAGE"):
        os.environ.pop(k, None)
    post = {"notebook": "one.ipynb", "parameters": {"X": 7}}
    print("generator ceiling (trivial server):", generator_ceiling(body=post))
    with nbrunner.setup_cluster(gpus=0, workers=2, workspace=ws) as cluster, \
            jupyter_server(ws, pids := []) as (base, token):
        root = base[: -len("/nbrunner/api")]
        keepalive_load(root + "/nbrunner/api/jobs", token, "POST", post, clients=2, per=5)
        for name, path, method, body, alone in (("status", "/api/status", "GET", None, False),
                                                ("post", "/nbrunner/api/jobs", "POST", post, False),
                                                ("post-alone", "/nbrunner/api/jobs", "POST", post, True),
                                                ("get", "/nbrunner/api/jobs?limit=50", "GET", None, False)):
            with workers_suspended(cluster.store.r) if alone else contextlib.nullcontext():
                got = measured(pids[0], dest, name, root + path, token, method, body, per)
            print(f"{method} {path}{' (workers suspended: the API alone)' if alone else ''}: {got['rate']:.0f}/s "
                  f"p50 {got['p50_s'] * 1000:.1f} ms p99 {got['p99_s'] * 1000:.1f} ms, server CPU "
                  f"{got['server_cpu_ms']:.2f} ms/request, {len(got['errors'])} errors; load {os.getloadavg()[0]:.1f}")
            if (dest / f"{name}.txt").exists():
                print(top(dest / f"{name}.txt"))
    print(f"profiles in {dest}")


def post_rounds(rounds: int = 5, per: int = 300, alone: bool = False) -> None:
    """``POST /jobs`` from 10 kept-alive clients, the two workers running every job (``alone``: the
    workers suspended), ``rounds`` times on one server and cluster (the queue grows by ``10 * per``
    jobs a round); each run, then the median and the worst."""
    import nbrunner

    ws = Path(tempfile.mkdtemp(prefix="nbr", dir="/tmp"))
    trivial_notebook(ws / "one.ipynb")
    for k in ("NBRUNNER_REDIS_URL", "NBRUNNER_STORAGE"):
        os.environ.pop(k, None)
    post = {"notebook": "one.ipynb", "parameters": {"X": 7}}
    runs = []
    what = "the API alone (workers suspended)" if alone else "workers running"
    with nbrunner.setup_cluster(gpus=0, workers=2, workspace=ws) as cluster, \
            jupyter_server(ws, pids := []) as (base, token), \
            workers_suspended(cluster.store.r) if alone else contextlib.nullcontext():
        url = base + "/jobs"
        keepalive_load(url, token, "POST", post, clients=2, per=5)
        for _ in range(rounds):
            cpu = process_cpu_s(pids[0])
            got = keepalive_load(url, token, "POST", post, clients=CLIENTS, per=per)
            got["server_cpu_ms"] = (process_cpu_s(pids[0]) - cpu) * 1000 / got["requests"]
            runs.append(got)
            print(f"POST /jobs, {what}: {got['rate']:.0f}/s p50 {got['p50_s'] * 1000:.1f} ms "
                  f"p99 {got['p99_s'] * 1000:.1f} ms, server CPU {got['server_cpu_ms']:.2f} ms/request, "
                  f"{len(got['errors'])} errors; load {os.getloadavg()[0]:.1f}", flush=True)
    rates = [g["rate"] for g in runs]
    print(f"POST /jobs, {what}, {rounds} runs: median {statistics.median(rates):.0f}/s, "
          f"worst {min(rates):.0f}/s, best {max(rates):.0f}/s; median p99 {statistics.median(g['p99_s'] for g in runs) * 1000:.1f} ms; "
          f"{sum(len(g['errors']) for g in runs)} errors")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rounds"]:
        post_rounds(*(int(a) for a in sys.argv[2:4]), alone=sys.argv[4:5] == ["alone"])
    else:
        main(*(int(a) if i == 0 else a for i, a in enumerate(sys.argv[1:3])))
