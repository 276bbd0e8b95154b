"""Start-up: each nbrunner process from spawn to ready, against a peer started the same way.

On one embedded Redis (no other nbrunner process), A and B in turn, ``runs`` times, medians:

- CLI: ``nbrunner jobs --json`` until it exits, vs ``rq info`` on the same Redis;
- worker: ``nbrunner worker --slots none`` until it is registered (``live_capacity``), vs
  ``rq worker`` until rq lists it;
- scheduler: ``nbrunner scheduler`` until it holds the lease, vs ``rq worker`` as above;
- Jupyter server extension: ``jupyter server`` until ``GET /nbrunner/api/cluster`` answers, vs
  the same server without the extension until ``GET /api/status`` answers;
- JupyterLab as ``nbrunner up`` starts it (``python -m nbrunner.execution.lab``) until ``GET
  /nbrunner/api/cluster`` answers, vs ``python -m jupyterlab`` with the same arguments;
- learner: importing ``nbrunner.elastic.learner`` (what ``python -m nbrunner.elastic.learner`` does
  before it connects to its driver), vs ``python -c "import torch.distributed"``.

With ``NBRUNNER_BENCH_BEFORE`` set to a checkout of an older nbrunner (``git worktree add``), each
round also starts that tree's process (same arguments, its package first on ``PYTHONPATH``), and a
second row per process gives this tree's time against the older tree's.
"""
from __future__ import annotations

import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loadgen import free_port  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _rq() -> list[str]:
    beside = Path(sys.executable).parent / "rq"
    return [str(beside)] if beside.exists() else [sys.executable, "-m", "rq.cli"]


def until(argv: list[str], env: dict, ready: Callable[[], bool], timeout: float = 120.0) -> float:
    """Seconds from spawning ``argv`` until ``ready()`` (or the process exits 0, when ``ready`` is None).
    Run outside the repository, so that ``PYTHONPATH`` (not the working directory) says which
    nbrunner ``python -m nbrunner`` imports."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            cwd=tempfile.gettempdir())
    try:
        while True:
            if ready is None:
                if proc.wait(timeout) != 0:
                    raise RuntimeError(f"{argv} exited {proc.returncode}: {proc.stderr.read()[-300:]!r}")
                return time.perf_counter() - t
            if ready():
                return time.perf_counter() - t
            if proc.poll() is not None:
                raise RuntimeError(f"{argv} exited {proc.returncode} before it was ready: {proc.stderr.read()[-300:]!r}")
            if time.perf_counter() - t > timeout:
                raise RuntimeError(f"{argv} not ready after {timeout} s")
            time.sleep(0.01)
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def answers(url: str, token: str) -> Callable[[], bool]:
    def check() -> bool:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": f"token {token}"}),
                                        timeout=5) as resp:
                return resp.status == 200
        except (urllib.error.URLError, ConnectionError, OSError):
            return False

    return check


def run(runs: int = 5, only: str | None = None) -> list[dict]:
    """``only``: run just the processes whose row names contain it."""
    from rq import Worker

    from nbrunner.control.registration import live_capacity
    from nbrunner.core.config import Settings
    from nbrunner.core.keys import LEASE
    from nbrunner.control.store import JobStore
    from nbrunner.execution.redis_server import EmbeddedRedis

    for k in ("NBRUNNER_REDIS_URL", "NBRUNNER_STORAGE", "NBRUNNER_KEEP_DAYS"):
        os.environ.pop(k, None)
    ws = Path(tempfile.mkdtemp(prefix="nbst", dir="/tmp"))
    settings = Settings.load(ws)
    redis_server = EmbeddedRedis(settings.state_dir).ensure()
    env = {**os.environ, **settings.env(), "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    before_tree = os.environ.get("NBRUNNER_BENCH_BEFORE")
    env_before = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [before_tree, os.environ.get("PYTHONPATH")]))}
    store = JobStore.from_url(settings.url)
    rq_conn = store.r.__class__.from_url(settings.url)  # bytes, as rq wants
    nb = [sys.executable, "-m", "nbrunner"]
    server_args = [f"--ServerApp.root_dir={ws}", "--ServerApp.ip=127.0.0.1", "--ServerApp.open_browser=False",
                   *(["--allow-root"] if os.geteuid() == 0 else [])]
    jupyter = [sys.executable, "-m", "jupyter_server", *server_args]

    def cli(env: dict) -> float:
        return until(nb + ["jobs", "--json", "--dir", str(ws)], env, None)

    def nbrunner_worker(env: dict) -> float:
        before = set(live_capacity(store).workers)  # a stopped one may linger until its heartbeat expires
        return until(nb + ["worker", "--slots", "none", "--dir", str(ws)], env,
                     lambda: bool(set(live_capacity(store).workers) - before))

    def rq_worker() -> float:
        name = f"bench-{secrets.token_hex(4)}"
        return until(_rq() + ["worker", "--url", settings.url, "--name", name, "bench-startup"], env,
                     lambda: any(w.name == name for w in Worker.all(connection=rq_conn)))

    def scheduler(env: dict) -> float:
        store.r.delete(LEASE)
        return until(nb + ["scheduler", "--dir", str(ws)], env, lambda: store.r.exists(LEASE))

    def lab(extension: bool) -> Callable[[dict], float]:
        def start(env: dict) -> float:
            port, token = free_port(), secrets.token_hex(16)
            argv = jupyter + [f"--ServerApp.port={port}", f"--IdentityProvider.token={token}"]
            path = "/nbrunner/api/cluster"
            if not extension:
                argv.append("--ServerApp.jpserver_extensions={'nbrunner.server': False}")
                path = "/api/status"
            return until(argv, env, answers(f"http://127.0.0.1:{port}{path}", token))

        return start

    def jupyterlab(module: str) -> Callable[[dict], float]:
        def start(env: dict) -> float:
            port, token = free_port(), secrets.token_hex(16)
            argv = [sys.executable, "-m", module, *server_args, f"--ServerApp.port={port}",
                    f"--IdentityProvider.token={token}", "--LabApp.news_url=None"]
            return until(argv, env, answers(f"http://127.0.0.1:{port}/nbrunner/api/cluster", token))

        return start

    rq_info = lambda: until(_rq() + ["info", "--url", settings.url], env, None)  # noqa: E731
    # process: (nbrunner's start in an environment, the peer's start, what the peer is)
    pairs = {
        "CLI: nbrunner jobs --json until it exits": (cli, rq_info, "rq info"),
        "worker: spawn until registered": (nbrunner_worker, rq_worker, "rq worker until listed"),
        "scheduler: spawn until it holds the lease": (scheduler, rq_worker, "rq worker until listed"),
        "Jupyter server: until GET /nbrunner/api/cluster answers": (
            lab(True), lambda: lab(False)(env), "without the extension, /api/status"),
        "JupyterLab as nbrunner up starts it: until GET /nbrunner/api/cluster answers": (
            jupyterlab("nbrunner.execution.lab"), lambda: jupyterlab("jupyterlab")(env), "python -m jupyterlab"),
        "learner: python -m nbrunner.elastic.learner imports": (
            lambda env: until([sys.executable, "-c", "import nbrunner.elastic.learner"], env, None),
            lambda: until([sys.executable, "-c", "import torch.distributed"], env, None), "import torch.distributed"),
    }
    rows = []
    try:
        for what, (start, peer, peer_name) in pairs.items():
            if only and only not in what:
                continue
            start(env), peer()  # warm the file cache
            if before_tree:
                start(env_before)
            ta, tb, t0 = [], [], []
            for _ in range(runs):
                ta.append(start(env))
                tb.append(peer())
                if before_tree:
                    t0.append(start(env_before))
            va, vb = statistics.median(ta), statistics.median(tb)
            print(f"startup {what}: {[round(x, 3) for x in ta]} vs {[round(x, 3) for x in tb]}"
                  + (f", before {[round(x, 3) for x in t0]}" if t0 else ""), file=sys.stderr)
            rows.append({"benchmark": f"{what} vs {peer_name} (s, median of {runs})", "value": va, "baseline": vb,
                         "ratio": va / vb, "goal": "report", "ok": True})
            if t0:
                v0 = statistics.median(t0)
                rows.append({"benchmark": f"{what}, after vs before (s, median of {runs})", "value": va,
                             "baseline": v0, "ratio": va / v0, "goal": "report", "ok": True})
    finally:
        redis_server.stop()
    return rows


if __name__ == "__main__":
    from table import print_table

    print_table(run(*(int(a) for a in sys.argv[1:2]), *sys.argv[2:3]))
