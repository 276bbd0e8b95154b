"""Model servers started from the REST API: one ``nbrunner serve NAME:VERSION`` process per model name.

The server that starts them (the Jupyter server, or ``nbrunner service``) owns them, and they
run as its user: :meth:`ModelServers.stop_all` runs when it stops (and at interpreter exit), and
on Linux each process also gets SIGTERM when that server dies (``PR_SET_PDEATHSIG``), so no
model server outlives the server that started it.
Each process writes to ``<state>/serving/<NAME>.log``; its first line gives the URL it
listens on, which :meth:`ModelServers.start` waits for (a process that exits first is an error
with that log's last line).
"""
from __future__ import annotations

import asyncio
import atexit
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from ..core.config import (MODEL_SERVER_MIN_PORT, MODEL_SERVER_START_TIMEOUT_S, MODEL_SERVER_STOP_TIMEOUT_S,
                           REDIS_URL, Settings)
from ..core.errors import Conflict, InvalidRequest, NbrunnerError, NotFound
from ..core.models import utcnow
from ..serving.registry import check_name, resolve

HOST = "127.0.0.1"
# `nbrunner serve`, but first asking Linux for SIGTERM when its server dies (even by
# SIGKILL, when stop_all() cannot run); exits at once if it is already gone.
_LAUNCH = (
    "import ctypes, os, sys\n"
    "try:\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(1, 15)  # PR_SET_PDEATHSIG, SIGTERM\n"
    "except (OSError, AttributeError):\n"
    "    pass\n"
    "if os.getppid() != {parent}:\n"
    "    sys.exit(1)\n"
    "from nbrunner.client.cli import main\n"
    "main()\n"
)
_LISTENING = re.compile(r"^serving (?P<label>\S+) on (?P<url>http://[^\s]+:(?P<port>\d+))")


@dataclass
class ModelServer:
    """One running ``nbrunner serve`` process."""

    name: str
    version: int
    port: int
    url: str
    owner: str
    started_at: str
    process: subprocess.Popen
    log: Path
    groups: tuple[str, ...] = ()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "model": f"{self.name}:{self.version}",
                "port": self.port, "url": self.url, "pid": self.process.pid, "owner": self.owner,
                "started_at": self.started_at, "groups": list(self.groups)}


def check_port(port: Any) -> int | None:
    """``None`` (any free port) or a port number in MODEL_SERVER_MIN_PORT..65535."""
    if port is None:
        return None
    if isinstance(port, bool) or not isinstance(port, int) or not MODEL_SERVER_MIN_PORT <= port <= 65535:
        raise InvalidRequest(f"port must be an integer in {MODEL_SERVER_MIN_PORT}..65535 (or omitted: any free port), "
                             f"got {port!r}")
    return port


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the model server binds
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def _without_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` less what a model server never needs and a model (unpickled: code) must not get: the
    cluster's Redis URL (with its password) and the hub's credentials of ``nbrunner service``."""
    return {k: v for k, v in env.items() if k != REDIS_URL.name and not k.startswith(("JUPYTERHUB_", "JPY_"))}


def _last_line(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


class ModelServers:
    """The model servers of one server (the Jupyter server, or ``nbrunner service``), by model name."""

    def __init__(self) -> None:
        self._servers: dict[str, ModelServer] = {}
        self._starting: set[str] = set()
        atexit.register(self.stop_all)

    def list(self) -> list[ModelServer]:
        """The running servers (ones whose process has exited are forgotten)."""
        for name, server in list(self._servers.items()):
            if not server.alive:
                del self._servers[name]
        return sorted(self._servers.values(), key=lambda s: s.name)

    def get(self, name: str) -> ModelServer:
        check_name(name)
        server = self._servers.get(name)
        if server is None or not server.alive:
            self._servers.pop(name, None)
            raise NotFound(f"model {name!r} is not being served")
        return server

    async def start(self, settings: Settings, spec: Any, port: Any = None, owner: str = "",
                    groups: tuple[str, ...] = (), sees: Callable[[str], bool] = lambda owner: True) -> ModelServer:
        """Start ``nbrunner serve spec`` for the workspace of ``settings`` and wait until it listens;
        it runs as this server's user, and is recorded as ``owner``'s (in ``groups``).  A model
        already served by an owner the starter does not ``sees`` is refused without its details.

        Raises:
            InvalidRequest: a bad model spec or port; the process failed to start.
            NotFound: no such model or version.
            Conflict: the model is already served, or the port is taken."""
        if not isinstance(spec, str):
            raise InvalidRequest("model must be a string NAME or NAME:VERSION")
        entry = resolve(settings, spec)
        name, version = entry["name"], int(entry["version"])
        port = check_port(port)
        current = self._servers.get(name)
        if current is not None and current.alive and not sees(current.owner):
            raise Conflict(f"model {name} is already served, by another user")
        if current is not None and current.alive:
            raise Conflict(f"model {name} is already served ({name}:{current.version} on {current.url}): stop it first")
        if name in self._starting:
            raise Conflict(f"model {name} is being started")
        if port is not None and not _port_free(port):
            raise Conflict(f"port {port} is already in use: choose another one, or omit it for any free port")
        self._starting.add(name)
        try:
            server = await self._spawn(settings, name, version, port, owner)
        finally:
            self._starting.discard(name)
        server.groups = tuple(groups)
        self._servers[name] = server
        return server

    async def _spawn(self, settings: Settings, name: str, version: int, port: int | None, owner: str) -> ModelServer:
        log_dir = settings.state_dir / "serving"
        log_dir.mkdir(parents=True, exist_ok=True)
        log = log_dir / f"{name}.log"
        cmd = [sys.executable, "-c", _LAUNCH.format(parent=os.getpid()), "serve", f"{name}:{version}",
               "--port", str(port or 0), "--host", HOST, "--dir", str(settings.workspace)]
        env = dict(_without_secrets(os.environ), PYTHONUNBUFFERED="1")
        with open(log, "wb") as out:
            # A session of its own: a Ctrl-C in its server's terminal does not reach it;
            # stop_all() stops it when the server stops.
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    env=env, cwd=str(settings.workspace), start_new_session=True)
        deadline = time.monotonic() + MODEL_SERVER_START_TIMEOUT_S
        while True:
            try:
                first = log.read_text(errors="replace").splitlines()
            except OSError:
                first = []
            match = next((m for m in map(_LISTENING.match, first) if m), None)
            if match:
                return ModelServer(name=name, version=version, port=int(match["port"]), url=match["url"],
                                   owner=owner, started_at=utcnow(), process=proc, log=log)
            if proc.poll() is not None:
                message = _last_line(log) or f"exit code {proc.returncode}"
                if "cannot listen" in message:
                    raise Conflict(message.removeprefix("nbrunner: "))
                raise InvalidRequest(f"model server for {name}:{version} exited: {message.removeprefix('nbrunner: ')}")
            if time.monotonic() > deadline:
                _stop(proc)
                raise NbrunnerError(f"model server for {name}:{version} did not start within "
                                    f"{MODEL_SERVER_START_TIMEOUT_S:.0f} s")
            await asyncio.sleep(0.1)

    def stop(self, name: str) -> None:
        """Stop the server of model ``name`` (NotFound if none runs)."""
        server = self.get(name)
        _stop(server.process)
        self._servers.pop(name, None)

    def stop_all(self) -> None:
        for name in list(self._servers):
            server = self._servers.pop(name)
            _stop(server.process)


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM (the server shuts down cleanly), SIGKILL after MODEL_SERVER_STOP_TIMEOUT_S; reaps the process."""
    if proc.poll() is not None:
        return
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(MODEL_SERVER_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(MODEL_SERVER_STOP_TIMEOUT_S)
    except ProcessLookupError:
        pass
