"""A learner process: ``python -m nbrunner.elastic.learner --addr HOST --port PORT --id LID``.

Life cycle
----------
1. connect to the driver's TCPStore, unpickle the payload (model, optimizer, loss,
   dataset function, config), build the datasets, import what DDP needs (and tell the worker
   agent that started it, if one did, which modules that imported), post ``ready``;
2. wait for a generation plan that includes it (``plan/<g>``, announced through ``req``);
3. for each generation: arrival barrier, ``init_process_group`` under a per-generation
   PrefixStore, take the state from the plan's source learner by broadcast, train;
4. every step the learners all-reduce a small control vector ``[req, loss]``, launched when
   the step ends and waited for when the next one ends (so it overlaps a whole step):
   ``req`` is the newest plan the rank-0 learner's poller thread saw in the store, so all
   learners agree on the step after which they switch to it (one step later than it was
   seen); before a snapshot, an epoch end, a resize or the last step it is waited for at once;
5. a collective that fails (peer died, timeout) sends the learner back to step 2 after
   reporting ``fail`` with the step of its newest in-memory snapshot; the driver then plans
   a recovery generation whose source restores the best snapshot.
"""
from __future__ import annotations

import time

_T_START = time.time()

import argparse
import copy
import gc
import io
import json
import os
import pickle
import socket
import sys
import threading
import time
import traceback
import weakref
from datetime import timedelta
from pathlib import Path
from typing import Optional

import torch
import torch.distributed as dist

from ..core.config import ENV_LEARNER_LOADED
from .batches import Poller, batch_len, fetch, split_batch, to_device
from .protocol import (
    FINAL, PAYLOAD, REQ, Plan, abort_key, arrive_key, epoch_permutation, plan_key, pg_prefix,
    post, split_bounds, step_seed,
)
from .state import Snapshot, broadcast_state, clone_state, copy_into

_COMM_MARKERS = (
    "gloo", "nccl", "connection closed", "connection reset", "timed out", "timeout",
    "broken pipe", "pair.cc", "processgroup", "socket", "peer", "connection refused",
)


class _Exit(Exception):
    def __init__(self, code: int = 0):
        self.code = code


class _Aborted(Exception):
    pass


def _is_comm_error(e: BaseException) -> bool:
    if isinstance(e, (_Aborted, dist.DistError, ConnectionError, TimeoutError)):
        return True
    msg = str(e).lower()
    return isinstance(e, RuntimeError) and any(m in msg for m in _COMM_MARKERS)


def _ddp_params() -> set:
    import inspect

    from torch.nn.parallel import DistributedDataParallel

    return set(inspect.signature(DistributedDataParallel.__init__).parameters)


_DDP_PARAMS = _ddp_params()


_STALLED_S = 0.5  # no step for this long in an abandoned generation: its collective is stuck


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


def _usable_cpus() -> int:
    fixed = os.environ.get("NBRUNNER_ELASTIC_CPUS")
    if fixed:
        return max(1, int(fixed))
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


class Learner:
    def __init__(self, addr: str, port: int, lid: str):
        self.addr, self.port, self.lid = addr, port, lid
        self.device = torch.device("cpu")
        self.gen = 0
        self.checked = 0
        self.was_active = False
        self.failed = False        # reported a failure since its last successful join
        self.clean = True          # live state is a consistent step-boundary state
        self.snap: Optional[Snapshot] = None
        self.t_last_step: Optional[float] = None
        self._perm_epoch = -1
        self._perm = None
        self._ckpt_thread: Optional[threading.Thread] = None
        self.net = None
        self._net_ref: Optional[weakref.ref] = None
        self._works: list = []     # this generation's async collectives (see _teardown)
        self._gen_sockets: dict = {}  # socket inode -> fd of this generation's gloo connections
        self.poller: Optional[Poller] = None  # started by load()
        # the control all-reduce launched at the end of the last step: (work, vector, step, time, W, rank)
        self._pending: Optional[tuple] = None

    # ---------------------------------------------------------------- setup
    def log(self, msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')} learner {self.lid}] {msg}", flush=True)

    def connect(self) -> None:
        t = float(os.environ.get("NBRUNNER_ELASTIC_STORE_TIMEOUT", "60"))
        self.store = dist.TCPStore(self.addr, self.port, is_master=False, timeout=timedelta(seconds=t))

    def load(self) -> None:
        """Everything that does not depend on the slot: payload, datasets, imports."""
        import cloudpickle

        before = set(sys.modules)
        for p in reversed([p for p in os.environ.get("NBRUNNER_ELASTIC_SYSPATH", "").split(os.pathsep) if p]):
            if p not in sys.path:
                sys.path.append(p)
        payload = cloudpickle.loads(self.store.get(PAYLOAD))
        self.t_payload = time.time()
        self.cfg = cfg = payload["config"]
        self.model, self.opt, self.loss_fn, get_datasets, self.metrics = payload["objects"]
        self.ts = payload["train_state"]
        self.timeout = float(cfg["timeout"])
        self.poller = Poller(self.addr, self.port, max(self.timeout, 30.0))
        self.poller.start()
        ds = get_datasets()
        if not isinstance(ds, (tuple, list)) or len(ds) != 2:
            raise TypeError("get_datasets() must return (train_dataset, test_dataset)")
        self.train_ds, self.test_ds = ds
        self.t_data = time.time()
        self.n_train = len(self.train_ds)
        self.n_test = len(self.test_ds) if self.test_ds is not None else 0
        self.B = int(cfg["effective_batch_size"])
        self.spe = self.n_train // self.B
        if self.spe < 1:
            raise ValueError(f"the training set has {self.n_train} samples, fewer than effective_batch_size={self.B}")
        self.total = self.spe * int(cfg["epochs"])
        # DistributedDataParallel imports torch._dynamo on first use (~1 s): do it now, while
        # the current learners keep training, instead of during the resize pause.
        import torch._dynamo  # noqa: F401
        from torch.nn.parallel import DistributedDataParallel  # noqa: F401

        torch.set_num_threads(max(1, int(os.environ.get("NBRUNNER_ELASTIC_THREADS", "1"))))
        self.imported = [m for m in sys.modules
                         if m not in before and not any(part.startswith("_") for part in m.split("."))]

    def tell_loaded(self) -> None:
        """Tell the worker's learner agent that started this learner (if one did) that it has
        loaded, and which modules that imported: its warm interpreters import them ahead."""
        path = os.environ.get(ENV_LEARNER_LOADED)
        if not path:
            return
        try:
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                json.dump(self.imported, f)
            os.replace(tmp, path)
        except OSError:
            pass

    def wait_assignment(self) -> None:
        """Standby learner: wait until the driver binds it to a slot (it has not touched
        any GPU yet, so it can still choose which one it sees)."""
        post(self.store, [{"type": "standby", "lid": self.lid, "pid": os.getpid()}])
        key = f"assign/{self.lid}"
        while not self._wait_keys([key], 1.0):
            pass
        slot = pickle.loads(self.store.get(key))
        if slot.get("gpu") is not None:
            os.environ["CUDA_VISIBLE_DEVICES"] = str(slot["gpu"])
            os.environ["NBRUNNER_ELASTIC_DEVICE"] = "cuda"
        else:
            os.environ["NBRUNNER_ELASTIC_DEVICE"] = "cpu"

    def bind(self) -> None:
        """Device-dependent setup, then tell the driver this learner can join."""
        if os.environ.get("NBRUNNER_ELASTIC_DEVICE", "cpu") == "cuda":
            torch.cuda.set_device(0)
            self.device = torch.device("cuda", 0)
        self.model.to(self.device)
        if self.cfg.get("sync_batchnorm"):
            from .sync_bn import convert_sync_batchnorm

            self.model = convert_sync_batchnorm(self.model, self.device.type)
        self.model.train()
        post(self.store, [{"type": "ready", "lid": self.lid, "pid": os.getpid(), "host": socket.gethostname(),
                           "n_train": self.n_train, "n_test": self.n_test, "steps_per_epoch": self.spe}])
        self.log(f"ready after {time.time() - _T_START:.2f}s (payload at {self.t_payload - _T_START:.2f}s, "
                 f"datasets {self.t_data - self.t_payload:.2f}s): {self.n_train} train / {self.n_test} test "
                 f"samples, {self.spe} steps per epoch, device {self.device}")

    # ---------------------------------------------------------------- control
    def _req(self) -> int:
        return self.store.add(REQ, 0)

    def _aborted(self, g: int) -> bool:
        return self.store.check([abort_key(g)])

    def _wait_keys(self, keys: list, timeout: float) -> bool:
        """Block until all ``keys`` exist (True) or ``timeout`` passes (False), without
        busy polling; exits the process if the driver is gone."""
        try:
            self.store.wait(keys, timedelta(seconds=timeout))
            return True
        except Exception:
            try:
                self._req()
            except Exception:
                raise _Exit(3)
            return False

    def wait_plan(self) -> Plan:
        while True:
            if self._req() <= self.checked:
                self._wait_keys([plan_key(self.checked + 1)], 1.0)
            req = self._req()
            if req > self.checked:
                self.checked = req
                plan = Plan.loads(self.store.get(plan_key(req)))
                if self.lid in plan.members:
                    if (self.failed and plan.mode == "live") or self._aborted(req):
                        self.report_fail(req)
                        continue
                    return plan
                if self.was_active:
                    raise _Exit(0)

    def report_fail(self, g: int, err: str = "") -> None:
        if self.clean and (self.snap is None or self.snap.step < self.ts["step"]):
            self.snapshot()
        self.failed = True
        post(self.store, [{"type": "fail", "lid": self.lid, "gen": g, "step": self.ts["step"],
                           "snap_step": self.snap.step if self.snap is not None else None,
                           "t_last_step": self.t_last_step, "error": err[-2000:]}])

    # ---------------------------------------------------------------- state
    def snapshot(self) -> None:
        """Copy of model, optimizer and position; reuses the previous snapshot's buffers
        when the structure is unchanged (a memcpy, no allocation)."""
        msd, osd = self.model.state_dict(), self.opt.state_dict()
        old = self.snap
        if old is not None and copy_into(old.model, msd) and copy_into(old.opt, osd):
            old.step, old.ts = self.ts["step"], copy.deepcopy(self.ts)
            return
        self.snap = Snapshot(self.ts["step"], clone_state(msd), clone_state(osd), copy.deepcopy(self.ts))

    def restore(self, snap: Snapshot) -> None:
        with torch.no_grad():
            self.model.load_state_dict(snap.model)
        self.opt.load_state_dict(clone_state(snap.opt))
        self.ts = copy.deepcopy(snap.ts)

    def load_checkpoint(self, path: str) -> None:
        ck = torch.load(path, map_location=self.device, weights_only=True)
        with torch.no_grad():
            self.model.load_state_dict(ck["model"])
        self.opt.load_state_dict(ck["optimizer"])
        self.ts = ck["train_state"]

    def broadcast_state(self, src: int, rank: int) -> None:
        received = broadcast_state(self.model, self.opt, self.ts, src, rank, self.device)
        if received is not None:
            self.clean = False
            self.ts = received

    # ---------------------------------------------------------------- generations
    def run(self) -> int:
        self.connect()
        self.load()
        self.tell_loaded()
        if os.environ.get("NBRUNNER_ELASTIC_STANDBY"):
            self.wait_assignment()
        self.bind()
        plan = self.wait_plan()
        while True:
            outcome = self.run_gen(plan)
            if outcome == "done":
                return 0
            if outcome == "failed":
                plan = self.wait_plan()
                continue
            g = int(outcome)
            self.checked = max(self.checked, g)
            plan = Plan.loads(self.store.get(plan_key(g)))
            if self.lid not in plan.members:
                raise _Exit(0)

    def _barrier(self, plan: Plan) -> None:
        g = plan.gen
        self.store.set(arrive_key(g, self.lid), b"1")
        keys = [arrive_key(g, m) for m in plan.members]
        deadline = time.monotonic() + self.timeout
        while not self._wait_keys(keys, 0.1):
            if self._aborted(g) or self._req() > g:
                raise _Aborted(f"generation {g} abandoned")
            if time.monotonic() > deadline:
                raise _Aborted(f"generation {g}: not all learners arrived within {self.timeout:.0f}s")

    def _teardown(self, exc: Optional[BaseException] = None) -> None:
        """Dissolve the generation's process group, in an order that cannot deadlock.

        DDP's reducer holds the group from C++, and its Python wrapper is freed with the GIL
        held.  If the reducer drops the last reference, the gloo destructor joins its worker
        threads while holding the GIL, and a worker that is still dropping the tensors of a
        finished collective waits for the GIL: the process hangs for good (a learner that
        should leave never exits, a staying one never reaches the next generation).  So the
        DDP module goes first -- with the frames of a traceback that still reference it --
        and the group is destroyed last, by ``destroy_process_group`` (dropping the group's
        own Python handles does not keep the GIL across the join).  The generation's async
        works are dropped after that, so that no worker thread is the last owner of a
        tensor the interpreter knows."""
        if self.poller is not None:
            self.poller.unwatch()
        self._gen_sockets = {}
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
        self._works.clear()
        self._pending = None

    def _cut_generation(self) -> bool:
        """The driver abandoned the running generation (a peer's host is gone): a collective
        waiting for that peer would only fail at the gloo timeout, so close this generation's
        connections and let it fail now.  A learner still making steps is left alone: it
        reaches the next plan at its step boundary."""
        if self.t_last_step is not None and time.time() - self.t_last_step < _STALLED_S:
            return False
        for ino, fd in list(self._gen_sockets.items()):
            _shut_down(ino, fd)
        return True

    def run_gen(self, plan: Plan):
        g = plan.gen
        self.gen = g
        self.was_active = True
        rank = plan.members.index(self.lid)
        W = plan.world
        src = plan.members.index(plan.source)
        try:
            self._barrier(plan)
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
                kw["device_id"] = self.device
            before = _sockets() if plan.backend == "gloo" else {}
            dist.init_process_group(plan.backend, store=dist.PrefixStore(pg_prefix(g), self.store),
                                    rank=rank, world_size=W, timeout=timedelta(seconds=self.timeout), **kw)
            if plan.backend == "gloo":
                self._gen_sockets = {k: v for k, v in _sockets().items() if k not in before}
                self.poller.watch_abort(g, self._cut_generation)
            if self.lid == plan.source:
                if plan.mode == "snapshot":
                    if self.snap is None:
                        raise RuntimeError("recovery source has no snapshot")
                    self.restore(self.snap)
                elif plan.mode == "restart" and plan.checkpoint:
                    self.load_checkpoint(plan.checkpoint)
            if W > 1:
                self.broadcast_state(src, rank)
            self.clean = True
            self.failed = False
            self.snapshot()
            share = int(plan.threads.get(self.lid, 0)) if plan.threads else 0
            if share and self.device.type == "cpu":
                n = -share if share < 0 else max(1, _usable_cpus() // share)
                if torch.get_num_threads() != n:
                    torch.set_num_threads(n)
            outcome = self.train(plan, rank)
            if outcome != "done":
                self._teardown()  # here, not in train(): no frame of it may still hold the DDP module
            return outcome
        except _Exit:
            raise  # the process exits without destroying anything (see main)
        except Exception as e:
            if not _is_comm_error(e):
                raise
            err = f"{type(e).__name__}: {e}"
            self.log(f"generation {g} failed: {err}")
            self._settle_pending()
            self._teardown(e)
            self.report_fail(g, err)
            return "failed"

    # ---------------------------------------------------------------- training
    def train(self, plan: Plan, rank: int):
        from torch.nn.parallel import DistributedDataParallel as DDP

        W = plan.world
        cfg = self.cfg
        ts = self.ts
        if W > 1:
            kw = {"init_sync": False, "find_unused_parameters": bool(cfg.get("find_unused_parameters", False))}
            if "forward_sync_buffers" in _DDP_PARAMS:
                kw["forward_sync_buffers"] = bool(cfg.get("broadcast_buffers", True))
            else:
                kw["broadcast_buffers"] = bool(cfg.get("broadcast_buffers", True))
            net = DDP(self.model, device_ids=[0] if self.device.type == "cuda" else None, **kw)
            self._net_ref = weakref.ref(net)
        else:
            net = self.model
        self.net = net
        if not ts["sizes"] or ts["sizes"][-1] != W:
            ts["sizes"].append(W)
        is_source = self.lid == plan.source
        # only rank 0's view of the newest plan is used (the control all-reduce shares it):
        # the other learners' pollers need not take a store round trip every 50 ms
        self.poller.interval = 0.05 if rank == 0 else 0.5
        t_prev = self.t_last_step
        first = True
        snapshot_every = max(1, int(cfg.get("snapshot_every", 10)))
        while True:
            if self.poller.error is not None:
                raise _Exit(3)
            if ts["step"] // self.spe > len(ts["epochs"]):
                self.end_epoch(W, rank)
            if ts["step"] >= self.total:
                self.finish(rank)
                return "done"
            if first:
                first = False
                if is_source:
                    now = time.time()
                    self.poller.push({"type": "gen", "gen": plan.gen, "step": ts["step"], "from": plan.prev_world,
                                      "to": W, "reason": plan.reason, "mode": plan.mode, "lid": self.lid,
                                      "pause_s": (now - t_prev) if (t_prev is not None and plan.reason != "start") else None,
                                      "t": now}, urgent=True)
            req = self.step(net, W, rank)
            ts = self.ts
            s = ts["step"]
            snap = s % snapshot_every == 0
            if self._pending is not None and (snap or req > plan.gen or s >= self.total or s % self.spe == 0):
                req = max(req, self._drain())  # the train state must be whole: snapshot, epoch end, leaving
            if snap:
                self.snapshot()
            if req > plan.gen:
                return req  # run_gen dissolves the group once this frame (and its DDP reference) is gone

    def step(self, net, W: int, rank: int) -> int:
        """One optimizer step; returns the newest plan the learners agreed on so far."""
        ts = self.ts
        B = self.B
        step = ts["step"]
        epoch, pos = divmod(step, self.spe)
        if self._perm_epoch != epoch:
            self._perm = epoch_permutation(self.n_train, self.cfg["seed"], epoch)
            self._perm_epoch = epoch
        lo, hi = split_bounds(B, W, rank)
        idx = self._perm[pos * B + lo:pos * B + hi]
        x, y = split_batch(fetch(self.train_ds, idx))
        x, y = to_device(x, self.device), to_device(y, self.device)
        self._seed(step_seed(self.cfg["seed"], step, rank))
        self.clean = False
        self.opt.zero_grad(set_to_none=True)
        out = net(x)
        # each learner weights its loss by its share of the global batch; DDP averages the
        # gradients over the W learners (its own allreduce: a Python comm hook that sums costs
        # throughput), hence the factor W, exact for a power of two and within 1 ulp otherwise
        loss = self.loss_fn(out, y)
        share = (hi - lo) / B * W
        if share != 1.0:
            loss = loss * share
        loss.backward()
        self.opt.step()
        ts["step"] = step + 1
        self.clean = True
        now = time.time()
        self.t_last_step = now
        if W == 1:
            self._account(float(loss.item()), step + 1, now, W, rank)
            return self.poller.req
        # the previous step's control vector has had a whole step to arrive: take it, then
        # launch this step's, which the next step end (or _drain) takes
        req = self._drain()
        ctl = torch.stack([torch.tensor(float(self.poller.req if rank == 0 else 0), dtype=torch.float64,
                                        device=loss.device), loss.detach().to(torch.float64)])
        self._pending = (dist.all_reduce(ctl, async_op=True), ctl, step + 1, now, W, rank)
        return req

    def _seed(self, s: int) -> None:
        # torch.manual_seed also queues a lazy seed for every uninitialised accelerator
        # backend, formatting a stack trace for each (~0.5 ms a step); only the generators
        # the model can draw from are seeded here
        torch.default_generator.manual_seed(s)
        if self.device.type == "cuda":
            torch.cuda.manual_seed(s)

    def _drain(self) -> int:
        """Wait for the pending control all-reduce and account its step (global loss, the
        step record); returns the plan it carries (0 if none is pending)."""
        p = self._pending
        if p is None:
            return 0
        work, ctl, step, t, W, rank = p
        work.wait()
        self._pending = None
        self._works = [work]  # released by the next step or by _teardown, never by gloo's thread
        self._account(float(ctl[1].item()) / W, step, t, W, rank)
        return int(ctl[0].item())

    def _account(self, gloss: float, step: int, t: float, W: int, rank: int) -> None:
        """Count a finished step's global loss in the epoch's mean; rank 0 reports the step."""
        ts = self.ts
        ts["loss_sum"] += gloss
        ts["loss_n"] += 1
        if rank == 0:
            self.poller.push({"type": "step", "step": step, "loss": gloss, "world": W, "t": t})

    def _settle_pending(self) -> None:
        """After a failed collective: account the pending control vector if its all-reduce
        completed; otherwise the live state is not snapshotted (its loss sum lacks a step)."""
        p, self._pending = self._pending, None
        if p is None:
            return
        self._works.append(p[0])
        try:
            done = p[0].is_completed()
            if done:
                p[0].wait()
        except Exception:
            done = False
        if done:
            ctl, step, t, W, rank = p[1:]
            self._account(float(ctl[1].item()) / W, step, t, W, rank)
        else:
            self.clean = False

    def validate(self, W: int, rank: int) -> dict:
        out_rec: dict = {}
        if self.test_ds is None or self.n_test == 0:
            return out_rec
        model = self.model
        model.eval()
        lo, hi = split_bounds(self.n_test, W, rank)
        bs = int(self.cfg.get("eval_batch_size") or 512)
        names = list(self.metrics) if self.metrics else []
        sums = torch.zeros(4 + len(names), dtype=torch.float64)
        with torch.no_grad():
            for b in range(lo, hi, bs):
                idx = torch.arange(b, min(b + bs, hi))
                x, y = split_batch(fetch(self.test_ds, idx))
                x, y = to_device(x, self.device), to_device(y, self.device)
                out = model(x)
                n = batch_len(y)
                sums[0] += float(self.loss_fn(out, y)) * n
                sums[1] += n
                if (isinstance(out, torch.Tensor) and out.dim() == 2 and out.shape[1] > 1 and isinstance(y, torch.Tensor)
                        and y.dim() == 1 and not y.is_floating_point()):
                    sums[2] += float((out.argmax(1) == y).sum())
                    sums[3] += 1
                for j, name in enumerate(names):
                    sums[4 + j] += float(self.metrics[name](out, y)) * n
        model.train()
        if W > 1:
            t = sums.to(self.device)
            dist.all_reduce(t)
            sums = t.cpu()
        n = max(float(sums[1]), 1.0)
        out_rec["val_loss"] = float(sums[0]) / n
        if sums[3] > 0:
            out_rec["val_accuracy"] = float(sums[2]) / n
        for j, name in enumerate(names):
            out_rec[f"val_{name}"] = float(sums[4 + j]) / n
        return out_rec

    def end_epoch(self, W: int, rank: int) -> None:
        ts = self.ts
        e = len(ts["epochs"]) + 1
        val = self.validate(W, rank)
        rec = {"epoch": e, "train_loss": ts["loss_sum"] / max(1, ts["loss_n"]), **val,
               "world_sizes": list(ts["sizes"]), "step": ts["step"], "time": time.time()}
        ts["epochs"].append(rec)
        ts["loss_sum"], ts["loss_n"], ts["sizes"] = 0.0, 0, [W]
        if rank == 0:
            self.poller.push({"type": "epoch", "record": rec}, urgent=True)
            every = int(self.cfg.get("checkpoint_every") or 0)
            if self.cfg.get("checkpoint_dir") and every > 0 and (e % every == 0 or e == int(self.cfg["epochs"])):
                self.write_checkpoint(e)

    def write_checkpoint(self, epoch: int) -> None:
        d = Path(self.cfg["checkpoint_dir"])
        step = self.ts["step"]
        state = {
            "format": "nbrunner.elastic.checkpoint/1",
            "model": clone_state(self.model.state_dict(), "cpu"),
            "optimizer": clone_state(self.opt.state_dict(), "cpu"),
            "train_state": copy.deepcopy(self.ts),
            "epoch": epoch, "position": step % self.spe, "step": step,
            "rng": {"torch": torch.get_rng_state()},
            "config": {"effective_batch_size": self.B, "seed": self.cfg["seed"], "n_train": self.n_train,
                       "steps_per_epoch": self.spe},
        }
        keep = max(1, int(self.cfg.get("keep_checkpoints", 2)))

        def write():
            d.mkdir(parents=True, exist_ok=True)
            final = d / f"ckpt-{step:09d}.pt"
            tmp = d / f".{final.name}.{os.getpid()}.tmp"
            torch.save(state, tmp)
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            os.replace(tmp, final)
            for old in sorted(d.glob("ckpt-*.pt"))[:-keep]:
                try:
                    old.unlink()
                except OSError:
                    pass
            self.poller.push({"type": "checkpoint", "path": str(final), "epoch": epoch, "step": step}, urgent=True)

        if self._ckpt_thread is not None:
            self._ckpt_thread.join()
        self._ckpt_thread = threading.Thread(target=write, name="nbrunner-ckpt", daemon=False)
        self._ckpt_thread.start()

    def finish(self, rank: int) -> None:
        if self._ckpt_thread is not None:
            self._ckpt_thread.join()
        if rank == 0:
            buf = io.BytesIO()
            torch.save({"model": clone_state(self.model.state_dict(), "cpu"),
                        "optimizer": clone_state(self.opt.state_dict(), "cpu"),
                        "train_state": self.ts}, buf)
            self.store.set(FINAL, buf.getvalue())
            self.poller.push({"type": "final", "step": self.ts["step"]}, urgent=True)
        self.poller.close()
        # the process group is not dissolved: the process exits right away (see main)

    def close(self) -> None:
        t = self._ckpt_thread
        if t is not None and t.is_alive():
            try:  # a learner that leaves while writing a checkpoint: let the driver wait for it
                post(self.store, [{"type": "busy", "lid": self.lid, "what": "checkpoint"}])
            except Exception:
                pass
            t.join()
        poller = getattr(self, "poller", None)
        if poller is not None and poller.is_alive():
            poller.close()


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nbrunner.elastic.learner")
    ap.add_argument("--addr", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--id", required=True)
    a = ap.parse_args(argv)
    learner = Learner(a.addr, a.port, a.id)
    code = 0
    try:
        code = learner.run()
    except _Exit as e:
        code = e.code
    except BaseException:
        tb = traceback.format_exc()
        print(tb, file=sys.stderr, flush=True)
        try:
            post(learner.store, [{"type": "error", "lid": a.id, "where": "training", "traceback": tb}])
        except Exception:
            pass
        code = 1
    finally:
        try:
            learner.close()
        except Exception:
            pass
    return code


def _exit_now(code: int) -> None:
    """Leave without interpreter finalisation.  Everything that matters is done by then
    (records flushed to the driver, checkpoint written, final state in the store); what is
    left -- process groups, DDP reducers, gloo and OpenMP threads -- can only delay the exit
    (their destructors may block, see Learner._teardown), and a learner that leaves must
    give its slot back at once: the driver confirms the release only when the process is gone."""
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass
    os._exit(code)


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    _exit_now(main())
