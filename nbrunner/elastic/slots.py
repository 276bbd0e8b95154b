"""Where learners come from: slot sources.

A *slot* is one unit of the allocation a training job holds: one GPU on one host (or one
CPU "slot" on a host without GPUs).  The trainer runs at most one learner process per
granted slot.  A :class:`SlotSource` tells the trainer which slots it may use right now;
the trainer polls it (never on the learners' critical path) and grows or shrinks the
process group at the next step boundary.

Protocol (what the cluster integration has to implement)::

    class SlotSource(Protocol):
        def start(self, min_gpus: int, max_gpus: int) -> None: ...  # declare the elastic demand
        def granted(self) -> list[Slot]: ...      # slots granted right now (cheap, non-blocking poll)
        def released(self, slots: list[Slot]) -> None: ...  # these slots' learners have exited
        def close(self) -> None: ...              # training is over, give everything back
        # optional:
        def on_progress(self, step: int) -> None: ...  # latest completed optimizer step
        launcher: Launcher                        # how to start a learner on one of its slots

Contract:

* ``granted()`` is called from the trainer's driver loop every ~50 ms; it must not block.
  Slots are compared by value (``Slot`` is a frozen dataclass), so return equal ``Slot``
  objects for the same GPU across calls.
* When a slot disappears from ``granted()`` the trainer stops the learner bound to it at
  the next step boundary, then calls ``released([slot])`` once that process has exited.
  A slot must not be handed to another job before ``released`` confirms it.
* ``released`` is also called for a slot whose learner died (SIGKILL, OOM, host lost).
  If the slot is still in ``granted()`` afterwards, the trainer starts a replacement
  learner on it (up to ``max_slot_failures`` times in a row).
* The trainer uses at most ``max_gpus`` of the granted slots (the first ones in the list).

The default source inside a job is :func:`default_slot_source`: this is the single place
where the cluster allocator is plugged in (see :func:`register_slot_source_factory` and the
``NBRUNNER_SLOT_SOURCE`` environment variable).
"""
from __future__ import annotations

import importlib
import os
import socket
import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol, Sequence, runtime_checkable

from ..core.config import SLOT_SOURCE
__all__ = [
    "Slot",
    "SlotSource",
    "LocalSlots",
    "ScriptedSlots",
    "default_slot_source",
    "register_slot_source_factory",
    "local_gpu_indices",
]


@dataclass(frozen=True, order=True)
class Slot:
    """One unit of allocation: ``device`` is None for a CPU slot, else e.g. ``"cuda:3"``
    (GPU 3 of ``host``, as numbered by the host's driver, before CUDA_VISIBLE_DEVICES)."""

    host: str
    index: int
    device: Optional[str] = None

    @property
    def is_gpu(self) -> bool:
        return bool(self.device) and str(self.device).startswith("cuda")

    @property
    def gpu_index(self) -> Optional[int]:
        if not self.is_gpu:
            return None
        _, _, idx = str(self.device).partition(":")
        return int(idx) if idx else self.index


@runtime_checkable
class SlotSource(Protocol):
    def start(self, min_gpus: int, max_gpus: int) -> None: ...

    def granted(self) -> list[Slot]: ...

    def released(self, slots: list[Slot]) -> None: ...

    def close(self) -> None: ...


def local_host() -> str:
    return socket.gethostname()


def local_gpu_indices() -> list[int]:
    """GPUs of this host, found WITHOUT initialising CUDA (so the calling process may still
    fork safely): honours CUDA_VISIBLE_DEVICES, else counts /proc/driver/nvidia/gpus."""
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis is not None:
        out = []
        for part in vis.split(","):
            part = part.strip()
            if part.isdigit():
                out.append(int(part))
            elif part:  # UUIDs / MIG ids: keep positional numbering
                out.append(len(out))
        return out
    try:
        return list(range(len(os.listdir("/proc/driver/nvidia/gpus"))))
    except OSError:
        return []


class LocalSlots:
    """``n`` slots on this host, granted for the whole run (standalone use).

    With ``devices="auto"`` (default) the slots are GPUs when this host has GPUs (at most
    one learner per GPU, so at most as many slots as GPUs), else CPU slots.  ``"cpu"``
    forces CPU slots."""

    def __init__(self, n: int = 1, devices: str = "auto", host: Optional[str] = None):
        if n < 1:
            raise ValueError("LocalSlots needs at least one slot")
        self.host = host or local_host()
        gpus = local_gpu_indices() if devices == "auto" else []
        if gpus:
            self._slots = [Slot(self.host, i, f"cuda:{g}") for i, g in enumerate(gpus[:n])]
        else:
            self._slots = [Slot(self.host, i, None) for i in range(n)]

    def start(self, min_gpus: int, max_gpus: int) -> None:
        pass

    def granted(self) -> list[Slot]:
        return list(self._slots)

    def released(self, slots: list[Slot]) -> None:
        pass

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"LocalSlots({len(self._slots)})"


class ScriptedSlots:
    """Test/benchmark source whose grant changes with training progress.

    ``ScriptedSlots([(0, 2), (5, 1), (12, 2)])``: 2 slots from step 0, 1 from step 5,
    2 again from step 12 (steps = completed optimizer steps the trainer has reported).
    A revoked slot is only granted again after ``released()`` confirmed it; meanwhile a
    fresh index is used, like a real allocator would pick another free GPU.
    The resize itself happens at the first step boundary after the trainer noticed the
    change (a shrink within a few steps; a grow once the new learner has started)."""

    def __init__(self, script: Sequence[tuple[int, int]], host: Optional[str] = None):
        if not script:
            raise ValueError("empty script")
        self.script = sorted((int(s), int(n)) for s, n in script)
        self.host = host or local_host()
        self._lock = threading.Lock()
        self._step = 0
        self._current: list[int] = []
        self._unreleased: set[int] = set()
        self.log: list[tuple[int, int]] = []  # (step, granted count) whenever it changed
        self._apply()

    def _target(self) -> int:
        n = self.script[0][1]
        for s, k in self.script:
            if self._step >= s:
                n = k
        return n

    def _apply(self) -> None:
        n = self._target()
        cur = self._current
        if len(cur) > n:
            for idx in cur[n:]:
                self._unreleased.add(idx)
            self._current = cur[:n]
        elif len(cur) < n:
            i = 0
            while len(self._current) < n:
                if i not in self._current and i not in self._unreleased:
                    self._current.append(i)
                i += 1
        if not self.log or self.log[-1][1] != len(self._current):
            self.log.append((self._step, len(self._current)))

    def start(self, min_gpus: int, max_gpus: int) -> None:
        pass

    def on_progress(self, step: int) -> None:
        with self._lock:
            if step > self._step:
                self._step = step
                self._apply()

    def granted(self) -> list[Slot]:
        with self._lock:
            return [Slot(self.host, i, None) for i in self._current]

    def released(self, slots: list[Slot]) -> None:
        with self._lock:
            for s in slots:
                self._unreleased.discard(s.index)

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------------------
# Inside a job: the one place where the cluster's GPU allocator is plugged in.
# --------------------------------------------------------------------------------------

SlotSourceFactory = Callable[..., SlotSource]
_factory: Optional[SlotSourceFactory] = None


def register_slot_source_factory(factory: Optional[SlotSourceFactory]) -> None:
    """Install the cluster integration: ``factory(max_gpus=..., min_gpus=..., job_id=...)``
    returns the SlotSource used by ElasticTrainer inside a job.  ``None`` removes it."""
    global _factory
    _factory = factory


def _env_factory() -> Optional[SlotSourceFactory]:
    spec = SLOT_SOURCE.text()
    if not spec:
        return None
    mod, _, attr = spec.partition(":")
    if not attr:
        raise ValueError(f"{SLOT_SOURCE.name} must look like 'package.module:factory', got {spec!r}")
    return getattr(importlib.import_module(mod), attr)


def default_slot_source(max_gpus: Optional[int], min_gpus: int = 1) -> Any:
    """The slot source ``ElasticTrainer.train`` uses when no ``slots=`` is given.

    Inside a job (``nbrunner.control.runtime.job_id()`` is set, i.e. the worker exported
    ``NBRUNNER_JOB_ID``), a registered cluster factory (``register_slot_source_factory``
    or ``NBRUNNER_SLOT_SOURCE=module:factory``) provides the slots granted by the
    allocator.  Without one -- and always outside a job -- it is ``LocalSlots(max_gpus or 1)``.
    A job granted no GPU (max 0) trains with one local CPU learner."""
    from ..control import runtime

    jid = runtime.job_id()
    if jid is not None:
        factory = _factory or _env_factory()
        if factory is not None:
            return factory(max_gpus=max_gpus, min_gpus=min_gpus, job_id=jid)
        if not max_gpus:
            return LocalSlots(1, devices="cpu")
    return LocalSlots(max(1, max_gpus or 1))
