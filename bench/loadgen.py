"""A REST load generator: N jobs submitted by C concurrent clients to a real Jupyter server with
the nbrunner extension, against a real local cluster.  Used by bench/bench_load.py and by
tests/reliability/test_load.py."""
from __future__ import annotations

import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import nbformat


PROBE_EVERY_S = 0.05  # pace of the GETs sent while the POSTs run


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_notebook(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    p = nbformat.v4.new_code_cell("N = 0")
    p.metadata["tags"] = ["parameters"]
    nb.cells = [p, nbformat.v4.new_code_cell(
        "import os\nwith open('executions.log', 'a') as f:\n    f.write(os.environ['NBRUNNER_JOB_ID'] + '\\n')")]
    nbformat.write(nb, str(path))


@contextmanager
def jupyter_server(root: Path):
    """A real Jupyter server (token auth) serving ``root`` with the nbrunner extension."""
    port, token = free_port(), secrets.token_hex(16)
    env = {**os.environ, "NBRUNNER_WORKSPACE": str(root)}
    proc = subprocess.Popen([sys.executable, "-m", "jupyter_server", f"--ServerApp.root_dir={root}",
                             f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1", "--ServerApp.open_browser=False",
                             f"--IdentityProvider.token={token}", *(["--allow-root"] if os.geteuid() == 0 else [])], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/nbrunner/api"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                call(base, token, "GET", "/cluster")
                break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield base, token
    finally:
        proc.terminate()
        proc.wait(20)


def call(base: str, token: str, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def run_load(jobs: int = 500, clients: int = 10, workers: int = 2, timeout: float = 1800) -> dict:
    """Submit ``jobs`` over REST from ``clients`` threads; wait; check each ran exactly once."""
    import nbrunner

    ws = Path(tempfile.mkdtemp(prefix="nbl", dir="/tmp"))
    write_notebook(ws / "tiny.ipynb")
    latencies: list[float] = []
    ids: list[str] = []
    errors: list[str] = []
    lock = threading.Lock()
    saved = {k: os.environ.pop(k) for k in ("NBRUNNER_REDIS_URL", "NBRUNNER_STORAGE") if k in os.environ}
    try:
        with nbrunner.setup_cluster(gpus=0, workers=workers, workspace=ws) as cluster, jupyter_server(ws) as (base, token):
            def client(n: int, offset: int) -> None:
                for i in range(n):
                    t = time.perf_counter()
                    code, body = call(base, token, "POST", "/jobs", {"notebook": "tiny.ipynb", "parameters": {"N": offset + i}})
                    dt = time.perf_counter() - t
                    with lock:
                        latencies.append(dt)
                        (ids.append(body["id"]) if code == 201 else errors.append(f"{code} {body}"))

            def probe() -> None:  # a user's listing while the POSTs run: is it stalled by them?
                while not posting_done.wait(PROBE_EVERY_S):
                    t = time.perf_counter()
                    call(base, token, "GET", "/jobs?status=running")
                    probe_lat.append(time.perf_counter() - t)

            per = jobs // clients
            probe_lat: list[float] = []
            posting_done = threading.Event()
            prober = threading.Thread(target=probe)
            t0 = time.perf_counter()
            threads = [threading.Thread(target=client, args=(per, k * per)) for k in range(clients)]
            prober.start()
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            submitted = time.perf_counter() - t0
            posting_done.set()
            prober.join()
            # GET latency under load, while the jobs run
            get_lat = []
            for _ in range(50):
                t = time.perf_counter()
                call(base, token, "GET", "/jobs?status=running")
                get_lat.append(time.perf_counter() - t)
            deadline = time.monotonic() + timeout
            while True:
                pending = [r for r in cluster.store.all() if not r.finished]
                if not pending:
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{len(pending)} jobs still unfinished")
                time.sleep(1)
            total = time.perf_counter() - t0
            records = cluster.store.all()
    finally:
        os.environ.update(saved)
    executed = (ws / "executions.log").read_text().split()
    q = statistics.quantiles(latencies, n=100)
    gq = statistics.quantiles(get_lat, n=100)
    return {
        "jobs": jobs, "accepted": len(ids), "errors": errors,
        "completed": sum(r.status == "completed" for r in records),
        "not_completed": [(r.id, r.status, r.error, r.attempt) for r in records if r.status != "completed"],
        "executed_once": len(executed) == len(set(executed)) == len(ids) and set(executed) == set(ids),
        "post_p50_s": statistics.median(latencies), "post_p99_s": q[98],
        "get_p50_s": statistics.median(get_lat), "get_p99_s": gq[98],
        "get_during_post_p50_s": statistics.median(probe_lat) if probe_lat else None,
        "get_during_post_p99_s": statistics.quantiles(probe_lat, n=100)[98] if len(probe_lat) > 1 else None,
        "submit_s": submitted, "total_s": total,
    }
