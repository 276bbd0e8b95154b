"""The process group of the generation a learner runs: formed under the generation's prefix of
the driver's store, the DDP module over it, the gloo connections it opened (cut when the
driver abandons the generation), and its teardown in an order that cannot deadlock."""
from __future__ import annotations

import gc
import inspect
import os
import socket
import traceback
import weakref
from datetime import timedelta
from typing import Callable, Optional

import torch.distributed as dist

from .protocol import Plan, pg_prefix


def _ddp_params() -> set:
    from torch.nn.parallel import DistributedDataParallel

    return set(inspect.signature(DistributedDataParallel.__init__).parameters)


_DDP_PARAMS = _ddp_params()


def _sockets() -> dict:
    """{socket inode: fd} of this process's open sockets."""
    out = {}
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:  # no /proc: an abandoned collective fails at its timeout
        return out
    for fd in fds:
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:"):
            out[link] = int(fd)
    return out


def _shut_down(ino: str, fd: int) -> None:
    """Shut down the connected socket ``fd`` if it is still socket ``ino`` (never a listener:
    gloo aborts the process when its accept() fails)."""
    try:
        if os.readlink(f"/proc/self/fd/{fd}") != ino:
            return
        s = socket.socket(fileno=os.dup(fd))
    except OSError:
        return
    try:
        if not s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
            s.getpeername()
            s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        s.close()


class GenerationGroup:
    """One learner's membership of the running generation's process group."""

    def __init__(self, log: Callable[[str], None]):
        self.log = log
        self.net = None     # the DDP module, held here so that only dissolve() frees it
        self._net_ref: Optional[weakref.ref] = None
        self._sockets: dict = {}  # socket inode -> fd of this generation's gloo connections

    def form(self, plan: Plan, rank: int, store, device, timeout: float) -> None:
        """Join generation ``plan.gen``'s process group as ``rank``."""
        if not dist.is_initialized():
            # torch names a group's rendezvous keys after a per-process counter that only
            # destroy_process_group resets: after an init_process_group that failed here but
            # not on a peer, the learners would look for each other under different keys
            try:
                dist.distributed_c10d._world.group_count = 0
            except AttributeError:
                pass
        kw = {}
        if plan.backend == "nccl":
            kw["device_id"] = device
        before = _sockets() if plan.backend == "gloo" else {}
        dist.init_process_group(plan.backend, store=dist.PrefixStore(pg_prefix(plan.gen), store),
                                rank=rank, world_size=plan.world, timeout=timedelta(seconds=timeout), **kw)
        if plan.backend == "gloo":
            self._sockets = {k: v for k, v in _sockets().items() if k not in before}

    def wrap(self, model, device, find_unused_parameters: bool = False, broadcast_buffers: bool = True):
        """``model`` in a DDP module over the group (kept until :meth:`dissolve`)."""
        from torch.nn.parallel import DistributedDataParallel as DDP

        kw = {"init_sync": False, "find_unused_parameters": find_unused_parameters}
        if "forward_sync_buffers" in _DDP_PARAMS:
            kw["forward_sync_buffers"] = broadcast_buffers
        else:
            kw["broadcast_buffers"] = broadcast_buffers
        net = DDP(model, device_ids=[0] if device.type == "cuda" else None, **kw)
        self.net, self._net_ref = net, weakref.ref(net)
        return net

    def cut(self) -> None:
        """Close the generation's gloo connections, so that a collective waiting for a peer
        that is gone fails now rather than at the timeout."""
        for ino, fd in list(self._sockets.items()):
            _shut_down(ino, fd)

    def dissolve(self, exc: Optional[BaseException] = None) -> None:
        """Dissolve the generation's process group, in an order that cannot deadlock.

        DDP's reducer holds the group from C++, and its Python wrapper is freed with the GIL
        held.  If the reducer drops the last reference, the gloo destructor joins its worker
        threads while holding the GIL, and a worker that is still dropping the tensors of a
        finished collective waits for the GIL: the process hangs for good (a learner that
        should leave never exits, a staying one never reaches the next generation).  So the
        DDP module goes first -- with the frames of a traceback that still reference it
        (``exc``'s) -- and the group is destroyed last, by ``destroy_process_group`` (dropping
        the group's own Python handles does not keep the GIL across the join).  The
        generation's async works are dropped after that, by the caller, so that no worker
        thread is the last owner of a tensor the interpreter knows."""
        self._sockets = {}
        if exc is not None and exc.__traceback__ is not None:
            traceback.clear_frames(exc.__traceback__)
        ref, self._net_ref = self._net_ref, None
        self.net = None
        if ref is not None and ref() is not None:
            gc.collect()
            if ref() is not None:
                self.log("warning: the DDP module of the finished generation is still referenced")
        if dist.is_initialized():
            try:
                dist.destroy_process_group()
            except Exception:
                pass
