"""What the push-channel benchmarks share: a job history written straight into Redis, a Jupyter
server (or JupyterLab) of a given source tree, that tree at another revision (the baseline), and
simulated tabs: clients of ``GET /events`` and pollers of today's pattern."""
from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parent.parent
JOB_ID = re.compile(rb'"id":"([a-z0-9]+)"')


@contextmanager
def tree_at(rev: str | None) -> Iterator[Path]:
    """This repository's tree (``rev`` None), or a checkout of ``rev`` in a temporary worktree."""
    if rev is None:
        yield REPO
        return
    where = Path(tempfile.mkdtemp(prefix="nbrbase", dir="/tmp")) / "tree"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(where), rev], check=True)
    try:
        yield where
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(where)], check=False)
        shutil.rmtree(where.parent, ignore_errors=True)


class Server:
    """A Jupyter server (``lab``: JupyterLab) running the nbrunner of ``tree`` on workspace ``root``,
    with that tree's labextension, isolated Jupyter directories and token auth."""

    def __init__(self, tree: Path, root: Path, lab: bool = False):
        from loadgen import free_port

        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.state = Path(tempfile.mkdtemp(prefix="nbrsrv", dir="/tmp"))
        for d in ("config", "jpath/labextensions", "settings/@jupyterlab/apputils-extension", "workspaces", "runtime"):
            (self.state / d).mkdir(parents=True)
        (self.state / "config" / "jupyter_server_config.json").write_text(
            json.dumps({"ServerApp": {"jpserver_extensions": {"nbrunner.server": True}}}))
        (self.state / "settings/@jupyterlab/apputils-extension/notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        os.symlink(tree / "nbrunner" / "labextension", self.state / "jpath/labextensions/nbrunner")
        env = {k: v for k, v in os.environ.items() if not k.startswith("NBRUNNER_")}
        env.update(PYTHONPATH=str(tree), NBRUNNER_WORKSPACE=str(root), JUPYTER_CONFIG_DIR=str(self.state / "config"),
                   JUPYTER_PATH=str(self.state / "jpath"), JUPYTER_RUNTIME_DIR=str(self.state / "runtime"))
        app = ["-m", "jupyterlab", "--LabApp.news_url=None", f"--LabApp.user_settings_dir={self.state / 'settings'}",
               f"--LabApp.workspaces_dir={self.state / 'workspaces'}", "--LabApp.expose_app_in_browser=True"] \
            if lab else ["-m", "jupyter_server"]
        self.proc = subprocess.Popen(
            [sys.executable, *app, f"--ServerApp.root_dir={root}", f"--ServerApp.port={self.port}",
             "--ServerApp.port_retries=0", "--ServerApp.ip=127.0.0.1", "--ServerApp.open_browser=False",
             f"--IdentityProvider.token={self.token}", "--ServerApp.allow_root=True"],
            env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 90
        while not self._answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the Jupyter server did not start")
            time.sleep(0.2)

    def _answers(self) -> bool:
        try:
            return self.get("cluster")[0] == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    def get(self, path: str) -> tuple[int, object]:
        req = urllib.request.Request(f"{self.url}nbrunner/api/{path}", headers={"Authorization": f"token {self.token}"})
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, None

    def cpu_s(self) -> float:
        """CPU seconds the server process has used so far (all its threads)."""
        import psutil

        t = psutil.Process(self.proc.pid).cpu_times()
        return t.user + t.system

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        shutil.rmtree(self.state, ignore_errors=True)


@contextmanager
def redis_store(root: Path):
    """An embedded Redis for workspace ``root`` (no scheduler, no worker) and a store on it."""
    from nbrunner.core.config import Settings
    from nbrunner.control.store import JobStore
    from nbrunner.execution.redis_server import EmbeddedRedis

    settings = Settings.load(root)
    server = EmbeddedRedis(settings.state_dir).ensure()
    try:
        yield JobStore.from_url(settings.url)
    finally:
        server.stop()


def new_job(name: str, owner: str, min_gpus: int = 0):
    """A queued job record (``min_gpus`` above the cluster's: it stays queued)."""
    from nbrunner.control.submit import new_id
    from nbrunner.core.models import JobRecord

    return JobRecord(id=new_id(), name=name, notebook="digits.ipynb", owner=owner, min_gpus=min_gpus,
                     max_gpus=min_gpus, parameters={"LR": 0.05, "EPOCHS": 3})


async def http_get(port: int, token: str, path: str) -> bytes:
    """One HTTP/1.0 GET of the API (the body until the server closes)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET /nbrunner/api/{path} HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: token {token}\r\n\r\n"
                 .encode())
    data = await reader.read()
    writer.close()
    return data.split(b"\r\n\r\n", 1)[1]


class Tab:
    """A simulated tab on the push channel: the ids of the jobs it heard of, and when."""

    def __init__(self, port: int, token: str):
        self.port, self.token = port, token
        self.heard: dict[str, float] = {}  # job id -> first time it arrived
        self.bytes = 0
        self.ready = asyncio.Event()

    async def run(self) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        writer.write(f"GET /nbrunner/api/events HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: token {self.token}\r\n\r\n"
                     .encode())
        buffer = b""
        try:
            while chunk := await reader.read(65536):
                now = time.time()
                self.bytes += len(chunk)
                buffer += chunk
                *blocks, buffer = buffer.split(b"\n\n")
                for block in blocks:
                    if b"event: ready" in block:
                        self.ready.set()
                    if b"event: job" in block:  # the record's first field is its id
                        found = JOB_ID.search(block)
                        if found:
                            self.heard.setdefault(found.group(1).decode(), now)
        finally:
            writer.close()


class Poller:
    """A simulated tab of today's Lab: the Jobs panel (the job list, the cluster, the models) every
    1.5 s and the notifier (the job list) every 3 s; the jobs it has seen, and when."""

    def __init__(self, port: int, token: str):
        self.port, self.token = port, token
        self.heard: dict[str, float] = {}
        self.bytes = 0

    async def _list(self, path: str) -> None:
        body = await http_get(self.port, self.token, path)
        self.bytes += len(body)
        now = time.time()
        if path.startswith("jobs"):
            for job in json.loads(body)["jobs"]:
                self.heard.setdefault(job["id"], now)

    async def run(self) -> None:
        async def panel() -> None:
            while True:
                await asyncio.gather(self._list("jobs"), self._list("cluster"), self._list("models"),
                                     asyncio.sleep(1.5))

        async def notifier() -> None:
            while True:
                await asyncio.gather(self._list("jobs"), asyncio.sleep(3.0))

        await asyncio.gather(panel(), notifier())
