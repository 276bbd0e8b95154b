"""The worker's learner agent: it starts learners of jobs whose driver runs on another host.

A trainer's :class:`nbrunner.elastic.cluster_slots.ClusterLauncher` pushes a start request
to ``nbrunner:learners:<host>``; the agent of a worker on that host claims it (atomically,
so a request the trainer cancelled is never started), runs the learner and reports its pid
and exit code under ``nbrunner:learner:<id>``.  Signals come through ``nbrunner:agent:<worker>``.

Once its host has run such a learner, the agent keeps ``warm`` learner interpreters started
(:mod:`.warm_learner`: torch and the learner module imported), so that a learner granted later,
as when a host that was cut off comes back, skips most of its start.  They are started
again some seconds after being used, not while the new learners start on the same CPUs.
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..core.keys import LEARNER_STATUS_TTL_S, agent_control, learner_requests, learner_status
from ..core.store import JobStore
from .execute import die_with_parent_preexec
from .warm_learner import learner_args

log = logging.getLogger("nbrunner.learners")
REFILL_AFTER_S = 10.0  # after the last learner start, before warm interpreters are started again


class LearnerAgent(threading.Thread):
    """A worker's thread that runs learners of jobs whose driver is on another host."""

    def __init__(self, store: JobStore, host: str, worker: str, warm: int = 0):
        super().__init__(name="nbrunner-learner-agent", daemon=True)
        self.store = store
        self.host = host
        self.worker = worker
        self.warm = warm
        self.procs: dict[str, subprocess.Popen] = {}
        self.spares: list[subprocess.Popen] = []
        self._refill_at: float | None = None  # None: no remote learner ran here yet, keep none
        self.stopping = threading.Event()

    def pids(self) -> set[int]:
        """The processes the agent owns (learners and warm interpreters)."""
        return {p.pid for p in [*self.procs.values(), *self.spares]}

    def run(self) -> None:
        queues = [agent_control(self.worker), learner_requests(self.host)]
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
                self._refill()
            except Exception as exc:
                log.warning("learner agent: %s: %s", exc.__class__.__name__, exc)
                self.stopping.wait(0.2)  # Redis out of reach: take requests again soon after it is back
        for p in self.spares:
            p.kill()

    def _start(self, msg: dict, preexec) -> None:
        claim = json.dumps({"pid": None, "worker": self.worker, "rc": None})
        if not self.store.r.set(learner_status(msg["learner"]), claim, nx=True, ex=LEARNER_STATUS_TTL_S):
            return  # cancelled by the trainer: it waited too long for this host
        self._refill_at = time.monotonic() + REFILL_AFTER_S
        proc = self._hand_to_spare(msg)
        if proc is None:
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
                self.store.r.set(learner_status(msg["learner"]),
                                 json.dumps({"pid": None, "worker": self.worker, "rc": 1}), ex=LEARNER_STATUS_TTL_S)
                raise
            finally:
                if out is not None:
                    out.close()
        self.procs[msg["learner"]] = proc
        self.store.r.set(learner_status(msg["learner"]), json.dumps({"pid": proc.pid, "worker": self.worker, "rc": None}),
                         ex=LEARNER_STATUS_TTL_S)

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
        """Keep ``warm`` interpreters started, once remote learners ran here and none started lately."""
        if self._refill_at is None or time.monotonic() < self._refill_at:
            return
        self.spares = [p for p in self.spares if p.poll() is None]
        while len(self.spares) < self.warm:
            self.spares.append(subprocess.Popen(
                [sys.executable, "-m", "nbrunner.execution.warm_learner"], stdin=subprocess.PIPE,
                env={**os.environ, "PYTHONUNBUFFERED": "1"}, preexec_fn=die_with_parent_preexec,
                start_new_session=True))

    def _reap(self) -> None:
        for learner, proc in list(self.procs.items()):
            rc = proc.poll()
            if rc is not None:
                self.store.r.set(learner_status(learner), json.dumps({"pid": proc.pid, "worker": self.worker, "rc": rc}),
                                 ex=LEARNER_STATUS_TTL_S)
                del self.procs[learner]
