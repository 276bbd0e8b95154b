"""The soak's nine fault kinds, each injected for real, and the time until the cluster is whole
again: Redis answers, a scheduler holds the lease, the service answers through the hub, every
worker process is registered, no job is recorded running on a worker that is gone, and the job
the fault hit has moved on (re-queued, ended, or, for a learner, training again).

A killed component is started again as its supervisor would (the hub restarts its service
itself); ``partition`` measures from the moment the link comes back."""
from __future__ import annotations

import json
import random
import signal
import time
from typing import Callable

import psutil

from soak_cluster import Cluster, Network, Proc, service_process

KINDS = ("worker", "horse", "kernel", "learner", "scheduler", "service", "redis", "partition", "sigterm")
WHOLE_TIMEOUT_S = 240.0
TARGET_WAIT_S = 30.0  # how long a fault waits for something to hit (a running kernel, a learner)
RESTART_DELAY_S = 1.0


class Faults:
    """Inject faults into ``cluster`` and measure each recovery (``recovery[kind]``: seconds)."""

    def __init__(self, cluster: Cluster, net: Network, hub, check_service: Callable[[], bool], rng: random.Random):
        self.cluster, self.net, self.hub, self.check_service, self.rng = cluster, net, hub, check_service, rng
        self.counts: dict[str, int] = {k: 0 for k in KINDS}
        self.recovery: dict[str, list[float]] = {k: [] for k in KINDS}
        self.skipped: dict[str, int] = {}
        self.notes: list[str] = []

    # ---- the cluster as a whole -------------------------------------------------------------------
    def _store(self):
        from nbrunner.control.store import JobStore

        if getattr(self, "_cached", None) is None:
            self._cached = JobStore.from_url(self.cluster.url)  # its pool reconnects after a Redis restart
        return self._cached

    def whole(self, extra: Callable[[], bool] | None = None, since: float | None = None) -> bool:
        """Is the cluster whole?  ``since`` (a ``time.time()``): every worker has beaten since."""
        from nbrunner.core.keys import LEASE, worker_key

        try:
            r = self.cluster.client()
            holder = r.get(LEASE) or ""
            if not r.ping() or holder.rsplit(".", 1)[-1] not in {str(s.pid) for s in self.cluster.schedulers
                                                                  if s.alive()}:
                return False  # no lease, or the lease of a dead scheduler (until it expires)
            live = [w for w in self.cluster.workers if w.alive()]
            if len(live) != len(self.cluster.workers):
                return False
            names = {f"host{w.host}.{w.pid}" for w in live}
            regs = [r.get(worker_key(n)) for n in names]
            if not all(regs) or (since is not None and any(json.loads(g)["time"] < since for g in regs)):
                return False
            store = self._store()
            stuck = [rec for rec in store.all() if rec.status == "running" and rec.worker not in names]
            if stuck:
                return False
            if not self.check_service():
                return False
            return extra() if extra else True
        except Exception:  # noqa: BLE001 - Redis restarting, a record being written: not whole yet
            return False

    def _measure(self, kind: str, t0: float, extra: Callable[[], bool] | None = None,
                 since: float | None = None) -> float:
        deadline = t0 + WHOLE_TIMEOUT_S
        while not self.whole(extra, since):
            self.revive()
            if time.monotonic() > deadline:
                self.notes.append(f"{kind}: not whole after {WHOLE_TIMEOUT_S:g} s")
                break
            time.sleep(0.25)
        took = time.monotonic() - t0
        self.counts[kind] += 1
        self.recovery[kind].append(took)
        return took

    def revive(self) -> None:
        """Start again, as their supervisor would, the workers and schedulers that died of something
        else than a fault (a finding: noted)."""
        for p in [*self.cluster.workers, *self.cluster.schedulers]:
            if p.popen is not None and not p.alive():
                self.notes.append(f"{p.name} (pid {p.pid}) died by itself with {p.popen.returncode}: started again")
                p.start()

    # ---- targets ------------------------------------------------------------------------------------
    def _descendants(self, match: str) -> list[psutil.Process]:
        found = []
        for w in self.cluster.workers:
            if not w.alive():
                continue
            try:
                for p in psutil.Process(w.pid).children(recursive=True):
                    if match in " ".join(p.cmdline()):
                        found.append(p)
            except psutil.Error:
                continue
        return found

    def _running(self, pred: Callable = lambda rec: True) -> list:
        return [rec for rec in self._store().all() if rec.status == "running" and rec.phase == "running"
                and pred(rec)]

    def _wait_target(self, find: Callable[[], list], wait: float = TARGET_WAIT_S) -> list:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            got = find()
            if got:
                return got
            time.sleep(0.3)
        return []

    def _moved_on(self, job_id: str, attempt: int) -> Callable[[], bool]:
        def check() -> bool:
            rec = self._store().find(job_id)
            return rec is None or rec.finished or rec.attempt != attempt or rec.status == "queued"
        return check

    def _restart(self, proc: Proc) -> None:
        time.sleep(RESTART_DELAY_S)
        proc.start()

    # ---- the kinds -------------------------------------------------------------------------------------
    def inject(self, kind: str) -> float | None:
        """Inject one fault of ``kind``; returns the recovery in seconds, None if nothing to hit."""
        return getattr(self, f"_{kind}")()

    def _skip(self, kind: str, why: str) -> None:
        self.skipped[kind] = self.skipped.get(kind, 0) + 1
        self.notes.append(f"{kind}: skipped ({why})")

    def _worker(self) -> float:
        w = self.rng.choice(self.cluster.workers)
        t0 = time.monotonic()
        w.signal(signal.SIGKILL)
        w.popen.wait()
        self._restart(w)
        return self._measure("worker", t0)

    def _job_process(self, kind: str, match: str) -> float | None:
        """SIGKILL a process of a running job (its work horse, kernel or learner)."""
        def find() -> list:
            procs = self._descendants(match)
            if kind == "horse":  # the horse is a fork of its worker, rq titles it "rq:worker:NAME: Processing ..."
                procs = []
                for w in self.cluster.workers:
                    try:
                        procs += [c for c in psutil.Process(w.pid).children()
                                  if "Processing" in " ".join(c.cmdline())]
                    except psutil.Error:
                        continue
            return procs

        procs = self._wait_target(find, TARGET_WAIT_S * (4 if kind == "learner" else 1))  # elastic jobs are fewer
        if not procs:
            self._skip(kind, f"no {match or 'work horse'} running")
            return None
        victim = self.rng.choice(procs)
        job = self._job_of(victim)
        try:  # the attempt the process belongs to: a cut-off host may still run an attempt re-run elsewhere
            attempt = int(victim.environ().get("NBRUNNER_ATTEMPT") or (job.attempt if job else 0))
        except (psutil.Error, ValueError):
            attempt = job.attempt if job else 0
        t0 = time.monotonic()
        try:
            cmd = " ".join(victim.cmdline())[:80]
            victim.kill()
        except psutil.Error as exc:
            cmd = f"gone before the kill ({exc.__class__.__name__})"
        self.notes.append(f"{kind}: killed {victim.pid} ({cmd}) of job {job.id if job else None} attempt {attempt}"
                          + (f" (the record is at attempt {job.attempt})" if job and job.attempt != attempt else ""))
        extra = None
        if job is not None:
            if kind == "learner":
                before = job.metrics.get("step") or job.progress
                extra = self._trains_again(job.id, attempt, before)
            else:
                extra = self._moved_on(job.id, attempt)
        return self._measure(kind, t0, extra)

    def _job_of(self, proc: psutil.Process):
        try:
            env_job = proc.environ().get("NBRUNNER_JOB_ID")
        except psutil.Error:
            env_job = None
        if env_job:
            return self._store().find(env_job)
        for w in self.cluster.workers:  # a horse: its worker's registration names the job
            if w.alive() and proc.pid in {c.pid for c in _children(w.pid)}:
                raw = self.cluster.client().get(f"nbrunner:worker:host{w.host}.{w.pid}")
                job = json.loads(raw).get("job") if raw else None
                return self._store().find(job) if job else None
        return None

    def _trains_again(self, job_id: str, attempt: int, before) -> Callable[[], bool]:
        def check() -> bool:
            rec = self._store().find(job_id)
            if rec is None or rec.finished or rec.attempt != attempt:
                return True
            now = rec.metrics.get("step") or rec.progress
            return now is not None and now != before
        return check

    def _horse(self) -> float | None:
        return self._job_process("horse", "")

    def _kernel(self) -> float | None:
        return self._job_process("kernel", "ipykernel")

    def _learner(self) -> float | None:
        return self._job_process("learner", "nbrunner.elastic.learner")

    def _scheduler(self) -> float:
        from nbrunner.core.keys import LEASE

        holder = self.cluster.client().get(LEASE) or ""
        pid = int(holder.rsplit(".", 1)[-1]) if holder.rsplit(".", 1)[-1].isdigit() else None
        live = [s for s in self.cluster.schedulers if s.alive()]
        target = next((s for s in live if s.pid == pid), None) or self.rng.choice(live)
        t0 = time.monotonic()
        target.signal(signal.SIGKILL)
        target.popen.wait()
        self._restart(target)
        return self._measure("scheduler", t0)

    def _service(self) -> float | None:
        proc = service_process(self.hub.proc)
        if proc is None:
            self._skip("service", "no service process found")
            return None
        t0 = time.monotonic()
        proc.kill()
        return self._measure("service", t0, lambda: service_process(self.hub.proc) is not None)

    def _redis(self) -> float:
        t0, since = time.monotonic(), time.time()
        self.cluster.redis.signal(signal.SIGKILL)
        self.cluster.redis.popen.wait()
        self._restart(self.cluster.redis)
        return self._measure("redis", t0, since=since)  # every worker heart-beating into the new server

    def _partition(self) -> float | None:
        if not self.net.enabled:
            self._skip("partition", "no network namespaces: one host")
            return None
        h = self.rng.randint(1, self.net.hosts)
        self.net.link(h, up=False)
        time.sleep(self.rng.uniform(10, 20))
        self.net.link(h, up=True)
        return self._measure("partition", time.monotonic(), since=time.time())

    def _sigterm(self) -> float:
        """SIGTERM a worker (an idle one if any: it is waiting in its dequeue), wait for its warm
        shutdown, start it again."""
        r = self.cluster.client()
        idle = []
        for w in self.cluster.workers:
            raw = r.get(f"nbrunner:worker:host{w.host}.{w.pid}") if w.alive() else None
            if raw and not json.loads(raw).get("job"):
                idle.append(w)
        w = self.rng.choice(idle or [w for w in self.cluster.workers if w.alive()])
        w.signal(signal.SIGTERM)
        try:  # a busy worker first finishes its job (rq's warm shutdown): the cluster is whole meanwhile
            w.popen.wait(WHOLE_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - a warm shutdown that never ends is a finding: kill it
            self.notes.append(f"sigterm: {w.name} did not stop within {WHOLE_TIMEOUT_S:g} s")
            w.kill_group()
        t0 = time.monotonic()  # from its exit: the time until its replacement serves
        self._restart(w)
        return self._measure("sigterm", t0)


def _children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children()
    except psutil.Error:
        return []


def schedule_of_kinds(rng: random.Random, n: int) -> list[str]:
    """``n`` fault kinds: every kind once in a shuffled round, round after round (so that a short run
    still sees each kind)."""
    out: list[str] = []
    while len(out) < n:
        round_ = list(KINDS)
        rng.shuffle(round_)
        out += round_
    return out[:n]
