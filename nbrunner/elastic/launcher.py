"""Starting learner processes.

A learner is ``python -m nbrunner.elastic.learner --addr HOST --port PORT --id LID``: it
connects over TCP to the driver's TCPStore (the rendezvous and control channel), fetches
the pickled model/optimizer/loss/datasets from it, and then takes part in the gloo/nccl
process groups the driver plans.  Nothing else is shared with the driver, so a launcher for
other hosts only has to run that command there (ssh, a worker agent, a container exec...)
with ``spec.env`` in the environment and ``--addr`` pointing at an address of the driver's
host that the other host can reach (``spec.master_addr``; set it with ``master_addr=`` on
``train()`` or a ``master_addr`` attribute on the launcher).

Protocol::

    class Launcher(Protocol):
        def launch(self, spec: LearnerSpec) -> LearnerHandle: ...

    class LearnerHandle(Protocol):
        pid: int | None
        def poll(self) -> int | None: ...   # exit code once the process has ended, else None
        def terminate(self) -> None: ...    # SIGTERM-like, the learner exits at once
        def kill(self) -> None: ...         # SIGKILL-like
        def wait(self, timeout: float | None = None) -> int | None: ...
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Protocol, runtime_checkable

from ..core.config import ELASTIC_STANDBY
from .slots import Slot

__all__ = ["LearnerSpec", "LearnerHandle", "Launcher", "LocalLauncher", "learner_command"]


@dataclass
class LearnerSpec:
    learner_id: str
    slot: Optional[Slot]  # None: a standby learner, bound to a slot later through the store
    master_addr: str
    master_port: int
    log_path: Optional[Path] = None
    env: dict = field(default_factory=dict)  # extra environment for the learner process
    python: str = sys.executable

    def argv(self) -> list[str]:
        return learner_command(self)


def learner_command(spec: LearnerSpec) -> list[str]:
    return [
        spec.python, "-u", "-m", "nbrunner.elastic.learner",
        "--addr", spec.master_addr, "--port", str(spec.master_port), "--id", spec.learner_id,
    ]


@runtime_checkable
class LearnerHandle(Protocol):
    pid: Optional[int]

    def poll(self) -> Optional[int]: ...

    def terminate(self) -> None: ...

    def kill(self) -> None: ...

    def wait(self, timeout: Optional[float] = None) -> Optional[int]: ...


@runtime_checkable
class Launcher(Protocol):
    def launch(self, spec: LearnerSpec) -> LearnerHandle: ...


def _set_pdeathsig() -> None:  # runs in the child between fork and exec
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the driver
    except Exception:
        pass


class _PopenHandle:
    def __init__(self, proc: subprocess.Popen, log_file=None):
        self.proc = proc
        self.pid = proc.pid
        self._log = log_file

    def poll(self) -> Optional[int]:
        rc = self.proc.poll()
        if rc is not None and self._log is not None:
            self._log.close()
            self._log = None
        return rc

    def terminate(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.terminate()
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass

    def wait(self, timeout: Optional[float] = None) -> Optional[int]:
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self.poll()
        return rc


class LocalLauncher:
    """Starts learners as subprocesses of the driver on this host (spawn semantics: a fresh
    interpreter, nothing inherited from the notebook but the environment).  For a GPU slot
    the learner sees only that GPU (``CUDA_VISIBLE_DEVICES``)."""

    master_addr = "127.0.0.1"
    supports_standby = True  # learners may be started before their slot is known

    def __init__(self, extra_env: Optional[dict] = None):
        self.extra_env = dict(extra_env or {})

    def launch(self, spec: LearnerSpec) -> _PopenHandle:
        env = dict(os.environ)
        env.update(self.extra_env)
        env.update({k: str(v) for k, v in spec.env.items()})
        env.setdefault("PYTHONUNBUFFERED", "1")
        if spec.slot is None:
            env[ELASTIC_STANDBY.name] = "1"  # the learner picks its GPU when it is assigned
        elif spec.slot.is_gpu:
            env["CUDA_VISIBLE_DEVICES"] = str(spec.slot.gpu_index)
        else:
            env["CUDA_VISIBLE_DEVICES"] = ""
        if spec.log_path is not None:
            Path(spec.log_path).parent.mkdir(parents=True, exist_ok=True)
            out = open(spec.log_path, "ab", buffering=0)
        else:
            out = None
        proc = subprocess.Popen(
            learner_command(spec), env=env, stdin=subprocess.DEVNULL,
            stdout=out if out is not None else None,
            stderr=subprocess.STDOUT if out is not None else None,
            preexec_fn=_set_pdeathsig if sys.platform.startswith("linux") else None,
            start_new_session=True, close_fds=True,
        )
        return _PopenHandle(proc, out)
