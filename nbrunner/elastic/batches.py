"""Batches on a learner: the samples of a step fetched from a dataset, split into input and
target, and moved to the learner's device; and the thread that posts the learner's records
to the driver."""
from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Callable, Optional

import torch
import torch.distributed as dist

from .protocol import REQ, abort_key, post


def fetch(ds, idx: torch.Tensor):
    """The samples ``idx`` of ``ds`` as a collated batch."""
    from torch.utils.data import Subset, TensorDataset, default_collate

    if isinstance(ds, TensorDataset):
        return tuple(t[idx] for t in ds.tensors)
    if isinstance(ds, Subset) and isinstance(ds.dataset, TensorDataset):
        inner = torch.as_tensor(ds.indices)[idx]
        return tuple(t[inner] for t in ds.dataset.tensors)
    return default_collate([ds[i] for i in idx.tolist()])


def split_batch(batch):
    if isinstance(batch, (tuple, list)) and len(batch) == 2:
        return batch[0], batch[1]
    if isinstance(batch, dict) and {"x", "y"} <= set(batch):
        return batch["x"], batch["y"]
    raise TypeError("dataset items must be (input, target) pairs")


def to_device(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device, non_blocking=True)
    if isinstance(obj, (tuple, list)):
        return type(obj)(to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: to_device(v, device) for k, v in obj.items()}
    return obj


def batch_len(x) -> int:
    if isinstance(x, torch.Tensor):
        return int(x.shape[0])
    if isinstance(x, (tuple, list)):
        return batch_len(x[0])
    if isinstance(x, dict):
        return batch_len(next(iter(x.values())))
    return len(x)


class Poller(threading.Thread):
    """Background thread with its own store connection: keeps ``req`` fresh, forwards queued
    records to the driver, and watches for the driver abandoning the running generation,
    so the training loop never waits on the store."""

    def __init__(self, addr: str, port: int, timeout: float, interval: float = 0.05):
        super().__init__(daemon=True, name="nbrunner-poller")
        self.store = dist.TCPStore(addr, port, is_master=False, timeout=timedelta(seconds=timeout))
        self.req = 0
        self.interval = interval
        self.error: Optional[BaseException] = None
        self._buf: list[dict] = []
        self._urgent = False
        self._lock = threading.Lock()
        self._ev = threading.Event()
        self._stopping = False
        self._last_flush = 0.0
        self._watch: Optional[tuple[int, Callable[[], bool]]] = None
        self._next_abort_check = 0.0

    def watch_abort(self, gen: int, on_abort: Callable[[], bool]) -> None:
        """Call ``on_abort`` (from this thread) once the driver abandoned generation ``gen``, and
        again every check until it returns True."""
        self._watch = (gen, on_abort)

    def unwatch(self) -> None:
        self._watch = None

    def push(self, rec: dict, urgent: bool = False) -> None:
        with self._lock:
            self._buf.append(rec)
            self._urgent = self._urgent or urgent
        if urgent:
            self._ev.set()

    def flush(self) -> None:
        with self._lock:
            buf, self._buf, self._urgent = self._buf, [], False
        if buf:
            post(self.store, buf)
        self._last_flush = time.monotonic()

    def run(self) -> None:
        while not self._stopping:
            self._ev.wait(self.interval)
            self._ev.clear()
            try:
                self.req = self.store.add(REQ, 0)
                self._check_abort()
                if self._buf and (self._urgent or time.monotonic() - self._last_flush > 0.05):
                    self.flush()
            except Exception as e:  # driver gone
                self.error = e
                return

    def _check_abort(self) -> None:
        watch = self._watch
        now = time.monotonic()
        if watch is None or now < self._next_abort_check:
            return
        self._next_abort_check = now + 0.1
        if self.store.check([abort_key(watch[0])]) and self._watch is watch and watch[1]():
            self._watch = None

    def close(self) -> None:
        self._stopping = True
        self._ev.set()
        self.join(timeout=2)
        if self.error is None:
            try:
                self.flush()
            except Exception:
                pass
