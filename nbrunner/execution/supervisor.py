"""Start, watch and stop the processes of a local cluster: embedded Redis, scheduler, workers, JupyterLab.

Used by ``nbrunner up`` and :func:`nbrunner.setup_cluster`.  Children run in their own
sessions (a Ctrl-C in the terminal reaches only the supervisor, which stops them in
order: JupyterLab, workers, scheduler, Redis).  A dead Redis or scheduler is restarted.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..core.config import HOST, SUPERVISOR_CHECK_S, SUPERVISOR_STOP_TIMEOUT_S, Settings, check
from .redis_server import EmbeddedRedis


@dataclass
class Child:
    name: str
    argv: list[str]
    log: Path
    restart: bool = False
    proc: subprocess.Popen | None = None
    restarts: int = 0


def split_slots(gpus: int, workers: int) -> list[list[int]]:
    """Slot indices of each worker of one host: ``gpus`` slots spread over ``workers``."""
    out: list[list[int]] = [[] for _ in range(max(1, workers))]
    for i in range(gpus):
        out[i * len(out) // max(1, gpus)].append(i)
    return out


@dataclass
class Supervisor:
    settings: Settings
    gpus: int | None = 0  # None: auto
    workers: int = 1
    policy: str | None = None
    host: str | None = None
    lab_port: int | None = None  # None: no JupyterLab
    lab_args: list[str] = field(default_factory=list)
    accounts: str | None = None  # an accounts file: checked before anything starts, published once Redis runs
    run_as_owner: bool = False  # workers run jobs as their owners (as root); Redis is then shared with them
    redis: EmbeddedRedis | None = None
    children: list[Child] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _watch: threading.Thread | None = None

    def env(self) -> dict[str, str]:
        env = {**os.environ, **self.settings.env(), "PYTHONUNBUFFERED": "1"}
        if self.host:
            env[HOST.name] = self.host
        return env

    def start(self) -> "Supervisor":
        check()  # a bad NBRUNNER_* value stops here, with its one-line error, not in a child's log
        if self.accounts is not None:
            from ..control.local_files import read_accounts

            read_accounts(self.accounts)  # a bad file stops here, naming its line
        self.settings.storage.mkdir(parents=True, exist_ok=True)
        self.settings.state_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.settings.state_dir, 0o700)
        if self.settings.embedded:
            self.redis = EmbeddedRedis(self.settings.state_dir, shared=self.run_as_owner).ensure()
        if self.accounts is not None:
            self.publish_accounts()
        logs = self.settings.state_dir / "logs"
        logs.mkdir(exist_ok=True)
        os.chmod(logs, 0o700)
        py = [sys.executable, "-m", "nbrunner"]
        sched = py + ["scheduler"] + (["--policy", self.policy] if self.policy else [])
        self.children.append(Child("scheduler", sched, logs / "scheduler.log", restart=True))
        if self.gpus is None:
            layout: list[list[int] | None] = [None] * self.workers
        else:
            layout = split_slots(self.gpus, self.workers)
        for i, slots in enumerate(layout):
            argv = py + ["worker"]
            if slots is None:
                argv += ["--gpus", "auto"]
            else:
                argv += ["--slots", ",".join(map(str, slots)) or "none"]
            if self.host:
                argv += ["--host", self.host]
            if self.run_as_owner:
                argv += ["--run-as-owner"]
            self.children.append(Child(f"worker-{i}", argv, logs / f"worker-{i}.log", restart=True))
        if self.lab_port is not None:
            lab = [sys.executable, "-m", "nbrunner.execution.lab", f"--ServerApp.root_dir={self.settings.workspace}",
                   f"--ServerApp.port={self.lab_port}", "--ServerApp.open_browser=False",
                   "--LabApp.news_url=None", *(["--allow-root"] if os.geteuid() == 0 else []), *self.lab_args]
            self.children.append(Child("jupyterlab", lab, logs / "jupyterlab.log"))
        for child in self.children:
            self._spawn(child)
        self._watch = threading.Thread(target=self._watch_loop, name="nbrunner-supervisor", daemon=True)
        self._watch.start()
        from ..control.discovery import register

        self._runtime_file = register(self.settings, self.lab_url())  # `nbrunner list` and discovery find it
        return self

    def publish_accounts(self) -> None:
        """Make the accounts file the cluster's (again: after a change of the file)."""
        from ..control.accounts import publish
        from ..control.store import JobStore

        store = JobStore.from_url(self.settings.url)
        try:
            publish(store, self.accounts)
        finally:
            store.r.close()

    def lab_url(self) -> str | None:
        if self.lab_port is None:
            return None
        token = next((a.split("=", 1)[1] for a in self.lab_args if a.startswith("--IdentityProvider.token=")), None)
        return f"http://127.0.0.1:{self.lab_port}/lab" + (f"?token={token}" if token else "")

    def _spawn(self, child: Child) -> None:
        with open(child.log, "ab") as out:
            child.proc = subprocess.Popen(child.argv, env=self.env(), stdin=subprocess.DEVNULL, stdout=out,
                                          stderr=subprocess.STDOUT, cwd=self.settings.workspace,
                                          start_new_session=True)

    def _watch_loop(self) -> None:
        while not self._stop.wait(SUPERVISOR_CHECK_S):
            if self.redis is not None and not self._stop.is_set():
                if self.redis.owned and self.redis.process.poll() is not None:
                    self.redis.process = None
                    self.redis.ensure()
            for child in self.children:
                if self._stop.is_set():
                    return
                if child.restart and child.proc is not None and child.proc.poll() is not None:
                    child.restarts += 1
                    self._spawn(child)

    def child(self, name: str) -> Child:
        return next(c for c in self.children if c.name == name)

    def stop(self, timeout: float = SUPERVISOR_STOP_TIMEOUT_S) -> None:
        """Stop everything this supervisor started, leaving no process behind."""
        from ..control.discovery import unregister

        unregister(getattr(self, "_runtime_file", None))
        self._stop.set()
        if self._watch is not None:
            self._watch.join(timeout=5)
        order = [c for c in self.children if c.name == "jupyterlab"] + \
                [c for c in self.children if c.name.startswith("worker")] + \
                [c for c in self.children if c.name == "scheduler"]
        for c in order:  # warm stop: SIGTERM; rq kills a running job's horse on the second one
            _signal(c, signal.SIGTERM)
        time.sleep(0.2)
        for c in order:
            if c.name.startswith("worker"):
                _signal(c, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for c in order:
            if c.proc is None:
                continue
            try:
                c.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _kill_group(c)
                c.proc.wait()
            _kill_group(c)  # anything a child left in its session
        if self.redis is not None:
            self.redis.stop()


def _signal(c: Child, sig: int) -> None:
    if c.proc is not None and c.proc.poll() is None:
        try:
            c.proc.send_signal(sig)
        except ProcessLookupError:
            pass


def _kill_group(c: Child) -> None:
    if c.proc is None:
        return
    try:
        os.killpg(c.proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
