"""The work horse's side of a job's requests (:mod:`nbrunner.control.job_channel`).

A job that runs as its owner cannot change the cluster's state itself; its work horse, which
holds the cluster's credential, pops the job's requests and does what the job's processes
would do in the default mode, for this job only: the job id is the horse's, never the
request's; only the job's own events (:data:`~nbrunner.control.job_channel.JOB_EVENTS`) apply;
a slot is released only if the job holds it; a remote learner's start request is marked with
the job (its host's agent runs it as the job's owner) and only the learners the job started
may be asked about, cancelled or signalled.  A malformed request gets a one-line error.
"""
from __future__ import annotations

import json
import logging
import re
from typing import Any, Callable

import msgspec

from ..core.errors import one_line
from ..core.keys import channel_key, reply_key
from ..core.lifecycle import Refused
from .store import JobStore
from .grants import held_by, release_and_sync
from .job_channel import JOB_EVENTS, Direct

log = logging.getLogger("nbrunner.channel")
REQUEST_ID = re.compile(r"[0-9a-f]{32}")
LEARNER = re.compile(r"[A-Za-z0-9_.:-]{1,200}")
REPLY_TTL_S = 60


class BadRequest(ValueError):
    pass


def _text(value: Any, what: str, pattern: re.Pattern | None = None) -> str:
    if not isinstance(value, str) or (pattern is not None and not pattern.fullmatch(value)):
        raise BadRequest(f"{what} must be {'a valid ' if pattern else ''}string")
    return value


def _slots(value: Any) -> list[tuple[str, int]]:
    if not isinstance(value, list) or not all(
            isinstance(s, list) and len(s) == 2 and isinstance(s[0], str) and type(s[1]) is int for s in value):
        raise BadRequest("slots must be a list of [host, index]")
    return [(h, i) for h, i in value]


def _learner_request(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadRequest("request must be an object")
    argv, env, out = value.get("argv"), value.get("env"), value.get("log")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise BadRequest("argv must be a list of strings")
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise BadRequest("env must map strings to strings")
    if out is not None and not isinstance(out, str):
        raise BadRequest("log must be a string or null")
    return {"learner": _text(value.get("learner"), "learner", LEARNER), "argv": argv, "env": env, "log": out}


class ChannelServer:
    """Carries out job ``job_id``'s requests with ``store`` (the cluster's credential), on behalf of
    ``attempt``: its changes and releases are fenced by it, whatever a request says."""

    def __init__(self, store: JobStore, job_id: str, attempt: int | None = None):
        self.store = store
        self.job_id = job_id
        self.direct = Direct(store, job_id, attempt)
        self.learners: set[str] = set()  # the remote learners this job started
        self.ops: dict[str, Callable[[dict[str, Any]], Any]] = {
            "transition": self._transition, "held": lambda a: [list(s) for s in held_by(store.r, job_id)],
            "release": lambda a: [list(s) for s in release_and_sync(store, job_id, _slots(a.get("slots")),
                                                                   attempt=self.direct.attempt)],
            "devices": lambda a: self.direct.devices(), "start_learner": self._start_learner,
            "learner_status": lambda a: self.direct.learner_status(self._own(a)) if self._mine(a) else {},
            "cancel_learner": lambda a: self.direct.cancel_learner(self._own(a)) if self._mine(a) else False,
            "signal_learner": self._signal_learner,
            "worker_alive": lambda a: self.direct.worker_alive(_text(a.get("worker"), "worker")),
        }

    def serve(self, timeout: float) -> bool:
        """Carry out the next request, waiting up to ``timeout`` seconds for one; False if none came."""
        got = self.store.r.blpop([channel_key(self.job_id)], timeout=timeout)
        if got is None:
            return False
        self.handle(got[1])
        return True

    def handle(self, raw: str) -> None:
        try:
            msg = json.loads(raw)
            request = _text(msg.get("id"), "id", REQUEST_ID)
        except (ValueError, AttributeError, BadRequest):
            log.warning("job %s: an unreadable request was dropped", self.job_id)
            return  # no id: nowhere to answer
        op, args = msg.get("op"), msg.get("args")
        try:
            if op not in self.ops or not isinstance(args, dict):
                raise BadRequest(f"unknown request {one_line(op, 40)!r}")
            answer = {"ok": self.ops[op](args)}
        except Refused as exc:
            answer = {"refused": str(exc)}
        except (BadRequest, msgspec.ValidationError) as exc:
            answer = {"error": one_line(f"bad request: {exc}")}
        except Exception as exc:  # noqa: BLE001 - the job is told, the horse goes on
            answer = {"error": one_line(f"{exc.__class__.__name__}: {exc}")}
        with self.store.r.pipeline(transaction=False) as p:
            p.rpush(reply_key(self.job_id, request), json.dumps(answer))
            p.expire(reply_key(self.job_id, request), REPLY_TTL_S)
            p.execute()

    def _transition(self, args: dict[str, Any]) -> None:
        kind = JOB_EVENTS.get(args.get("event"))
        if kind is None:
            raise BadRequest(f"a job may not cause {one_line(args.get('event'), 40)!r}")
        self.direct.transition(msgspec.convert(args.get("fields") or {}, kind))

    def _start_learner(self, args: dict[str, Any]) -> None:
        request = _learner_request(args.get("request"))
        self.direct.start_learner(_text(args.get("host"), "host"), request)
        self.learners.add(request["learner"])

    def _own(self, args: dict[str, Any]) -> str:
        return _text(args.get("learner"), "learner", LEARNER)

    def _mine(self, args: dict[str, Any]) -> bool:
        return self._own(args) in self.learners

    def _signal_learner(self, args: dict[str, Any]) -> None:
        sig = args.get("sig")
        if type(sig) is not int or not 0 < sig < 65:
            raise BadRequest("sig must be a signal number")
        if self._mine(args):
            self.direct.signal_learner(self._own(args), sig)
