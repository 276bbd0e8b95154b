"""``nbrunner worker``: an rq worker that runs notebook jobs and registers its host's slots.

Besides rq's own bookkeeping the worker keeps ``nbrunner:worker:<name>`` alive with a
short TTL (a heartbeat thread), so a worker killed with SIGKILL disappears within
``NBRUNNER_WORKER_TTL`` seconds and the scheduler re-queues its job.  The worker is a child
subreaper: whatever a job leaves behind (kernel, learners) is re-parented to it and
killed when the job ends.

With ``run_as_owner`` (``nbrunner worker --run-as-owner``, as root) each job runs as its owner's
Unix account (:mod:`.owner_job`); the worker then keeps no pre-warmed kernel, no kernel fork
server and no warm learner interpreter (they run as the worker's user), and when a job ends it
deletes the job's Redis user and hands the job directory over (:mod:`.as_owner`).
"""
from __future__ import annotations

import ctypes
import logging
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

import psutil
from rq import Worker

from ..control.actions import advance
from ..control.job_access import check_protected, mark_run_as_owner, revoke_access, runs_as_owner
from ..control.queues import DEFAULT_QUEUE, host_queue, rq_connection
from ..control.outage import UNREACHABLE, until_reachable
from ..control.registration import heartbeat, heartbeat_interval, unregister
from ..core.config import (GPU_DETECT_TIMEOUT_S, HEARTBEAT_RETRY_S, HOST, HOST_ADDR, LEFTOVERS_WAIT_S,
                           WORKER_SOCKET_TIMEOUT_S, WORKER_TTL, RUN_AS_OWNER, Settings, check)
from ..core.errors import NbrunnerError
from ..control.html import preload as preload_html
from ..core.lifecycle import Refused, settle_event
from ..core.models import utcnow
from ..control.store import JobStore, connect
from . import as_owner
from .warm_kernel import ENV_SPARE, SpareKernel

log = logging.getLogger("nbrunner.worker")


def detect_gpus() -> int:
    """Number of NVIDIA GPUs, found without initializing CUDA in this process."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return 0
    try:
        out = subprocess.run([exe, "--query-gpu=index", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=GPU_DETECT_TIMEOUT_S, check=True).stdout
    except (subprocess.SubprocessError, OSError):
        return 0
    return sum(1 for line in out.splitlines() if line.strip())


def become_subreaper() -> None:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except OSError:  # not Linux: leftovers are still killed by process group
        pass


def kill_children(keep: set[int] = frozenset()) -> int:
    """SIGKILL every descendant of this process but ``keep`` and theirs; returns how many."""
    me = psutil.Process()
    spared = set(keep)
    for pid in keep:
        try:
            spared |= {c.pid for c in psutil.Process(pid).children(recursive=True)}
        except psutil.NoSuchProcess:
            pass
    procs = [p for p in me.children(recursive=True) if p.pid not in spared]
    for p in procs:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(procs, timeout=LEFTOVERS_WAIT_S)
    return len(procs)


class NbrunnerWorker(Worker):
    """An rq worker that runs :func:`nbrunner.execution.execute.run_job` and settles the record after."""

    def __init__(self, *args: Any, store: JobStore, host: str, slots: list[int], device: str = "cpu",
                 settings: Settings | None = None, run_as_owner: bool = False, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.run_as_owner = run_as_owner
        self.store = store
        self.settings = settings or Settings.load()
        self.host = host
        self.slots = slots
        self.device = device
        self.current: tuple[str, int] | None = None
        self._beat_stop = threading.Event()
        self._beat_thread: threading.Thread | None = None
        self.spare = SpareKernel()
        self._spare_lock = threading.Lock()  # the heartbeat thread restarts a dead spare between jobs
        self._born = threading.Event()  # register_birth prepared the first spare

    # ---- registration and heartbeat -------------------------------------------------
    def registration(self) -> dict[str, Any]:
        return {"name": self.name, "host": self.host, "addr": HOST_ADDR.text(),
                "slots": self.slots, "device": self.device,
                "pid": os.getpid(), "job": self.current[0] if self.current else None, "time": time.time(),
                "spare_kernel": self.spare.pid}

    def beat(self) -> bool:
        """Renew the registration; True if it had expired (or never existed)."""
        return heartbeat(self.store, self.name, self.registration())

    def _beat_loop(self) -> None:
        """Heartbeats only: nothing here may wait for a kernel start (it holds ``_spare_lock``
        for seconds), or a busy host's registration expires while the worker is fine."""
        wait = heartbeat_interval()
        while not self._beat_stop.wait(wait):
            try:
                if self.beat():  # back after an outage: the scheduler may give its slots out again now
                    log.warning("registration had expired: registered again")
                    self.store.emit("worker_joined", worker=self.name, host=self.host)
                wait = heartbeat_interval()
                self._check_current()
            except Exception as exc:  # Redis restarting or out of reach: retry soon, to be back at once
                log.warning("heartbeat failed: %s", exc.__class__.__name__)
                wait = HEARTBEAT_RETRY_S

    def heartbeat(self, timeout: int | None = None, pipeline: Any = None) -> None:
        """rq's worker heartbeat, carried through a Redis restart: rq beats right after taking a
        job from the queue, and an error there ends the worker with the job taken and never run
        (rq #2236's window); here the beat is tried again until Redis is back."""
        beat = super().heartbeat
        if pipeline is not None:  # queued in the caller's transaction: its caller handles errors
            beat(timeout, pipeline)
            return
        until_reachable(lambda: beat(timeout), "rq heartbeat")

    def maintain_heartbeats(self, job, execution) -> None:
        """rq's heartbeats while the horse runs (every ``job_monitoring_interval``).  Redis
        restarting at that moment does not end the worker (rq's loop would quit, and the job's
        horse, kernel and learners die with the worker): the next tick beats again."""
        try:
            super().maintain_heartbeats(job, execution)
        except UNREACHABLE as exc:
            log.warning("job heartbeat failed: Redis out of reach (%s): beating again at the next tick",
                        exc.__class__.__name__)

    def _spare_loop(self) -> None:
        """Between jobs, start a spare kernel again if the last one died."""
        while not self._beat_stop.wait(heartbeat_interval()):
            if self.current is None and self._born.is_set():
                self.prepare_kernel()

    def _check_current(self) -> None:
        """Kill the work horse if its job was cancelled, preempted or handed to another worker."""
        cur = self.current
        if cur is None or not self.horse_pid:
            return
        rec = self.store.find(cur[0])
        if rec is None or rec.attempt != cur[1] or rec.cancel_requested or rec.phase == "preempting" or (
            rec.status != "queued" and rec.worker not in (None, self.name)
        ):
            log.warning("job %s is no longer this worker's: stopping it", cur[0])
            self.kill_horse()

    @contextmanager
    def _stops_deferred(self) -> Iterator[None]:
        """A SIGTERM/SIGINT is noted, not acted on, inside; a warm stop once it is over.

        Around the worker's own work outside a job (birth, preparing a kernel, settling a job):
        rq's handler raises StopRequested there (the worker is not busy), and an ``except
        Exception`` on the way (a kernel that fails to start is only logged) would swallow it,
        leaving a worker that never stops."""
        asked: list[int] = []
        previous = {sig: signal.signal(sig, lambda signum, _frame: asked.append(signum))
                    for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if asked:
                self._stop_requested = True  # rq's loop stops before it takes another job

    def register_birth(self) -> None:
        with self._stops_deferred():  # rq installs its signal handlers after this returns
            self._birth()

    def _birth(self) -> None:
        super().register_birth()
        self.beat()
        self._beat_thread = threading.Thread(target=self._beat_loop, name="nbrunner-heartbeat", daemon=True)
        self._beat_thread.start()
        threading.Thread(target=self._spare_loop, name="nbrunner-spare-kernel", daemon=True).start()
        from .learner_agent import LearnerAgent

        self.agent = LearnerAgent(self.store, self.host, self.name, warm=0 if self.run_as_owner else len(self.slots),
                                  as_owner=self.run_as_owner)
        self.agent.start()
        if not self.run_as_owner:
            self.spare.forkserver.start()  # it imports ipykernel while this process preloads the rest
        self.store.emit("worker_joined", worker=self.name, host=self.host)
        preload_html()  # before the first job process is forked: a job's end then only renders its HTML
        from .execute import preload as preload_papermill

        preload_papermill()
        self.prepare_kernel()
        self._born.set()

    def prepare_kernel(self) -> None:
        """Have a fresh kernel started for the next job (see :mod:`.warm_kernel`); none for jobs that
        run as their owners."""
        if self.run_as_owner:
            return
        with self._spare_lock:
            try:
                self.spare.ensure()
            except Exception as exc:  # noqa: BLE001 - jobs then start their kernels themselves
                log.warning("no pre-warmed kernel: %s", exc)
                self.spare.discard()

    def register_death(self) -> None:
        # a stop noted while a job was settled left rq's first-signal handler in place: the next
        # signal must not raise StopRequested out of the teardown
        with self._stops_deferred():
            self._death()

    def _death(self) -> None:
        self._beat_stop.set()
        with self._spare_lock:
            self.spare.close()
        if getattr(self, "agent", None) is not None:
            self.agent.stopping.set()
            self.agent.join(timeout=1.0)  # it stops its warm interpreters and removes its files
        try:
            unregister(self.store, self.name)
            self.store.emit("worker_left", worker=self.name, host=self.host)
        except Exception:
            pass
        super().register_death()

    # ---- jobs ---------------------------------------------------------------------
    def execute_job(self, job, queue) -> None:
        job_id, attempt = job.args[0], job.args[1]
        self.current = (job_id, attempt)
        with self._stops_deferred():
            self.prepare_kernel()
        if self.spare.pid is not None:
            os.environ[ENV_SPARE] = self.spare.describe()  # the horse, forked from here, reads it
        try:
            super().execute_job(job, queue)  # rq's own signal handling while the job runs
        finally:
            with self._stops_deferred():
                os.environ.pop(ENV_SPARE, None)
                self.current = None
                with self._spare_lock:
                    used = self.spare.detach()  # single use: killed below with the job's leftovers, used or not
                self.prepare_kernel()  # the next job's kernel starts while this one's bookkeeping runs
                agent = getattr(self, "agent", None)
                keep = agent.pids() if agent else set()  # other jobs' learners stay
                keep |= {self.spare.pid} if self.spare.pid is not None else set()
                kill_children(keep=keep | ({self.spare.forkserver.pid} if self.spare.forkserver.alive() else set()))
                used.discard()
                if self.run_as_owner:  # before the release is confirmed: whoever sees it finds it done
                    self._revoke(job_id)
                    self._hand_over(job_id)
                self._settle(job_id, attempt)

    def _revoke(self, job_id: str) -> None:
        """Delete the job's Redis user now that none of its processes runs."""
        try:
            until_reachable(lambda: revoke_access(self.store, job_id), f"job {job_id}: deleting its Redis user")
        except Exception as exc:  # noqa: BLE001 - the next attempt's start deletes it first
            log.warning("could not delete job %s's Redis user: %s", job_id, exc)

    def _hand_over(self, job_id: str) -> None:
        """The job directory's group (the service's) may read all of it, and delete it later."""
        try:
            rec = until_reachable(lambda: self.store.find(job_id), f"job {job_id}: handing its directory over")
            account = as_owner.resolve(rec.owner)[0] if rec is not None else None
            if account is not None:
                as_owner.hand_over(self.settings.job_dir(job_id), account)
        except Exception as exc:  # noqa: BLE001 - never the worker's death
            log.warning("could not hand job %s's directory over: %s", job_id, exc)

    def _settle(self, job_id: str, attempt: int) -> None:
        """After the horse is gone: confirm that nothing of the attempt runs (a death the horse could
        not record, a cancel it was stopped by, a killed kernel to run again)."""
        try:
            done = until_reachable(lambda: advance(
                self.store, job_id, lambda rec: settle_event(rec, attempt, self.name, utcnow())
                if rec.attempt == attempt and rec.worker == self.name else None, self.settings), f"settling job {job_id}")
        except Refused:
            return
        except Exception as exc:
            log.warning("could not settle job %s: %s", job_id, exc)
            return
        if done is not None and done.record.status == "queued":
            log.warning("job %s: kernel killed, re-queued", job_id)


def run_worker(settings: Settings, gpus: int | None = 0, host: str | None = None, slots: list[int] | None = None,
               name: str | None = None, burst: bool = False, run_as_owner: bool = False) -> None:
    """Run a worker in this process until SIGINT/SIGTERM (``run_as_owner``: jobs run as their
    owners; the caller checked that this process is root)."""
    check((WORKER_TTL,))  # a bad value stops the worker here, not in its heartbeat thread
    host = host or HOST.text() or socket.gethostname()
    os.environ[HOST.name] = host
    os.environ.update(settings.env())
    device = "cpu"
    if gpus is None:  # auto
        gpus = detect_gpus()
        device = "cuda" if gpus else "cpu"
    slots = list(range(gpus)) if slots is None else slots
    # short socket timeouts: a heartbeat over a cut link must fail fast, then reconnect
    store = JobStore(connect(settings.url, socket_timeout=WORKER_SOCKET_TIMEOUT_S, retry_on_timeout=False),
                     settings.url)
    if run_as_owner:
        as_owner.min_uid()  # a bad NBRUNNER_MIN_UID stops the worker here, in one line
        check_protected(store)
        mark_run_as_owner(store)
        os.environ[RUN_AS_OWNER.name] = "1"  # its work horses read it
    elif runs_as_owner(store):
        raise NbrunnerError("this cluster runs jobs as their owners: start the worker with --run-as-owner (as root)")
    conn = rq_connection(store)
    become_subreaper()
    name = name or f"{host}.{os.getpid()}"
    worker = NbrunnerWorker([host_queue(host), DEFAULT_QUEUE], connection=conn, name=name, store=store, host=host,
                            slots=slots, device=device, settings=settings, run_as_owner=run_as_owner)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        worker.work(burst=burst, with_scheduler=False, logging_level="WARNING", max_idle_time=None)
    finally:
        worker.spare.close()  # also when a stop came before rq's own teardown could run
        kill_children()
