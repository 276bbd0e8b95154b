"""A REST load generator: N jobs submitted by C concurrent clients against a real local cluster,
either to a real Jupyter server with the nbrunner extension (``front="extension"``: one token, the
server's user) or through a real JupyterHub's proxy to ``nbrunner service`` (``front="hub"``: each
client a hub user with their own token, tests/hub/harness.py).  Used by bench/bench_load.py,
bench/bench_hub_load.py, tests/reliability/test_load.py and tests/hub/test_hub_load.py."""
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
def jupyter_server(root: Path, pids: list[int] | None = None):
    """A real Jupyter server (token auth) serving ``root`` with the nbrunner extension (its process
    id appended to ``pids`` if given), in a session of its own."""
    port, token = free_port(), secrets.token_hex(16)
    env = {**os.environ, "NBRUNNER_WORKSPACE": str(root)}
    proc = subprocess.Popen([sys.executable, "-m", "jupyter_server", f"--ServerApp.root_dir={root}",
                             f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1", "--ServerApp.open_browser=False",
                             f"--IdentityProvider.token={token}", *(["--allow-root"] if os.geteuid() == 0 else [])], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # as `nbrunner up` starts Lab
    base = f"http://127.0.0.1:{port}/nbrunner/api"
    if pids is not None:
        pids.append(proc.pid)
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


@contextmanager
def hub_front(settings, clients: int):
    """A real JupyterHub running ``nbrunner service`` on the cluster of ``settings``, with one hub user
    per client: yields the API's URL through the hub's proxy, each client's token and user name."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "hub"))
    from harness import Hub

    with Hub(settings.env()) as hub:
        users = [f"user{k:02d}" for k in range(clients)]
        for name in users:
            hub.add_user(name)
        yield hub.service_api, [hub.token(name) for name in users], users


@contextmanager
def extension_front(settings, clients: int):
    """A real Jupyter server with the nbrunner extension on the workspace of ``settings``: yields its
    API's URL, and its one token and OS user for every client."""
    import getpass

    with jupyter_server(settings.workspace) as (base, token):
        yield base, [token] * clients, [getpass.getuser()] * clients


FRONTS = {"extension": extension_front, "hub": hub_front}


def call(base: str, token: str, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def run_load(jobs: int = 500, clients: int = 10, workers: int = 2, timeout: float = 1800,
             front: str = "extension") -> dict:
    """Submit ``jobs`` over REST from ``clients`` threads through ``front`` (see the module
    docstring); wait; check each ran exactly once, owned by the user who submitted it."""
    import nbrunner

    ws = Path(tempfile.mkdtemp(prefix="nbl", dir="/tmp"))
    write_notebook(ws / "tiny.ipynb")
    saved = {k: os.environ.pop(k) for k in ("NBRUNNER_REDIS_URL", "NBRUNNER_STORAGE") if k in os.environ}
    try:
        with nbrunner.setup_cluster(gpus=0, workers=workers, workspace=ws) as cluster, \
                FRONTS[front](cluster.settings, clients) as (base, tokens, users):
            t0 = time.perf_counter()
            res = drive(base, tokens, jobs // clients)
            deadline = time.monotonic() + timeout
            while pending := [r for r in cluster.store.all() if not r.finished]:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{len(pending)} jobs still unfinished")
                time.sleep(1)
            total = time.perf_counter() - t0
            records = {r.id: r for r in cluster.store.all()}
    finally:
        os.environ.update(saved)
    ids = [i for mine in res["ids"] for i in mine]
    executed = (ws / "executions.log").read_text().split()
    q, gq = statistics.quantiles(res["post"], n=100), statistics.quantiles(res["get"], n=100)
    probe = res["get_during_post"]
    return {
        "front": front, "jobs": jobs, "accepted": len(ids), "errors": res["errors"],
        "completed": sum(r.status == "completed" for r in records.values()),
        "not_completed": [(r.id, r.status, r.error, r.attempt) for r in records.values() if r.status != "completed"],
        "executed_once": len(executed) == len(set(executed)) == len(ids) and set(executed) == set(ids),
        "right_owner": all(records[i].owner == user for mine, user in zip(res["ids"], users) for i in mine),
        "post_p50_s": statistics.median(res["post"]), "post_p99_s": q[98],
        "get_p50_s": statistics.median(res["get"]), "get_p99_s": gq[98],
        "get_during_post_p50_s": statistics.median(probe) if probe else None,
        "get_during_post_p99_s": statistics.quantiles(probe, n=100)[98] if len(probe) > 1 else None,
        "submit_s": res["submit_s"], "total_s": total,
    }


def drive(base: str, tokens: list[str], per: int) -> dict:
    """Client k POSTs ``per`` jobs with ``tokens[k]`` while a prober lists jobs; then 50 more listings.
    Returns the ids each client got, the errors and the latencies (s)."""
    ids: list[list[str]] = [[] for _ in tokens]
    out: dict = {"ids": ids, "errors": [], "post": [], "get": [], "get_during_post": []}
    lock = threading.Lock()
    posting_done = threading.Event()

    def client(k: int) -> None:
        for i in range(per):
            t = time.perf_counter()
            code, body = call(base, tokens[k], "POST", "/jobs", {"notebook": "tiny.ipynb", "parameters": {"N": k * per + i}})
            dt = time.perf_counter() - t
            with lock:
                out["post"].append(dt)
                (ids[k].append(body["id"]) if code == 201 else out["errors"].append(f"{code} {body}"))

    def probe() -> None:  # a user's listing while the POSTs run: is it stalled by them?
        while not posting_done.wait(PROBE_EVERY_S):
            t = time.perf_counter()
            call(base, tokens[0], "GET", "/jobs?status=running")
            out["get_during_post"].append(time.perf_counter() - t)

    prober = threading.Thread(target=probe)
    threads = [threading.Thread(target=client, args=(k,)) for k in range(len(tokens))]
    t0 = time.perf_counter()
    prober.start()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    out["submit_s"] = time.perf_counter() - t0
    posting_done.set()
    prober.join()
    for _ in range(50):  # GET latency under load, while the jobs run
        t = time.perf_counter()
        call(base, tokens[0], "GET", "/jobs?status=running")
        out["get"].append(time.perf_counter() - t)
    return out
