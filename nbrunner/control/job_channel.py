"""How a job's own processes (its kernel, its learners) change the cluster's state.

By default they hold the cluster's Redis URL and do it themselves (:class:`Direct`).  A job that
runs as its owner (``nbrunner worker --run-as-owner``) holds only its own credential
(:mod:`nbrunner.core.job_access`: it reads its record and grant, nothing else): each change is a
request to its work horse (:class:`WorkerChannel`), a JSON object pushed to
``nbrunner:channel:<id>``; the horse (:class:`nbrunner.control.channel_server.ChannelServer`)
checks it, does what :class:`Direct` would, as the job, and pushes the answer to the request's
own list.  Both offer the same calls; grants use them through
:class:`nbrunner.control.grants.GrantClient`.
"""
from __future__ import annotations

import json
import signal
import uuid
from typing import Any

import msgspec

from ..core.config import ATTEMPT, JOB_CHANNEL
from ..core.keys import LEARNER_STATUS_TTL_S, agent_control, channel_key, learner_requests, learner_status, reply_key
from ..core.lifecycle import Declare, Progress, Refused, TrainingOver
from .store import JobStore
from .registration import is_alive, live_capacity

REQUEST_TIMEOUT_S = 60.0  # a work horse answers in milliseconds; it may be busy ending the job
# the events a job's own processes may cause (by name, as requests carry them)
JOB_EVENTS: dict[str, type] = {"Progress": Progress, "Declare": Declare, "TrainingOver": TrainingOver}


class ChannelError(RuntimeError):
    """The work horse did not carry a request out (its one-line reason)."""


def through_worker() -> bool:
    """Do this process's requests go through its work horse (the job runs as its owner)?"""
    return JOB_CHANNEL.raw() == "worker"


def channel_for(store: JobStore, job_id: str | None):
    """The channel of job ``job_id``'s processes: :class:`WorkerChannel` if the job runs as its
    owner, else :class:`Direct`."""
    return WorkerChannel(store, job_id) if through_worker() and job_id else Direct(store, job_id)


def stamped(event: Any, attempt: int | None) -> Any:
    """``event`` carrying ``attempt`` (the fence, :func:`nbrunner.core.lifecycle.fence`) if it is
    one of a job's own events."""
    if attempt is None or not hasattr(event, "attempt"):
        return event
    return msgspec.structs.replace(event, attempt=attempt)


class Direct:
    """A job's changes done with the cluster's own credential (the default, and the horse's side).
    ``attempt`` (default: ``NBRUNNER_ATTEMPT``, which the worker sets for a job's processes) fences
    every change: once the record has moved on to a later attempt, nothing changes."""

    def __init__(self, store: JobStore, job_id: str | None, attempt: int | None = None):
        self.store = store
        self.job_id = job_id
        self.attempt = attempt if attempt is not None else ATTEMPT.count()

    def transition(self, event: Any) -> None:
        """Apply a job event (:data:`JOB_EVENTS`) to the job's record; Refused if not legal now."""
        self.store.transition(self.job_id, stamped(event, self.attempt))

    def devices(self) -> dict[str, str]:
        """Each live host's device (``cuda`` or ``cpu``)."""
        return {w["host"]: w.get("device", "cpu") for w in live_capacity(self.store).workers.values()}

    def start_learner(self, host: str, request: dict[str, Any]) -> None:
        """Ask the workers of ``host`` to start a learner (:mod:`nbrunner.execution.learner_agent`)."""
        self.store.r.rpush(learner_requests(host), json.dumps({**request, "job": self.job_id}))

    def learner_status(self, learner: str) -> dict[str, Any]:
        raw = self.store.r.get(learner_status(learner))
        return json.loads(raw) if raw else {}

    def cancel_learner(self, learner: str) -> bool:
        """Cancel a start request no worker claimed yet (True); False if one did."""
        gone = json.dumps({"pid": None, "worker": None, "rc": -int(signal.SIGKILL), "cancelled": True})
        return bool(self.store.r.set(learner_status(learner), gone, nx=True, ex=LEARNER_STATUS_TTL_S))

    def signal_learner(self, learner: str, sig: int) -> None:
        """Have the worker that started ``learner`` send it ``sig``."""
        worker = self.learner_status(learner).get("worker")
        if worker:
            self.store.r.rpush(agent_control(worker), json.dumps({"learner": learner, "signal": int(sig)}))

    def worker_alive(self, worker: str) -> bool:
        return is_alive(self.store, worker)


class WorkerChannel:
    """A job's changes as requests to its work horse (the job runs as its owner)."""

    def __init__(self, store: JobStore, job_id: str):
        self.store = store
        self.job_id = job_id

    def ask(self, op: str, **args: Any) -> Any:
        """Send request ``op`` and wait for the horse's answer; Refused or ChannelError if it says no."""
        request = uuid.uuid4().hex
        self.store.r.rpush(channel_key(self.job_id), json.dumps({"id": request, "op": op, "args": args}))
        got = self.store.r.blpop([reply_key(self.job_id, request)], timeout=REQUEST_TIMEOUT_S)
        if got is None:
            raise ChannelError(f"the job's worker did not answer its {op!r} request")
        answer = json.loads(got[1])
        if "refused" in answer:
            raise Refused(answer["refused"])
        if "error" in answer:
            raise ChannelError(answer["error"])
        return answer.get("ok")

    def transition(self, event: Any) -> None:
        self.ask("transition", event=type(event).__name__, fields=msgspec.to_builtins(event))

    def held(self) -> list[tuple[str, int]]:
        return [tuple(s) for s in self.ask("held")]

    def release(self, slots) -> list[tuple[str, int]]:
        return [tuple(s) for s in self.ask("release", slots=[list(s) for s in slots])]

    def devices(self) -> dict[str, str]:
        return self.ask("devices")

    def start_learner(self, host: str, request: dict[str, Any]) -> None:
        self.ask("start_learner", host=host, request=request)

    def learner_status(self, learner: str) -> dict[str, Any]:
        return self.ask("learner_status", learner=learner)

    def cancel_learner(self, learner: str) -> bool:
        return self.ask("cancel_learner", learner=learner)

    def signal_learner(self, learner: str, sig: int) -> None:
        self.ask("signal_learner", learner=learner, sig=int(sig))

    def worker_alive(self, worker: str) -> bool:
        return self.ask("worker_alive", worker=worker)
