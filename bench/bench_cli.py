"""CLI start-up: nbrunner's commands vs ``rq info`` on the same Redis, whole processes timed.

Starts a real cluster (``nbrunner up --no-lab --gpus 0 --workers 1`` in a temporary workspace
with a copy of ``notebooks/hello.ipynb``), then times each command and ``rq info --url
unix://<workspace>/.nbrunner/redis.sock`` in turn (A B A B ..., after one warm-up of each),
``runs`` times, and reports the median of each.  Goals: the read commands (``jobs``, ``show``,
``logs``, ``cluster``, ``list``; ``jobs`` and ``cluster`` both as JSON and as tables) no slower
than ``rq info``; ``submit`` within 1.5x of it.
``rq`` is run as the script installed beside this Python (not through a shell shim).

The same commands are then timed over REST, as a client of an nbrunner service runs them
(``NBRUNNER_SERVICE_URL`` set, no Redis in its environment): the service is a Jupyter server
running the nbrunner extension on the workspace, and ``submit`` sends the notebook as content.

Both sides run from cached bytecode, as installed packages do: the child processes get a
``PYTHONPYCACHEPREFIX`` of their own (written by the warm-up runs) even where
``PYTHONDONTWRITEBYTECODE`` is set, which would otherwise make every nbrunner run compile its
modules from source while rq's come precompiled from site-packages.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _timed(cmd: list[str], env: dict, cwd: Path) -> float:
    t = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return elapsed


def _rq_command() -> list[str]:
    beside = Path(sys.executable).parent / "rq"
    return [str(beside)] if beside.exists() else [sys.executable, "-m", "rq.cli"]


def _compare(label: str, args: list[str], env: dict, cwd: Path, rq: list[str], rq_env: dict, runs: int) -> dict:
    """One row: the median wall time of ``nbrunner ARGS`` against ``rq info``'s, in turn."""
    nb = [sys.executable, "-m", "nbrunner"]
    a, b = [], []
    _timed(nb + args, env, cwd), _timed(rq, rq_env, cwd)  # warm-up: page cache, .pyc files
    for _ in range(runs):
        a.append(_timed(nb + args, env, cwd))
        b.append(_timed(rq, rq_env, cwd))
    value, base = statistics.median(a), statistics.median(b)
    limit = 1.5 if label.startswith("submit") else 1.0
    return {"benchmark": f"nbrunner {label} vs rq info, wall (s)", "value": value, "baseline": base,
            "ratio": value / base, "goal": f"<= {limit}", "ok": value / base <= limit}


def _commands(job_id: str, where: list[str]) -> dict[str, list[str]]:
    return {
        "jobs --status running --json": ["jobs", "--status", "running", "--json", *where],
        "jobs (a table)": ["jobs", *where],
        "show": ["show", job_id, *where],
        "logs": ["logs", job_id, *where],
        "cluster --json": ["cluster", "--json", *where],
        "cluster (a table)": ["cluster", *where],
        "submit": ["submit", "hello.ipynb", *where],
    }


def _service(ws: Path, env: dict) -> tuple[subprocess.Popen, str]:
    """A Jupyter server running the nbrunner extension on ``ws`` (token ``bench``): the service."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "jupyter_server", f"--ServerApp.root_dir={ws}", f"--ServerApp.port={port}",
           "--ServerApp.port_retries=0", "--ServerApp.open_browser=False", "--IdentityProvider.token=bench",
           *(["--allow-root"] if os.geteuid() == 0 else [])]
    proc = subprocess.Popen(cmd, env=env, cwd=ws, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"{url}nbrunner/api/cluster?token=bench", timeout=2)
            return proc, url + "nbrunner/"
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the Jupyter server did not come up") from None
            time.sleep(0.5)


def _over_rest(ws: Path, env: dict, job_id: str, rq: list[str], runs: int) -> list[dict]:
    client_dir = ws / "client"
    client_dir.mkdir()
    shutil.copy(ws / "hello.ipynb", client_dir / "hello.ipynb")
    service, url = _service(ws, {**env, "NBRUNNER_WORKSPACE": str(ws)})
    try:
        remote = {k: v for k, v in env.items() if not k.startswith("NBRUNNER_")}
        remote.update(NBRUNNER_SERVICE_URL=url, NBRUNNER_TOKEN="bench")
        return [_compare(f"{label} over REST", args, remote, client_dir, rq, env, runs)
                for label, args in _commands(job_id, []).items()]
    finally:
        os.killpg(service.pid, signal.SIGTERM)
        service.wait(30)


def run(runs: int = 7) -> list[dict]:
    ws = Path(tempfile.mkdtemp(prefix="nbcli", dir="/tmp"))
    shutil.copy(ROOT / "notebooks" / "hello.ipynb", ws / "hello.ipynb")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               PYTHONPYCACHEPREFIX=str(ws / ".pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    nb = [sys.executable, "-m", "nbrunner"]
    up = subprocess.Popen(nb + ["up", "--dir", str(ws), "--no-lab", "--gpus", "0", "--workers", "1"], env=env,
                          cwd=ws, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sock = ws / ".nbrunner" / "redis.sock"
    try:
        deadline = time.monotonic() + 120
        while True:
            ready = subprocess.run(nb + ["cluster", "--dir", str(ws), "--json"], env=env, cwd=ws,
                                   capture_output=True).returncode == 0
            if ready:
                break
            if up.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("nbrunner up did not come up")
            time.sleep(0.5)
        job_id = subprocess.run(nb + ["submit", "hello.ipynb", "--dir", str(ws)], env=env, cwd=ws,
                                capture_output=True, text=True, check=True).stdout.strip().split()[-1]
        rq = _rq_command() + ["info", "--url", f"unix://{sock}"]
        commands = _commands(job_id, ["--dir", str(ws)])
        commands = {**dict(list(commands.items())[:-1]), "list": ["list"], "submit": commands["submit"]}
        rows = [_compare(label, args, env, ws, rq, env, runs) for label, args in commands.items()]
        if "--local-only" not in sys.argv:
            rows += _over_rest(ws, env, job_id, rq, runs)
        return rows
    finally:
        up.send_signal(signal.SIGINT)
        try:
            up.wait(60)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait()
        shutil.rmtree(ws, ignore_errors=True)


if __name__ == "__main__":
    from table import print_table

    counts = [a for a in sys.argv[1:] if a.isdigit()]
    print_table(run(int(counts[0]) if counts else 7))
