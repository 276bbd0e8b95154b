"""CLI start-up: nbrunner's commands vs ``rq info`` on the same Redis, whole processes timed.

Starts a real cluster (``nbrunner up --no-lab --gpus 0 --workers 1`` in a temporary workspace
with a copy of ``notebooks/hello.ipynb``), then times each command and ``rq info --url
unix://<workspace>/.nbrunner/redis.sock`` in turn (A B A B ..., after one warm-up of each),
``runs`` times, and reports the median of each.  Goals: the read commands (``jobs``, ``show``,
``logs``, ``cluster``, ``list``; ``jobs`` and ``cluster`` both as JSON and as tables) no slower
than ``rq info``; ``submit`` within 1.5x of it.
``rq`` is run as the script installed beside this Python (not through a shell shim).

Both sides run from cached bytecode, as installed packages do: the child processes get a
``PYTHONPYCACHEPREFIX`` of their own (written by the warm-up runs) even where
``PYTHONDONTWRITEBYTECODE`` is set, which would otherwise make every nbrunner run compile its
modules from source while rq's come precompiled from site-packages.
"""
from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
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
        commands = {
            "jobs --status running --json": ["jobs", "--status", "running", "--json", "--dir", str(ws)],
            "jobs (a table)": ["jobs", "--dir", str(ws)],
            "show": ["show", job_id, "--dir", str(ws)],
            "logs": ["logs", job_id, "--dir", str(ws)],
            "cluster --json": ["cluster", "--json", "--dir", str(ws)],
            "cluster (a table)": ["cluster", "--dir", str(ws)],
            "list": ["list"],
            "submit": ["submit", "hello.ipynb", "--dir", str(ws)],
        }
        rows = []
        for label, args in commands.items():
            a, b = [], []
            _timed(nb + args, env, ws), _timed(rq, env, ws)  # warm-up: page cache, .pyc files
            for _ in range(runs):
                a.append(_timed(nb + args, env, ws))
                b.append(_timed(rq, env, ws))
            value, base = statistics.median(a), statistics.median(b)
            limit = 1.5 if label == "submit" else 1.0
            rows.append({"benchmark": f"nbrunner {label} vs rq info, wall (s)", "value": value, "baseline": base,
                         "ratio": value / base, "goal": f"<= {limit}", "ok": value / base <= limit})
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

    print_table(run(int(sys.argv[1]) if len(sys.argv) > 1 else 7))
