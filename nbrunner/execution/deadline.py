"""A job's ``timeout`` is its whole wall time, not a per-cell limit (papermill's ``execution_timeout``).

:class:`Deadline` runs beside papermill in the work horse: when the job's time is up it
interrupts the kernel (SIGINT: the running cell raises ``KeyboardInterrupt``, papermill marks
it in ``output.ipynb`` and runs no further cell) and, if the kernel is still alive
``KERNEL_KILL_AFTER_S`` later (a cell that ignores interrupts), kills the kernel and its children.
``run_job`` then records ``timeout: the job ran longer than its N s limit``.
"""
from __future__ import annotations

import os
import signal
import threading
import time

from ..core.config import KERNEL_KILL_AFTER_S, MAX_TIMEOUT_S
from .kernels import kernel_processes

class Deadline:
    """Stops the kernels this process started once ``timeout`` seconds have passed (None: never)."""

    def __init__(self, timeout: float | None):
        self.timeout = min(timeout, MAX_TIMEOUT_S) if timeout else None  # a wait this long never overflows
        self.expired = threading.Event()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "Deadline":
        if self.timeout:
            self._thread = threading.Thread(target=self._watch, name="nbrunner-deadline", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join(timeout=KERNEL_KILL_AFTER_S + 2)

    def _watch(self) -> None:
        if self._done.wait(self.timeout):
            return
        self.expired.set()
        # until the run ends: a kernel still starting, or started again after the deadline, is
        # stopped once it is there
        while not self._done.is_set():
            if not self._alive():
                self._done.wait(0.1)
                continue
            self._signal(signal.SIGINT)
            end = time.monotonic() + KERNEL_KILL_AFTER_S
            while time.monotonic() < end and self._alive():
                if self._done.wait(0.1):
                    return
            if self._alive():
                self._kill()

    @staticmethod
    def _kernels() -> list:
        return [p for p in kernel_processes() if p.poll() is None]

    def _alive(self) -> bool:
        return bool(self._kernels())

    def _signal(self, sig: int) -> None:
        for proc in self._kernels():
            try:
                os.kill(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def _kill(self) -> None:
        import psutil

        for proc in self._kernels():
            try:
                tree = psutil.Process(proc.pid)
                victims = tree.children(recursive=True) + [tree]
            except psutil.NoSuchProcess:
                continue
            for p in victims:
                try:
                    p.kill()
                except psutil.NoSuchProcess:
                    pass
