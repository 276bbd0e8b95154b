"""The worker's learner agent: it starts learners of jobs whose driver runs on another host.

A trainer's :class:`nbrunner.elastic.cluster_slots.ClusterLauncher` pushes a start request
to ``nbrunner:learners:<host>``; the agent of a worker on that host claims it (atomically,
so a request the trainer cancelled is never started), runs the learner and reports its pid
and exit code under ``nbrunner:learner:<id>``.  Signals come through ``nbrunner:agent:<worker>``.
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

from ..core.keys import LEARNER_STATUS_TTL_S, agent_control, learner_requests, learner_status
from ..core.store import JobStore
from .execute import die_with_parent_preexec

log = logging.getLogger("nbrunner.learners")


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
            except Exception as exc:
                log.warning("learner agent: %s: %s", exc.__class__.__name__, exc)
                self.stopping.wait(0.2)  # Redis out of reach: take requests again soon after it is back

    def _start(self, msg: dict, preexec) -> None:
        claim = json.dumps({"pid": None, "worker": self.worker, "rc": None})
        if not self.store.r.set(learner_status(msg["learner"]), claim, nx=True, ex=LEARNER_STATUS_TTL_S):
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
            self.store.r.set(learner_status(msg["learner"]), json.dumps({"pid": None, "worker": self.worker, "rc": 1}),
                             ex=LEARNER_STATUS_TTL_S)
            raise
        finally:
            if out is not None:
                out.close()
        self.procs[msg["learner"]] = proc
        self.store.r.set(learner_status(msg["learner"]), json.dumps({"pid": proc.pid, "worker": self.worker, "rc": None}),
                         ex=LEARNER_STATUS_TTL_S)

    def _reap(self) -> None:
        for learner, proc in list(self.procs.items()):
            rc = proc.poll()
            if rc is not None:
                self.store.r.set(learner_status(learner), json.dumps({"pid": proc.pid, "worker": self.worker, "rc": rc}),
                                 ex=LEARNER_STATUS_TTL_S)
                del self.procs[learner]
