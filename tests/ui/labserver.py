"""A real JupyterLab server on a real nbrunner cluster, for the browser tests (see conftest.py)."""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from support import REPO, make_notebook, short_tmpdir, wait_for

CHROMIUM = os.environ.get("NBRUNNER_TEST_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = REPO / "test-artifacts" / "ui"
LABEXTENSION = REPO / "nbrunner" / "labextension"
NBRUNNER_ENV = ("NBRUNNER_REDIS_URL", "NBRUNNER_STORAGE", "NBRUNNER_WORKSPACE")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Lab:
    """A running JupyterLab server on a real nbrunner cluster."""

    url: str  # base URL, ending with "/"
    token: str
    workspace: Path
    cluster: Any
    proc: subprocess.Popen
    log: Path
    pages: int = 0
    errors: list[str] = field(default_factory=list)

    def api(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """Call the nbrunner REST API of this server (as the tests' HTTP client, not the page)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}nbrunner/api/{path}", data=data, method=method,
                                     headers={"Authorization": f"token {self.token}",
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")

    def job(self, job_id: str) -> dict:
        code, job = self.api("GET", f"jobs/{job_id}")
        assert code == 200, job
        return job

    def page_url(self, tree: str = "") -> str:
        """A URL opening JupyterLab in a fresh workspace (optionally with a file open)."""
        self.pages += 1
        path = f"lab/workspaces/t{self.pages}" + (f"/tree/{tree}" if tree else "")
        return f"{self.url}{path}?token={self.token}"


def write_notebooks(ws: Path) -> None:
    make_notebook(ws / "greet.ipynb",
                  "for i in range(TIMES):\n    print(f'hello {NAME} #{i}')",
                  "f'rate is {RATE}'",
                  parameters="NAME = 'world'  # who to greet\nTIMES = 2\nRATE = 0.5")
    # Runs until cancelled, printing a numbered line four times a second.
    make_notebook(ws / "ticker.ipynb",
                  "import time\nfor i in range(STEPS):\n    print(f'tick {i}', flush=True)\n    time.sleep(0.25)",
                  parameters="STEPS = 2400")
    make_notebook(ws / "other.ipynb", "print('other')", parameters="X = 1")
    # A job that shows the live jobs table (nbrunner.client.widgets) in its executed notebook.
    make_notebook(ws / "monitor.ipynb",
                  "from nbrunner.client.widgets import JobsMonitor\nmonitor = JobsMonitor(interval=0.5)\nmonitor",
                  "monitor.close()")


def lab_settings(root: Path) -> dict[str, Path]:
    """Isolated Jupyter dirs: config enabling only what we need, user settings that turn the
    news/update notifications off, and the repository's built labextension first on the path."""
    dirs = {name: root / name for name in ("config", "settings", "workspaces", "runtime", "jpath")}
    for d in dirs.values():
        d.mkdir(parents=True)
    (dirs["config"] / "jupyter_server_config.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {"nbrunner.server": True}}}))
    notification = dirs["settings"] / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True)
    (notification / "notification.jupyterlab-settings").write_text(json.dumps(
        {"fetchNews": "false", "checkForUpdates": False}))
    (dirs["jpath"] / "labextensions").mkdir()
    os.symlink(LABEXTENSION, dirs["jpath"] / "labextensions" / "nbrunner")
    return dirs


def start_lab(ws: Path, state: Path, token: str) -> tuple[subprocess.Popen, str, Path]:
    dirs = lab_settings(state)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in NBRUNNER_ENV}
    env.update(NBRUNNER_WORKSPACE=str(ws), JUPYTER_CONFIG_DIR=str(dirs["config"]),
               JUPYTER_PATH=str(dirs["jpath"]), JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
               PYTHONUNBUFFERED="1")
    argv = [sys.executable, "-m", "nbrunner.execution.lab", "--no-browser", f"--ServerApp.root_dir={ws}",
            f"--ServerApp.port={port}", "--ServerApp.port_retries=0", "--ServerApp.ip=127.0.0.1",
            f"--IdentityProvider.token={token}", "--LabApp.news_url=None",
            "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: plugins and commands, for test_lab_plugins
            f"--LabApp.user_settings_dir={dirs['settings']}", f"--LabApp.workspaces_dir={dirs['workspaces']}",
            "--ServerApp.allow_root=True"]
    log = state / "jupyterlab.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, env=env, cwd=ws, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/"

    def up() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        req = urllib.request.Request(f"{url}nbrunner/api/cluster", headers={"Authorization": f"token {token}"})
        try:
            with urllib.request.urlopen(req, timeout=2) as resp:
                return resp.status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    try:
        wait_for(up, timeout=90, interval=0.2, what="JupyterLab and the nbrunner API to answer")
    except BaseException:
        stop_lab(proc)
        raise
    return proc, url, log


def stop_lab(proc: subprocess.Popen) -> list[str]:
    """Stop JupyterLab (it shuts its kernels down) and whatever it left; names of leftovers."""
    try:
        children = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        children = []
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    _, alive = psutil.wait_procs(children, timeout=10)
    leftovers = []
    for p in alive:
        try:
            leftovers.append(" ".join(p.cmdline()[:4]))
            p.kill()
        except psutil.NoSuchProcess:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    return leftovers


def shot_path(name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS / f"{name}.png"


@contextmanager
def running_lab(accounts: str | None = None) -> Iterator[Lab]:
    """A real cluster (2 GPU slots on one host, 2 workers) and a real JupyterLab server on it;
    ``accounts``: the text of an accounts file the cluster shares its GPUs by."""
    import nbrunner

    ws = short_tmpdir("nbui")
    state = short_tmpdir("nbuilab")
    write_notebooks(ws)
    if accounts is not None:
        (ws / "accounts.yaml").write_text(accounts)
    saved = {k: os.environ.pop(k) for k in NBRUNNER_ENV if k in os.environ}
    cluster = nbrunner.setup_cluster(gpus=2, workers=2, workspace=ws,
                                     accounts=None if accounts is None else ws / "accounts.yaml")
    token = secrets.token_hex(16)
    try:
        proc, url, log = start_lab(ws, state, token)
    except BaseException:
        cluster.shutdown()
        os.environ.update(saved)
        raise
    lab = Lab(url=url, token=token, workspace=ws, cluster=cluster, proc=proc, log=log)
    try:
        yield lab
    finally:
        leftovers = stop_lab(proc)
        cluster.shutdown()
        os.environ.update(saved)
        shutil.rmtree(ws, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)
        assert not leftovers, f"processes left after JupyterLab stopped: {leftovers}"
