"""Helpers for tests: notebooks written from code, short-path temp dirs, polling with a deadline,
a cluster of a module's own, REST calls through jp_fetch and plain HTTP."""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable, Iterator

import nbformat

REPO = Path(__file__).resolve().parents[1]


def make_notebook(path: Path, *cells: str, parameters: str | None = None) -> Path:
    """Write a notebook: an optional ``parameters`` cell, then one code cell per string."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    if parameters is not None:
        cell = nbformat.v4.new_code_cell(parameters)
        cell.metadata["tags"] = ["parameters"]
        nb.cells.append(cell)
    nb.cells += [nbformat.v4.new_code_cell(src) for src in cells]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def short_tmpdir(prefix: str = "nbr") -> Path:
    """A fresh directory with a short path (a unix socket path must stay under 108 bytes)."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp")).resolve()


def wait_for(condition: Callable[[], object], timeout: float = 30.0, interval: float = 0.1, what: str = "condition"):
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


async def poll(check, timeout: float, what: str):
    """Await ``check()`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        await asyncio.sleep(0.1)


CLUSTER_ENV = ("NBRUNNER_REDIS_URL", "NBRUNNER_WORKSPACE", "NBRUNNER_STORAGE")
FINAL = ("completed", "failed", "cancelled")


@contextlib.contextmanager
def own_cluster(ws: Path, **options) -> Iterator:
    """A real cluster on ``ws`` (``nbrunner.setup_cluster(workspace=ws, **options)``) that ignores the
    caller's cluster variables while it runs; shut down and the variables restored on exit."""
    import nbrunner

    saved = {k: os.environ.pop(k) for k in CLUSTER_ENV if k in os.environ}
    cluster = nbrunner.setup_cluster(workspace=ws, **options)
    try:
        yield cluster
    finally:
        cluster.shutdown()
        os.environ.update(saved)


def multi_user_server() -> dict:
    """A Jupyter server whose users are told apart by the test header (``tests/identity.py``), one
    of them an admin: a module's ``jp_server_config``."""
    return {
        "ServerApp": {"jpserver_extensions": {"nbrunner.server": True}, "identity_provider_class": "identity.HeaderUsers"},
        "NbrunnerExtension": {"multi_user": True, "admin_users": "root-admin"},
    }


@contextlib.contextmanager
def served_workspace(notebooks: dict[str, str], **cluster) -> Iterator:
    """A new workspace holding ``notebooks`` (name -> one cell's source) with its own cluster
    (``own_cluster`` options); yields (workspace, cluster)."""
    ws = short_tmpdir()
    for name, source in notebooks.items():
        make_notebook(ws / name, source)
    with own_cluster(ws, **cluster) as running:
        yield ws, running


def server_fixtures(notebooks: dict[str, str], multi_user: bool = True, **cluster):
    """A test module's ``root`` (a served workspace, see :func:`served_workspace`, for the module),
    ``jp_root_dir`` (it) and ``jp_server_config`` (the nbrunner extension; users told apart by the
    test header with ``multi_user``) fixtures: ``root, jp_root_dir, jp_server_config = ...``."""
    import pytest

    @pytest.fixture(scope="module")
    def root():
        with served_workspace(notebooks, **cluster) as (ws, _):
            yield ws

    @pytest.fixture
    def jp_root_dir(root):
        return root

    @pytest.fixture
    def jp_server_config():
        return multi_user_server() if multi_user else {"ServerApp": {"jpserver_extensions": {"nbrunner.server": True}}}

    return root, jp_root_dir, jp_server_config


def rest_fetch(jp_fetch, headers: dict | None = None):
    """An async ``call(method, *path, body=None, raw=None, **params)`` to the nbrunner REST API that
    returns the raw response (error statuses included); POST and PATCH send ``{}`` without a body."""
    async def call(method: str, *path: str, body=None, raw: bytes | None = None, **params):
        kwargs = {"method": method, "raise_error": False}
        if headers:
            kwargs["headers"] = headers
        if params:
            kwargs["params"] = params
        if raw is not None:
            kwargs["body"] = raw
        elif body is not None:
            kwargs["body"] = json.dumps(body)
        elif method in ("POST", "PATCH"):
            kwargs["body"] = "{}"
        return await jp_fetch("nbrunner", "api", *path, **kwargs)

    return call


def rest_api(jp_fetch, headers: dict | None = None):
    """Like `rest_fetch`, but the call returns ``(status code, decoded JSON body or None)``."""
    fetch = rest_fetch(jp_fetch, headers)

    async def call(method: str, *path: str, **kw):
        resp = await fetch(method, *path, **kw)
        return resp.code, json.loads(resp.body) if resp.body else None

    return call


async def wait_status(api, job_id: str, statuses=FINAL, timeout=90) -> dict:
    """The job (through the REST ``api``) once its status is one of ``statuses``."""
    deadline = time.monotonic() + timeout
    while True:
        code, job = await api("GET", "jobs", job_id)
        assert code == 200
        if job["status"] in statuses:
            return job
        assert time.monotonic() < deadline, f"job {job_id} still {job['status']}"
        await asyncio.sleep(0.2)


def http(method: str, url: str, body=None) -> tuple[int, dict]:
    """A JSON request to a plain HTTP server: (status, decoded body), error statuses included."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def refused(url: str) -> bool:
    """Whether nothing listens at ``url`` any more (its /health is refused)."""
    try:
        urllib.request.urlopen(url + "/health", timeout=2)
    except urllib.error.URLError as exc:
        return isinstance(exc.reason, ConnectionRefusedError)
    return False


def assert_one_line_error(p, code: int, *words: str) -> None:
    """A finished CLI process failed with exit ``code`` and one stderr line (no traceback) naming ``words``."""
    assert p.returncode == code, (p.returncode, p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    for w in words:
        assert w in lines[0], lines[0]


def released_timeline(job, timeout: float = 30.0) -> list[int]:
    """The GPU counts of an ended job's timeline, once its worker has written the final release
    (that point lands just after the job's final status)."""
    points = wait_for(lambda: (lambda p: p if p and p[-1] == 0 else None)([q["gpus"] for q in job.timeline()]),
                      timeout, what=f"job {job.id}'s release point")
    return points


def no_slot_ever_held_twice(r) -> int:
    """Replay the grant/release log: a slot is granted only while nobody holds it."""
    holder: dict[str, str] = {}
    from nbrunner.control import grants

    events = r.xrange(grants.SLOTLOG)
    for _id, e in events:
        if e["action"] == "grant":
            assert e["slot"] not in holder, f"slot {e['slot']} granted to {e['job']} while {holder[e['slot']]} holds it"
            holder[e["slot"]] = e["job"]
        else:
            assert holder.pop(e["slot"]) == e["job"]
    return len(events)


# A notebook that follows its elastic grant as a trainer does (parameters MIN, MAX, STOP): it
# declares its bounds, gives back the slots taken from it, and ends once the file STOP exists.
GRANT_FOLLOWER = """import pathlib
from nbrunner.control.grants import GrantClient
client = GrantClient()
client.declare(MIN, MAX)
generation = -1
while not pathlib.Path(STOP).exists():
    generation, slots = client.wait(generation, 0.2)
    held = client.held()   # then the grant: a grow publishes both at once
    extra = [s for s in held if s not in client.grant()[1]]
    if extra:
        client.release(extra)   # our 'learners' on those slots have exited
"""


def elastic_digits_notebook(max_gpus: int, timeout: float) -> str:
    """Source of a cell that trains a small digits MLP with ElasticTrainer for ``EPOCHS`` epochs."""
    return f'''import torch
from torch import nn
from nbrunner.elastic import ElasticTrainer

def get_datasets():
    from sklearn.datasets import load_digits
    from torch.utils.data import TensorDataset
    X, y = load_digits(return_X_y=True)
    X = torch.tensor(X / 16.0, dtype=torch.float32)
    y = torch.tensor(y, dtype=torch.long)
    return TensorDataset(X[:1500], y[:1500]), TensorDataset(X[1500:], y[1500:])

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
history = ElasticTrainer(model, get_datasets, nn.CrossEntropyLoss(), optimizer).train(
    epochs=EPOCHS, effective_batch_size=32, max_gpus={max_gpus}, min_gpus=1, checkpoint_every=1, timeout={timeout})
print("final accuracy", history.epochs[-1]["val_accuracy"], "resumed from", history.resumed_from_step)
'''


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def jupyter_server(root: Path, token: str, env: dict[str, str], log: Path,
                   extensions: tuple[str, ...] = ()) -> Iterator[tuple[str, object]]:
    """A real Jupyter server on ``root`` (the nbrunner extension on, plus ``extensions``, modules
    importable with ``env``), with token authentication, in a process of its own: ``(its URL,
    the process)``; stopped on exit."""
    import subprocess
    import sys

    port = free_port()
    config = log.with_suffix(".config.json")
    config.write_text(json.dumps({"ServerApp": {"jpserver_extensions": {"nbrunner.server": True,
                                                                       **{e: True for e in extensions}}}}))
    cmd = [sys.executable, "-m", "jupyter_server", f"--config={config}", f"--ServerApp.root_dir={root}",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0", "--ServerApp.open_browser=False",
           f"--IdentityProvider.token={token}", *(["--allow-root"] if os.geteuid() == 0 else [])]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/"
    try:
        def up() -> bool:
            assert proc.poll() is None, log.read_text()[-3000:]
            try:
                urllib.request.urlopen(f"{url}api/status?token={token}", timeout=2)
            except OSError:
                return False
            return True

        wait_for(up, 90, 0.2, f"the Jupyter server on {root}")
        yield url, proc
    finally:
        stop_process(proc)


def stop_process(proc) -> None:
    """Stop a process started by a test (and its process group) if it still runs."""
    import signal
    import subprocess

    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def http_raw(method: str, url: str, token: str, body: bytes | None = None,
             headers: dict | None = None) -> tuple[int, dict, bytes]:
    """A request with ``Authorization: token``: (status, headers, body bytes), error statuses included."""
    req = urllib.request.Request(url, data=body, method=method,
                                 headers={"Authorization": f"token {token}", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def _traversable(paths: list[Path]) -> list[tuple[Path, int]]:
    """Give others ``x`` on every ancestor of ``paths`` that lacks it; returns what to restore."""
    import stat

    changed: list[tuple[Path, int]] = []
    for path in paths:
        for d in [path, *path.parents] if path.is_dir() else list(path.parents):
            mode = stat.S_IMODE(os.stat(d).st_mode)
            if not mode & 0o001 and all(d != c for c, _ in changed):
                os.chmod(d, mode | 0o001)
                changed.append((d, mode))
    return changed


@contextlib.contextmanager
def unix_accounts(*users: str, service: str | None = None) -> Iterator[dict]:
    """Unix accounts made for a test (root only): ``users`` with homes, and ``service``, an account
    in a group of its own name; this Python is made executable and this tree importable by them.
    Yields ``{name: pwd entry}``; everything is undone after, even on failure."""
    import pwd
    import subprocess
    import sys

    def sh(*cmd: str, check: bool = True) -> None:
        subprocess.run(cmd, capture_output=True, text=True, check=check)

    restore = _traversable([Path(os.path.realpath(sys.executable)), Path(sys.prefix), REPO])
    try:
        for name in users:
            sh("useradd", "-m", "-s", "/bin/bash", name)
        if service:
            sh("groupadd", service)
            sh("useradd", "-M", "-g", service, service)
        yield {name: pwd.getpwnam(name) for name in (*users, *([service] if service else []))}
    finally:
        for name in (*users, *([service] if service else [])):
            sh("userdel", "-f", "-r", name, check=False)
            # userdel -r leaves the temp directory: torch made its per-user cache there
            shutil.rmtree(Path(tempfile.gettempdir()) / f"torchinductor_{name}", ignore_errors=True)
        if service:
            sh("groupdel", service, check=False)
        for d, mode in reversed(restore):
            os.chmod(d, mode)
