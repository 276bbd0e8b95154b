"""The worker's learner agent: it starts learners of jobs whose driver runs on another host.

A trainer's :class:`nbrunner.elastic.cluster_slots.ClusterLauncher` pushes a start request
to ``nbrunner:learners:<host>``; the agent of a worker on that host claims it (atomically,
so a request the trainer cancelled is never started), runs the learner and reports its pid
and exit code under ``nbrunner:learner:<id>``.  Signals come through ``nbrunner:agent:<worker>``.

Once its host has run such a learner, the agent keeps ``warm`` learner interpreters started
(:mod:`.warm_learner`: torch, the learner module and the modules the last learner imported to
load its job), so that a learner granted later, as when a host that was cut off comes back,
skips most of its start.  The first ones start with the first learners (which start from
scratch: seconds, during which they get ready too); later ones once the learners that took warm
interpreters have loaded (each says so in a file, :data:`nbrunner.core.config.LEARNER_LOADED`),
or some seconds after the last start, not while those learners load on the same CPUs; also while
Redis is out of reach, so that a host that was cut off has them ready when it is back.

``as_owner`` (a worker that runs jobs as their owners): each learner runs as the owner of the job
its request names (only work horses, with the cluster's credential, push requests then), with
the clean environment of :mod:`.as_owner`, its log opened as the owner; no warm interpreter.
"""
from __future__ import annotations

import functools
import itertools
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ..core.config import LEARNER_LOADED, WARM_IMPORTS, WARM_LEARNER_REFILL_S
from ..core.keys import LEARNER_STATUS_TTL_S, agent_control, learner_requests, learner_status
from ..control.store import JobStore
from . import as_owner as owner
from .attempt import die_with_parent, die_with_parent_preexec
from .warm_learner import learner_args

log = logging.getLogger("nbrunner.learners")


# an agent's files live in <tmp>/nbrunner-learners-<worker pid>-<random>/
DIR_PREFIX = "nbrunner-learners-"


def _remove_orphaned_dirs() -> None:
    """Remove the file directories of agents whose worker died without removing its own (a
    SIGKILLed worker): those whose pid no longer runs."""
    for path in Path(tempfile.gettempdir()).glob(f"{DIR_PREFIX}*-*"):
        pid = path.name[len(DIR_PREFIX):].split("-", 1)[0]
        try:
            if not pid.isdigit() or not path.is_dir() or path.stat().st_uid != os.getuid():
                continue
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except OSError:  # a process of another user (alive), or another agent removed the directory
            pass


class LearnerAgent(threading.Thread):
    """A worker's thread that runs learners of jobs whose driver is on another host."""

    def __init__(self, store: JobStore, host: str, worker: str, warm: int = 0, as_owner: bool = False):
        super().__init__(name="nbrunner-learner-agent", daemon=True)
        self.as_owner = as_owner
        self.store = store
        self.host = host
        self.worker = worker
        self.warm = warm
        self.procs: dict[str, subprocess.Popen] = {}
        self.spares: list[subprocess.Popen] = []
        self._refill_at: float | None = None  # None: no remote learner ran here yet, keep none
        self._loading: dict[str, tuple[Path, bool]] = {}  # learner -> (the file it writes once loaded, warm)
        self._files: Path | None = None  # those files, and the modules warm interpreters import
        self._seq = itertools.count(1)
        self.stopping = threading.Event()

    def pids(self) -> set[int]:
        """The processes the agent owns (learners and warm interpreters)."""
        return {p.pid for p in [*self.procs.values(), *self.spares]}

    def run(self) -> None:
        queues = [agent_control(self.worker), learner_requests(self.host)]
        while not self.stopping.is_set():
            try:
                got = self.store.r.blpop(queues, timeout=0.2)
                while got:  # every request queued now (a job's learners come together), then the refill
                    msg = json.loads(got[1])
                    if "signal" in msg:
                        proc = self.procs.get(msg["learner"])
                        if proc is not None and proc.poll() is None:
                            proc.send_signal(msg["signal"])
                    else:
                        self._start(msg, die_with_parent_preexec)
                    raw = self.store.r.lpop(queues[1])
                    got = (queues[1], raw) if raw is not None else None
                self._reap()
            except Exception as exc:
                log.warning("learner agent: %s: %s", exc.__class__.__name__, exc)
                self.stopping.wait(0.2)  # Redis out of reach: take requests again soon after it is back
            try:
                self._refill()
            except OSError as exc:
                log.warning("learner agent: no warm interpreter: %s", exc)
        for p in self.spares:
            p.kill()
        if self._files is not None:
            shutil.rmtree(self._files, ignore_errors=True)

    def _start(self, msg: dict, preexec) -> None:
        claim = json.dumps({"pid": None, "worker": self.worker, "rc": None})
        if not self.store.r.set(learner_status(msg["learner"]), claim, nx=True, ex=LEARNER_STATUS_TTL_S):
            return  # cancelled by the trainer: it waited too long for this host
        try:
            proc = self._start_as_owner(msg) if self.as_owner else self._launch(msg, preexec)
        except (OSError, subprocess.SubprocessError, LookupError) as exc:
            self.store.r.set(learner_status(msg["learner"]),
                             json.dumps({"pid": None, "worker": self.worker, "rc": 1}), ex=LEARNER_STATUS_TTL_S)
            if isinstance(exc, OSError):
                raise
            log.warning("learner %s not started: %s", msg["learner"], exc)
            return
        self.procs[msg["learner"]] = proc
        self.store.r.set(learner_status(msg["learner"]), json.dumps({"pid": proc.pid, "worker": self.worker, "rc": None}),
                         ex=LEARNER_STATUS_TTL_S)

    def _launch(self, msg: dict, preexec) -> subprocess.Popen:
        """The learner as the worker's user: a warm interpreter, or a fresh process."""
        self._refill_at = time.monotonic() + WARM_LEARNER_REFILL_S
        loaded = self._dir() / f"{next(self._seq)}.loaded"
        msg = {**msg, "env": {**msg["env"], LEARNER_LOADED.name: str(loaded)}}
        proc = self._hand_to_spare(msg)
        self._loading[msg["learner"]] = (loaded, proc is not None)
        if proc is not None:
            return proc
        env = {**os.environ, **msg["env"], "PYTHONUNBUFFERED": "1"}
        out = None
        if msg.get("log"):
            Path(msg["log"]).parent.mkdir(parents=True, exist_ok=True)
            out = open(msg["log"], "ab", buffering=0)
        try:
            return subprocess.Popen([sys.executable, *msg["argv"]], env=env, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT if out else None, preexec_fn=preexec,
                                    start_new_session=True)
        finally:
            if out is not None:
                out.close()

    def _start_as_owner(self, msg: dict) -> subprocess.Popen:
        """The learner as the owner of the request's job (LookupError: that job or account is not there)."""
        rec = self.store.find(msg["job"]) if isinstance(msg.get("job"), str) else None
        if rec is None:
            raise LookupError(f"no job {msg.get('job')!r}")
        account, refused = owner.resolve(rec.owner)
        if account is None:
            raise LookupError(refused)
        return subprocess.Popen([sys.executable, *msg["argv"]], env=owner.environment(account, msg["env"]),
                                stdin=subprocess.DEVNULL, cwd=account.home if os.path.isdir(account.home) else "/",
                                preexec_fn=functools.partial(_owner_child, msg.get("log")), start_new_session=True,
                                **owner.identity(account))

    def _hand_to_spare(self, msg: dict) -> subprocess.Popen | None:
        """Give a learner start request to a warm interpreter (None: there is none, or the
        request is not a learner's)."""
        if learner_args(msg["argv"]) is None:
            return None
        while self.spares:
            proc = self.spares.pop(0)
            if proc.poll() is not None:
                continue
            try:
                proc.stdin.write(json.dumps({"argv": msg["argv"], "env": msg["env"], "log": msg.get("log")}).encode()
                                 + b"\n")
                proc.stdin.close()
                return proc
            except OSError:  # it died meanwhile
                proc.kill()
        return None

    def _refill(self) -> None:
        """Keep ``warm`` interpreters started, once remote learners ran here, unless learners
        that took warm interpreters are loading (and started lately)."""
        if self._refill_at is None:
            return
        self._note_loaded()
        if any(warm for _, warm in self._loading.values()) and time.monotonic() < self._refill_at:
            return
        self.spares = [p for p in self.spares if p.poll() is None]
        env = {**os.environ, "PYTHONUNBUFFERED": "1", WARM_IMPORTS.name: str(self._dir() / "imports.json")}
        while len(self.spares) < self.warm:
            self.spares.append(subprocess.Popen(
                [sys.executable, "-m", "nbrunner.execution.warm_learner"], stdin=subprocess.PIPE,
                env=env, preexec_fn=die_with_parent_preexec, start_new_session=True))

    def _dir(self) -> Path:
        if self._files is None:
            _remove_orphaned_dirs()
            self._files = Path(tempfile.mkdtemp(prefix=f"{DIR_PREFIX}{os.getpid()}-"))
        return self._files

    def _note_loaded(self) -> None:
        """Take the files of the learners that loaded: the newest list of modules is the one
        warm interpreters import.  A learner that exited before it loaded is forgotten."""
        for learner, (path, _) in list(self._loading.items()):
            try:
                modules = json.loads(path.read_text())
            except FileNotFoundError:
                if learner not in self.procs:
                    del self._loading[learner]
                continue
            except (OSError, ValueError):
                modules = None
            del self._loading[learner]
            path.unlink(missing_ok=True)
            if isinstance(modules, list):
                tmp = path.with_suffix(".tmp")
                tmp.write_text(json.dumps(modules))
                tmp.replace(self._dir() / "imports.json")

    def _reap(self) -> None:
        for learner, proc in list(self.procs.items()):
            rc = proc.poll()
            if rc is not None:
                self.store.r.set(learner_status(learner), json.dumps({"pid": proc.pid, "worker": self.worker, "rc": rc}),
                                 ex=LEARNER_STATUS_TTL_S)
                del self.procs[learner]


def _owner_child(log_path: str | None) -> None:
    """``preexec_fn`` of a learner run as its owner (it runs after the switch to the owner's
    account): die with the worker, and write to the log the job named, opened as the owner."""
    die_with_parent()
    if log_path:
        os.makedirs(os.path.dirname(log_path) or ".", exist_ok=True)
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
