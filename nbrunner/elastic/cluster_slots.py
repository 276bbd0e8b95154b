"""Learners on the cluster's slots: the slot source and launcher ElasticTrainer uses inside a job.

:class:`ClusterSlots` follows the job's grant (:class:`nbrunner.control.grants.GrantClient`)
and confirms releases; :class:`ClusterLauncher` starts a learner on the driver's host itself,
or asks the worker of the slot's host to start it (the worker's
:class:`nbrunner.execution.learner_agent.LearnerAgent` takes requests from
``nbrunner:learners:<host>``).  Learners then join the job's rendezvous over TCP.  What touches
the cluster's state goes through the job's channel (:mod:`nbrunner.control.job_channel`: the
job's own work horse when the job runs as its owner).
"""
from __future__ import annotations

import logging
import signal
import socket
import threading
import time
import uuid
from typing import Optional

from ..core.config import HOST, HOST_ADDR, JOB_DIR, JOB_ID, LEARNER_START_TIMEOUT_S
from ..control import runtime
from ..control.grants import GrantClient
from ..control.job_channel import ChannelError, Direct, WorkerChannel
from ..control.outage import UNREACHABLE
from ..control.store import JobStore
from .launcher import LocalLauncher, learner_command
from .slots import LocalSlots, Slot

log = logging.getLogger("nbrunner.learners")


def host_addr() -> str:
    """The address other hosts reach this host at (``NBRUNNER_HOST_ADDR``; loopback by default)."""
    return HOST_ADDR.text() or "127.0.0.1"


class ClusterSlots:
    """SlotSource for a job: the slots its grant lists, refreshed by a background thread.

    A slot the grant gave and took back before the trainer saw it is released here (the
    trainer releases the ones it saw); ``close()`` withdraws the job's demand and releases
    everything it still holds.
    """

    def __init__(self, job_id: str, max_gpus: Optional[int] = None, min_gpus: int = 1):
        self.client = GrantClient(job_id)
        self.store = self.client.store
        self.max_gpus = max_gpus
        self._slots: list = []
        self._reported: set = set()  # (host, index) of the held slots granted() returned
        self._lock = threading.Lock()
        self._gen = -1
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.launcher = ClusterLauncher(self.store, self.client.channel)

    def _devices(self) -> dict[str, str]:
        return self.client.channel.devices()

    def _refresh(self, gen: int, slots: list[tuple[str, int]]) -> None:
        devices = self._devices()
        new = [Slot(h, i, f"cuda:{i}" if devices.get(h) == "cuda" else None) for h, i in slots]
        with self._lock:
            self._slots = new
            self._gen = gen
            # what it holds, then its grant: a grow publishes both at once, so a slot held and not
            # granted after that read is one taken back, not one granted meanwhile
            held = set(self.client.held())
            now_gen, now = self.client.grant()
            unseen = held - set(map(tuple, now)) - self._reported if now_gen == gen else set()
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
    job_id = job_id or JOB_ID.required()
    if runtime.job_store().get(job_id).max_gpus == 0:  # its own record: a job's credential may read it
        return LocalSlots(1, devices="cpu")
    return ClusterSlots(job_id, max_gpus, min_gpus)


class ClusterLauncher:
    """Starts a learner on its slot's host: locally for the driver's host, else through that
    host's worker."""

    supports_standby = False  # a learner's host is known only with its slot

    def __init__(self, store: JobStore, channel: Direct | WorkerChannel | None = None):
        self.store = store
        self.channel = channel or Direct(store, JOB_ID.raw())
        self.local = LocalLauncher()
        self.host = HOST.text() or socket.gethostname()
        self.master_addr = host_addr()

    def launch(self, spec):
        if spec.slot is None or spec.slot.host == self.host:
            return self.local.launch(spec)
        return RemoteLearner.start(self.channel, spec)


class RemoteLearner:
    """A handle on a learner that a worker on another host runs.

    Starting one never blocks the trainer: the request goes to the host's queue and the handle
    reports the learner running once that host's worker claimed it.  A request nobody claims
    within ``timeout`` seconds (the host is cut off, say) is cancelled by the same atomic claim,
    so a worker that comes back later does not start it, and the learner counts as dead at start.
    ``channel``: the job's (a JobStore: that store, directly).
    """

    def __init__(self, channel, learner: str, deadline: float):
        self.channel = Direct(channel, JOB_ID.raw()) if isinstance(channel, JobStore) else channel
        self.learner = learner
        self.deadline = deadline
        self.pid: Optional[int] = None
        self.worker: Optional[str] = None
        self._said_unreachable = -1e9
        self._undelivered: Optional[int] = None  # a signal asked for while Redis was out of reach

    @classmethod
    def start(cls, channel, spec, timeout: float = LEARNER_START_TIMEOUT_S) -> "RemoteLearner":
        handle = cls(channel, f"{spec.learner_id}-{uuid.uuid4().hex[:8]}", time.monotonic() + timeout)
        env = {k: str(v) for k, v in spec.env.items()}
        for var in (JOB_ID, JOB_DIR):
            if var.raw() is not None:
                env[var.name] = var.raw()
        env["CUDA_VISIBLE_DEVICES"] = str(spec.slot.gpu_index) if spec.slot.is_gpu else ""
        request = {"learner": handle.learner, "argv": learner_command(spec)[1:], "env": env,
                   "log": str(spec.log_path) if spec.log_path else None}
        handle.channel.start_learner(spec.slot.host, request)
        return handle

    def status(self) -> dict:
        st = self.channel.learner_status(self.learner)
        if st.get("worker") and self.worker is None:
            self.worker = st["worker"]
        if st.get("pid") and self.pid is None:
            self.pid = st["pid"]
        return st

    def _cancel(self) -> bool:
        """Cancel the request if no worker claimed it yet (True), else learn who did."""
        if self.channel.cancel_learner(self.learner):
            return True
        self.status()
        return False

    def poll(self) -> Optional[int]:
        """The learner's exit code once it ended, else None; None too while Redis (or the job's
        work horse, which asks Redis for the job) is out of reach: a restart of Redis does not
        end the training, the learner's state is asked again on the next poll, and a signal that
        could not be sent meanwhile is sent then."""
        try:
            rc = self._poll()
            if rc is None and self._undelivered is not None:
                self._signal(self._undelivered)
            return rc
        except UNREACHABLE + (ChannelError,) as exc:
            self._unreachable(exc)
            return None

    def _unreachable(self, exc: BaseException) -> None:
        now = time.monotonic()
        if now - self._said_unreachable > 10:
            self._said_unreachable = now
            log.warning("learner %s: its state is out of reach (%s): asking again", self.learner,
                        exc.__class__.__name__)

    def _poll(self) -> Optional[int]:
        st = self.status()
        if st.get("rc") is not None:
            return st["rc"]
        if self.worker is None:
            if time.monotonic() > self.deadline and self._cancel():
                return -int(signal.SIGKILL)
            return None
        if not self.channel.worker_alive(self.worker):
            return -int(signal.SIGKILL)  # its host's worker is gone, and the learner with it
        return None

    def _signal(self, sig: int) -> None:
        if self._undelivered == int(signal.SIGKILL):
            sig = self._undelivered  # a kill asked for is not weakened by a later terminate
        try:
            if self.worker is None and self._cancel():
                self._undelivered = None
                return  # never started: nothing to signal
            if self.worker:
                self.channel.signal_learner(self.learner, sig)
                self._undelivered = None
        except UNREACHABLE + (ChannelError,) as exc:  # sent by the next poll that reaches Redis
            self._undelivered = sig
            self._unreachable(exc)

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
