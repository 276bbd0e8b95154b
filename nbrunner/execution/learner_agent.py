"""Learners on the cluster's slots: the slot source and launcher ElasticTrainer uses inside a job.

:class:`ClusterSlots` follows the job's grant (:class:`nbrunner.grants.GrantClient`) and
confirms releases; :class:`ClusterLauncher` starts a learner on the driver's host itself, or
asks the worker of the slot's host to start it (:class:`LearnerAgent`, a thread of every
worker that takes requests from ``nbrunner:learners:<host>``).  Learners then join the job's
rendezvous over TCP.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Optional

from ..control.grants import GrantClient
from ..core.store import PREFIX, JobStore

log = logging.getLogger("nbrunner.learners")
STATUS_TTL_S = 3600
START_TIMEOUT_S = 30.0  # a learner request no worker claimed by then is cancelled


def request_queue(host: str) -> str:
    return f"{PREFIX}learners:{host}"


def control_queue(worker: str) -> str:
    return f"{PREFIX}agent:{worker}"


def status_key(learner: str) -> str:
    return f"{PREFIX}learner:{learner}"


def host_addr() -> str:
    """The address other hosts reach this host at (``NBRUNNER_HOST_ADDR``; loopback by default)."""
    return os.environ.get("NBRUNNER_HOST_ADDR") or "127.0.0.1"


class ClusterSlots:
    """SlotSource for a job: the slots its grant lists, refreshed by a background thread.

    A slot the grant gave and took back before the trainer saw it is released here (the
    trainer releases the ones it saw); ``close()`` withdraws the job's demand and releases
    everything it still holds.
    """

    def __init__(self, job_id: str, max_gpus: Optional[int] = None, min_gpus: int = 1):
        from ..elastic.slots import Slot

        self._Slot = Slot
        self.client = GrantClient(job_id)
        self.store = self.client.store
        self.max_gpus = max_gpus
        self._slots: list = []
        self._reported: set = set()  # (host, index) of the held slots granted() returned
        self._lock = threading.Lock()
        self._gen = -1
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.launcher = ClusterLauncher(self.store)

    def _devices(self) -> dict[str, str]:
        from ..control.scheduler import live_capacity

        return {w["host"]: w.get("device", "cpu") for w in live_capacity(self.store).workers.values()}

    def _refresh(self, gen: int, slots: list[tuple[str, int]]) -> None:
        devices = self._devices()
        new = [self._Slot(h, i, f"cuda:{i}" if devices.get(h) == "cuda" else None) for h, i in slots]
        with self._lock:
            self._slots = new
            self._gen = gen
            unseen = set(self.client.held()) - set(map(tuple, slots)) - self._reported
        if unseen:
            self.client.release(sorted(unseen))

    def _follow(self) -> None:
        while not self._stop.is_set():
            try:
                gen, slots = self.client.wait(self._gen, 1.0)
                if gen != self._gen:
                    self._refresh(gen, slots)
            except Exception as exc:  # Redis restarting: keep the last grant
                log.warning("grant refresh failed: %s", exc.__class__.__name__)
                self._stop.wait(0.5)

    def start(self, min_gpus: int, max_gpus: int) -> None:
        self.client.declare()
        self._refresh(*self.client.grant())
        self._thread = threading.Thread(target=self._follow, name="nbrunner-grant", daemon=True)
        self._thread.start()

    def granted(self) -> list:
        with self._lock:
            self._reported.update((s.host, s.index) for s in self._slots)
            return list(self._slots)

    def released(self, slots: list) -> None:
        gone = [(s.host, s.index) for s in slots]
        with self._lock:
            self._reported.difference_update(gone)  # held again later, it is new to the trainer
        self.client.release(gone)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=3)
        self.client.withdraw()


def cluster_slot_source(max_gpus: Optional[int] = None, min_gpus: int = 1, job_id: Optional[str] = None):
    """The factory ElasticTrainer calls inside a job (``NBRUNNER_SLOT_SOURCE``).  A job submitted
    without GPUs (max 0) trains with one local CPU learner, as outside the cluster."""
    from ..elastic.slots import LocalSlots
    from ..control.runtime import _job_store

    job_id = job_id or os.environ["NBRUNNER_JOB_ID"]
    if _job_store().get(job_id).max_gpus == 0:
        return LocalSlots(1, devices="cpu")
    return ClusterSlots(job_id, max_gpus, min_gpus)


class ClusterLauncher:
    """Starts a learner on its slot's host: locally for the driver's host, else through that
    host's worker."""

    supports_standby = False  # a learner's host is known only with its slot

    def __init__(self, store: JobStore):
        from ..elastic.launcher import LocalLauncher

        self.store = store
        self.local = LocalLauncher()
        self.host = os.environ.get("NBRUNNER_HOST") or __import__("socket").gethostname()
        self.master_addr = host_addr()

    def launch(self, spec):
        if spec.slot is None or spec.slot.host == self.host:
            return self.local.launch(spec)
        return RemoteLearner.start(self.store, spec)


class RemoteLearner:
    """A handle on a learner that a worker on another host runs.

    Starting one never blocks the trainer: the request goes to the host's queue and the handle
    reports the learner running once that host's worker claimed it.  A request nobody claims
    within ``timeout`` seconds (the host is cut off, say) is cancelled by the same atomic claim,
    so a worker that comes back later does not start it, and the learner counts as dead at start.
    """

    def __init__(self, store: JobStore, learner: str, deadline: float):
        self.store = store
        self.learner = learner
        self.deadline = deadline
        self.pid: Optional[int] = None
        self.worker: Optional[str] = None

    @classmethod
    def start(cls, store: JobStore, spec, timeout: float = START_TIMEOUT_S) -> "RemoteLearner":
        from ..elastic.launcher import learner_command

        handle = cls(store, f"{spec.learner_id}-{uuid.uuid4().hex[:8]}", time.monotonic() + timeout)
        env = {k: str(v) for k, v in spec.env.items()}
        for key in ("NBRUNNER_JOB_ID", "NBRUNNER_JOB_DIR"):
            if key in os.environ:
                env[key] = os.environ[key]
        env["CUDA_VISIBLE_DEVICES"] = str(spec.slot.gpu_index) if spec.slot.is_gpu else ""
        request = {"learner": handle.learner, "argv": learner_command(spec)[1:], "env": env,
                   "log": str(spec.log_path) if spec.log_path else None}
        store.r.rpush(request_queue(spec.slot.host), json.dumps(request))
        return handle

    def status(self) -> dict:
        raw = self.store.r.get(status_key(self.learner))
        st = json.loads(raw) if raw else {}
        if st.get("worker") and self.worker is None:
            self.worker = st["worker"]
        if st.get("pid") and self.pid is None:
            self.pid = st["pid"]
        return st

    def _cancel(self) -> bool:
        """Cancel the request if no worker claimed it yet (True), else learn who did."""
        gone = json.dumps({"pid": None, "worker": None, "rc": -int(signal.SIGKILL), "cancelled": True})
        if self.store.r.set(status_key(self.learner), gone, nx=True, ex=STATUS_TTL_S):
            return True
        self.status()
        return False

    def poll(self) -> Optional[int]:
        st = self.status()
        if st.get("rc") is not None:
            return st["rc"]
        if self.worker is None:
            if time.monotonic() > self.deadline and self._cancel():
                return -int(signal.SIGKILL)
            return None
        from .worker import worker_key

        if not self.store.r.exists(worker_key(self.worker)):
            return -int(signal.SIGKILL)  # its host's worker is gone, and the learner with it
        return None

    def _signal(self, sig: int) -> None:
        if self.worker is None and self._cancel():
            return  # never started: nothing to signal
        if self.worker:
            self.store.r.rpush(control_queue(self.worker), json.dumps({"learner": self.learner, "signal": sig}))

    def terminate(self) -> None:
        self._signal(int(signal.SIGTERM))

    def kill(self) -> None:
        self._signal(int(signal.SIGKILL))

    def wait(self, timeout: Optional[float] = None) -> Optional[int]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            rc = self.poll()
            if rc is not None or (deadline is not None and time.monotonic() > deadline):
                return rc
            time.sleep(0.05)


class LearnerAgent(threading.Thread):
    """A worker's thread that runs learners of jobs whose driver is on another host."""

    def __init__(self, store: JobStore, host: str, worker: str):
        super().__init__(name="nbrunner-learner-agent", daemon=True)
        self.store = store
        self.host = host
        self.worker = worker
        self.procs: dict[str, subprocess.Popen] = {}
        self.stopping = threading.Event()

    def run(self) -> None:
        from .execute import die_with_parent_preexec

        queues = [control_queue(self.worker), request_queue(self.host)]
        while not self.stopping.is_set():
            try:
                got = self.store.r.blpop(queues, timeout=0.2)
                if got:
                    msg = json.loads(got[1])
                    if "signal" in msg:
                        proc = self.procs.get(msg["learner"])
                        if proc is not None and proc.poll() is None:
                            proc.send_signal(msg["signal"])
                    else:
                        self._start(msg, die_with_parent_preexec)
                self._reap()
            except Exception as exc:
                log.warning("learner agent: %s: %s", exc.__class__.__name__, exc)
                self.stopping.wait(0.5)

    def _start(self, msg: dict, preexec) -> None:
        import sys

        claim = json.dumps({"pid": None, "worker": self.worker, "rc": None})
        if not self.store.r.set(status_key(msg["learner"]), claim, nx=True, ex=STATUS_TTL_S):
            return  # cancelled by the trainer: it waited too long for this host
        env = {**os.environ, **msg["env"], "PYTHONUNBUFFERED": "1"}
        out = None
        if msg.get("log"):
            Path(msg["log"]).parent.mkdir(parents=True, exist_ok=True)
            out = open(msg["log"], "ab", buffering=0)
        try:
            proc = subprocess.Popen([sys.executable, *msg["argv"]], env=env, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT if out else None, preexec_fn=preexec,
                                    start_new_session=True)
        except OSError:
            self.store.r.set(status_key(msg["learner"]), json.dumps({"pid": None, "worker": self.worker, "rc": 1}),
                             ex=STATUS_TTL_S)
            raise
        finally:
            if out is not None:
                out.close()
        self.procs[msg["learner"]] = proc
        self.store.r.set(status_key(msg["learner"]), json.dumps({"pid": proc.pid, "worker": self.worker, "rc": None}),
                         ex=STATUS_TTL_S)

    def _reap(self) -> None:
        for learner, proc in list(self.procs.items()):
            rc = proc.poll()
            if rc is not None:
                self.store.r.set(status_key(learner), json.dumps({"pid": proc.pid, "worker": self.worker, "rc": rc}),
                                 ex=STATUS_TTL_S)
                del self.procs[learner]
